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

__thread struct uskb_tls *__uskb_tls_ptr;

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

static void fold(uskb_tcount_t *dst, uskb_tcount_t *src)
{
	uskb_tcount_add(dst, uskb_tcount_read(src));
}

/* A thread is going away: return its caches and fold its counters. */
void __uskb_tls_release(struct uskb_tls *t)
{
	__uskb_shell_flush(t, 0);
	uskb_page_frag_cache_drain(&t->frag);
	pthread_mutex_lock(&reg.lock);
	fold(&reg.retired.skb_alloc, &t->c.skb_alloc);
	fold(&reg.retired.skb_free, &t->c.skb_free);
	fold(&reg.retired.fclone_alloc, &t->c.fclone_alloc);
	fold(&reg.retired.fclone_free, &t->c.fclone_free);
	fold(&reg.retired.head_alloc, &t->c.head_alloc);
	fold(&reg.retired.head_free, &t->c.head_free);
	fold(&reg.retired.shell_alloc, &t->c.shell_alloc);
	fold(&reg.retired.shell_free, &t->c.shell_free);
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

/* ---- heads ---- */

static unsigned int order_for(size_t bytes)
{
	unsigned int order = 0;

	while (((size_t)USKB_PAGE_SIZE << order) < bytes)
		order++;
	return order;
}

/*
 * @size already includes the shared info. Heads up to the page_frag block
 * come from the thread's page_frag cache; larger ones (or node-bound ones)
 * take a block of their own. Either way the head lies in page memory, so it
 * can be handed on as a frag (skb_zerocopy, try_coalesce).
 */
void *__uskb_head_alloc(struct uskb_tls *t, unsigned int size, int node)
{
	struct uskb_page *p;
	unsigned int order;

	if (uskb_likely(node == USKB_NO_NODE &&
			size <= (USKB_PAGE_SIZE << USKB_PAGE_FRAG_ORDER))) {
		void *data = uskb_page_frag_alloc(&t->frag, size, USKB_CACHE_BYTES);

		if (uskb_likely(data))
			uskb_tcount_add(&t->c.head_alloc, 1);
		return data;
	}
	order = order_for(size);
	if (order > USKB_PAGE_MAX_ORDER) {
		errno = EINVAL;
		return NULL;
	}
	p = uskb_page_alloc_node(order, node);
	if (!p)
		return NULL;
	uskb_tcount_add(&t->c.head_alloc, 1);
	return p->addr;
}

void __uskb_head_free(unsigned char *head)
{
	uskb_page_put(uskb_virt_to_page(head));
	uskb_tcount_add(&uskb_tls()->c.head_free, 1);
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
	fold(&sum.skb_alloc, &reg.retired.skb_alloc);
	fold(&sum.skb_free, &reg.retired.skb_free);
	fold(&sum.fclone_alloc, &reg.retired.fclone_alloc);
	fold(&sum.fclone_free, &reg.retired.fclone_free);
	fold(&sum.head_alloc, &reg.retired.head_alloc);
	fold(&sum.head_free, &reg.retired.head_free);
	fold(&sum.shell_alloc, &reg.retired.shell_alloc);
	fold(&sum.shell_free, &reg.retired.shell_free);
	for (t = reg.head; t; t = t->reg_next) {
		fold(&sum.skb_alloc, &t->c.skb_alloc);
		fold(&sum.skb_free, &t->c.skb_free);
		fold(&sum.fclone_alloc, &t->c.fclone_alloc);
		fold(&sum.fclone_free, &t->c.fclone_free);
		fold(&sum.head_alloc, &t->c.head_alloc);
		fold(&sum.head_free, &t->c.head_free);
		fold(&sum.shell_alloc, &t->c.shell_alloc);
		fold(&sum.shell_free, &t->c.shell_free);
	}
	pthread_mutex_unlock(&reg.lock);
	st.skb_allocs = (uint64_t)uskb_tcount_read(&sum.skb_alloc);
	st.skb_frees = (uint64_t)uskb_tcount_read(&sum.skb_free);
	st.skbs = uskb_tcount_read(&sum.skb_alloc) - uskb_tcount_read(&sum.skb_free);
	st.fclones = uskb_tcount_read(&sum.fclone_alloc) - uskb_tcount_read(&sum.fclone_free);
	st.heads = uskb_tcount_read(&sum.head_alloc) - uskb_tcount_read(&sum.head_free);
	__uskb_shells_stats(&created);
	st.skbs_cached = created - (uskb_tcount_read(&sum.shell_alloc) -
				     uskb_tcount_read(&sum.shell_free));
	__uskb_page_stats(&st);
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
	fprintf(f, "\npool_pages_idle %lld\n", (long long)st.pool_pages_idle);
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
	if (!st.skbs && !st.fclones && !st.heads && !st.pages && !st.pools &&
	    !st.zero_page_refs && !st.frag_cache_pages)
		return true;
	fputs("uskb: live objects remain:\n", stderr);
	uskb_stats_print(stderr);
	return false;
}
