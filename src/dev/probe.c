/* SPDX-License-Identifier: MIT */
/* Interface probing for the devices on real interfaces: up, Ethernet, MAC, MTU, queues. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>

#include "dev/priv.h"

int __uskb_dev_probe_ether(struct uskb_dev *dev, int fd, const char *type, const char *ifname)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(fd, SIOCGIFFLAGS, &ifr))
		return __uskb_dev_fail(errno, "%s:%s: %s", type, ifname, strerror(errno));
	if (!(ifr.ifr_flags & IFF_UP))
		return __uskb_dev_fail(ENETDOWN, "%s:%s: the interface is down (ip link set %s up)", type,
				     ifname, ifname);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr))
		return __uskb_dev_fail(errno, "%s:%s: %s", type, ifname, strerror(errno));
	if (ifr.ifr_hwaddr.sa_family != ARPHRD_ETHER)
		return __uskb_dev_fail(EINVAL, "%s:%s: not an Ethernet interface", type, ifname);
	memcpy(dev->mac, ifr.ifr_hwaddr.sa_data, 6);
	if (ioctl(fd, SIOCGIFMTU, &ifr))
		return __uskb_dev_fail(errno, "%s:%s: %s", type, ifname, strerror(errno));
	dev->mtu = (unsigned int)ifr.ifr_mtu;
	if (ioctl(fd, SIOCGIFINDEX, &ifr))
		return __uskb_dev_fail(errno, "%s:%s: %s", type, ifname, strerror(errno));
	dev->ifindex = (unsigned int)ifr.ifr_ifindex;
	return 0;
}

void __uskb_dev_rx_skb(struct uskb_dev *dev, struct uskb *skb)
{
	skb->dev = dev;
	uskb_reset_mac_header(skb);
	if (skb->len >= 14)
		memcpy(&skb->protocol, skb->data + 12, 2);
}

unsigned int __uskb_dev_if_queues(const char *ifname)
{
	struct ethtool_channels ch = { .cmd = ETHTOOL_GCHANNELS };
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	unsigned int n = 1;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_data = (char *)&ch;
	if (fd >= 0 && !ioctl(fd, SIOCETHTOOL, &ifr)) {
		unsigned int rt = ch.rx_count < ch.tx_count ? ch.rx_count : ch.tx_count;

		n = ch.combined_count + rt;
		if (!n)
			n = 1;
	}
	if (fd >= 0)
		close(fd);
	return n;
}

bool __uskb_dev_too_long(unsigned int mtu, const struct uskb *skb)
{
	unsigned int limit = mtu + 14;
	unsigned char type[2];

	if (skb->len < 14 || uskb_copy_bits(skb, 12, type, 2))
		return true;
	if ((type[0] == 0x81 && type[1] == 0x00) || (type[0] == 0x88 && type[1] == 0xa8))
		limit += 4;
	return skb->len > limit;
}

const char *__uskb_dev_too_long_why(const struct uskb *skb)
{
	return skb->len < 14 ? "shorter than an Ethernet header" : "longer than the MTU allows";
}

/* the last drop this thread reported: the same again is not written twice */
static __thread struct {
	const struct uskb_dev *dev;
	uint64_t open_id;
	unsigned int queue, len;
	const char *why;
} last_drop;

void __uskb_dev_drop(struct uskb_dev *dev, unsigned int queue, struct uskb *skb, int *res,
		     const char *why)
{
	if (last_drop.dev != dev || last_drop.open_id != dev->__open_id ||
	    last_drop.queue != queue || last_drop.len != skb->len || last_drop.why != why) {
		__uskb_dev_error(dev, "queue %u: dropped a %u-byte frame (MTU %u): %s", queue,
				 skb->len, dev->mtu, why);
		last_drop.dev = dev;
		last_drop.open_id = dev->__open_id;
		last_drop.queue = queue;
		last_drop.len = skb->len;
		last_drop.why = why;
	}
	*res = USKB_XMIT_DROP;
	uskb_consume(skb);
}
