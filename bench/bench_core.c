/* SPDX-License-Identifier: MIT */
/*
 * Core benchmarks of libuskb with in-process baselines (malloc, byte-wise
 * checksum). Prints "name ns_per_op" lines; bench/run makes the table.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_setaffinity_np in bench.h */
#endif
#include <uskb/uskb.h>
#include "bench.h"

#define BATCH 1000

static struct uskb *mk_1500_3frags(struct uskb_page *pg)
{
	struct uskb *skb = uskb_alloc(256);
	int i;

	uskb_reserve(skb, 64);
	uskb_put_zero(skb, 54);
	for (i = 0; i < 3; i++) {
		uskb_page_get(pg);
		uskb_add_rx_frag(skb, i, pg, i * 1024, i < 2 ? 482 : 482, 1024);
	}
	return skb;
}

int main(void)
{
	static unsigned char buf[2048];
	struct uskb *batch[BATCH];
	struct uskb_page *pg = uskb_page_alloc(0);
	struct uskb *tmpl;
	const long n = bench_n(1000000L);
	long i;
	int j;

	bench_pin(0); /* the CPU of bench_dpdk's main lcore */

	memset(buf, 0x5a, sizeof(buf));
	BENCH("alloc_free.malloc", n, for (i = 0; i < n; i++) {
		void *s = malloc(sizeof(struct uskb));
		void *h = malloc(256 + 320);
		bench_sink += (unsigned long)s ^ (unsigned long)h;
		free(h);
		free(s);
	});
	BENCH("alloc_free.uskb", n, for (i = 0; i < n; i++) {
		struct uskb *skb = uskb_alloc(256);
		bench_sink += skb->end;
		uskb_free(skb);
	});
	tmpl = uskb_alloc(256);
	uskb_put_zero(tmpl, 100);
	BENCH("clone_free.uskb", n, for (i = 0; i < n; i++) {
		struct uskb *c = uskb_clone(tmpl);
		bench_sink += c->len;
		uskb_free(c);
	});
	uskb_free(tmpl);
	tmpl = uskb_alloc_fclone(256);
	uskb_put_zero(tmpl, 100);
	BENCH("clone_free.uskb_fclone", n, for (i = 0; i < n; i++) {
		struct uskb *c = uskb_clone(tmpl);
		bench_sink += c->len;
		uskb_free(c);
	});
	uskb_free(tmpl);
	tmpl = uskb_alloc(256);
	uskb_reserve(tmpl, 128);
	BENCH("put_push_pull.uskb", 3 * n, for (i = 0; i < n; i++) {
		uskb_put(tmpl, 14);
		uskb_push(tmpl, 20);
		uskb_pull(tmpl, 20);
		uskb_trim(tmpl, 0);
		bench_sink += tmpl->len;
	});
	uskb_free(tmpl);

	tmpl = mk_1500_3frags(pg);
	BENCH("pskb_copy_free.uskb", n / 4, for (i = 0; i < n / 4; i++) {
		struct uskb *c = uskb_pskb_copy(tmpl);
		bench_sink += c->len;
		uskb_free(c);
	});
	/* linearize alone: copies prepared outside the timed region */
	if (bench_only("linearize_1500_3frags.uskb")) {
		double r[BENCH_MAX_RUNS], t0;
		int k, runs = bench_runs(), reps = bench_smoke() ? 1 : 20;

		bench_row("linearize_1500_3frags.uskb");
		for (k = -1; k < runs; k++) {
			double sum = 0;
			int rep;

			for (rep = 0; rep < reps; rep++) {
				for (j = 0; j < BATCH; j++)
					batch[j] = uskb_pskb_copy(tmpl);
				t0 = bench_now_ns();
				for (j = 0; j < BATCH; j++)
					uskb_linearize(batch[j]);
				sum += bench_now_ns() - t0;
				for (j = 0; j < BATCH; j++)
					uskb_free(batch[j]);
			}
			if (k >= 0)
				r[k] = sum / ((double)reps * BATCH);
		}
		printf("linearize_1500_3frags.uskb %.2f\n", bench_median(r, runs));
	}
	uskb_free(tmpl);

	BENCH("csum_64.bytewise", n, for (i = 0; i < n; i++)
		bench_sink += uskb_csum_partial_ref(buf + (i & 7), 64, 0));
	BENCH("csum_64.uskb", n, for (i = 0; i < n; i++)
		bench_sink += uskb_csum_partial(buf + (i & 7), 64, 0));
	BENCH("csum_1500.bytewise", n / 10, for (i = 0; i < n / 10; i++)
		bench_sink += uskb_csum_partial_ref(buf + (i & 7), 1500, 0));
	BENCH("csum_1500.uskb", n, for (i = 0; i < n; i++)
		bench_sink += uskb_csum_partial(buf + (i & 7), 1500, 0));
	uskb_page_put(pg);
	if (!uskb_stats_all_freed())
		return 1;
	return 0;
}
