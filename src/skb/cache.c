/* SPDX-License-Identifier: MIT */
/*
 * Per-thread caches: the thread slots (made on first use, adopted after a
 * thread exits), the tunables, and the shell, kbuf and ready-pair caches in
 * front of the slab.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "skb/priv.h"

__thread struct uskb_tls *__uskb_tls_ptr __attribute__((tls_model("initial-exec")));

struct uskb_cfg __uskb_cfg = {
	.cache_size = 64, /* NAPI_SKB_CACHE_SIZE, kernel 5.12-6.18 */
	.bulk = 16,	  /* NAPI_SKB_CACHE_BULK */
	.flush = 32,	  /* NAPI_SKB_CACHE_HALF */
	.defer_max = 128, /* net.core.skb_defer_max since Nov 2025 */
};

struct uskb_tls *__uskb_owner_tab[USKB_MAX_OWNERS];

struct uskb_slab __uskb_shells = USKB_SLAB_INIT(USKB_DATA_ALIGN(sizeof(struct uskb)));

static pthread_key_t tls_key;
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;
static int tls_key_err;

/* All slots ever made; dead ones wait on a list to be adopted by new threads. */
static struct {
	pthread_mutex_t lock;
	int nslots;
	struct uskb_tls *dead;
	int live;
} reg = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* The slot of threads that have none: frees only, one thread at a time. */
static struct uskb_tls fallback = { .id = -1, .efd = -1, .frag = { .node = USKB_NO_NODE } };
static pthread_mutex_t fallback_lock = PTHREAD_MUTEX_INITIALIZER;

static void tls_destructor(void *arg)
{
	__uskb_tls_release(arg);
}

static void tls_key_init(void)
{
	tls_key_err = pthread_key_create(&tls_key, tls_destructor);
#if defined(__x86_64__)
	/* before __builtin_cpu_supports(): we may run ahead of the constructors */
	__builtin_cpu_init();
#endif
}

/* Forget the eventfd's count: the slot's new thread starts with no kick pending. */
static void efd_reset(struct uskb_tls *t)
{
	int fd = atomic_load(&t->efd);
	uint64_t v;

	/* nonblocking: fails only when there is nothing to read */
	if (fd >= 0 && read(fd, &v, sizeof(v)) < 0)
		return;
}

struct uskb_tls *__uskb_tls_create(void)
{
	struct uskb_tls *t;

	pthread_once(&tls_once, tls_key_init);
	if (tls_key_err) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&reg.lock);
	t = reg.dead;
	if (t) {
		reg.dead = t->next_dead;
	} else {
		t = reg.nslots < USKB_MAX_OWNERS && !uskb_should_fail() ?
			    aligned_alloc(64, sizeof(*t)) : NULL;
		if (!t) {
			pthread_mutex_unlock(&reg.lock);
			errno = ENOMEM;
			return NULL;
		}
		memset(t, 0, sizeof(*t));
		t->id = reg.nslots;
		__uskb_ready_words(t);
#if defined(__x86_64__)
		t->wide = __builtin_cpu_supports("avx2");
#endif
		t->frag.node = USKB_NO_NODE;
		atomic_init(&t->efd, -1);
		__uskb_owner_tab[reg.nslots++] = t;
	}
	reg.live++;
	/* release: pushers that see alive also see the slot's state */
	atomic_store_explicit(&t->alive, true, memory_order_release);
	pthread_mutex_unlock(&reg.lock);
	pthread_setspecific(tls_key, t);
	__uskb_tls_ptr = t;
	/* a thread that left a drain by a longjmp (a bug handler's) left the flag set */
	t->draining = false;
	/* an adopted slot may hold late pushes meant for its previous thread */
	__uskb_defer_drain(t, t);
	efd_reset(t);
	return t;
}

/* Give @t's shells and kbufs, ready pairs split first, back to the slab. */
static void return_caches(struct uskb_tls *t)
{
	__uskb_ready_flush(t);
	__uskb_shell_flush(t, 0);
	__uskb_kbufs_flush(t);
}

/* how deep this thread is in the fallback slot: a free it runs may free more */
static __thread unsigned int fallback_depth;

struct uskb_tls *__uskb_tls_fallback_get(void)
{
	if (!fallback_depth++) {
		pthread_mutex_lock(&fallback_lock);
		/* its id's words (-1, an owner no skb has): they match no skb */
		__uskb_ready_words(&fallback);
	}
	return &fallback;
}

/* Everything freed through the fallback slot goes straight back to the slab. */
void __uskb_tls_fallback_put(struct uskb_tls *t)
{
	if (--fallback_depth)
		return;
	return_caches(t);
	pthread_mutex_unlock(&fallback_lock);
}

/* Fold the fallback slot's counters into @sum (for uskb_stats_get). */
static void fallback_counters(int64_t *sum)
{
	int i;

	pthread_mutex_lock(&fallback_lock);
	for (i = 0; i < USKB_TC_NR; i++)
		sum[i] += fallback.c[i];
	pthread_mutex_unlock(&fallback_lock);
}

/* Return this thread's skb caches to the slab (the pages they release: its callers, last). */
static void flush_caches(struct uskb_tls *t)
{
	__uskb_defer_drain(t, t);
	return_caches(t);
	uskb_page_frag_cache_drain(&t->frag);
}

/*
 * A thread is going away: stop taking deferred skbs, give its caches back,
 * and leave the slot (with its counters) for a new thread to adopt. skbs
 * pushed after the final drain are freed by the slot's next thread or by
 * uskb_thread_flush() on any thread.
 */
void __uskb_tls_release(struct uskb_tls *t)
{
	atomic_store_explicit(&t->alive, false, memory_order_release);
	flush_caches(t);
	__uskb_page_thread_flush();
	/*
	 * The eventfd stays with the slot (a pusher may be about to write it:
	 * closing it could let the number name another file); the next thread
	 * that adopts the slot inherits it, reset.
	 */
	pthread_mutex_lock(&reg.lock);
	t->next_dead = reg.dead;
	reg.dead = t;
	reg.live--;
	pthread_mutex_unlock(&reg.lock);
	if (__uskb_tls_ptr == t)
		__uskb_tls_ptr = NULL;
}

void uskb_thread_flush(void)
{
	struct uskb_tls *t = __uskb_tls_ptr, *fb = NULL;
	int i, n;

	/* no state: nothing cached here; what exited threads left goes through the fallback */
	if (!t)
		t = fb = __uskb_tls_fallback_get();
	else
		flush_caches(t);
	/*
	 * Free what was pushed to exited threads after they left. Slots are
	 * never freed, so each can be read outside the lock; a slot adopted
	 * meanwhile is drained by both threads, safely.
	 */
	pthread_mutex_lock(&reg.lock);
	n = reg.nslots;
	pthread_mutex_unlock(&reg.lock);
	for (i = 0; i < n; i++) {
		struct uskb_tls *o = __uskb_owner_tab[i];

		/* acquire: pairs with the release that marked the slot dead */
		if (o != t && !atomic_load_explicit(&o->alive, memory_order_acquire))
			__uskb_defer_drain(t, o);
	}
	/* the drains refilled our caches: give those back too */
	if (fb)
		__uskb_tls_fallback_put(fb);
	else
		return_caches(t);
	/* last: the pages those frees released (and a thread with no skb state has cached) */
	__uskb_page_thread_flush();
}

/* Fold every slot's counters into @sum; the live threads and pending deferred skbs. */
void __uskb_tls_counters(int64_t *sum, int64_t *threads, int64_t *pending)
{
	int i, j;

	pthread_mutex_lock(&reg.lock);
	for (i = 0; i < reg.nslots; i++) {
		struct uskb_tls *o = __uskb_owner_tab[i];

		for (j = 0; j < USKB_TC_NR; j++)
			sum[j] += uskb_count_read(&o->c[j]);
		*pending += uskb_defer_pending(o);
	}
	*threads = reg.live;
	pthread_mutex_unlock(&reg.lock);
	fallback_counters(sum);
}

/* ---- tunables, eventfd ---- */

static struct uskb_cache_opts opts_now(void)
{
	return (struct uskb_cache_opts){
		.sz = sizeof(struct uskb_cache_opts),
		.cache_size = uskb_cfg(&__uskb_cfg.cache_size),
		.bulk = uskb_cfg(&__uskb_cfg.bulk),
		.flush = uskb_cfg(&__uskb_cfg.flush),
		.defer_max = uskb_cfg(&__uskb_cfg.defer_max),
	};
}

int uskb_cache_get_opts(struct uskb_cache_opts *opts)
{
	struct uskb_cache_opts o = opts_now();
	size_t sz;

	if (!opts || opts->sz < sizeof(size_t))
		return -EINVAL;
	sz = opts->sz < sizeof(o) ? opts->sz : sizeof(o);
	memcpy(opts, &o, sz);
	opts->sz = sz;
	return 0;
}

int uskb_cache_set_opts(const struct uskb_cache_opts *opts)
{
	struct uskb_cache_opts o;

	if (!opts || opts->sz < sizeof(size_t) || opts->sz > sizeof(o))
		return -EINVAL;
	o = opts_now();
	memcpy(&o, opts, opts->sz);
	if (o.cache_size > USKB_CACHE_MAX ||
	    (o.cache_size && (!o.bulk || o.bulk > o.cache_size || !o.flush ||
			      o.flush > o.cache_size)) ||
	    o.defer_max > USKB_DEFER_MAX_CAP)
		return -EINVAL;
	atomic_store(&__uskb_cfg.cache_size, o.cache_size);
	atomic_store(&__uskb_cfg.bulk, o.bulk ? o.bulk : 1);
	atomic_store(&__uskb_cfg.flush, o.flush ? o.flush : 1);
	atomic_store(&__uskb_cfg.defer_max, o.defer_max);
	return 0;
}

int uskb_cache_eventfd(void)
{
	struct uskb_tls *t = uskb_tls();
	int fd;

	if (!t)
		return -ENOMEM;
	fd = atomic_load(&t->efd);
	if (fd >= 0)
		return fd;
	fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	atomic_store(&t->efd, fd);
	return fd;
}

unsigned int uskb_cache_drain(void)
{
	struct uskb_tls *t = uskb_tls();

	if (!t)
		return 0;
	efd_reset(t);
	return __uskb_defer_drain(t, t);
}

/* ---- shells ---- */

/*
 * Cache empty: first (with @drain: the caller did not just try) take back
 * what other threads deferred to us (it is ours, and refills the cache
 * without a lock); else a bulk from the slab. Checking the defer list only
 * here keeps the allocation fast path off the cache line the freeing
 * threads write.
 */
struct uskb *__uskb_shell_refill(struct uskb_tls *t, bool drain)
{
	unsigned int n = uskb_cfg(&__uskb_cfg.bulk);

	/* relaxed: a hint; the drain's exchange acquires */
	if (drain && uskb_defer_work(t) &&
	    __uskb_defer_drain_ahead(t) && t->nshell)
		return t->shells[--t->nshell];

	if (n > USKB_CACHE_MAX)
		n = USKB_CACHE_MAX;
	if (!uskb_cfg(&__uskb_cfg.cache_size) || !n)
		n = 1; /* cache off: one at a time, straight from the slab */
	uskb_count_add(&t->c[USKB_TC_CACHE_MISS], 1);
	n = (unsigned int)__uskb_slab_get(&__uskb_shells, (void **)t->shells, n);
	if (!n)
		return NULL;
	t->nshell = n - 1;
	return t->shells[n - 1];
}

void __uskb_shell_flush(struct uskb_tls *t, unsigned int keep)
{
	if (t->nshell <= keep)
		return;
	__uskb_slab_put(&__uskb_shells, (void **)t->shells + keep, t->nshell - keep);
	t->nshell = keep;
}

void __uskb_shell_put_full(struct uskb_tls *t, struct uskb *skb)
{
	unsigned int size = uskb_cfg(&__uskb_cfg.cache_size), fl = uskb_cfg(&__uskb_cfg.flush);

	__uskb_shell_flush(t, size > fl ? size - fl : 0);
	if (!size) {
		/* cache off: straight to the slab (a copy: &skb would keep skb in memory) */
		void *one = skb;

		__uskb_slab_put(&__uskb_shells, &one, 1);
		return;
	}
	t->shells[t->nshell++] = skb;
}

/* ---- kbufs ----
 *
 * Two sources of heads, as in the kernel:
 * - kbufs (alloc_skb, pskb_expand_head): per-thread caches of fixed-size
 *   objects (512 B .. 16 KiB, the size including the shared info) in front
 *   of the slab; a free goes to the freeing thread's cache, no atomic.
 *   Larger or node-bound heads take a page block of their own. head_frag = 0.
 * - page_frag heads (uskb_dev_alloc, netdev_alloc_skb): carved from the
 *   thread's page_frag cache, freed by a page reference drop, and able to
 *   travel as a frag (skb_zerocopy, try_coalesce). head_frag = 1.
 */

void *__uskb_kbuf_refill(struct uskb_tls *t, int c)
{
	struct uskb_kbuf_cache *kc = &t->kbufs[c];
	unsigned int n = __uskb_slab_kbufs_get(c, kc->obj, USKB_KBUF_CACHE_BULK);

	if (!n)
		return NULL;
	kc->n = n - 1;
	return kc->obj[n - 1];
}

void __uskb_kbuf_flush(struct uskb_tls *t, int c, unsigned int keep)
{
	struct uskb_kbuf_cache *kc = &t->kbufs[c];

	if (kc->n <= keep)
		return;
	__uskb_slab_kbufs_put(c, kc->obj + keep, kc->n - keep);
	kc->n = keep;
}

/* Split the ready pairs back into shells and kbufs (both stay cached). */
void __uskb_ready_flush(struct uskb_tls *t)
{
	int c;

	for (c = 0; c < USKB_KBUF_CLASSES; c++) {
		struct uskb_ready *r = &t->ready[c];
		struct uskb_kbuf_cache *kc = &t->kbufs[c];

		while (r->n) {
			struct uskb *skb = r->skb[--r->n];
			unsigned char *head;

			head = uskb_ready_take(skb);
			if (kc->n == USKB_KBUF_CACHE_SIZE)
				__uskb_kbuf_flush(t, c, USKB_KBUF_CACHE_SIZE / 2);
			kc->obj[kc->n++] = head; /* still poisoned from the ready list */
			uskb_shell_put(t, skb);
		}
	}
}

void __uskb_kbufs_flush(struct uskb_tls *t)
{
	int c;

	for (c = 0; c < USKB_KBUF_CLASSES; c++)
		__uskb_kbuf_flush(t, c, 0);
}

static unsigned int order_for(size_t bytes)
{
	unsigned int order = 0;

	while (((size_t)USKB_PAGE_SIZE << order) < bytes)
		order++;
	return order;
}

void *__uskb_kbuf_alloc_slow(struct uskb_tls *t, unsigned int *size, int node)
{
	struct uskb_page *p;
	unsigned int order;
	int c = uskb_kbuf_class(*size);
	void *data;

	if (c >= 0 && node == USKB_NO_NODE) {
		/* the class cache was empty */
		data = __uskb_kbuf_refill(t, c);
		if (!data) {
			errno = ENOMEM;
			return NULL;
		}
		*size = uskb_kbuf_class_size(c);
		uskb_mem_handed_out(data, *size);
		uskb_count_add(&t->c[USKB_TC_KBUF_ALLOC], 1);
		return data;
	}
	/* at least 32 KiB: block heads must never look like a class object on free */
	order = order_for(*size);
	if (order < USKB_PAGE_FRAG_ORDER)
		order = USKB_PAGE_FRAG_ORDER;
	if (order > USKB_PAGE_MAX_ORDER) {
		errno = EINVAL;
		return NULL;
	}
	p = uskb_page_alloc_node(order, node);
	if (!p)
		return NULL;
	*size = (unsigned int)uskb_page_size(p);
	uskb_count_add(&t->c[USKB_TC_KBUF_ALLOC], 1);
	return p->addr;
}

void *__uskb_frag_head(struct uskb_tls *t, unsigned int size)
{
	void *data = uskb_page_frag_alloc(&t->frag, size, USKB_CACHE_BYTES);

	if (uskb_likely(data))
		uskb_count_add(&t->c[USKB_TC_KBUF_ALLOC], 1);
	return data;
}
