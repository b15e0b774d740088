/* SPDX-License-Identifier: MIT */
/*
 * Receive. udp: without copying: the kernel writes each datagram into a
 * slot of an area of ours (64 slots of 64 KiB), and the skb keeps the
 * slot as a frag until its last reference goes, under the rules of the
 * packet: and xdp: receive paths (rxzc.c: the first 128 bytes copied into
 * the head, frames below the copy break copied whole, slots held past the
 * patience copied out). In copy and zc mode recvmmsg() fills free slots;
 * in uring mode a multishot receive takes them from a provided-buffer ring
 * (one slot a buffer), and a slot given back goes back into that ring.
 * A slot may be given back on any thread: onto rxzc's lock-free stack,
 * which the receiving thread empties.
 *
 * tcp: and unix: frame a byte stream (a 4-byte big-endian length before
 * each frame). In copy and zc mode read() fills a buffer and each frame is
 * copied out of it. In uring mode (tcp) a multishot receive puts each
 * chunk of the stream into a slot as above: a frame that lies whole in one
 * chunk stays there as a frag; the bytes of a frame split across chunks
 * are gathered into the buffer and that frame is copied.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
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
	/* stream: the connection the receive is armed on (its user_data), the chunk being framed */
	uint32_t gen;
	uint32_t cur;	/* its slot, or RXZC_NONE */
	unsigned int cur_off, cur_len;
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
		return __uskb_sk_uring_fail(s, err);
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

#ifdef USKB_HAVE_URING
/* the user_data of a cancel (LIBURING_UDATA_TIMEOUT is all ones) */
#define CANCEL_UDATA (1ull << 63)

/* the chunk being framed is through: its slot goes back once its skbs are gone */
static void chunk_done(struct sk_rx *rx, uint64_t now)
{
	if (rx->cur == RXZC_NONE)
		return;
	__uskb_rxzc_done(rx->zc, rx->cur, now);
	rx->cur = RXZC_NONE;
}

/* a stale or unwanted completion's slot back to the ring, unread */
static void cqe_slot_back(struct sk_rx *rx, const struct io_uring_cqe *cqe)
{
	if (cqe->flags & IORING_CQE_F_BUFFER) {
		unsigned int i = cqe->flags >> IORING_CQE_BUFFER_SHIFT;

		__uskb_rxzc_open(rx->zc, i);
		__uskb_rxzc_done(rx->zc, i, uskb_mono_ns());
	}
}

/*
 * Cancel the armed receive and take its last completions, giving their
 * slots back unread: before a stream's next connection (the request holds
 * the old socket open), and before the ring and the slots go (the kernel
 * must not write into them after).
 */
static void rx_disarm(struct sk_rx *rx)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&rx->ring);
	uint64_t end = uskb_mono_ns() + 1000000000ull;

	if (!rx->armed)
		return;
	if (sqe) {
		io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY);
		io_uring_sqe_set_data64(sqe, CANCEL_UDATA);
		io_uring_submit(&rx->ring);
	}
	while (rx->armed && uskb_mono_ns() < end) {
		struct __kernel_timespec ts = { 0, 10000000 };
		struct io_uring_cqe *cqe;

		if (io_uring_wait_cqe_timeout(&rx->ring, &cqe, &ts))
			continue;
		if (cqe->user_data != CANCEL_UDATA && !(cqe->flags & IORING_CQE_F_MORE))
			rx->armed = false;
		cqe_slot_back(rx, cqe);
		io_uring_cqe_seen(&rx->ring, cqe);
	}
	rx->armed = false; /* given up waiting: a late completion of a stream is told by its gen */
}
#endif

static void rx_free(struct sk_rx *rx)
{
#ifdef USKB_HAVE_URING
	if (rx->have_ring)
		rx_disarm(rx);
	if (rx->zc)
		chunk_done(rx, uskb_mono_ns());
#endif
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
#ifdef USKB_HAVE_URING
	rx->cur = RXZC_NONE;
#endif
	rx->zc = __uskb_rxzc_create(SLOTS, SLOT_ORDER, slot_addr, NULL, rx); /* given back: its stack */
	if (!rx->zc)
		goto fail;
#ifdef USKB_HAVE_URING
	/*
	 * a multishot recv gives no sender's address: a udp listen (replies go
	 * to the last sender) uses recvmmsg; a stream has one peer
	 */
	if (s->o.mode == SK_URING && (s->stream || !s->o.listen) && (err = uring_setup(s, rx)))
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
		io_uring_sqe_set_data64(sqe, 0);
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

/* at the start of a receive call: the slots set up, tuned, held ones copied out, refilled */
static int rx_begin(struct sk_dev *s)
{
	int err;

	if (!s->rx && (err = rx_setup(s)))
		return err;
	rxzc_tune(s->rx->zc, s->dev->rx_patience_ms);
	/* slots held too long are copied out; half the slots stay the kernel's */
	__uskb_rxzc_patience(s->rx->zc, uskb_mono_ns(), SLOTS / 2, RXZC_NONE);
	refill(s->rx);
	return 0;
}

int __uskb_sk_udp_rx(struct sk_dev *s, struct uskb **skbs, int max, int timeout_ms)
{
	struct sk_rx *rx;
	int err = rx_begin(s);

	if (err)
		return err;
	rx = s->rx;
#ifdef USKB_HAVE_URING
	if (rx->have_ring)
		return uring_rx(s, rx, skbs, max, timeout_ms);
#endif
	return mmsg_rx(s, rx, skbs, max, timeout_ms);
}

static struct uskb *rx_copy(struct sk_dev *s, const void *data, unsigned int len)
{
	struct uskb *skb = uskb_dev_alloc(len);

	if (!skb)
		return NULL;
	uskb_put_data(skb, data, len);
	__uskb_dev_rx_skb(s->dev, skb);
	return skb;
}

/* ---- streams ---- */

/* a stream frame's length prefix: 4 bytes, big-endian, anywhere in memory */
static uint32_t be32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return ntohl(v);
}

/* no connection: wait for a peer (listen), once a call; 1 when there is one, else what rx returns */
static int stream_peer(struct sk_dev *s, int timeout_ms, bool *waited)
{
	if (!uskb_dev_running(s->dev))
		return __uskb_dev_rx_down(s->dev);
	if (*waited || !__uskb_sk_accept(s, timeout_ms))
		return 0;
	*waited = true;
	return 1;
}

/* the peer closed its end: what it left half sent is lost; 0, or (down) what rx returns */
static int stream_ended(struct sk_dev *s)
{
	if (s->rlen)
		__uskb_dev_error(s->dev, "the peer went away mid-frame (%zu bytes lost)", s->rlen);
	__uskb_sk_conn_lost(s, 0, "read");
	return uskb_dev_running(s->dev) ? 0 : __uskb_dev_rx_down(s->dev);
}

/* whole frames out of the bytes read; how many (up to @max) */
static int stream_frames(struct sk_dev *s, struct uskb **skbs, int max)
{
	size_t off = 0;
	int n = 0;

	while (n < max && s->rlen - off >= 4) {
		uint32_t len = be32(s->rbuf + off);

		if (!len || len > SK_STREAM_FRAME_MAX) {
			__uskb_sk_bad_frame(s, len);
			return n;
		}
		if (s->rlen - off < 4 + (size_t)len)
			break; /* the rest comes with a later read */
		skbs[n] = rx_copy(s, s->rbuf + off + 4, len);
		if (skbs[n])
			n++;
		else
			uskb_count_add(&s->dev->qstats[0].rx_dropped, 1);
		off += 4 + len;
	}
	if (off) {
		memmove(s->rbuf, s->rbuf + off, s->rlen - off);
		s->rlen -= off;
	}
	return n;
}

static int read_rx(struct sk_dev *s, struct uskb **skbs, int max, int timeout_ms)
{
	bool waited = false;
	int n;

	for (;;) {
		ssize_t r;

		if (s->fd < 0 && (n = stream_peer(s, timeout_ms, &waited)) <= 0)
			return n;
		n = stream_frames(s, skbs, max);
		if (n)
			return n;
		if (s->fd < 0)
			continue; /* the framing broke: the connection went */
		if (s->rx_eof) {
			int e = stream_ended(s);

			if (e)
				return e;
			continue;
		}
		r = read(s->fd, s->rbuf + s->rlen, s->rcap - s->rlen);
		if (r > 0) {
			s->rlen += (size_t)r;
			continue;
		}
		if (!r) {
			s->rx_eof = true;
			continue;
		}
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			int w;

			if (waited)
				return 0;
			w = __uskb_sk_wait_in(s, timeout_ms);
			if (w <= 0)
				return w;
			waited = true;
			continue;
		}
		if (errno == EINTR)
			return -EINTR;
		__uskb_sk_conn_lost(s, errno, "read");
		if (!uskb_dev_running(s->dev))
			return __uskb_dev_rx_down(s->dev);
	}
}

#ifdef USKB_HAVE_URING

/*
 * Frames out of the chunk being framed (and the bytes gathered before it);
 * how many, up to @max. A frame whole in the chunk stays in its slot; the
 * start of one that goes on in the next chunk is gathered into s->rbuf.
 */
static int chunk_frames(struct sk_dev *s, struct sk_rx *rx, struct uskb **skbs, int max,
			uint64_t now)
{
	int n = 0;
	uint32_t len = 0;

	while (n < max && rx->cur != RXZC_NONE) {
		const unsigned char *p = slot_addr(rx, rx->cur) + rx->cur_off;
		size_t avail = rx->cur_len - rx->cur_off;

		if (!avail) {
			chunk_done(rx, now);
			break;
		}
		if (s->rlen) { /* a frame begun in an earlier chunk: gather the rest */
			/* a whole length in the buffer was checked when it became whole */
			size_t want = s->rlen >= 4 ? 4 + (size_t)be32(s->rbuf) : 4, take;

			take = want - s->rlen < avail ? want - s->rlen : avail;
			memcpy(s->rbuf + s->rlen, p, take);
			s->rlen += take;
			rx->cur_off += (unsigned int)take;
			if (s->rlen < want)
				continue; /* the chunk ended first */
			if (want == 4) { /* the length is whole: is it one? */
				len = be32(s->rbuf);
				if (!len || len > SK_STREAM_FRAME_MAX)
					goto broken;
				continue;
			}
			skbs[n] = rx_copy(s, s->rbuf + 4, (unsigned int)(want - 4));
			if (skbs[n])
				n++;
			else
				rx->drops++;
			s->rlen = 0;
			continue;
		}
		if (avail >= 4) {
			len = be32(p);
			if (!len || len > SK_STREAM_FRAME_MAX)
				goto broken;
		}
		if (avail < 4 || avail < 4 + (size_t)len) { /* goes on in the next chunk */
			memcpy(s->rbuf, p, avail);
			s->rlen = avail;
			rx->cur_off += (unsigned int)avail;
			continue;
		}
		skbs[n] = __uskb_rxzc_skb(rx->zc, rx->cur, p + 4, len);
		if (skbs[n]) {
			__uskb_dev_rx_skb(s->dev, skbs[n]);
			n++;
		} else {
			rx->drops++;
		}
		rx->cur_off += 4 + len;
	}
	return n;
broken:
	chunk_done(rx, now);
	__uskb_sk_bad_frame(s, len);
	return n;
}

static int uring_stream_rx(struct sk_dev *s, struct sk_rx *rx, struct uskb **skbs, int max,
			   int timeout_ms)
{
	bool waited = false;
	int n;

	for (;;) {
		struct io_uring_cqe *cqe;

		if (s->fd < 0 || rx->gen != s->conn_gen) {
			/* the connection went: its receive, and what it left unframed, too */
			rx_disarm(rx);
			chunk_done(rx, uskb_mono_ns());
		}
		if (s->fd < 0) {
			if ((n = stream_peer(s, timeout_ms, &waited)) <= 0)
				return n;
			continue;
		}
		n = chunk_frames(s, rx, skbs, max, uskb_mono_ns());
		if (n)
			return n;
		if (s->fd < 0)
			continue; /* the framing broke: the connection went */
		if (rx->cur != RXZC_NONE)
			continue;
		if (s->rx_eof) {
			int e = stream_ended(s);

			if (e)
				return e;
			continue;
		}
		if (!rx->armed) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&rx->ring);

			refill(rx);
			io_uring_prep_recv_multishot(sqe, s->fd, NULL, 0, 0);
			sqe->flags |= IOSQE_BUFFER_SELECT;
			sqe->buf_group = BGID;
			io_uring_sqe_set_data64(sqe, s->conn_gen);
			io_uring_submit(&rx->ring);
			rx->gen = s->conn_gen;
			rx->armed = true;
		}
		if (!io_uring_cq_ready(&rx->ring)) {
			struct __kernel_timespec ts = { timeout_ms / 1000,
							(long long)(timeout_ms % 1000) * 1000000 };
			int w;

			if (waited || !timeout_ms)
				return 0;
			w = io_uring_wait_cqe_timeout(&rx->ring, &cqe, timeout_ms < 0 ? NULL : &ts);
			waited = true;
			if (w == -EINTR)
				return -EINTR;
			if (w)
				return 0;
		}
		if (io_uring_peek_cqe(&rx->ring, &cqe))
			continue;
		if (cqe->user_data != rx->gen) { /* a cancel's, or a late one of a gone connection */
			cqe_slot_back(rx, cqe);
			io_uring_cqe_seen(&rx->ring, cqe);
			continue;
		}
		if (!(cqe->flags & IORING_CQE_F_MORE))
			rx->armed = false; /* ended: armed again when wanted */
		if (cqe->res > 0 && (cqe->flags & IORING_CQE_F_BUFFER)) {
			rx->cur = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
			rx->cur_off = 0;
			rx->cur_len = (unsigned int)cqe->res;
			__uskb_rxzc_open(rx->zc, rx->cur);
		} else if (!cqe->res) {
			cqe_slot_back(rx, cqe); /* should the end of the stream have taken one */
			s->rx_eof = true;
		} else if (cqe->res == -ENOBUFS) {
			/*
			 * every slot is held: the bytes wait in the socket until
			 * the next call's patience copies some slots out
			 */
			io_uring_cqe_seen(&rx->ring, cqe);
			return 0;
		} else if (cqe->res < 0) {
			int err = -cqe->res;

			io_uring_cqe_seen(&rx->ring, cqe);
			__uskb_sk_conn_lost(s, err, "io_uring recv");
			if (!uskb_dev_running(s->dev))
				return __uskb_dev_rx_down(s->dev);
			continue;
		}
		io_uring_cqe_seen(&rx->ring, cqe);
	}
}
#endif

int __uskb_sk_stream_rx(struct sk_dev *s, struct uskb **skbs, int max, int timeout_ms)
{
	if (!s->rbuf) { /* reads of up to 4 frames (uring: one frame gathered at most) */
		s->rcap = 4 * SK_STREAM_FRAME_MAX;
		s->rbuf = malloc(s->rcap);
		if (!s->rbuf)
			return -ENOMEM;
	}
#ifdef USKB_HAVE_URING
	if (s->o.mode == SK_URING) {
		int err = rx_begin(s);

		if (err)
			return err;
		err = uring_stream_rx(s, s->rx, skbs, max, timeout_ms);
		publish(s, s->rx);
		return err;
	}
#endif
	return read_rx(s, skbs, max, timeout_ms);
}
