/* SPDX-License-Identifier: MIT */
/*
 * The DPDK peer, same output format as bench_core / bench_cache:
 * rte_pktmbuf_alloc/free, _alloc_bulk/_free_bulk, rte_pktmbuf_clone on a
 * mempool with a 256-entry per-lcore cache (EAL --no-huge, lcores 0-1), and
 * producer/consumer with the consumer on lcore 1 freeing into the mempool
 * (through the same SPSC ring the uskb benchmark uses).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_setaffinity_np in bench.h */
#endif
#include <rte_eal.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include "bench.h"
#include "spsc.h"

#define BURST 32

static struct rte_mempool *mp;
static struct spsc ring;
static long pc_total; /* operations per producer/consumer run */

static int pc_consumer(void *arg)
{
	struct rte_mbuf *v[BURST];
	long got = 0;

	(void)arg;
	while (got < pc_total) {
		unsigned int n = spsc_pop(&ring, (void **)v, BURST);

		if (!n)
			continue;
		rte_pktmbuf_free_bulk(v, n);
		got += n;
	}
	return 0;
}

static double pc_run(unsigned int worker)
{
	struct rte_mbuf *v[BURST];
	long sent = 0;
	double t0;

	atomic_store(&ring.head, 0);
	atomic_store(&ring.tail, 0);
	rte_eal_remote_launch(pc_consumer, NULL, worker);
	t0 = bench_now_ns();
	while (sent < pc_total) {
		unsigned int k = 0;

		while (rte_pktmbuf_alloc_bulk(mp, v, BURST))
			; /* pool momentarily empty: the consumer is behind */
		while (k < BURST)
			k += spsc_push(&ring, (void **)v + k, BURST - k);
		sent += BURST;
	}
	rte_eal_wait_lcore(worker);
	return (double)pc_total / (bench_now_ns() - t0) * 1e3;
}

int main(int argc, char **argv)
{
	char *eal[] = { argv[0], "--no-huge", "--no-pci", "--no-telemetry", "-m", "512",
			"-l", "0-1", "--log-level=1", "--no-shconf" };
	struct rte_mbuf *m, *tmpl, *v[BURST];
	const long n = bench_n(2000000L);
	unsigned int worker;
	long i;

	(void)argc;
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
	if (worker < RTE_MAX_LCORE) {
		double r[5];
		int k, runs = bench_smoke() ? 1 : 5;

		bench_row("pc.dpdk");
		pc_run(worker);
		for (k = 0; k < runs; k++)
			r[k] = pc_run(worker);
		printf("pc.dpdk %.2f\n", bench_median(r, runs));
	}
	rte_mempool_free(mp);
	rte_eal_cleanup();
	return 0;
}
