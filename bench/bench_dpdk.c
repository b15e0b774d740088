/* SPDX-License-Identifier: MIT */
/*
 * The DPDK peer: rte_pktmbuf_alloc/free and rte_pktmbuf_clone on a mempool
 * with a per-lcore cache, EAL started with --no-huge. Same output format as
 * bench_core.
 */
#include <rte_eal.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include "bench.h"

#define N 1000000L

int main(int argc, char **argv)
{
	char *eal[] = { argv[0], "--no-huge", "--no-pci", "--no-telemetry", "-m", "256",
			"-l", "0", "--log-level=1", "--no-shconf" };
	struct rte_mempool *mp;
	struct rte_mbuf *m, *tmpl;
	long i;

	(void)argc;
	if (rte_eal_init((int)(sizeof(eal) / sizeof(eal[0])), eal) < 0) {
		fprintf(stderr, "bench_dpdk: rte_eal_init failed\n");
		return 77;
	}
	/* 256-byte data room + headroom, cache 256 per lcore (the usual choice) */
	mp = rte_pktmbuf_pool_create("bench", 8191, 256, 0, 256 + RTE_PKTMBUF_HEADROOM,
				     SOCKET_ID_ANY);
	if (!mp) {
		fprintf(stderr, "bench_dpdk: pool create failed\n");
		return 77;
	}
	BENCH("alloc_free.dpdk", N, for (i = 0; i < N; i++) {
		m = rte_pktmbuf_alloc(mp);
		bench_sink += m->buf_len;
		rte_pktmbuf_free(m);
	});
	tmpl = rte_pktmbuf_alloc(mp);
	rte_pktmbuf_append(tmpl, 100);
	BENCH("clone_free.dpdk", N, for (i = 0; i < N; i++) {
		m = rte_pktmbuf_clone(tmpl, mp);
		bench_sink += m->pkt_len;
		rte_pktmbuf_free(m);
	});
	rte_pktmbuf_free(tmpl);
	rte_mempool_free(mp);
	rte_eal_cleanup();
	return 0;
}
