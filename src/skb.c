/* SPDX-License-Identifier: MIT */
/*
 * The skb layer: allocation and free, clone / copy / expand / pull / trim /
 * split / coalesce, and the byte walker behind copy_bits, store_bits and
 * skb_checksum.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct uskb_fclones {
	struct uskb skb1;
	struct uskb skb2;
	atomic_int fclone_ref;
};

/* ---------------- allocation ---------------- */

/*
 * Zero a small fixed-size prefix with plain 16-byte stores: for ~150 bytes
 * "rep stosb" (what memset becomes) costs several ns to start, and its
 * stores do not forward to the loads that follow.
 */
typedef uint64_t uskb_v16 __attribute__((vector_size(16), aligned(8), may_alias));

static inline __attribute__((always_inline)) void zero_prefix(void *p, size_t n)
{
	uskb_v16 *v = p, z = { 0, 0 };

	/* n is a constant: these fold to n / 16 plain stores, never a memset call */
#define Z16(i)                                                                 \
	if (n >= (i + 1) * 16)                                                 \
		v[i] = z;
	Z16(0) Z16(1) Z16(2) Z16(3) Z16(4) Z16(5) Z16(6) Z16(7) Z16(8) Z16(9)
#undef Z16
	_Static_assert(offsetof(struct uskb, tail) <= 160, "zero_prefix covers 160 bytes");
	if (n & 8)
		*(uint64_t *)((char *)p + (n & ~(size_t)15)) = 0;
}

_Static_assert(offsetof(struct uskb, tail) % 8 == 0, "zero_prefix works in 8s");
_Static_assert(offsetof(struct uskb_shared_info, dataref) % 8 == 0, "zero_prefix works in 8s");

static void init_shinfo(struct uskb_shared_info *shinfo)
{
	zero_prefix(shinfo, offsetof(struct uskb_shared_info, dataref));
	atomic_init(&shinfo->dataref, 1);
	shinfo->xdp_frags_size = 0;
	shinfo->destructor_arg = NULL;
}

/* __build_skb_around(): set up a zeroed shell around head @data. */
static inline __attribute__((always_inline)) void
build_around(struct uskb *skb, unsigned char *data, unsigned int size, int owner,
	     bool head_frag, unsigned int head_class)
{
	zero_prefix(skb, offsetof(struct uskb, tail));
	skb->truesize = USKB_TRUESIZE(size);
	atomic_init(&skb->users, 1);
	skb->head = data;
	skb->data = data;
	skb->tail = 0;
	skb->end = size;
	/*
	 * The flag byte was just zeroed by 16-byte stores: a bitfield
	 * read-modify-write now would stall on store forwarding, so only
	 * set the bit when there is one to set.
	 */
	if (head_frag)
		skb->head_frag = 1;
	skb->head_class = (uint8_t)head_class;
	skb->mac_header = USKB_HEADER_UNSET;
	skb->transport_header = USKB_HEADER_UNSET;
	skb->alloc_cpu = owner;
	init_shinfo(uskb_shinfo(skb));
}

static struct uskb *alloc_fclone_shell(struct uskb_tls *t)
{
	struct uskb_fclones *fc = aligned_alloc(USKB_CACHE_BYTES,
						 USKB_DATA_ALIGN(sizeof(*fc)));

	if (!fc)
		return NULL;
	fc->skb2.fclone = USKB_FCLONE_CLONE;
	atomic_init(&fc->fclone_ref, 1);
	uskb_mem_cached(&fc->skb2, sizeof(fc->skb2));
	uskb_tcount_add(&t->c.v[USKB_TC_FCLONE_ALLOC], 1);
	uskb_tcount_add(&t->c.v[USKB_TC_FC_SKB_ALLOC], 1);
	return &fc->skb1;
}

struct uskb *__uskb_alloc(unsigned int size, unsigned int flags, int node)
{
	struct uskb_tls *t = uskb_tls();
	unsigned int total;
	unsigned char *data;
	struct uskb *skb;
	bool head_frag;

	/* unlikely: sizes near 4 GiB would overflow the head arithmetic */
	if (uskb_unlikely(size > (1u << 30))) {
		errno = EINVAL;
		return NULL;
	}
	size = USKB_DATA_ALIGN(size);
	if (uskb_should_fail()) {
		errno = ENOMEM;
		return NULL;
	}
	if (flags & USKB_ALLOC_FCLONE)
		skb = alloc_fclone_shell(t);
	else
		skb = uskb_shell_get(t);
	if (uskb_unlikely(!skb)) {
		errno = ENOMEM;
		return NULL;
	}
	total = size + USKB_SHINFO_SIZE;
	/* page_frag heads as __netdev_alloc_skb: only while they fit a block */
	head_frag = (flags & USKB_ALLOC_HEAD_FRAG) && node == USKB_NO_NODE &&
		    total <= (USKB_PAGE_SIZE << USKB_PAGE_FRAG_ORDER);
	if (head_frag) {
		data = __uskb_frag_head(t, total);
	} else {
		data = uskb_kmalloc_head(t, &total, node);
		size = USKB_WITH_OVERHEAD(total); /* the whole object is usable */
	}
	if (uskb_unlikely(!data)) {
		int err = errno;

		if (flags & USKB_ALLOC_FCLONE) {
			free(skb);
			uskb_tcount_add(&t->c.v[USKB_TC_FCLONE_FREE], 1);
			uskb_tcount_add(&t->c.v[USKB_TC_FC_SKB_FREE], 1);
		} else {
			uskb_shell_put(t, skb);
		}
		errno = err;
		return NULL;
	}
	build_around(skb, data, size, t->id, head_frag,
		     head_frag ? 0 : (unsigned int)(uskb_head_class(total) + 1));
	if (flags & USKB_ALLOC_FCLONE)
		skb->fclone = USKB_FCLONE_ORIG;
	uskb_tcount_add(&t->c.v[USKB_TC_SKB_ALLOC], 1);
	return skb;
}

/*
 * The common allocation: a plain shell and a head of size class @c, both
 * from this thread's caches (counters are the caller's). NULL if memory
 * ran out.
 */
static inline __attribute__((always_inline)) struct uskb *alloc_in_class(struct uskb_tls *t,
									  int c)
{
	struct uskb_head_cache *hc = &t->heads[c];
	struct uskb_ready *r = &t->ready[c];
	unsigned int csz = uskb_head_class_size(c);
	struct uskb *skb;
	unsigned char *data;

	if (uskb_should_fail())
		return NULL;

	/*
	 * unlikely: no pair ready and the shell cache is empty: take back what
	 * other threads deferred to us first (it refills the pairs without a
	 * lock). Only here, so the fast path never reads the list's cache line.
	 */
	if (uskb_unlikely(!r->n && !t->nshell) &&
	    atomic_load_explicit(&t->defer_head, memory_order_relaxed))
		__uskb_defer_drain(t, t);
	/* likely: a pair freed on this thread, shell and head together */
	if (uskb_likely(r->n)) {
		skb = r->skb[--r->n];
		uskb_mem_handed_out(skb, sizeof(*skb));
		data = skb->head;
		goto init;
	}
	/* caches refill in bulk */
	skb = uskb_likely(t->nshell) ? t->shells[--t->nshell] : __uskb_shell_refill(t);
	if (uskb_unlikely(!skb))
		return NULL;
	data = uskb_likely(hc->n) ? hc->obj[--hc->n] : __uskb_head_refill(t, c);
	if (uskb_unlikely(!data)) {
		uskb_mem_handed_out(skb, sizeof(*skb));
		uskb_shell_put(t, skb);
		return NULL;
	}
	uskb_mem_handed_out(skb, sizeof(*skb));
init:
	uskb_mem_handed_out(data, csz);
	build_around(skb, data, USKB_WITH_OVERHEAD(csz), t->id, false, (unsigned int)c + 1);
	return skb;
}

struct uskb *uskb_alloc(unsigned int size)
{
	struct uskb_tls *t = uskb_tls();
	struct uskb *skb;
	int c;

	/* unlikely: oversized requests and heads beyond the classes take the general path */
	if (uskb_unlikely(size > (1u << 30)))
		return __uskb_alloc(size, 0, USKB_NO_NODE);
	c = uskb_head_class(USKB_DATA_ALIGN(size) + USKB_SHINFO_SIZE);
	if (uskb_unlikely(c < 0))
		return __uskb_alloc(size, 0, USKB_NO_NODE);
	skb = alloc_in_class(t, c);
	if (uskb_unlikely(!skb)) {
		errno = ENOMEM;
		return NULL;
	}
	uskb_tcount_add(&t->c.v[USKB_TC_SKB_ALLOC], 1);
	uskb_tcount_add(&t->c.v[USKB_TC_HEAD_ALLOC], 1);
	return skb;
}

struct uskb *uskb_dev_alloc(unsigned int length)
{
	struct uskb *skb;

	if (length > (1u << 30)) {
		errno = EINVAL;
		return NULL;
	}
	skb = __uskb_alloc(length + USKB_NET_SKB_PAD, USKB_ALLOC_HEAD_FRAG, USKB_NO_NODE);

	if (skb)
		uskb_reserve(skb, USKB_NET_SKB_PAD);
	return skb;
}

/* ---------------- free ---------------- */

/* skb_unref(): true when the caller dropped the last user reference. */
static inline bool skb_unref(struct uskb *skb)
{
	/* acquire: a sole owner must see every write made by earlier users */
	int old = atomic_load_explicit(&skb->users, memory_order_acquire);

	/* likely: most skbs have one user, who may skip the atomic RMW */
	if (uskb_likely(old == 1))
		return true;
	if (uskb_unlikely(old <= 0))
		uskb_bug("free", skb, "skb %p freed with users=%d (double free?)",
			 (void *)skb, old);
	/* acq_rel: publish our writes; the last dropper must see everyone's */
	return atomic_fetch_sub_explicit(&skb->users, 1, memory_order_acq_rel) == 1;
}

static inline __attribute__((always_inline)) void free_head(struct uskb_tls *t, struct uskb *skb)
{
	uskb_head_free(t, skb->head, skb->head_class);
}

/*
 * skb_release_data(): drop this skb's reference to the data; the last one
 * releases frags, frag_list and the head.
 */
/*
 * skb_release_data() without the head: drop this skb's data reference;
 * on the last one release frags and frag_list and return true — the head
 * is then the caller's to free.
 */
static inline __attribute__((always_inline)) bool release_data_refs(struct uskb *skb)
{
	struct uskb_shared_info *shinfo = uskb_shinfo(skb);
	int i;

	skb->pp_recycle = 0;
	if (skb->cloned) {
		unsigned int d = skb->nohdr ? (1u << USKB_DATAREF_SHIFT) + 1 : 1;

		/* acq_rel: the last reference must see all others' frag writes */
		if (atomic_fetch_sub_explicit(&shinfo->dataref, d, memory_order_acq_rel) != d)
			return false;
	}
	if (!(shinfo->flags & USKB_SKBFL_MANAGED_FRAG_REFS))
		for (i = 0; i < shinfo->nr_frags; i++)
			uskb_page_put(shinfo->frags[i].page);
	/*
	 * unlikely: user memory in the frags. Its owner hears now, exactly
	 * once — after the frags let go (the kernel completes first; here the
	 * completion frees the descriptors the frags point to).
	 */
	if (uskb_unlikely(shinfo->flags & USKB_SKBFL_ZEROCOPY_ENABLE))
		uskb_zcopy_clear(skb, true);
	if (shinfo->frag_list)
		uskb_free_list(shinfo->frag_list);
	return true;
}

/* skb_release_data(). */
static inline void release_data(struct uskb_tls *t, struct uskb *skb)
{
	if (release_data_refs(skb))
		free_head(t, skb);
}

/* skb_release_head_state(). */
static void release_head_state(struct uskb *skb)
{
	if (skb->destructor)
		skb->destructor(skb);
}

/* kfree_skbmem(): return the shell (or the fclone pair). */
static inline __attribute__((always_inline)) void free_shell(struct uskb_tls *t, struct uskb *skb)
{
	struct uskb_fclones *fc;

	uskb_tcount_add(&t->c.v[USKB_TC_SKB_FREE], 1);
	switch (skb->fclone) {
	case USKB_FCLONE_UNAVAILABLE:
		uskb_shell_put(t, skb);
		return;
	case USKB_FCLONE_ORIG:
		uskb_tcount_add(&t->c.v[USKB_TC_FC_SKB_FREE], 1);
		fc = (struct uskb_fclones *)skb;
		/* acquire via acq_rel: the pair is freed only after both halves are done */
		atomic_store_explicit(&skb->users, 0, memory_order_relaxed);
		if (atomic_load_explicit(&fc->fclone_ref, memory_order_acquire) == 1)
			break;
		if (atomic_fetch_sub_explicit(&fc->fclone_ref, 1, memory_order_acq_rel) == 1)
			break;
		return;
	default: /* USKB_FCLONE_CLONE */
		uskb_tcount_add(&t->c.v[USKB_TC_FC_SKB_FREE], 1);
		fc = (struct uskb_fclones *)((char *)skb - offsetof(struct uskb_fclones, skb2));
		atomic_store_explicit(&skb->users, 0, memory_order_relaxed);
		uskb_mem_cached(skb, sizeof(*skb));
		if (atomic_fetch_sub_explicit(&fc->fclone_ref, 1, memory_order_acq_rel) == 1)
			break;
		return;
	}
	uskb_tcount_add(&t->c.v[USKB_TC_FCLONE_FREE], 1);
	uskb_mem_handed_out(fc, sizeof(*fc));
	free(fc);
}

/* Release the data and the shell on this thread (the tail of __kfree_skb). */
static inline __attribute__((always_inline)) void free_local(struct uskb_tls *t,
							     struct uskb *skb)
{
	if (uskb_likely(skb->head) && release_data_refs(skb)) {
		unsigned int cls = skb->head_class;

		/* likely: a plain skb with a class head: keep the pair for the next alloc */
		if (uskb_likely(cls && skb->fclone == USKB_FCLONE_UNAVAILABLE &&
				t->ready[cls - 1].n < USKB_READY_SIZE &&
				uskb_cfg(&__uskb_cfg.cache_size))) {
			struct uskb_ready *r = &t->ready[cls - 1];

			uskb_tcount_add(&t->c.v[USKB_TC_HEAD_FREE], 1);
			uskb_tcount_add(&t->c.v[USKB_TC_SKB_FREE], 1);
			atomic_store_explicit(&skb->users, 0, memory_order_relaxed);
			uskb_mem_cached(skb->head, uskb_head_class_size((int)cls - 1));
			uskb_mem_cached(skb, sizeof(*skb));
			r->skb[r->n++] = skb;
			return;
		}
		free_head(t, skb);
	}
	free_shell(t, skb);
}

/*
 * A deferred skb is dead to its last user: poison all but the link, which
 * the pusher and the owner still use.
 */
static inline void defer_poison(struct uskb *skb)
{
	uskb_mem_cached((char *)skb + sizeof(skb->ll_next), sizeof(*skb) - sizeof(skb->ll_next));
}

/*
 * skb_zcopy(): the shared info carries a zero-copy ubuf. The skb's own hint
 * answers without touching the shared info (another cache line, written by
 * the owner) for the ordinary skb.
 */
static inline bool is_zcopy(const struct uskb *skb)
{
	return skb->zcopy_hint && skb->head &&
	       (uskb_shinfo(skb)->flags & USKB_SKBFL_ZEROCOPY_ENABLE);
}

/*
 * skb_attempt_defer_free() for an skb whose last user is gone and whose
 * owner is another thread: push it onto the owner's defer list. False when
 * it must be freed here instead (fclone, zero-copy, no live owner, cap).
 */
/* A chain of deferred skbs for one owner, pushed with one exchange. */
struct defer_batch {
	struct uskb_tls *o;
	struct uskb *first, *last;
	long n;
};

/*
 * Push a chain (linked through ll_next, NULL-terminated) onto its owner's
 * defer list: counted against defer_max first, as the kernel does, kicking
 * the owner when the count crosses half. False (nothing changed) when the
 * owner is gone or the list is full: the caller frees the skbs itself.
 */
static bool push_chain(struct uskb_tls *t, struct defer_batch *b)
{
	unsigned int max = uskb_cfg(&__uskb_cfg.defer_max);
	struct uskb *head, *skb;
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
	for (skb = b->first; skb; skb = skb->ll_next) {
		/* a second free of a deferred skb must still see users == 0 */
		atomic_store_explicit(&skb->users, 0, memory_order_relaxed);
		defer_poison(skb);
	}
	head = atomic_load_explicit(&b->o->defer_head, memory_order_relaxed);
	do {
		b->last->ll_next = head;
		/* release: the owner's exchange must see every skb of the chain */
	} while (!atomic_compare_exchange_weak_explicit(&b->o->defer_head, &head, b->first,
							memory_order_release,
							memory_order_relaxed));
	uskb_tcount_add(&t->c.v[USKB_TC_DEFERRED], b->n);
	/* unlikely: one kick per fill of half the cap */
	if (uskb_unlikely(before < (long)(max >> 1) && before + b->n >= (long)(max >> 1)))
		__uskb_defer_kick(b->o);
	return true;
}

/* The owner to defer @skb to, or NULL when it must be freed here. */
static struct uskb_tls *defer_owner(const struct uskb *skb)
{
	if (skb->fclone != USKB_FCLONE_UNAVAILABLE || !uskb_cfg(&__uskb_cfg.defer_max) ||
	    is_zcopy(skb) || skb->alloc_cpu < 0 || skb->alloc_cpu >= USKB_MAX_OWNERS)
		return NULL;
	return __uskb_owner_tab[skb->alloc_cpu];
}

/*
 * skb_attempt_defer_free() for an skb whose last user is gone and whose
 * owner is another thread. False when it must be freed here instead
 * (fclone, zero-copy, no live owner, cap).
 */
static bool defer_to_owner(struct uskb_tls *t, struct uskb *skb)
{
	struct defer_batch b = { defer_owner(skb), skb, skb, 1 };

	skb->ll_next = NULL;
	if (b.o && push_chain(t, &b))
		return true;
	uskb_tcount_add(&t->c.v[USKB_TC_DIRECT], 1);
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
		next = skb->ll_next;
		uskb_mem_handed_out((char *)skb + sizeof(skb->ll_next),
				    sizeof(*skb) - sizeof(skb->ll_next));
		free_local(t, skb);
	}
	/*
	 * Count down what we took (the kernel zeroes the count): pushers count
	 * before they push, so the count never drops below the list's length.
	 */
	atomic_fetch_sub_explicit(&o->defer_count, n, memory_order_relaxed);
	uskb_tcount_add(&t->c.v[USKB_TC_DRAINED], n);
	return n;
}

/* __kfree_skb(). */
static void __uskb_free(struct uskb *skb)
{
	struct uskb_tls *t = uskb_tls();

	release_head_state(skb);
	/* unlikely on the fast path: another thread's skb goes back to its owner */
	if (uskb_unlikely(skb->alloc_cpu != t->id) && defer_to_owner(t, skb))
		return;
	free_local(t, skb);
}

void uskb_attempt_defer_free(struct uskb *skb)
{
	uskb_consume(skb);
}

int uskb_alloc_bulk(struct uskb **skbs, unsigned int n, unsigned int size)
{
	struct uskb_tls *t = uskb_tls();
	unsigned int i;
	int c;

	if (uskb_unlikely(size > (1u << 30)))
		return -EINVAL;
	c = uskb_head_class(USKB_DATA_ALIGN(size) + USKB_SHINFO_SIZE);
	/* unlikely: heads too big for a class go one by one */
	if (uskb_unlikely(c < 0)) {
		for (i = 0; i < n; i++) {
			skbs[i] = uskb_alloc(size);
			if (uskb_unlikely(!skbs[i]))
				goto fail;
		}
		return 0;
	}
	/* one class, one thread: the per-skb work is two pops and the init */
	for (i = 0; i < n; i++) {
		skbs[i] = alloc_in_class(t, c);
		if (uskb_unlikely(!skbs[i]))
			goto fail_counted;
	}
	uskb_tcount_add(&t->c.v[USKB_TC_SKB_ALLOC], n);
	uskb_tcount_add(&t->c.v[USKB_TC_HEAD_ALLOC], n);
	return 0;
fail_counted:
	uskb_tcount_add(&t->c.v[USKB_TC_SKB_ALLOC], i);
	uskb_tcount_add(&t->c.v[USKB_TC_HEAD_ALLOC], i);
fail:
	while (i--)
		uskb_free(skbs[i]);
	return -ENOMEM;
}

/* Push a gathered chain, or free it here when the owner cannot take it. */
static void batch_push(struct uskb_tls *t, struct defer_batch *b)
{
	struct uskb *skb, *next;

	if (push_chain(t, b))
		return;
	for (skb = b->first; skb; skb = next) {
		next = skb->ll_next;
		free_local(t, skb);
	}
	uskb_tcount_add(&t->c.v[USKB_TC_DIRECT], b->n);
}

#define FREE_BULK_OWNERS 8

void uskb_free_bulk(struct uskb **skbs, unsigned int n)
{
	struct uskb_tls *t = uskb_tls();
	struct defer_batch b[FREE_BULK_OWNERS];
	unsigned int i, nb = 0, k;

	for (i = 0; i < n; i++) {
		struct uskb *skb = skbs[i];
		struct uskb_tls *o;

		if (!skb || !skb_unref(skb))
			continue;
		release_head_state(skb);
		if (uskb_likely(skb->alloc_cpu == t->id)) {
			free_local(t, skb);
			continue;
		}
		/* gather per owner; skbs that cannot be deferred are freed here */
		o = defer_owner(skb);
		if (!o) {
			uskb_tcount_add(&t->c.v[USKB_TC_DIRECT], 1);
			free_local(t, skb);
			continue;
		}
		for (k = 0; k < nb && b[k].o != o; k++)
			;
		if (k == nb) {
			if (nb == FREE_BULK_OWNERS) {
				if (!defer_to_owner(t, skb))
					free_local(t, skb);
				continue;
			}
			b[nb++] = (struct defer_batch){ .o = o };
		}
		skb->ll_next = NULL;
		if (b[k].last)
			b[k].last->ll_next = skb;
		else
			b[k].first = skb;
		b[k].last = skb;
		b[k].n++;
	}
	for (k = 0; k < nb; k++)
		batch_push(t, &b[k]);
}

void uskb_free(struct uskb *skb)
{
	if (uskb_unlikely(!skb))
		return;
	if (!skb_unref(skb))
		return;
	__uskb_free(skb);
}

void uskb_consume(struct uskb *skb)
{
	uskb_free(skb);
}

void uskb_free_partial(struct uskb *skb, bool head_stolen)
{
	if (head_stolen) {
		/* the head's page reference now belongs to a frag of another skb */
		struct uskb_tls *t = uskb_tls();

		release_head_state(skb);
		uskb_tcount_add(&t->c.v[USKB_TC_HEAD_FREE], 1);
		free_shell(t, skb);
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

/* ---------------- misuse reports ---------------- */

void __uskb_bug_put(struct uskb *skb, unsigned int len)
{
	if (uskb_is_nonlinear(skb))
		uskb_bug("put", skb, "skb_put(len=%u) on a nonlinear skb", len);
	uskb_bug("put", skb, "skb_over_panic: put %u bytes past end (tailroom %u)", len,
		 skb->end - skb->tail);
}

void __uskb_bug_push(struct uskb *skb, unsigned int len)
{
	uskb_bug("push", skb, "skb_under_panic: push %u bytes below head (headroom %u)", len,
		 uskb_headroom(skb));
}

/* ---------------- clone and copy ---------------- */

/* __copy_skb_header(): the metadata a copy or clone inherits. */
static void copy_skb_header(struct uskb *n, const struct uskb *old)
{
	n->tstamp = old->tstamp;
	n->dev = old->dev;
	memcpy(n->cb, old->cb, sizeof(old->cb));
	n->queue_mapping = old->queue_mapping;
	n->headers = old->headers;
}

/* skb_copy_header(): header + gso state. */
static void copy_header_gso(struct uskb *n, const struct uskb *old)
{
	copy_skb_header(n, old);
	uskb_shinfo(n)->gso_size = uskb_shinfo(old)->gso_size;
	uskb_shinfo(n)->gso_segs = uskb_shinfo(old)->gso_segs;
	uskb_shinfo(n)->gso_type = uskb_shinfo(old)->gso_type;
}

struct uskb *uskb_clone(struct uskb *skb)
{
	struct uskb_fclones *fc = (struct uskb_fclones *)skb;
	struct uskb *n;

	/* a clone may be held (a tap): user memory is copied out first */
	if (uskb_unlikely(uskb_orphan_frags(skb))) {
		errno = ENOMEM;
		return NULL;
	}

	if (skb->fclone == USKB_FCLONE_ORIG &&
	    atomic_load_explicit(&fc->fclone_ref, memory_order_acquire) == 1) {
		n = &fc->skb2;
		/* relaxed: skb2 is idle; the owner of skb1 is the only writer */
		atomic_store_explicit(&fc->fclone_ref, 2, memory_order_relaxed);
		uskb_mem_handed_out(n, sizeof(*n));
		n->fclone = USKB_FCLONE_CLONE; /* (re)defined for valgrind, too */
		uskb_tcount_add(&uskb_tls()->c.v[USKB_TC_FC_SKB_ALLOC], 1);
	} else {
		n = uskb_should_fail() ? NULL : uskb_shell_get(uskb_tls());
		if (!n) {
			errno = ENOMEM;
			return NULL;
		}
		n->fclone = USKB_FCLONE_UNAVAILABLE;
	}
	n->next = n->prev = NULL;
	n->sk = NULL;
	copy_skb_header(n, skb);
	n->len = skb->len;
	n->data_len = skb->data_len;
	n->mac_len = skb->mac_len;
	n->hdr_len = skb->nohdr ? (uint16_t)uskb_headroom(skb) : skb->hdr_len;
	n->cloned = 1;
	n->nohdr = 0;
	n->pfmemalloc = skb->pfmemalloc;
	n->pp_recycle = skb->pp_recycle;
	n->head_frag = skb->head_frag;
	n->head_class = skb->head_class;
	n->zcopy_hint = skb->zcopy_hint;
	n->destructor = NULL;
	n->alloc_cpu = uskb_tls()->id;
	n->tail = skb->tail;
	n->end = skb->end;
	n->head = skb->head;
	n->data = skb->data;
	n->truesize = skb->truesize;
	atomic_init(&n->users, 1);
	/* relaxed: we hold a data reference, so the count cannot reach zero */
	atomic_fetch_add_explicit(&uskb_shinfo(skb)->dataref, 1, memory_order_relaxed);
	skb->cloned = 1;
	uskb_tcount_add(&uskb_tls()->c.v[USKB_TC_SKB_ALLOC], 1);
	return n;
}

struct uskb *uskb_copy(const struct uskb *skb)
{
	int headerlen = (int)uskb_headroom(skb);
	unsigned int size = uskb_end_offset(skb) + skb->data_len;
	struct uskb *n = uskb_alloc(size);

	if (!n)
		return NULL;
	uskb_reserve(n, headerlen);
	uskb_put(n, skb->len);
	if (uskb_copy_bits(skb, -headerlen, n->head, headerlen + (int)skb->len))
		uskb_bug("copy", skb, "skb geometry inconsistent");
	copy_header_gso(n, skb);
	return n;
}

static void clone_fraglist(struct uskb *skb)
{
	struct uskb *list;

	uskb_walk_frags(skb, list)
		uskb_get(list);
}

struct uskb *__uskb_pskb_copy(struct uskb *skb, int headroom)
{
	unsigned int size = uskb_headlen(skb) + (unsigned int)headroom;
	struct uskb_shared_info *shinfo = uskb_shinfo(skb), *nsh;
	struct uskb *n;
	int i;

	if (headroom < 0) {
		errno = EINVAL;
		return NULL;
	}
	n = uskb_alloc(size);
	if (!n)
		return NULL;
	uskb_reserve(n, headroom);
	uskb_put_data(n, skb->data, uskb_headlen(skb));
	n->truesize += skb->data_len;
	n->data_len = skb->data_len;
	n->len = skb->len;
	nsh = uskb_shinfo(n);
	if (shinfo->nr_frags) {
		if (uskb_orphan_frags(skb) || uskb_zerocopy_clone(n, skb)) {
			uskb_free(n);
			errno = ENOMEM;
			return NULL;
		}
		shinfo = uskb_shinfo(skb); /* orphaning may have moved the head */
		for (i = 0; i < shinfo->nr_frags; i++) {
			nsh->frags[i] = shinfo->frags[i];
			uskb_frag_ref(skb, i);
		}
		nsh->nr_frags = (uint8_t)i;
		nsh->flags |= shinfo->flags & USKB_SKBFL_SHARED_FRAG;
	}
	if (shinfo->frag_list) {
		nsh->frag_list = shinfo->frag_list;
		clone_fraglist(n);
	}
	copy_header_gso(n, skb);
	return n;
}

struct uskb *uskb_pskb_copy(struct uskb *skb)
{
	return __uskb_pskb_copy(skb, (int)uskb_headroom(skb));
}

/* skb_headers_offset_update(). */
static void headers_offset_update(struct uskb *skb, int off)
{
	if (skb->ip_summed == USKB_CHECKSUM_PARTIAL)
		skb->csum_start = (uint16_t)(skb->csum_start + off);
	if (skb->transport_header != USKB_HEADER_UNSET)
		skb->transport_header = (uint16_t)(skb->transport_header + off);
	skb->network_header = (uint16_t)(skb->network_header + off);
	if (uskb_mac_header_was_set(skb))
		skb->mac_header = (uint16_t)(skb->mac_header + off);
}

static int expand_head(struct uskb *skb, int nhead, int ntail, bool orphan)
{
	struct uskb_shared_info *shinfo;
	unsigned int osize, size, data_off;
	struct uskb_tls *t = uskb_tls();
	unsigned char *data;
	int i;

	/*
	 * A clone must not keep user memory (the kernel orphans after copying
	 * the shared info; a cloned skb that still needs it cannot exist, so
	 * doing it first changes nothing but the order).
	 */
	if (orphan && uskb_cloned(skb) && uskb_orphan_frags(skb))
		return -ENOMEM;
	shinfo = uskb_shinfo(skb);
	osize = uskb_end_offset(skb);

	if (uskb_unlikely(nhead < 0 || ntail < 0))
		uskb_bug("expand_head", skb, "negative growth nhead=%d ntail=%d", nhead, ntail);
	if (uskb_unlikely(uskb_shared(skb)))
		uskb_bug("expand_head", skb, "pskb_expand_head of a shared skb");
	if (uskb_unlikely((uint64_t)osize + (unsigned int)nhead + (unsigned int)ntail >
			  (1u << 30)))
		return -ENOMEM;
	uskb_zcopy_downgrade_managed(skb);
	size = USKB_DATA_ALIGN(osize + (unsigned int)nhead + (unsigned int)ntail) +
	       USKB_SHINFO_SIZE;
	data = uskb_kmalloc_head(t, &size, USKB_NO_NODE);
	if (!data)
		return -ENOMEM;
	size = USKB_WITH_OVERHEAD(size);
	memcpy(data + nhead, skb->head, skb->tail);
	memcpy(data + size, shinfo,
	       offsetof(struct uskb_shared_info, frags) +
		       shinfo->nr_frags * sizeof(uskb_frag_t));
	if (uskb_cloned(skb)) {
		/* the old data stays with the other clones: take our own refs */
		if (uskb_zcopy(skb))
			uskb_zcopy_get(uskb_zcopy(skb));
		for (i = 0; i < shinfo->nr_frags; i++)
			uskb_frag_ref(skb, i);
		if (shinfo->frag_list)
			clone_fraglist(skb);
		release_data(t, skb);
	} else {
		free_head(t, skb);
	}
	data_off = (unsigned int)(skb->data - skb->head);
	skb->head = data;
	skb->head_frag = 0;
	skb->head_class = (uint8_t)(uskb_head_class(size + USKB_SHINFO_SIZE) + 1);
	skb->data = data + nhead + data_off;
	skb->end = size;
	skb->tail += (uint32_t)nhead;
	headers_offset_update(skb, nhead);
	skb->cloned = 0;
	skb->hdr_len = 0;
	skb->nohdr = 0;
	atomic_init(&uskb_shinfo(skb)->dataref, 1);
	if (!skb->sk)
		skb->truesize += size - osize;
	return 0;
}

int uskb_expand_head(struct uskb *skb, int nhead, int ntail)
{
	return expand_head(skb, nhead, ntail, true);
}

int __uskb_unclone_keep_frags(struct uskb *skb)
{
	return uskb_cloned(skb) ? expand_head(skb, 0, 0, false) : 0;
}

static int __cow(struct uskb *skb, unsigned int headroom, bool cloned)
{
	unsigned int delta = 0;

	if (headroom > uskb_headroom(skb))
		delta = headroom - uskb_headroom(skb);
	if (delta || cloned)
		return uskb_expand_head(skb, (int)((delta + USKB_NET_SKB_PAD - 1) &
						   ~(USKB_NET_SKB_PAD - 1)), 0);
	return 0;
}

int uskb_cow(struct uskb *skb, unsigned int headroom)
{
	return __cow(skb, headroom, uskb_cloned(skb));
}

int uskb_cow_head(struct uskb *skb, unsigned int headroom)
{
	return __cow(skb, headroom, uskb_header_cloned(skb));
}

int uskb_unclone(struct uskb *skb)
{
	if (uskb_cloned(skb))
		return uskb_expand_head(skb, 0, 0);
	return 0;
}

struct uskb *uskb_unshare(struct uskb *skb)
{
	if (uskb_cloned(skb)) {
		struct uskb *nskb = uskb_copy(skb);

		if (nskb)
			uskb_consume(skb);
		else
			uskb_free(skb);
		skb = nskb;
	}
	return skb;
}

struct uskb *uskb_share_check(struct uskb *skb)
{
	if (uskb_shared(skb)) {
		struct uskb *nskb = uskb_clone(skb);

		if (nskb)
			uskb_consume(skb);
		else
			uskb_free(skb);
		skb = nskb;
	}
	return skb;
}

void uskb_header_release(struct uskb *skb)
{
	if (uskb_unlikely(skb->nohdr))
		uskb_bug("header_release", skb, "header already released");
	skb->nohdr = 1;
	/* relaxed: counts only; ordering comes with the frees */
	atomic_fetch_add_explicit(&uskb_shinfo(skb)->dataref, 1u << USKB_DATAREF_SHIFT,
				  memory_order_relaxed);
}

/* ---------------- pulling, trimming, linearizing ---------------- */

void *uskb_pull_tail(struct uskb *skb, int delta)
{
	struct uskb_shared_info *shinfo;
	int i, k, eat;

	if (uskb_unlikely(delta < 0 || (unsigned int)delta > skb->data_len))
		uskb_bug("pull_tail", skb, "__pskb_pull_tail(delta=%d) beyond paged data", delta);
	eat = (int)(skb->tail + (unsigned int)delta) - (int)skb->end;
	if (eat > 0 || uskb_cloned(skb)) {
		if (uskb_expand_head(skb, 0, eat > 0 ? eat + 128 : 0))
			return NULL;
	}
	shinfo = uskb_shinfo(skb);
	if (uskb_copy_bits(skb, (int)uskb_headlen(skb), uskb_tail_pointer(skb), delta))
		uskb_bug("pull_tail", skb, "skb geometry inconsistent");

	/* no frag_list: nothing to estimate, the frags hold it all */
	if (!shinfo->frag_list)
		goto pull_pages;
	eat = delta;
	for (i = 0; i < shinfo->nr_frags; i++) {
		int size = (int)shinfo->frags[i].len;

		if (size >= eat)
			goto pull_pages;
		eat -= size;
	}
	if (eat) {
		struct uskb *list = shinfo->frag_list;
		struct uskb *clone = NULL;
		struct uskb *insp = NULL;

		do {
			if ((int)list->len <= eat) {
				/* eaten as a whole */
				eat -= (int)list->len;
				list = list->next;
				insp = list;
			} else {
				/* eaten partially: pull from a private member */
				if (uskb_shared(list)) {
					clone = uskb_clone(list);
					if (!clone)
						return NULL;
					insp = list->next;
					list = clone;
				} else {
					insp = list;
				}
				if (!uskb_pskb_pull(list, (unsigned int)eat)) {
					uskb_free(clone);
					return NULL;
				}
				break;
			}
		} while (eat);
		/* free the members pulled out */
		while ((list = shinfo->frag_list) != insp) {
			shinfo->frag_list = list->next;
			uskb_consume(list);
		}
		if (clone) {
			clone->next = list;
			shinfo->frag_list = clone;
		}
	}
pull_pages:
	eat = delta;
	k = 0;
	for (i = 0; i < shinfo->nr_frags; i++) {
		int size = (int)shinfo->frags[i].len;

		if (size <= eat) {
			uskb_frag_unref(skb, i);
			eat -= size;
		} else {
			uskb_frag_t *frag = &shinfo->frags[k];

			*frag = shinfo->frags[i];
			if (eat) {
				frag->offset += (uint32_t)eat;
				frag->len -= (uint32_t)eat;
				if (!i)
					goto end;
				eat = 0;
			}
			k++;
		}
	}
	shinfo->nr_frags = (uint8_t)k;
end:
	skb->tail += (uint32_t)delta;
	skb->data_len -= (unsigned int)delta;
	/* all user bytes now live in our head: the owner hears "copied" */
	if (!skb->data_len)
		uskb_zcopy_clear(skb, false);
	return uskb_tail_pointer(skb);
}

bool uskb_may_pull(struct uskb *skb, unsigned int len)
{
	/* likely: headers are usually linear already */
	if (uskb_likely(len <= uskb_headlen(skb)))
		return true;
	if (uskb_unlikely(len > skb->len))
		return false;
	return uskb_pull_tail(skb, (int)(len - uskb_headlen(skb))) != NULL;
}

void *uskb_pskb_pull(struct uskb *skb, unsigned int len)
{
	if (uskb_unlikely(len > skb->len))
		return NULL;
	if (len > uskb_headlen(skb) && !uskb_pull_tail(skb, (int)(len - uskb_headlen(skb))))
		return NULL;
	skb->len -= len;
	return skb->data += len;
}

int uskb_linearize(struct uskb *skb)
{
	if (!uskb_is_nonlinear(skb))
		return 0;
	return uskb_pull_tail(skb, (int)skb->data_len) ? 0 : -ENOMEM;
}

void uskb_condense(struct uskb *skb)
{
	if (skb->data_len) {
		if (skb->data_len > skb->end - skb->tail || uskb_cloned(skb))
			return;
		/* the paged data fits the tailroom: free the frags now */
		uskb_pull_tail(skb, (int)skb->data_len);
	}
	skb->truesize = USKB_TRUESIZE(uskb_end_offset(skb));
}

static void drop_fraglist(struct uskb *skb)
{
	uskb_free_list(uskb_shinfo(skb)->frag_list);
	uskb_shinfo(skb)->frag_list = NULL;
}

/* ___pskb_trim(). */
static int pskb_trim_slow(struct uskb *skb, unsigned int len)
{
	struct uskb_shared_info *shinfo;
	struct uskb **fragp, *frag;
	int offset = (int)uskb_headlen(skb);
	int nfrags, i, err;

	if (uskb_cloned(skb) && (err = uskb_expand_head(skb, 0, 0)))
		return err;
	shinfo = uskb_shinfo(skb);
	nfrags = shinfo->nr_frags;
	i = 0;
	if (offset >= (int)len)
		goto drop_pages;
	for (; i < nfrags; i++) {
		int end = offset + (int)shinfo->frags[i].len;

		if (end < (int)len) {
			offset = end;
			continue;
		}
		shinfo->frags[i++].len = len - (unsigned int)offset;
drop_pages:
		shinfo->nr_frags = (uint8_t)i;
		for (; i < nfrags; i++)
			uskb_frag_unref(skb, i);
		if (shinfo->frag_list)
			drop_fraglist(skb);
		goto done;
	}
	for (fragp = &shinfo->frag_list; (frag = *fragp); fragp = &frag->next) {
		int end = offset + (int)frag->len;

		/* the chain may be shared with a pskb_copy: make each link we walk ours */
		if (uskb_shared(frag)) {
			struct uskb *nfrag = uskb_clone(frag);

			if (!nfrag)
				return -ENOMEM;
			nfrag->next = frag->next;
			uskb_consume(frag);
			frag = nfrag;
			*fragp = frag;
		}
		if (end < (int)len) {
			offset = end;
			continue;
		}
		if (end > (int)len && (err = uskb_pskb_trim(frag, len - (unsigned int)offset)))
			return err;
		if (frag->next) {
			uskb_free_list(frag->next);
			frag->next = NULL;
		}
		break;
	}
done:
	if (len > uskb_headlen(skb)) {
		skb->data_len -= skb->len - len;
		skb->len = len;
	} else {
		skb->len = len;
		skb->data_len = 0;
		uskb_set_tail_pointer(skb, (int)len);
	}
	if (!skb->sk)
		uskb_condense(skb);
	return 0;
}

int uskb_pskb_trim(struct uskb *skb, unsigned int len)
{
	if (len >= skb->len)
		return 0;
	if (skb->data_len)
		return pskb_trim_slow(skb, len);
	__uskb_trim(skb, len);
	return 0;
}

int uskb_ensure_writable(struct uskb *skb, unsigned int write_len)
{
	if (!uskb_may_pull(skb, write_len))
		return -ENOMEM;
	if (!uskb_cloned(skb) ||
	    (!uskb_header_cloned(skb) && uskb_headroom(skb) + write_len <= skb->hdr_len))
		return 0;
	return uskb_expand_head(skb, 0, 0);
}

/* ---------------- the byte walker ---------------- */

/*
 * Visit @len bytes of the packet from @offset (negative: the headroom) in
 * order, as contiguous chunks: head, frags, then frag_list members
 * recursively. @fn gets each chunk's address, length and position relative
 * to @offset. 0, -EFAULT when the range does not lie in the packet, or the
 * first non-zero value @fn returns.
 */
typedef int (*walk_fn)(void *ctx, unsigned char *p, int len, int pos,
		       const uskb_frag_t *frag);

static int walk(const struct uskb *skb, int offset, int len, walk_fn fn, void *ctx,
		int pos)
{
	const struct uskb_shared_info *shinfo = uskb_shinfo(skb);
	int start = (int)uskb_headlen(skb);
	const struct uskb *iter;
	int i, copy, err;

	if (len < 0 || offset < -(int)uskb_headroom(skb) || offset > (int)skb->len - len)
		return -EFAULT;
	if (!len)
		return 0;
	if ((copy = start - offset) > 0) {
		if (copy > len)
			copy = len;
		if ((err = fn(ctx, skb->data + offset, copy, pos, NULL)))
			return err;
		if ((len -= copy) == 0)
			return 0;
		offset += copy;
		pos += copy;
	}
	for (i = 0; i < shinfo->nr_frags; i++) {
		const uskb_frag_t *f = &shinfo->frags[i];
		int end = start + (int)f->len;

		if ((copy = end - offset) > 0) {
			if (copy > len)
				copy = len;
			if ((err = fn(ctx, (unsigned char *)uskb_frag_address(f) + (offset - start),
				      copy, pos, f)))
				return err;
			if ((len -= copy) == 0)
				return 0;
			offset += copy;
			pos += copy;
		}
		start = end;
	}
	uskb_walk_frags(skb, iter) {
		int end = start + (int)iter->len;

		if ((copy = end - offset) > 0) {
			if (copy > len)
				copy = len;
			if ((err = walk(iter, offset - start, copy, fn, ctx, pos)))
				return err;
			if ((len -= copy) == 0)
				return 0;
			offset += copy;
			pos += copy;
		}
		start = end;
	}
	return len ? -EFAULT : 0;
}

static int copy_out(void *ctx, unsigned char *p, int len, int pos, const uskb_frag_t *f)
{
	(void)f;
	memcpy((char *)ctx + pos, p, (size_t)len);
	return 0;
}

int uskb_copy_bits(const struct uskb *skb, int offset, void *to, int len)
{
	return walk(skb, offset, len, copy_out, to, 0);
}

static int copy_in(void *ctx, unsigned char *p, int len, int pos, const uskb_frag_t *f)
{
	if (uskb_unlikely(f && (f->page->flags & USKB_PG_READONLY)))
		uskb_bug("store_bits", NULL, "write into read-only page %p (%s)",
			 f->page->addr, (f->page->flags & USKB_PG_ZERO) ? "the zero page" :
									   "read-only");
	memcpy(p, (const char *)ctx + pos, (size_t)len);
	return 0;
}

int uskb_store_bits(struct uskb *skb, int offset, const void *from, int len)
{
	return walk(skb, offset, len, copy_in, (void *)from, 0);
}

struct csum_ctx {
	uskb_wsum csum;
};

static int csum_chunk(void *ctx, unsigned char *p, int len, int pos, const uskb_frag_t *f)
{
	struct csum_ctx *c = ctx;

	(void)f;
	c->csum = uskb_csum_block_add(c->csum, uskb_csum_partial(p, (size_t)len, 0), pos);
	return 0;
}

uskb_wsum uskb_checksum(const struct uskb *skb, int offset, int len, uskb_wsum csum)
{
	struct csum_ctx c = { csum };

	if (walk(skb, offset, len, csum_chunk, &c, 0))
		uskb_bug("checksum", skb, "range %d+%d outside the packet", offset, len);
	return c.csum;
}

/* ---------------- split, coalesce, frag_list ---------------- */

static void split_inside_header(struct uskb *skb, struct uskb *skb1, uint32_t len,
				unsigned int pos)
{
	struct uskb_shared_info *sh = uskb_shinfo(skb), *sh1 = uskb_shinfo(skb1);
	int i;

	uskb_put_data(skb1, skb->data + len, pos - len);
	/* the paged data moves as it is */
	for (i = 0; i < sh->nr_frags; i++)
		sh1->frags[i] = sh->frags[i];
	sh1->nr_frags = sh->nr_frags;
	sh->nr_frags = 0;
	skb1->data_len = skb->data_len;
	skb1->len += skb1->data_len;
	skb->data_len = 0;
	skb->len = len;
	uskb_set_tail_pointer(skb, (int)len);
}

static void split_no_header(struct uskb *skb, struct uskb *skb1, uint32_t len,
			    unsigned int pos)
{
	struct uskb_shared_info *sh = uskb_shinfo(skb), *sh1 = uskb_shinfo(skb1);
	const int nfrags = sh->nr_frags;
	int i, k = 0;

	sh->nr_frags = 0;
	skb1->len = skb1->data_len = skb->len - len;
	skb->len = len;
	skb->data_len = len - pos;
	for (i = 0; i < nfrags; i++) {
		unsigned int size = sh->frags[i].len;

		if (pos + size > len) {
			sh1->frags[k] = sh->frags[i];
			if (pos < len) {
				/* the split line cuts this frag: both keep a piece */
				uskb_frag_ref(skb, i);
				sh1->frags[0].offset += len - pos;
				sh1->frags[0].len -= len - pos;
				sh->frags[i].len = len - pos;
				sh->nr_frags++;
			}
			k++;
		} else {
			sh->nr_frags++;
		}
		pos += size;
	}
	sh1->nr_frags = (uint8_t)k;
}

void uskb_split(struct uskb *skb, struct uskb *skb1, uint32_t len)
{
	unsigned int pos = uskb_headlen(skb);

	if (uskb_unlikely(uskb_cloned(skb) || uskb_has_frag_list(skb)))
		uskb_bug("split", skb, "skb_split of a cloned skb or one with a frag_list");
	if (uskb_unlikely(skb1->len || uskb_shinfo(skb1)->nr_frags || len > skb->len))
		uskb_bug("split", skb1, "skb_split into a non-empty skb or past the end (len %u)",
			 len);
	uskb_zcopy_downgrade_managed(skb);
	uskb_shinfo(skb1)->flags |= uskb_shinfo(skb)->flags &
				    (USKB_SKBFL_SHARED_FRAG | USKB_SKBFL_PURE_ZEROCOPY);
	uskb_zerocopy_clone(skb1, skb); /* skb1 is fresh: cannot fail */
	if (len < pos)
		split_inside_header(skb, skb1, len, pos);
	else
		split_no_header(skb, skb1, len, pos);
}

bool uskb_try_coalesce(struct uskb *to, struct uskb *from, bool *fragstolen,
		       int *delta_truesize)
{
	struct uskb_shared_info *to_sh, *from_sh;
	int i, delta;
	unsigned int len = from->len;

	*fragstolen = false;
	if (uskb_cloned(to))
		return false;
	if (to->pp_recycle != from->pp_recycle)
		return false;
	if ((int)len <= uskb_tailroom(to)) {
		if (len && uskb_copy_bits(from, 0, uskb_put(to, len), (int)len))
			uskb_bug("try_coalesce", from, "skb geometry inconsistent");
		*delta_truesize = 0;
		return true;
	}
	to_sh = uskb_shinfo(to);
	from_sh = uskb_shinfo(from);
	if (to_sh->frag_list || from_sh->frag_list)
		return false;
	if ((to_sh->flags | from_sh->flags) & USKB_SKBFL_ZEROCOPY_ENABLE)
		return false;
	if (uskb_headlen(from) != 0) {
		struct uskb_page *page;

		if (to_sh->nr_frags + from_sh->nr_frags >= USKB_MAX_SKB_FRAGS)
			return false;
		/* skb_head_is_locked(): a cloned head cannot be stolen */
		if (!from->head_frag || uskb_cloned(from))
			return false;
		delta = (int)(from->truesize - USKB_DATA_ALIGN(sizeof(struct uskb)));
		page = uskb_virt_to_page(from->head);
		uskb_fill_page_desc(to, to_sh->nr_frags, page,
				    (int)(from->data - (unsigned char *)page->addr),
				    (int)uskb_headlen(from));
		*fragstolen = true;
	} else {
		if (to_sh->nr_frags + from_sh->nr_frags > USKB_MAX_SKB_FRAGS)
			return false;
		delta = (int)(from->truesize - USKB_TRUESIZE(uskb_end_offset(from)));
	}
	memcpy(to_sh->frags + to_sh->nr_frags, from_sh->frags,
	       from_sh->nr_frags * sizeof(uskb_frag_t));
	to_sh->nr_frags = (uint8_t)(to_sh->nr_frags + from_sh->nr_frags);
	if (from_sh->nr_frags)
		to_sh->flags |= from_sh->flags & USKB_SKBFL_SHARED_FRAG;
	if (!uskb_cloned(from))
		from_sh->nr_frags = 0;
	/* a cloned from keeps its frags: take refs for the copies in to */
	for (i = 0; i < from_sh->nr_frags; i++)
		uskb_frag_ref(from, i);
	to->truesize += (unsigned int)delta;
	to->len += len;
	to->data_len += len;
	*delta_truesize = delta;
	return true;
}

void uskb_append_frag_list(struct uskb *skb, struct uskb *frag)
{
	struct uskb **pp = &uskb_shinfo(skb)->frag_list;

	if (uskb_unlikely(frag == skb || frag->next))
		uskb_bug("append_frag_list", skb, "bad frag_list member %p", (void *)frag);
	if (uskb_unlikely(uskb_cloned(skb)))
		uskb_bug("append_frag_list", skb, "frag_list of a cloned skb is shared");
	while (*pp)
		pp = &(*pp)->next;
	*pp = frag;
	skb->len += frag->len;
	skb->data_len += frag->len;
	skb->truesize += frag->truesize;
}
