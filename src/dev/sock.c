/* SPDX-License-Identifier: MIT */
/*
 * Socket devices: Ethernet frames through kernel sockets, framed as QEMU's
 * -netdev dgram and -netdev stream (and passt) frame them.
 *   udp:HOST:PORT[,OPT...]  one datagram per frame
 *   tcp:HOST:PORT[,OPT...]  a stream: each frame after its length (4 bytes, big-endian)
 *   unix:PATH[,OPT...]      the same stream over a unix socket (@NAME: abstract)
 * HOST is a name, an IPv4 address or an IPv6 one in brackets. Options:
 *   copy        send by copying (the default)
 *   zc          MSG_ZEROCOPY: the kernel reads the frames where they are, and
 *               the skbs are held until its notification covers their send
 *   uring       io_uring send_zc / sendmsg_zc, the same holding rule; sends
 *               from uskb's memory use it registered with the ring; receive
 *               (udp but with listen, tcp) by multishot recv into slots that
 *               skbs keep
 *   nofixed     uring: register no memory (each send pins its pages)
 *   gso         udp: a run of equal-size frames goes as one UDP_SEGMENT send
 *   listen      tcp, unix: wait for the peer to connect (a new one may come
 *               after it goes); udp: receive on the address, reply to the
 *               last sender
 *   local=HOST:PORT  udp: the address to send from and receive on
 *   copybreak=N frames (stream: sends) shorter than N bytes go by copy in zc
 *               and uring mode
 *   inflight=N  bytes the kernel may hold at once in zc and uring mode
 * A unix socket has no zero-copy send (SO_ZEROCOPY and send_zc both give
 * EOPNOTSUPP), so unix: takes copy only.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <netinet/udp.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <linux/sockios.h>

#include "dev/sock.h"
#include "lib/unixpath.h"

#ifndef SO_ZEROCOPY
#define SO_ZEROCOPY 60
#endif
#ifndef MSG_ZEROCOPY
#define MSG_ZEROCOPY 0x4000000
#endif

/* records in flight: a power of two */
#define TRACK_RECORDS 512
/* udp receive buffer (SO_RCVBUFFORCE as root, else up to rmem_max) */
#define RX_RCVBUF (8 << 20)
/* stream receive buffer: room for two of the longest frames and then some */
/* how long close waits for the kernel to finish with what it holds */
#define CLOSE_WAIT_MS 2000
/* a tcp client's connect */
#define CONNECT_WAIT_MS 5000

/* ---- sockets ---- */

static void set_nonblock(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* what a new connection (or the udp socket) needs before it sends */
static int sock_setup(struct sk_dev *s, int fd)
{
	int one = 1;

	set_nonblock(fd);
	if (s->o.kind == SK_TCP) {
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		/* a connecting socket's count starts at 1: its SYN */
		if (__uskb_sk_bytes_acked(fd, &s->acked0))
			s->acked0 = 0;
	}
	if (s->o.kind == SK_UDP) {
		/* room for a burst (each datagram costs its truesize), and the kernel's drop count */
		int rcv = RX_RCVBUF;

		if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcv, sizeof(rcv)))
			setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
		setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof(one));
	}
	/* io_uring's send_zc needs no SO_ZEROCOPY */
	if (s->o.mode == SK_ZC && setsockopt(fd, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one))) {
		int err = errno;

		return __uskb_dev_fail(err, "%s: SO_ZEROCOPY: %s", s->o.text, strerror(err));
	}
	return 0;
}

static int connect_wait(struct sk_dev *s, int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };
	int err = 0;
	socklen_t len = sizeof(err);

	set_nonblock(fd);
	if (s->o.kind == SK_UNIX) {
		/* EAGAIN here is a listener's full backlog, not a connect under way: try again */
		for (int ms = 0; ms < CONNECT_WAIT_MS; ms += 10) {
			if (!connect(fd, (struct sockaddr *)&s->o.addr, s->o.alen))
				return 0;
			if (errno != EAGAIN)
				return -errno;
			poll(NULL, 0, 10);
		}
		return -ETIMEDOUT;
	}
	if (!connect(fd, (struct sockaddr *)&s->o.addr, s->o.alen))
		return 0;
	if (errno != EINPROGRESS)
		return -errno;
	if (poll(&pfd, 1, CONNECT_WAIT_MS) <= 0)
		return -ETIMEDOUT;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len))
		return -errno;
	return -err;
}

static int sock_open(struct sk_dev *s)
{
	const struct sk_opts *o = &s->o;
	int family = o->addr.ss_family, one = 1, fd, err;
	int type = (o->kind == SK_UDP ? SOCK_DGRAM : SOCK_STREAM) | SOCK_CLOEXEC;

	fd = socket(family, type, 0);
	if (fd < 0) {
		err = errno;
		return __uskb_dev_fail(err, "%s: socket: %s", o->text, strerror(err));
	}
	if (o->kind == SK_UDP) {
		if (o->listen || o->has_local) {
			const struct sockaddr_storage *a = o->listen ? &o->addr : &o->local;

			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
			if (bind(fd, (const struct sockaddr *)a, o->listen ? o->alen : o->llen)) {
				err = errno;
				close(fd);
				return __uskb_dev_fail(err, "%s: bind: %s", o->text, strerror(err));
			}
		}
		if (!o->listen && connect(fd, (const struct sockaddr *)&o->addr, o->alen)) {
			err = errno;
			close(fd);
			return __uskb_dev_fail(err, "%s: connect: %s", o->text, strerror(err));
		}
		s->fd = fd;
		return sock_setup(s, fd);
	}
	if (o->listen) {
		const struct sockaddr_un *un = (const struct sockaddr_un *)&o->addr;

		/* a socket file left by an earlier run is replaced; a live server's or any other file is not */
		if (o->kind == SK_UNIX && un->sun_path[0]) {
			err = uskb_unix_path_claim(un->sun_path, SOCK_STREAM);
			if (err) {
				close(fd);
				return __uskb_dev_fail(-err, "%s: %s", o->text,
						       err == -EADDRINUSE ? "a live process serves this socket: not "
									    "taken over" :
						       err == -ENOTSOCK ? "something other than a socket is there "
									  "(a directory or a file): left alone" :
									  strerror(-err));
			}
		}
		if (o->kind == SK_TCP)
			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, (const struct sockaddr *)&o->addr, o->alen) || listen(fd, 4)) {
			err = errno;
			close(fd);
			return __uskb_dev_fail(err, "%s: listen: %s", o->text, strerror(err));
		}
		set_nonblock(fd);
		s->lfd = fd;
		return 0;
	}
	err = connect_wait(s, fd);
	if (err) {
		close(fd);
		return __uskb_dev_fail(-err, "%s: connect: %s", o->text, strerror(-err));
	}
	s->fd = fd;
	return sock_setup(s, fd);
}

/* listen: take a waiting peer, waiting up to @wait_ms; true when connected */
bool __uskb_sk_accept(struct sk_dev *s, int wait_ms)
{
	struct pollfd pfd = { .fd = s->lfd, .events = POLLIN };
	int fd;

	if (s->fd >= 0)
		return true;
	if (s->lfd < 0)
		return false;
	fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0 && wait_ms && (errno == EAGAIN || errno == EWOULDBLOCK) &&
	    poll(&pfd, 1, wait_ms) > 0)
		fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return false;
	if (sock_setup(s, fd)) {
		__uskb_dev_error(s->dev, "%s", __uskb_dev_fail_text());
		close(fd);
		return false;
	}
	s->fd = fd;
	s->rlen = 0;
	s->rx_eof = false;
	s->conn_gen++;
	s->wpos = 0;
	s->fend_head = s->fend_tail = s->fend_floor = 0;
	s->ur_err = 0;
	return true;
}

/* the sends the kernel still holds: wait for them up to @ms, then let go */
static void drain(struct sk_dev *s, int ms)
{
	uint64_t end = uskb_mono_ns() + (uint64_t)ms * 1000000u;

	while (s->t.live && uskb_mono_ns() < end) {
		struct pollfd pfd = { .fd = s->fd, .events = 0 };

		if (s->ur) {
			__uskb_sk_uring_reap(s, 10);
			continue;
		}
		if (s->fd < 0 || !__uskb_sk_reap_errqueue(s))
			poll(&pfd, 1, 10); /* POLLERR: a notification is waiting */
	}
}

/*
 * Close the socket. What the kernel still holds of a stream is thrown away
 * with it (SO_LINGER 0: the write queue is purged in close), so that no
 * send reads memory the device is about to complete as copied.
 */
static void close_now(struct sk_dev *s)
{
	if (s->fd < 0)
		return;
	if (s->stream && (s->t.live || s->reset_at_close)) {
		struct linger lg = { 1, 0 };

		setsockopt(s->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
	close(s->fd);
	s->fd = -1;
}

/* the connection is gone (@err from a send or a read) */
void __uskb_sk_conn_lost(struct sk_dev *s, int err, const char *what)
{
	/* what the kernel held of this connection completes: its socket goes */
	if (s->ur)
		__uskb_sk_uring_reap(s, 0);
	else if (s->fd >= 0)
		__uskb_sk_reap_errqueue(s);
	if (s->part) {
		__uskb_dev_tx_lost(s->dev, 0, 1, s->part->len, "the peer went away mid-frame");
		uskb_consume(s->part);
		s->part = NULL;
	}
	if (s->lfd >= 0) {
		/* listen: a new peer may come */
		__uskb_dev_error(s->dev, "the peer went away (%s: %s); waiting for the next", what,
				 err ? strerror(err) : "end of stream");
		drain(s, s->ur ? CLOSE_WAIT_MS : 100);
		close_now(s);
		if (!s->ur) {
			/* the next connection's socket numbers its sends from 0 again */
			__uskb_sk_track_abandon(s);
			s->t.head = s->t.tail = 0;
		}
		s->rlen = 0;
		return;
	}
	__uskb_dev_set_down(s->dev, err ? err : ECONNRESET, "the peer went away (%s: %s)", what,
			    err ? strerror(err) : "end of stream");
}

static bool conn_gone_errno(int e)
{
	return e == EPIPE || e == ECONNRESET || e == ENOTCONN || e == ECONNABORTED ||
	       e == ETIMEDOUT || e == EHOSTUNREACH || e == ENETUNREACH;
}

/* ---- transmit ---- */

/* iovecs for @skb's bytes from @skip on; how many, or -1 past @max */
static int skb_iov(const struct uskb *skb, unsigned int skip, struct iovec *iov, int max)
{
	const struct uskb_shared_info *sh = __uskb_shinfo_peek(skb);
	const struct uskb *it;
	unsigned int hl = uskb_headlen(skb);
	int n = 0, f;

#define ADD(p, l)                                                       \
	do {                                                            \
		unsigned int _l = (l);                                  \
		if (skip >= _l) {                                       \
			skip -= _l;                                     \
		} else {                                                \
			if (n == max)                                   \
				return -1;                              \
			iov[n].iov_base = (char *)(p) + skip;           \
			iov[n++].iov_len = _l - skip;                   \
			skip = 0;                                       \
		}                                                       \
	} while (0)

	if (hl)
		ADD(skb->data, hl);
	for (f = 0; f < sh->nr_frags; f++)
		ADD((char *)uskb_page_address(sh->frags[f].page) + sh->frags[f].offset,
		    sh->frags[f].len);
	for (it = sh->frag_list; it; it = it->next) {
		const struct uskb_shared_info *ish = __uskb_shinfo_peek(it);

		if (ish->frag_list)
			return -1; /* nested: not worth the walk */
		if (uskb_headlen(it))
			ADD(it->data, uskb_headlen(it));
		for (f = 0; f < ish->nr_frags; f++)
			ADD((char *)uskb_page_address(ish->frags[f].page) + ish->frags[f].offset,
			    ish->frags[f].len);
	}
#undef ADD
	return n;
}

/* a frame no socket peer can take: say why, or NULL */
static const char *unsendable(const struct sk_dev *s, const struct uskb *skb)
{
	if (!skb->len)
		return "a 0-byte frame (QEMU stops reading at one)";
	if (skb->len > (s->stream ? SK_STREAM_FRAME_MAX : SK_UDP_FRAME_MAX))
		return s->stream ? "longer than a stream frame may be (69632 bytes)" :
				   "longer than a UDP datagram may be";
	return NULL;
}

void __uskb_sk_lost(struct sk_dev *s, struct sk_rec *r, int err)
{
	uint64_t bytes = 0;
	char why[96];
	unsigned int i;

	for (i = 0; i < r->n; i++)
		bytes += r->skb[i]->len;
	snprintf(why, sizeof(why), "a send failed: %s", strerror(err));
	__uskb_dev_tx_lost(s->dev, 0, r->n, bytes, why);
}

/*
 * uring: take the completions there are (waiting up to @wait_ms for one);
 * a failed stream send ends the connection
 */
static void ur_reap(struct sk_dev *s, int wait_ms)
{
	__uskb_sk_uring_reap(s, wait_ms);
	if (s->ur_err) {
		int e = s->ur_err;

		s->ur_err = 0;
		__uskb_sk_conn_lost(s, e, "io_uring send");
	}
}

/* reap what the kernel finished with; @all: not only when the bounds press */
static void reap(struct sk_dev *s, bool all)
{
	const struct sk_track *t = &s->t;

	if (!t->live)
		return;
	if (!all && t->head - t->tail < (t->mask + 1) / 2 && t->bytes < s->o.inflight / 2)
		return;
	if (s->ur)
		ur_reap(s, 0);
	else
		__uskb_sk_reap_errqueue(s);
}

/* room for @nrec more zero-copy sends of @bytes in all, reaping once if there is none */
static bool zc_room(struct sk_dev *s, unsigned int nrec, uint64_t bytes)
{
	if (__uskb_sk_track_room(s, nrec, bytes))
		return true;
	reap(s, true);
	return __uskb_sk_track_room(s, nrec, bytes);
}

/* the result every frame from @i on gets (BUSY keeps the caller's reference) */
static void rest(struct uskb **skbs, int i, int n, int *res, int r)
{
	for (; i < n; i++) {
		res[i] = r;
		if (r != USKB_XMIT_BUSY)
			uskb_consume(skbs[i]);
	}
}

/* @k frames of a message went: the record takes them (zero copy), or they are done */
static void sent_frames(struct sk_rec *r, struct uskb **skbs, int k, int *res)
{
	int j;

	for (j = 0; j < k; j++) {
		res[j] = USKB_XMIT_OK;
		if (r)
			r->skb[r->n++] = skbs[j];
		else
			uskb_consume(skbs[j]);
	}
}

/* udp: frames i.. of a burst; messages per sendmmsg */
#define MMSG 64

struct udp_batch {
	struct mmsghdr msg[MMSG];
	int first[MMSG], count[MMSG]; /* each message's frames: skbs[first .. first+count) */
	uint32_t bytes[MMSG];
	union {
		char buf[CMSG_SPACE(sizeof(uint16_t))];
		struct cmsghdr align;
	} cm[MMSG];
	struct iovec iov[SK_IOV];
};

/* one GSO run from skbs[i]: equal lengths (the last may be shorter); how many frames */
static int gso_run(const struct sk_dev *s, struct uskb **skbs, int i, int n)
{
	unsigned int len = skbs[i]->len, total = len;
	int k = 1;

	if (!s->gso)
		return 1;
	while (i + k < n && k < SK_FRAMES && skbs[i + k]->len && skbs[i + k]->len <= len &&
	       total + skbs[i + k]->len <= 65000) {
		total += skbs[i + k]->len;
		if (skbs[i + k++]->len < len)
			break; /* a shorter one ends the run */
	}
	return k;
}

/*
 * The frags the kernel makes of @n iovecs when it takes them without a copy:
 * one per page each touches. (Pieces of one huge page may merge, but 4 KiB
 * pages of consecutive iovecs do not, even when the memory is contiguous:
 * measured on 6.18, 44 iovecs of 1472 contiguous bytes fail with EMSGSIZE
 * where one iovec of the same 64768 bytes goes.) A UDP send may hold at
 * most MAX_SKB_FRAGS of them.
 */
static unsigned int iov_pieces(const struct iovec *iov, int n)
{
	unsigned int pieces = 0;

	for (int i = 0; i < n; i++) {
		uintptr_t a = (uintptr_t)iov[i].iov_base, z = a + iov[i].iov_len;

		if (iov[i].iov_len)
			pieces += (unsigned int)(((z - 1) >> 12) - (a >> 12) + 1);
	}
	return pieces;
}

/* MAX_SKB_FRAGS: the pieces one zero-copy UDP send may have */
#define UDP_ZC_PIECES 17

static void set_segment(struct msghdr *m, void *buf, size_t size, uint16_t seg)
{
	struct cmsghdr *cm;

	m->msg_control = buf;
	m->msg_controllen = size;
	cm = CMSG_FIRSTHDR(m);
	cm->cmsg_level = SOL_UDP;
	cm->cmsg_type = UDP_SEGMENT;
	cm->cmsg_len = CMSG_LEN(sizeof(uint16_t));
	memcpy(CMSG_DATA(cm), &seg, sizeof(seg));
}

/* a udp send error for the message starting at skbs[i] (@count frames); how to go on */
enum { GO_ON, GO_BUSY, GO_STOP };

/* zero copy given up (counted): what is in flight still completes, nothing new is pinned */
static void zc_off(struct sk_dev *s)
{
	if (s->zc) {
		s->zc = false;
		s->zc_fallback++;
	}
}

static int udp_error(struct sk_dev *s, int e, int count, bool zc)
{
	switch (e) {
	case EAGAIN:
		return GO_BUSY;
	case ENOBUFS:
		/*
		 * The stack's own ENOBUFS (a full qdisc) reaches us only with
		 * IP_RECVERR, which the device does not set: this is optmem,
		 * full of unread notifications, before the send took an id.
		 * Read them, and send this one by copy.
		 */
		if (!zc)
			return GO_BUSY;
		reap(s, true);
		s->nozc_once = true;
		return GO_ON;
	case ECONNREFUSED: /* an ICMP error a send left, or no route: before any id is taken */
	case EHOSTUNREACH:
	case ENETUNREACH:
	case EHOSTDOWN:
	case EACCES:
	case EDESTADDRREQ:
		return GO_STOP;
	default:
		break;
	}
	/*
	 * Past this point the kernel may have built the datagram, and with it
	 * used the send's MSG_ZEROCOPY id (udp_send_skb's GSO checks, a
	 * netfilter drop), or not (ip_append_data): the device can no longer
	 * tell which id the next send takes, so it stops sending zero-copy.
	 * The sends in flight keep their ids and complete as they should.
	 */
	if (zc)
		zc_off(s);
	if (count > 1 && (e == EINVAL || e == EIO || e == EMSGSIZE)) {
		/* the route cannot take a GSO send this size (EMSGSIZE since 6.13) */
		s->gso = false;
		__uskb_dev_error(s->dev, "UDP_SEGMENT refused (%s): one datagram per send from now on",
				 strerror(e));
		return GO_ON;
	}
	return zc ? GO_ON : GO_STOP; /* zero-copy failures are tried once more by copy */
}

static void udp_xmit(struct sk_dev *s, struct uskb **skbs, int n, int *res)
{
	struct udp_batch *b = s->ub;
	int i = 0;

	if (s->o.listen && !s->peer_len) {
		snprintf(s->err, sizeof(s->err), "no peer yet: replies go to the last sender to %s",
			 s->o.text);
		for (; i < n; i++)
			__uskb_dev_drop(s->dev, 0, skbs[i], &res[i], s->err);
		return;
	}
	while (i < n) {
		int k = 0, nv = 0, sent, m, j, how;

		/* uring: a copied send must not pass the zero-copy ones still queued */
		if (s->ur_pending && (ur_reap(s, 0), s->ur_pending)) {
			rest(skbs, i, n, res, USKB_XMIT_BUSY);
			return;
		}
		uint64_t planned = 0;
		bool zc = false;

		while (i < n && k < MMSG) {
			struct msghdr *mh = &b->msg[k].msg_hdr;
			const char *why = unsendable(s, skbs[i]);
			unsigned int pieces, p;
			int cnt, c, used = 0;
			uint32_t bytes = 0;
			bool mzc;

			if (why) {
				if (k)
					break; /* the planned ones go first */
				__uskb_dev_drop(s->dev, 0, skbs[i], &res[i], why);
				i++;
				continue;
			}
			cnt = gso_run(s, skbs, i, n);
			pieces = 0;
			for (j = 0; j < cnt; j++) {
				c = skb_iov(skbs[i + j], 0, b->iov + nv + used, SK_IOV - nv - used);
				if (c < 0)
					break;
				/* zero copy: a GSO run ends where the kernel's frags would run out */
				p = iov_pieces(b->iov + nv + used, c);
				if (j && s->zc && pieces + p > UDP_ZC_PIECES)
					break;
				pieces += p;
				used += c;
				bytes += skbs[i + j]->len;
			}
			if (j < cnt) {
				if (!j && !k) { /* one frame with more pieces than a send takes */
					__uskb_dev_drop(s->dev, 0, skbs[i], &res[i],
							"more than 1024 pieces (head, frags, frag_list)");
					i++;
					continue;
				}
				if (!j)
					break;
				cnt = j; /* the run as far as the iovecs go */
			}
			/* a frame in more pieces than a zero-copy send may have goes by copy */
			mzc = s->zc && !s->nozc_once && bytes >= s->o.copybreak &&
			      (cnt > 1 || pieces <= UDP_ZC_PIECES);
			if (k && mzc != zc)
				break; /* one MSG_ZEROCOPY flag per sendmmsg */
			if (mzc && !zc_room(s, (unsigned int)k + 1, planned + bytes)) {
				if (k)
					break;
				rest(skbs, i, n, res, USKB_XMIT_BUSY);
				return;
			}
			zc = mzc;
			memset(mh, 0, sizeof(*mh));
			mh->msg_iov = b->iov + nv;
			mh->msg_iovlen = (size_t)used;
			if (s->o.listen) {
				mh->msg_name = &s->peer;
				mh->msg_namelen = s->peer_len;
			}
			if (cnt > 1)
				set_segment(mh, b->cm[k].buf, sizeof(b->cm[k].buf),
					    (uint16_t)skbs[i]->len);
			b->first[k] = i;
			b->count[k] = cnt;
			b->bytes[k] = bytes;
			planned += bytes;
			nv += used;
			i += cnt;
			k++;
		}
		if (!k)
			break;
		s->nozc_once = false;
		if (s->ur && zc) {
			/*
			 * uring: each message a send of its own. Not linked: a link
			 * cost 15 % (bench/sock), and io_uring issues them in order;
			 * only a send that finds the socket buffer full and is retried
			 * later can be passed by the next (UDP may reorder anyway).
			 */
			for (m = 0; m < k; m++) {
				struct sk_rec *r = sk_track_next(&s->t);
				int f = b->first[m], c = b->count[m];

				r->msg = b->msg[m].msg_hdr;
				memcpy(r->iov, r->msg.msg_iov, r->msg.msg_iovlen * sizeof(struct iovec));
				r->msg.msg_iov = r->iov;
				if (c > 1) {
					memcpy(r->cm.buf, b->cm[m].buf, sizeof(r->cm.buf));
					r->msg.msg_control = r->cm.buf;
				}
				r->n = 0;
				r->bytes = b->bytes[m];
				if (__uskb_sk_uring_send(s, r, 0)) {
					rest(skbs, f, n, res, USKB_XMIT_BUSY);
					return;
				}
				sent_frames(r, skbs + f, c, res + f);
				__uskb_sk_track_push(&s->t);
			}
			continue;
		}
		sent = sendmmsg(s->fd, b->msg, (unsigned int)k, MSG_DONTWAIT | (zc ? MSG_ZEROCOPY : 0));
		m = sent < 0 ? 0 : sent;
		for (j = 0; j < m; j++) {
			struct sk_rec *r = zc ? sk_track_next(&s->t) : NULL;
			int f = b->first[j];

			if (r) {
				r->n = 0;
				r->bytes = b->bytes[j];
			}
			sent_frames(r, skbs + f, b->count[j], res + f);
			if (r)
				__uskb_sk_track_push(&s->t);
		}
		if (m == k)
			continue;
		i = b->first[m];
		if (sent >= 0)
			continue; /* the next call tells why message m failed */
		how = udp_error(s, errno, b->count[0], zc);
		if (how == GO_ON)
			continue;
		if (how == GO_BUSY) {
			rest(skbs, i, n, res, USKB_XMIT_BUSY);
			return;
		}
		/* the message cannot go (no route, too long, refused by the peer's host): drop it */
		snprintf(s->err, sizeof(s->err), "sendmmsg: %s", strerror(errno));
		for (j = 0; j < b->count[0]; j++)
			__uskb_dev_drop(s->dev, 0, skbs[i + j], &res[i + j], s->err);
		i += b->count[0];
	}
}

/* stream: the rest of the frame the socket took part of; true once it is all out */
static bool push_part(struct sk_dev *s)
{
	struct iovec iov[SK_IOV];
	struct msghdr msg = { .msg_iov = iov };
	unsigned int len = 4 + s->part->len, left = len - s->part_off;
	struct sk_rec *r = NULL;
	uint32_t *hdr = &s->part_hdr;
	int nv = 0, c, zc = 0;
	ssize_t w;

	if (s->zc && !s->ur && left >= s->o.copybreak) {
		if (!zc_room(s, 1, left))
			return false;
		r = sk_track_next(&s->t);
		r->hdr[0] = s->part_hdr;
		hdr = &r->hdr[0];
		zc = MSG_ZEROCOPY;
	}
	if (s->part_off < 4) {
		iov[nv].iov_base = (char *)hdr + s->part_off;
		iov[nv++].iov_len = 4 - s->part_off;
	}
	c = skb_iov(s->part, s->part_off > 4 ? s->part_off - 4 : 0, iov + nv, SK_IOV - nv);
	msg.msg_iovlen = (size_t)(nv + (c > 0 ? c : 0));
	w = sendmsg(s->fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL | zc);
	if (w < 0) {
		if (conn_gone_errno(errno))
			__uskb_sk_conn_lost(s, errno, "send");
		else if (errno == ENOBUFS && zc)
			reap(s, true);
		return false;
	}
	if (r) {
		r->n = 1;
		r->skb[0] = uskb_get(s->part);
		r->bytes = (uint32_t)w;
		__uskb_sk_track_push(&s->t);
	}
	s->wpos += (uint64_t)w;
	s->part_off += (unsigned int)w;
	if (s->part_off < len)
		return false;
	uskb_consume(s->part);
	s->part = NULL;
	return true;
}

/* a frame half out would leave the peer mid-frame: finish it while the peer reads, until @end */
static void finish_part(struct sk_dev *s, uint64_t end)
{
	while (s->part && s->fd >= 0 && uskb_dev_running(s->dev) && uskb_mono_ns() < end) {
		struct pollfd pfd = { .fd = s->fd, .events = POLLOUT };

		if (!push_part(s))
			poll(&pfd, 1, 10);
	}
}

/* the stream is there to send on (listen: a peer came); false: wait */
static bool stream_ready(struct sk_dev *s, int wait_ms)
{
	if (s->fd >= 0)
		return true;
	return __uskb_sk_accept(s, wait_ms);
}

static void stream_xmit(struct sk_dev *s, struct uskb **skbs, int n, int *res)
{
	struct iovec *iov = s->ub->iov;
	uint32_t local[SK_FRAMES];
	int i = 0;

	while (i < n) {
		struct msghdr msg = { .msg_iov = iov };
		struct sk_rec *r = NULL;
		uint32_t *hdr = local;
		uint64_t total = 0;
		int k = 0, nv = 0, j, zc = 0;
		ssize_t w;

		if (!stream_ready(s, 0) || (s->part && !push_part(s)) || s->ur_pending) {
			rest(skbs, i, n, res, uskb_dev_running(s->dev) ? USKB_XMIT_BUSY : USKB_XMIT_DROP);
			return;
		}
		while (i + k < n && k < SK_FRAMES) {
			struct uskb *skb = skbs[i + k];
			const char *why = unsendable(s, skb);
			int c;

			if (why) {
				if (k)
					break;
				__uskb_dev_drop(s->dev, 0, skb, &res[i], why);
				i++;
				continue;
			}
			if (nv + 2 > SK_IOV)
				break;
			c = skb_iov(skb, 0, iov + nv + 1, SK_IOV - nv - 1);
			if (c < 0) {
				if (k)
					break;
				__uskb_dev_drop(s->dev, 0, skb, &res[i],
						"more than 1023 pieces (head, frags, frag_list)");
				i++;
				continue;
			}
			local[k] = htonl(skb->len);
			iov[nv].iov_base = &local[k];
			iov[nv].iov_len = 4;
			nv += 1 + c;
			total += 4 + skb->len;
			k++;
		}
		if (!k)
			break;
		if (s->zc && !s->nozc_once && total >= s->o.copybreak) {
			/* reaping may find the connection gone (a failed uring send) */
			if (!zc_room(s, 1, total) || s->fd < 0) {
				rest(skbs, i, n, res,
				     uskb_dev_running(s->dev) ? USKB_XMIT_BUSY : USKB_XMIT_DROP);
				return;
			}
			r = sk_track_next(&s->t);
			r->n = 0;
			memcpy(r->hdr, local, (size_t)k * sizeof(uint32_t));
			hdr = r->hdr;
			/* the length prefixes the kernel reads stay in the record */
			for (j = 0, nv = 0; j < k; j++) {
				iov[nv].iov_base = &hdr[j];
				nv += 1 + skb_iov(skbs[i + j], 0, iov + nv + 1, SK_IOV - nv - 1);
			}
			zc = MSG_ZEROCOPY;
		}
		s->nozc_once = false;
		msg.msg_iovlen = (size_t)nv;
		if (s->ur && r) {
			/* one send at a time keeps the stream in order; MSG_WAITALL sends it whole */
			r->msg = msg;
			memcpy(r->iov, iov, (size_t)nv * sizeof(*iov));
			r->msg.msg_iov = r->iov;
			r->bytes = (uint32_t)total;
			if (__uskb_sk_uring_send(s, r, MSG_WAITALL)) {
				rest(skbs, i, n, res, USKB_XMIT_BUSY);
				return;
			}
			sent_frames(r, skbs + i, k, res + i);
			__uskb_sk_track_push(&s->t);
			i += k;
			continue;
		}
		w = sendmsg(s->fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL | zc);
		if (w < 0) {
			int e = errno;

			if (e == ENOBUFS && zc) {
				reap(s, true);
				s->nozc_once = true;
				continue;
			}
			if (e == EAGAIN || e == ENOBUFS) {
				rest(skbs, i, n, res, USKB_XMIT_BUSY);
				return;
			}
			if (conn_gone_errno(e)) {
				__uskb_sk_conn_lost(s, e, "send");
				rest(skbs, i, n, res,
				     uskb_dev_running(s->dev) ? USKB_XMIT_BUSY : USKB_XMIT_DROP);
				return;
			}
			snprintf(s->err, sizeof(s->err), "sendmsg: %s", strerror(e));
			for (; i < n; i++)
				__uskb_dev_drop(s->dev, 0, skbs[i], &res[i], s->err);
			return;
		}
		/* the frames the socket took whole, and the one it took part of */
		{
			uint64_t off = 0;

			for (j = 0; j < k && off < (uint64_t)w; j++) {
				struct uskb *skb = skbs[i + j];
				uint64_t flen = 4 + skb->len;

				res[i + j] = USKB_XMIT_OK;
				sk_frame_end(s, s->wpos + off + flen);
				if (off + flen > (uint64_t)w) {
					s->part = skb;
					s->part_hdr = hdr[j];
					s->part_off = (unsigned int)((uint64_t)w - off);
					if (r)
						r->skb[r->n++] = uskb_get(skb);
				} else if (r) {
					r->skb[r->n++] = skb;
				} else {
					uskb_consume(skb);
				}
				off += flen;
			}
			if (r) {
				r->bytes = (uint32_t)w;
				__uskb_sk_track_push(&s->t);
			}
			s->wpos += (uint64_t)w;
			i += j;
			if (j < k || s->part) {
				rest(skbs, i, n, res, USKB_XMIT_BUSY);
				return;
			}
		}
	}
}

static void sk_xmit(struct uskb_dev *dev, unsigned int queue, struct uskb **skbs, int n, int *res)
{
	struct sk_dev *s = dev->priv;

	(void)queue;
	if (uskb_unlikely(!uskb_dev_running(dev))) {
		__uskb_dev_drop_all(skbs, n, res);
		return;
	}
	reap(s, false);
	if (s->stream)
		stream_xmit(s, skbs, n, res);
	else
		udp_xmit(s, skbs, n, res);
	if (s->ur)
		ur_reap(s, 0); /* submits what the burst queued */
	__uskb_sk_publish(s);
}

/*
 * Before the caller waits or stops: take the notifications there are, push
 * a frame the socket took part of, and when the device is full (the bound on
 * bytes in flight, a peer that reads slowly, none connected yet) wait a
 * moment for that to change, rather than have the caller spin.
 */
static void sk_flush(struct uskb_dev *dev, unsigned int queue)
{
	struct sk_dev *s = dev->priv;
	struct pollfd pfd = { .fd = s->fd };

	(void)queue;
	if (!uskb_dev_running(dev))
		return;
	if (s->ur)
		ur_reap(s, s->ur_pending || !__uskb_sk_track_room(s, 1, 0) ? 1 : 0);
	else
		reap(s, true);
	if (s->stream && !stream_ready(s, 10))
		return;
	if (s->part && !push_part(s)) {
		pfd.fd = s->fd;
		pfd.events = POLLOUT;
		poll(&pfd, 1, 1);
	} else if (!s->ur && s->t.live && !__uskb_sk_track_room(s, 1, 0)) {
		pfd.events = 0; /* POLLERR: a notification came */
		poll(&pfd, 1, 1);
		reap(s, true);
	}
	__uskb_sk_publish(s);
}

/* ---- receive ---- */

int __uskb_sk_wait_in(struct sk_dev *s, int timeout_ms)
{
	uint64_t end = uskb_mono_ns() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000000u;

	if (!timeout_ms)
		return 0;
	for (;;) {
		struct pollfd pfd = { .fd = s->fd, .events = POLLIN };
		int r, left = timeout_ms;

		if (timeout_ms > 0) {
			uint64_t now = uskb_mono_ns();

			if (now >= end)
				return 0;
			left = (int)((end - now + 999999) / 1000000);
		}
		r = poll(&pfd, 1, left);
		if (r < 0)
			return errno == EINTR ? -EINTR : -errno;
		/* POLLERR alone, with sends in flight: notifications to read, not data */
		if (r > 0 && !(pfd.revents & POLLIN) && (pfd.revents & POLLERR) && s->t.live && !s->ur &&
		    __uskb_sk_reap_errqueue(s) > 0)
			continue;
		return r;
	}
}

/* a peer that breaks the framing: its connection goes, the reason said */
void __uskb_sk_bad_frame(struct sk_dev *s, uint32_t len)
{
	s->rlen = 0;
	if (s->lfd >= 0) {
		__uskb_sk_conn_lost(s, EPROTO, "framing");
		__uskb_dev_error(s->dev, "bad frame length %u from the peer (1 to %u allowed): "
				 "connection dropped, waiting for the next", len, SK_STREAM_FRAME_MAX);
	} else {
		__uskb_dev_set_down(s->dev, EPROTO, "bad frame length %u from the peer (1 to %u "
				    "allowed): connection dropped", len, SK_STREAM_FRAME_MAX);
		drain(s, 100);
		close_now(s);
	}
}

static int sk_rx(struct uskb_dev *dev, unsigned int queue, struct uskb **skbs, int max,
		 int timeout_ms)
{
	struct sk_dev *s = dev->priv;

	(void)queue;
	if (!uskb_dev_running(dev))
		return __uskb_dev_rx_down(dev);
	return s->stream ? __uskb_sk_stream_rx(s, skbs, max, timeout_ms) :
			   __uskb_sk_udp_rx(s, skbs, max, timeout_ms);
}

/* ---- open and close ---- */

static void sk_free(struct sk_dev *s)
{
	const struct sockaddr_un *un = (const struct sockaddr_un *)&s->o.addr;

	__uskb_sk_rx_free(s);
	close_now(s); /* before anything in flight is let go */
	if (s->ur)
		__uskb_sk_uring_fini(s);
	__uskb_sk_track_abandon(s);
	__uskb_sk_track_fini(&s->t);
	if (s->part)
		uskb_consume(s->part);
	if (s->lfd >= 0) {
		close(s->lfd);
		if (s->o.kind == SK_UNIX && un->sun_path[0])
			unlink(un->sun_path);
	}
	free(s->rbuf);
	free(s->ub);
	free(s->fend);
	free(s);
}

static int sk_open(struct uskb_dev *dev, const char *arg, enum sk_kind kind)
{
	struct sk_dev *s = calloc(1, sizeof(*s));
	int err;

	if (!s)
		return -ENOMEM;
	s->dev = dev;
	s->fd = s->lfd = -1;
	err = __uskb_sk_parse_spec(&s->o, kind, arg);
	if (err)
		goto fail;
	s->stream = kind != SK_UDP;
	s->gso = s->o.gso;
	if (kind == SK_TCP && !(s->fend = malloc(SK_FEND * sizeof(*s->fend)))) {
		err = -ENOMEM;
		goto fail;
	}
	s->ub = malloc(sizeof(*s->ub));
	if (!s->ub) {
		err = -ENOMEM;
		goto fail;
	}
	if (s->o.mode != SK_COPY) {
		err = __uskb_sk_track_init(&s->t, TRACK_RECORDS, s->o.mode == SK_URING);
		if (err)
			goto fail;
		s->zc = true;
	}
	if (s->o.mode == SK_URING) {
		err = __uskb_sk_uring_init(s);
		if (err)
			goto fail;
	}
	err = sock_open(s);
	if (err)
		goto fail;
	dev->priv = s;
	dev->features = USKB_DEV_F_SG | USKB_DEV_F_TX_SKB_SHARING;
	if (s->o.mode != SK_COPY)
		dev->features |= USKB_DEV_F_ZEROCOPY;
	dev->mtu = s->stream ? 65536 : SK_UDP_FRAME_MAX - 14;
	dev->nrxqueues = 1;
	return 0;
fail:
	sk_free(s);
	return err;
}

/*
 * Wait up to @timeout_ms for a stream's peer to take what was sent: a
 * frame half out finished, the uring sends done, every byte acknowledged
 * (TCP: SIOCOUTQ at 0; a unix: peer holds what was written) and the
 * zero-copy sends completed. A peer that has not by then loses the frames
 * whose bytes it did not acknowledge: counted, said, and the connection is
 * reset so that they are never sent late (a listening device waits for its
 * next peer; a connecting one is down). Otherwise the device goes on as it
 * was.
 */
void __uskb_sk_drain(struct uskb_dev *dev, int timeout_ms)
{
	struct sk_dev *s;
	uint64_t end = uskb_mono_ns() + (uint64_t)timeout_ms * 1000000u, acked, lost = 0, bytes = 0;
	char why[96];
	int outq = 0;

	if (dev->ops != &__uskb_dev_tcp_ops && dev->ops != &__uskb_dev_unix_ops)
		return;
	s = dev->priv;
	if (s->fd < 0 || !uskb_dev_running(dev))
		return;
	finish_part(s, end);
	for (;;) {
		struct pollfd pfd = { .fd = s->fd, .events = 0 };

		if (s->fd < 0)
			return; /* the connection went meanwhile: its own line said so */
		if (s->o.kind != SK_TCP || ioctl(s->fd, SIOCOUTQ, &outq))
			outq = 0;
		if ((!outq && !s->t.live && !s->ur_pending) || uskb_mono_ns() >= end)
			break;
		if (s->ur)
			__uskb_sk_uring_reap(s, 10);
		else if (!__uskb_sk_reap_errqueue(s))
			poll(&pfd, 1, 10);
	}
	if (s->o.kind != SK_TCP || (!outq && !s->ur_pending))
		return; /* taken; zero-copy completions still to come are close's to wait for */
	/*
	 * uring sends still waiting for room: cancelled; a failed one's frames
	 * are counted lost by its result (it never reaches the frame ends)
	 */
	if (s->ur) {
		__uskb_sk_uring_cancel(s);
		s->ur_err = 0; /* the reset below says it */
	}
	/* the frames that end past what the peer acknowledged (bytes_acked: Linux 4.1) */
	if (__uskb_sk_bytes_acked(s->fd, &acked) || acked < s->acked0)
		acked = s->wpos > (uint64_t)outq ? s->wpos - (uint64_t)outq : 0;
	else
		acked -= s->acked0;
	while (s->fend && s->fend_head != s->fend_tail && s->fend[(s->fend_head - 1) & (SK_FEND - 1)] > acked) {
		uint64_t e = s->fend[--s->fend_head & (SK_FEND - 1)];
		uint64_t start = s->fend_head != s->fend_tail ? s->fend[(s->fend_head - 1) & (SK_FEND - 1)] :
								s->fend_floor;

		lost++;
		bytes += e - start - 4;
	}
	snprintf(why, sizeof(why), "the peer took no more within %d ms: connection reset", timeout_ms);
	if (s->lfd < 0) {
		__uskb_dev_set_down(dev, ECONNRESET, "%s", why);
		__uskb_dev_tx_lost(dev, 0, lost, bytes, NULL);
	} else {
		__uskb_dev_tx_lost(dev, 0, lost, bytes, why);
	}
	/* a frame half out is among those counted: the next peer must not get its rest */
	if (s->part) {
		uskb_consume(s->part);
		s->part = NULL;
	}
	/* reset: nothing counted lost goes out late */
	s->reset_at_close = true;
	close_now(s);
	s->reset_at_close = false;
	if (!s->ur) {
		__uskb_sk_track_abandon(s);
		s->t.head = s->t.tail = 0;
	}
	s->rlen = 0;
}

static void sk_close(struct uskb_dev *dev)
{
	struct sk_dev *s = dev->priv;
	uint64_t end = uskb_mono_ns() + (uint64_t)CLOSE_WAIT_MS * 1000000u;

	finish_part(s, end);
	drain(s, CLOSE_WAIT_MS);
	sk_free(s);
}

static int udp_open(struct uskb_dev *dev, const char *arg)
{
	return sk_open(dev, arg, SK_UDP);
}

static int tcp_open(struct uskb_dev *dev, const char *arg)
{
	return sk_open(dev, arg, SK_TCP);
}

static int unix_open(struct uskb_dev *dev, const char *arg)
{
	return sk_open(dev, arg, SK_UNIX);
}

const struct uskb_dev_ops __uskb_dev_udp_ops = {
	.type = "udp", .open = udp_open, .close = sk_close, .xmit = sk_xmit,
	.flush = sk_flush, .rx = sk_rx,
};
const struct uskb_dev_ops __uskb_dev_tcp_ops = {
	.type = "tcp", .open = tcp_open, .close = sk_close, .xmit = sk_xmit,
	.flush = sk_flush, .rx = sk_rx,
};
const struct uskb_dev_ops __uskb_dev_unix_ops = {
	.type = "unix", .open = unix_open, .close = sk_close, .xmit = sk_xmit,
	.flush = sk_flush, .rx = sk_rx,
};
