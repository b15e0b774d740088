/* SPDX-License-Identifier: MIT */
/*
 * Deferred free (skb_attempt_defer_free): an skb whose last user is another
 * thread goes back to its owner on a lock-free list the owner drains.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "skb/release.h"

static inline struct uskb *list_first(uintptr_t w)
{
	return (struct uskb *)(w & (((uintptr_t)1 << USKB_DEFER_SHIFT) - 1));
}

static inline unsigned long list_count(uintptr_t w)
{
	return (unsigned long)(w >> USKB_DEFER_SHIFT);
}

/*
 * A deferred skb is dead to its last user (its users already 0,
 * uskb_defer_batch_add()): poison it all but a carrier's words in use,
 * which the owner reads.
 */
static inline void defer_hide(struct uskb *skb, size_t keep)
{
	uskb_mem_cached((char *)skb + keep, sizeof(*skb) - keep);
}

/* a carrier's words in use: the header and its pointers */
static inline size_t carrier_bytes(const struct uskb_carrier *c)
{
	return offsetof(struct uskb_carrier, skb) + c->n * sizeof(c->skb[0]);
}

/* Undo defer_hide() on a batch that could not be pushed after all. */
static void defer_unmark(struct uskb_defer_batch *b)
{
	struct uskb *c;
	unsigned long i;

	for (c = b->first; c; c = uskb_carrier(c)->next) {
		uskb_mem_defined(c, sizeof(*c));
		for (i = 0; i < uskb_carrier(c)->n; i++)
			uskb_mem_defined(uskb_carrier(c)->skb[i], sizeof(struct uskb));
	}
}

/*
 * Push a chain of carriers (linked through ll_next, NULL-terminated) onto
 * its owner's defer list in one compare-and-swap of the list's word, which
 * also counts it against defer_max, as the kernel does; kick the owner
 * when the count crosses half. False when the owner is gone or the list
 * full: the caller frees the skbs itself.
 */
static bool push_chain(struct uskb_tls *t, struct uskb_defer_batch *b)
{
	unsigned long max = uskb_cfg(&__uskb_cfg.defer_max), cnt, i;
	struct uskb_carrier *first = uskb_carrier(b->first);
	uintptr_t old;
	struct uskb *c;

	/* the last carrier's count, kept in the batch until now (also for a caller's fallback) */
	uskb_carrier(b->last)->n = b->last_n;
	/* acquire: pairs with the release that made the slot alive */
	if (!atomic_load_explicit(&b->o->alive, memory_order_acquire))
		return false;
	/* unlikely: a shell above 48 bits (never, on a 48-bit address space) */
	if (uskb_unlikely(list_first((uintptr_t)b->first) != b->first))
		return false;
	for (c = b->first; c; c = uskb_carrier(c)->next) {
		struct uskb_carrier *cc = uskb_carrier(c);

		/* (not a pass over the skbs but for the memory checks) */
		if (uskb_mem_checks())
			for (i = 0; i < cc->n; i++)
				defer_hide(cc->skb[i], 0);
		if (c != b->first) {
			if (first->nahead < USKB_CARRY_AHEAD - 1)
				first->ahead[first->nahead++] = c;
			defer_hide(c, carrier_bytes(cc));
		}
	}
	/* the last hint: the list's first carrier as it was, set with the link */
	first->nahead++;
	defer_hide(b->first, carrier_bytes(first));
	old = atomic_load_explicit(&b->o->defer_list, memory_order_relaxed);
	do {
		cnt = list_count(old);
		/* full: the caller frees the skbs, alive again */
		if (uskb_unlikely(cnt + (unsigned long)b->n >= max)) {
			/* a lost race may have linked the chain to the list */
			uskb_carrier(b->last)->next = NULL;
			defer_unmark(b);
			return false;
		}
		uskb_carrier(b->last)->next = list_first(old);
		first->ahead[first->nahead - 1] = list_first(old);
		/* release: the owner's exchange must see every skb of the chain */
	} while (!atomic_compare_exchange_weak_explicit(
		&b->o->defer_list, &old,
		(uintptr_t)b->first | (uintptr_t)(cnt + (unsigned long)b->n) << USKB_DEFER_SHIFT,
		memory_order_release, memory_order_relaxed));
	uskb_count_add(&t->c[USKB_TC_DEFERRED], b->n);
	/* unlikely: one kick per fill of half the cap */
	if (uskb_unlikely(cnt < (max >> 1) && cnt + (unsigned long)b->n >= (max >> 1)))
		__uskb_defer_kick(b->o);
	return true;
}

/*
 * skb_attempt_defer_free() for an skb whose last user is gone and whose
 * owner is another thread. False when it must be freed here instead
 * (fclone, zero-copy, no live owner, cap).
 */
bool __uskb_defer_to_owner(struct uskb_tls *t, struct uskb *skb)
{
	struct uskb_defer_batch b = USKB_DEFER_BATCH(uskb_defer_owner(skb));

	if (b.o) {
		uskb_defer_batch_add(&b, skb, 0);
		if (push_chain(t, &b))
			return true;
	}
	uskb_count_add(&t->c[USKB_TC_DIRECT], 1);
	return false;
}

/*
 * Walk carriers from *@c into @cs (at *@nc, which grows) while their skbs
 * come to at most @room; *@c moves past them. With @pre, fetch ahead what
 * the release will read: the carriers each names ahead, and, for
 * writing, the last line of every skb (written last by another thread; a
 * tagged skb's next allocation reads head there). How many skbs went in,
 * carriers included.
 */
static unsigned int walk(struct uskb **c, struct uskb **cs, unsigned int *nc, unsigned int room,
			 bool pre)
{
	unsigned int m = 0, j, n;

	while (*c) {
		struct uskb_carrier *cc = uskb_carrier(*c);

		uskb_mem_defined(*c, offsetof(struct uskb_carrier, skb));
		/* (n in a local: a store to cs[] might be to a carrier, as the compiler sees it) */
		n = cc->n;
		if (m + n + 1 > room)
			break;
		/* defined, not just usable: the release reads what the skb holds */
		uskb_mem_defined(*c, sizeof(**c));
		if (pre) {
			/* the carrier's second line: its pointers go on there; its free line */
			__builtin_prefetch((char *)*c + 64);
			__builtin_prefetch(&(*c)->destructor, 1);
			for (j = 0; j < cc->nahead; j++)
				if (cc->ahead[j]) {
					__builtin_prefetch(cc->ahead[j]);
					__builtin_prefetch((char *)cc->ahead[j] + 64);
				}
			/* likely: a full carrier, its ten in a loop unrolled whole */
			if (n == USKB_CARRY_MAX)
#pragma GCC unroll 10
				for (j = 0; j < USKB_CARRY_MAX; j++)
					__builtin_prefetch(&cc->skb[j]->destructor, 1);
			else
				for (j = 0; j < n; j++)
					__builtin_prefetch(&cc->skb[j]->destructor, 1);
		}
		if (uskb_mem_checks())
			for (j = 0; j < n; j++)
				uskb_mem_defined(cc->skb[j], sizeof(struct uskb));
		cs[(*nc)++] = *c;
		m += n + 1;
		*c = cc->next;
	}
	return m;
}

/*
 * Free the skbs of @nc walked carriers @cs, and the carriers, on this
 * thread (not counted as drained or direct: the callers do); how many. A
 * tagged carrier's skbs become ready pairs of its class, unread, while
 * the pairs have room, and the carrier after them (its words hold their
 * pointers). With @pre (an owner's
 * drain), fetch every untagged skb's shared info first (the walk fetched
 * the lines that locate them), and trust users = 0, stored when it joined
 * its batch (uskb_defer_batch_add()). Without (a push that failed), store
 * it again.
 */
static unsigned int release_carriers(struct uskb_tls *t, struct uskb **cs, unsigned int nc,
				     bool pre)
{
	bool cache_on = uskb_cfg(&__uskb_cfg.cache_size) != 0, vg = uskb_vg_on();
	unsigned int i, j, n, m = 0, kept = 0;

	if (pre)
		for (i = 0; i < nc; i++) {
			struct uskb_carrier *cc = uskb_carrier(cs[i]);

			if (uskb_unlikely(!cc->tag)) {
				for (j = 0; j < cc->n; j++)
					__builtin_prefetch(cc->skb[j]->head + cc->skb[j]->end, 1);
				__builtin_prefetch(cs[i]->head + cs[i]->end, 1);
			}
		}
	for (i = 0; i < nc; i++) {
		struct uskb *c = cs[i];
		struct uskb_carrier *cc = uskb_carrier(c);
		unsigned int cls = cc->tag;

		n = cc->n;
		m += n + 1;
		j = 0;
		/* likely: plain and clean, users already 0 (uskb_defer_batch_add) */
		if (uskb_likely(cls && cache_on)) {
			struct uskb_ready *r = &t->ready[cls - 1];
			unsigned int rn = r->n, k = USKB_READY_SIZE - rn;

			if (k > n)
				k = n;
			if (pre && !uskb_mem_checks() && USKB_READY_SIZE - rn >= USKB_CARRY_MAX) {
				/*
				 * likely: the pointers as they are, nothing else to do a skb;
				 * all the slots in a few wide moves (those past n go unused)
				 */
				memcpy(&r->skb[rn], cc->skb, sizeof(cc->skb));
				rn += k;
				j = k;
			} else if (pre) {
				for (; j < k; j++)
					ready_keep(r, &rn, cc->skb[j], cls, vg);
			} else {
				for (; j < k; j++)
					ready_push(r, &rn, cc->skb[j], cls, vg);
			}
			kept += k;
			/* the carrier last: its words were read above */
			if (j == n && rn < USKB_READY_SIZE) {
				if (pre)
					ready_keep(r, &rn, c, cls, vg);
				else
					ready_push(r, &rn, c, cls, vg);
				r->n = rn;
				kept++;
				continue;
			}
			r->n = rn;
		}
		/* untagged, or no room left: one at a time, the carrier last */
		for (; j < n; j++)
			free_local(t, cc->skb[j]);
		free_local(t, c);
	}
	uskb_count_add(&t->c[USKB_TC_PAIR_FREE], kept);
	return m;
}

/* count skbs @t took off a defer list: @t alone writes the count, so no atomic add */
static inline void taken_add(struct uskb_tls *t, long d)
{
	atomic_store_explicit(&t->defer_taken,
			      atomic_load_explicit(&t->defer_taken, memory_order_relaxed) + d,
			      memory_order_relaxed);
}

/* Free the skbs of @nc carriers @cs that @t took off a defer list, and count them drained. */
static unsigned int drain_carriers(struct uskb_tls *t, struct uskb **cs, unsigned int nc)
{
	unsigned int m = release_carriers(t, cs, nc, true);

	taken_add(t, -(long)m);
	uskb_count_add(&t->c[USKB_TC_DRAINED], m);
	return m;
}

/* @t's stash freed, if it holds any: how many skbs */
static unsigned int release_stash(struct uskb_tls *t)
{
	unsigned int nc = t->nstash;

	if (!nc)
		return 0;
	t->nstash = 0;
	t->nstash_skbs = 0;
	return drain_carriers(t, t->stash, nc);
}

/* take @o's defer list, its count moved to @t's taken count */
static struct uskb *take_list(struct uskb_tls *t, struct uskb_tls *o)
{
	uintptr_t w;

	if (!uskb_defer_waiting(o))
		return NULL;
	/* acquire: pairs with the pushers' release */
	w = atomic_exchange_explicit(&o->defer_list, 0, memory_order_acquire);
	/* (a stats reader between the two may miss these skbs: a snapshot) */
	taken_add(t, (long)list_count(w));
	return list_first(w);
}

unsigned int __uskb_defer_drain(struct uskb_tls *t, struct uskb_tls *o)
{
	struct uskb *c;
	unsigned int n, nc;
	bool took = o != t;

	/* unlikely: called back from a release (a destructor) of a drain that runs */
	if (uskb_unlikely(t->draining))
		return 0;
	t->draining = true;
	/* the drain ahead's skbs first: the stash is then the walk's */
	n = release_stash(t);
	if (o == t) {
		c = t->taken;
		t->taken = NULL;
	} else {
		c = take_list(t, o);
	}
	/* our own list once more after what was taken ahead: one exchange, a bounded drain */
	for (;;) {
		if (!c && !took) {
			c = take_list(t, t);
			took = true;
		}
		if (!c)
			break;
		nc = 0;
		walk(&c, t->stash, &nc, USKB_DEFER_STASH, true);
		n += drain_carriers(t, t->stash, nc);
	}
	t->draining = false;
	return n;
}

/*
 * Free the stash's first carriers, at most @most of them and no more than
 * a ready list's worth of skbs (but at least one carrier): the rest stay
 * stashed for the next call. How many skbs.
 */
static unsigned int release_stash_part(struct uskb_tls *t, unsigned int most)
{
	unsigned int k = 0, m = 0, c;

	for (; k < t->nstash && k < most; k++) {
		c = uskb_carrier(t->stash[k])->n + 1;
		if (k && m + c > USKB_READY_SIZE)
			break;
		m += c;
	}
	if (!k)
		return 0;
	m = drain_carriers(t, t->stash, k);
	t->nstash_skbs = (uint16_t)(t->nstash_skbs - m);
	t->nstash -= k;
	memmove(t->stash, t->stash + k, t->nstash * sizeof(t->stash[0]));
	return m;
}

/*
 * The drain ahead, one step per call, a caches' run apart: free the
 * stash's first carriers, a ready list's worth (their lines fetched a
 * call or more ago); walk on down the list taken before into the stash
 * while it has room (256 skbs in all), fetching their lines; once that
 * list is walked, take the next and fetch its first carrier. The
 * misses on lines other threads wrote then overlap the allocations
 * between drains instead of stalling them. A step frees no more than the
 * ready list holds: the pairs past it would be split into shells and
 * heads, whose next allocations write the heads' shared info again and
 * keep the bulk path off (uskb_alloc_bulk() takes cached shells, one at a
 * time, before it drains again).
 *
 * When the stash was empty (the first call, or after a gap), the caller
 * still needs skbs now: the list is walked at once (up to 256 skbs of
 * it) and half those carriers freed (a ready list's worth at most); the
 * rest, their lines on their way, stays in the stash for the next call,
 * which gets the steps going.
 */
unsigned int __uskb_defer_drain_ahead(struct uskb_tls *t)
{
	unsigned int n;

	/* unlikely: called back from a release (a destructor) of a drain that runs */
	if (uskb_unlikely(t->draining))
		return 0;
	t->draining = true;
	n = release_stash_part(t, UINT_MAX);
	/* the stash holds at most USKB_DEFER_STASH skbs (so as many carriers), fetched ahead */
	if (t->taken)
		t->nstash_skbs = (uint16_t)(t->nstash_skbs +
					    walk(&t->taken, t->stash, &t->nstash,
						 USKB_DEFER_STASH - t->nstash_skbs, true));
	if (!t->taken && (t->taken = take_list(t, t))) {
		__builtin_prefetch(t->taken);
		__builtin_prefetch((char *)t->taken + 64);
	}
	if (!n) {
		if (!t->nstash && t->taken)
			t->nstash_skbs = (uint16_t)walk(&t->taken, t->stash, &t->nstash,
							USKB_DEFER_STASH, true);
		n = release_stash_part(t, (t->nstash + 1) / 2);
	}
	t->draining = false;
	return n;
}

void __uskb_defer_batch_push(struct uskb_tls *t, struct uskb_defer_batch *b)
{
	struct uskb *cs[USKB_CARRY_MAX + 1], *c = b->first;
	unsigned int nc;

	if (push_chain(t, b))
		return;
	/* a few carriers at a time (no more than their skbs): these are no owner's drain */
	while (c) {
		nc = 0;
		walk(&c, cs, &nc, USKB_CARRY_MAX + 1, false);
		release_carriers(t, cs, nc, false);
	}
	uskb_count_add(&t->c[USKB_TC_DIRECT], b->n);
}

void __uskb_defer_kick(struct uskb_tls *o)
{
	int fd = atomic_load(&o->efd);
	uint64_t one = 1;

	/* a failed write means the counter is already huge: the owner is awake anyway */
	if (fd >= 0 && write(fd, &one, sizeof(one)) < 0)
		return;
}

void uskb_attempt_defer_free(struct uskb *skb)
{
	uskb_consume(skb);
}
