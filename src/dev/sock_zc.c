/* SPDX-License-Identifier: MIT */
/*
 * The sends a socket device has in flight: each holds references to the
 * skbs whose memory the kernel may still read, until the kernel says it is
 * done: a MSG_ZEROCOPY notification (a range of send ids, coalesced) or an
 * io_uring notification CQE (one per send, in any order). Then the skbs are
 * freed, and an skb's ubuf hears success = false if the kernel copied.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <linux/errqueue.h>
#include <netinet/in.h>

#include "dev/sock.h"

/* the kernel copied this many sends in a row: zero copy is not paying, stop asking for it */
#define COPIED_RUN_MAX 32

int __uskb_sk_track_init(struct sk_track *t, unsigned int n, bool with_iov)
{
	size_t hbytes = (size_t)n * SK_FRAMES * sizeof(uint32_t);
	unsigned int i, order = 0;

	memset(t, 0, sizeof(*t));
	while (((size_t)USKB_PAGE_SIZE << order) < hbytes)
		order++;
	t->rec = calloc(n, sizeof(*t->rec));
	t->hdrs = order <= USKB_PAGE_MAX_ORDER ? uskb_page_alloc(order) : NULL;
	if (!t->rec || !t->hdrs) {
		__uskb_sk_track_fini(t);
		return -ENOMEM;
	}
	t->mask = n - 1;
	for (i = 0; i < n; i++)
		t->rec[i].hdr = (uint32_t *)uskb_page_address(t->hdrs) + (size_t)i * SK_FRAMES;
	if (with_iov) {
		for (i = 0; i < n; i++) {
			t->rec[i].iov = calloc(SK_IOV, sizeof(struct iovec));
			if (!t->rec[i].iov) {
				__uskb_sk_track_fini(t);
				return -ENOMEM;
			}
		}
	}
	return 0;
}

void __uskb_sk_track_fini(struct sk_track *t)
{
	unsigned int i;

	if (t->hdrs)
		uskb_page_put(t->hdrs);
	t->hdrs = NULL;
	if (!t->rec)
		return;
	for (i = 0; i <= t->mask; i++)
		free(t->rec[i].iov);
	free(t->rec);
	t->rec = NULL;
}

bool __uskb_sk_track_room(const struct sk_dev *s, unsigned int nrec, uint64_t bytes)
{
	const struct sk_track *t = &s->t;

	/* one record stays free: head never catches up with tail */
	if (t->head - t->tail + nrec > t->mask)
		return false;
	/* the byte bound lets one send through on an idle device, whatever its size */
	return t->bytes + bytes <= s->o.inflight || (!t->live && nrec == 1);
}

void __uskb_sk_track_push(struct sk_track *t)
{
	struct sk_rec *r = sk_track_next(t);

	r->live = true;
	t->live++;
	t->bytes += r->bytes;
	t->head++;
}

/* the kernel says it copied: the owner of a user buffer in the skb hears success = false */
static void mark_copied(struct uskb *skb)
{
	struct uskb_ubuf *u = uskb_zcopy(skb);

	if (u)
		atomic_store_explicit(&u->copied, true, memory_order_relaxed);
}

static void complete_one(struct sk_dev *s, struct sk_rec *r, bool copied)
{
	unsigned int i;

	for (i = 0; i < r->n; i++) {
		if (copied)
			mark_copied(r->skb[i]);
		uskb_consume(r->skb[i]);
	}
	s->t.bytes -= r->bytes;
	s->t.live--;
	r->fixed = false;
	r->n = 0;
	r->bytes = 0;
	r->live = false;
}

void __uskb_sk_complete(struct sk_dev *s, uint32_t lo, uint32_t hi, bool copied)
{
	struct sk_track *t = &s->t;
	uint32_t id = lo, n = 0;

	do {
		/* only ids in flight: a stray one (a send the device never counted) is ignored */
		if (id - t->tail < t->head - t->tail) {
			struct sk_rec *r = &t->rec[id & t->mask];

			if (r->live) {
				complete_one(s, r, copied);
				n++;
			}
		}
	} while (id++ != hi);
	while (t->tail != t->head && !t->rec[t->tail & t->mask].live)
		t->tail++;
	if (copied) {
		s->zc_copied += n;
		t->copied_run += n;
		if (s->zc && t->copied_run >= COPIED_RUN_MAX) {
			/*
			 * As msg_zerocopy.rst advises: a peer on this host copies
			 * anyway. Counted (tx_zc_fallback), not an error: every
			 * frame still goes out.
			 */
			s->zc = false;
			s->zc_fallback++;
		}
	} else {
		s->zc_done += n;
		t->copied_run = 0;
	}
}

int __uskb_sk_reap_errqueue(struct sk_dev *s)
{
	int total = 0;

	while (s->t.live) {
		char control[CMSG_SPACE(sizeof(struct sock_extended_err)) + 64];
		struct msghdr msg = { .msg_control = control, .msg_controllen = sizeof(control) };
		struct cmsghdr *cm;
		uint32_t before = s->t.live;

		if (recvmsg(s->fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
			break; /* EAGAIN: nothing more now */
		for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
			struct sock_extended_err ee;

			if (!((cm->cmsg_level == SOL_IP && cm->cmsg_type == IP_RECVERR) ||
			      (cm->cmsg_level == SOL_IPV6 && cm->cmsg_type == IPV6_RECVERR)))
				continue;
			memcpy(&ee, CMSG_DATA(cm), sizeof(ee));
			if (ee.ee_origin != SO_EE_ORIGIN_ZEROCOPY || ee.ee_errno)
				continue;
			__uskb_sk_complete(s, ee.ee_info, ee.ee_data,
					   ee.ee_code & SO_EE_CODE_ZEROCOPY_COPIED);
		}
		total += (int)(before - s->t.live);
	}
	return total;
}

void __uskb_sk_track_abandon(struct sk_dev *s)
{
	struct sk_track *t = &s->t;

	if (!t->rec)
		return;
	for (uint32_t id = t->tail; id != t->head; id++) {
		struct sk_rec *r = &t->rec[id & t->mask];

		if (r->live)
			complete_one(s, r, true);
	}
	t->tail = t->head;
}

void __uskb_sk_publish(struct sk_dev *s)
{
	struct uskb_dev_stats *q = s->dev->qstats;

	if (!q)
		return;
	__atomic_store_n(&q->tx_zc, s->zc_done, __ATOMIC_RELAXED);
	__atomic_store_n(&q->tx_zc_copied, s->zc_copied, __ATOMIC_RELAXED);
	__atomic_store_n(&q->tx_zc_fallback, s->zc_fallback, __ATOMIC_RELAXED);
	__atomic_store_n(&q->tx_zc_fixed, s->zc_fixed, __ATOMIC_RELAXED);
}
