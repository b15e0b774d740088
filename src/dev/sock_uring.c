/* SPDX-License-Identifier: MIT */
/*
 * The socket devices' uring mode: sends as io_uring send_zc / sendmsg_zc
 * (liburing). Each send posts two completions with its user_data (the
 * record's id): the result, then (flag F_NOTIF) the notification that the
 * kernel is done with the memory; only then are the record's skbs freed.
 * IORING_SEND_ZC_REPORT_USAGE makes the notification say whether the kernel
 * copied after all. Notifications come one per send, in any order.
 *
 * Registered buffers: the kernel pins the pages of every zero-copy send
 * unless they are registered with the ring beforehand. All memory uskb hands
 * out (skb heads, page frags, the zero page) lies in the mem layer's window
 * of arenas, mapped for the life of the process; it is registered in slots
 * of 1 GiB (the kernel's limit for one buffer), each grown as the window
 * grows, and a send whose iovecs all lie in one slot goes as a fixed-buffer
 * send. Others (user memory, arenas outside the window) go as before.
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
/* the user_data of a cancel (never a record's id, which is 32 bits) */
#define CANCEL_TAG UINT64_MAX
/* registered buffers: slots of the window, the most one buffer may span */
#define FIX_SHIFT 30
#define FIX_SLOTS 16

struct sk_uring {
	struct io_uring ring;
	bool report; /* IORING_SEND_ZC_REPORT_USAGE works: notifications say "copied" */
	bool fixed;  /* the window is (being) registered */
	bool vec_fixed; /* sendmsg_zc takes a registered buffer too (Linux 6.15) */
	size_t reg[FIX_SLOTS]; /* bytes of each slot registered, from its start */
	size_t tried[FIX_SLOTS]; /* bytes of it a registration last failed for */
};

/* submit the one send queued on @ring and wait for its result (and notification) */
static int probe_result(struct io_uring *ring)
{
	struct io_uring_cqe *cqe;
	int res = -EINVAL;

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
	return res;
}

/*
 * IORING_SEND_ZC_REPORT_USAGE came with Linux 6.2; an older kernel refuses
 * every send that asks for it (EINVAL). A send of one byte on an
 * unconnected socket tells: EINVAL without the flag's support, a
 * destination error with it.
 */
static bool probe_report_usage(struct io_uring *ring)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), res;
	struct io_uring_sqe *sqe;
	char byte = 0;

	if (fd < 0)
		return false;
	sqe = io_uring_get_sqe(ring);
	io_uring_prep_send_zc(sqe, fd, &byte, 1, 0, 0);
	sqe->ioprio |= IORING_SEND_ZC_REPORT_USAGE;
	res = probe_result(ring);
	close(fd);
	return res != -EINVAL;
}

/*
 * Whether sendmsg_zc takes IORING_RECVSEND_FIXED_BUF: a one-byte send from a
 * buffer registered in slot 0 on an unconnected socket fails with a
 * destination error where it does, EINVAL where it does not.
 */
static bool probe_vec_fixed(struct io_uring *ring)
{
	static char byte;
	struct iovec iov = { &byte, 1 }, none = { NULL, 0 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), res;
	struct io_uring_sqe *sqe;
	__u64 tag = 0;

	if (fd < 0 || io_uring_register_buffers_update_tag(ring, 0, &iov, &tag, 1) != 1) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	sqe = io_uring_get_sqe(ring);
	io_uring_prep_sendmsg_zc(sqe, fd, &msg, 0);
	sqe->ioprio |= IORING_RECVSEND_FIXED_BUF;
	sqe->buf_index = 0;
	res = probe_result(ring);
	close(fd);
	io_uring_register_buffers_update_tag(ring, 0, &none, &tag, 1);
	return res != -EINVAL && res != -EFAULT;
}

struct fix_reg {
	struct io_uring *ring;
	unsigned int slot;
	struct iovec iov;
};

static int fix_register_cb(void *arg)
{
	struct fix_reg *f = arg;
	__u64 tag = 0;
	int n = io_uring_register_buffers_update_tag(f->ring, f->slot, &f->iov, &tag, 1);

	return n == 1 ? 0 : n < 0 ? n : -EIO;
}

/* register @slot of the window (@wb, @wlen bytes) as far as the window goes; false: cannot */
static bool fix_register(struct sk_dev *s, char *wb, size_t wlen, unsigned int slot)
{
	size_t start = (size_t)slot << FIX_SHIFT, len = wlen - start;
	struct fix_reg f = { &s->ur->ring, slot, { wb + start, 0 } };
	int err;

	if (len > (size_t)1 << FIX_SHIFT)
		len = (size_t)1 << FIX_SHIFT;
	f.iov.iov_len = len;
	err = uskb_page_window_pin(fix_register_cb, &f);
	if (err) {
		/*
		 * RLIMIT_MEMLOCK without CAP_IPC_LOCK, say. The slot keeps what
		 * was registered before; sends beyond it pin their pages, as
		 * without registration, until the window has grown by another
		 * eighth and registering is tried again.
		 */
		s->ur->tried[slot] = len;
		return false;
	}
	s->ur->reg[slot] = len;
	return true;
}

/* the registered buffer that holds all of @r's iovecs (registering it as needed), or -1 */
static int fix_index(struct sk_dev *s, const struct sk_rec *r)
{
	size_t wlen, need = 0;
	char *wb = uskb_page_window(&wlen);
	int slot = -1;

	if (!wb)
		return -1;
	for (size_t i = 0; i < r->msg.msg_iovlen; i++) {
		const struct iovec *v = &r->msg.msg_iov[i];
		uintptr_t off = (uintptr_t)v->iov_base - (uintptr_t)wb, end;

		/* the kernel checks every iovec against the buffer, an empty one too */
		if ((uintptr_t)v->iov_base < (uintptr_t)wb || off >= wlen || v->iov_len > wlen - off)
			return -1;
		end = off + v->iov_len;
		/* one buffer for all: no iovec across a slot's end, none in another slot */
		if ((end - 1) >> FIX_SHIFT != off >> FIX_SHIFT ||
		    (slot >= 0 && (int)(off >> FIX_SHIFT) != slot))
			return -1;
		slot = (int)(off >> FIX_SHIFT);
		end -= (size_t)slot << FIX_SHIFT;
		if (end > need)
			need = end;
	}
	if (slot < 0 || slot >= FIX_SLOTS)
		return -1;
	if (need > s->ur->reg[slot]) {
		size_t reg = s->ur->reg[slot], avail = wlen - ((size_t)slot << FIX_SHIFT);

		/*
		 * Registration pins the whole slot again: only when the window
		 * grew by an eighth since it last registered, or last failed to
		 * (linear cost in all); else this send goes without.
		 */
		if (reg < s->ur->tried[slot])
			reg = s->ur->tried[slot];
		if (avail > (size_t)1 << FIX_SHIFT)
			avail = (size_t)1 << FIX_SHIFT;
		if (avail <= reg || (avail - reg) * 8 < reg ||
		    !fix_register(s, wb, wlen, (unsigned int)slot) || need > s->ur->reg[slot])
			return -1;
	}
	return slot;
}

int __uskb_sk_uring_fail(const struct sk_dev *s, int err)
{
	if (err == -EPERM || err == -EACCES)
		return __uskb_dev_fail(-err, "%s: io_uring refused by this kernel (%s: sysctl "
				       "kernel.io_uring_disabled, or a seccomp or LSM policy): leave out "
				       ",uring", s->o.text, strerrorname_np(-err));
	return __uskb_dev_fail(-err, "%s: io_uring: %s", s->o.text, strerror(-err));
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
		return __uskb_sk_uring_fail(s, err);
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
	/* a table of empty slots, filled as sends need them (Linux 5.19) */
	ur->fixed = !s->o.nofixed && !io_uring_register_buffers_sparse(&ur->ring, FIX_SLOTS);
	if (ur->fixed)
		ur->vec_fixed = probe_vec_fixed(&ur->ring);
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
	bool single = r->msg.msg_iovlen == 1 && !r->msg.msg_control && !r->msg.msg_name;
	int fix = s->ur->fixed && (single || s->ur->vec_fixed) ? fix_index(s, r) : -1;

	if (!sqe) {
		io_uring_submit(ring);
		sqe = io_uring_get_sqe(ring);
		if (!sqe)
			return -EBUSY;
	}
	if (single)
		io_uring_prep_send_zc(sqe, s->fd, r->msg.msg_iov[0].iov_base, r->msg.msg_iov[0].iov_len,
				      MSG_NOSIGNAL | flags, 0);
	else
		io_uring_prep_sendmsg_zc(sqe, s->fd, &r->msg, MSG_NOSIGNAL | flags);
	if (s->ur->report)
		sqe->ioprio |= IORING_SEND_ZC_REPORT_USAGE;
	if (fix >= 0) {
		sqe->ioprio |= IORING_RECVSEND_FIXED_BUF;
		sqe->buf_index = (__u16)fix;
		r->fixed = true;
	}
	io_uring_sqe_set_data64(sqe, s->t.head); /* the id the record is pushed under */
	r->gen = s->conn_gen;
	s->ur_pending++;
	return 0;
}

/* a send's result: its frames were lost when it failed (or, on a stream, fell short) */
static void result(struct sk_dev *s, struct sk_rec *r, int res)
{
	s->ur_pending--;
	if (res >= 0 && (!s->stream || (uint32_t)res == r->bytes)) {
		if (r->fixed) /* sent: from a registered buffer */
			s->zc_fixed += r->n;
		/* the stream's bytes now in the socket, frame by frame (this connection's only) */
		for (unsigned int i = 0; s->stream && r->gen == s->conn_gen && i < r->n; i++)
			sk_frame_end(s, s->wpos += 4 + r->skb[i]->len);
		return;
	}
	if (s->stream && res > 0 && r->gen == s->conn_gen) /* in the socket; its frames are lost whole */
		s->wpos += (uint64_t)res;
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
		if (cqe->user_data == CANCEL_TAG)
			continue;
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

void __uskb_sk_uring_cancel(struct sk_dev *s)
{
	struct io_uring_sqe *sqe;

	if (!s->ur_pending || s->fd < 0)
		return;
	sqe = io_uring_get_sqe(&s->ur->ring);
	if (!sqe) {
		io_uring_submit(&s->ur->ring);
		sqe = io_uring_get_sqe(&s->ur->ring);
	}
	if (sqe) {
		io_uring_prep_cancel_fd(sqe, s->fd, IORING_ASYNC_CANCEL_ALL);
		io_uring_sqe_set_data64(sqe, CANCEL_TAG);
	}
	for (int i = 0; s->ur_pending && i < 100; i++)
		__uskb_sk_uring_reap(s, 10);
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

void __uskb_sk_uring_cancel(struct sk_dev *s)
{
	(void)s;
}

#endif
