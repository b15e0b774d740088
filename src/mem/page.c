/* SPDX-License-Identifier: MIT */
/*
 * mem layer: arenas of page blocks, page descriptors, page pools, the zero
 * page and the page_frag allocator.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mem/priv.h"

#define ARENA_SHIFT 22
#define ARENA_SIZE (1ul << ARENA_SHIFT)
#define ARENA_MAGIC 0x75736b6261726e61ull /* "uskbarna" */
#define NODE_SLOTS 17 /* slot 0: no node; slot n + 1: node n */

struct arena {
	uint64_t magic;
	unsigned int order;
	int node;
	unsigned int nblocks;
	unsigned int first; /* blocks before this hold the header */
	struct arena *next;
	uint64_t __pad[4];
	struct uskb_page pages[];
};

_Static_assert(sizeof(struct uskb_page) == 64, "page descriptor is one line");
_Static_assert(sizeof(struct arena) % 64 == 0, "descriptors stay aligned");

static struct {
	pthread_mutex_t lock;
	struct uskb_page *free[USKB_PAGE_MAX_ORDER + 1][NODE_SLOTS];
	struct arena *arenas;
	int64_t in_use[USKB_PAGE_MAX_ORDER + 1];
	uint64_t arena_bytes;
	struct uskb_page *zero[NODE_SLOTS];
} mem = { .lock = PTHREAD_MUTEX_INITIALIZER };

static atomic_llong frag_cache_pages;

static int node_slot(int node)
{
	return node < 0 ? 0 : node + 1;
}

static size_t block_size(unsigned int order)
{
	return (size_t)USKB_PAGE_SIZE << order;
}

static long sys_mbind(void *addr, unsigned long len, int mode,
		      const unsigned long *mask, unsigned long maxnode)
{
	return syscall(SYS_mbind, addr, len, mode, mask, maxnode, 0);
}

/* Map a new arena for @order on @node and put its blocks on the free list. */
static int arena_grow(unsigned int order, int node)
{
	size_t bs = block_size(order), hdr;
	unsigned int i;
	struct arena *a;
	char *raw, *base;

	raw = mmap(NULL, 2 * ARENA_SIZE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (raw == MAP_FAILED)
		return -ENOMEM;
	base = (char *)(((uintptr_t)raw + ARENA_SIZE - 1) & ~(ARENA_SIZE - 1));
	if (base > raw)
		munmap(raw, (size_t)(base - raw));
	if (base + ARENA_SIZE < raw + 2 * ARENA_SIZE)
		munmap(base + ARENA_SIZE, (size_t)(raw + 2 * ARENA_SIZE - (base + ARENA_SIZE)));
#ifdef MADV_HUGEPAGE
	madvise(base, ARENA_SIZE, MADV_HUGEPAGE);
#endif
	if (node >= 0) {
		unsigned long mask[2] = { 0, 0 };

		if (node >= 128 ||
		    (mask[node / 64] = 1ul << (node % 64),
		     sys_mbind(base, ARENA_SIZE, 1 /* MPOL_PREFERRED */, mask, 129))) {
			munmap(base, ARENA_SIZE);
			return -EINVAL;
		}
	}
	a = (struct arena *)base;
	a->magic = ARENA_MAGIC;
	a->order = order;
	a->node = node;
	a->nblocks = (unsigned int)(ARENA_SIZE / bs);
	hdr = sizeof(*a) + a->nblocks * sizeof(struct uskb_page);
	a->first = (unsigned int)((hdr + bs - 1) / bs);
	a->next = mem.arenas;
	mem.arenas = a;
	mem.arena_bytes += ARENA_SIZE;
	/* push in reverse so blocks are handed out in address order */
	for (i = a->nblocks; i-- > a->first;) {
		struct uskb_page *p = &a->pages[i];

		p->order = (uint8_t)order;
		p->node = (int8_t)node;
		p->addr = base + (size_t)i * bs;
		p->next = mem.free[order][node_slot(node)];
		mem.free[order][node_slot(node)] = p;
		uskb_mem_cached(p->addr, bs);
	}
	return 0;
}

static struct uskb_page *arena_alloc(unsigned int order, int node)
{
	struct uskb_page *p;
	int slot = node_slot(node);

	if (uskb_should_fail()) {
		errno = ENOMEM;
		return NULL;
	}

	pthread_mutex_lock(&mem.lock);
	p = mem.free[order][slot];
	if (!p) {
		int err = arena_grow(order, node);

		if (err) {
			pthread_mutex_unlock(&mem.lock);
			errno = -err;
			return NULL;
		}
		p = mem.free[order][slot];
	}
	mem.free[order][slot] = p->next;
	mem.in_use[order]++;
	pthread_mutex_unlock(&mem.lock);

	p->next = NULL;
	p->flags = 0;
	p->pp = NULL;
	p->private = 0;
	p->pp_magic = 0;
	uskb_mem_handed_out(p->addr, block_size(order));
	/* relaxed: the page is not yet visible to any other thread */
	atomic_store_explicit(&p->refcount, 1, memory_order_relaxed);
	return p;
}

static void arena_free(struct uskb_page *p)
{
	atomic_store_explicit(&p->refcount, 0, memory_order_relaxed);
	p->pp = NULL;
	p->flags = 0;
	uskb_mem_cached(p->addr, uskb_page_size(p));
	pthread_mutex_lock(&mem.lock);
	p->next = mem.free[p->order][node_slot(p->node)];
	mem.free[p->order][node_slot(p->node)] = p;
	mem.in_use[p->order]--;
	pthread_mutex_unlock(&mem.lock);
}

struct uskb_page *uskb_page_alloc_node(unsigned int order, int node)
{
	if (order > USKB_PAGE_MAX_ORDER || node >= NODE_SLOTS - 1 || node < -1) {
		errno = EINVAL;
		return NULL;
	}
	return arena_alloc(order, node);
}

struct uskb_page *uskb_page_alloc(unsigned int order)
{
	return uskb_page_alloc_node(order, USKB_NO_NODE);
}

static void pool_recycle(struct uskb_page *page);

void __uskb_page_free(struct uskb_page *page)
{
	if (uskb_unlikely(page->flags & (USKB_PG_ZERO | USKB_PG_EXTERNAL)))
		uskb_bug("page_put", NULL, "dropped the base reference of %s %p",
			 (page->flags & USKB_PG_ZERO) ? "the zero page" : "user memory",
			 page->addr);
	if (page->pp)
		pool_recycle(page);
	else
		arena_free(page);
}

static struct arena *arena_of(const void *addr)
{
	return (struct arena *)((uintptr_t)addr & ~(ARENA_SIZE - 1));
}

bool uskb_addr_is_page(const void *addr)
{
	struct arena *a, *want = arena_of(addr);
	bool found = false;

	pthread_mutex_lock(&mem.lock);
	for (a = mem.arenas; a && !found; a = a->next)
		found = a == want;
	pthread_mutex_unlock(&mem.lock);
	if (!found)
		return false;
	return ((uintptr_t)addr - (uintptr_t)want) >> (USKB_PAGE_SHIFT + want->order) >=
	       want->first;
}

struct uskb_page *uskb_virt_to_page(const void *addr)
{
	struct arena *a = arena_of(addr);
	size_t idx;

	if (uskb_unlikely(a->magic != ARENA_MAGIC))
		uskb_bug("virt_to_page", NULL, "%p is not uskb page memory", addr);
	idx = ((uintptr_t)addr - (uintptr_t)a) >> (USKB_PAGE_SHIFT + a->order);
	if (uskb_unlikely(idx < a->first))
		uskb_bug("virt_to_page", NULL, "%p lies in an arena header", addr);
	return &a->pages[idx];
}

/* ---- zero page ---- */

struct uskb_page *uskb_zero_page_node(int node)
{
	int slot = node_slot(node);
	struct uskb_page *p;

	if (node < -1 || node >= NODE_SLOTS - 1)
		uskb_bug("zero_page", NULL, "no such node %d", node);
	/* fast path: set once, published with release (pktgen asks per packet) */
	p = __atomic_load_n(&mem.zero[slot], __ATOMIC_ACQUIRE);
	if (uskb_likely(p))
		return p;

	p = arena_alloc(0, node);
	if (!p && node >= 0)
		p = arena_alloc(0, USKB_NO_NODE); /* the node has no memory: any will do */
	if (!p)
		uskb_bug("zero_page", NULL, "cannot allocate the zero page");
	memset(p->addr, 0, USKB_PAGE_SIZE);
	if (mprotect(p->addr, USKB_PAGE_SIZE, PROT_READ))
		uskb_bug("zero_page", NULL, "mprotect failed: %s", strerror(errno));
	p->flags = USKB_PG_ZERO | USKB_PG_READONLY;
	pthread_mutex_lock(&mem.lock);
	mem.in_use[0]--; /* a fixture, not a live page */
	if (mem.zero[slot]) {
		/* lost a race: keep the first, leak-free by retiring ours */
		struct uskb_page *q = p;

		p = mem.zero[slot];
		mprotect(q->addr, USKB_PAGE_SIZE, PROT_READ | PROT_WRITE);
		q->flags = 0;
		mem.in_use[0]++;
		pthread_mutex_unlock(&mem.lock);
		arena_free(q);
		return p;
	}
	__atomic_store_n(&mem.zero[slot], p, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&mem.lock);
	return p;
}

struct uskb_page *uskb_zero_page(void)
{
	return uskb_zero_page_node(USKB_NO_NODE);
}

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
	if (o.order > USKB_PAGE_MAX_ORDER || o.node < -1 || o.node >= NODE_SLOTS - 1) {
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
		p = arena_alloc(pool->order, pool->node);
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

static void pool_recycle(struct uskb_page *page)
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
		arena_free(page);
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
		arena_free(rel[k]);
	}
	if (last)
		pool_free(pool);
}

/* Return this thread's cached pool pages. */
void __uskb_page_thread_flush(void)
{
	int i;

	for (i = 0; i < PP_TCACHES; i++)
		if (pp_tc[i].pool)
			pp_tcache_release(&pp_tc[i]);
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
		arena_free(p);
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

/* ---- page_frag ---- */

#define FRAG_BIAS 0x10000u

static int frag_refill(struct uskb_page_frag_cache *nc)
{
	struct uskb_page *p;

	p = arena_alloc(USKB_PAGE_FRAG_ORDER, nc->node);
	if (!p)
		p = arena_alloc(0, nc->node);
	if (!p)
		return -ENOMEM;
	/* relaxed: not shared yet */
	atomic_fetch_add_explicit(&p->refcount, (int)FRAG_BIAS, memory_order_relaxed);
	nc->page = p;
	nc->bias = FRAG_BIAS + 1;
	nc->offset = (uint32_t)uskb_page_size(p);
	atomic_fetch_add(&frag_cache_pages, 1);
	return 0;
}

/* Drop the cache's remaining bias; true if that freed every reference. */
static bool frag_drop_bias(struct uskb_page_frag_cache *nc)
{
	struct uskb_page *p = nc->page;
	/* acq_rel: pairs with the release in page_put of outstanding frags */
	int old = atomic_fetch_sub_explicit(&p->refcount, (int)nc->bias,
					    memory_order_acq_rel);

	if (uskb_unlikely(old < (int)nc->bias))
		uskb_bug("page_frag", NULL, "refcount %d below bias %u", old, nc->bias);
	return old == (int)nc->bias;
}

void *uskb_page_frag_alloc(struct uskb_page_frag_cache *nc, unsigned int size,
			   unsigned int align)
{
	uint32_t off;

	if (uskb_unlikely(!align || (align & (align - 1)) || align > USKB_PAGE_SIZE ||
			  size > block_size(USKB_PAGE_FRAG_ORDER))) {
		errno = EINVAL;
		return NULL;
	}
	if (uskb_should_fail()) {
		errno = ENOMEM;
		return NULL;
	}
	if (uskb_unlikely(!nc->page) && frag_refill(nc))
		goto nomem;
	/* unlikely: one refill per 32 KiB of heads */
	if (uskb_unlikely(nc->offset < size || nc->bias <= 1))
		goto refill;
fit:
	off = (nc->offset - size) & ~(align - 1);
	nc->offset = off;
	nc->bias--;
	return (char *)nc->page->addr + off;

refill:
	if (frag_drop_bias(nc)) {
		/* every fragment came back: reuse the block in place */
		struct uskb_page *p = nc->page;

		if (uskb_page_size(p) >= size) {
			atomic_store_explicit(&p->refcount, (int)FRAG_BIAS + 1,
					      memory_order_relaxed);
			nc->bias = FRAG_BIAS + 1;
			nc->offset = (uint32_t)uskb_page_size(p);
			goto fit;
		}
		atomic_store_explicit(&p->refcount, 1, memory_order_relaxed);
		arena_free(p);
	}
	nc->page = NULL;
	atomic_fetch_sub(&frag_cache_pages, 1);
	if (frag_refill(nc))
		goto nomem;
	if (nc->offset >= size)
		goto fit;
	uskb_page_frag_cache_drain(nc); /* only the order-0 fallback came */
nomem:
	errno = ENOMEM;
	return NULL;
}

void uskb_page_frag_free(void *addr)
{
	uskb_page_put(uskb_virt_to_page(addr));
}

void uskb_page_frag_cache_drain(struct uskb_page_frag_cache *nc)
{
	if (!nc->page)
		return;
	if (frag_drop_bias(nc)) {
		atomic_store_explicit(&nc->page->refcount, 1, memory_order_relaxed);
		arena_free(nc->page);
	}
	nc->page = NULL;
	nc->bias = 0;
	nc->offset = 0;
	atomic_fetch_sub(&frag_cache_pages, 1);
}

/* ---- stats ---- */

void __uskb_page_stats(struct uskb_stats *st)
{
	int i, s;

	pthread_mutex_lock(&mem.lock);
	st->pages = 0;
	for (i = 0; i <= USKB_PAGE_MAX_ORDER; i++) {
		st->pages_by_order[i] = mem.in_use[i];
		st->pages += mem.in_use[i];
	}
	st->arena_bytes = mem.arena_bytes;
	st->zero_page_refs = 0;
	for (s = 0; s < NODE_SLOTS; s++)
		if (mem.zero[s])
			st->zero_page_refs += uskb_page_ref_count(mem.zero[s]) - 1;
	pthread_mutex_unlock(&mem.lock);
	st->pools = atomic_load(&live_pools);
	st->pool_pages_idle = atomic_load(&pool_idle);
	st->frag_cache_pages = atomic_load(&frag_cache_pages);
}
