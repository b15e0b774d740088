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
/* the same for @len bytes of frame whose Ethernet type is @type */
USKB_HIDDEN bool __uskb_dev_frame_too_long(unsigned int mtu, const unsigned char type[2],
					   unsigned int len);

/*
 * The smallest MTU the interface @ifindex takes (rtnetlink's IFLA_MIN_MTU),
 * asked in the caller's network namespace; 0 when the kernel does not say.
 */
USKB_HIDDEN unsigned int __uskb_dev_min_mtu(unsigned int ifindex);

/* what one sending queue knows of its interface (zeroed, then mtu = dev->mtu) */
struct uskb_dev_link {
	unsigned int mtu; /* the interface's MTU as last seen */
	unsigned int calls;
	uint64_t next_ns;
};
enum uskb_link_when {
	USKB_LINK_HOT,	/* from a fast path: a clock read every 256 calls, then as IDLE */
	USKB_LINK_IDLE, /* at most every 100 ms */
	USKB_LINK_NOW,	/* at once (something failed) */
	USKB_LINK_MTU,	/* at once, the MTU alone (and whether the interface is still there) */
};
/*
 * Is the interface behind @dev (its ifindex) still there and up? Asked of
 * the kernel (ioctls on @fd, a socket in the device's network namespace)
 * as @when says; a changed MTU lands in @l->mtu and dev->mtu. 0, or
 * -ENODEV / -ENETDOWN once the interface is gone or down: the device is
 * then down for good (uskb_dev_running() false) and says why.
 */
USKB_HIDDEN int __uskb_dev_link_check(struct uskb_dev *dev, int fd, struct uskb_dev_link *l,
				      enum uskb_link_when when);
/*
 * A send failed with @err. When @err says the interface went away (ENXIO,
 * ENODEV, ENETDOWN), the device is down from now on (the interface asked at
 * once for the reason; @what names the call otherwise) and this returns
 * true; any other error returns false and changes nothing.
 */
USKB_HIDDEN bool __uskb_dev_send_gone(struct uskb_dev *dev, int fd, struct uskb_dev_link *l, int err,
				      const char *what);
/* a receive on a device that is down: -ENETDOWN, with its reason as the open-style error */
USKB_HIDDEN int __uskb_dev_rx_down(struct uskb_dev *dev);
/* mark @dev down (the first caller sets its last error: why); -@err */
USKB_HIDDEN int __uskb_dev_set_down(struct uskb_dev *dev, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/*
 * @frames of @bytes that the device took (and counted as sent) were lost
 * after all (the kernel refused them, the interface went away): move them
 * from tx_packets/tx_bytes to tx_dropped on @queue and say so (@why NULL:
 * the device went down, whose reason leads). Only the queue's own thread
 * calls it.
 */
USKB_HIDDEN void __uskb_dev_tx_lost(struct uskb_dev *dev, unsigned int queue, uint64_t frames,
				    uint64_t bytes, const char *why);
/* the lost frames leave tx_packets (uskb_dev_xmit and uskb_dev_flush, on their return) */
USKB_HIDDEN void __uskb_dev_tx_settle(struct uskb_dev_stats *q);

/* __uskb_dev_tx_settle() when frames were lost: no call on a transmit that lost none */
static inline void uskb_dev_tx_settle(struct uskb_dev_stats *q)
{
	if (uskb_unlikely(q->__tx_unsent))
		__uskb_dev_tx_settle(q);
}

/*
 * Drop @skb, a frame the device cannot send (@why says why): it is
 * consumed, its result is USKB_XMIT_DROP, and the device's last error says
 * which queue, how long and why. A run of the same drop on one queue is
 * reported once (no lock per frame).
 */
USKB_HIDDEN void __uskb_dev_drop(struct uskb_dev *dev, unsigned int queue, struct uskb *skb,
				 int *res, const char *why);
/* drop all @n skbs (a device that cannot send at all now): each consumed, each USKB_XMIT_DROP */
USKB_HIDDEN void __uskb_dev_drop_all(struct uskb **skbs, int n, int *res);
/* why __uskb_dev_too_long() refused @skb, for __uskb_dev_drop() */
USKB_HIDDEN const char *__uskb_dev_too_long_why(const struct uskb *skb);

/* the built-in devices */
/*
 * A socket device's drain (uskb_dev_drain): a stream's peer given
 * @timeout_ms to take what was sent; what it did not, counted lost and the
 * connection reset. Does nothing for a device of another type. (An op of
 * its own once struct uskb_dev_ops can grow.)
 */
USKB_HIDDEN void __uskb_sk_drain(struct uskb_dev *dev, int timeout_ms);

extern const struct uskb_dev_ops __uskb_dev_null_ops USKB_HIDDEN;
extern const struct uskb_dev_ops __uskb_dev_pcap_ops USKB_HIDDEN;
extern const struct uskb_dev_ops __uskb_dev_packet_ops USKB_HIDDEN;
extern const struct uskb_dev_ops __uskb_dev_xdp_ops USKB_HIDDEN;
extern const struct uskb_dev_ops __uskb_dev_udp_ops USKB_HIDDEN;
extern const struct uskb_dev_ops __uskb_dev_tcp_ops USKB_HIDDEN;
extern const struct uskb_dev_ops __uskb_dev_unix_ops USKB_HIDDEN;
extern const struct uskb_dev_ops __uskb_dev_tap_ops USKB_HIDDEN;
extern const struct uskb_dev_ops __uskb_dev_xdp_live_ops USKB_HIDDEN;

#endif
