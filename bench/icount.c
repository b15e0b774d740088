/* SPDX-License-Identifier: MIT */
/*
 * Loops whose instructions bench/icount counts under callgrind. Each runs
 * N rounds of one operation and nothing else, so (the count of a run of
 * 2N rounds - that of N) / (N * skbs a round) is the operation's:
 *
 *   icount alloc_free N   uskb_alloc(256) + uskb_free(), 1 skb a round
 *   icount bulk N         uskb_alloc_bulk() + uskb_free_bulk() of 32
 *   icount clone_free N   uskb_clone() + uskb_free() of a 200-byte skb
 *   icount defer N        96 skbs allocated in bursts of 32, freed by a
 *                         second thread with uskb_free_bulk() (all
 *                         deferred: 96 is under defer_max), barriers
 *                         between
 *
 * Built with USKB_ICOUNT_DPDK (icount_dpdk): the same loops with mbufs,
 * rte_pktmbuf_alloc/free, _alloc_bulk/_free_bulk and _clone on a mempool
 * with a 256-entry per-lcore cache (EAL --no-huge; the second thread of
 * "defer" a worker lcore, which has a cache).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef USKB_ICOUNT_DPDK
#include <rte_eal.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

typedef struct rte_mbuf buf_t;
static struct rte_mempool *mp;
#define BUF_ALLOC() rte_pktmbuf_alloc(mp)
#define BUF_FREE(b) rte_pktmbuf_free(b)
#define BUF_ALLOC_BULK(v, n) rte_pktmbuf_alloc_bulk(mp, (v), (n))
#define BUF_FREE_BULK(v, n) rte_pktmbuf_free_bulk((v), (n))
#define BUF_CLONE(b) rte_pktmbuf_clone((b), mp)
#else
#include <uskb/uskb.h>

typedef struct uskb buf_t;
#define BUF_ALLOC() uskb_alloc(256)
#define BUF_FREE(b) uskb_free(b)
#define BUF_ALLOC_BULK(v, n) uskb_alloc_bulk((v), (n), 256)
#define BUF_FREE_BULK(v, n) uskb_free_bulk((v), (n))
#define BUF_CLONE(b) uskb_clone(b)
#endif

/*
 * Each loop a function of its own; DPDK's inline fast paths inlined whole
 * in it, as in a program with one such loop (several call sites in one
 * function make gcc call rte_pktmbuf_free() out of line instead).
 */
#ifdef USKB_ICOUNT_DPDK
#define LOOP __attribute__((noinline, flatten))
#else
#define LOOP __attribute__((noinline))
#endif

#define BURST 32
#define NB 3 /* bursts a round of "defer" */

/* the compiler must keep each buffer: it is "used" here */
#define KEEP(p) __asm__ volatile("" : : "r"(p) : "memory")

static buf_t *v[NB][BURST];
static pthread_barrier_t bar;
static long rounds;

static void die(const char *what)
{
	fprintf(stderr, "icount: %s failed\n", what);
	exit(1);
}

static LOOP void consume(void)
{
	for (long k = 0; k < rounds; k++) {
		pthread_barrier_wait(&bar);
		for (int i = 0; i < NB; i++)
			BUF_FREE_BULK(v[i], BURST);
		pthread_barrier_wait(&bar);
	}
}

#ifdef USKB_ICOUNT_DPDK
static int consumer(void *arg)
{
	(void)arg;
	consume();
	return 0;
}
#else
static void *consumer(void *arg)
{
	(void)arg;
	consume();
	uskb_thread_flush();
	return NULL;
}
#endif

static void defer_loop(void)
{
	pthread_barrier_init(&bar, NULL, 2);
#ifdef USKB_ICOUNT_DPDK
	if (rte_eal_remote_launch(consumer, NULL, rte_get_next_lcore(-1, 1, 0)))
		die("rte_eal_remote_launch");
#else
	pthread_t th;

	if (pthread_create(&th, NULL, consumer, NULL))
		die("pthread_create");
#endif
	for (long k = 0; k < rounds; k++) {
		for (int i = 0; i < NB; i++)
			if (BUF_ALLOC_BULK(v[i], BURST))
				die("bulk allocation");
		pthread_barrier_wait(&bar);
		pthread_barrier_wait(&bar);
	}
#ifdef USKB_ICOUNT_DPDK
	rte_eal_mp_wait_lcore();
#else
	pthread_join(th, NULL);
#endif
}

static LOOP void alloc_free(void)
{
	buf_t *b;

	for (long i = 0; i < rounds; i++) {
		b = BUF_ALLOC();
		KEEP(b);
		BUF_FREE(b);
	}
}

static LOOP void bulk(void)
{
	for (long i = 0; i < rounds; i++) {
		if (BUF_ALLOC_BULK(v[0], BURST))
			die("bulk allocation");
		KEEP(v[0][0]);
		BUF_FREE_BULK(v[0], BURST);
	}
}

static LOOP void clone_free(buf_t *tmpl)
{
	buf_t *b;

	for (long i = 0; i < rounds; i++) {
		b = BUF_CLONE(tmpl);
		KEEP(b);
		BUF_FREE(b);
	}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 2 ? argv[1] : "";

	rounds = argc > 2 ? atol(argv[2]) : 0;
	if (rounds <= 0) {
		fprintf(stderr, "usage: icount alloc_free|bulk|clone_free|defer ROUNDS\n");
		return 2;
	}
#ifdef USKB_ICOUNT_DPDK
	char *eal[] = { argv[0], "--no-huge", "--no-pci",	   "--no-telemetry", "-m",
			"64",	 "-l",	      "0-1",	   "--log-level=1",  "--no-shconf" };

	if (rte_eal_init((int)(sizeof(eal) / sizeof(eal[0])), eal) < 0)
		die("rte_eal_init");
	mp = rte_pktmbuf_pool_create("icount", 16383, 256, 0, 256 + RTE_PKTMBUF_HEADROOM,
				     SOCKET_ID_ANY);
	if (!mp)
		die("rte_pktmbuf_pool_create");
#endif
	if (!strcmp(mode, "alloc_free")) {
		alloc_free();
	} else if (!strcmp(mode, "bulk")) {
		bulk();
	} else if (!strcmp(mode, "clone_free")) {
		buf_t *tmpl = BUF_ALLOC();

		if (!tmpl)
			die("allocation");
#ifdef USKB_ICOUNT_DPDK
		rte_pktmbuf_append(tmpl, 200);
#else
		uskb_put(tmpl, 200);
#endif
		clone_free(tmpl);
		BUF_FREE(tmpl);
	} else if (!strcmp(mode, "defer")) {
		defer_loop();
	} else {
		fprintf(stderr, "icount: unknown loop '%s'\n", mode);
		return 2;
	}
#ifndef USKB_ICOUNT_DPDK
	uskb_thread_flush();
#endif
	return 0;
}
