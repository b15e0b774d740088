/* SPDX-License-Identifier: MIT */
/*
 * Freeing never fails and never allocates. With allocation failure armed
 * at every point in turn, a free-heavy workload (single and bulk frees
 * that overflow every per-thread cache into the slab, frees of another
 * thread's skbs, a thread exiting with full caches, pool pages) must free
 * everything without consuming a single injected failure; and a thread
 * whose own state cannot be made still frees, through the fallback slot,
 * while its allocations fail cleanly with ENOMEM.
 */
#include "t.h"

#define REQUIRE(c)                                                            \
	do {                                                                  \
		if (!(c)) {                                                   \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #c); \
			exit(1);                                              \
		}                                                             \
	} while (0)

#define N 400 /* past every cache: 64 shells, 59 ready pairs, 64 kbufs per class */

static struct uskb *skbs[N];
static struct uskb_page_pool *pool;

/* A mix of what frees take apart: kbuf and page_frag heads, frags, clones, fclones, pool pages. */
static void make_all(void)
{
	int i;

	for (i = 0; i < N; i++) {
		struct uskb *skb;

		switch (i % 6) {
		case 0:
			skb = uskb_alloc(64u << (i % 5)); /* several kbuf classes */
			break;
		case 1:
			skb = uskb_dev_alloc(200);
			break;
		case 2:
			skb = uskb_alloc(100);
			if (skb) {
				struct uskb_page *pg = uskb_page_pool_alloc(pool);

				REQUIRE(pg != NULL);
				uskb_add_rx_frag(skb, 0, pg, 0, 1000, USKB_PAGE_SIZE);
			}
			break;
		case 3:
			skb = uskb_clone(skbs[i - 3]);
			break;
		case 4:
			skb = __uskb_alloc(300, USKB_ALLOC_FCLONE, USKB_NO_NODE);
			break;
		default:
			skb = uskb_alloc(20000); /* a page-block head */
			break;
		}
		REQUIRE(skb != NULL);
		skbs[i] = skb;
	}
}

struct remote {
	struct uskb **skbs;
	int n;
	bool bulk;
};

/* Free on another thread (deferred to the owner, or direct), then exit with full caches. */
static void *remote_free(void *arg)
{
	struct remote *r = arg;
	int i;

	if (r->bulk) {
		uskb_free_bulk(r->skbs, (unsigned int)r->n);
	} else {
		for (i = 0; i < r->n; i++)
			uskb_free(r->skbs[i]);
	}
	return NULL;
}

static void run_remote(struct uskb **v, int n, bool bulk)
{
	struct remote r = { .skbs = v, .n = n, .bulk = bulk };
	pthread_t th;

	REQUIRE(pthread_create(&th, NULL, remote_free, &r) == 0);
	pthread_join(th, NULL);
}

static struct uskb *nested;

/* A destructor that frees another skb while its thread still cannot make its state. */
static void free_nested(struct uskb *skb)
{
	(void)skb;
	uskb_fault_inject(1);
	uskb_free(nested); /* through the fallback slot its caller holds */
	nested = NULL;
}

/* A thread whose state cannot be made: each of its calls tries, and fails, again. */
static void *stateless(void *arg)
{
	struct uskb **v = arg;
	struct uskb *skb;
	int i;

	for (i = 0; i < N / 2; i++) {
		uskb_fault_inject(1);
		uskb_free(v[i]);
		/* the free tried to make the thread's state, and that failed */
		CHECK(uskb_fault_pending() == 0);
	}
	uskb_fault_inject(1);
	errno = 0;
	skb = uskb_alloc(100);
	CHECK(skb == NULL);
	CHECK_EQ(errno, ENOMEM);
	uskb_fault_inject(1);
	uskb_free_bulk(v + N / 2, N / 2);
	CHECK(uskb_fault_pending() == 0);
	uskb_fault_inject(0);
	/* a flush without state drains what exited threads left, through the fallback */
	uskb_thread_flush();
	return NULL;
}

int main(void)
{
	struct uskb_page_pool_opts po = { .sz = sizeof(po), .pool_size = 64 };
	long n, left;
	int k;

	/*
	 * First, while no thread has exited (so no slot waits to be adopted
	 * and a new thread's state must be allocated): a thread that cannot
	 * make its state still frees, through the fallback slot, and its
	 * allocations return NULL with ENOMEM.
	 */
	{
		pthread_t th;

		pool = uskb_page_pool_create(&po);
		REQUIRE(pool != NULL);
		struct uskb *fl = uskb_alloc(64);

		make_all();
		/*
		 * Freeing skbs[1] frees more inside the fallback slot: its
		 * frag_list, and through its destructor one more skb.
		 */
		REQUIRE(fl != NULL);
		uskb_put_zero(fl, 10);
		uskb_append_frag_list(skbs[1], fl);
		nested = uskb_alloc(100);
		REQUIRE(nested != NULL);
		skbs[1]->destructor = free_nested;
		REQUIRE(pthread_create(&th, NULL, stateless, skbs) == 0);
		pthread_join(th, NULL);
		CHECK(nested == NULL);
		uskb_page_pool_destroy(pool);
		CHECK(uskb_stats_all_freed());
		printf("a thread without state: its frees went through, its allocation failed with ENOMEM\n");
	}

	/* every point of a free-heavy workload, with the n-th allocation armed to fail */
	for (n = 1; n <= 64 && !t_failures; n++) {
		pool = uskb_page_pool_create(&po);
		REQUIRE(pool != NULL);
		make_all();
		uskb_fault_inject(n);
		/* on a thread with state, freeing allocates nothing */
		for (k = 0; k < N / 4; k++)
			uskb_free(skbs[k]);
		uskb_free_bulk(skbs + N / 4, N / 4);
		uskb_thread_flush();
		CHECK_EQ(uskb_fault_pending(), n);
		/* other threads: only making their state may allocate (and fail) */
		run_remote(skbs + N / 2, N / 4, false);
		run_remote(skbs + 3 * N / 4, N / 4, true);
		left = uskb_fault_pending();
		uskb_fault_inject(0);
		CHECK(left == n || left == n - 1);
		uskb_page_pool_destroy(pool);
		CHECK(uskb_stats_all_freed());
	}
	printf("frees with a failure armed at points 1..%ld: no free failed or allocated\n", n - 1);
	return t_end("free-oom");
}
