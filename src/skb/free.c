/* SPDX-License-Identifier: MIT */
/*
 * Freeing skbs: skb_release_data, the shell (or fclone pair) and head back
 * to the thread's caches, bulk free gathered per owner.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "skb/release.h"

/* skb_release_data(): drop this skb's data reference; the last one frees the head too. */
void __uskb_release_data(struct uskb_tls *t, struct uskb *skb)
{
	if (release_data_refs(skb))
		free_head(t, skb);
}

/* __kfree_skb() on @t: another thread's skb goes back to its owner. */
static inline __attribute__((always_inline)) void kfree_on(struct uskb_tls *t, struct uskb *skb)
{
	release_head_state(skb);
	/* unlikely on the fast path: another thread's skb goes back to its owner */
	if (uskb_unlikely(skb->alloc_cpu != t->id) && __uskb_defer_to_owner(t, skb))
		return;
	free_local(t, skb);
}

/*
 * __kfree_skb() on a thread whose state could not be made (memory ran
 * out): through the fallback slot, so freeing never fails.
 */
static __attribute__((noinline, cold)) void kfree_stateless(struct uskb *skb)
{
	struct uskb_tls *t = __uskb_tls_fallback_get();

	kfree_on(t, skb);
	__uskb_tls_fallback_put(t);
}

/* a clone's data reference was the last: release the data and the head, then the shell */
static __attribute__((noinline)) void release_last(struct uskb_tls *t, struct uskb *skb)
{
	release_data_last(skb);
	free_head(t, skb);
	uskb_count_add(&t->c[USKB_TC_SKB_FREE], 1);
	uskb_shell_put(t, skb);
}

/*
 * The common free of a clone: this thread's, no fclone, destructor or
 * page-pool mark. Its data reference goes (the last one takes the data
 * with it, out of line) and the shell back to the cache, with no call on
 * the way (none but in tail position: no frame). False with nothing done
 * for every other skb.
 */
static inline __attribute__((always_inline)) bool free_clone(struct uskb_tls *t,
							     struct uskb *skb)
{
	if (!skb->cloned || skb->fclone || skb->pp_recycle || skb->destructor ||
	    skb->alloc_cpu != t->id || !skb->head)
		return false;
	if (drop_dataref(skb)) {
		release_last(t, skb);
		return true;
	}
	uskb_count_add(&t->c[USKB_TC_SKB_FREE], 1);
	uskb_shell_put(t, skb);
	return true;
}

#define FREE_BULK_OWNERS 8

/*
 * uskb_free_bulk()'s part for another thread's skb, its head state
 * released: into @b's batch for its owner (@tag: see defer_tag()), or
 * freed here when it cannot be deferred. Returns the batch's index, or
 * FREE_BULK_OWNERS when it went to none.
 */
static inline __attribute__((always_inline)) unsigned int defer_gather(struct uskb_tls *t,
								       struct uskb_defer_batch *b,
								       unsigned int *nb,
								       struct uskb *skb,
								       unsigned int tag)
{
	struct uskb_tls *o = uskb_defer_owner(skb);
	unsigned int k;

	if (!o) {
		uskb_count_add(&t->c[USKB_TC_DIRECT], 1);
		free_local(t, skb);
		return FREE_BULK_OWNERS;
	}
	for (k = 0; k < *nb && b[k].o != o; k++)
		;
	if (k == *nb) {
		/* unlikely: more owners than batches: one at a time */
		if (k == FREE_BULK_OWNERS) {
			if (!__uskb_defer_to_owner(t, skb))
				free_local(t, skb);
			return FREE_BULK_OWNERS;
		}
		b[(*nb)++] = USKB_DEFER_BATCH(o);
	}
	uskb_defer_batch_add(&b[k], skb, tag);
	return k;
}

/*
 * An skb of a run (defer_run()): a sole user with no destructor and a
 * head, whose free path's word under @mask (shell_word_mask(): the owner,
 * the clean mark, the cloned, fclone, pp_recycle and zero-copy bits, the
 * class) is @want, the first's.
 */
static inline __attribute__((always_inline)) bool run_like(const struct uskb *skb, uint64_t want,
							   uint64_t mask)
{
	/* the users first: its acquire orders the word's read after earlier users' writes */
	return skb && atomic_load_explicit(&skb->users, memory_order_acquire) == 1 &&
	       (shell_word(skb) & mask) == want && !skb->destructor && skb->head;
}

/* a carrier's slot, stored through as the carrier's may_alias words are */
typedef struct uskb *uskb_slot_t __attribute__((may_alias));

/*
 * After an skb with a tag (defer_tag()) joined @b, for its owner: the skbs
 * from @i on that are like it (run_like()) join @b too, the last carrier's
 * room filled in a loop that does nothing else (uskb_defer_batch_add()'s
 * work, its count and room kept out of the loop). Returns the index of
 * the first that is not.
 */
static __attribute__((noinline)) unsigned int defer_run(struct uskb_defer_batch *b,
							 struct uskb **skbs, unsigned int i,
							 unsigned int n, uint64_t want)
{
	const uint64_t mask = shell_word_mask();

	for (;;) {
		unsigned int room = USKB_CARRY_MAX - b->last_n, k;
		uskb_slot_t *slot = uskb_carrier(b->last)->skb + b->last_n;
		struct uskb **src = skbs + i;

		if (room > n - i)
			room = n - i;
		for (k = 0; k < room; k++) {
			/* (a local: a store to slot[] may be to src[], as the compiler sees it) */
			struct uskb *skb = src[k];

			if (!run_like(skb, want, mask))
				break;
			atomic_store_explicit(&skb->users, 0, memory_order_relaxed);
			slot[k] = skb;
		}
		b->last_n += k;
		b->n += k;
		i += k;
		/* the carrier is full and the next skb like the others: it starts one */
		if (k < room || i == n || !run_like(skbs[i], want, mask))
			return i;
		uskb_defer_batch_add(b, skbs[i++], b->tag);
	}
}

/*
 * skb_unref() for skbs[*i] and the copies of it that follow it in @skbs
 * (one skb's references sent as a burst: pktgen's clone_skb, a device's
 * completions): one subtraction for the run, *i moved to its last. True
 * when the run held the last users.
 */
static inline __attribute__((always_inline)) bool unref_run(struct uskb *skb,
							    struct uskb **skbs, unsigned int *i,
							    unsigned int n)
{
	int old = atomic_load_explicit(&skb->users, memory_order_acquire);
	unsigned int k = 1;

	/* likely: a sole user, who skips the RMW (skb_unref()) */
	if (uskb_likely(old == 1))
		return true;
	while (*i + k < n && skbs[*i + k] == skb)
		k++;
	/* our k references are in the count: fewer is a free too many */
	if (uskb_unlikely(old < (int)k))
		uskb_bug("free", skb, "skb %p freed %u times in a burst with users=%d (double free?)",
			 (void *)skb, k, old);
	*i += k - 1;
	/* acq_rel: publish our writes; the last dropper must see everyone's */
	return atomic_fetch_sub_explicit(&skb->users, (int)k, memory_order_acq_rel) == (int)k;
}

static __attribute__((noinline)) void free_bulk(struct uskb **skbs, unsigned int n)
{
	struct uskb_tls *t = uskb_tls();
	struct uskb_defer_batch b[FREE_BULK_OWNERS], cur = USKB_DEFER_BATCH(NULL);
	unsigned int i, nb = 0, k, nplain = 0, last_k = 0;
	/*
	 * The owner of the last plain skb deferred into a batch, b[last_k],
	 * which lives in cur meanwhile (a local: the carriers' stores cannot
	 * reach it, and its words stay in registers); none: no int16_t's.
	 */
	int last_cpu = INT_MAX;
	bool cache_on;

	/* unlikely: no thread state (out of memory): one at a time through the fallback */
	if (uskb_unlikely(!t)) {
		for (i = 0; i < n; i++)
			if (skbs[i] && skb_unref(skbs[i]))
				kfree_stateless(skbs[i]);
		return;
	}
	cache_on = uskb_cfg(&__uskb_cfg.cache_size) != 0;
	/*
	 * The free path's line of every skb, for writing, before the first is
	 * read: skbs from another thread (a queue's consumer) miss on it, and
	 * the misses then overlap instead of stalling the loops below in turn.
	 */
#pragma GCC unroll 4
	for (i = 0; i < n; i++) { /* (a NULL's address too: a prefetch never faults) */
		uintptr_t at = (uintptr_t)skbs[i] + offsetof(struct uskb, destructor);

		__builtin_prefetch((void *)at, 1);
	}
	i = 0;
	/*
	 * likely: a burst of plain skbs of ours, each made a ready pair in a
	 * loop that does nothing else; the first other skb leaves it for the
	 * general loop below
	 */
	/* not under valgrind: its requests are left to the general loop */
	if (uskb_likely(cache_on && n && skbs[0] && !uskb_vg_on())) {
		unsigned int cls, rn, lim;
		struct uskb_ready *r;

		/* one class (the first skb's), its ready list in locals: nothing reloads */
		if (has_class(skbs[0])) {
			cls = skbs[0]->__kbuf_class;
			r = ready_of(t, cls);
			rn = r->n;
			lim = USKB_READY_SIZE - rn < n ? USKB_READY_SIZE - rn : n;
			for (; i < lim; i++) {
				struct uskb *skb = skbs[i];

				if (uskb_unlikely(!skb) ||
				    atomic_load_explicit(&skb->users, memory_order_acquire) != 1 ||
				    skb->__kbuf_class != cls || !plain_in(r, skb))
					break;
				ready_push(r, &rn, skb, cls, false);
			}
			r->n = rn;
			nplain = i;
		}
	}
	for (; i < n; i++) {
		struct uskb *skb = skbs[i];
		unsigned int cls;

		if (!skb || !unref_run(skb, skbs, &i, n))
			continue;
		/* the shell's tests once: they sort most skbs */
		cls = plain_shell(skb);
		if (uskb_likely(cls)) {
			/* likely in a queue's consumer: another thread's, no destructor to run */
			if (skb->alloc_cpu != t->id) {
				unsigned int tag = defer_tag(skb, cls);
				int cpu = skb->alloc_cpu;

				/*
				 * likely: the last one's owner, whose batch it joins (a plain
				 * shell leaves only the owner to tell where it goes)
				 */
				if (uskb_likely(cpu == last_cpu)) {
					uskb_defer_batch_add(&cur, skb, tag);
				} else {
					if (last_cpu != INT_MAX)
						b[last_k] = cur;
					k = defer_gather(t, b, &nb, skb, tag);
					if (k < FREE_BULK_OWNERS) {
						last_cpu = cpu;
						last_k = k;
						cur = b[k];
					}
				}
				/*
				 * likely: the skbs after it are like it; they follow in a
				 * run (out of line, on a copy: cur's address stays ours).
				 * The skb is in cur's carrier now; a carrier's words stop
				 * short of the free path's, so its word reads as it was.
				 */
				if (tag && cpu == last_cpu) {
					struct uskb_defer_batch run = cur;

					i = defer_run(&run, skbs, i + 1, n,
						      shell_word(skb) & shell_word_mask()) - 1;
					cur = run;
				}
				continue;
			}
			/* likely otherwise: ours, kept as a ready pair; counted once for the call */
			if (uskb_likely(plain_data(skb, cls) &&
					ready_room_push(ready_of(t, cls), skb, cache_on))) {
				nplain++;
				continue;
			}
		} else if (free_clone(t, skb)) {
			continue;
		}
		release_head_state(skb);
		if (uskb_likely(skb->alloc_cpu == t->id)) {
			free_local(t, skb);
		} else if (last_cpu != INT_MAX) { /* not plain: the owner releases it in full */
			b[last_k] = cur;
			defer_gather(t, b, &nb, skb, 0);
			cur = b[last_k];
		} else {
			defer_gather(t, b, &nb, skb, 0);
		}
	}
	if (last_cpu != INT_MAX)
		b[last_k] = cur;
	uskb_count_add(&t->c[USKB_TC_PAIR_FREE], nplain);
	for (k = 0; k < nb; k++)
		__uskb_defer_batch_push(t, &b[k]);
}

void uskb_free_bulk(struct uskb **skbs, unsigned int n)
{
	/* a burst of one (a device's single send): uskb_free(), without the burst's frame */
	if (n == 1)
		uskb_free(skbs[0]);
	else
		free_bulk(skbs, n);
}

/*
 * __kfree_skb() on this thread. Out of line: uskb_free() stays a short
 * function for the common drop of one user of a shared skb.
 */
static __attribute__((noinline)) void kfree_skb_here(struct uskb *skb)
{
	struct uskb_tls *t = uskb_tls();

	if (uskb_unlikely(!t)) {
		kfree_stateless(skb);
		return;
	}
	kfree_on(t, skb);
}

/*
 * uskb_free() of a clone (a tap's, a retransmit queue's): out of line, so
 * uskb_free() saves no registers.
 */
static __attribute__((noinline)) void free_cloned(struct uskb_tls *t, struct uskb *skb)
{
	if (!free_clone(t, skb))
		kfree_skb_here(skb);
}

void uskb_free(struct uskb *skb)
{
	struct uskb_tls *t;

	if (uskb_unlikely(!skb))
		return;
	if (!skb_unref(skb))
		return;
	t = __uskb_tls_ptr;
	if (uskb_likely(t)) {
		/* likely: a plain skb of this thread becomes a ready pair here, no call */
		if (free_plain(t, skb, uskb_cfg(&__uskb_cfg.cache_size) != 0)) {
			uskb_count_add(&t->c[USKB_TC_PAIR_FREE], 1);
			return;
		}
		if (skb->cloned) {
			free_cloned(t, skb);
			return;
		}
	}
	/* every other skb goes straight on */
	kfree_skb_here(skb);
}

void uskb_consume(struct uskb *skb)
{
	uskb_free(skb);
}

void uskb_free_partial(struct uskb *skb, bool head_stolen)
{
	if (head_stolen) {
		/* the head's page reference now belongs to a frag of another skb */
		struct uskb_tls *t = uskb_tls(), *fb = NULL;

		if (uskb_unlikely(!t))
			t = fb = __uskb_tls_fallback_get();
		release_head_state(skb);
		uskb_count_add(&t->c[USKB_TC_KBUF_FREE], 1);
		free_shell(t, skb);
		if (uskb_unlikely(fb))
			__uskb_tls_fallback_put(fb);
	} else {
		uskb_consume(skb);
	}
}

void uskb_free_list(struct uskb *segs)
{
	while (segs) {
		struct uskb *next = segs->next;

		uskb_free(segs);
		segs = next;
	}
}
