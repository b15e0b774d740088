/* SPDX-License-Identifier: MIT */
/*
 * Per-thread state (skb shell cache, page_frag cache for heads, counters),
 * the global shell pool behind it, and the library's live-object counters.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "internal.h"

__thread struct uskb_tls *__uskb_tls_ptr __attribute__((tls_model("initial-exec")));

#ifdef USKB_VALGRIND
bool __uskb_on_valgrind;

__attribute__((constructor)) static void detect_valgrind(void)
{
	__uskb_on_valgrind = RUNNING_ON_VALGRIND != 0;
}
#endif

struct uskb_cfg __uskb_cfg = {
	.cache_size = 64, /* NAPI_SKB_CACHE_SIZE, kernel 5.12-6.18 */
	.bulk = 16,	  /* NAPI_SKB_CACHE_BULK */
	.flush = 32,	  /* NAPI_SKB_CACHE_HALF */
	.defer_max = 128, /* net.core.skb_defer_max since Nov 2025 */
};

struct uskb_tls *__uskb_owner_tab[USKB_MAX_OWNERS];

static pthread_key_t tls_key;
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;

/* All slots ever made; dead ones wait on a list to be adopted by new threads. */
static struct {
	pthread_mutex_t lock;
	int nslots;
	struct uskb_tls *dead;
	int live;
} reg = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Global pool of idle shells. */
static struct {
	pthread_mutex_t lock;
	struct uskb **stack;
	size_t n, cap;
	int64_t created;
} shells = { .lock = PTHREAD_MUTEX_INITIALIZER };

#define SHELL_SLAB 64
#define SHELL_SIZE USKB_DATA_ALIGN(sizeof(struct uskb))

static void tls_destructor(void *arg)
{
	struct uskb_tls *t = arg;

	__uskb_tls_release(t);
}

static void tls_key_init(void)
{
	if (pthread_key_create(&tls_key, tls_destructor))
		uskb_bug("tls", NULL, "pthread_key_create failed");
}

struct uskb_tls *__uskb_tls_create(void)
{
	struct uskb_tls *t;

	pthread_once(&tls_once, tls_key_init);
	pthread_mutex_lock(&reg.lock);
	t = reg.dead;
	if (t) {
		reg.dead = t->next_dead;
	} else {
		if (reg.nslots == USKB_MAX_OWNERS) {
			pthread_mutex_unlock(&reg.lock);
			uskb_bug("tls", NULL, "more than %d threads use uskb at once",
				 USKB_MAX_OWNERS);
		}
		t = aligned_alloc(64, sizeof(*t));
		if (!t) {
			pthread_mutex_unlock(&reg.lock);
			uskb_bug("tls", NULL, "out of memory creating thread state");
		}
		memset(t, 0, sizeof(*t));
		t->id = reg.nslots;
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
	/* an adopted slot may hold late pushes meant for its previous thread */
	__uskb_defer_drain(t, t);
	{
		int fd = atomic_load(&t->efd);
		uint64_t v;

		if (fd >= 0 && read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
			uskb_bug("tls", NULL, "eventfd read failed: %s", strerror(errno));
	}
	return t;
}

static void fold_all(struct uskb_tcounters *dst, struct uskb_tcounters *src)
{
	int i;

	for (i = 0; i < USKB_TC_NR; i++)
		uskb_tcount_add(&dst->v[i], uskb_tcount_read(&src->v[i]));
}

/* Return everything this thread caches to the global pools. */
static void flush_caches(struct uskb_tls *t)
{
	__uskb_defer_drain(t, t);
	__uskb_ready_flush(t);
	__uskb_shell_flush(t, 0);
	__uskb_heads_flush(t);
	uskb_page_frag_cache_drain(&t->frag);
	__uskb_page_thread_flush();
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
	struct uskb_tls *t = uskb_tls(), *d, **dead;
	int n = 0, i;

	flush_caches(t);
	/*
	 * Free what was pushed to exited threads after they left. The slots
	 * are collected under the lock and drained outside it (a drain may run
	 * destructors); a slot adopted meanwhile is drained by both, safely.
	 */
	pthread_mutex_lock(&reg.lock);
	dead = malloc((size_t)reg.nslots * sizeof(*dead) + 1);
	for (d = reg.dead; d && dead; d = d->next_dead)
		dead[n++] = d;
	pthread_mutex_unlock(&reg.lock);
	for (i = 0; i < n; i++)
		__uskb_defer_drain(t, dead[i]);
	free(dead);
	/* the drains refilled our caches: give those back too */
	__uskb_ready_flush(t);
	__uskb_shell_flush(t, 0);
	__uskb_heads_flush(t);
}

/* ---- tunables, eventfd ---- */

int uskb_cache_get_opts(struct uskb_cache_opts *opts)
{
	struct uskb_cache_opts o = {
		.sz = sizeof(o),
		.cache_size = uskb_cfg(&__uskb_cfg.cache_size),
		.bulk = uskb_cfg(&__uskb_cfg.bulk),
		.flush = uskb_cfg(&__uskb_cfg.flush),
		.defer_max = uskb_cfg(&__uskb_cfg.defer_max),
	};
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
	o = (struct uskb_cache_opts){
		.sz = sizeof(o),
		.cache_size = uskb_cfg(&__uskb_cfg.cache_size),
		.bulk = uskb_cfg(&__uskb_cfg.bulk),
		.flush = uskb_cfg(&__uskb_cfg.flush),
		.defer_max = uskb_cfg(&__uskb_cfg.defer_max),
	};
	memcpy(&o, opts, opts->sz);
	if (o.cache_size > USKB_CACHE_MAX ||
	    (o.cache_size && (!o.bulk || o.bulk > o.cache_size || !o.flush ||
			      o.flush > o.cache_size)) ||
	    o.defer_max > (1u << 20))
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
	int fd = atomic_load(&t->efd);

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
	int fd = atomic_load(&t->efd);
	uint64_t v;

	if (fd >= 0 && read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		uskb_bug("cache_drain", NULL, "eventfd read failed: %s", strerror(errno));
	return __uskb_defer_drain(t, t);
}

/* Wake a sleeping owner: its defer list just reached half the cap. */
void __uskb_defer_kick(struct uskb_tls *o)
{
	int fd = atomic_load(&o->efd);
	uint64_t one = 1;

	/* a failed write means the counter is already huge: the owner is awake anyway */
	if (fd >= 0 && write(fd, &one, sizeof(one)) < 0)
		return;
}

/* ---- shells ---- */

static int shell_pool_push(struct uskb **v, size_t n)
{
	if (shells.n + n > shells.cap) {
		size_t cap = shells.cap ? shells.cap * 2 : 256;
		struct uskb **s;

		while (cap < shells.n + n)
			cap *= 2;
		s = realloc(shells.stack, cap * sizeof(*s));
		if (!s)
			return -ENOMEM;
		shells.stack = s;
		shells.cap = cap;
	}
	memcpy(shells.stack + shells.n, v, n * sizeof(*v));
	shells.n += n;
	return 0;
}

/*
 * Cache empty: first take back what other threads deferred to us (it is
 * ours, and refills the cache without a lock); else a bulk from the global
 * pool, growing it by a slab. Checking the defer list only here keeps the
 * allocation fast path off the cache line the freeing threads write.
 */
struct uskb *__uskb_shell_refill(struct uskb_tls *t)
{
	unsigned int n = uskb_cfg(&__uskb_cfg.bulk);

	/* relaxed: a hint; the drain's exchange acquires */
	if (atomic_load_explicit(&t->defer_head, memory_order_relaxed) &&
	    __uskb_defer_drain(t, t) && t->nshell)
		return t->shells[--t->nshell];

	if (n > USKB_CACHE_MAX)
		n = USKB_CACHE_MAX;
	if (!uskb_cfg(&__uskb_cfg.cache_size) || !n)
		n = 1; /* cache off: one at a time, straight from the pool */
	uskb_tcount_add(&t->c.v[USKB_TC_CACHE_MISS], 1);
	pthread_mutex_lock(&shells.lock);
	while (shells.n < n) {
		struct uskb *slab[SHELL_SLAB];
		char *mem = aligned_alloc(USKB_CACHE_BYTES, SHELL_SLAB * SHELL_SIZE);
		int i;

		if (!mem) {
			pthread_mutex_unlock(&shells.lock);
			return NULL;
		}
		for (i = 0; i < SHELL_SLAB; i++) {
			slab[i] = (struct uskb *)(mem + (size_t)i * SHELL_SIZE);
			uskb_mem_cached(slab[i], SHELL_SIZE);
		}
		if (shell_pool_push(slab, SHELL_SLAB)) {
			pthread_mutex_unlock(&shells.lock);
			free(mem);
			return NULL;
		}
		shells.created += SHELL_SLAB;
	}
	shells.n -= n;
	memcpy(t->shells, shells.stack + shells.n, n * sizeof(*t->shells));
	pthread_mutex_unlock(&shells.lock);
	t->nshell = n - 1;
	return t->shells[n - 1];
}

/* Give all but @keep cached shells back to the global pool. */
void __uskb_shell_flush(struct uskb_tls *t, unsigned int keep)
{
	unsigned int n;

	if (t->nshell <= keep)
		return;
	n = t->nshell - keep;
	pthread_mutex_lock(&shells.lock);
	if (shell_pool_push(t->shells + keep, n)) {
		pthread_mutex_unlock(&shells.lock);
		return; /* keep them cached: nothing is lost */
	}
	pthread_mutex_unlock(&shells.lock);
	t->nshell = keep;
}

/* One shell straight to the global pool (cache disabled). */
void __uskb_shell_give(struct uskb *skb)
{
	atomic_store_explicit(&skb->users, 0, memory_order_relaxed);
	uskb_mem_cached(skb, sizeof(*skb));
	pthread_mutex_lock(&shells.lock);
	if (shell_pool_push(&skb, 1))
		uskb_bug("shell_give", NULL, "cannot grow the shell pool");
	pthread_mutex_unlock(&shells.lock);
}

void __uskb_shells_stats(int64_t *created)
{
	pthread_mutex_lock(&shells.lock);
	*created = shells.created;
	pthread_mutex_unlock(&shells.lock);
}

/* ---- heads ----
 *
 * Two sources, as in the kernel:
 * - "kmalloc" heads (alloc_skb, pskb_expand_head): per-thread caches of
 *   fixed-size objects (512 B .. 16 KiB, the size including the shared
 *   info) carved from 32 KiB page blocks; a free goes to the freeing
 *   thread's cache, no atomic. Larger or node-bound heads take a page block
 *   of their own. head_frag = 0.
 * - page_frag heads (uskb_dev_alloc, netdev_alloc_skb): carved from the
 *   thread's page_frag cache, freed by a page reference drop, and able to
 *   travel as a frag (skb_zerocopy, try_coalesce). head_frag = 1.
 */

static struct {
	pthread_mutex_t lock;
	struct {
		void **stack;
		size_t n, cap;
	} c[USKB_HEAD_CLASSES];
	int64_t slab_pages;
} depot = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int depot_push(int c, void **v, size_t n)
{
	if (depot.c[c].n + n > depot.c[c].cap) {
		size_t cap = depot.c[c].cap ? depot.c[c].cap * 2 : 256;
		void **st;

		while (cap < depot.c[c].n + n)
			cap *= 2;
		st = realloc(depot.c[c].stack, cap * sizeof(*st));
		if (!st)
			return -ENOMEM;
		depot.c[c].stack = st;
		depot.c[c].cap = cap;
	}
	memcpy(depot.c[c].stack + depot.c[c].n, v, n * sizeof(*v));
	depot.c[c].n += n;
	return 0;
}

/* Thread cache of class @c empty: bulk from the depot, carving a block if needed. */
void *__uskb_head_refill(struct uskb_tls *t, int c)
{
	struct uskb_head_cache *hc = &t->heads[c];
	unsigned int n = USKB_HEAD_CACHE_BULK;

	pthread_mutex_lock(&depot.lock);
	if (depot.c[c].n < n) {
		struct uskb_page *p = uskb_page_alloc(USKB_PAGE_FRAG_ORDER);
		unsigned int sz = uskb_head_class_size(c), i, cnt;
		void *objs[(USKB_PAGE_SIZE << USKB_PAGE_FRAG_ORDER) / 512];

		if (!p) {
			pthread_mutex_unlock(&depot.lock);
			return NULL;
		}
		p->flags |= USKB_PG_SLAB;
		p->private = (uintptr_t)c;
		cnt = (unsigned int)(uskb_page_size(p) / sz);
		for (i = 0; i < cnt; i++) {
			objs[i] = (char *)p->addr + (size_t)(cnt - 1 - i) * sz;
			uskb_mem_cached(objs[i], sz);
		}
		if (depot_push(c, objs, cnt)) {
			pthread_mutex_unlock(&depot.lock);
			uskb_page_put(p);
			return NULL;
		}
		depot.slab_pages++;
		if (cnt < n)
			n = cnt;
	}
	depot.c[c].n -= n;
	memcpy(hc->obj, depot.c[c].stack + depot.c[c].n, n * sizeof(void *));
	pthread_mutex_unlock(&depot.lock);
	hc->n = n - 1;
	return hc->obj[n - 1];
}

void __uskb_head_flush(struct uskb_tls *t, int c, unsigned int keep)
{
	struct uskb_head_cache *hc = &t->heads[c];

	if (hc->n <= keep)
		return;
	pthread_mutex_lock(&depot.lock);
	if (!depot_push(c, hc->obj + keep, hc->n - keep))
		hc->n = keep;
	pthread_mutex_unlock(&depot.lock);
}

/* Split the ready pairs back into shells and heads (both stay cached). */
void __uskb_ready_flush(struct uskb_tls *t)
{
	int c;

	for (c = 0; c < USKB_HEAD_CLASSES; c++) {
		struct uskb_ready *r = &t->ready[c];
		struct uskb_head_cache *hc = &t->heads[c];

		while (r->n) {
			struct uskb *skb = r->skb[--r->n];
			unsigned char *head;

			uskb_mem_handed_out(skb, sizeof(*skb));
			head = skb->head;
			if (hc->n == USKB_HEAD_CACHE_SIZE)
				__uskb_head_flush(t, c, USKB_HEAD_CACHE_SIZE / 2);
			if (hc->n == USKB_HEAD_CACHE_SIZE)
				uskb_bug("ready_flush", skb, "out of memory growing the head depot");
			hc->obj[hc->n++] = head; /* still poisoned from the ready list */
			uskb_shell_put(t, skb);
		}
	}
}

void __uskb_heads_flush(struct uskb_tls *t)
{
	int c;

	for (c = 0; c < USKB_HEAD_CLASSES; c++)
		__uskb_head_flush(t, c, 0);
}

static unsigned int order_for(size_t bytes)
{
	unsigned int order = 0;

	while (((size_t)USKB_PAGE_SIZE << order) < bytes)
		order++;
	return order;
}

void *__uskb_kmalloc_head_slow(struct uskb_tls *t, unsigned int *size, int node)
{
	struct uskb_page *p;
	unsigned int order;
	int c = uskb_head_class(*size);
	void *data;

	if (c >= 0 && node == USKB_NO_NODE) {
		/* the class cache was empty */
		data = __uskb_head_refill(t, c);
		if (!data) {
			errno = ENOMEM;
			return NULL;
		}
		*size = uskb_head_class_size(c);
		uskb_mem_handed_out(data, *size);
		uskb_tcount_add(&t->c.v[USKB_TC_HEAD_ALLOC], 1);
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
	uskb_tcount_add(&t->c.v[USKB_TC_HEAD_ALLOC], 1);
	return p->addr;
}

void *__uskb_frag_head(struct uskb_tls *t, unsigned int size)
{
	void *data = uskb_page_frag_alloc(&t->frag, size, USKB_CACHE_BYTES);

	if (uskb_likely(data))
		uskb_tcount_add(&t->c.v[USKB_TC_HEAD_ALLOC], 1);
	return data;
}

int64_t __uskb_slab_pages(void)
{
	int64_t n;

	pthread_mutex_lock(&depot.lock);
	n = depot.slab_pages;
	pthread_mutex_unlock(&depot.lock);
	return n;
}

/* ---- stats ---- */

int uskb_stats_get(struct uskb_stats *out)
{
	struct uskb_stats st;
	struct uskb_tcounters sum;
	int64_t created, pending = 0;
	size_t sz;
	int i;

	if (!out || out->sz < sizeof(size_t))
		return -EINVAL;
	sz = out->sz < sizeof(st) ? out->sz : sizeof(st);
	memset(&st, 0, sizeof(st));
	memset(&sum, 0, sizeof(sum));
	pthread_mutex_lock(&reg.lock);
	for (i = 0; i < reg.nslots; i++) {
		fold_all(&sum, &__uskb_owner_tab[i]->c);
		pending += atomic_load_explicit(&__uskb_owner_tab[i]->defer_count,
						memory_order_relaxed);
	}
	st.threads = reg.live;
	pthread_mutex_unlock(&reg.lock);
#define SUM(i) uskb_tcount_read(&sum.v[USKB_TC_##i])
	st.skb_allocs = (uint64_t)SUM(SKB_ALLOC);
	st.skb_frees = (uint64_t)SUM(SKB_FREE);
	st.skbs = SUM(SKB_ALLOC) - SUM(SKB_FREE);
	st.fclones = SUM(FCLONE_ALLOC) - SUM(FCLONE_FREE);
	st.heads = SUM(HEAD_ALLOC) - SUM(HEAD_FREE);
	/* every shell is either live (outside fclone pairs) or cached */
	__uskb_shells_stats(&created);
	st.skbs_cached = created - (st.skbs - (SUM(FC_SKB_ALLOC) - SUM(FC_SKB_FREE)));
	st.cache_misses = (uint64_t)SUM(CACHE_MISS);
	/* every shell allocation is a hit or a miss; fclone halves use no shell */
	st.cache_hits = (uint64_t)(SUM(SKB_ALLOC) - SUM(FC_SKB_ALLOC) - SUM(CACHE_MISS));
	st.deferred = (uint64_t)SUM(DEFERRED);
	st.drained = (uint64_t)SUM(DRAINED);
	st.direct_frees = (uint64_t)SUM(DIRECT);
	st.defer_pending = pending;
#undef SUM
	__uskb_page_stats(&st);
	st.slab_pages = __uskb_slab_pages();
	st.sz = sz;
	memcpy(out, &st, sz);
	return 0;
}

void uskb_stats_print(void *fp)
{
	struct uskb_stats st = { .sz = sizeof(st) };
	FILE *f = fp ? fp : stdout;
	int i;

	uskb_stats_get(&st);
	fprintf(f, "skbs            %lld\n", (long long)st.skbs);
	fprintf(f, "fclones         %lld\n", (long long)st.fclones);
	fprintf(f, "heads           %lld\n", (long long)st.heads);
	fprintf(f, "pages           %lld", (long long)st.pages);
	for (i = 0; i <= USKB_PAGE_MAX_ORDER; i++)
		if (st.pages_by_order[i])
			fprintf(f, " o%d=%lld", i, (long long)st.pages_by_order[i]);
	fprintf(f, "\nslab_pages      %lld\n", (long long)st.slab_pages);
	fprintf(f, "pool_pages_idle %lld\n", (long long)st.pool_pages_idle);
	fprintf(f, "pools           %lld\n", (long long)st.pools);
	fprintf(f, "frag_cache_pages %lld\n", (long long)st.frag_cache_pages);
	fprintf(f, "zero_page_refs  %lld\n", (long long)st.zero_page_refs);
	fprintf(f, "skbs_cached     %lld\n", (long long)st.skbs_cached);
	fprintf(f, "skb_allocs      %llu\n", (unsigned long long)st.skb_allocs);
	fprintf(f, "skb_frees       %llu\n", (unsigned long long)st.skb_frees);
	fprintf(f, "arena_bytes     %llu\n", (unsigned long long)st.arena_bytes);
	fprintf(f, "threads         %lld\n", (long long)st.threads);
	fprintf(f, "cache_hits      %llu\n", (unsigned long long)st.cache_hits);
	fprintf(f, "cache_misses    %llu\n", (unsigned long long)st.cache_misses);
	fprintf(f, "deferred        %llu\n", (unsigned long long)st.deferred);
	fprintf(f, "drained         %llu\n", (unsigned long long)st.drained);
	fprintf(f, "direct_frees    %llu\n", (unsigned long long)st.direct_frees);
	fprintf(f, "defer_pending   %lld\n", (long long)st.defer_pending);
}

bool uskb_stats_all_freed(void)
{
	struct uskb_stats st = { .sz = sizeof(st) };

	uskb_thread_flush();
	uskb_stats_get(&st);
	if (!st.skbs && !st.fclones && !st.heads && st.pages == st.slab_pages && !st.pools &&
	    !st.defer_pending &&
	    !st.zero_page_refs && !st.frag_cache_pages)
		return true;
	fputs("uskb: live objects remain:\n", stderr);
	uskb_stats_print(stderr);
	return false;
}
