/* SPDX-License-Identifier: MIT */
/*
 * udp: receive without copying: the kernel writes each datagram into a
 * slot of an area of ours (64 slots of 64 KiB), and the skb keeps the
 * slot as a frag until its last reference goes, under the rules of the
 * packet: and xdp: receive paths (rxzc.c: the first 128 bytes copied into
 * the head, frames below the copy break copied whole, slots held past the
 * patience copied out). In copy and zc mode recvmmsg() fills free slots;
 * in uring mode a multishot receive takes them from a provided-buffer ring
 * (one slot a buffer), and a slot given back goes back into that ring.
 * A slot may be given back on any thread: onto rxzc's lock-free stack,
 * which the receiving thread empties.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "dev/rxzc.h"
#include "dev/sock.h"

#ifdef USKB_HAVE_URING
#include <liburing.h>
#endif

#define SLOTS 64
#define SLOT_ORDER 4 /* 64 KiB: the longest datagram */
#define SLOT_SIZE (4096u << SLOT_ORDER)
#define BATCH 32
/* the uring receive's buffer group */
#define BGID 0

struct sk_rx {
	unsigned char *area;
	struct rxzc *zc;
	uint32_t free[SLOTS]; /* recvmmsg: slots to receive into */
	unsigned int nfree;
	uint64_t drops; /* frames dropped here (too long, no memory) */
	uint32_t ovfl;	/* the socket's drops (SO_RXQ_OVFL) */
#ifdef USKB_HAVE_URING
	struct io_uring ring;
	bool have_ring, armed;
	struct io_uring_buf_ring *br;
#endif
};

static void *slot_addr(void *owner, unsigned int i)
{
	return ((struct sk_rx *)owner)->area + (size_t)i * SLOT_SIZE;
}

/* the slots given back: free to receive into again */
static void refill(struct sk_rx *rx)
{
	uint32_t i = __uskb_rxzc_take(rx->zc);
#ifdef USKB_HAVE_URING
	unsigned int n = 0;

	if (rx->have_ring) {
		for (; i != RXZC_NONE; i = rxzc_next(rx->zc, i), n++)
			io_uring_buf_ring_add(rx->br, slot_addr(rx, i), SLOT_SIZE, (unsigned short)i,
					      io_uring_buf_ring_mask(SLOTS), (int)n);
		io_uring_buf_ring_advance(rx->br, (int)n);
		return;
	}
#endif
	for (; i != RXZC_NONE; i = rxzc_next(rx->zc, i))
		rx->free[rx->nfree++] = i;
}

#ifdef USKB_HAVE_URING
static int uring_setup(struct sk_dev *s, struct sk_rx *rx)
{
	struct io_uring_buf_reg reg = { 0 };
	int err;

	err = io_uring_queue_init(64, &rx->ring, 0);
	if (err)
		return __uskb_dev_fail(-err, "%s: io_uring: %s", s->o.text, strerror(-err));
	rx->br = mmap(NULL, SLOTS * sizeof(struct io_uring_buf), PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (rx->br == MAP_FAILED) {
		rx->br = NULL;
		io_uring_queue_exit(&rx->ring);
		return -ENOMEM;
	}
	reg.ring_addr = (uint64_t)(uintptr_t)rx->br;
	reg.ring_entries = SLOTS;
	reg.bgid = BGID;
	err = io_uring_register_buf_ring(&rx->ring, &reg, 0);
	if (err) {
		munmap(rx->br, SLOTS * sizeof(struct io_uring_buf));
		rx->br = NULL;
		io_uring_queue_exit(&rx->ring);
		return __uskb_dev_fail(-err, "%s: io_uring provided buffers: %s", s->o.text,
				       strerror(-err));
	}
	io_uring_buf_ring_init(rx->br);
	rx->have_ring = true;
	return 0;
}
#endif

static void rx_free(struct sk_rx *rx)
{
	if (rx->zc)
		__uskb_rxzc_destroy(rx->zc); /* copies out what skbs still hold */
#ifdef USKB_HAVE_URING
	if (rx->have_ring)
		io_uring_queue_exit(&rx->ring);
	if (rx->br)
		munmap(rx->br, SLOTS * sizeof(struct io_uring_buf));
#endif
	if (rx->area)
		munmap(rx->area, (size_t)SLOTS * SLOT_SIZE);
	free(rx);
}

void __uskb_sk_rx_free(struct sk_dev *s)
{
	if (s->rx)
		rx_free(s->rx);
	s->rx = NULL;
}

static int rx_setup(struct sk_dev *s)
{
	struct sk_rx *rx = calloc(1, sizeof(*rx));
	int err = -ENOMEM;

	if (!rx)
		return -ENOMEM;
	rx->area = mmap(NULL, (size_t)SLOTS * SLOT_SIZE, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (rx->area == MAP_FAILED) {
		rx->area = NULL;
		goto fail;
	}
	rx->zc = __uskb_rxzc_create(SLOTS, SLOT_ORDER, slot_addr, NULL, rx); /* given back: its stack */
	if (!rx->zc)
		goto fail;
#ifdef USKB_HAVE_URING
	/* a multishot recv gives no sender's address: listen (replies to the last sender) uses recvmmsg */
	if (s->o.mode == SK_URING && !s->o.listen && (err = uring_setup(s, rx)))
		goto fail;
#endif
	for (unsigned int i = 0; i < SLOTS; i++) /* every slot free at first */
		rx->zc->give_back(rx->zc, i);
	refill(rx);
	s->rx = rx;
	return 0;
fail:
	rx_free(rx);
	return err;
}

/* one datagram of @len bytes in slot @i: an skb (or NULL, counted as a drop) */
static struct uskb *slot_skb(struct sk_dev *s, struct sk_rx *rx, unsigned int i, unsigned int len,
			     uint64_t now)
{
	struct uskb *skb = NULL;

	__uskb_rxzc_open(rx->zc, i);
	if (len && len <= SK_UDP_FRAME_MAX + 28)
		skb = __uskb_rxzc_skb(rx->zc, i, slot_addr(rx, i), len);
	__uskb_rxzc_done(rx->zc, i, now);
	if (!skb) {
		rx->drops++;
		return NULL;
	}
	__uskb_dev_rx_skb(s->dev, skb);
	return skb;
}

static void publish(struct sk_dev *s, struct sk_rx *rx)
{
	__atomic_store_n(&s->dev->qstats[0].rx_dropped, rx->drops + rx->ovfl, __ATOMIC_RELAXED);
	rxzc_publish(rx->zc, &s->dev->qstats[0]);
}

static int mmsg_rx(struct sk_dev *s, struct sk_rx *rx, struct uskb **skbs, int max, int timeout_ms)
{
	struct mmsghdr msg[BATCH];
	struct iovec iov[BATCH];
	struct sockaddr_storage from[BATCH];
	union {
		char buf[CMSG_SPACE(sizeof(uint32_t))];
		struct cmsghdr align;
	} ctl[BATCH];
	uint32_t slot[BATCH], ovfl = UINT32_MAX;
	unsigned int want = (unsigned int)max, i;
	int got, n = 0, ret = 0;
	uint64_t now;

	if (want > BATCH)
		want = BATCH;
	if (want > rx->nfree)
		want = rx->nfree;
	if (!want)
		return 0; /* every slot held: the patience copies some out at the next call */
	for (i = 0; i < want; i++) {
		slot[i] = rx->free[--rx->nfree];
		iov[i].iov_base = slot_addr(rx, slot[i]);
		iov[i].iov_len = SLOT_SIZE;
		memset(&msg[i], 0, sizeof(msg[i]));
		msg[i].msg_hdr.msg_iov = &iov[i];
		msg[i].msg_hdr.msg_iovlen = 1;
		msg[i].msg_hdr.msg_name = &from[i];
		msg[i].msg_hdr.msg_namelen = sizeof(from[i]);
		msg[i].msg_hdr.msg_control = ctl[i].buf;
		msg[i].msg_hdr.msg_controllen = sizeof(ctl[i].buf);
	}
	got = recvmmsg(s->fd, msg, want, MSG_DONTWAIT, NULL);
	if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
		int w = __uskb_sk_wait_in(s, timeout_ms);

		if (w > 0) {
			got = recvmmsg(s->fd, msg, want, MSG_DONTWAIT, NULL);
		} else {
			got = 0;
			ret = w; /* nothing came, or -EINTR */
		}
	}
	if (got < 0) {
		/* ECONNREFUSED: an ICMP error a send left behind, not a receive's */
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != ECONNREFUSED)
			ret = -errno;
		got = 0;
	}
	now = uskb_mono_ns();
	for (i = 0; i < (unsigned int)got; i++) {
		struct msghdr *mh = &msg[i].msg_hdr;
		struct cmsghdr *cm = CMSG_FIRSTHDR(mh);

		/* SO_RXQ_OVFL: datagrams the socket dropped so far (its buffer was full) */
		if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SO_RXQ_OVFL)
			memcpy(&ovfl, CMSG_DATA(cm), sizeof(ovfl));
		if (s->o.listen) { /* replies go to the last sender */
			memcpy(&s->peer, &from[i], mh->msg_namelen);
			s->peer_len = mh->msg_namelen;
		}
		skbs[n] = slot_skb(s, rx, slot[i], mh->msg_flags & MSG_TRUNC ? 0 : msg[i].msg_len, now);
		if (skbs[n])
			n++;
	}
	/* the slots nothing came into stay free */
	for (; i < want; i++)
		rx->free[rx->nfree++] = slot[i];
	if (ovfl != UINT32_MAX)
		rx->ovfl = ovfl;
	publish(s, rx);
	return n ? n : ret;
}

#ifdef USKB_HAVE_URING
static int uring_rx(struct sk_dev *s, struct sk_rx *rx, struct uskb **skbs, int max, int timeout_ms)
{
	struct io_uring_cqe *cqe;
	unsigned int head, seen = 0;
	int n = 0, err = 0;
	uint64_t now;

	if (!rx->armed) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&rx->ring);

		io_uring_prep_recv_multishot(sqe, s->fd, NULL, 0, 0);
		sqe->flags |= IOSQE_BUFFER_SELECT;
		sqe->buf_group = BGID;
		io_uring_submit(&rx->ring);
		rx->armed = true;
	}
	if (!io_uring_cq_ready(&rx->ring) && timeout_ms) {
		struct __kernel_timespec ts = { timeout_ms / 1000, (long long)(timeout_ms % 1000) * 1000000 };
		int w = io_uring_wait_cqe_timeout(&rx->ring, &cqe, timeout_ms < 0 ? NULL : &ts);

		if (w == -EINTR)
			return -EINTR;
	}
	now = uskb_mono_ns();
	io_uring_for_each_cqe(&rx->ring, head, cqe) {
		if (n == max)
			break;
		seen++;
		if (!(cqe->flags & IORING_CQE_F_MORE))
			rx->armed = false; /* ended (out of buffers, an error): armed again next call */
		if (cqe->res < 0) {
			/* ENOBUFS: every slot is held; the datagrams wait in the socket */
			if (cqe->res != -ENOBUFS && cqe->res != -ECONNREFUSED)
				err = cqe->res;
			continue;
		}
		if (!(cqe->flags & IORING_CQE_F_BUFFER))
			continue;
		skbs[n] = slot_skb(s, rx, cqe->flags >> IORING_CQE_BUFFER_SHIFT, (unsigned int)cqe->res,
				   now);
		if (skbs[n])
			n++;
	}
	io_uring_cq_advance(&rx->ring, seen);
	publish(s, rx);
	return n ? n : err;
}
#endif

int __uskb_sk_udp_rx(struct sk_dev *s, struct uskb **skbs, int max, int timeout_ms)
{
	struct sk_rx *rx;
	int err;

	if (!s->rx && (err = rx_setup(s)))
		return err;
	rx = s->rx;
	rxzc_tune(rx->zc, s->dev->rx_patience_ms);
	/* slots held too long are copied out; half the slots stay the kernel's */
	__uskb_rxzc_patience(rx->zc, uskb_mono_ns(), SLOTS / 2);
	refill(rx);
#ifdef USKB_HAVE_URING
	if (rx->have_ring)
		return uring_rx(s, rx, skbs, max, timeout_ms);
#endif
	return mmsg_rx(s, rx, skbs, max, timeout_ms);
}
