/* SPDX-License-Identifier: MIT */
/*
 * The tap: device: a TUN/TAP interface, the way a VM's traffic usually
 * reaches the host's network.
 *   tap:IFNAME[,queues=N][,csum]
 * The interface is made (or, when it exists persistent, attached to) with
 * IFF_TAP | IFF_NO_PI | IFF_VNET_HDR, and IFF_MULTI_QUEUE with N queues:
 * one file descriptor per queue, each sent and received on by one thread.
 * It is brought up; it goes when the device closes unless it was made
 * persistent beforehand (ip tuntap add).
 * Every frame carries a 12-byte virtio-net header. A CHECKSUM_PARTIAL frame
 * sent is marked NEEDS_CSUM and the kernel completes it; a TCP GSO skb
 * (USKB_DEV_F_TSO) goes whole with its gso_type and gso_size, and the
 * kernel segments it. What the kernel hands over comes with complete
 * checksums (TUNSETOFFLOAD 0), or with csum (TUN_F_CSUM) a checksum it left
 * to us is CHECKSUM_PARTIAL and one it checked CHECKSUM_UNNECESSARY (what a
 * guest with GUEST_CSUM takes as is). Never GSO frames: the receive offloads
 * TSO and UFO stay off. The kernel copies what is written (writev).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <linux/virtio_net.h>
#include <net/if.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "dev/priv.h"
#include "uskb/csum.h"

#define TAP_MAX_QUEUES 16
#define HDR_LEN ((int)sizeof(struct virtio_net_hdr_mrg_rxbuf))

struct tap_priv {
	unsigned int nq;
	int ctl; /* a socket for the interface ioctls */
	int fd[TAP_MAX_QUEUES];
	struct uskb_dev_link link[TAP_MAX_QUEUES]; /* each queue's look at the interface (its thread's) */
};

static int tap_queue(const char *ifname, bool multi, bool csum, int *fdp)
{
	struct ifreq ifr = { 0 };
	int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC), hdr = HDR_LEN, r;
	unsigned int off = csum ? TUN_F_CSUM : 0;

	if (fd < 0)
		return __uskb_dev_fail(errno, "tap:%s: /dev/net/tun: %s%s", ifname, strerror(errno),
				       errno == ENOENT ? " (modprobe tun)" : "");
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR | (multi ? IFF_MULTI_QUEUE : 0);
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	r = ioctl(fd, TUNSETIFF, &ifr);
	/* one queue: attach to a persistent tap as it was made (ip tuntap ... multi_queue or not) */
	if (r && errno == EINVAL && !multi) {
		ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR | IFF_MULTI_QUEUE;
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
		r = ioctl(fd, TUNSETIFF, &ifr);
	}
	if (r) {
		int err = errno;

		close(fd);
		if (err == EPERM)
			return __uskb_dev_fail(err, "tap:%s: making a tap needs CAP_NET_ADMIN (run as root)", ifname);
		if (err == EBUSY)
			return __uskb_dev_fail(err, "tap:%s: the interface is in use (another process has it, or "
						    "it is not a tap, or its queues do not match queues=)", ifname);
		return __uskb_dev_fail(err, "tap:%s: TUNSETIFF: %s", ifname, strerror(err));
	}
	if (ioctl(fd, TUNSETVNETHDRSZ, &hdr) || ioctl(fd, TUNSETOFFLOAD, off)) {
		int err = errno;

		close(fd);
		return __uskb_dev_fail(err, "tap:%s: setting the virtio-net header: %s", ifname, strerror(err));
	}
	*fdp = fd;
	return 0;
}

static void tap_close(struct uskb_dev *dev)
{
	struct tap_priv *t = dev->priv;

	if (!t)
		return;
	for (unsigned int i = 0; i < t->nq; i++)
		close(t->fd[i]);
	if (t->ctl >= 0)
		close(t->ctl);
	free(t);
	dev->priv = NULL;
}

static int tap_open(struct uskb_dev *dev, const char *arg)
{
	char ifname[IFNAMSIZ];
	const char *comma = arg ? strchr(arg, ',') : NULL;
	size_t len = comma ? (size_t)(comma - arg) : (arg ? strlen(arg) : 0);
	unsigned long nq = 1;
	bool csum = false;
	struct tap_priv *t;
	struct ifreq ifr = { 0 };
	int err;

	if (!len)
		return __uskb_dev_fail(EINVAL, "tap: give an interface name: tap:IFNAME[,queues=N][,csum]");
	if (len >= IFNAMSIZ)
		return __uskb_dev_fail(EINVAL, "tap:%.*s: an interface name has at most %d characters", (int)len,
				       arg, IFNAMSIZ - 1);
	memcpy(ifname, arg, len);
	ifname[len] = 0;
	while (comma) {
		const char *o = comma + 1, *next = strchr(o, ',');
		size_t olen = next ? (size_t)(next - o) : strlen(o);
		char *end;

		if (olen == 4 && !strncmp(o, "csum", 4)) {
			csum = true;
		} else if (olen > 7 && !strncmp(o, "queues=", 7)) {
			errno = 0;
			nq = strtoul(o + 7, &end, 10);
			if (errno || end != o + olen || nq < 1 || nq > TAP_MAX_QUEUES)
				return __uskb_dev_fail(EINVAL, "tap:%s: %.*s: give queues=1 to %d", ifname, (int)olen,
						       o, TAP_MAX_QUEUES);
		} else {
			return __uskb_dev_fail(EINVAL, "tap:%s: unknown option \"%.*s\" (queues=N, csum)", ifname,
					       (int)olen, o);
		}
		comma = next;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->ctl = -1;
	dev->priv = t;
	for (; t->nq < nq; t->nq++) {
		err = tap_queue(ifname, nq > 1, csum, &t->fd[t->nq]);
		if (err) {
			tap_close(dev);
			return err;
		}
	}
	/* up, and its MTU and address */
	t->ctl = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (t->ctl < 0 || ioctl(t->ctl, SIOCGIFFLAGS, &ifr) ||
	    (!(ifr.ifr_flags & IFF_UP) && (ifr.ifr_flags |= IFF_UP, ioctl(t->ctl, SIOCSIFFLAGS, &ifr)))) {
		err = errno;
		tap_close(dev);
		return __uskb_dev_fail(err, "tap:%s: bringing it up: %s", ifname, strerror(err));
	}
	/* its MAC (pktgen's default source), MTU and index */
	err = __uskb_dev_probe_ether(dev, t->ctl, "tap", ifname);
	if (err) {
		tap_close(dev);
		return err;
	}
	dev->features = USKB_DEV_F_SG | USKB_DEV_F_IP_CSUM | USKB_DEV_F_IPV6_CSUM | USKB_DEV_F_MTU | USKB_DEV_F_TSO;
	dev->nqueues = (unsigned int)nq;
	dev->nrxqueues = (unsigned int)nq;
	return 0;
}

/*
 * A GSO skb's virtio-net header, as virtio_net_hdr_from_skb: NULL when it
 * is fine, or why the skb cannot go.
 */
static const char *gso_hdr(const struct uskb *skb, struct virtio_net_hdr *h)
{
	const struct uskb_shared_info *sh = __uskb_shinfo_peek(skb);
	unsigned char doff;
	int start = uskb_checksum_start_offset(skb);

	if (!(sh->gso_type & (USKB_GSO_TCPV4 | USKB_GSO_TCPV6)) || skb->ip_summed != USKB_CHECKSUM_PARTIAL)
		return "a GSO skb that is not TCP with CHECKSUM_PARTIAL";
	if (skb->len > 65535 + 18 || uskb_copy_bits(skb, start + 12, &doff, 1))
		return "a GSO skb longer than 64 KiB, or with no TCP header";
	h->gso_type = (sh->gso_type & USKB_GSO_TCPV6) ? VIRTIO_NET_HDR_GSO_TCPV6 : VIRTIO_NET_HDR_GSO_TCPV4;
	if (sh->gso_type & USKB_GSO_TCP_ECN)
		h->gso_type |= VIRTIO_NET_HDR_GSO_ECN;
	h->gso_size = sh->gso_size;
	h->hdr_len = (uint16_t)(start + (doff >> 4) * 4); /* the headers, which the kernel keeps linear */
	return NULL;
}

static void tap_xmit(struct uskb_dev *dev, unsigned int queue, struct uskb **skbs, int n, int *res)
{
	struct tap_priv *t = dev->priv;
	int fd = t->fd[queue];

	/* the interface gone or down: everything is dropped, the sender told by uskb_dev_running() */
	if (uskb_unlikely(__uskb_dev_link_check(dev, t->ctl, &t->link[queue], USKB_LINK_HOT))) {
		__uskb_dev_drop_all(skbs, n, res);
		return;
	}
	for (int i = 0; i < n; i++) {
		struct uskb *skb = skbs[i];
		const struct uskb_shared_info *sh = __uskb_shinfo_peek(skb);
		struct virtio_net_hdr_mrg_rxbuf h = { 0 };
		struct iovec iov[2 + USKB_MAX_SKB_FRAGS];
		int k = 0;
		ssize_t w;

		const char *why = NULL;

		if (uskb_unlikely(sh->frag_list))
			why = "a frag_list (linearize first)";
		else if (sh->gso_size)
			why = gso_hdr(skb, &h.hdr); /* past the MTU: the kernel segments it */
		else if (__uskb_dev_too_long(dev->mtu, skb))
			why = __uskb_dev_too_long_why(skb);
		if (uskb_unlikely(why)) {
			__uskb_dev_drop(dev, queue, skb, &res[i], why);
			continue;
		}
		if (skb->ip_summed == USKB_CHECKSUM_PARTIAL) {
			h.hdr.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
			h.hdr.csum_start = (uint16_t)uskb_checksum_start_offset(skb);
			h.hdr.csum_offset = skb->csum_offset;
		}
		iov[k++] = (struct iovec){ &h, HDR_LEN };
		iov[k++] = (struct iovec){ skb->data, uskb_headlen(skb) };
		for (int f = 0; f < sh->nr_frags; f++)
			iov[k++] = (struct iovec){ uskb_frag_address(&sh->frags[f]), uskb_frag_size(&sh->frags[f]) };
		w = writev(fd, iov, k);
		if (w < 0 && errno == EAGAIN) {
			/* the kernel's queue is full: these wait */
			for (; i < n; i++)
				res[i] = USKB_XMIT_BUSY;
			return;
		}
		if (w < 0) {
			char msg[96];
			int err = errno;

			/* tun says EIO when its interface is down or going: ask the interface */
			if ((err == EIO && __uskb_dev_link_check(dev, t->ctl, &t->link[queue], USKB_LINK_NOW)) ||
			    __uskb_dev_send_gone(dev, t->ctl, &t->link[queue], err, "writev")) {
				__uskb_dev_drop_all(skbs + i, n - i, res + i);
				return;
			}
			snprintf(msg, sizeof(msg), "writev: %s", strerror(err));
			__uskb_dev_drop(dev, queue, skb, &res[i], msg);
			continue;
		}
		res[i] = USKB_XMIT_OK;
		uskb_consume(skb);
	}
}

static int tap_rx(struct uskb_dev *dev, unsigned int queue, struct uskb **skbs, int max, int timeout_ms)
{
	struct tap_priv *t = dev->priv;
	int fd = t->fd[queue], n = 0;
	bool waited = false;

	while (n < max) {
		/*
		 * A frame is at most the MTU, a VLAN tag and the Ethernet header
		 * (offloads are off); one byte more shows a longer one (the MTU
		 * raised since), which tun would cut short without a word.
		 */
		unsigned int room = dev->mtu + 4 + 14 + 1;
		struct uskb *skb = uskb_dev_alloc(room);
		struct virtio_net_hdr_mrg_rxbuf h;
		struct iovec iov[2];
		ssize_t r;

		if (!skb)
			return n ? n : -ENOMEM;
		iov[0] = (struct iovec){ &h, HDR_LEN };
		iov[1] = (struct iovec){ skb->data, room };
		r = readv(fd, iov, 2);
		if (r < 0) {
			int err = errno;

			uskb_free(skb);
			if (err != EAGAIN)
				return n ? n : -err;
			if (n || !timeout_ms || waited)
				break;
			{
				struct pollfd pfd = { .fd = fd, .events = POLLIN };

				if (poll(&pfd, 1, timeout_ms) < 0 && errno == EINTR)
					return -EINTR;
			}
			waited = true;
			continue;
		}
		if (r <= HDR_LEN || r - HDR_LEN >= (ssize_t)room) {
			uskb_free(skb);
			uskb_count_add(&dev->qstats[queue].rx_dropped, 1);
			if (r > HDR_LEN)
				__uskb_dev_error(dev, "queue %u: a frame longer than the MTU (%u) allows: dropped, "
						      "not cut short", queue, dev->mtu);
			continue;
		}
		uskb_put(skb, (unsigned int)(r - HDR_LEN));
		if (h.hdr.gso_type != VIRTIO_NET_HDR_GSO_NONE ||
		    ((h.hdr.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) &&
		     !uskb_partial_csum_set(skb, h.hdr.csum_start, h.hdr.csum_offset))) {
			uskb_free(skb);
			uskb_count_add(&dev->qstats[queue].rx_dropped, 1);
			continue;
		}
		if (h.hdr.flags & VIRTIO_NET_HDR_F_DATA_VALID)
			skb->ip_summed = USKB_CHECKSUM_UNNECESSARY; /* (csum: the kernel checked it) */
		__uskb_dev_rx_skb(dev, skb);
		skbs[n++] = skb;
	}
	return n;
}

const struct uskb_dev_ops __uskb_dev_tap_ops USKB_HIDDEN = {
	.type = "tap",
	.open = tap_open,
	.close = tap_close,
	.xmit = tap_xmit,
	.rx = tap_rx,
};
