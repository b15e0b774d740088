/* SPDX-License-Identifier: MIT */
/*
 * Per-thread caches and deferred free: hits and misses, the cache switched
 * off, frees from other threads deferred to the owner (cap, eventfd kick,
 * drain), fclones freed directly, bulk alloc/free gathering per owner, the
 * carriers a long bulk free goes in, the runs of plain skbs a consumer's
 * bulk free takes in one loop, the clean mark (a shared info nobody was
 * handed is not rewritten), the drain ahead an allocating owner runs,
 * pushers racing for the cap, producer/consumer traffic with threads
 * exiting in the middle, and shells placed whole within pages.
 */
#include <poll.h>
#include <sched.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>
#include "t.h"

static struct uskb_stats stats(void)
{
	struct uskb_stats st = { .sz = sizeof(st) };

	uskb_stats_get(&st);
	return st;
}

static void test_opts(void)
{
	struct uskb_cache_opts o = { .sz = sizeof(o) }, bad;

	CHECK_EQ(uskb_cache_get_opts(&o), 0);
	CHECK_EQ(o.cache_size, 64);
	CHECK_EQ(o.bulk, 16);
	CHECK_EQ(o.flush, 32);
	CHECK_EQ(o.defer_max, 128);
	bad = o;
	bad.cache_size = USKB_CACHE_MAX + 1;
	CHECK_EQ(uskb_cache_set_opts(&bad), -EINVAL);
	bad = o;
	bad.bulk = 65;
	CHECK_EQ(uskb_cache_set_opts(&bad), -EINVAL);
	bad = o;
	bad.sz = 2;
	CHECK_EQ(uskb_cache_set_opts(&bad), -EINVAL);
	/* the defer list counts in 16 bits */
	bad = o;
	bad.defer_max = 65536;
	CHECK_EQ(uskb_cache_set_opts(&bad), -EINVAL);
	bad.defer_max = 65535;
	CHECK_EQ(uskb_cache_set_opts(&bad), 0);
	CHECK_EQ(uskb_cache_set_opts(&o), 0);
}

static void set_defer_max(unsigned int max)
{
	struct uskb_cache_opts o = { .sz = sizeof(o) };

	uskb_cache_get_opts(&o);
	o.defer_max = max;
	CHECK_EQ(uskb_cache_set_opts(&o), 0);
}

static void test_hits(void)
{
	struct uskb_cache_opts o = { .sz = sizeof(o) }, off;
	struct uskb_stats a, b;
	struct uskb *skb;
	int i;

	uskb_cache_get_opts(&o);
	skb = uskb_alloc(100); /* warm */
	uskb_free(skb);
	a = stats();
	for (i = 0; i < 100; i++)
		uskb_free(uskb_alloc(100));
	b = stats();
	CHECK_EQ(b.cache_hits - a.cache_hits, 100);
	CHECK_EQ(b.cache_misses, a.cache_misses);
	/* cache off: every allocation goes to the global pool */
	off = o;
	off.cache_size = 0;
	CHECK_EQ(uskb_cache_set_opts(&off), 0);
	uskb_thread_flush();
	a = stats();
	for (i = 0; i < 50; i++)
		uskb_free(uskb_alloc(100));
	b = stats();
	CHECK_EQ(b.cache_misses - a.cache_misses, 50);
	CHECK_EQ(b.cache_hits, a.cache_hits);
	CHECK_EQ(uskb_cache_set_opts(&o), 0);
}

/* ---- an owner that allocates, sleeps, and drains when kicked ---- */

#define N_SKB 300

static struct uskb *batch[N_SKB];
static pthread_barrier_t bar;

static void *owner_thread(void *arg)
{
	int efd = uskb_cache_eventfd(), i;
	struct pollfd pfd = { .fd = efd, .events = POLLIN };
	unsigned int *drained = arg;

	if (efd < 0)
		abort();
	for (i = 0; i < N_SKB; i++) {
		batch[i] = uskb_alloc(200);
		uskb_put_zero(batch[i], 10);
	}
	pthread_barrier_wait(&bar); /* hand them over */
	pthread_barrier_wait(&bar); /* the main thread freed them all */
	/* the list passed half of defer_max: we were kicked (no allocation ran yet) */
	if (poll(&pfd, 1, 5000) != 1)
		abort();
	*drained = uskb_cache_drain();
	if (poll(&pfd, 1, 0) != 0) /* the kick was consumed */
		abort();
	return NULL;
}

static void test_defer(void)
{
	struct uskb_stats a, b;
	unsigned int drained = 0;
	pthread_t th;
	int i;

	pthread_barrier_init(&bar, NULL, 2);
	pthread_create(&th, NULL, owner_thread, &drained);
	pthread_barrier_wait(&bar);
	a = stats();
	for (i = 0; i < N_SKB; i++)
		uskb_free(batch[i]);
	b = stats();
	/* defer_max 128: 127 go on the owner's list, the rest are freed here */
	CHECK_EQ(b.deferred - a.deferred, 127);
	CHECK_EQ(b.direct_frees - a.direct_frees, N_SKB - 127);
	CHECK_EQ(b.defer_pending, 127);
	pthread_barrier_wait(&bar);
	pthread_join(th, NULL);
	CHECK_EQ(drained, 127);
	b = stats();
	CHECK_EQ(b.defer_pending, 0);
	CHECK_EQ(b.drained - a.drained, 127);
	pthread_barrier_destroy(&bar);
}

/* an owner that keeps allocating takes its deferred skbs back on a cache miss */
static struct uskb *few[40];

static void *alloc_again(void *arg)
{
	struct uskb_stats *out = arg;
	struct uskb *v[200];
	int i;

	for (i = 0; i < 40; i++)
		few[i] = uskb_alloc(100);
	pthread_barrier_wait(&bar);
	pthread_barrier_wait(&bar); /* main freed them: 40 on our list */
	for (i = 0; i < 200; i++) /* runs the shell cache dry at least once */
		v[i] = uskb_alloc(100);
	out->sz = sizeof(*out);
	uskb_stats_get(out);
	for (i = 0; i < 200; i++)
		uskb_free(v[i]);
	return NULL;
}

static void test_drain_on_miss(void)
{
	struct uskb_stats a, b = { 0 };
	pthread_t th;
	int i;

	pthread_barrier_init(&bar, NULL, 2);
	pthread_create(&th, NULL, alloc_again, &b);
	pthread_barrier_wait(&bar);
	a = stats();
	for (i = 0; i < 40; i++)
		uskb_free(few[i]);
	CHECK_EQ(stats().defer_pending, 40);
	pthread_barrier_wait(&bar);
	pthread_join(th, NULL);
	CHECK_EQ(b.drained - a.drained, 40);
	CHECK_EQ(b.defer_pending, 0);
	pthread_barrier_destroy(&bar);
}

/* fclones are never deferred; a dead owner's skbs are freed directly */
static struct uskb *fc_skb, *orphan, *zc_skb;

static void *alloc_and_exit(void *arg)
{
	(void)arg;
	fc_skb = uskb_alloc_fclone(100);
	orphan = uskb_alloc(100);
	return NULL; /* exits: its caches go back, its skbs live on */
}

static void *alloc_zcopy(void *arg)
{
	(void)arg;
	zc_skb = uskb_alloc(100);
	/* as the zero-copy layer marks an skb carrying user memory */
	uskb_shinfo(zc_skb)->flags |= USKB_SKBFL_ZEROCOPY_ENABLE;
	zc_skb->__zcopy_hint = 1;
	pthread_barrier_wait(&bar);
	pthread_barrier_wait(&bar);
	return NULL;
}

static void test_direct(void)
{
	struct uskb_stats a, b;
	pthread_t th;

	pthread_create(&th, NULL, alloc_and_exit, NULL);
	pthread_join(th, NULL);
	a = stats();
	CHECK(a.skbs >= 2);
	uskb_free(fc_skb);
	uskb_free(orphan);
	b = stats();
	CHECK_EQ(b.direct_frees - a.direct_frees, 2);
	CHECK_EQ(b.deferred, a.deferred);
	/* zero-copy skbs are freed at once: their owner waits for the notification */
	pthread_barrier_init(&bar, NULL, 2);
	pthread_create(&th, NULL, alloc_zcopy, NULL);
	pthread_barrier_wait(&bar);
	a = stats();
	uskb_free(zc_skb);
	b = stats();
	CHECK_EQ(b.direct_frees - a.direct_frees, 1);
	CHECK_EQ(b.deferred, a.deferred);
	pthread_barrier_wait(&bar);
	pthread_join(th, NULL);
	pthread_barrier_destroy(&bar);
}

/* ---- bulk ---- */

static struct uskb *bulk_a[64], *bulk_b[64];

static void *bulk_owner(void *arg)
{
	struct uskb **v = arg;

	if (uskb_alloc_bulk(v, 40, 300))
		abort();
	pthread_barrier_wait(&bar);
	pthread_barrier_wait(&bar);
	uskb_cache_drain();
	return NULL;
}

static void test_bulk(void)
{
	struct uskb *mix[128], *mine[20];
	struct uskb_stats a, b;
	pthread_t t1, t2;
	int i, n = 0;

	CHECK_EQ(uskb_alloc_bulk(mine, 20, 1u << 31), -EINVAL);
	CHECK_EQ(uskb_alloc_bulk(mine, 20, 64), 0);
	for (i = 0; i < 20; i++)
		CHECK(mine[i] && uskb_tailroom(mine[i]) >= 64);
	pthread_barrier_init(&bar, NULL, 3);
	pthread_create(&t1, NULL, bulk_owner, bulk_a);
	pthread_create(&t2, NULL, bulk_owner, bulk_b);
	pthread_barrier_wait(&bar);
	for (i = 0; i < 40; i++) {
		mix[n++] = bulk_a[i];
		mix[n++] = bulk_b[i];
		if (i < 20)
			mix[n++] = mine[i];
	}
	mix[n++] = NULL; /* skipped */
	a = stats();
	uskb_free_bulk(mix, (unsigned int)n);
	b = stats();
	CHECK_EQ(b.deferred - a.deferred, 80); /* two chains of 40 */
	CHECK_EQ(b.skb_frees - a.skb_frees, 20); /* ours, freed here */
	CHECK_EQ(b.defer_pending, 80);
	pthread_barrier_wait(&bar);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	CHECK_EQ(stats().defer_pending, 0);
	pthread_barrier_destroy(&bar);
}

/* one skb's references in a burst (pktgen's clone_skb): adjacent copies drop together */
static void test_bulk_runs(void)
{
	struct uskb *a = uskb_alloc(64), *b = uskb_alloc(64), *v[8];
	struct uskb_stats s0 = stats();
	int i;

	CHECK(a && b);
	for (i = 0; i < 6; i++)
		uskb_get(a); /* users 7 */
	uskb_get(b); /* users 2 */
	/* runs of 3, 1, 2, 1, 1 */
	v[0] = v[1] = v[2] = a;
	v[3] = b;
	v[4] = v[5] = a;
	v[6] = b;
	v[7] = a;
	uskb_free_bulk(v, 8);
	CHECK_EQ(atomic_load(&a->users), 1);
	CHECK_EQ(stats().skb_frees - s0.skb_frees, 1); /* b, at its second copy */
	/* a run that holds the last users frees the skb once */
	uskb_get(a);
	uskb_get(a);
	v[0] = v[1] = v[2] = a;
	v[3] = NULL;
	uskb_free_bulk(v, 4);
	CHECK_EQ(stats().skb_frees - s0.skb_frees, 2);
}

/*
 * An owner thread allocates, waits while we hand its skbs back (they go on
 * its defer list, cap 1000): @hand_back, or one bulk free of @v[@n]. Then
 * it does its part; we join it.
 */
static void with_owner(void *(*owner)(void *), void (*hand_back)(void), struct uskb **v, int n)
{
	pthread_t th;

	set_defer_max(1000);
	pthread_barrier_init(&bar, NULL, 2);
	pthread_create(&th, NULL, owner, NULL);
	pthread_barrier_wait(&bar);
	if (hand_back)
		hand_back();
	else
		uskb_free_bulk(v, (unsigned int)n);
	pthread_barrier_wait(&bar);
	pthread_join(th, NULL);
	pthread_barrier_destroy(&bar);
	set_defer_max(128);
}

/* ---- carriers: a long bulk free, pushed in pieces ---- */

#define N_LONG 301

static struct uskb *longv[N_LONG];
static unsigned int long_drained;

/*
 * Every word a carrier wrote over is as a new skb's must be, and the
 * shared info as init_shinfo() writes it (read through the peek: the
 * clean mark stays).
 */
static void check_fresh(struct uskb *skb)
{
	static const char zero[sizeof(skb->cb)];
	const struct uskb_shared_info *sh = __uskb_shinfo_peek(skb);

	CHECK(skb->next == NULL && skb->prev == NULL && skb->sk == NULL && skb->dev == NULL);
	CHECK(skb->tstamp == 0 && !memcmp(skb->cb, zero, sizeof(zero)));
	CHECK(skb->len == 0 && skb->data_len == 0 && skb->hash == 0 && skb->mark == 0);
	CHECK(skb->mac_header == USKB_HEADER_UNSET && skb->transport_header == USKB_HEADER_UNSET);
	CHECK(skb->destructor == NULL && !skb->cloned && skb->fclone == 0 && !skb->head_frag);
	CHECK(atomic_load(&skb->users) == 1 && skb->data == skb->head && skb->tail == 0);
	CHECK(sh->nr_frags == 0 && sh->frag_list == NULL && sh->flags == 0 && sh->gso_size == 0);
	CHECK(atomic_load(&sh->dataref) == 1 && sh->destructor_arg == NULL);
}

static void *long_owner(void *arg)
{
	int i;

	(void)arg;
	if (uskb_alloc_bulk(longv, N_LONG, 100))
		abort();
	for (i = 0; i < N_LONG; i++) /* dirty what the carriers write over */
		memset(longv[i]->cb, 0x5a, sizeof(longv[i]->cb));
	pthread_barrier_wait(&bar);
	pthread_barrier_wait(&bar); /* freed: three pushes on our list */
	long_drained = uskb_cache_drain();
	/* the shells come back from the drain: as new */
	if (uskb_alloc_bulk(longv, N_LONG, 100))
		abort();
	for (i = 0; i < N_LONG; i++)
		check_fresh(longv[i]);
	uskb_free_bulk(longv, N_LONG);
	return NULL;
}

static struct uskb_stats long_before;

static void long_hand_back(void)
{
	struct uskb_stats b;

	long_before = stats();
	/* 150 (many carriers), one alone, 150 more on top of them */
	uskb_free_bulk(longv, 150);
	uskb_free(longv[150]);
	uskb_free_bulk(longv + 151, 150);
	b = stats();
	CHECK_EQ(b.deferred - long_before.deferred, N_LONG);
	CHECK_EQ(b.direct_frees, long_before.direct_frees);
	CHECK_EQ(b.defer_pending, N_LONG);
}

static void test_carriers(void)
{
	struct uskb_stats b;

	with_owner(long_owner, long_hand_back, NULL, 0);
	CHECK_EQ(long_drained, N_LONG);
	b = stats();
	CHECK_EQ(b.drained - long_before.drained, N_LONG);
	CHECK_EQ(b.defer_pending, 0);
}

/* ---- the clean mark: a shared info nobody was handed is neither read nor rewritten ---- */

#define SENTINEL 0x5eed1e55u

static bool clean(const struct uskb *skb)
{
	return __atomic_load_n(&skb->__shinfo_clean, __ATOMIC_RELAXED);
}

/*
 * A word init_shinfo() zeroes, written without handing the shared info
 * out (the mark stays): it survives only if the next allocation of the
 * pair skips the init.
 */
static void plant(struct uskb *skb)
{
	((struct uskb_shared_info *)__uskb_shinfo_peek(skb))->tskey = SENTINEL;
}

static uint32_t planted(const struct uskb *skb)
{
	return __uskb_shinfo_peek(skb)->tskey;
}

static void test_clean_here(void)
{
	struct uskb *a, *b, *c;
	struct uskb_page *pg;

	/* untouched: the pair comes back with its shared info as it was */
	a = uskb_alloc(100);
	CHECK(a && clean(a));
	plant(a);
	uskb_free(a);
	b = uskb_alloc(100);
	CHECK(b == a && clean(b) && planted(b) == SENTINEL);
	/* handed out and written: rewritten at the next allocation */
	uskb_shinfo(b)->gso_size = 1400;
	CHECK(!clean(b));
	uskb_free(b);
	a = uskb_alloc(100);
	CHECK(a == b && clean(a) && planted(a) == 0 && __uskb_shinfo_peek(a)->gso_size == 0);
	/* a frag: released at the free, none at the next allocation */
	pg = uskb_page_alloc(0);
	CHECK(pg != NULL);
	uskb_fill_page_desc(a, 0, pg, 0, 100);
	CHECK(!clean(a)); /* the frag writer's own store */
	a->len += 100;
	a->data_len += 100;
	uskb_free(a);
	b = uskb_alloc(100);
	CHECK(b == a && clean(b) && __uskb_shinfo_peek(b)->nr_frags == 0);
	/* a clone copies the mark, but dataref went to 2: neither order may keep it */
	for (int last = 0; last < 2; last++) {
		plant(b);
		c = uskb_clone(b);
		CHECK(c != NULL && !clean(b) && !clean(c));
		uskb_free(last ? b : c);
		uskb_free(last ? c : b);
		b = uskb_alloc(100);
		CHECK(b && clean(b) && planted(b) == 0 && !b->cloned);
		CHECK_EQ(atomic_load(&__uskb_shinfo_peek(b)->dataref), 1);
	}
	/* the frag_list writer clears it too */
	uskb_frag_list_init(b);
	CHECK(!clean(b));
	uskb_free(b);
}

/* the owner allocates, plants, and after the hand-back gets every pair back */
#define N_CLEAN 40
static struct uskb *cleanv[N_CLEAN];
static uintptr_t clean_touched[N_CLEAN];

static void *clean_owner(void *arg)
{
	struct uskb *again[N_CLEAN];
	int i, j, kept = 0;

	(void)arg;
	if (uskb_alloc_bulk(cleanv, N_CLEAN, 100))
		abort();
	for (i = 0; i < N_CLEAN; i++)
		plant(cleanv[i]);
	pthread_barrier_wait(&bar);
	pthread_barrier_wait(&bar); /* freed by the other thread */
	CHECK_EQ(uskb_cache_drain(), N_CLEAN);
	/* all 40 fit the ready pairs of a new thread: every one comes back as a pair */
	if (uskb_alloc_bulk(again, N_CLEAN, 100))
		abort();
	for (i = 0; i < N_CLEAN; i++) {
		bool touched = false;

		check_fresh(again[i]);
		for (j = 0; j < N_CLEAN; j++)
			touched |= clean_touched[j] == (uintptr_t)again[i];
		/* the freeing thread wrote half of them: those are rewritten */
		if (touched)
			CHECK(planted(again[i]) == 0 && __uskb_shinfo_peek(again[i])->gso_size == 0);
		else
			kept += planted(again[i]) == SENTINEL;
	}
	CHECK_EQ(kept, N_CLEAN / 2);
	uskb_free_bulk(again, N_CLEAN);
	return NULL;
}

static void clean_hand_back(void)
{
	int i;

	memset(clean_touched, 0, sizeof(clean_touched));
	for (i = 0; i < N_CLEAN; i += 2) {
		uskb_shinfo(cleanv[i])->gso_size = 1000;
		clean_touched[i] = (uintptr_t)cleanv[i];
	}
	/* and a frag, which the owner must release (a leak fails the live counters) */
	uskb_fill_page_desc(cleanv[2], 0, uskb_page_alloc(0), 0, 10);
	cleanv[2]->len += 10;
	cleanv[2]->data_len += 10;
	uskb_free_bulk(cleanv, N_CLEAN);
}

static void test_clean_deferred(void)
{
	with_owner(clean_owner, clean_hand_back, NULL, 0);
	CHECK_EQ(stats().defer_pending, 0);
}

/*
 * A consumer's burst of the owner's skbs of every kind: plain, with a
 * destructor, a clone, with a frag. Only the plain one may be tagged;
 * each other one goes back whole, its destructor run once, by the thread
 * that freed it (a leak fails the live counters).
 */
#define N_MIXED 4
static struct uskb *mixedv[N_MIXED], *mixed_orig;
static atomic_int mixed_dtor_calls;
static pthread_t mixed_dtor_thread;

static void mixed_destructor(struct uskb *skb)
{
	(void)skb;
	atomic_fetch_add(&mixed_dtor_calls, 1);
	mixed_dtor_thread = pthread_self();
}

static void *mixed_owner(void *arg)
{
	(void)arg;
	if (uskb_alloc_bulk(mixedv, 2, 100) || !(mixed_orig = uskb_alloc(100)) ||
	    !(mixedv[3] = uskb_alloc(100)))
		abort();
	uskb_put(mixed_orig, 50);
	mixedv[1]->destructor = mixed_destructor;
	mixedv[2] = uskb_clone(mixed_orig);
	uskb_fill_page_desc(mixedv[3], 0, uskb_page_alloc(0), 0, 10);
	mixedv[3]->len += 10;
	mixedv[3]->data_len += 10;
	CHECK(mixedv[2] != NULL);
	pthread_barrier_wait(&bar);
	pthread_barrier_wait(&bar); /* freed by the other thread */
	CHECK_EQ(stats().defer_pending, N_MIXED);
	CHECK_EQ(uskb_cache_drain(), N_MIXED);
	/* the clone's data reference went with it: the original is alone again */
	CHECK_EQ(atomic_load(&__uskb_shinfo_peek(mixed_orig)->dataref), 1);
	uskb_free(mixed_orig);
	return NULL;
}

static void test_mixed_deferred(void)
{
	atomic_store(&mixed_dtor_calls, 0);
	with_owner(mixed_owner, NULL, mixedv, N_MIXED);
	CHECK_EQ(atomic_load(&mixed_dtor_calls), 1);
	CHECK(pthread_equal(mixed_dtor_thread, pthread_self()));
	CHECK_EQ(stats().defer_pending, 0);
}

/*
 * A consumer's burst in which runs of the owner's plain, clean skbs (the
 * loop that takes a run tests the free path's word, the users and the
 * destructor) are broken by one skb of each other kind: a destructor, a
 * clone, a frag (its mark cleared), a second user, another class, a NULL,
 * another owner's plain skb and an fclone. Each must leave the run and go
 * its own way: the owners drain exactly theirs; the destructor runs once,
 * here; the clone's data reference goes; the shared skb stays alive; the
 * other class's pair comes back in its own class only; the fclone is
 * freed here.
 */
#define N_RUNS 26
static struct uskb *runsv[N_RUNS], *runs_orig, *runs_other_b;
static unsigned char *runs_big_head;
static unsigned int runs_drained[2];
static atomic_int runs_dtor_calls;
static pthread_barrier_t runs_bar;

static void runs_destructor(struct uskb *skb)
{
	(void)skb;
	atomic_fetch_add(&runs_dtor_calls, 1);
}

/* slots of the burst: P plain, then the breakers */
enum { R_DTOR = 2, R_CLONE = 5, R_FRAG = 8, R_SHARED = 11, R_BIG = 14, R_NULL = 17, R_B = 20,
       R_FCLONE = 23 };

static void *runs_owner_a(void *arg)
{
	struct uskb *p[18], *again[16];
	int i, k = 0, seen;

	(void)arg;
	if (uskb_alloc_bulk(p, 18, 100) || !(runs_orig = uskb_alloc(100)))
		abort();
	uskb_put(runs_orig, 50);
	for (i = 0; i < N_RUNS; i++) {
		switch (i) {
		case R_DTOR:
			runsv[i] = uskb_alloc(100);
			runsv[i]->destructor = runs_destructor;
			break;
		case R_CLONE:
			runsv[i] = uskb_clone(runs_orig);
			break;
		case R_FRAG:
			runsv[i] = uskb_alloc(100);
			uskb_fill_page_desc(runsv[i], 0, uskb_page_alloc(0), 0, 10);
			runsv[i]->len += 10;
			runsv[i]->data_len += 10;
			break;
		case R_SHARED:
			runsv[i] = uskb_get(uskb_alloc(100));
			break;
		case R_BIG:
			runsv[i] = uskb_alloc(2000);
			runs_big_head = runsv[i]->head;
			break;
		case R_FCLONE: /* clean, our class: only its fclone bits tell it */
			runsv[i] = uskb_alloc_fclone(100);
			break;
		case R_NULL:
		case R_B:
			break;
		default:
			runsv[i] = p[k++];
		}
	}
	CHECK_EQ(k, 18);
	pthread_barrier_wait(&runs_bar);
	pthread_barrier_wait(&runs_bar); /* freed by the main thread */
	runs_drained[0] = uskb_cache_drain();
	CHECK_EQ(atomic_load(&__uskb_shinfo_peek(runs_orig)->dataref), 1);
	uskb_free(runs_orig);
	/* the big pair is no 100-byte skb's; it comes back as a 2000-byte one */
	if (uskb_alloc_bulk(again, 16, 100))
		abort();
	for (i = 0, seen = 0; i < 16; i++)
		seen += again[i]->head == runs_big_head;
	CHECK_EQ(seen, 0);
	uskb_free_bulk(again, 16);
	again[0] = uskb_alloc(2000);
	CHECK(again[0] && again[0]->head == runs_big_head);
	uskb_free(again[0]);
	return NULL;
}

static void *runs_owner_b(void *arg)
{
	(void)arg;
	if (!(runs_other_b = uskb_alloc(100)))
		abort();
	pthread_barrier_wait(&runs_bar);
	pthread_barrier_wait(&runs_bar);
	runs_drained[1] = uskb_cache_drain();
	return NULL;
}

static void test_runs_deferred(void)
{
	struct uskb_stats before;
	struct uskb *shared;
	pthread_t th[2];

	set_defer_max(1000);
	atomic_store(&runs_dtor_calls, 0);
	pthread_barrier_init(&runs_bar, NULL, 3);
	pthread_create(&th[0], NULL, runs_owner_a, NULL);
	pthread_create(&th[1], NULL, runs_owner_b, NULL);
	pthread_barrier_wait(&runs_bar);
	runsv[R_B] = runs_other_b;
	shared = runsv[R_SHARED];
	before = stats();
	uskb_free_bulk(runsv, N_RUNS);
	/* the fclone is freed here, never deferred */
	CHECK_EQ(stats().direct_frees - before.direct_frees, 1);
	/* the destructor ran here, once; the second user's reference went, not the skb */
	CHECK_EQ(atomic_load(&runs_dtor_calls), 1);
	CHECK_EQ(atomic_load(&shared->users), 1);
	uskb_free(shared); /* the last: to its owner as well */
	pthread_barrier_wait(&runs_bar);
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	/* A: 18 plain, the destructor's, the clone, the frag's, the big one, the shared one */
	CHECK_EQ(runs_drained[0], 23);
	CHECK_EQ(runs_drained[1], 1);
	CHECK_EQ(stats().defer_pending, 0);
	pthread_barrier_destroy(&runs_bar);
	set_defer_max(128);
}

/*
 * One burst with two owners' skbs, interleaved and then in runs: each
 * owner's drain gets its own back, every one, and no other.
 */
#define N_TWO 24
static struct uskb *twov[2][N_TWO];
static unsigned int two_drained[2];
static pthread_barrier_t two_bar;

static void *two_owner(void *arg)
{
	int o = (int)(intptr_t)arg;

	if (uskb_alloc_bulk(twov[o], N_TWO, 100))
		abort();
	pthread_barrier_wait(&two_bar);
	pthread_barrier_wait(&two_bar); /* freed by the main thread */
	two_drained[o] = uskb_cache_drain();
	return NULL;
}

static void test_two_owners(void)
{
	struct uskb *v[2 * N_TWO];
	pthread_t th[2];
	int i, n = 0;

	set_defer_max(1000);
	pthread_barrier_init(&two_bar, NULL, 3);
	for (i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, two_owner, (void *)(intptr_t)i);
	pthread_barrier_wait(&two_bar);
	/* A B A B ..., then A A A B B B ... */
	for (i = 0; i < N_TWO / 2; i++) {
		v[n++] = twov[0][i];
		v[n++] = twov[1][i];
	}
	for (i = N_TWO / 2; i < N_TWO; i++)
		v[n++] = twov[0][i];
	for (i = N_TWO / 2; i < N_TWO; i++)
		v[n++] = twov[1][i];
	uskb_free_bulk(v, (unsigned int)n);
	pthread_barrier_wait(&two_bar);
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&two_bar);
	set_defer_max(128);
	CHECK_EQ(two_drained[0], N_TWO);
	CHECK_EQ(two_drained[1], N_TWO);
	CHECK_EQ(stats().defer_pending, 0);
}

/*
 * ---- the drain ahead: up to half now, the rest (its lines fetched) at later
 * misses, never more than a ready list (59 pairs) at once ----
 */

#define N_STEPV 600
#define MAX_STEPS 16

/* the owner allocates steps_n skbs; after they are handed back, its misses' drain steps */
static struct uskb *stepv[N_STEPV];
static int steps_n, nsteps;
static long step[MAX_STEPS], step_pending[MAX_STEPS], steps_pending_before;

/* allocate (keeping them in @keep) until the owner's drain frees more; how many it freed */
static long alloc_until_drain(struct uskb **keep, int room, int *nkeep)
{
	long before = (long)stats().drained, now = before;

	while (now == before && *nkeep < room) {
		keep[(*nkeep)++] = uskb_alloc(100);
		now = (long)stats().drained;
	}
	return now - before;
}

static void *steps_owner(void *arg)
{
	static struct uskb *keep[8192];
	int nkeep = 0, i;

	(void)arg;
	if (uskb_alloc_bulk(stepv, (unsigned int)steps_n, 100))
		abort();
	pthread_barrier_wait(&bar);
	pthread_barrier_wait(&bar); /* all on our list, one push */
	steps_pending_before = stats().defer_pending;
	for (nsteps = 0; nsteps < MAX_STEPS && stats().defer_pending; nsteps++) {
		step[nsteps] = alloc_until_drain(keep, 8192, &nkeep);
		step_pending[nsteps] = stats().defer_pending;
	}
	for (i = 0; i < nkeep; i++)
		uskb_free(keep[i]);
	return NULL;
}

static void test_drain_ahead(void)
{
	steps_n = 200;
	with_owner(steps_owner, NULL, stepv, steps_n);
	CHECK_EQ(steps_pending_before, 200);
	CHECK_EQ(nsteps, 4);
	/*
	 * One burst of 200 clean skbs: 18 carriers of 1 + 10 and one of 1 + 1.
	 * The first miss may free half the carriers, 10, but a ready list
	 * holds 59 pairs: 5 carriers, 55 skbs; the rest stays held, pending.
	 * Had it freed more, the pairs past 59 would have been split.
	 */
	CHECK_EQ(step[0], 55);
	CHECK_EQ(step_pending[0], 145);
	/* the next misses: the held carriers, a ready list's worth each */
	CHECK_EQ(step[1], 55);
	CHECK_EQ(step_pending[1], 90);
	CHECK_EQ(step[2], 55);
	CHECK_EQ(step_pending[2], 35);
	CHECK_EQ(step[3], 35);
	CHECK_EQ(step_pending[3], 0);
	CHECK_EQ(stats().defer_pending, 0);
}

/* over a list longer than a walk: step by step, nothing lost */
static void test_drain_ahead_long(void)
{
	long sum = 0, left = N_STEPV;
	int i;

	steps_n = N_STEPV;
	with_owner(steps_owner, NULL, stepv, steps_n);
	/*
	 * a walk takes at most 256 skbs (23 carriers of 11: 253); the first
	 * miss frees half of them, 12, but no more than a ready list: 5
	 */
	CHECK_EQ(step[0], 55);
	/* the rest comes step by step, 55 at a time, each one counted */
	CHECK_EQ(nsteps, 11);
	for (i = 0; i < nsteps; i++) {
		CHECK_EQ(step[i], i < 10 ? 55 : N_STEPV - 10 * 55);
		left -= step[i];
		sum += step[i];
		CHECK_EQ(step_pending[i], left);
	}
	CHECK_EQ(sum, N_STEPV);
}

/* ---- pushers racing for a small cap: each skb deferred or freed, once ---- */

#define N_RACE 6000
#define RACE_MAX 48

static struct uskb *racev[N_RACE];
static atomic_int race_left;

static void *race_freer(void *arg)
{
	struct uskb **v = arg;
	int i;

	pthread_barrier_wait(&bar);
	for (i = 0; i < N_RACE / 2; i += 12)
		uskb_free_bulk(v + i, 12);
	uskb_thread_flush();
	atomic_fetch_sub(&race_left, 1);
	return NULL;
}

static void test_cap_race(void)
{
	struct uskb_stats a, b;
	pthread_t t1, t2;
	int i;

	set_defer_max(RACE_MAX);
	for (i = 0; i < N_RACE; i++)
		racev[i] = uskb_alloc(100);
	a = stats();
	atomic_store(&race_left, 2);
	pthread_barrier_init(&bar, NULL, 3);
	pthread_create(&t1, NULL, race_freer, racev);
	pthread_create(&t2, NULL, race_freer, racev + N_RACE / 2);
	pthread_barrier_wait(&bar);
	/* the list full first: a push is refused (the cap reached, for sure) */
	while (stats().direct_frees == a.direct_frees && atomic_load(&race_left))
		sched_yield();
	/*
	 * Then the owner drains, and allocates 16 at a time keeping up to 160
	 * (its caches run dry: drains ahead), while they push.
	 */
	while (atomic_load(&race_left)) {
		struct uskb *v[160];
		int k;

		uskb_cache_drain();
		for (k = 0; k < 160; k += 16)
			if (uskb_alloc_bulk(v + k, 16, 100))
				abort();
		uskb_free_bulk(v, 160);
	}
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	uskb_cache_drain();
	b = stats();
	CHECK_EQ((b.deferred - a.deferred) + (b.direct_frees - a.direct_frees), N_RACE);
	CHECK_EQ(b.drained - a.drained, b.deferred - a.deferred);
	CHECK_EQ(b.defer_pending, 0);
	CHECK(b.direct_frees > a.direct_frees); /* the cap was reached */
	pthread_barrier_destroy(&bar);
	set_defer_max(128);
}

/* ---- a release that calls back into the allocator while the owner drains ---- */

#define N_NEST 120

static struct uskb *nestv[N_NEST];
static int nest_ran, nest_drained_inside;

/*
 * A frag_list member's destructor: runs in the owner's drain, and
 * allocates until the caches run dry, then asks for a drain itself: the
 * drains it calls back into must do nothing.
 */
static void nest_destructor(struct uskb *skb)
{
	struct uskb *v[300];
	uint64_t before = stats().drained;
	int i;

	(void)skb;
	nest_ran++;
	for (i = 0; i < 300; i++)
		v[i] = uskb_alloc(100);
	nest_drained_inside += (int)uskb_cache_drain();
	for (i = 0; i < 300; i++)
		uskb_free(v[i]);
	nest_drained_inside += (int)(stats().drained - before);
}

static bool nest_by_alloc; /* the owner allocates (drain ahead) or calls uskb_cache_drain */

static void *nest_owner(void *arg)
{
	struct uskb *keep[600], *member;
	int i, n = 0;

	(void)arg;
	if (uskb_alloc_bulk(nestv, N_NEST, 100))
		abort();
	/* the first skb holds one on its frag_list, whose destructor allocates */
	member = uskb_alloc(100);
	member->destructor = nest_destructor;
	uskb_shinfo(nestv[0])->frag_list = member;
	pthread_barrier_wait(&bar);
	pthread_barrier_wait(&bar); /* freed: on our list */
	/* the first skb is a carrier among the first half: the first step frees it */
	while (nest_by_alloc && n < 600 && stats().defer_pending == N_NEST)
		keep[n++] = uskb_alloc(100);
	uskb_cache_drain();
	for (i = 0; i < n; i++)
		uskb_free(keep[i]);
	return NULL;
}

static void test_drain_reentry(void)
{
	nest_by_alloc = true;
	with_owner(nest_owner, NULL, nestv, N_NEST);
	nest_by_alloc = false;
	with_owner(nest_owner, NULL, nestv, N_NEST);
	CHECK_EQ(nest_ran, 2);
	CHECK_EQ(nest_drained_inside, 0);
	CHECK_EQ(stats().defer_pending, 0);
}

/* ---- producers and consumers, threads exiting in the middle ---- */

#define RING 1024
static struct uskb *_Atomic ring[RING];
static atomic_int produced, consumed;
#define PER_PRODUCER 20000

static void *producer(void *arg)
{
	int i, slot = 0;

	(void)arg;
	for (i = 0; i < PER_PRODUCER; i++) {
		struct uskb *skb = uskb_alloc((unsigned int)(64 + i % 1500));
		struct uskb *expect = NULL;

		uskb_put_zero(skb, 16);
		*(int *)skb->cb = 0x5a5a;
		/* find an empty slot */
		for (;;) {
			expect = NULL;
			if (atomic_compare_exchange_strong(&ring[slot], &expect, skb))
				break;
			slot = (slot + 1) % RING;
		}
		atomic_fetch_add(&produced, 1);
		if (i % 5000 == 4999)
			return NULL; /* leave early: the rest of this thread's quota is not made */
	}
	return NULL;
}

static bool consume_one(struct uskb *skb)
{
	if (*(int *)skb->cb != 0x5a5a || skb->len != 16)
		abort();
	*(int *)skb->cb = 0; /* a second free of this skb would be caught */
	uskb_free(skb);
	return true;
}

static void *consumer(void *arg)
{
	int slot = 0, i;
	long n = 0;

	(void)arg;
	for (;;) {
		struct uskb *skb = atomic_exchange(&ring[slot], NULL);

		slot = (slot + 1) % RING;
		if (skb) {
			n += consume_one(skb);
			continue;
		}
		if (atomic_load(&consumed) != -1)
			continue;
		/* producers are gone: one last sweep takes whatever is left */
		for (i = 0; i < RING; i++)
			if ((skb = atomic_exchange(&ring[i], NULL)))
				n += consume_one(skb);
		break;
	}
	return (void *)n;
}

static void test_producer_consumer(void)
{
	pthread_t p[2], c[2];
	long total = 0;
	int i, round;
	struct uskb_stats st;

	for (round = 0; round < 3; round++) {
		atomic_store(&produced, 0);
		atomic_store(&consumed, 0);
		for (i = 0; i < 2; i++) {
			pthread_create(&p[i], NULL, producer, NULL);
			pthread_create(&c[i], NULL, consumer, NULL);
		}
		for (i = 0; i < 2; i++)
			pthread_join(p[i], NULL);
		atomic_store(&consumed, -1); /* producers gone: consumers stop when idle */
		total = 0;
		for (i = 0; i < 2; i++) {
			void *n;

			pthread_join(c[i], &n);
			total += (long)n;
		}
		CHECK_EQ(total, atomic_load(&produced));
	}
	/* frees pushed to producers after they exited wait on their dead slots */
	uskb_thread_flush();
	st = stats();
	CHECK(st.deferred > 0);
	CHECK_EQ(st.skbs, 0);
	CHECK_EQ(st.defer_pending, 0);
}

/* page pools: a thread keeps the pool pages it frees; they go back when it exits */
static struct uskb_page_pool *pool;
static struct uskb_page *pool_pages[10];

static void *pool_user(void *arg)
{
	struct uskb_page *p;
	int i;

	(void)arg;
	for (i = 0; i < 10; i++)
		uskb_page_put(pool_pages[i]); /* into this thread's cache */
	p = uskb_page_pool_alloc(pool); /* served from it, no lock */
	if (p != pool_pages[9])
		abort();
	uskb_page_put(p);
	pthread_barrier_wait(&bar);
	pthread_barrier_wait(&bar); /* main destroyed the pool meanwhile */
	return NULL;			/* exit flushes: the pool's last pages go */
}

static void test_pool_tcache(void)
{
	struct uskb_page_pool_opts o = { .sz = sizeof(o), .node = -1, .pool_size = 16 };
	struct uskb_page_pool_stats ps;
	pthread_t th;
	int i;

	pool = uskb_page_pool_create(&o);
	for (i = 0; i < 10; i++)
		pool_pages[i] = uskb_page_pool_alloc(pool);
	pthread_barrier_init(&bar, NULL, 2);
	pthread_create(&th, NULL, pool_user, NULL);
	pthread_barrier_wait(&bar);
	uskb_page_pool_get_stats(pool, &ps);
	CHECK_EQ(ps.idle, 10);
	CHECK_EQ(ps.in_use, 0);
	CHECK_EQ(ps.alloc_fast, 1);
	uskb_page_pool_destroy(pool); /* pages in the other thread's cache keep it */
	CHECK_EQ(stats().pools, 1);
	pthread_barrier_wait(&bar);
	pthread_join(th, NULL);
	CHECK_EQ(stats().pools, 0);
	pthread_barrier_destroy(&bar);
}

/* a thread whose pool cache ran empty holds no pool: destroying it is safe */
static struct uskb_page *handed[4];

static void *pool_worker(void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < 4; i++)
		uskb_page_put(handed[i]); /* into this thread's cache */
	for (i = 0; i < 4; i++)
		handed[i] = uskb_page_pool_alloc(pool); /* ... and all back out */
	pthread_barrier_wait(&bar);
	pthread_barrier_wait(&bar); /* main freed them and destroyed the pool */
	uskb_thread_flush();	    /* must not touch the freed pool */
	return NULL;
}

static void test_pool_emptied_cache(void)
{
	struct uskb_page_pool_opts o = { .sz = sizeof(o), .node = -1, .pool_size = 16 };
	pthread_t th;
	int i;

	pool = uskb_page_pool_create(&o);
	for (i = 0; i < 4; i++)
		handed[i] = uskb_page_pool_alloc(pool);
	pthread_barrier_init(&bar, NULL, 2);
	pthread_create(&th, NULL, pool_worker, NULL);
	pthread_barrier_wait(&bar);
	for (i = 0; i < 4; i++)
		uskb_page_put(handed[i]);
	uskb_thread_flush(); /* our cached pages go back to the ring */
	uskb_page_pool_destroy(pool);
	CHECK_EQ(stats().pools, 0);
	pthread_barrier_wait(&bar);
	pthread_join(th, NULL);
	pthread_barrier_destroy(&bar);
}

/*
 * No shell straddles two pages: the slab places them whole within pages
 * (a store split across pages is several times slower than one split
 * across lines). 400 shells: several slabs.
 */
static void test_shells_within_pages(void)
{
	enum { N = 400 };
	struct uskb *v[N];
	int i, across = 0;

	for (i = 0; i < N; i++) {
		v[i] = uskb_alloc(100);
		CHECK(v[i] != NULL);
		across += (uintptr_t)v[i] % 4096 + USKB_DATA_ALIGN(sizeof(struct uskb)) > 4096;
	}
	CHECK_EQ(across, 0);
	for (i = 0; i < N; i++)
		uskb_free(v[i]);
}

int main(void)
{
	test_shells_within_pages();
	test_pool_emptied_cache();
	test_pool_tcache();
	test_opts();
	test_hits();
	test_defer();
	test_drain_on_miss();
	test_direct();
	test_bulk();
	test_bulk_runs();
	test_carriers();
	test_clean_here();
	test_clean_deferred();
	test_mixed_deferred();
	test_runs_deferred();
	test_two_owners();
	test_drain_ahead();
	test_drain_ahead_long();
	test_cap_race();
	test_drain_reentry();
	test_producer_consumer();
	return t_end("cache");
}
