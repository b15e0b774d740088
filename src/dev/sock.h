/* SPDX-License-Identifier: MIT */
/* The socket devices' private state (sock.c, sock_zc.c, sock_uring.c). */
#ifndef USKB_DEV_SOCK_H
#define USKB_DEV_SOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "dev/priv.h"

enum sk_kind { SK_UDP, SK_TCP, SK_UNIX };
enum sk_mode { SK_COPY, SK_ZC, SK_URING };

/* the longest frame a stream carries: QEMU's NET_BUFSIZE (4096 + 65536) */
#define SK_STREAM_FRAME_MAX 69632u
/* the longest UDP payload over IPv4 (65535 - 20 - 8); over IPv6 it is 65527 */
#define SK_UDP_FRAME_MAX 65507u
/* frames per send: a sendmsg (stream), a GSO datagram, a record */
#define SK_FRAMES 64
/* iovecs per send: UIO_MAXIOV */
#define SK_IOV 1024
/* frame ends a tcp device remembers: the largest TCP send buffer (4 MiB) in 64-byte frames */
#define SK_FEND (1u << 16)

/* the spec, parsed */
struct sk_opts {
	enum sk_kind kind;
	enum sk_mode mode;
	bool listen, gso, has_local;
	bool nofixed; /* uring: never register memory with the ring */
	unsigned int copybreak; /* frames shorter than this are sent by copy in zc and uring */
	uint64_t inflight;	/* bytes the kernel may hold at once */
	struct sockaddr_storage addr, local;
	socklen_t alen, llen;
	char text[128]; /* the spec as given, for messages */
};

/*
 * A send the kernel may still read from: the references it holds, until the
 * kernel's notification covers it (MSG_ZEROCOPY's id, or io_uring's user_data).
 */
struct sk_rec {
	uint16_t n;	   /* skbs held */
	bool live;	   /* sent, not yet completed */
	bool fixed;	   /* uring: sent from a registered buffer */
	uint32_t gen;	   /* uring: the connection it was sent on (sk_dev.conn_gen) */
	uint32_t bytes;
	struct uskb *skb[SK_FRAMES];
	uint32_t *hdr; /* SK_FRAMES stream length prefixes: the kernel reads them too */
	/* uring: the message lives until the send's result */
	struct msghdr msg;
	struct iovec *iov; /* SK_IOV of them, uring only */
	union {
		char buf[CMSG_SPACE(sizeof(uint16_t))];
		struct cmsghdr align;
	} cm; /* uring: UDP_SEGMENT */
};

/* the sends in flight: ids tail .. head-1, in a ring of records */
struct sk_track {
	struct sk_rec *rec;
	struct uskb_page *hdrs; /* the records' length prefixes: page memory, which uring registers */
	unsigned int mask;
	uint32_t head, tail;
	unsigned int live;  /* records not yet completed */
	uint64_t bytes;	    /* bytes they hold */
	unsigned int copied_run; /* completions in a row the kernel copied */
};

struct sk_uring;
struct sk_rx;
struct udp_batch;

struct sk_dev {
	struct uskb_dev *dev;
	struct sk_opts o;
	int fd;	 /* the connected (or bound) socket; -1: none yet (listen) */
	int lfd; /* tcp/unix listen: the listening socket */
	bool stream;
	bool zc;     /* zero-copy sends now (zc or uring mode, not fallen back) */
	bool gso;    /* UDP_SEGMENT still works */
	/* udp listen: where replies go (the last sender) */
	struct sockaddr_storage peer;
	socklen_t peer_len;
	/* stream: the rest of a frame the socket took only part of */
	struct uskb *part;
	uint32_t part_hdr;
	unsigned int part_off; /* bytes of hdr + frame already sent */
	struct sk_track t;
	struct sk_uring *ur;
	unsigned int ur_pending; /* uring: sends whose result is still to come */
	int ur_err;		 /* uring, stream: a send failed (errno): the connection is gone */
	uint32_t conn_gen;	 /* stream: bumped at each new connection */
	/*
	 * tcp: where each frame handed to the kernel ends in the stream
	 * (wpos: the bytes it took), so that a drain can
	 * count the frames the peer never acknowledged (__uskb_sk_drain). A ring of the last
	 * SK_FEND frames: older ones are out of any send buffer.
	 */
	uint64_t wpos;
	uint64_t *fend;
	uint64_t fend_head, fend_tail;
	uint64_t fend_floor; /* where the last frame out of the ring ended (the next one's start) */
	uint64_t acked0;     /* tcpi_bytes_acked at the connection's start (a connecting socket's SYN) */
	bool reset_at_close; /* frames counted lost are still queued: RST, never send them late */
	bool nozc_once;	 /* ENOBUFS: the next send goes by copy */
	struct udp_batch *ub;
	/* counters of the sending thread, published into queue 0's */
	uint64_t zc_done, zc_copied, zc_fallback, zc_fixed;
	/* receive */
	struct sk_rx *rx;    /* udp: the slots datagrams land in (sock_rx.c) */
	unsigned char *rbuf; /* stream: bytes read, not yet framed */
	size_t rlen, rcap;
	bool rx_eof; /* stream: the peer closed while bytes waited */
	char err[192];
};

/* tcp: a frame handed to the kernel ends at stream byte @end (uring: once its send's result came) */
static inline void sk_frame_end(struct sk_dev *s, uint64_t end)
{
	if (!s->fend)
		return;
	if (s->fend_head - s->fend_tail == SK_FEND)
		s->fend_floor = s->fend[s->fend_tail++ & (SK_FEND - 1)];
	s->fend[s->fend_head++ & (SK_FEND - 1)] = end;
}

/* sock_spec.c: TYPE:ADDRESS[,OPTION...] into @o; 0 or -errno with the reason said */
USKB_HIDDEN int __uskb_sk_parse_spec(struct sk_opts *o, enum sk_kind kind, const char *arg);

/* sock_zc.c: the records in flight */
USKB_HIDDEN int __uskb_sk_track_init(struct sk_track *t, unsigned int n, bool with_iov);
USKB_HIDDEN void __uskb_sk_track_fini(struct sk_track *t);
/* room for @nrec more sends of @bytes in all (within the record ring and the byte bound) */
USKB_HIDDEN bool __uskb_sk_track_room(const struct sk_dev *s, unsigned int nrec, uint64_t bytes);
/* the record the next send takes (id head); __uskb_sk_track_push() commits it */
static inline struct sk_rec *sk_track_next(struct sk_track *t)
{
	return &t->rec[t->head & t->mask];
}
USKB_HIDDEN void __uskb_sk_track_push(struct sk_track *t);
/* sends lo..hi (ids, inclusive, may wrap) completed; @copied: the kernel copied them */
USKB_HIDDEN void __uskb_sk_complete(struct sk_dev *s, uint32_t lo, uint32_t hi, bool copied);
/* read the socket's MSG_ZEROCOPY notifications; how many sends they completed */
USKB_HIDDEN int __uskb_sk_reap_errqueue(struct sk_dev *s);
/* free every record still held (the socket is closed): each completes as copied */
USKB_HIDDEN void __uskb_sk_track_abandon(struct sk_dev *s);
/* the counters the sending thread keeps, into queue 0's */
USKB_HIDDEN void __uskb_sk_publish(struct sk_dev *s);

/* sock_uring.c (when built with liburing) */
USKB_HIDDEN int __uskb_sk_uring_init(struct sk_dev *s);
/* io_uring_queue_init() said @err: one line, a refusal (EPERM, EACCES) named as one */
USKB_HIDDEN int __uskb_sk_uring_fail(const struct sk_dev *s, int err);
USKB_HIDDEN void __uskb_sk_uring_fini(struct sk_dev *s);
/* send one record (already filled: msg, iov, skbs); 0 or -errno (nothing queued) */
USKB_HIDDEN int __uskb_sk_uring_send(struct sk_dev *s, struct sk_rec *r, int flags);
/* submit what is queued, take the completions there are; @wait_ms > 0: wait that long for one */
USKB_HIDDEN int __uskb_sk_uring_reap(struct sk_dev *s, int wait_ms);
/* cancel the sends still waiting on the socket; their results (failed: their frames lost) taken */
USKB_HIDDEN void __uskb_sk_uring_cancel(struct sk_dev *s);

/* sock_rx.c: udp receive into slots that skbs keep */
USKB_HIDDEN int __uskb_sk_udp_rx(struct sk_dev *s, struct uskb **skbs, int max, int timeout_ms);
/* the stream framing: read() and copy, or (uring) chunks in slots that skbs keep */
USKB_HIDDEN int __uskb_sk_stream_rx(struct sk_dev *s, struct uskb **skbs, int max, int timeout_ms);
USKB_HIDDEN void __uskb_sk_rx_free(struct sk_dev *s);

/* sock_acked.c: the bytes the peer of TCP socket @fd acknowledged; 0, or -1 (then unknown) */
USKB_HIDDEN int __uskb_sk_bytes_acked(int fd, uint64_t *acked);
/* sock.c */
USKB_HIDDEN void __uskb_sk_lost(struct sk_dev *s, struct sk_rec *r, int err);
/* listen: take a waiting peer, waiting up to @wait_ms; true when connected */
USKB_HIDDEN bool __uskb_sk_accept(struct sk_dev *s, int wait_ms);
/* the connection is gone (@err from a send or a read; 0: end of stream) */
USKB_HIDDEN void __uskb_sk_conn_lost(struct sk_dev *s, int err, const char *what);
/* a peer that breaks the framing (length @len): its connection goes, the reason said */
USKB_HIDDEN void __uskb_sk_bad_frame(struct sk_dev *s, uint32_t len);
/*
 * Wait up to @timeout_ms (-1: no limit) for something to read on the
 * socket; unread MSG_ZEROCOPY notifications (POLLERR) are read on the way
 * rather than ending the wait. 1, 0 (timeout) or -errno (-EINTR).
 */
USKB_HIDDEN int __uskb_sk_wait_in(struct sk_dev *s, int timeout_ms);

#endif
