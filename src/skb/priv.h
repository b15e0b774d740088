/* SPDX-License-Identifier: MIT */
#ifndef USKB_SKB_PRIV_H
#define USKB_SKB_PRIV_H

/*
 * The skb layer's private interface: per-thread state (the caches of
 * shells, kbufs and ready pairs, the defer list, counters), the tunables,
 * and what alloc.c, free.c, defer.c, cache.c and skbuff.c share.
 */

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include "lib/compiler.h"
#include "lib/debug.h"
#include "mem/priv.h"
#include "uskb/cache.h"
#include "uskb/csum.h"
#include "uskb/skb.h"
#include "uskb/stats.h"
#include "uskb/ubuf.h"

/*
 * Cache tunables (struct uskb_cache_opts), read with relaxed loads: a new
 * value only has to be seen eventually.
 */
struct uskb_cfg {
	_Atomic unsigned int cache_size;
	_Atomic unsigned int bulk;
	_Atomic unsigned int flush;
	_Atomic unsigned int defer_max;
};
extern struct uskb_cfg __uskb_cfg USKB_HIDDEN;

static inline unsigned int uskb_cfg(_Atomic unsigned int *v)
{
	return atomic_load_explicit(v, memory_order_relaxed);
}

/* Per-thread counters, written by their thread only (uskb_count_add). */
enum {
	USKB_TC_SKB_ALLOC,	/* every skb: alloc, clone, copy */
	USKB_TC_SKB_FREE,
	USKB_TC_FCLONE_ALLOC,	/* fclone pairs */
	USKB_TC_FCLONE_FREE,
	USKB_TC_FC_SKB_ALLOC,	/* skbs living in fclone pairs (both halves) */
	USKB_TC_FC_SKB_FREE,
	USKB_TC_KBUF_ALLOC,	/* heads of every kind */
	USKB_TC_KBUF_FREE,
	USKB_TC_CACHE_MISS,	/* shells fetched from the slab */
	USKB_TC_DEFERRED,	/* skbs this thread pushed to an owner */
	USKB_TC_DRAINED,	/* deferred skbs this thread freed */
	USKB_TC_DIRECT,		/* another thread's skbs this thread freed itself */
	USKB_TC_PAIR_ALLOC,	/* an skb and its kbuf head, counted once (ready pairs, bulk) */
	USKB_TC_PAIR_FREE,
	USKB_TC_NR
};

#define USKB_KBUF_CACHE_SIZE 64
#define USKB_KBUF_CACHE_BULK 16

struct uskb_kbuf_cache {
	unsigned int n;
	void *obj[USKB_KBUF_CACHE_SIZE];
};

/*
 * Freed skbs that keep their kbuf head attached: the next allocation of
 * that class takes shell and head in one pop (an mbuf-like pair). Both are
 * free from the library's point of view (counted freed, poisoned); a flush
 * splits them back into the shell and kbuf caches. 59: what fits a list of
 * 512 bytes with its header (struct uskb_ready), so a class's list is
 * found with a shift.
 */
#define USKB_READY_SIZE 59

/* skbs a drain walks in one go, and the most the drain ahead holds */
#define USKB_DEFER_STASH 256
_Static_assert(USKB_DEFER_STASH <= UINT16_MAX, "uskb_tls.nstash_skbs counts up to it");
/*
 * The defer list's count lives in the top bits of its word: user-space
 * addresses (the shells' included) fit in 48 bits on x86-64 and arm64.
 */
#define USKB_DEFER_SHIFT 48
#define USKB_DEFER_MAX_CAP 65535u /* the most defer_max can be */

struct uskb_ready {
	unsigned int n;
	/*
	 * The words a fresh shell of this class and thread has at bytes 128
	 * (no destructor: zero128, stored with word136 in one 16-byte move),
	 * 136 (the free path's: owner, clean mark, flags, class), 144 (tail,
	 * end) and 168 (truesize, users): build_words() stores them as they
	 * are, and plain_in() compares a freed skb's owner and clean mark
	 * with word136's. Made with the slot (__uskb_ready_words()); the
	 * fallback slot's, made when it is taken, have its id -1, an owner no
	 * skb has (the fallback never allocates), so they match no skb.
	 */
	uint64_t zero128, word136, word144, word168;
	struct uskb *skb[USKB_READY_SIZE];
};
_Static_assert(sizeof(struct uskb_ready) == 512, "a class's ready list is found with a shift");

/* The skb's clean mark (see uskb_shinfo()): its shared info is as allocated. */
static inline bool uskb_clean_mark(const struct uskb *skb)
{
	return __atomic_load_n(&skb->__shinfo_clean, __ATOMIC_RELAXED);
}

/*
 * Take a ready pair's shell out of the cache and read the head it kept:
 * to valgrind the shell is then undefined but for that word.
 */
static inline unsigned char *uskb_ready_take(struct uskb *skb)
{
	uskb_mem_handed_out(skb, sizeof(*skb));
	/* head and the clean mark (bytes 138..159), in one request */
	uskb_mem_defined(&skb->__shinfo_clean, offsetof(struct uskb, head) + sizeof(skb->head) -
							offsetof(struct uskb, __shinfo_clean));
	return skb->head;
}

/*
 * One per thread; also the "owner" other threads defer skbs to. Slots are
 * never freed: an exiting thread marks its slot dead and a new thread
 * adopts it, so a late push from another thread never hits freed memory.
 */
struct uskb_tls {
	/*
	 * written by other threads: the defer list (its own cache line), one
	 * word: its first carrier, and above USKB_DEFER_SHIFT how many skbs it
	 * holds. A push is one compare-and-swap, the owner's take one exchange.
	 */
	_Alignas(64) _Atomic(uintptr_t) defer_list;
	atomic_int efd;			/* eventfd to kick at defer_max / 2, or -1 */
	atomic_bool alive;
	/* skbs the owner took off the list and has not yet freed (owner-written; read by stats) */
	atomic_long defer_taken;
	/* owner only */
	_Alignas(64) int id;
	unsigned int nshell;
	bool wide;			/* the CPU has 32-byte stores (AVX2) */
	struct uskb_tls *next_dead;	/* dead-slot list, under the registry lock */
	/*
	 * The drain ahead (uskb_alloc's): a list taken off defer_list, its
	 * first carrier on its way; and the carriers walked off such lists,
	 * their skbs' lines on their way, freed a ready list's worth a drain.
	 */
	struct uskb *taken;
	unsigned int nstash; /* carriers in stash */
	bool draining;			/* a drain runs: one a release calls back into does nothing */
	/* the stash's skbs, carriers included: at most USKB_DEFER_STASH (in draining's padding) */
	uint16_t nstash_skbs;
	struct uskb *stash[USKB_DEFER_STASH];
	struct uskb *shells[USKB_CACHE_MAX];
	struct uskb_page_frag_cache frag;
	int64_t c[USKB_TC_NR];
	struct uskb_kbuf_cache kbufs[USKB_KBUF_CLASSES];
	struct uskb_ready ready[USKB_KBUF_CLASSES];
};

#define USKB_MAX_OWNERS 4096
/* slot of owner id (set before the id is used; never changes afterwards) */
extern struct uskb_tls *__uskb_owner_tab[USKB_MAX_OWNERS] USKB_HIDDEN;

extern __thread struct uskb_tls *__uskb_tls_ptr USKB_HIDDEN
	__attribute__((tls_model("initial-exec")));
/* this thread's new slot; NULL + ENOMEM when none can be made */
USKB_HIDDEN struct uskb_tls *__uskb_tls_create(void);

/* This thread's state, made on first use; NULL (errno ENOMEM) if it cannot be. */
static inline struct uskb_tls *uskb_tls(void)
{
	struct uskb_tls *t = __uskb_tls_ptr;

	/* unlikely: only a thread's first call creates its state */
	if (uskb_unlikely(!t))
		t = __uskb_tls_create();
	return t;
}

/*
 * The slot a thread without state of its own frees through, under
 * __uskb_tls_fallback_lock (uskb_free() must work on every thread).
 */
USKB_HIDDEN struct uskb_tls *__uskb_tls_fallback_get(void);
USKB_HIDDEN void __uskb_tls_fallback_put(struct uskb_tls *t);

/* the slab of shells behind the per-thread caches */
extern struct uskb_slab __uskb_shells USKB_HIDDEN;

/*
 * caches empty: deferred skbs first (with @drain: the caller has not just
 * looked at its defer list), then a bulk from the slab; NULL when out of memory
 */
USKB_HIDDEN struct uskb *__uskb_shell_refill(struct uskb_tls *t, bool drain);
/* give all but @keep cached shells to the slab */
USKB_HIDDEN void __uskb_shell_flush(struct uskb_tls *t, unsigned int keep);

/* Take a shell from this thread's cache. */
static inline struct uskb *uskb_shell_get(struct uskb_tls *t)
{
	struct uskb *skb;

	/* likely: the cache refills in bulk, one miss per 16 allocations */
	if (uskb_likely(t->nshell))
		skb = t->shells[--t->nshell];
	else
		skb = __uskb_shell_refill(t, true);
	if (uskb_likely(skb))
		uskb_mem_handed_out(skb, sizeof(*skb));
	return skb;
}

/* uskb_shell_put() into a full cache (or none): `flush` shells go back first */
USKB_HIDDEN void __uskb_shell_put_full(struct uskb_tls *t, struct uskb *skb);

/* Return a shell to this thread's cache (handing back `flush` when full). */
static inline void uskb_shell_put(struct uskb_tls *t, struct uskb *skb)
{
	atomic_store_explicit(&skb->users, 0, memory_order_relaxed);
	uskb_mem_cached(skb, sizeof(*skb));
	/* unlikely: once per `flush` frees; out of line, so callers make no call before it */
	if (uskb_unlikely(t->nshell >= uskb_cfg(&__uskb_cfg.cache_size))) {
		__uskb_shell_put_full(t, skb);
		return;
	}
	t->shells[t->nshell++] = skb;
}

/* Sum every slot's counters into @sum[USKB_TC_NR]; live threads, pending deferred skbs. */
USKB_HIDDEN void __uskb_tls_counters(int64_t *sum, int64_t *threads, int64_t *pending);

/* Release a thread's slot (it exits): caches back, slot left for adoption. */
USKB_HIDDEN void __uskb_tls_release(struct uskb_tls *t);

/* kbufs */
USKB_HIDDEN void *__uskb_kbuf_refill(struct uskb_tls *t, int c);
USKB_HIDDEN void __uskb_kbuf_flush(struct uskb_tls *t, int c, unsigned int keep);
USKB_HIDDEN void *__uskb_kbuf_alloc_slow(struct uskb_tls *t, unsigned int *size, int node);
USKB_HIDDEN void __uskb_kbufs_flush(struct uskb_tls *t);
USKB_HIDDEN void __uskb_ready_flush(struct uskb_tls *t);
/* fill @t's ready lists' words (struct uskb_ready) for its id */
USKB_HIDDEN void __uskb_ready_words(struct uskb_tls *t);

/*
 * A kmalloc-style head of at least *size bytes (shared info included);
 * *size becomes the real size of the object, which the skb may use whole.
 * NULL + errno on failure.
 */
static inline void *uskb_kbuf_alloc(struct uskb_tls *t, unsigned int *size, int node)
{
	int c = uskb_kbuf_class(*size);
	struct uskb_kbuf_cache *kc;
	void *data;

	if (uskb_should_fail()) {
		errno = ENOMEM;
		return NULL;
	}
	/* unlikely: big, node-bound, or the class cache is empty */
	if (uskb_unlikely(c < 0 || node != USKB_NO_NODE || !t->kbufs[c].n))
		return __uskb_kbuf_alloc_slow(t, size, node);
	kc = &t->kbufs[c];
	data = kc->obj[--kc->n];
	*size = uskb_kbuf_class_size(c);
	uskb_mem_handed_out(data, *size);
	uskb_count_add(&t->c[USKB_TC_KBUF_ALLOC], 1);
	return data;
}

/* page_frag head of exactly size bytes (head_frag = 1). */
USKB_HIDDEN void *__uskb_frag_head(struct uskb_tls *t, unsigned int size);

/* Free a head; @cls is skb->__kbuf_class (1 + size class, 0: page_frag or block). */
static inline __attribute__((always_inline)) void uskb_kbuf_free(struct uskb_tls *t,
							   unsigned char *head, unsigned int cls)
{
	uskb_count_add(&t->c[USKB_TC_KBUF_FREE], 1);
	/* likely: kbufs of a class; page_frag and block heads drop a page ref */
	if (uskb_likely(cls)) {
		struct uskb_kbuf_cache *kc = &t->kbufs[cls - 1];

		/* unlikely: a full cache hands half to the slab */
		if (uskb_unlikely(kc->n == USKB_KBUF_CACHE_SIZE))
			__uskb_kbuf_flush(t, (int)cls - 1, USKB_KBUF_CACHE_SIZE / 2);
		uskb_mem_cached(head, uskb_kbuf_class_size((int)cls - 1));
		kc->obj[kc->n++] = head;
		return;
	}
	uskb_page_put(uskb_virt_to_page(head));
}

/* ---- free and deferred free ---- */

struct uskb_fclones {
	struct uskb skb1;
	struct uskb skb2;
	atomic_int fclone_ref;
};

/* skb_release_data() on this thread's caches */
USKB_HIDDEN void __uskb_release_data(struct uskb_tls *t, struct uskb *skb);

/*
 * skb_zcopy(): the shared info carries a zero-copy ubuf. The skb's own hint
 * answers without touching the shared info (another cache line, written by
 * the owner) for the ordinary skb.
 */
static inline bool uskb_is_zcopy(const struct uskb *skb)
{
	return skb->__zcopy_hint && skb->head &&
	       (__uskb_shinfo_peek(skb)->flags & USKB_SKBFL_ZEROCOPY_ENABLE);
}

/* The owner to defer @skb to, or NULL when it must be freed here. */
static inline struct uskb_tls *uskb_defer_owner(const struct uskb *skb)
{
	if (skb->fclone != USKB_FCLONE_UNAVAILABLE || !uskb_cfg(&__uskb_cfg.defer_max) ||
	    uskb_is_zcopy(skb) || skb->alloc_cpu < 0 || skb->alloc_cpu >= USKB_MAX_OWNERS)
		return NULL;
	return __uskb_owner_tab[skb->alloc_cpu];
}

/*
 * A deferred skb that carries others: bytes 0..127 of its shell (the
 * first two lines, which its release never reads) hold the next carrier
 * on the list, how many skbs it carries and their pointers. The other
 * skbs of a batch are then never written by the thread that frees them:
 * only their last line (users) crosses back to the owner.
 *
 * A batch's first carrier also names the carriers after it, so that the
 * owner can fetch them all at once instead of one link at a time: the
 * rest of its batch (up to USKB_CARRY_AHEAD - 1) and the list's head
 * before the push (the next batch's first carrier). Only hints: the
 * list itself runs through next.
 *
 * A carrier's skbs and the carrier itself share one tag: 1 + their size
 * class when the freeing thread found each plain with a clean shared info
 * (defer_tag()), else 0; an skb with another tag starts a new carrier.
 * The owner keeps a tagged carrier's skbs as ready pairs, copying their
 * pointers without reading any line of them, and then the carrier (what
 * its words overwrite, the next allocation writes anyway).
 */
#define USKB_CARRY_AHEAD 4
#define USKB_CARRY_MAX 10
struct __attribute__((may_alias)) uskb_carrier {
	struct uskb *next; /* overlays ll_next */
	uint32_t n;	   /* skbs carried */
	uint16_t nahead;   /* entries in ahead[] */
	uint16_t tag;	   /* of the carrier and every skb it carries */
	struct uskb *ahead[USKB_CARRY_AHEAD];
	struct uskb *skb[USKB_CARRY_MAX];
};
_Static_assert(sizeof(struct uskb_carrier) <= offsetof(struct uskb, destructor),
	       "a carrier's words stay clear of the free path's line");

static inline struct uskb_carrier *uskb_carrier(struct uskb *skb)
{
	return (struct uskb_carrier *)skb;
}

/* A chain of carriers (through ll_next) for one owner, pushed with one exchange. */
struct uskb_defer_batch {
	struct uskb_tls *o;
	struct uskb *first, *last; /* carriers */
	long n;			   /* skbs, carriers included */
	/*
	 * skbs the last carrier holds, kept here: its line is only written,
	 * its n only when it is closed (a new carrier, or the push).
	 * USKB_CARRY_MAX in an empty batch: no room, so the first skb
	 * starts a carrier.
	 */
	unsigned int last_n;
	unsigned int tag; /* the last carrier's */
};

/* an empty batch for owner @o */
#define USKB_DEFER_BATCH(owner) ((struct uskb_defer_batch){ .o = (owner), .last_n = USKB_CARRY_MAX })

/* @skb (counted in @b by the caller) starts a new carrier in @b, tagged @tag */
static inline void uskb_defer_batch_open(struct uskb_defer_batch *b, struct uskb *skb,
					 unsigned int tag)
{
	if (b->last) {
		uskb_carrier(b->last)->n = b->last_n;
		uskb_carrier(b->last)->next = skb;
	} else {
		b->first = skb;
	}
	uskb_carrier(skb)->next = NULL;
	uskb_carrier(skb)->nahead = 0;
	uskb_carrier(skb)->tag = (uint16_t)tag;
	b->last = skb;
	b->last_n = 0;
	b->tag = tag;
}

/*
 * Add @skb, tagged @tag (see struct uskb_carrier), to @b: into the last
 * carrier while it has room and the same tag, else as a new carrier.
 */
static inline void uskb_defer_batch_add(struct uskb_defer_batch *b, struct uskb *skb,
					unsigned int tag)
{
	/*
	 * The carrier's line belongs to the skb's owner until written: only
	 * stores here, which do not wait for it, and no read of it. The skb is
	 * dead to its last user from here: a second free must see users == 0,
	 * and the owner's drain trusts it.
	 */
	atomic_store_explicit(&skb->users, 0, memory_order_relaxed);
	b->n++;
	if (uskb_likely(b->last_n < USKB_CARRY_MAX && tag == b->tag)) {
		uskb_carrier(b->last)->skb[b->last_n++] = skb;
		return;
	}
	uskb_defer_batch_open(b, skb, tag);
}

/* push @skb (last user gone, owner another thread) to its owner; false: free it here */
USKB_HIDDEN bool __uskb_defer_to_owner(struct uskb_tls *t, struct uskb *skb);
/* push a gathered chain, or free it here when the owner cannot take it */
USKB_HIDDEN void __uskb_defer_batch_push(struct uskb_tls *t, struct uskb_defer_batch *b);
/* free what other threads deferred to @o, into @t's caches, all of it now; how many */
USKB_HIDDEN unsigned int __uskb_defer_drain(struct uskb_tls *t, struct uskb_tls *o);
/*
 * @t's caches ran empty: free what was deferred to it, fetching the lines
 * of later skbs ahead for the next call; how many it freed (0: nothing).
 */
USKB_HIDDEN unsigned int __uskb_defer_drain_ahead(struct uskb_tls *t);
/* skbs deferred to @o and not yet freed (a snapshot, for stats) */
static inline long uskb_defer_pending(struct uskb_tls *o)
{
	return (long)(atomic_load_explicit(&o->defer_list, memory_order_relaxed) >>
		      USKB_DEFER_SHIFT) +
	       atomic_load_explicit(&o->defer_taken, memory_order_relaxed);
}
/* a defer list to take: relaxed, a hint (the take's exchange acquires) */
static inline bool uskb_defer_waiting(struct uskb_tls *o)
{
	return atomic_load_explicit(&o->defer_list, memory_order_relaxed) != 0;
}
/* a drain step of @t's would free something: taken, stashed or waiting */
static inline bool uskb_defer_work(struct uskb_tls *t)
{
	return t->taken || t->nstash || uskb_defer_waiting(t);
}
/* wake a sleeping owner: its defer list reached half the cap */
USKB_HIDDEN void __uskb_defer_kick(struct uskb_tls *o);

/* ---- zero-copy user buffers ---- */

/* Descriptors for user memory, owned by the ubuf until its completion. */
struct __uskb_user_pages {
	struct __uskb_user_pages *next;
	unsigned int n;
	struct uskb_page pages[];
};

/* drop one reference to @uarg; the last one completes it, exactly once */
USKB_HIDDEN void __uskb_ubuf_put(struct uskb *skb, struct uskb_ubuf *uarg, bool success);
/* unclone without orphaning the frags (for uskb_copy_ubufs) */
USKB_HIDDEN int __uskb_unclone_keep_frags(struct uskb *skb);

#endif
