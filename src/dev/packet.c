/* SPDX-License-Identifier: MIT */
/*
 * The packet: device: a real Linux interface through AF_PACKET sockets.
 *   packet:IFNAME        TPACKET_V2 TX ring with PACKET_QDISC_BYPASS: each
 *                        frame (head and frags) is gathered into a ring
 *                        slot behind a virtio-net header, one send()
 *                        flushes a whole burst
 *   packet:IFNAME:mmsg   sendmmsg() with an iovec per head and frag (the
 *                        kernel copies; no ring)
 * One socket per queue of the interface (a queue of the device is a
 * socket: threads on different queues share nothing); which of the
 * interface's queues a frame leaves by the kernel picks from the sending
 * CPU (cpu % queues, with qdisc bypass), so a thread pinned per queue — as
 * uskb-pktgen's — keeps to one. Queue 0 is set up at open (its errors are
 * the open's), the others' rings at their first use.
 * Receiving (the first uskb_dev_rx) opens a second socket with a
 * TPACKET_V3 RX ring: 64 blocks of 128 KiB, a block handed over when full
 * or after 1 ms. Frames become skbs through rxzc.c: long ones keep their
 * payload in the block, which goes back to the kernel when the last skb on
 * it is freed (or is copied out: past the patience, or before the kernel,
 * which fills the blocks in order and stops at one still out, gets within
 * half a ring of it).
 * Probing gives one-line errors naming the fix: no such interface, down,
 * not Ethernet, not root.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <linux/virtio_net.h>
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

#include "dev/priv.h"
#include "dev/rxzc.h"
#include "uskb/dev.h"

#define RING_FRAMES 4096
#define MMSG_MAX 64
#define FLUSH_BATCH 64 /* frames queued in the ring before a send() */
#define RX_BLOCK_ORDER 5 /* 128 KiB blocks */
#define RX_BLOCKS 64

/* one queue: a socket, bound (and with its TX ring) at first use */
struct ptx {
	int fd;
	bool ready;
	unsigned char *ring;
	size_t ring_len;
	unsigned int frame_size, frame_nr, cur;
	unsigned int max_len; /* of a frame in a ring slot */
	unsigned int vnet;    /* bytes of virtio-net header before each frame: 0 or 10 */
	unsigned int pending; /* frames handed to the ring since the last send() */
	unsigned int longest; /* the longest frame the ring has held */
	unsigned int ring_mtu; /* the highest MTU a frame in the ring was let in under since the last check */
	unsigned int fits_all; /* no MTU the interface takes refuses a frame this long (0: unknown) */
	struct uskb_dev_link link; /* the interface as this queue last saw it */
};

struct packet_priv {
	struct uskb_dev *dev;
	char ifname[IF_NAMESIZE];
	bool mmsg;
	unsigned int mtu, nq;
	/* receive: a TPACKET_V3 ring on its own socket, set up by the first rx */
	int ifindex, rx_fd;
	unsigned char *rx_ring;
	size_t rx_ring_len;
	struct rxzc *zc;
	unsigned int rx_cur;	  /* the block being read (or next to be) */
	unsigned int rx_left;	  /* frames of it still to deliver; 0: not open */
	struct tpacket3_hdr *rx_pkt; /* the next of them */
	struct uskb_dev_link rx_link; /* the interface as the receiver last saw it */
	struct ptx tx[];
};

static int setup_ring(struct ptx *t, unsigned int mtu)
{
	struct tpacket_req req;
	int v = TPACKET_V2, one = 1;
	unsigned int need = TPACKET2_HDRLEN + 14 + 4 + mtu, fs = 2048;

	while (fs < need)
		fs *= 2;
	if (setsockopt(t->fd, SOL_PACKET, PACKET_VERSION, &v, sizeof(v)))
		return -errno;
	/* straight to the driver, as trafgen: no qdisc, no taps on the way */
	setsockopt(t->fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one));
	/*
	 * A virtio-net header before each frame says how much of it the
	 * kernel copies into the skb's linear part (hdr_len); without one it
	 * copies 14 bytes and attaches the rest as frags of the ring's pages,
	 * which whoever receives must pull back into a linear head. Before
	 * the ring: the kernel refuses it after (EBUSY). (A kernel whose TX
	 * ring predates the header's support would send it as frame bytes;
	 * the 6.x kernels uskb is tested on read it.)
	 */
	t->vnet = setsockopt(t->fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) ?
			  0 : (unsigned int)sizeof(struct virtio_net_hdr);
	memset(&req, 0, sizeof(req));
	req.tp_frame_size = fs;
	req.tp_block_size = fs > 65536 ? fs : 65536;
	req.tp_block_nr = RING_FRAMES * fs / req.tp_block_size;
	req.tp_frame_nr = req.tp_block_nr * (req.tp_block_size / fs);
	if (setsockopt(t->fd, SOL_PACKET, PACKET_TX_RING, &req, sizeof(req)))
		return -errno;
	t->ring_len = (size_t)req.tp_block_size * req.tp_block_nr;
	t->ring = mmap(NULL, t->ring_len, PROT_READ | PROT_WRITE, MAP_SHARED, t->fd, 0);
	if (t->ring == MAP_FAILED) {
		t->ring = NULL;
		return -errno;
	}
	t->frame_size = fs;
	t->frame_nr = req.tp_frame_nr;
	t->max_len = fs - (unsigned int)(TPACKET2_HDRLEN - sizeof(struct sockaddr_ll)) - t->vnet;
	return 0;
}

/* the queue's ring (unless mmsg) and binding, once; 0 or -errno with the reason set */
static int tx_ready(struct packet_priv *p, struct ptx *t)
{
	struct sockaddr_ll sll;
	int err;

	if (t->ready)
		return 0;
	if (!p->mmsg && !t->ring && (err = setup_ring(t, p->mtu)) < 0)
		return __uskb_dev_fail(-err, "packet:%s: TX ring: %s (try packet:IF:mmsg)", p->ifname,
				     strerror(-err));
	memset(&sll, 0, sizeof(sll));
	sll.sll_family = AF_PACKET;
	sll.sll_ifindex = p->ifindex;
	if (bind(t->fd, (struct sockaddr *)&sll, sizeof(sll)))
		return __uskb_dev_fail(errno, "packet:%s: bind: %s", p->ifname, strerror(errno));
	t->ready = true;
	return 0;
}

static void tx_free(struct ptx *t)
{
	if (t->ring) {
		if (t->ready)
			send(t->fd, NULL, 0, 0); /* let what is queued go */
		munmap(t->ring, t->ring_len);
	}
	if (t->fd >= 0)
		close(t->fd);
}

static void packet_free(struct packet_priv *p)
{
	for (unsigned int q = 0; q < p->nq; q++)
		tx_free(&p->tx[q]);
	if (p->rx_fd >= 0)
		close(p->rx_fd);
	free(p);
}

static int packet_open(struct uskb_dev *dev, const char *arg)
{
	char ifname[IF_NAMESIZE] = "";
	struct packet_priv *p;
	const char *colon;
	unsigned int nq, q, min_mtu;
	int ifindex, err;
	size_t n;

	if (!arg || !*arg)
		return __uskb_dev_fail(EINVAL, "packet: give an interface, as in packet:eth0");
	colon = strchr(arg, ':');
	n = colon ? (size_t)(colon - arg) : strlen(arg);
	if (n >= IF_NAMESIZE)
		return __uskb_dev_fail(EINVAL, "packet: \"%s\" is too long for an interface name", arg);
	if (colon && strcmp(colon + 1, "mmsg") && strcmp(colon + 1, "ring"))
		return __uskb_dev_fail(EINVAL, "packet:%s: unknown mode \"%s\" (ring or mmsg)", arg,
				       colon + 1);
	memcpy(ifname, arg, n);
	ifindex = (int)if_nametoindex(ifname);
	if (!ifindex)
		return __uskb_dev_fail(ENODEV, "packet:%s: no such interface (ip link shows the ones there are)",
				     ifname);
	nq = __uskb_dev_if_queues(ifname);
	p = calloc(1, sizeof(*p) + nq * sizeof(p->tx[0]));
	if (!p)
		return -ENOMEM;
	memcpy(p->ifname, ifname, sizeof(ifname));
	p->mmsg = colon && !strcmp(colon + 1, "mmsg");
	p->ifindex = ifindex;
	p->rx_fd = -1;
	/*
	 * Every socket is made now, in the open's network namespace (a later
	 * bind uses the socket's). Protocol 0: a transmit socket receives
	 * nothing, and neither does the receive socket until the first rx.
	 */
	for (q = 0; q < nq + 1; q++) {
		int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);

		if (fd < 0) {
			err = errno == EPERM || errno == EACCES ?
				      __uskb_dev_fail(EPERM, "packet:%s: needs root or CAP_NET_RAW (sudo, or "
							   "setcap cap_net_raw+ep)", ifname) :
				      __uskb_dev_fail(errno, "packet:%s: socket: %s", ifname, strerror(errno));
			packet_free(p);
			return err;
		}
		if (q < nq)
			p->tx[p->nq++].fd = fd;
		else
			p->rx_fd = fd;
	}
	err = __uskb_dev_probe_ether(dev, p->tx[0].fd, "packet", ifname);
	p->mtu = dev->mtu;
	/* the ring's MTU check needs it (a socket that sends with sendmmsg() is checked by the kernel) */
	min_mtu = err || p->mmsg ? 0 : __uskb_dev_min_mtu((unsigned int)ifindex);
	for (q = 0; q < nq; q++) {
		p->tx[q].link.mtu = p->tx[q].ring_mtu = dev->mtu;
		p->tx[q].fits_all = min_mtu ? min_mtu + 14 : 0;
	}
	p->rx_link.mtu = dev->mtu;
	if (!err)
		err = tx_ready(p, &p->tx[0]);
	if (err) {
		packet_free(p);
		return err;
	}
	dev->nqueues = nq;
	dev->nrxqueues = 1;
	dev->features = USKB_DEV_F_SG | USKB_DEV_F_TX_SKB_SHARING | USKB_DEV_F_MTU;
	dev->priv = p;
	p->dev = dev;
	return 0;
}

static void rx_teardown(struct packet_priv *p)
{
	/* skbs still on the ring keep working: their blocks are copied out first */
	__uskb_rxzc_destroy(p->zc);
	p->zc = NULL;
	if (p->rx_ring)
		munmap(p->rx_ring, p->rx_ring_len);
	p->rx_ring = NULL;
	if (p->rx_fd >= 0)
		close(p->rx_fd);
	p->rx_fd = -1;
}

static void packet_close(struct uskb_dev *dev)
{
	struct packet_priv *p = dev->priv;

	rx_teardown(p);
	packet_free(p);
}

static struct tpacket2_hdr *slot(struct ptx *t, unsigned int i)
{
	return (struct tpacket2_hdr *)(t->ring + (size_t)i * t->frame_size);
}

/* a frame the interface cannot take (past the MTU, a VLAN tag allowed) is dropped here */
static bool too_long(const struct ptx *t, const struct uskb *skb)
{
	return __uskb_dev_too_long(t->link.mtu, skb) || (t->ring && skb->len > t->max_len); /* the ring's slot */
}

#define DATA_OFF (TPACKET2_HDRLEN - sizeof(struct sockaddr_ll))

static unsigned int next_slot(const struct ptx *t, unsigned int i)
{
	return i + 1 == t->frame_nr ? 0 : i + 1;
}

static unsigned int slot_status(struct tpacket2_hdr *h)
{
	return __atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE);
}

/*
 * Take frames out of the waiting run of @k slots from @first up to cur:
 * the first one when @drop_first (the kernel refused it), every one when
 * @gone, and every one the interface's MTU (t->link.mtu) no longer
 * allows. The frames behind move up (each with its virtio-net header),
 * the freed slots become available, and each frame taken out is counted
 * lost (@why). The kernel reads the ring only inside our send(), so
 * nothing moves under us. The number of frames taken out.
 */
static uint64_t ring_compact(struct packet_priv *p, struct ptx *t, unsigned int first,
			     unsigned int k, bool drop_first, bool gone, const char *why)
{
	unsigned int r, w, run = k;
	uint64_t lost = 0, bytes = 0, freed;

	for (r = w = first; k--; r = next_slot(t, r)) {
		struct tpacket2_hdr *h = slot(t, r);
		unsigned char *data = (unsigned char *)h + DATA_OFF + t->vnet;
		unsigned int len = h->tp_len - t->vnet; /* the frame's, without the header */

		if (gone || (drop_first && r == first) || h->tp_len < t->vnet + 14 ||
		    __uskb_dev_frame_too_long(t->link.mtu, data + 12, len)) {
			lost++;
			bytes += len;
			continue;
		}
		if (w != r) {
			struct tpacket2_hdr *to = slot(t, w);

			/* the frame with its virtio-net header */
			memcpy((unsigned char *)to + DATA_OFF, (unsigned char *)h + DATA_OFF, h->tp_len);
			to->tp_len = h->tp_len;
			__atomic_store_n(&to->tp_status, TP_STATUS_SEND_REQUEST, __ATOMIC_RELEASE);
		}
		w = next_slot(t, w);
	}
	if (!lost)
		return 0;
	/* what is left between the last kept frame and the end of the run is free */
	for (r = w, freed = lost; freed--; r = next_slot(t, r))
		__atomic_store_n(&slot(t, r)->tp_status, TP_STATUS_AVAILABLE, __ATOMIC_RELEASE);
	t->cur = w;
	/* the kept frames wait for a send(): the next flush gives it */
	t->pending = run - (unsigned int)lost;
	__uskb_dev_tx_lost(p->dev, (unsigned int)(t - p->tx), lost, bytes, why);
	return lost;
}

/*
 * The kernel refused the frame at its place in the ring (TP_STATUS_WRONG_FORMAT:
 * longer than the MTU now allows) and stays there: it only ever takes the
 * next slot, and only once it says SEND_REQUEST. Take the refused frame out,
 * and with it every waiting one the interface's MTU (asked again) no longer
 * allows: the ring goes on. When the interface is gone (@gone), every frame
 * still waiting is lost.
 */
static bool ring_recover(struct packet_priv *p, struct ptx *t, bool gone)
{
	unsigned int first = t->frame_nr, r, k;

	for (r = 0; r < t->frame_nr; r++) {
		unsigned int st = slot_status(slot(t, r));

		if (st & TP_STATUS_WRONG_FORMAT || (gone && st & TP_STATUS_SEND_REQUEST)) {
			/* the oldest waiting frame: the one after cur going round is first */
			unsigned int age = (r + t->frame_nr - t->cur) % t->frame_nr;

			if (first == t->frame_nr || age < (first + t->frame_nr - t->cur) % t->frame_nr)
				first = r;
		}
	}
	if (first == t->frame_nr)
		return false;
	if (!gone)
		__uskb_dev_link_check(p->dev, t->fd, &t->link, USKB_LINK_NOW);
	/* the frames from the first waiting one up to cur: all of the ring when it is full */
	k = (t->cur + t->frame_nr - first) % t->frame_nr;
	if (!k)
		k = t->frame_nr;
	ring_compact(p, t, first, k, true, gone,
		     gone ? NULL : "the kernel refused them (the MTU changed?)");
	return true;
}

/*
 * With a virtio-net header the kernel no longer refuses ring frames past
 * the MTU (it checks the MTU only for sockets without one), so the device
 * does: the MTU is asked before each send(), and when it fell, the waiting
 * frames it no longer allows are taken out and counted lost, as the
 * kernel's refusal would have them. Two ioctls per send() of up to 64
 * frames, unless no frame the ring has held is longer than the smallest MTU
 * the interface takes allows (its IFLA_MIN_MTU and 14 bytes of header):
 * then no new MTU can refuse one, and the MTU is left to the device's
 * 100-ms look at the interface. (60-byte frames on veth: 3-4 % of the rate
 * into the stack went to the two ioctls.)
 */
static void ring_mtu_check(struct packet_priv *p, struct ptx *t)
{
	unsigned int old = t->ring_mtu, k = 0, r = t->cur;

	/* asked by index, so a renamed interface is still ours; gone, it is down */
	if (__uskb_dev_link_check(p->dev, t->fd, &t->link, USKB_LINK_MTU))
		return;
	/*
	 * Against the highest MTU a waiting frame was let in under, not the
	 * link's last look: the device's 100-ms look may have seen the fall
	 * first, after frames were let in under the old MTU.
	 */
	t->ring_mtu = t->link.mtu;
	if (t->link.mtu >= old)
		return;
	/* the waiting run: the slots before cur the kernel has not taken yet */
	while (k < t->frame_nr) {
		r = r ? r - 1 : t->frame_nr - 1;
		if (!(slot_status(slot(t, r)) & TP_STATUS_SEND_REQUEST))
			break;
		k++;
	}
	if (k)
		ring_compact(p, t, (t->cur + t->frame_nr - k) % t->frame_nr, k, false, false,
			     "the interface's MTU fell under them");
}

/* send() on the ring: what the kernel says decides what happens to the frames waiting */
static void ring_send(struct packet_priv *p, struct ptx *t)
{
	int e;

	if (t->vnet && t->longest > t->fits_all)
		ring_mtu_check(p, t);
	t->pending = 0;
	if (send(t->fd, NULL, 0, MSG_DONTWAIT) >= 0)
		return;
	e = errno;
	if (e == EAGAIN || e == ENOBUFS || e == EINTR)
		return;
	if (__uskb_dev_send_gone(p->dev, t->fd, &t->link, e, "send")) {
		ring_recover(p, t, true);
		return;
	}
	/* no refused frame: an error of another kind, which the device keeps */
	if (!ring_recover(p, t, false))
		__uskb_dev_error(p->dev, "queue %u: send: %s", (unsigned int)(t - p->tx), strerror(e));
}

static void ring_flush(struct packet_priv *p, struct ptx *t)
{
	if (t->pending)
		ring_send(p, t);
}

static void packet_flush(struct uskb_dev *dev, unsigned int queue)
{
	struct packet_priv *p = dev->priv;
	struct ptx *t = &p->tx[queue];

	if (t->ring)
		ring_flush(p, t);
	/* a flush comes before the sender waits: the time to look at the interface */
	if (t->ready)
		__uskb_dev_link_check(dev, t->fd, &t->link, USKB_LINK_IDLE);
}

/*
 * Frames up to this size the kernel copies whole into the skb's linear
 * part (on veth: 60-byte frames 1.19x faster into the stack, 1.34x into
 * an XDP program). Longer ones keep the kernel's default of 14 bytes
 * linear and the rest frags of the ring: 256 bytes linear made 1500-byte
 * frames slower into an XDP receiver, which copies them anyway.
 */
#define VNET_LINEAR 256

static void ring_xmit(struct packet_priv *p, struct ptx *t, struct uskb **skbs, int n, int *res)
{
	bool kicked = false;
	unsigned char *at;
	int i;

	for (i = 0; i < n; i++) {
		struct uskb *skb = skbs[i];
		struct tpacket2_hdr *h = slot(t, t->cur);

		if (too_long(t, skb)) {
			__uskb_dev_drop(p->dev, (unsigned int)(t - p->tx), skb, &res[i],
					__uskb_dev_too_long(t->link.mtu, skb) ? __uskb_dev_too_long_why(skb) :
										"larger than a ring slot");
			continue;
		}
		if (slot_status(h) & (TP_STATUS_SEND_REQUEST | TP_STATUS_SENDING | TP_STATUS_WRONG_FORMAT)) {
			/* the ring is full (or stuck on a refused frame): send once, then report the rest busy */
			if (!kicked) {
				ring_send(p, t);
				kicked = true;
				h = slot(t, t->cur); /* a recovery may have moved the frames up */
			}
			if (!uskb_dev_running(p->dev)) {
				__uskb_dev_drop_all(skbs + i, n - i, res + i);
				break;
			}
			if (slot_status(h) & (TP_STATUS_SEND_REQUEST | TP_STATUS_SENDING | TP_STATUS_WRONG_FORMAT)) {
				for (; i < n; i++)
					res[i] = USKB_XMIT_BUSY;
				break;
			}
		}
		at = (unsigned char *)h + DATA_OFF;
		if (t->vnet) {
			/* no offload; a short frame all linear, a long one as without the header */
			struct virtio_net_hdr vh = {
				.hdr_len = (uint16_t)(skb->len <= VNET_LINEAR ? skb->len : 0),
			};

			memcpy(at, &vh, sizeof(vh));
			at += sizeof(vh);
		}
		uskb_copy_bits(skb, 0, at, (int)skb->len);
		if (uskb_unlikely(skb->len > t->longest))
			t->longest = skb->len;
		if (uskb_unlikely(t->link.mtu > t->ring_mtu))
			t->ring_mtu = t->link.mtu; /* (too_long() let it in under this one) */
		h->tp_len = skb->len + t->vnet;
		__atomic_store_n(&h->tp_status, TP_STATUS_SEND_REQUEST, __ATOMIC_RELEASE);
		t->cur = next_slot(t, t->cur);
		t->pending++;
		res[i] = USKB_XMIT_OK;
		uskb_consume(skb);
	}
	/* one send() for a batch: callers flush before they wait or stop */
	if (t->pending >= FLUSH_BATCH || kicked)
		ring_flush(p, t);
}

static void mmsg_xmit(struct packet_priv *p, struct ptx *t, struct uskb **skbs, int n, int *res)
{
	struct mmsghdr msg[MMSG_MAX];
	struct iovec iov[MMSG_MAX][1 + USKB_MAX_SKB_FRAGS];
	int idx[MMSG_MAX];
	int i = 0;

	while (i < n) {
		int k = 0, sent, j;

		for (; i < n && k < MMSG_MAX; i++) {
			struct uskb *skb = skbs[i];
			const struct uskb_shared_info *sh = __uskb_shinfo_peek(skb);
			int nv = 0;

			if (too_long(t, skb) || sh->frag_list) {
				__uskb_dev_drop(p->dev, (unsigned int)(t - p->tx), skb, &res[i],
						sh->frag_list ? "a frag_list cannot be sent" :
								__uskb_dev_too_long_why(skb));
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
		sent = sendmmsg(t->fd, msg, (unsigned int)k, MSG_DONTWAIT);
		/* a partial count leaves the reason for the next call: retry those */
		int fail = sent < 0 && errno != EAGAIN && errno != ENOBUFS ? USKB_XMIT_DROP :
									     USKB_XMIT_BUSY;

		if (fail == USKB_XMIT_DROP) {
			int e = errno;

			__uskb_dev_send_gone(p->dev, t->fd, &t->link, e, "sendmmsg");
			if (e == EMSGSIZE) /* the MTU fell: ask for the new one */
				__uskb_dev_link_check(p->dev, t->fd, &t->link, USKB_LINK_NOW);
			if (uskb_dev_running(p->dev)) /* else the reason it went down stays */
				__uskb_dev_error(p->dev, "queue %u: sendmmsg: %s", (unsigned int)(t - p->tx),
						 strerror(e));
		}

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
	struct ptx *t = &p->tx[queue];

	if (uskb_unlikely(!t->ready) && tx_ready(p, t)) {
		/* queue 0 was set up at open: a later queue failed; the device says why */
		__uskb_dev_error(dev, "queue %u: %s", queue, __uskb_dev_fail_text());
		__uskb_dev_drop_all(skbs, n, res);
		return;
	}
	/* the interface gone or down: everything is dropped, the sender told by uskb_dev_running() */
	if (uskb_unlikely(__uskb_dev_link_check(dev, t->fd, &t->link, USKB_LINK_HOT))) {
		if (t->ring)
			ring_recover(p, t, true);
		__uskb_dev_drop_all(skbs, n, res);
		return;
	}
	if (p->mmsg)
		mmsg_xmit(p, t, skbs, n, res);
	else
		ring_xmit(p, t, skbs, n, res);
}

/* ---- receive: TPACKET_V3 ---- */

static struct tpacket_block_desc *rx_block(const struct packet_priv *p, unsigned int i)
{
	return (struct tpacket_block_desc *)(p->rx_ring + ((size_t)i << (12 + RX_BLOCK_ORDER)));
}

static void *rx_block_addr(void *owner, unsigned int i)
{
	return rx_block(owner, i);
}

static void rx_give_back(struct rxzc *zc, unsigned int i)
{
	/* release: the kernel must not see our status before we stopped reading */
	__atomic_store_n(&rx_block(zc->owner, i)->hdr.bh1.block_status, TP_STATUS_KERNEL,
			 __ATOMIC_RELEASE);
}

static int rx_setup(struct uskb_dev *dev, struct packet_priv *p)
{
	struct tpacket_req3 req;
	struct sockaddr_ll sll;
	int v = TPACKET_V3, one = 1;

	if (p->rx_fd < 0)
		return __uskb_dev_fail(EBADF, "packet:%s: the receive ring failed before", p->ifname);
	if (setsockopt(p->rx_fd, SOL_PACKET, PACKET_VERSION, &v, sizeof(v)))
		goto fail;
	/* our own transmissions are not received */
	setsockopt(p->rx_fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
	memset(&req, 0, sizeof(req));
	req.tp_block_size = USKB_PAGE_SIZE << RX_BLOCK_ORDER;
	req.tp_block_nr = RX_BLOCKS;
	req.tp_frame_size = 2048;
	req.tp_frame_nr = req.tp_block_size / req.tp_frame_size * req.tp_block_nr;
	req.tp_retire_blk_tov = 1; /* ms: a block that is not full still comes */
	if (setsockopt(p->rx_fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof(req)))
		goto fail;
	p->rx_ring_len = (size_t)req.tp_block_size * req.tp_block_nr;
	p->rx_ring = mmap(NULL, p->rx_ring_len, PROT_READ | PROT_WRITE, MAP_SHARED, p->rx_fd, 0);
	if (p->rx_ring == MAP_FAILED) {
		p->rx_ring = NULL;
		goto fail;
	}
	p->zc = __uskb_rxzc_create(RX_BLOCKS, RX_BLOCK_ORDER, rx_block_addr, rx_give_back, p);
	if (!p->zc) {
		errno = ENOMEM;
		goto fail;
	}
	memset(&sll, 0, sizeof(sll));
	sll.sll_family = AF_PACKET;
	sll.sll_protocol = htons(ETH_P_ALL);
	sll.sll_ifindex = p->ifindex;
	if (bind(p->rx_fd, (struct sockaddr *)&sll, sizeof(sll)))
		goto fail;
	p->rx_cur = 0;
	p->rx_left = 0;
	(void)dev;
	return 0;
fail:
	v = errno;
	rx_teardown(p);
	return __uskb_dev_fail(v, "packet:%s: RX ring: %s", p->ifname, strerror(v));
}

static void rx_stats(struct uskb_dev *dev, struct packet_priv *p)
{
	struct tpacket_stats_v3 st;
	socklen_t len = sizeof(st);

	/* reading resets the kernel's counters */
	if (!getsockopt(p->rx_fd, SOL_PACKET, PACKET_STATISTICS, &st, &len))
		uskb_count_add(&dev->qstats[0].rx_dropped, st.tp_drops);
}

static int packet_rx(struct uskb_dev *dev, unsigned int queue, struct uskb **skbs, int max,
		     int timeout_ms)
{
	struct packet_priv *p = dev->priv;
	uint64_t now = 0, deadline = 0;
	int n = 0, err;

	(void)queue; /* 0: one ring takes all the interface's frames (nrxqueues 1) */
	if (uskb_unlikely(!uskb_dev_running(dev)))
		return __uskb_dev_rx_down(dev);
	if (!p->zc && (err = rx_setup(dev, p)) < 0)
		return err;
	rxzc_tune(p->zc, dev->rx_patience_ms);
	while (n < max) {
		struct tpacket_block_desc *b = rx_block(p, p->rx_cur);

		if (!p->rx_left) {
			struct pollfd pfd = { .fd = p->rx_fd, .events = POLLIN | POLLERR };
			int wait;

			/*
			 * Ours, unless it is still out with skbs from its last
			 * round: that first (acquire), then the status — a
			 * give-back stores the status before the slot is free.
			 */
			if (!__uskb_rxzc_busy(p->zc, p->rx_cur) &&
			    (__atomic_load_n(&b->hdr.bh1.block_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER)) {
				__uskb_rxzc_open(p->zc, p->rx_cur);
				p->rx_left = b->hdr.bh1.num_pkts;
				p->rx_pkt = (struct tpacket3_hdr *)((char *)b + b->hdr.bh1.offset_to_first_pkt);
				if (p->rx_left)
					continue;
				__uskb_rxzc_done(p->zc, p->rx_cur, uskb_mono_ns()); /* an empty block */
				p->rx_cur = (p->rx_cur + 1) % RX_BLOCKS;
				continue;
			}
			if (n)
				break;
			if (!timeout_ms) {
				/* no waiting here: look at the interface now and then */
				if (__uskb_dev_link_check(dev, p->rx_fd, &p->rx_link, USKB_LINK_IDLE))
					return __uskb_dev_rx_down(dev);
				break;
			}
			/* nothing ready: held blocks may be what starves the kernel */
			__uskb_rxzc_patience(p->zc, uskb_mono_ns(), 0, p->rx_cur);
			if (timeout_ms > 0) {
				now = uskb_mono_ns();
				if (!deadline)
					deadline = now + (uint64_t)timeout_ms * 1000000ull;
				if (now >= deadline)
					break;
				wait = (int)((deadline - now + 999999) / 1000000);
			} else {
				wait = 100;
			}
			/* wake up now and then: the patience is kept while waiting too */
			if (wait > 100)
				wait = 100;
			if (poll(&pfd, 1, wait) < 0 && errno == EINTR)
				return n ? n : -EINTR;
			/* an error on the socket (ENETDOWN): the interface went down or away */
			if (pfd.revents & POLLERR) {
				int e;
				socklen_t el = sizeof(e);

				/* read it, which clears it: a link back up must not keep poll() returning */
				getsockopt(p->rx_fd, SOL_SOCKET, SO_ERROR, &e, &el);
			}
			if (__uskb_dev_link_check(dev, p->rx_fd, &p->rx_link,
						  pfd.revents & POLLERR ? USKB_LINK_NOW : USKB_LINK_IDLE))
				return __uskb_dev_rx_down(dev);
			continue;
		}
		struct tpacket3_hdr *h = p->rx_pkt;
		struct uskb *skb = __uskb_rxzc_skb(p->zc, p->rx_cur, (char *)h + h->tp_mac, h->tp_snaplen);

		if (skb) {
			skb->tstamp = (uint64_t)h->tp_sec * 1000000000ull + h->tp_nsec;
			__uskb_dev_rx_skb(dev, skb);
			skbs[n++] = skb;
		} else {
			uskb_count_add(&dev->qstats[0].rx_dropped, 1);
		}
		p->rx_pkt = (struct tpacket3_hdr *)((char *)h + h->tp_next_offset);
		if (!--p->rx_left) {
			__uskb_rxzc_done(p->zc, p->rx_cur, uskb_mono_ns());
			p->rx_cur = (p->rx_cur + 1) % RX_BLOCKS;
			rx_stats(dev, p);
		}
	}
	__uskb_rxzc_patience(p->zc, uskb_mono_ns(), 0, p->rx_cur);
	rxzc_publish(p->zc, &dev->qstats[0]);
	return n;
}

const struct uskb_dev_ops __uskb_dev_packet_ops USKB_HIDDEN = {
	.type = "packet",
	.open = packet_open,
	.close = packet_close,
	.xmit = packet_xmit,
	.flush = packet_flush,
	.rx = packet_rx,
};
