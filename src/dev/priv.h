/* SPDX-License-Identifier: MIT */
#ifndef USKB_DEV_PRIV_H
#define USKB_DEV_PRIV_H

/*
 * The device layer's private interface: error reports, interface probing,
 * and the built-in devices' operations. Devices use only the public API of
 * the layers below (they are a library of their own).
 */

#include "lib/compiler.h"
#include "uskb/dev.h"
#include "uskb/skb.h"
#include "uskb/ubuf.h"

/*
 * An open failed: say why (uskb_dev_strerror() on this thread), return
 * -@err.
 */
USKB_HIDDEN int __uskb_dev_fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/*
 * An open device failed after its open (a queue it set up late, a lost
 * interface): keep why in @dev (uskb_dev_last_error()).
 */
USKB_HIDDEN void __uskb_dev_error(struct uskb_dev *dev, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* the text __uskb_dev_fail() keeps, for a device that fails after open */
USKB_HIDDEN const char *__uskb_dev_fail_text(void);

/* an interface that is there, up and Ethernet: its MAC and MTU into @dev; 0 or -errno */
USKB_HIDDEN int __uskb_dev_probe_ether(struct uskb_dev *dev, int fd, const char *type,
				       const char *ifname);
/* a received skb: its device, mac header and protocol (the Ethernet type) */
USKB_HIDDEN void __uskb_dev_rx_skb(struct uskb_dev *dev, struct uskb *skb);
/* the interface's queues (ETHTOOL_GCHANNELS: combined + min(rx, tx)); 1 when it does not say */
USKB_HIDDEN unsigned int __uskb_dev_if_queues(const char *ifname);
/* a frame the interface cannot take: past the MTU (a VLAN tag allowed), or not Ethernet */
USKB_HIDDEN bool __uskb_dev_too_long(unsigned int mtu, const struct uskb *skb);

/*
 * Drop @skb, a frame the device cannot send (@why says why): it is
 * consumed, its result is USKB_XMIT_DROP, and the device's last error says
 * which queue, how long and why. A run of the same drop on one queue is
 * reported once (no lock per frame).
 */
USKB_HIDDEN void __uskb_dev_drop(struct uskb_dev *dev, unsigned int queue, struct uskb *skb,
				 int *res, const char *why);
/* why __uskb_dev_too_long() refused @skb, for __uskb_dev_drop() */
USKB_HIDDEN const char *__uskb_dev_too_long_why(const struct uskb *skb);

/* the built-in devices */
extern const struct uskb_dev_ops __uskb_dev_null_ops USKB_HIDDEN;
extern const struct uskb_dev_ops __uskb_dev_pcap_ops USKB_HIDDEN;
extern const struct uskb_dev_ops __uskb_dev_packet_ops USKB_HIDDEN;
extern const struct uskb_dev_ops __uskb_dev_xdp_ops USKB_HIDDEN;

#endif
