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

#include "internal.h"

__thread struct uskb_tls *__uskb_tls_ptr __attribute__((tls_model("initial-exec")));

#ifdef USKB_VALGRIND
bool __uskb_on_valgrind;

__attribute__((constructor)) static void detect_valgrind(void)
{
	__uskb_on_valgrind = RUNNING_ON_VALGRIND != 0;
}
#endif

static pthread_key_t tls_key;
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;

/* Registry of live thread states; counters of exited threads fold into retired. */
static struct {
	pthread_mutex_t lock;
	struct uskb_tls *head;
	struct uskb_tcounters retired;
	int next_id;
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
	t = calloc(1, sizeof(*t));
	if (!t)
		uskb_bug("tls", NULL, "out of memory creating thread state");
	t->frag.node = USKB_NO_NODE;
	pthread_mutex_lock(&reg.lock);
	t->id = reg.next_id++;
	t->reg_next = reg.head;
	if (reg.head)
		reg.head->reg_prev = t;
	reg.head = t;
	pthread_mutex_unlock(&reg.lock);
	pthread_setspecific(tls_key, t);
	__uskb_tls_ptr = t;
	return t;
}

static void fold_all(struct uskb_tcounters *dst, struct uskb_tcounters *src)
{
	int i;

	for (i = 0; i < USKB_TC_NR; i++)
		uskb_tcount_add(&dst->v[i], uskb_tcount_read(&src->v[i]));
}

/* A thread is going away: return its caches and fold its counters. */
void __uskb_tls_release(struct uskb_tls *t)
{
	__uskb_shell_flush(t, 0);
	__uskb_heads_flush(t);
	uskb_page_frag_cache_drain(&t->frag);
	pthread_mutex_lock(&reg.lock);
	fold_all(&reg.retired, &t->c);
	if (t->reg_prev)
		t->reg_prev->reg_next = t->reg_next;
	else
		reg.head = t->reg_next;
	if (t->reg_next)
		t->reg_next->reg_prev = t->reg_prev;
	pthread_mutex_unlock(&reg.lock);
	if (__uskb_tls_ptr == t)
		__uskb_tls_ptr = NULL;
	free(t);
}

void uskb_thread_flush(void)
{
	struct uskb_tls *t = __uskb_tls_ptr;

	if (!t)
		return;
	__uskb_shell_flush(t, 0);
	__uskb_heads_flush(t);
	uskb_page_frag_cache_drain(&t->frag);
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

/* Cache empty: take a bulk from the global pool (growing it by a slab). */
struct uskb *__uskb_shell_refill(struct uskb_tls *t)
{
	unsigned int n;

	pthread_mutex_lock(&shells.lock);
	if (shells.n < USKB_SHELL_CACHE_BULK) {
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
	n = USKB_SHELL_CACHE_BULK;
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
	struct uskb_tls *t;
	int64_t created;
	size_t sz;

	if (!out || out->sz < sizeof(size_t))
		return -EINVAL;
	sz = out->sz < sizeof(st) ? out->sz : sizeof(st);
	memset(&st, 0, sizeof(st));
	memset(&sum, 0, sizeof(sum));
	pthread_mutex_lock(&reg.lock);
	fold_all(&sum, &reg.retired);
	for (t = reg.head; t; t = t->reg_next)
		fold_all(&sum, &t->c);
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
}

bool uskb_stats_all_freed(void)
{
	struct uskb_stats st = { .sz = sizeof(st) };

	uskb_thread_flush();
	uskb_stats_get(&st);
	if (!st.skbs && !st.fclones && !st.heads && st.pages == st.slab_pages && !st.pools &&
	    !st.zero_page_refs && !st.frag_cache_pages)
		return true;
	fputs("uskb: live objects remain:\n", stderr);
	uskb_stats_print(stderr);
	return false;
}
