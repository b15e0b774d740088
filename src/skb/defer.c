/* SPDX-License-Identifier: MIT */
/*
 * Deferred free (skb_attempt_defer_free): an skb whose last user is another
 * thread goes back to its owner on a lock-free list the owner drains.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "skb/release.h"

/*
 * On a defer list an skb's prev (dead, as on any single list) points
 * DEFER_AHEAD skbs further down its chain: the owner's drain, a walk down
 * lines another thread last wrote, prefetches that far ahead instead of
 * waiting for each link in turn.
 */
#define DEFER_AHEAD 8
#define DEFER_LINKS (offsetof(struct uskb, prev) + sizeof(((struct uskb *)0)->prev))
_Static_assert(offsetof(struct uskb, ll_next) == 0 && offsetof(struct uskb, prev) == 8,
	       "the defer list's two words lead the shell");

/*
 * A deferred skb is dead to its last user: poison all but the links, which
 * the pusher and the owner still use.
 */
static inline void defer_poison(struct uskb *skb)
{
	uskb_mem_cached((char *)skb + DEFER_LINKS, sizeof(*skb) - DEFER_LINKS);
}

/*
 * Push a chain (linked through ll_next, NULL-terminated) onto its owner's
 * defer list: counted against defer_max first, as the kernel does, kicking
 * the owner when the count crosses half. False (nothing changed) when the
 * owner is gone or the list is full: the caller frees the skbs itself.
 */
static bool push_chain(struct uskb_tls *t, struct uskb_defer_batch *b)
{
	unsigned int max = uskb_cfg(&__uskb_cfg.defer_max);
	struct uskb *head, *skb, *back[DEFER_AHEAD];
	unsigned int i;
	long before;

	/* acquire: pairs with the release that made the slot alive */
	if (!atomic_load_explicit(&b->o->alive, memory_order_acquire))
		return false;
	/* relaxed: the count only bounds the list; the push publishes the skbs */
	before = atomic_fetch_add_explicit(&b->o->defer_count, b->n, memory_order_relaxed);
	if (before + b->n >= (long)max) {
		/* full: take the count back, so it keeps meaning "skbs on the list" */
		atomic_fetch_sub_explicit(&b->o->defer_count, b->n, memory_order_relaxed);
		return false;
	}
	for (skb = b->first, i = 0; skb; skb = skb->ll_next, i++) {
		/* a second free of a deferred skb must still see users == 0 */
		atomic_store_explicit(&skb->users, 0, memory_order_relaxed);
		defer_poison(skb);
		skb->prev = NULL;
		if (i >= DEFER_AHEAD)
			back[i % DEFER_AHEAD]->prev = skb;
		back[i % DEFER_AHEAD] = skb;
	}
	head = atomic_load_explicit(&b->o->defer_head, memory_order_relaxed);
	do {
		b->last->ll_next = head;
		/* release: the owner's exchange must see every skb of the chain */
	} while (!atomic_compare_exchange_weak_explicit(&b->o->defer_head, &head, b->first,
							memory_order_release,
							memory_order_relaxed));
	uskb_count_add(&t->c[USKB_TC_DEFERRED], b->n);
	/* unlikely: one kick per fill of half the cap */
	if (uskb_unlikely(before < (long)(max >> 1) && before + b->n >= (long)(max >> 1)))
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
	struct uskb_defer_batch b = { uskb_defer_owner(skb), skb, skb, 1 };

	skb->ll_next = NULL;
	if (b.o && push_chain(t, &b))
		return true;
	uskb_count_add(&t->c[USKB_TC_DIRECT], 1);
	return false;
}

unsigned int __uskb_defer_drain(struct uskb_tls *t, struct uskb_tls *o)
{
	struct uskb *skb, *next;
	unsigned int n = 0;

	if (!atomic_load_explicit(&o->defer_head, memory_order_relaxed))
		return 0;
	/* acquire: pairs with the pushers' release */
	skb = atomic_exchange_explicit(&o->defer_head, NULL, memory_order_acquire);
	for (; skb; skb = next, n++) {
		struct uskb *ahead = skb->prev;

		next = skb->ll_next;
		/* the shell's three lines, DEFER_AHEAD skbs on */
		if (ahead) {
			__builtin_prefetch(ahead, 1);
			__builtin_prefetch((char *)ahead + 64, 1);
			__builtin_prefetch((char *)ahead + 128, 1);
		}
		/* defined, not just usable: free_local reads what the skb still holds */
		uskb_mem_defined((char *)skb + DEFER_LINKS, sizeof(*skb) - DEFER_LINKS);
		free_local(t, skb);
	}
	/*
	 * Count down what we took (the kernel zeroes the count): pushers count
	 * before they push, so the count never drops below the list's length.
	 */
	atomic_fetch_sub_explicit(&o->defer_count, n, memory_order_relaxed);
	uskb_count_add(&t->c[USKB_TC_DRAINED], n);
	return n;
}

void __uskb_defer_batch_push(struct uskb_tls *t, struct uskb_defer_batch *b)
{
	struct uskb *skb, *next;

	if (push_chain(t, b))
		return;
	for (skb = b->first; skb; skb = next) {
		next = skb->ll_next;
		free_local(t, skb);
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
