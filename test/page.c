/* SPDX-License-Identifier: MIT */
/* mem layer: pages, orders, address lookup, pools, zero page, page_frag. */
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include "t.h"

static void test_pages(void)
{
	struct uskb_page *p[USKB_PAGE_MAX_ORDER + 1];
	struct uskb_stats st = { .sz = sizeof(st) };
	unsigned int o;

	for (o = 0; o <= USKB_PAGE_MAX_ORDER; o++) {
		char *a;

		p[o] = uskb_page_alloc(o);
		CHECK(p[o]);
		if (!p[o])
			return;
		a = uskb_page_address(p[o]);
		CHECK_EQ(uskb_page_size(p[o]), (size_t)USKB_PAGE_SIZE << o);
		CHECK_EQ((uintptr_t)a % USKB_PAGE_SIZE, 0);
		CHECK_EQ(uskb_page_ref_count(p[o]), 1);
		memset(a, (int)o, uskb_page_size(p[o]));
		/* O(1) lookup from any byte of the block */
		CHECK(uskb_virt_to_page(a) == p[o]);
		CHECK(uskb_virt_to_page(a + uskb_page_size(p[o]) - 1) == p[o]);
		CHECK(uskb_addr_is_page(a + 17));
	}
	CHECK(!uskb_addr_is_page(&st));
	uskb_stats_get(&st);
	CHECK_EQ(st.pages_by_order[3], 1);
	uskb_page_get(p[2]);
	CHECK_EQ(uskb_page_ref_count(p[2]), 2);
	uskb_page_put(p[2]);
	CHECK_EQ(uskb_page_ref_count(p[2]), 1);
	for (o = 0; o <= USKB_PAGE_MAX_ORDER; o++)
		uskb_page_put(p[o]);
	errno = 0;
	CHECK(uskb_page_alloc(USKB_PAGE_MAX_ORDER + 1) == NULL && errno == EINVAL);
	CHECK(uskb_page_alloc_node(0, 4000) == NULL && errno == EINVAL);
	/* node 0 exists everywhere: the node is recorded */
	p[0] = uskb_page_alloc_node(0, 0);
	CHECK(p[0] && p[0]->node == 0);
	uskb_page_put(p[0]);
}

static void test_pool(void)
{
	struct uskb_page_pool_opts o = { .sz = sizeof(o), .order = 1, .node = -1, .pool_size = 4 };
	struct uskb_page_pool *pool = uskb_page_pool_create(&o);
	struct uskb_page_pool_stats ps;
	struct uskb_page *p[6], *q;
	int i;

	CHECK(pool);
	for (i = 0; i < 6; i++) {
		p[i] = uskb_page_pool_alloc(pool);
		CHECK(p[i] && p[i]->pp == pool && p[i]->order == 1);
	}
	uskb_page_pool_get_stats(pool, &ps);
	CHECK_EQ(ps.alloc_slow, 6);
	CHECK_EQ(ps.in_use, 6);
	for (i = 0; i < 6; i++)
		uskb_page_put(p[i]); /* all six into this thread's pool cache */
	uskb_page_pool_get_stats(pool, &ps);
	CHECK_EQ(ps.recycled, 6);
	CHECK_EQ(ps.released, 0);
	CHECK_EQ(ps.idle, 6);
	CHECK_EQ(ps.in_use, 0);
	q = uskb_page_pool_alloc(pool);
	CHECK(q == p[5]); /* LIFO: the last recycled comes back first */
	uskb_page_pool_get_stats(pool, &ps);
	CHECK_EQ(ps.alloc_fast, 1);
	CHECK_EQ(ps.in_use, 1);
	/* a pool page travelling in an skb returns to the pool on the last put */
	{
		struct uskb *skb = uskb_alloc(64);

		uskb_add_rx_frag(skb, 0, q, 0, 100, 8192);
		uskb_free(skb);
		uskb_page_pool_get_stats(pool, &ps);
		CHECK_EQ(ps.idle, 6);
		CHECK_EQ(ps.in_use, 0);
	}
	/* the thread cache flushed: 4 fit the ring (pool_size), 2 go to the arena */
	uskb_thread_flush();
	uskb_page_pool_get_stats(pool, &ps);
	CHECK_EQ(ps.idle, 4);
	CHECK_EQ(ps.released, 2);
	q = uskb_page_pool_alloc(pool); /* from the ring now */
	uskb_page_pool_get_stats(pool, &ps);
	CHECK_EQ(ps.alloc_fast, 2);
	uskb_page_put(q);
	/* destroy with a page out: the pool lives until it comes back */
	q = uskb_page_pool_alloc(pool);
	uskb_page_pool_destroy(pool);
	{
		struct uskb_stats st = { .sz = sizeof(st) };

		uskb_stats_get(&st);
		CHECK_EQ(st.pools, 1);
		uskb_page_put(q);
		uskb_stats_get(&st);
		CHECK_EQ(st.pools, 0);
	}
	o.sz = 3;
	CHECK(uskb_page_pool_create(&o) == NULL && errno == EINVAL);
}

static void test_zero_page(void)
{
	struct uskb_page *z = uskb_zero_page();
	const unsigned char *a = uskb_page_address(z);
	struct uskb_stats st = { .sz = sizeof(st) };
	int i, nonzero = 0, status;
	pid_t pid;

	CHECK(z == uskb_zero_page());
	CHECK(z->flags & USKB_PG_ZERO);
	for (i = 0; i < (int)USKB_PAGE_SIZE; i++)
		nonzero |= a[i];
	CHECK(!nonzero);
	uskb_page_get(z);
	uskb_page_get(z);
	uskb_stats_get(&st);
	CHECK_EQ(st.zero_page_refs, 2);
	uskb_page_put(z);
	uskb_page_put(z);
	CHECK(uskb_zero_page_node(0) != NULL);
	/* the zero page is mapped read-only: a write faults */
	pid = fork();
	if (pid == 0) {
		((volatile unsigned char *)a)[5] = 1;
		_exit(0);
	}
	waitpid(pid, &status, 0);
	/* SIGSEGV; under ASan its handler reports the SEGV and exits non-zero */
	CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV) ||
	      (WIFEXITED(status) && WEXITSTATUS(status) != 0));
}

static void test_page_frag(void)
{
	struct uskb_page_frag_cache nc = { .node = -1 };
	void *v[200];
	struct uskb_page *pg;
	int i;

	v[0] = uskb_page_frag_alloc(&nc, 1000, 64);
	CHECK(v[0] && (uintptr_t)v[0] % 64 == 0);
	pg = uskb_virt_to_page(v[0]);
	CHECK_EQ(pg->order, USKB_PAGE_FRAG_ORDER);
	v[1] = uskb_page_frag_alloc(&nc, 1000, 64);
	CHECK(uskb_virt_to_page(v[1]) == pg); /* same block, no new page */
	CHECK((char *)v[1] < (char *)v[0]);   /* carved downwards */
	uskb_page_frag_free(v[0]);
	uskb_page_frag_free(v[1]);
	/* fill the block; with all fragments back, the block is reused in place */
	for (i = 0; i < 40; i++) {
		v[i] = uskb_page_frag_alloc(&nc, 1000, 64);
		uskb_page_frag_free(v[i]);
	}
	CHECK(uskb_virt_to_page(v[39]) == pg);
	/* a fragment still out forces a fresh block; the old one is freed by it */
	v[0] = uskb_page_frag_alloc(&nc, 30000, 64);
	v[1] = uskb_page_frag_alloc(&nc, 30000, 64);
	CHECK(uskb_virt_to_page(v[1]) != uskb_virt_to_page(v[0]));
	uskb_page_frag_free(v[0]);
	uskb_page_frag_free(v[1]);
	CHECK(uskb_page_frag_alloc(&nc, 100, 3) == NULL && errno == EINVAL);
	CHECK(uskb_page_frag_alloc(&nc, 40000, 64) == NULL && errno == EINVAL);
	uskb_page_frag_cache_drain(&nc);
}

/* the zero page is writable inside a window pin, and read-only again after */
static int pin_cb(void *arg)
{
	volatile unsigned char *z = arg;

	z[7] = 0; /* faults unless writable; zero keeps it the zero page */
	return 42;
}

/* the window: every page uskb hands out lies in it, and it only grows */
static void test_window(void)
{
	struct uskb_page *p = uskb_page_alloc(3), *z = uskb_zero_page();
	struct uskb *skb = uskb_alloc(1000);
	size_t len, len2;
	char *w = uskb_page_window(&len);
	int status;
	pid_t pid;

	CHECK(w && len >= (4u << 20) && len % (4u << 20) == 0);
	if (!w || !p || !skb) {
		if (p)
			uskb_page_put(p);
		uskb_free(skb);
		return;
	}
	/* a page block, the zero page and an skb head: all inside */
	CHECK((char *)uskb_page_address(p) >= w &&
	      (char *)uskb_page_address(p) + (USKB_PAGE_SIZE << 3) <= w + len);
	CHECK((char *)uskb_page_address(z) >= w && (char *)uskb_page_address(z) < w + len);
	CHECK((char *)skb->head >= w && (char *)skb->head < w + len);
	CHECK_EQ(uskb_page_window_pin(pin_cb, uskb_page_address(z)), 42);
	/* read-only again: a write faults */
	pid = fork();
	if (pid == 0) {
		((volatile unsigned char *)uskb_page_address(z))[7] = 1;
		_exit(0);
	}
	waitpid(pid, &status, 0);
	CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV) ||
	      (WIFEXITED(status) && WEXITSTATUS(status) != 0));
	/* it grows with the arenas: the same start, more length */
	{
		struct uskb_page *more[8];

		for (int i = 0; i < 8; i++)
			more[i] = uskb_page_alloc(USKB_PAGE_MAX_ORDER);
		CHECK(uskb_page_window(&len2) == w && len2 > len);
		for (int i = 0; i < 8; i++)
			if (more[i]) {
				CHECK((char *)uskb_page_address(more[i]) >= w &&
				      (char *)uskb_page_address(more[i]) < w + len2);
				uskb_page_put(more[i]);
			}
	}
	uskb_page_put(p);
	uskb_free(skb);
}

/* ---- per-thread page lists ---- */

#define PCP_N 200

struct pcp_arg {
	struct uskb_page *p[PCP_N];
	long long cached, pages;
};

static void *pcp_free_all(void *arg)
{
	struct pcp_arg *a = arg;
	struct uskb_stats st = { .sz = sizeof(st) };
	int i;

	for (i = 0; i < PCP_N; i++)
		uskb_page_put(a->p[i]);
	uskb_stats_get(&st);
	a->cached = st.pages_cached;
	a->pages = st.pages;
	return NULL;
}

static void test_page_lists(void)
{
	struct uskb_stats st0 = { .sz = sizeof(st0) }, st = { .sz = sizeof(st) };
	struct pcp_arg *a = calloc(1, sizeof(*a));
	struct uskb_page *p, *q;
	long long mine;
	pthread_t th;
	int i;

	if (!a)
		abort();
	uskb_thread_flush();
	uskb_stats_get(&st0);
	CHECK_EQ(st0.pages_cached, 0);
	/* a freed block stays with the thread, free, and comes back first */
	p = uskb_page_alloc(0);
	uskb_page_put(p);
	uskb_stats_get(&st);
	CHECK_EQ(st.pages, st0.pages);
	CHECK(st.pages_cached >= 1);
	q = uskb_page_alloc(0);
	CHECK(q == p);
	CHECK_EQ(uskb_page_ref_count(q), 1);
	uskb_page_put(q);
	/* node-bound blocks do not enter the lists */
	uskb_stats_get(&st0);
	p = uskb_page_alloc_node(1, 0);
	CHECK(p && p->node == 0);
	uskb_page_put(p);
	uskb_stats_get(&st);
	CHECK_EQ(st.pages_cached, st0.pages_cached);
	CHECK_EQ(st.pages, st0.pages);

	/* another thread frees 200 blocks: its list stays bounded, and its exit returns it */
	for (i = 0; i < PCP_N; i++) {
		a->p[i] = uskb_page_alloc(0);
		CHECK(a->p[i]);
		if (!a->p[i])
			abort();
	}
	uskb_stats_get(&st);
	CHECK_EQ(st.pages, st0.pages + PCP_N);
	mine = st.pages_cached;
	CHECK(pthread_create(&th, NULL, pcp_free_all, a) == 0);
	pthread_join(th, NULL);
	CHECK_EQ(a->pages, st0.pages);
	CHECK(a->cached > mine && a->cached - mine <= 64);
	uskb_stats_get(&st);
	CHECK_EQ(st.pages_cached, mine);
	CHECK_EQ(st.pages, st0.pages);
	/* and the returned blocks are whole: every one allocates again, unshared */
	for (i = 0; i < PCP_N; i++) {
		a->p[i] = uskb_page_alloc(0);
		CHECK(a->p[i] && uskb_page_ref_count(a->p[i]) == 1);
	}
	for (i = 0; i < PCP_N; i++)
		for (int j = i + 1; j < PCP_N; j++)
			CHECK(a->p[i] != a->p[j]);
	for (i = 0; i < PCP_N; i++)
		uskb_page_put(a->p[i]);
	uskb_thread_flush();
	uskb_stats_get(&st);
	CHECK_EQ(st.pages_cached, 0);
	CHECK_EQ(st.pages, st0.pages);
	free(a);
}

/* a thread that leaves with every cache in use: skbs, page_frag heads, page lists */
static void *pcp_busy_exit(void *arg)
{
	struct uskb *v[64];
	int i;

	(void)arg;
	for (i = 0; i < 64; i++) {
		struct uskb_page *pg = uskb_page_alloc(0);

		v[i] = i & 1 ? uskb_dev_alloc(200) : uskb_alloc(200);
		if (!v[i] || !pg)
			abort();
		uskb_add_rx_frag(v[i], 0, pg, 0, 100, USKB_PAGE_SIZE);
	}
	for (i = 0; i < 64; i++)
		uskb_free(v[i]); /* the pages to this thread's list, the rest to its caches */
	return NULL;
}

static pthread_barrier_t pcp_bar;

/* frees its pages, then waits through the parent's fork */
static void *pcp_hold(void *arg)
{
	struct pcp_arg *a = arg;
	int i;

	for (i = 0; i < PCP_N; i++)
		uskb_page_put(a->p[i]);
	pthread_barrier_wait(&pcp_bar);
	pthread_barrier_wait(&pcp_bar);
	return NULL;
}

static void test_page_lists_exit_fork(void)
{
	struct uskb_stats st0 = { .sz = sizeof(st0) }, st = { .sz = sizeof(st) };
	struct pcp_arg *a = calloc(1, sizeof(*a));
	pthread_t th;
	pid_t pid;
	int i, status;

	if (!a)
		abort();
	uskb_thread_flush();
	uskb_stats_get(&st0);
	/* its exit's destructors, in whatever order, leave nothing on any list */
	CHECK(pthread_create(&th, NULL, pcp_busy_exit, NULL) == 0);
	pthread_join(th, NULL);
	uskb_stats_get(&st);
	CHECK_EQ(st.pages_cached, st0.pages_cached);
	/* (blocks carved into heads stay with the slab) */
	CHECK_EQ(st.pages - st.slab_pages, st0.pages - st0.slab_pages);
	CHECK(uskb_stats_all_freed());

	/* a fork's child gets back the lists of threads it does not have */
	for (i = 0; i < PCP_N; i++)
		if (!(a->p[i] = uskb_page_alloc(0)))
			abort();
	pthread_barrier_init(&pcp_bar, NULL, 2);
	CHECK(pthread_create(&th, NULL, pcp_hold, a) == 0);
	pthread_barrier_wait(&pcp_bar);
	uskb_stats_get(&st0);
	CHECK(st0.pages_cached > 0);
	pid = fork();
	if (pid == 0) {
		struct uskb_stats c = { .sz = sizeof(c) };

		uskb_thread_flush();
		uskb_stats_get(&c);
		_exit(c.pages_cached == 0 && c.pages == st0.pages ? 0 : 1);
	}
	CHECK(pid > 0);
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
	pthread_barrier_wait(&pcp_bar);
	pthread_join(th, NULL);
	pthread_barrier_destroy(&pcp_bar);
	free(a);
}

int main(void)
{
	test_pages();
	test_page_lists();
	test_page_lists_exit_fork();
	test_pool();
	test_zero_page();
	test_page_frag();
	test_window();
	return t_end("page");
}
