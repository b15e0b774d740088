/* SPDX-License-Identifier: MIT */
/*
 * Zero-copy receive out of a kernel-shared region (a TPACKET_V3 ring's
 * blocks, an AF_XDP UMEM's frames): the rule of zero-copy user buffers
 * (docs/zerocopy.md) applied to RX rings.
 *
 * The region is cut into slots (a ring block, a UMEM frame). When the
 * kernel hands a slot over, its unit — a ubuf and a page descriptor over
 * the slot's memory — is opened: the device holds the ubuf's first
 * reference while it walks the slot, every skb built on it holds one more
 * (a frag on the descriptor, MANAGED_FRAG_REFS). The last reference gone
 * gives the slot back to the kernel (the owner's give_back, or a lock-free
 * stack of the rxzc's own that the receiving thread empties: xdp: and
 * udp:), from whichever thread dropped it.
 *
 * Patience: a slot still referenced long after the device finished with it
 * (or while too few are left to the kernel, or, in a ring the kernel fills
 * in order, when the kernel is half a ring away) is copied into a private block
 * and its descriptor switched to the copy, so every skb on it — clones
 * included — keeps correct data while the kernel has its memory back (10 ms
 * later: the grace a reader on another thread may still need). The
 * orphaned unit lives on alone until its last skb is freed; the slot gets
 * a new one. Orphaning happens on the receiving thread, inside rx.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dev/priv.h"
#include "dev/rxzc.h"

/*
 * RETURNING: the last reference is gone, the give-back is under way.
 * GRACE: the slot's memory was copied out and its old unit detached; the
 * memory goes back to the kernel only GRACE_NS later, so a reader on
 * another thread that took the old address just before the switch is not
 * overwritten under it.
 */
enum { UNIT_FREE, UNIT_OPEN, UNIT_HELD, UNIT_ORPHANED, UNIT_RETURNING, UNIT_GRACE };

#define GRACE_NS (10 * 1000000ull)

static void unit_complete(struct uskb *skb, struct uskb_ubuf *uarg, bool success)
{
	struct rxzc_unit *u = (struct rxzc_unit *)uarg;
	struct rxzc *zc = u->zc;

	(void)skb;
	(void)success;
	if (atomic_load_explicit(&u->state, memory_order_acquire) == UNIT_ORPHANED) {
		/* alone since the copy: the slot went on with a fresh unit */
		uskb_page_put(u->copy);
		free(u);
		return;
	}
	/*
	 * The kernel may hand the slot over again as soon as it is back: the
	 * receiving thread then waits out RETURNING. FREE is the last touch:
	 * after it the unit may be reopened (or, when closing, freed).
	 */
	atomic_store_explicit(&u->state, UNIT_RETURNING, memory_order_relaxed);
	if (!atomic_load_explicit(&zc->dead, memory_order_acquire))
		zc->give_back(zc, u->idx);
	atomic_store_explicit(&u->state, UNIT_FREE, memory_order_release);
}

static const struct uskb_ubuf_ops unit_ops = { .complete = unit_complete };

static struct rxzc_unit *unit_new(struct rxzc *zc, unsigned int i)
{
	struct rxzc_unit *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->zc = zc;
	u->idx = i;
	atomic_init(&u->page.refcount, 1); /* the unit's own; never dropped */
	u->page.flags = USKB_PG_EXTERNAL | USKB_PG_READONLY;
	u->page.order = (uint8_t)zc->order;
	u->page.node = USKB_NO_NODE;
	u->page.addr = zc->addr_of(zc->owner, i);
	atomic_init(&u->state, UNIT_FREE);
	return u;
}

/* the default give_back: onto the lock-free stack, from any thread */
static void push_returned(struct rxzc *zc, unsigned int i)
{
	uint32_t old = atomic_load_explicit(&zc->ret_head, memory_order_relaxed);

	do
		zc->ret_next[i] = old;
	while (!atomic_compare_exchange_weak_explicit(&zc->ret_head, &old, i, memory_order_release,
						      memory_order_relaxed));
}

uint32_t __uskb_rxzc_take(struct rxzc *zc)
{
	return atomic_exchange_explicit(&zc->ret_head, RXZC_NONE, memory_order_acquire);
}

struct rxzc *__uskb_rxzc_create(unsigned int n, unsigned int order, void *(*addr_of)(void *, unsigned int),
			 void (*give_back)(struct rxzc *, unsigned int), void *owner)
{
	struct rxzc *zc = calloc(1, sizeof(*zc) + (size_t)n * sizeof(zc->slot[0]));
	unsigned int i;

	if (!zc)
		return NULL;
	zc->n = n;
	zc->order = order;
	atomic_init(&zc->ret_head, RXZC_NONE);
	if (!give_back) {
		zc->ret_next = calloc(n, sizeof(*zc->ret_next));
		if (!zc->ret_next) {
			free(zc);
			return NULL;
		}
		give_back = push_returned;
	}
	zc->give_back = give_back;
	zc->owner = owner;
	zc->addr_of = addr_of;
	rxzc_tune(zc, 100);
	for (i = 0; i < n; i++) {
		zc->slot[i] = unit_new(zc, i);
		if (!zc->slot[i]) {
			while (i--)
				free(zc->slot[i]);
			free(zc->ret_next);
			free(zc);
			return NULL;
		}
	}
	return zc;
}

bool __uskb_rxzc_busy(const struct rxzc *zc, unsigned int i)
{
	return atomic_load_explicit(&zc->slot[i]->state, memory_order_acquire) != UNIT_FREE;
}

void __uskb_rxzc_open(struct rxzc *zc, unsigned int i)
{
	struct rxzc_unit *u = zc->slot[i];
	int state;

	/* a give-back on another thread that the kernel outran: it is a few instructions from done */
	while ((state = atomic_load_explicit(&u->state, memory_order_acquire)) == UNIT_RETURNING)
		sched_yield();
	if (uskb_unlikely(state != UNIT_FREE))
		uskb_bug("rxzc_open", NULL, "slot %u of %u is still in use", i, zc->n);
	/* DONT_ORPHAN: held skbs need no copy at clone or skb_zerocopy time; the patience copies out */
	uskb_ubuf_init(&u->ubuf, &unit_ops, USKB_SKBFL_ZEROCOPY_FRAG | USKB_SKBFL_DONT_ORPHAN);
	u->used = 0;
	atomic_store_explicit(&u->state, UNIT_OPEN, memory_order_relaxed);
}

struct uskb *__uskb_rxzc_skb(struct rxzc *zc, unsigned int i, const void *data, unsigned int len)
{
	struct rxzc_unit *u = zc->slot[i];
	unsigned int head = len < zc->copybreak ? len : USKB_ZC_GOODCOPY_LEN;
	struct uskb *skb = uskb_dev_alloc(head);
	struct uskb_shared_info *sh;
	unsigned int off;

	if (!skb)
		return NULL;
	uskb_put_data(skb, data, head);
	if (head == len) {
		zc->copied++;
		return skb;
	}
	/* the rest stays where the kernel put it: a frag on the unit's descriptor */
	sh = uskb_shinfo(skb);
	off = (unsigned int)((const char *)data - (const char *)u->page.addr);
	uskb_frag_fill_page_desc(&sh->frags[0], &u->page, (int)(off + head), (int)(len - head));
	if (off + len > u->used)
		u->used = off + len;
	sh->nr_frags = 1;
	skb->len += len - head;
	skb->data_len += len - head;
	uskb_zcopy_set(skb, &u->ubuf, NULL);
	sh->flags |= USKB_SKBFL_MANAGED_FRAG_REFS | USKB_SKBFL_SHARED_FRAG;
	return skb;
}

void __uskb_rxzc_done(struct rxzc *zc, unsigned int i, uint64_t now)
{
	struct rxzc_unit *u = zc->slot[i];

	u->held_since = now;
	atomic_store_explicit(&u->state, UNIT_HELD, memory_order_release);
	uskb_zcopy_put(&u->ubuf); /* the device's reference: maybe the last */
}

/* A reference, unless the unit completed meanwhile. */
static bool unit_tryget(struct rxzc_unit *u)
{
	int c = atomic_load_explicit(&u->ubuf.refcnt, memory_order_relaxed);

	while (c > 0)
		if (atomic_compare_exchange_weak_explicit(&u->ubuf.refcnt, &c, c + 1,
							  memory_order_acquire, memory_order_relaxed))
			return true;
	return false;
}

enum { ORPHAN_NONE, ORPHAN_DETACHED, ORPHAN_NOMEM };

/*
 * Copy slot i out of the kernel's memory if skbs still hold it and detach
 * its unit: from then on the unit is the skbs' (the last frees it) and
 * must not be touched here. With @now (not when closing) the slot gets a
 * fresh unit, in GRACE until its memory goes back. ORPHAN_NONE: nothing
 * held it, or its last reference is being dropped elsewhere right now.
 */
static int orphan(struct rxzc *zc, unsigned int i, uint64_t now)
{
	struct rxzc_unit *u = zc->slot[i], *fresh = NULL;
	struct uskb_page *copy;
	int state = atomic_load_explicit(&u->state, memory_order_acquire);
	unsigned int order = 0;

	if ((state != UNIT_HELD && state != UNIT_OPEN) || !unit_tryget(u))
		return ORPHAN_NONE;
	/*
	 * Only what the frags can reach: a block handed over after 1 ms of
	 * light traffic holds a few frames, not 128 KiB. The descriptor keeps
	 * the slot's order; nothing reads past a frag's end.
	 */
	while (order < zc->order && ((size_t)USKB_PAGE_SIZE << order) < u->used)
		order++;
	copy = uskb_page_alloc(order);
	if (now && copy)
		fresh = unit_new(zc, i);
	if (!copy || (now && !fresh)) {
		if (copy)
			uskb_page_put(copy);
		uskb_zcopy_put(&u->ubuf);
		return ORPHAN_NOMEM;
	}
	memcpy(uskb_page_address(copy), u->page.addr, u->used);
	u->copy = copy;
	/* release: a reader that sees the new address sees the copied bytes */
	__atomic_store_n(&u->page.addr, uskb_page_address(copy), __ATOMIC_RELEASE);
	atomic_store_explicit(&u->ubuf.copied, true, memory_order_relaxed);
	/* with our reference held nobody completes it meanwhile */
	atomic_store_explicit(&u->state, UNIT_ORPHANED, memory_order_release);
	u->zc = NULL;
	if (fresh) {
		fresh->held_since = now;
		atomic_store_explicit(&fresh->state, UNIT_GRACE, memory_order_relaxed);
		zc->slot[i] = fresh;
	}
	zc->orphaned++;
	if (state == UNIT_OPEN)
		uskb_zcopy_put(&u->ubuf); /* the device's: it is done with the slot too */
	uskb_zcopy_put(&u->ubuf);	  /* ours: maybe the last, freeing u */
	return ORPHAN_DETACHED;
}

void __uskb_rxzc_patience(struct rxzc *zc, uint64_t now, unsigned int min_free, unsigned int next)
{
	unsigned int i, out = 0;

	for (i = 0; i < zc->n; i++)
		out += __uskb_rxzc_busy(zc, i);
	if (!out)
		return;
	for (i = 0; i < zc->n; i++) {
		struct rxzc_unit *u = zc->slot[i];
		int state = atomic_load_explicit(&u->state, memory_order_acquire);

		if (state == UNIT_GRACE && now - u->held_since >= GRACE_NS) {
			/* the copy has been in place long enough: the kernel may have the memory */
			zc->give_back(zc, i);
			atomic_store_explicit(&u->state, UNIT_FREE, memory_order_release);
			out--;
			continue;
		}
		if (state != UNIT_HELD)
			continue;
		/*
		 * In a ring filled in order, a slot held in the half the kernel
		 * fills next is copied out now, whatever the patience: when the
		 * kernel gets to it, it stops and drops until the slot is back.
		 * How many others are out does not matter there (min_free 0):
		 * copying them out early cost the time to serve the skbs that
		 * would have let them go.
		 */
		if (zc->n - out < min_free || now - u->held_since >= zc->patience_ns ||
		    (next != RXZC_NONE && (i + zc->n - next) % zc->n < zc->n / 2)) {
			int r = orphan(zc, i, now);

			if (r == ORPHAN_NOMEM)
				break;
			/* (a detached slot stays out for its grace) */
			if (r == ORPHAN_NONE)
				out--;
		}
	}
}

void __uskb_rxzc_destroy(struct rxzc *zc)
{
	unsigned int i;

	if (!zc)
		return;
	/* the kernel's memory goes away with the caller: every slot still out is copied */
	atomic_store_explicit(&zc->dead, true, memory_order_seq_cst);
	for (i = 0; i < zc->n; i++) {
		struct rxzc_unit *u = zc->slot[i];
		int state = atomic_load_explicit(&u->state, memory_order_acquire);

		if (state == UNIT_OPEN && atomic_load_explicit(&u->ubuf.refcnt, memory_order_acquire) == 1) {
			/* walked part-way, no skb on it: only the device's reference to drop */
			uskb_zcopy_put(&u->ubuf);
		} else {
			int r = orphan(zc, i, 0);

			if (r == ORPHAN_NOMEM)
				uskb_bug("rxzc_destroy", NULL,
					 "no memory to copy out a received block still in use");
			if (r == ORPHAN_DETACHED)
				continue; /* the skbs' now */
		}
		/* ours again once a completion elsewhere (if any) has finished with it */
		while ((state = atomic_load_explicit(&u->state, memory_order_acquire)) != UNIT_FREE &&
		       state != UNIT_GRACE)
			sched_yield();
		free(u);
	}
	free(zc->ret_next);
	free(zc);
}
