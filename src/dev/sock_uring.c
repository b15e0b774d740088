/* SPDX-License-Identifier: MIT */
/*
 * The socket devices' uring mode: sends as io_uring send_zc / sendmsg_zc
 * (liburing). Each send posts two completions with its user_data (the
 * record's id): the result, then (flag F_NOTIF) the notification that the
 * kernel is done with the memory; only then are the record's skbs freed.
 * IORING_SEND_ZC_REPORT_USAGE makes the notification say whether the kernel
 * copied after all. Notifications come one per send, in any order.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dev/sock.h"

#ifdef USKB_HAVE_URING
#include <liburing.h>

/* in the kernel's uapi header, not in liburing 2.3's copy of it */
#ifndef IORING_SEND_ZC_REPORT_USAGE
#define IORING_SEND_ZC_REPORT_USAGE (1U << 3)
#endif
#ifndef IORING_NOTIF_USAGE_ZC_COPIED
#define IORING_NOTIF_USAGE_ZC_COPIED (1U << 31)
#endif

#define RING_ENTRIES 256

struct sk_uring {
	struct io_uring ring;
	bool report; /* IORING_SEND_ZC_REPORT_USAGE works: notifications say "copied" */
};

/*
 * IORING_SEND_ZC_REPORT_USAGE came with Linux 6.2; an older kernel refuses
 * every send that asks for it (EINVAL). A send of one byte on an
 * unconnected socket tells: EINVAL without the flag's support, a
 * destination error with it.
 */
static bool probe_report_usage(struct io_uring *ring)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), res = -EINVAL;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	char byte = 0;

	if (fd < 0)
		return false;
	sqe = io_uring_get_sqe(ring);
	io_uring_prep_send_zc(sqe, fd, &byte, 1, 0, 0);
	sqe->ioprio |= IORING_SEND_ZC_REPORT_USAGE;
	io_uring_submit(ring);
	for (;;) { /* its result, then (F_MORE) its notification */
		bool more;

		if (io_uring_wait_cqe(ring, &cqe))
			break;
		if (!(cqe->flags & IORING_CQE_F_NOTIF))
			res = cqe->res;
		more = cqe->flags & IORING_CQE_F_MORE;
		io_uring_cqe_seen(ring, cqe);
		if (!more)
			break;
	}
	close(fd);
	return res != -EINVAL;
}

int __uskb_sk_uring_init(struct sk_dev *s)
{
	struct sk_uring *ur = calloc(1, sizeof(*ur));
	struct io_uring_probe *probe;
	int err;

	if (!ur)
		return -ENOMEM;
	err = io_uring_queue_init(RING_ENTRIES, &ur->ring, 0);
	if (err) {
		free(ur);
		return __uskb_dev_fail(-err, "%s: io_uring: %s", s->o.text, strerror(-err));
	}
	probe = io_uring_get_probe_ring(&ur->ring);
	if (!probe || !io_uring_opcode_supported(probe, IORING_OP_SENDMSG_ZC) ||
	    !io_uring_opcode_supported(probe, IORING_OP_SEND_ZC)) {
		io_uring_free_probe(probe);
		io_uring_queue_exit(&ur->ring);
		free(ur);
		return __uskb_dev_fail(EOPNOTSUPP, "%s: this kernel's io_uring has no send_zc "
				       "(Linux 6.1 and later): use zc or copy", s->o.text);
	}
	io_uring_free_probe(probe);
	/* without it the kernel's copies cannot be seen: counted as not copied, no fallback */
	ur->report = probe_report_usage(&ur->ring);
	s->ur = ur;
	return 0;
}

void __uskb_sk_uring_fini(struct sk_dev *s)
{
	io_uring_queue_exit(&s->ur->ring);
	free(s->ur);
	s->ur = NULL;
}

int __uskb_sk_uring_send(struct sk_dev *s, struct sk_rec *r, int flags)
{
	struct io_uring *ring = &s->ur->ring;
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (!sqe) {
		io_uring_submit(ring);
		sqe = io_uring_get_sqe(ring);
		if (!sqe)
			return -EBUSY;
	}
	if (r->msg.msg_iovlen == 1 && !r->msg.msg_control && !r->msg.msg_name)
		io_uring_prep_send_zc(sqe, s->fd, r->msg.msg_iov[0].iov_base, r->msg.msg_iov[0].iov_len,
				      MSG_NOSIGNAL | flags, 0);
	else
		io_uring_prep_sendmsg_zc(sqe, s->fd, &r->msg, MSG_NOSIGNAL | flags);
	if (s->ur->report)
		sqe->ioprio |= IORING_SEND_ZC_REPORT_USAGE;
	io_uring_sqe_set_data64(sqe, s->t.head); /* the id the record is pushed under */
	r->gen = s->conn_gen;
	s->ur_pending++;
	return 0;
}

/* a send's result: its frames were lost when it failed (or, on a stream, fell short) */
static void result(struct sk_dev *s, struct sk_rec *r, int res)
{
	s->ur_pending--;
	if (res >= 0 && (!s->stream || (uint32_t)res == r->bytes))
		return;
	__uskb_sk_lost(s, r, res < 0 ? -res : EPIPE);
	/* a send of an earlier connection failing says nothing of this one */
	if (s->stream && !s->ur_err && r->gen == s->conn_gen)
		s->ur_err = res < 0 ? -res : EPIPE;
}

int __uskb_sk_uring_reap(struct sk_dev *s, int wait_ms)
{
	struct io_uring *ring = &s->ur->ring;
	struct io_uring_cqe *cqe;
	unsigned int head, n = 0;

	if (io_uring_sq_ready(ring))
		io_uring_submit(ring);
	if (wait_ms > 0 && s->t.live && !io_uring_cq_ready(ring)) {
		struct __kernel_timespec ts = { 0, (long long)wait_ms * 1000000 };

		io_uring_wait_cqe_timeout(ring, &cqe, &ts);
	}
	io_uring_for_each_cqe(ring, head, cqe) {
		uint32_t id = (uint32_t)cqe->user_data;
		struct sk_rec *r = &s->t.rec[id & s->t.mask];

		n++;
		if (cqe->flags & IORING_CQE_F_NOTIF) {
			__uskb_sk_complete(s, id, id,
					   ((uint32_t)cqe->res & IORING_NOTIF_USAGE_ZC_COPIED) != 0);
			continue;
		}
		result(s, r, cqe->res);
		/* without F_MORE no notification follows: the kernel is done already */
		if (!(cqe->flags & IORING_CQE_F_MORE))
			__uskb_sk_complete(s, id, id, false);
	}
	io_uring_cq_advance(ring, n);
	return (int)n;
}

#else /* no liburing */

int __uskb_sk_uring_init(struct sk_dev *s)
{
	return __uskb_dev_fail(EOPNOTSUPP, "%s: this build has no io_uring (install "
			       "liburing-dev and rebuild): use zc or copy", s->o.text);
}

void __uskb_sk_uring_fini(struct sk_dev *s)
{
	(void)s;
}

int __uskb_sk_uring_send(struct sk_dev *s, struct sk_rec *r, int flags)
{
	(void)s;
	(void)r;
	(void)flags;
	return -EOPNOTSUPP;
}

int __uskb_sk_uring_reap(struct sk_dev *s, int wait_ms)
{
	(void)s;
	(void)wait_ms;
	return 0;
}

#endif
