/* SPDX-License-Identifier: MIT */
/*
 * The packet: device: transmit through a real Linux interface with an
 * AF_PACKET socket.
 *   packet:IFNAME        TPACKET_V2 TX ring with PACKET_QDISC_BYPASS: each
 *                        frame (head and frags) is gathered into a ring
 *                        slot, one send() flushes a whole burst
 *   packet:IFNAME:mmsg   sendmmsg() with an iovec per head and frag (the
 *                        kernel copies; no ring)
 * Probing gives one-line errors naming the fix: no such interface, down,
 * not Ethernet, not root.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "internal.h"
#include "uskb/dev.h"

#define RING_FRAMES 4096
#define MMSG_MAX 64
#define FLUSH_BATCH 64 /* frames queued in the ring before a send() */

struct packet_priv {
	int fd;
	char ifname[IF_NAMESIZE];
	bool mmsg;
	unsigned char *ring;
	size_t ring_len;
	unsigned int frame_size, frame_nr, cur, mtu;
	unsigned int max_len; /* of a frame in a ring slot */
	unsigned int pending; /* frames handed to the ring since the last send() */
};

static int probe(struct uskb_dev *dev, struct packet_priv *p)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", p->ifname);
	if (ioctl(p->fd, SIOCGIFFLAGS, &ifr))
		return uskb_dev_fail(errno, "packet:%s: %s", p->ifname, strerror(errno));
	if (!(ifr.ifr_flags & IFF_UP))
		return uskb_dev_fail(ENETDOWN, "packet:%s: the interface is down (ip link set %s up)",
				     p->ifname,
			    p->ifname);
	if (ioctl(p->fd, SIOCGIFHWADDR, &ifr))
		return uskb_dev_fail(errno, "packet:%s: %s", p->ifname, strerror(errno));
	if (ifr.ifr_hwaddr.sa_family != ARPHRD_ETHER)
		return uskb_dev_fail(EINVAL, "packet:%s: not an Ethernet interface", p->ifname);
	memcpy(dev->mac, ifr.ifr_hwaddr.sa_data, 6);
	if (ioctl(p->fd, SIOCGIFMTU, &ifr))
		return uskb_dev_fail(errno, "packet:%s: %s", p->ifname, strerror(errno));
	dev->mtu = (unsigned int)ifr.ifr_mtu;
	return 0;
}

static int setup_ring(struct packet_priv *p, unsigned int mtu)
{
	struct tpacket_req req;
	int v = TPACKET_V2, one = 1;
	unsigned int need = TPACKET2_HDRLEN + 14 + 4 + mtu, fs = 2048;

	while (fs < need)
		fs *= 2;
	if (setsockopt(p->fd, SOL_PACKET, PACKET_VERSION, &v, sizeof(v)))
		return -errno;
	/* straight to the driver, as trafgen: no qdisc, no taps on the way */
	setsockopt(p->fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one));
	memset(&req, 0, sizeof(req));
	req.tp_frame_size = fs;
	req.tp_block_size = fs > 65536 ? fs : 65536;
	req.tp_block_nr = RING_FRAMES * fs / req.tp_block_size;
	req.tp_frame_nr = req.tp_block_nr * (req.tp_block_size / fs);
	if (setsockopt(p->fd, SOL_PACKET, PACKET_TX_RING, &req, sizeof(req)))
		return -errno;
	p->ring_len = (size_t)req.tp_block_size * req.tp_block_nr;
	p->ring = mmap(NULL, p->ring_len, PROT_READ | PROT_WRITE, MAP_SHARED, p->fd, 0);
	if (p->ring == MAP_FAILED) {
		p->ring = NULL;
		return -errno;
	}
	p->frame_size = fs;
	p->frame_nr = req.tp_frame_nr;
	p->max_len = fs - (unsigned int)(TPACKET2_HDRLEN - sizeof(struct sockaddr_ll));
	return 0;
}

static int packet_open(struct uskb_dev *dev, const char *arg)
{
	struct packet_priv *p;
	struct sockaddr_ll sll;
	const char *colon;
	size_t n;
	int err;

	if (!arg || !*arg)
		return uskb_dev_fail(EINVAL, "packet: give an interface, as in packet:eth0");
	colon = strchr(arg, ':');
	n = colon ? (size_t)(colon - arg) : strlen(arg);
	if (n >= IF_NAMESIZE)
		return uskb_dev_fail(EINVAL, "packet: \"%s\" is too long for an interface name", arg);
	if (colon && strcmp(colon + 1, "mmsg") && strcmp(colon + 1, "ring"))
		return uskb_dev_fail(EINVAL, "packet: unknown mode \"%s\" (ring or mmsg)", colon + 1);
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	memcpy(p->ifname, arg, n);
	p->mmsg = colon && !strcmp(colon + 1, "mmsg");
	memset(&sll, 0, sizeof(sll));
	sll.sll_family = AF_PACKET;
	sll.sll_ifindex = (int)if_nametoindex(p->ifname);
	if (!sll.sll_ifindex) {
		err = uskb_dev_fail(ENODEV, "packet:%s: no such interface (ip link shows the ones there are)",
				    p->ifname);
		free(p);
		return err;
	}
	/* protocol 0: a transmit-only socket receives nothing */
	p->fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (p->fd < 0) {
		err = errno == EPERM || errno == EACCES ?
			      uskb_dev_fail(EPERM, "packet:%s: needs root or CAP_NET_RAW (sudo, or setcap "
						   "cap_net_raw+ep)", p->ifname) :
			      uskb_dev_fail(errno, "packet:%s: socket: %s", p->ifname, strerror(errno));
		free(p);
		return err;
	}
	err = probe(dev, p);
	if (!err && !p->mmsg && (err = setup_ring(p, dev->mtu)) < 0)
		err = uskb_dev_fail(-err, "packet:%s: TX ring: %s (try packet:IF:mmsg)", p->ifname,
				    strerror(-err));
	if (!err && bind(p->fd, (struct sockaddr *)&sll, sizeof(sll)))
		err = uskb_dev_fail(errno, "packet:%s: bind: %s", p->ifname, strerror(errno));
	if (err) {
		if (p->ring)
			munmap(p->ring, p->ring_len);
		close(p->fd);
		free(p);
		return err;
	}
	p->mtu = dev->mtu;
	dev->features = USKB_DEV_F_SG | USKB_DEV_F_TX_SKB_SHARING;
	dev->priv = p;
	return 0;
}

static void packet_close(struct uskb_dev *dev)
{
	struct packet_priv *p = dev->priv;

	if (p->ring) {
		send(p->fd, NULL, 0, 0); /* let what is queued go */
		munmap(p->ring, p->ring_len);
	}
	close(p->fd);
	free(p);
}

static struct tpacket2_hdr *slot(struct packet_priv *p, unsigned int i)
{
	return (struct tpacket2_hdr *)(p->ring + (size_t)i * p->frame_size);
}

/* a frame the interface cannot take (past the MTU, a VLAN tag allowed) is dropped here */
static bool too_long(const struct packet_priv *p, const struct uskb *skb)
{
	unsigned int limit = p->mtu + 14;
	unsigned char type[2];

	if (skb->len < 14 || uskb_copy_bits(skb, 12, type, 2))
		return true;
	if ((type[0] == 0x81 && type[1] == 0x00) || (type[0] == 0x88 && type[1] == 0xa8))
		limit += 4;
	return skb->len > limit || (p->ring && skb->len > p->max_len); /* the ring's slot */
}

static void ring_flush(struct packet_priv *p)
{
	if (p->pending) {
		send(p->fd, NULL, 0, MSG_DONTWAIT);
		p->pending = 0;
	}
}

static void packet_flush(struct uskb_dev *dev, unsigned int queue)
{
	struct packet_priv *p = dev->priv;

	(void)queue;
	if (p->ring)
		ring_flush(p);
}

static void ring_xmit(struct packet_priv *p, struct uskb **skbs, int n, int *res)
{
	unsigned int data_off = TPACKET2_HDRLEN - sizeof(struct sockaddr_ll);
	bool kicked = false;
	int i;

	for (i = 0; i < n; i++) {
		struct uskb *skb = skbs[i];
		struct tpacket2_hdr *h = slot(p, p->cur);

		if (too_long(p, skb)) {
			res[i] = USKB_XMIT_DROP;
			uskb_consume(skb);
			continue;
		}
		if (__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) & (TP_STATUS_SEND_REQUEST | TP_STATUS_SENDING)) {
			/* the ring is full: flush once, then report the rest busy */
			if (!kicked) {
				send(p->fd, NULL, 0, MSG_DONTWAIT);
				p->pending = 0;
				kicked = true;
			}
			if (__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) &
			    (TP_STATUS_SEND_REQUEST | TP_STATUS_SENDING)) {
				for (; i < n; i++)
					res[i] = USKB_XMIT_BUSY;
				break;
			}
		}
		uskb_copy_bits(skb, 0, (unsigned char *)h + data_off, (int)skb->len);
		h->tp_len = skb->len;
		__atomic_store_n(&h->tp_status, TP_STATUS_SEND_REQUEST, __ATOMIC_RELEASE);
		p->cur = p->cur + 1 == p->frame_nr ? 0 : p->cur + 1;
		p->pending++;
		res[i] = USKB_XMIT_OK;
		uskb_consume(skb);
	}
	/* one send() for a batch: callers flush before they wait or stop */
	if (p->pending >= FLUSH_BATCH || kicked)
		ring_flush(p);
}

static void mmsg_xmit(struct packet_priv *p, struct uskb **skbs, int n, int *res)
{
	struct mmsghdr msg[MMSG_MAX];
	struct iovec iov[MMSG_MAX][1 + USKB_MAX_SKB_FRAGS];
	int idx[MMSG_MAX];
	int i = 0;

	while (i < n) {
		int k = 0, sent, j;

		for (; i < n && k < MMSG_MAX; i++) {
			struct uskb *skb = skbs[i];
			const struct uskb_shared_info *sh = uskb_shinfo(skb);
			int nv = 0;

			if (too_long(p, skb) || sh->frag_list) {
				res[i] = USKB_XMIT_DROP;
				uskb_consume(skb);
				continue;
			}
			iov[k][nv].iov_base = skb->data;
			iov[k][nv++].iov_len = uskb_headlen(skb);
			for (int f = 0; f < sh->nr_frags; f++) {
				const struct uskb_frag *fr = &sh->frags[f];

				iov[k][nv].iov_base = (char *)uskb_page_address(fr->page) + fr->offset;
				iov[k][nv++].iov_len = fr->len;
			}
			memset(&msg[k], 0, sizeof(msg[k]));
			msg[k].msg_hdr.msg_iov = iov[k];
			msg[k].msg_hdr.msg_iovlen = (size_t)nv;
			idx[k++] = i;
		}
		if (!k)
			break;
		sent = sendmmsg(p->fd, msg, (unsigned int)k, MSG_DONTWAIT);
		/* a partial count leaves the reason for the next call: retry those */
		int fail = sent < 0 && errno != EAGAIN && errno != ENOBUFS ? USKB_XMIT_DROP :
									     USKB_XMIT_BUSY;

		if (sent < 0)
			sent = 0;
		for (j = 0; j < k; j++) {
			int r = j < sent ? USKB_XMIT_OK : j == sent ? fail : USKB_XMIT_BUSY;

			res[idx[j]] = r;
			if (r != USKB_XMIT_BUSY)
				uskb_consume(skbs[idx[j]]);
		}
		if (sent < k) { /* the rest of the burst waits too */
			for (; i < n; i++)
				res[i] = USKB_XMIT_BUSY;
			break;
		}
	}
}

static void packet_xmit(struct uskb_dev *dev, unsigned int queue, struct uskb **skbs, int n,
			int *res)
{
	struct packet_priv *p = dev->priv;

	(void)queue;
	if (p->mmsg)
		mmsg_xmit(p, skbs, n, res);
	else
		ring_xmit(p, skbs, n, res);
}

const struct uskb_dev_ops uskb_packet_ops __hidden = {
	.type = "packet",
	.open = packet_open,
	.close = packet_close,
	.xmit = packet_xmit,
	.flush = packet_flush,
};
