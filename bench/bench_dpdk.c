/* SPDX-License-Identifier: MIT */
/*
 * The DPDK peer, same output format as bench_core / bench_cache:
 * rte_pktmbuf_alloc/free, _alloc_bulk/_free_bulk, rte_pktmbuf_clone on a
 * mempool with a 256-entry per-lcore cache (EAL --no-huge, lcores 0-1), and
 * producer/consumer with the consumer on lcore 1 freeing into the mempool
 * (through the same SPSC ring the uskb benchmark uses).
 *
 * Then the same three loops and the producer/consumer head to head:
 * DPDK's and uskb's (linked in) timed in short runs that alternate within
 * this one process, so a vCPU whose speed drifts (this VM's do, by up to
 * 1.6x within minutes, and 4x for the two threads' loop) slows both sides
 * alike. Rows "h2h.<loop>.dpdk" and "h2h.<loop>.uskb"; "h2h.pc.ratio".
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_setaffinity_np in bench.h */
#endif
#include <limits.h>
#include <rte_eal.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <uskb/uskb.h>
#include "bench.h"
#include "spsc.h"

#define BURST 32

static struct rte_mempool *mp;
static struct spsc ring;
static long pc_total; /* operations per producer/consumer run */
static int pc_pause;  /* USKB_BENCH_PAUSE: both sides pause while they wait (x86) */

/* a producer/consumer side's wait: nothing, or a pause (USKB_BENCH_PAUSE, x86 only) */
static inline void pc_wait(void)
{
#if defined(__x86_64__) || defined(__i386__)
	if (pc_pause)
		__builtin_ia32_pause();
#endif
}

/* the consumer: frees what the ring brings into the mempool, or (@arg set) to uskb's owner */
static int pc_consumer(void *arg)
{
	void *v[BURST];
	long got = 0;

	while (got < pc_total) {
		unsigned int n = spsc_pop(&ring, v, BURST);

		if (!n) {
			pc_wait();
			continue;
		}
		if (arg)
			uskb_free_bulk((struct uskb **)v, n);
		else
			rte_pktmbuf_free_bulk((struct rte_mbuf **)v, n);
		got += n;
	}
	if (arg)
		uskb_thread_flush(); /* the last part-filled batches go to the owner */
	return 0;
}

/* Mops/s of pc_total skbs (@uskb) or mbufs allocated here and freed on @worker */
static double pc_run(unsigned int worker, int uskb)
{
	void *v[BURST];
	long sent = 0;
	double t0;

	atomic_store(&ring.head, 0);
	atomic_store(&ring.tail, 0);
	rte_eal_remote_launch(pc_consumer, uskb ? (void *)1 : NULL, worker); /* arg set: uskb */
	t0 = bench_now_ns();
	while (sent < pc_total) {
		unsigned int k = 0;

		if (uskb) {
			if (uskb_alloc_bulk((struct uskb **)v, BURST, 256))
				abort();
		} else {
			/* the pool momentarily empty: the consumer is behind */
			while (rte_pktmbuf_alloc_bulk(mp, (struct rte_mbuf **)v, BURST))
				pc_wait();
		}
		while (k < BURST) {
			unsigned int p = spsc_push(&ring, v + k, BURST - k);

			if (!p)
				pc_wait();
			k += p;
		}
		sent += BURST;
	}
	rte_eal_wait_lcore(worker);
	return (double)pc_total / (bench_now_ns() - t0) * 1e3;
}

/* pc_run() of uskb; *@direct: the skbs its consumer freed itself (the defer cap) */
static double pc_run_uskb(unsigned int worker, unsigned long long *direct)
{
	struct uskb_stats a = { .sz = sizeof(a) }, b = { .sz = sizeof(b) };
	double r;

	uskb_stats_get(&a);
	r = pc_run(worker, 1);
	uskb_stats_get(&b);
	*direct = (unsigned long long)(b.direct_frees - a.direct_frees);
	return r;
}

/* the clone loops' templates, made on first use */
static struct rte_mbuf *h2h_mtmpl;
static struct uskb *h2h_stmpl;

/* the loops both sides run; each returns ns per operation over @n */
static double loop_dpdk(int w, long n)
{
	struct rte_mbuf *v[BURST], *m, *tmpl = h2h_mtmpl;
	double t0 = bench_now_ns();
	long i;

	if (!tmpl) {
		tmpl = h2h_mtmpl = rte_pktmbuf_alloc(mp);
		rte_pktmbuf_append(tmpl, 200);
	}
	switch (w) {
	case 0:
		for (i = 0; i < n; i++) {
			m = rte_pktmbuf_alloc(mp);
			bench_sink += m->buf_len;
			rte_pktmbuf_free(m);
		}
		break;
	case 1:
		for (i = 0; i < n / BURST; i++) {
			if (rte_pktmbuf_alloc_bulk(mp, v, BURST))
				abort();
			bench_sink += v[0]->buf_len;
			rte_pktmbuf_free_bulk(v, BURST);
		}
		break;
	default:
		for (i = 0; i < n; i++) {
			m = rte_pktmbuf_clone(tmpl, mp);
			bench_sink += m->pkt_len;
			rte_pktmbuf_free(m);
		}
	}
	return (bench_now_ns() - t0) / (double)n;
}

static double loop_uskb(int w, long n)
{
	struct uskb *v[BURST], *s, *tmpl = h2h_stmpl;
	double t0 = bench_now_ns();
	long i;

	if (!tmpl) {
		tmpl = h2h_stmpl = uskb_alloc(256);
		uskb_put_zero(tmpl, 200);
	}
	switch (w) {
	case 0:
		for (i = 0; i < n; i++) {
			s = uskb_alloc(256);
			bench_sink += s->end;
			uskb_free(s);
		}
		break;
	case 1:
		for (i = 0; i < n / BURST; i++) {
			if (uskb_alloc_bulk(v, BURST, 256))
				abort();
			bench_sink += v[0]->end;
			uskb_free_bulk(v, BURST);
		}
		break;
	default:
		for (i = 0; i < n; i++) {
			s = uskb_clone(tmpl);
			bench_sink += s->len;
			uskb_free(s);
		}
	}
	return (bench_now_ns() - t0) / (double)n;
}

#define H2H_RUNS 15

/* @n operations a run, H2H_RUNS runs a side after one warm-up each, the order alternating */
static void head_to_head(long n)
{
	static const char *const name[] = { "alloc_free", "st32", "clone_free" };
	int w, k, runs = bench_smoke() ? 1 : H2H_RUNS;

	for (w = 0; w < 3; w++) {
		double d[H2H_RUNS], u[H2H_RUNS];
		char row[64];

		snprintf(row, sizeof(row), "h2h.%s (dpdk, uskb alternating)", name[w]);
		if (!bench_only(row))
			continue;
		bench_row(row);
		loop_dpdk(w, n);
		loop_uskb(w, n);
		for (k = 0; k < runs; k++) {
			if (k & 1) {
				u[k] = loop_uskb(w, n);
				d[k] = loop_dpdk(w, n);
			} else {
				d[k] = loop_dpdk(w, n);
				u[k] = loop_uskb(w, n);
			}
		}
		printf("h2h.%s.dpdk %.2f\n", name[w], bench_median(d, runs));
		printf("h2h.%s.uskb %.2f\n", name[w], bench_median(u, runs));
		fflush(stdout);
	}
	rte_pktmbuf_free(h2h_mtmpl);
	uskb_free(h2h_stmpl);
}

/*
 * Producer/consumer head to head: runs of 1M operations, DPDK's and uskb's
 * in turn, so that both sides of a pair see the vCPUs at one speed. Prints
 * the medians (Mops/s) and the median of the pairs' uskb/DPDK ratios.
 */
static void pc_head_to_head(unsigned int worker)
{
	double d[H2H_RUNS], u[H2H_RUNS], q[H2H_RUNS];
	long keep = pc_total;
	int k, runs = bench_smoke() ? 1 : H2H_RUNS;
	bool pairs = bench_flag("USKB_BENCH_PAIRS");

	if (!bench_only("h2h.pc"))
		return;
	pc_total = bench_n(1000000L);
	bench_row("h2h.pc (dpdk, uskb alternating)");
	pc_run(worker, 0);
	pc_run(worker, 1);
	for (k = 0; k < runs; k++) {
		unsigned long long direct;

		if (k & 1) {
			u[k] = pc_run_uskb(worker, &direct);
			d[k] = pc_run(worker, 0);
		} else {
			d[k] = pc_run(worker, 0);
			u[k] = pc_run_uskb(worker, &direct);
		}
		q[k] = u[k] / d[k];
		/*
		 * each pair, for an analysis of the VM's phases (USKB_BENCH_PAIRS=1):
		 * the rates, and the skbs uskb's consumer freed itself (defer cap)
		 */
		if (pairs)
			fprintf(stderr, "h2h.pc pair %d dpdk %.2f uskb %.2f direct %llu\n", k, d[k],
				u[k], direct);
	}
	printf("h2h.pc.dpdk %.2f\n", bench_median(d, runs));
	printf("h2h.pc.uskb %.2f\n", bench_median(u, runs));
	printf("h2h.pc.ratio %.2f\n", bench_median(q, runs));
	fflush(stdout);
	pc_total = keep;
}

int main(int argc, char **argv)
{
	char *eal[] = { argv[0], "--no-huge", "--no-pci", "--no-telemetry", "-m", "512",
			"-l", "0-1", "--log-level=1", "--no-shconf" };
	struct rte_mbuf *m, *tmpl, *v[BURST];
	const long n = bench_n(2000000L);
	const char *dm = getenv("USKB_BENCH_DEFER_MAX");
	unsigned int worker;
	long i;

	(void)argc;
	pc_pause = bench_flag("USKB_BENCH_PAUSE");
	/* USKB_BENCH_DEFER_MAX=N: uskb's defer_max for the whole run (the cap's experiments) */
	if (dm) {
		struct uskb_cache_opts o = { .sz = sizeof(o) };
		char *end;
		unsigned long val = strtoul(dm, &end, 10);
		int bad = !*dm || *end || val > UINT_MAX || uskb_cache_get_opts(&o);

		if (!bad) {
			o.defer_max = (unsigned int)val;
			bad = uskb_cache_set_opts(&o) != 0;
		}
		if (bad) {
			fprintf(stderr, "bench_dpdk: USKB_BENCH_DEFER_MAX=%s: want 0 to 65535\n",
				dm);
			return 2;
		}
	}
	pc_total = bench_n(4000000L);
	if (rte_eal_init((int)(sizeof(eal) / sizeof(eal[0])), eal) < 0) {
		fprintf(stderr, "bench_dpdk: rte_eal_init failed\n");
		return 77;
	}
	/* 256-byte data room + headroom, cache 256 per lcore (the usual choice) */
	mp = rte_pktmbuf_pool_create("bench", 16383, 256, 0, 256 + RTE_PKTMBUF_HEADROOM,
				     SOCKET_ID_ANY);
	if (!mp) {
		fprintf(stderr, "bench_dpdk: pool create failed\n");
		return 77;
	}
	BENCH("alloc_free.dpdk", n, for (i = 0; i < n; i++) {
		m = rte_pktmbuf_alloc(mp);
		bench_sink += m->buf_len;
		rte_pktmbuf_free(m);
	});
	BENCH("st32.dpdk", n, for (i = 0; i < n / BURST; i++) {
		if (rte_pktmbuf_alloc_bulk(mp, v, BURST))
			abort();
		bench_sink += v[0]->buf_len;
		rte_pktmbuf_free_bulk(v, BURST);
	});
	tmpl = rte_pktmbuf_alloc(mp);
	rte_pktmbuf_append(tmpl, 100);
	BENCH("clone_free.dpdk", n, for (i = 0; i < n; i++) {
		m = rte_pktmbuf_clone(tmpl, mp);
		bench_sink += m->pkt_len;
		rte_pktmbuf_free(m);
	});
	rte_pktmbuf_free(tmpl);
	worker = rte_get_next_lcore(-1, 1, 0);
	if (worker < RTE_MAX_LCORE && bench_only("pc.dpdk")) {
		double r[5];
		int k, runs = bench_smoke() ? 1 : 5;

		bench_row("pc.dpdk");
		pc_run(worker, 0);
		for (k = 0; k < runs; k++)
			r[k] = pc_run(worker, 0);
		printf("pc.dpdk %.2f\n", bench_median(r, runs));
	}
	head_to_head(bench_n(4000000L));
	if (worker < RTE_MAX_LCORE)
		pc_head_to_head(worker);
	rte_mempool_free(mp);
	rte_eal_cleanup();
	return 0;
}
