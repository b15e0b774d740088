/* SPDX-License-Identifier: MIT */
/*
 * Page pools: pages that come back to their pool when freed, through a
 * per-thread cache in front of a locked ring.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "mem/priv.h"

/* ---- page pools ----
 *
 * A pool keeps freed pages for reuse in a locked ring, and each thread keeps
 * up to PP_TCACHE_SIZE of a pool's pages in a private cache (the page_pool's
 * lockless "alloc cache", per thread instead of per NAPI): a thread that
 * frees and allocates pool pages touches no lock. `out` counts the pages
 * not in the ring (in use or in thread caches); the pool is freed after
 * destroy when it reaches zero. Only locked paths change `out`.
 */

#define PP_TCACHES 4
#define PP_TCACHE_SIZE 64

struct uskb_page_pool {
	pthread_mutex_t lock;
	unsigned int order;
	int node;
	unsigned int size, count;
	atomic_bool destroyed;
	long out;			/* under lock */
	atomic_long tcached;		/* pages in thread caches */
	atomic_ulong tc_alloc, tc_recycle; /* thread-cache hits */
	struct uskb_page_pool_stats st;	/* locked-path counts */
	struct uskb_page **ring;
};

struct pp_tcache {
	struct uskb_page_pool *pool;
	unsigned int n;
	struct uskb_page *pages[PP_TCACHE_SIZE];
};

static __thread struct pp_tcache pp_tc[PP_TCACHES];
static pthread_key_t pp_key;
static pthread_once_t pp_once = PTHREAD_ONCE_INIT;

/* A thread that cached pool pages gives them back when it exits. */
static void pp_thread_exit(void *arg)
{
	(void)arg;
	__uskb_page_thread_flush();
}

static int pp_key_err;

static void pp_key_init(void)
{
	pp_key_err = pthread_key_create(&pp_key, pp_thread_exit);
}

static atomic_llong live_pools;
static atomic_llong pool_idle;

struct uskb_page_pool *uskb_page_pool_create(const struct uskb_page_pool_opts *opts)
{
	struct uskb_page_pool_opts o = { .sz = sizeof(o), .node = USKB_NO_NODE,
					 .pool_size = 1024 };
	struct uskb_page_pool *pool;

	if (opts) {
		if (opts->sz < offsetof(struct uskb_page_pool_opts, order) ||
		    opts->sz > sizeof(o)) {
			errno = EINVAL;
			return NULL;
		}
		memcpy(&o, opts, opts->sz);
		if (!o.pool_size)
			o.pool_size = 1024;
	}
	if (o.order > USKB_PAGE_MAX_ORDER || o.node < -1 || o.node >= USKB_NODE_SLOTS - 1) {
		errno = EINVAL;
		return NULL;
	}
	pool = calloc(1, sizeof(*pool));
	if (!pool)
		return NULL;
	pool->ring = calloc(o.pool_size, sizeof(*pool->ring));
	if (!pool->ring) {
		free(pool);
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&pool->lock, NULL);
	pool->order = o.order;
	pool->node = o.node;
	pool->size = o.pool_size;
	atomic_fetch_add(&live_pools, 1);
	return pool;
}

static void pool_free(struct uskb_page_pool *pool)
{
	pthread_mutex_destroy(&pool->lock);
	free(pool->ring);
	free(pool);
	atomic_fetch_sub(&live_pools, 1);
}

static void pp_tcache_release(struct pp_tcache *tc);

static struct pp_tcache *pp_tcache_of(struct uskb_page_pool *pool, bool claim)
{
	int i;

	for (i = 0; i < PP_TCACHES; i++) {
		if (pp_tc[i].pool == pool)
			return &pp_tc[i];
		/* a slot still holding a destroyed pool's pages gives them back now */
		if (claim && pp_tc[i].pool && atomic_load(&pp_tc[i].pool->destroyed))
			pp_tcache_release(&pp_tc[i]);
	}
	if (claim)
		for (i = 0; i < PP_TCACHES; i++)
			if (!pp_tc[i].pool) {
				/* the first claim arms this thread's exit hook */
				pthread_once(&pp_once, pp_key_init);
				if (pp_key_err)
					return NULL; /* no exit hook: pages go to the ring */
				if (!pthread_getspecific(pp_key))
					pthread_setspecific(pp_key, (void *)1);
				pp_tc[i].pool = pool;
				return &pp_tc[i];
			}
	return NULL;
}

/* Hand a page back to its arena; the caller holds pool->lock. True: pool done. */
static bool pool_release_locked(struct uskb_page_pool *pool, struct uskb_page *page)
{
	pool->out--;
	pool->st.released++;
	page->pp_magic = 0;
	atomic_store_explicit(&page->refcount, 1, memory_order_relaxed);
	return atomic_load(&pool->destroyed) && !pool->out;
}

struct uskb_page *uskb_page_pool_alloc(struct uskb_page_pool *pool)
{
	struct pp_tcache *tc = pp_tcache_of(pool, false);
	struct uskb_page *p = NULL;

	if (uskb_unlikely(atomic_load_explicit(&pool->destroyed, memory_order_relaxed)))
		uskb_bug("page_pool_alloc", NULL, "pool %p was destroyed", (void *)pool);
	if (uskb_should_fail()) {
		errno = ENOMEM;
		return NULL;
	}
	/* likely: a thread that recycles allocates from its own cache */
	if (uskb_likely(tc && tc->n)) {
		p = tc->pages[--tc->n];
		/* an empty slot lets go of its pool: only held pages keep a pool alive */
		if (!tc->n)
			tc->pool = NULL;
		atomic_fetch_sub_explicit(&pool->tcached, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&pool->tc_alloc, 1, memory_order_relaxed);
		goto out;
	}
	pthread_mutex_lock(&pool->lock);
	if (pool->count) {
		p = pool->ring[--pool->count];
		atomic_fetch_sub(&pool_idle, 1);
		pool->st.alloc_fast++;
		pool->out++;
	}
	pthread_mutex_unlock(&pool->lock);
	if (!p) {
		p = __uskb_arena_alloc(pool->order, pool->node);
		if (!p)
			return NULL;
		p->pp = pool;
		p->flags = USKB_PG_POOL;
		p->pp_magic = USKB_PP_SIGNATURE;
		pthread_mutex_lock(&pool->lock);
		pool->st.alloc_slow++;
		pool->out++;
		pthread_mutex_unlock(&pool->lock);
		return p;
	}
out:
	uskb_mem_handed_out(p->addr, uskb_page_size(p));
	atomic_store_explicit(&p->refcount, 1, memory_order_relaxed);
	return p;
}

void __uskb_pool_recycle(struct uskb_page *page)
{
	struct uskb_page_pool *pool = page->pp;
	struct pp_tcache *tc;
	bool release, last = false;

	/* likely: the freeing thread keeps the page for its next allocation */
	if (uskb_likely(!atomic_load_explicit(&pool->destroyed, memory_order_relaxed)) &&
	    (tc = pp_tcache_of(pool, true)) && tc->n < PP_TCACHE_SIZE) {
		atomic_store_explicit(&page->refcount, 0, memory_order_relaxed);
		uskb_mem_cached(page->addr, uskb_page_size(page));
		tc->pages[tc->n++] = page;
		atomic_fetch_add_explicit(&pool->tcached, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&pool->tc_recycle, 1, memory_order_relaxed);
		return;
	}
	pthread_mutex_lock(&pool->lock);
	release = atomic_load(&pool->destroyed) || pool->count == pool->size;
	if (release) {
		last = pool_release_locked(pool, page);
	} else {
		atomic_store_explicit(&page->refcount, 0, memory_order_relaxed);
		uskb_mem_cached(page->addr, uskb_page_size(page));
		pool->ring[pool->count++] = page;
		pool->out--;
		atomic_fetch_add(&pool_idle, 1);
		pool->st.recycled++;
	}
	pthread_mutex_unlock(&pool->lock);
	if (release)
		__uskb_arena_free(page);
	if (last)
		pool_free(pool);
}

/* Return one slot's pages: to the pool's ring, or the arena once it is destroyed. */
static void pp_tcache_release(struct pp_tcache *tc)
{
	struct uskb_page_pool *pool = tc->pool;
	struct uskb_page *rel[PP_TCACHE_SIZE];
	unsigned int nrel = 0, k;
	bool last = false;

	pthread_mutex_lock(&pool->lock);
	atomic_fetch_sub(&pool->tcached, (long)tc->n);
	while (tc->n) {
		struct uskb_page *p = tc->pages[--tc->n];

		if (!atomic_load(&pool->destroyed) && pool->count < pool->size) {
			pool->ring[pool->count++] = p;
			pool->out--;
			atomic_fetch_add(&pool_idle, 1);
		} else {
			last = pool_release_locked(pool, p);
			rel[nrel++] = p;
		}
	}
	pthread_mutex_unlock(&pool->lock);
	tc->pool = NULL;
	for (k = 0; k < nrel; k++) {
		uskb_mem_handed_out(rel[k]->addr, uskb_page_size(rel[k]));
		__uskb_arena_free(rel[k]);
	}
	if (last)
		pool_free(pool);
}

/* Return this thread's cached pool pages, then its free page lists (which those may feed). */
void __uskb_page_thread_flush(void)
{
	int i;

	for (i = 0; i < PP_TCACHES; i++)
		if (pp_tc[i].pool)
			pp_tcache_release(&pp_tc[i]);
	__uskb_pcp_flush();
}

void uskb_page_pool_destroy(struct uskb_page_pool *pool)
{
	unsigned int n;
	bool last;

	if (!pool)
		return;
	/* the caller's own cached pages go first, so a quiet pool dies here */
	{
		struct pp_tcache *tc = pp_tcache_of(pool, false);

		pthread_mutex_lock(&pool->lock);
		if (tc) {
			atomic_fetch_sub(&pool->tcached, (long)tc->n);
			while (tc->n && pool->count < pool->size) {
				pool->ring[pool->count++] = tc->pages[--tc->n];
				pool->out--;
				atomic_fetch_add(&pool_idle, 1);
			}
			tc->pool = tc->n ? tc->pool : NULL;
			atomic_fetch_add(&pool->tcached, (long)tc->n);
		}
		atomic_store(&pool->destroyed, true);
		n = pool->count;
		pool->count = 0;
		atomic_fetch_sub(&pool_idle, n);
		last = !pool->out;
		pthread_mutex_unlock(&pool->lock);
	}
	while (n--) {
		struct uskb_page *p = pool->ring[n];

		p->pp_magic = 0;
		__uskb_arena_free(p);
	}
	if (last)
		pool_free(pool);
}

void uskb_page_pool_get_stats(struct uskb_page_pool *pool, struct uskb_page_pool_stats *st)
{
	long tcached;

	pthread_mutex_lock(&pool->lock);
	*st = pool->st;
	tcached = atomic_load(&pool->tcached);
	st->idle = pool->count + (uint64_t)tcached;
	st->in_use = (uint64_t)(pool->out - tcached);
	st->alloc_fast += atomic_load(&pool->tc_alloc);
	st->recycled += atomic_load(&pool->tc_recycle);
	pthread_mutex_unlock(&pool->lock);
}

void __uskb_pool_stats(struct uskb_stats *st)
{
	st->pools = atomic_load(&live_pools);
	st->pool_pages_idle = atomic_load(&pool_idle);
}
