/* SPDX-License-Identifier: MIT */
/*
 * Interface probing for the devices on real interfaces: up, Ethernet, MAC,
 * MTU, queues; watching the interface while sending (deleted, down, a new
 * MTU); drops and frames lost after they were taken.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/ethtool.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
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

unsigned int __uskb_dev_min_mtu(unsigned int ifindex)
{
	struct {
		struct nlmsghdr nh;
		struct ifinfomsg ifi;
	} req = {
		.nh = { .nlmsg_len = sizeof(req), .nlmsg_type = RTM_GETLINK, .nlmsg_flags = NLM_F_REQUEST,
			.nlmsg_seq = 1 },
		.ifi = { .ifi_family = AF_UNSPEC, .ifi_index = (int)ifindex },
	};
	union {
		struct nlmsghdr nh;
		char buf[16384];
	} ans;
	unsigned int min = 0;
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	ssize_t n;

	if (fd < 0)
		return 0;
	if (send(fd, &req, sizeof(req), 0) == (ssize_t)sizeof(req) &&
	    (n = recv(fd, &ans, sizeof(ans), 0)) > 0 && NLMSG_OK(&ans.nh, (size_t)n) &&
	    ans.nh.nlmsg_type == RTM_NEWLINK &&
	    ans.nh.nlmsg_len >= NLMSG_LENGTH(sizeof(struct ifinfomsg))) {
		struct ifinfomsg *ifi = NLMSG_DATA(&ans.nh);
		struct rtattr *a = IFLA_RTA(ifi);
		int left = (int)IFLA_PAYLOAD(&ans.nh);

		for (; RTA_OK(a, left); a = RTA_NEXT(a, left))
			if (a->rta_type == IFLA_MIN_MTU && RTA_PAYLOAD(a) == sizeof(uint32_t))
				memcpy(&min, RTA_DATA(a), sizeof(min));
	}
	close(fd);
	return min;
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

bool __uskb_dev_frame_too_long(unsigned int mtu, const unsigned char type[2], unsigned int len)
{
	unsigned int limit = mtu + 14;

	/* as the kernel's packet_extra_vlan_len_allowed(): a 802.1Q tag only */
	if (type[0] == 0x81 && type[1] == 0x00)
		limit += 4;
	return len > limit;
}

bool __uskb_dev_too_long(unsigned int mtu, const struct uskb *skb)
{
	unsigned char type[2];

	if (skb->len < 14 || uskb_copy_bits(skb, 12, type, 2))
		return true;
	return __uskb_dev_frame_too_long(mtu, type, skb->len);
}

int __uskb_dev_link_check(struct uskb_dev *dev, int fd, struct uskb_dev_link *l, enum uskb_link_when when)
{
	struct ifreq ifr;
	uint64_t t;

	if (uskb_unlikely(__atomic_load_n(&dev->__down, __ATOMIC_RELAXED)))
		return -ENETDOWN;
	/* on the fast path a clock read every 256 calls; the interface every 100 ms */
	if (when == USKB_LINK_HOT && (++l->calls & 255))
		return 0;
	if (when != USKB_LINK_MTU) {
		t = uskb_mono_ns();
		if (when != USKB_LINK_NOW && t < l->next_ns)
			return 0;
		l->next_ns = t + 100 * 1000000ull;
	}
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_ifindex = (int)dev->ifindex;
	if (ioctl(fd, SIOCGIFNAME, &ifr))
		return errno == ENODEV ? __uskb_dev_set_down(dev, ENODEV, "the interface (index %u) was deleted",
							   dev->ifindex) : 0;
	if (when != USKB_LINK_MTU && !ioctl(fd, SIOCGIFFLAGS, &ifr) && !(ifr.ifr_flags & IFF_UP))
		return __uskb_dev_set_down(dev, ENETDOWN, "%s went down", ifr.ifr_name);
	if (!ioctl(fd, SIOCGIFMTU, &ifr) && (unsigned int)ifr.ifr_mtu != l->mtu) {
		l->mtu = (unsigned int)ifr.ifr_mtu;
		__atomic_store_n(&dev->mtu, l->mtu, __ATOMIC_RELAXED);
	}
	return 0;
}

int __uskb_dev_set_down(struct uskb_dev *dev, int err, const char *fmt, ...)
{
	char why[120];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	/* the first queue to notice says it; the others only stop */
	if (!__atomic_exchange_n(&dev->__down, 1, __ATOMIC_RELAXED))
		__uskb_dev_error(dev, "%s", why);
	return -err;
}

bool __uskb_dev_send_gone(struct uskb_dev *dev, int fd, struct uskb_dev_link *l, int err,
			  const char *what)
{
	if (err != ENXIO && err != ENODEV && err != ENETDOWN)
		return false;
	/*
	 * The interface's own state is the better reason. An interface being
	 * deleted can still read as there and up; the call's error says it
	 * is going, in the same words.
	 */
	if (__uskb_dev_link_check(dev, fd, l, USKB_LINK_NOW) == 0)
		__uskb_dev_set_down(dev, err, "%s: the interface %s (%s: %s)", dev->name,
				    err == ENETDOWN ? "went down" : "was deleted or went down", what, strerror(err));
	return true;
}

int __uskb_dev_rx_down(struct uskb_dev *dev)
{
	char why[160];

	if (uskb_dev_last_error(dev, why, sizeof(why)) <= 0)
		snprintf(why, sizeof(why), "the interface is down");
	return __uskb_dev_fail(ENETDOWN, "%s: %s", dev->name, why);
}

void __uskb_dev_tx_lost(struct uskb_dev *dev, unsigned int queue, uint64_t frames, uint64_t bytes,
			const char *why)
{
	struct uskb_dev_stats *q;

	char down[160];

	if (!frames)
		return;
	/* lost because the device went down: its reason first */
	if (!why && uskb_dev_last_error(dev, down, sizeof(down)) > 0)
		__uskb_dev_error(dev, "%s; queue %u: %" PRIu64 " frame%s taken before never went out", down,
				 queue, frames, frames == 1 ? "" : "s");
	else
		__uskb_dev_error(dev, "queue %u: %" PRIu64 " frame%s taken before never went out: %s",
				 queue, frames, frames == 1 ? "" : "s", why ? why : "the device went down");
	if (!dev->qstats)
		return;
	/*
	 * Counted as sent when the device took them: now they are drops. They
	 * leave tx_packets when the transmit or flush that found them returns
	 * (__uskb_dev_tx_settle), after that call's own sends were added, so
	 * that a reader never sees tx_packets below zero.
	 */
	q = &dev->qstats[queue];
	uskb_count_add(&q->tx_dropped, frames);
	q->__tx_unsent += frames;
	q->__tx_unsent_bytes += bytes;
}

void __uskb_dev_tx_settle(struct uskb_dev_stats *q)
{
	uskb_count_add(&q->tx_packets, -q->__tx_unsent);
	uskb_count_add(&q->tx_bytes, -q->__tx_unsent_bytes);
	q->__tx_unsent = q->__tx_unsent_bytes = 0;
}

void __uskb_dev_drop_all(struct uskb **skbs, int n, int *res)
{
	for (int i = 0; i < n; i++) {
		res[i] = USKB_XMIT_DROP;
		uskb_consume(skbs[i]);
	}
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
		unsigned int mtu = __atomic_load_n(&dev->mtu, __ATOMIC_RELAXED);

		/* the MTU where it may be the cause: a frame past it, with an Ethernet header and a tag */
		if (skb->len > mtu + 18)
			__uskb_dev_error(dev, "queue %u: dropped a %u-byte frame (MTU %u): %s", queue, skb->len,
					 mtu, why);
		else
			__uskb_dev_error(dev, "queue %u: dropped a %u-byte frame: %s", queue, skb->len, why);
		last_drop.dev = dev;
		last_drop.open_id = dev->__open_id;
		last_drop.queue = queue;
		last_drop.len = skb->len;
		last_drop.why = why;
	}
	*res = USKB_XMIT_DROP;
	uskb_consume(skb);
}
