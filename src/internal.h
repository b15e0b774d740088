/* SPDX-License-Identifier: MIT */
#ifndef USKB_INTERNAL_H
#define USKB_INTERNAL_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include "uskb/uskb.h"

#define __hidden __attribute__((visibility("hidden")))

/* ---- sanitizer / valgrind annotations for pooled memory ---- */
#if defined(__SANITIZE_ADDRESS__)
#define USKB_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define USKB_ASAN 1
#endif
#endif

#ifdef USKB_ASAN
#include <sanitizer/asan_interface.h>
#define uskb_poison(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define uskb_unpoison(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define uskb_poison(p, n) ((void)(p), (void)(n))
#define uskb_unpoison(p, n) ((void)(p), (void)(n))
#endif

#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>) && !defined(USKB_NO_VALGRIND)
#include <valgrind/memcheck.h>
#define USKB_VALGRIND 1
#endif
#endif

#ifdef USKB_VALGRIND
/* Set once at load time: the client requests cost nothing when not under valgrind. */
extern bool __uskb_on_valgrind __hidden;
#endif

/* Mark pooled memory unusable (in a cache) / usable (handed out). */
static inline void uskb_mem_cached(void *p, size_t n)
{
	uskb_poison(p, n);
#ifdef USKB_VALGRIND
	/* unlikely: only under valgrind */
	if (uskb_unlikely(__uskb_on_valgrind))
		VALGRIND_MAKE_MEM_NOACCESS(p, n);
#endif
}

static inline void uskb_mem_handed_out(void *p, size_t n)
{
	uskb_unpoison(p, n);
#ifdef USKB_VALGRIND
	if (uskb_unlikely(__uskb_on_valgrind))
		VALGRIND_MAKE_MEM_UNDEFINED(p, n);
#endif
}

/*
 * A device counter: one writer (the queue's thread), readers anywhere. A
 * relaxed load and store, no read-modify-write: as cheap as a plain add.
 */
static inline void dev_stat_add(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) + v, __ATOMIC_RELAXED);
}

/* ---- fault injection (uskb_fault_inject) ---- */

extern atomic_long __uskb_fault_countdown __hidden;
__hidden bool __uskb_fault_fire(void);

/* True when this allocation must fail (a test asked for it). */
static inline bool uskb_should_fail(void)
{
	/* relaxed, unlikely: armed only by tests */
	if (uskb_likely(atomic_load_explicit(&__uskb_fault_countdown, memory_order_relaxed) <= 0))
		return false;
	return __uskb_fault_fire();
}

/* ---- per-thread state ---- */

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
extern struct uskb_cfg __uskb_cfg __hidden;

/* Devices: say why an open failed (uskb_dev_strerror()), return -@err. */
__hidden int uskb_dev_fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
struct uskb_dev;
/* an interface that is there, up and Ethernet: its MAC and MTU into @dev; 0 or -errno */
__hidden int uskb_dev_probe_ether(struct uskb_dev *dev, int fd, const char *type, const char *ifname);
/* a received skb: its device, mac header and protocol (the Ethernet type) */
__hidden void uskb_dev_rx_skb(struct uskb_dev *dev, struct uskb *skb);
/* the interface's queues (ETHTOOL_GCHANNELS: combined + min(rx, tx)); 1 when it does not say */
__hidden unsigned int uskb_dev_if_queues(const char *ifname);
/* a frame the interface cannot take: past the MTU (a VLAN tag allowed), or not Ethernet */
__hidden bool uskb_dev_too_long(unsigned int mtu, const struct uskb *skb);

static inline unsigned int uskb_cfg(_Atomic unsigned int *v)
{
	return atomic_load_explicit(v, memory_order_relaxed);
}

/*
 * Counters written only by their thread and read by uskb_stats_get():
 * relaxed atomics, so the owner's update is a plain load and store.
 */
typedef _Atomic int64_t uskb_tcount_t;

static inline void uskb_tcount_add(uskb_tcount_t *c, int64_t d)
{
	/* relaxed: single writer, readers only need a torn-free value */
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + d,
			      memory_order_relaxed);
}

static inline int64_t uskb_tcount_read(uskb_tcount_t *c)
{
	return atomic_load_explicit(c, memory_order_relaxed);
}

struct uskb_tls;
__hidden struct uskb *__uskb_shell_refill(struct uskb_tls *t);
__hidden void __uskb_shell_flush(struct uskb_tls *t, unsigned int keep);
__hidden void __uskb_shell_give(struct uskb *skb);

enum {
	USKB_TC_SKB_ALLOC,	/* every skb: alloc, clone, copy */
	USKB_TC_SKB_FREE,
	USKB_TC_FCLONE_ALLOC,	/* fclone pairs */
	USKB_TC_FCLONE_FREE,
	USKB_TC_FC_SKB_ALLOC,	/* skbs living in fclone pairs (both halves) */
	USKB_TC_FC_SKB_FREE,
	USKB_TC_HEAD_ALLOC,
	USKB_TC_HEAD_FREE,
	USKB_TC_CACHE_MISS,	/* shells fetched from the global pool */
	USKB_TC_DEFERRED,	/* skbs this thread pushed to an owner */
	USKB_TC_DRAINED,	/* deferred skbs this thread freed */
	USKB_TC_DIRECT,		/* another thread's skbs this thread freed itself */
	USKB_TC_NR
};

struct uskb_tcounters {
	uskb_tcount_t v[USKB_TC_NR];
};

#define USKB_HEAD_CLASSES 6
#define USKB_HEAD_CACHE_SIZE 64
#define USKB_HEAD_CACHE_BULK 16

struct uskb_head_cache {
	unsigned int n;
	void *obj[USKB_HEAD_CACHE_SIZE];
};

/*
 * Freed skbs that keep their kmalloc-class head attached: the next
 * allocation of that class takes shell and head in one pop (an mbuf-like
 * pair). Both are free from the library's point of view (counted freed,
 * poisoned); a flush splits them back into the shell and head caches.
 */
#define USKB_READY_SIZE 64

struct uskb_ready {
	unsigned int n;
	struct uskb *skb[USKB_READY_SIZE];
};

/*
 * One per thread; also the "owner" other threads defer skbs to. Slots are
 * never freed: an exiting thread marks its slot dead and a new thread
 * adopts it, so a late push from another thread never hits freed memory.
 */
struct uskb_tls {
	/* written by other threads: the defer list (its own cache line) */
	_Alignas(64) _Atomic(struct uskb *) defer_head;
	atomic_long defer_count;
	atomic_int efd;			/* eventfd to kick at defer_max / 2, or -1 */
	atomic_bool alive;
	/* owner only */
	_Alignas(64) int id;
	unsigned int nshell;
	struct uskb_tls *next_dead;	/* dead-slot list, under the registry lock */
	struct uskb *shells[USKB_CACHE_MAX];
	struct uskb_page_frag_cache frag;
	struct uskb_tcounters c;
	struct uskb_head_cache heads[USKB_HEAD_CLASSES];
	struct uskb_ready ready[USKB_HEAD_CLASSES];
};

#define USKB_MAX_OWNERS 4096
/* slot of owner id (set before the id is used; never changes afterwards) */
extern struct uskb_tls *__uskb_owner_tab[USKB_MAX_OWNERS] __hidden;

extern __thread struct uskb_tls *__uskb_tls_ptr __hidden
	__attribute__((tls_model("initial-exec")));
__hidden struct uskb_tls *__uskb_tls_create(void);

static inline struct uskb_tls *uskb_tls(void)
{
	struct uskb_tls *t = __uskb_tls_ptr;

	/* unlikely: only a thread's first call creates its state */
	if (uskb_unlikely(!t))
		t = __uskb_tls_create();
	return t;
}

/* Take a shell from this thread's cache. */
static inline struct uskb *uskb_shell_get(struct uskb_tls *t)
{
	struct uskb *skb;

	/* likely: the cache refills in bulk, one miss per 16 allocations */
	if (uskb_likely(t->nshell))
		skb = t->shells[--t->nshell];
	else
		skb = __uskb_shell_refill(t);
	if (uskb_likely(skb)) {
		uskb_mem_handed_out(skb, sizeof(*skb));
	}
	return skb;
}

/* Return a shell to this thread's cache (handing back `flush` when full). */
static inline void uskb_shell_put(struct uskb_tls *t, struct uskb *skb)
{
	unsigned int size = uskb_cfg(&__uskb_cfg.cache_size);

	/* unlikely: once per `flush` frees */
	if (uskb_unlikely(t->nshell >= size)) {
		unsigned int fl = uskb_cfg(&__uskb_cfg.flush);

		__uskb_shell_flush(t, size > fl ? size - fl : 0);
		if (t->nshell >= size) {
			/* cache off (size 0), or the pool could not grow: give it back alone */
			__uskb_shell_give(skb);
			return;
		}
	}
	atomic_store_explicit(&skb->users, 0, memory_order_relaxed);
	uskb_mem_cached(skb, sizeof(*skb));
	t->shells[t->nshell++] = skb;
}

__hidden void __uskb_tls_release(struct uskb_tls *t);
__hidden void __uskb_defer_kick(struct uskb_tls *o);
/* skb.c: unclone without orphaning the frags (for uskb_copy_ubufs) */
__hidden int __uskb_unclone_keep_frags(struct uskb *skb);
/* page.c: return the calling thread's page-pool caches */
__hidden void __uskb_page_thread_flush(void);
/* skb.c: free what other threads deferred to @o, into @t's caches */
__hidden unsigned int __uskb_defer_drain(struct uskb_tls *t, struct uskb_tls *o);

__hidden void __uskb_shells_stats(int64_t *created);

/* heads */
/* Head size classes: 512 << c bytes, shared info included. */
static inline int uskb_head_class(unsigned int size)
{
	int c;

	if (size <= 512)
		return 0;
	c = 32 - __builtin_clz(size - 1) - 9;
	return c < USKB_HEAD_CLASSES ? c : -1;
}

static inline unsigned int uskb_head_class_size(int c)
{
	return 512u << c;
}

__hidden void *__uskb_head_refill(struct uskb_tls *t, int c);
__hidden void __uskb_head_flush(struct uskb_tls *t, int c, unsigned int keep);
__hidden void *__uskb_kmalloc_head_slow(struct uskb_tls *t, unsigned int *size, int node);
__hidden void __uskb_heads_flush(struct uskb_tls *t);
__hidden void __uskb_ready_flush(struct uskb_tls *t);

/*
 * kmalloc-style head of at least *size bytes (shared info included); *size
 * becomes the real size of the object, which the skb may use whole.
 * NULL + errno on failure.
 */
static inline void *uskb_kmalloc_head(struct uskb_tls *t, unsigned int *size, int node)
{
	int c = uskb_head_class(*size);
	struct uskb_head_cache *hc;
	void *data;

	if (uskb_should_fail()) {
		errno = ENOMEM;
		return NULL;
	}
	/* unlikely: big, node-bound, or the class cache is empty */
	if (uskb_unlikely(c < 0 || node != USKB_NO_NODE || !t->heads[c].n))
		return __uskb_kmalloc_head_slow(t, size, node);
	hc = &t->heads[c];
	data = hc->obj[--hc->n];
	*size = uskb_head_class_size(c);
	uskb_mem_handed_out(data, *size);
	uskb_tcount_add(&t->c.v[USKB_TC_HEAD_ALLOC], 1);
	return data;
}

/* page_frag head of exactly size bytes (head_frag = 1). */
__hidden void *__uskb_frag_head(struct uskb_tls *t, unsigned int size);

/* Free a head; @cls is skb->head_class (1 + size class, 0: page_frag or block). */
static inline void uskb_head_free(struct uskb_tls *t, unsigned char *head, unsigned int cls)
{
	uskb_tcount_add(&t->c.v[USKB_TC_HEAD_FREE], 1);
	/* likely: kmalloc heads of a class; page_frag and block heads drop a page ref */
	if (uskb_likely(cls)) {
		struct uskb_head_cache *hc = &t->heads[cls - 1];

		/* unlikely: a full cache hands half to the depot */
		if (uskb_unlikely(hc->n == USKB_HEAD_CACHE_SIZE)) {
			__uskb_head_flush(t, (int)cls - 1, USKB_HEAD_CACHE_SIZE / 2);
			if (hc->n == USKB_HEAD_CACHE_SIZE)
				uskb_bug("head_free", NULL, "out of memory growing the head depot");
		}
		uskb_mem_cached(head, uskb_head_class_size((int)cls - 1));
		hc->obj[hc->n++] = head;
		return;
	}
	uskb_page_put(uskb_virt_to_page(head));
}
__hidden int64_t __uskb_slab_pages(void);

/* mem layer internals */
__hidden void __uskb_page_stats(struct uskb_stats *st);

#endif
