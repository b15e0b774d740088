/* SPDX-License-Identifier: MIT */
/*
 * Per-thread caches and deferred free (issue: caches):
 *  1. same-thread alloc+free in bursts of 32 (uskb, malloc; one at a time is
 *     bench_core's alloc_free)
 *  2. producer/consumer across two threads, burst 32, in Mops/s: uskb with
 *     the defer list (default), uskb with every free going to the shared
 *     locked pool (cache and deferral off), malloc; and for the defer list,
 *     the consumer's polls of an empty ring per skb in the run of the
 *     median rate ("pc_idle.uskb_defer": above 0, the consumer waited for
 *     the producer, which set the rate)
 *  3. same-thread free into the local cache vs the direct path (cache off)
 * Prints "name value" lines (ns/op, or mops for Mops/s); bench/run tables them.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_setaffinity_np in bench.h */
#endif
#include <pthread.h>
#include <uskb/uskb.h>
#include "bench.h"
#include "spsc.h"

#define BURST 32

static void set_cache(unsigned int size, unsigned int defer_max)
{
	struct uskb_cache_opts o = { .sz = sizeof(o) };

	uskb_cache_get_opts(&o);
	o.cache_size = size;
	if (size) {
		o.bulk = 16;
		o.flush = 32;
	}
	o.defer_max = defer_max;
	if (uskb_cache_set_opts(&o))
		abort();
	uskb_thread_flush();
}

/* ---- producer / consumer ---- */

enum pc_kind { PC_USKB, PC_MALLOC };

static struct spsc ring;
static long pc_total; /* operations per producer/consumer run */
static enum pc_kind pc_kind;
static long pc_empty; /* the consumer's polls of an empty ring in the last run */

static void *pc_consumer(void *arg)
{
	void *v[BURST];
	long got = 0, empty = 0;

	(void)arg;
	bench_pin(1); /* bench_dpdk's worker lcore */
	while (got < pc_total) {
		unsigned int n = spsc_pop(&ring, v, BURST), i;

		if (!n) {
			empty++;
			continue;
		}
		if (pc_kind == PC_USKB) {
			uskb_free_bulk((struct uskb **)v, n);
		} else {
			for (i = 0; i < n; i++) {
				free(((void **)v[i])[0]);
				free(v[i]);
			}
		}
		got += n;
	}
	uskb_thread_flush();
	pc_empty = empty; /* read after the join */
	return NULL;
}

static double pc_run(enum pc_kind kind)
{
	void *v[BURST];
	pthread_t th;
	long sent = 0;
	double t0;
	unsigned int i;

	pc_kind = kind;
	atomic_store(&ring.head, 0);
	atomic_store(&ring.tail, 0);
	pthread_create(&th, NULL, pc_consumer, NULL);
	t0 = bench_now_ns();
	while (sent < pc_total) {
		unsigned int k = 0;

		if (kind == PC_USKB) {
			if (uskb_alloc_bulk((struct uskb **)v, BURST, 256))
				abort();
		} else {
			for (i = 0; i < BURST; i++) {
				void **s = malloc(sizeof(struct uskb));

				s[0] = malloc(256 + 320);
				v[i] = s;
			}
		}
		while (k < BURST)
			k += spsc_push(&ring, v + k, BURST - k);
		sent += BURST;
	}
	pthread_join(th, NULL);
	t0 = bench_now_ns() - t0;
	uskb_thread_flush();
	return (double)pc_total / t0 * 1e3; /* Mops/s */
}

/* the rate's median; with @empty_row, also the empty polls (per skb) of the run that gave it */
static void pc_bench(const char *name, enum pc_kind kind, const char *empty_row)
{
	double r[5], sorted[5], e[5], med;
	int k, runs = bench_smoke() ? 1 : 5;

	if (!bench_only(name))
		return;
	bench_row(name);
	pc_run(kind); /* warm-up */
	for (k = 0; k < runs; k++) {
		sorted[k] = r[k] = pc_run(kind);
		e[k] = (double)pc_empty / (double)pc_total;
	}
	med = bench_median(sorted, runs);
	printf("%s %.2f\n", name, med);
	for (k = 0; empty_row && k < runs; k++)
		if (r[k] == med) {
			printf("%s %.2f\n", empty_row, e[k]);
			break;
		}
	fflush(stdout);
}

int main(void)
{
	struct uskb *v[BURST];
	const long n = bench_n(2000000L);
	long i;
	int j;

	bench_pin(0); /* the CPU of bench_dpdk's main lcore */

	pc_total = bench_n(4000000L);

	/* 1. same thread */
	/* one at a time: alloc_free.* in bench_core */
	BENCH("st32.malloc", n, for (i = 0; i < n / BURST; i++) {
		void *s[BURST], *h[BURST];
		for (j = 0; j < BURST; j++) {
			s[j] = malloc(sizeof(struct uskb));
			h[j] = malloc(256 + 320);
		}
		for (j = 0; j < BURST; j++) {
			free(h[j]);
			free(s[j]);
		}
	});
	BENCH("st32.uskb", n, for (i = 0; i < n / BURST; i++) {
		if (uskb_alloc_bulk(v, BURST, 256))
			abort();
		bench_sink += v[0]->end;
		uskb_free_bulk(v, BURST);
	});

	/* 3. local cache vs direct (cache off) */
	set_cache(0, 128);
	BENCH("st1.uskb_nocache", n, for (i = 0; i < n; i++) {
		struct uskb *skb = uskb_alloc(256);
		bench_sink += skb->end;
		uskb_free(skb);
	});
	set_cache(64, 128);

	/* 2. across threads */
	pc_bench("pc.uskb_defer", PC_USKB, "pc_idle.uskb_defer");
	set_cache(0, 0);
	pc_bench("pc.uskb_locked_pool", PC_USKB, NULL);
	set_cache(64, 128);
	pc_bench("pc.malloc", PC_MALLOC, NULL);
	uskb_thread_flush();
	return uskb_stats_all_freed() ? 0 : 1;
}
