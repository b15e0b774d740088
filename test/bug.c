/* SPDX-License-Identifier: MIT */
/*
 * Kernel-style misuse goes to uskb_bug(): a report naming the operation and
 * the skb geometry, then abort — never memory corruption. Each case runs in
 * a child; a replaced handler is shown with longjmp.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include "t.h"

typedef void (*misuse_fn)(void);

static void put_past_end(void)
{
	struct uskb *skb = uskb_alloc(64);

	uskb_put(skb, (unsigned int)uskb_tailroom(skb) + 1);
}

static void push_below_head(void)
{
	struct uskb *skb = uskb_alloc(64);

	uskb_reserve(skb, 8);
	uskb_push(skb, 9);
}

static void put_nonlinear(void)
{
	struct uskb *skb = uskb_alloc(64);

	uskb_add_rx_frag(skb, 0, uskb_page_alloc(0), 0, 10, 10);
	uskb_put(skb, 1);
}

static void pull_into_frags(void)
{
	struct uskb *skb = uskb_alloc(64);

	uskb_put(skb, 4);
	uskb_add_rx_frag(skb, 0, uskb_page_alloc(0), 0, 10, 10);
	uskb_pull(skb, 5);
}

static void trim_nonlinear(void)
{
	struct uskb *skb = uskb_alloc(64);

	uskb_add_rx_frag(skb, 0, uskb_page_alloc(0), 0, 10, 10);
	uskb_trim(skb, 5);
}

static void double_free(void)
{
	struct uskb *skb = uskb_alloc(64);

	uskb_free(skb);
	uskb_free(skb);
}

static void expand_shared(void)
{
	struct uskb *skb = uskb_alloc(64);

	uskb_get(skb);
	uskb_expand_head(skb, 16, 0);
}

static void store_zero_page(void)
{
	struct uskb *skb = uskb_alloc(64);
	char x[8] = "written";

	uskb_page_get(uskb_zero_page());
	uskb_add_rx_frag(skb, 0, uskb_zero_page(), 0, 100, 0);
	uskb_store_bits(skb, 10, x, 8);
}

static void zero_page_base_put(void)
{
	uskb_page_put(uskb_zero_page());
}

static void reserve_nonempty(void)
{
	struct uskb *skb = uskb_alloc(64);

	uskb_put(skb, 1);
	uskb_reserve(skb, 4);
}

static void frag_index(void)
{
	struct uskb *skb = uskb_alloc(64);

	uskb_fill_page_desc(skb, USKB_MAX_SKB_FRAGS, uskb_page_alloc(0), 0, 1);
}

static void split_cloned(void)
{
	struct uskb *skb = uskb_alloc(64), *c, *n = uskb_alloc(64);

	uskb_put(skb, 10);
	c = uskb_clone(skb);
	(void)c;
	uskb_split(skb, n, 5);
}

static void frag_list_cloned(void)
{
	struct uskb *skb = uskb_alloc(64), *c = uskb_clone(skb);

	(void)c;
	uskb_append_frag_list(skb, uskb_alloc(64));
}

/* the first free defers it to its owner's list; the second must still be caught */
static void double_free_deferred(void)
{
	struct uskb *skb = t_alloc_on_other_thread(64);

	uskb_free(skb);
	uskb_free(skb);
}

/* a burst of a live thread's skbs, deferred to it: a second free of one must be caught */
static struct uskb *live_burst[8];
static pthread_barrier_t live_bar;

static void *alloc_burst_and_wait(void *arg)
{
	(void)arg;
	if (uskb_alloc_bulk(live_burst, 8, 64))
		abort();
	pthread_barrier_wait(&live_bar); /* the burst is ready */
	pthread_barrier_wait(&live_bar); /* not reached: the second free aborts */
	return NULL;
}

static void double_free_deferred_burst(void)
{
	pthread_t th;

	pthread_barrier_init(&live_bar, NULL, 2);
	pthread_create(&th, NULL, alloc_burst_and_wait, NULL);
	pthread_barrier_wait(&live_bar);
	uskb_free_bulk(live_burst, 8);
	uskb_free(live_burst[3]); /* carried in the burst's first skb, tagged clean */
	pthread_barrier_wait(&live_bar);
	pthread_join(th, NULL);
}

/* a burst of a dead thread's skbs: freed here, the cached ones must say users 0 */
static struct uskb *dead_burst[8];

static void *alloc_burst_and_exit(void *arg)
{
	(void)arg;
	if (uskb_alloc_bulk(dead_burst, 8, 64))
		abort();
	return NULL;
}

static void double_free_dead_owner(void)
{
	pthread_t th;

	uskb_free(uskb_alloc(64)); /* a slot of our own first */
	pthread_create(&th, NULL, alloc_burst_and_exit, NULL);
	pthread_join(th, NULL);
	uskb_free_bulk(dead_burst, 8);
	uskb_free(dead_burst[7]); /* carried in the burst's first skb, tagged clean */
}

/* three copies of an skb with two users in one burst: the run's count finds it */
static void double_free_run(void)
{
	struct uskb *skb = uskb_get(uskb_alloc(64)), *v[3] = { skb, skb, skb };

	uskb_free_bulk(v, 3);
}

static const struct {
	const char *name;
	misuse_fn fn;
	const char *expect;
} cases[] = {
	{ "put past end", put_past_end, "skb_over_panic" },
	{ "push below head", push_below_head, "skb_under_panic" },
	{ "put on nonlinear", put_nonlinear, "nonlinear" },
	{ "pull into frags", pull_into_frags, "__skb_pull" },
	{ "trim nonlinear", trim_nonlinear, "nonlinear" },
	{ "double free", double_free, "double free" },
	{ "double free, deferred", double_free_deferred, "double free" },
	{ "double free, in a burst", double_free_deferred_burst, "double free" },
	{ "double free, dead owner", double_free_dead_owner, "double free" },
	{ "double free, one run", double_free_run, "in a burst" },
	{ "expand shared", expand_shared, "shared" },
	{ "store into zero page", store_zero_page, "zero page" },
	{ "put zero page base ref", zero_page_base_put, "zero page" },
	{ "reserve non-empty", reserve_nonempty, "reserve" },
	{ "frag index", frag_index, "out of range" },
	{ "split cloned", split_cloned, "cloned" },
	{ "frag_list of a clone", frag_list_cloned, "cloned" },
};

static void call_case(void *arg)
{
	((misuse_fn)arg)();
}

static void run_case(int i)
{
	char out[4096];
	int status = t_run_child(call_case, (void *)cases[i].fn, out, sizeof(out));

	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT || !strstr(out, "uskb BUG") ||
	    !strstr(out, cases[i].expect)) {
		fprintf(stderr, "case '%s': status %#x, report:\n%s\n", cases[i].name, status, out);
		t_failures++;
	} else {
		printf("%-24s caught: %.*s\n", cases[i].name, (int)strcspn(out, "\n"), out);
	}
}

static sigjmp_buf jb;
static char last_report[1024];

static void handler(const char *report)
{
	snprintf(last_report, sizeof(last_report), "%s", report);
	siglongjmp(jb, 1);
}

int main(void)
{
	unsigned int i;
	struct uskb *skb;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
#ifdef HAVE_ASAN
		/* the freed shell is poisoned: ASan reports first (test/uaf covers it) */
		if (cases[i].fn == double_free || cases[i].fn == double_free_deferred ||
		    cases[i].fn == double_free_deferred_burst ||
		    cases[i].fn == double_free_dead_owner)
			continue;
#endif
		run_case((int)i);
	}

	/* a replaced handler sees the report (and may unwind) */
	skb = uskb_alloc(32);
	uskb_set_bug_handler(handler);
	if (!sigsetjmp(jb, 1))
		uskb_put(skb, 1000);
	uskb_set_bug_handler(NULL);
	CHECK(strstr(last_report, "skb_over_panic") && strstr(last_report, "len=0"));
	CHECK_EQ(skb->len, 0); /* the report came before any change */
	uskb_free(skb);
	return t_end("bug");
}
