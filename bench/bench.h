/* SPDX-License-Identifier: MIT */
/* Timing helpers shared by the benchmark programs. */
#ifndef USKB_BENCH_H
#define USKB_BENCH_H

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline double bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int bench_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* a switch in the environment: set to anything but empty or "0" */
static inline int bench_flag(const char *name)
{
	const char *e = getenv(name);

	return e && *e && strcmp(e, "0") != 0;
}

/*
 * USKB_BENCH_SMOKE=1 (a bench_flag()): one timed run per row and a
 * hundredth of the work, to prove in CI that every benchmark still builds
 * and runs. Smoke figures are never compared or published.
 */
static inline int bench_smoke(void)
{
	static int smoke = -1;

	if (smoke < 0)
		smoke = bench_flag("USKB_BENCH_SMOKE");
	return smoke;
}

/*
 * Pin the calling thread to @cpu, as DPDK's EAL pins its lcores
 * (bench_dpdk: main lcore on CPU 0, the worker on CPU 1): on a VM the two
 * vCPUs can differ in speed by 1.5x, so the uskb and DPDK rows must run
 * on the same one. Quietly skipped where the CPU does not exist.
 */
static inline void bench_pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	(void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/*
 * USKB_BENCH_ONLY=<prefix>[,<prefix>...]: run only the rows whose names
 * start with one of the prefixes (all rows when unset or empty; an empty
 * item matches nothing, and spaces are not trimmed). A row's name is the
 * key it prints, or the first of them (pc.uskb_defer, which also prints
 * pc_idle.uskb_defer); a head-to-head row's is its keys' stem (h2h.pc for
 * h2h.pc.dpdk, h2h.pc.uskb and h2h.pc.ratio), e.g. "h2h.pc" for
 * bench_dpdk's producer/consumer head to head alone.
 */
static inline int bench_only(const char *name)
{
	const char *e = getenv("USKB_BENCH_ONLY"), *p;
	size_t n;

	if (!e || !*e)
		return 1;
	for (p = e; *p; p += n + (p[n] == ',')) {
		n = strcspn(p, ",");
		if (n && strncmp(name, p, n) == 0)
			return 1;
	}
	return 0;
}

/* the operations a row runs: @n, or a hundredth of it in smoke mode */
static inline long bench_n(long n)
{
	return bench_smoke() ? (n / 100 > 0 ? n / 100 : 1) : n;
}

#define BENCH_MAX_RUNS 7

/* timed runs per row (the median is printed) */
static inline int bench_runs(void)
{
	return bench_smoke() ? 1 : BENCH_MAX_RUNS;
}

/* progress on stderr as each row starts; the figures go to stdout */
static inline void bench_row(const char *name)
{
	fprintf(stderr, "  %s\n", name);
}

/* the median of @n figures in @r (sorted in place) */
static inline double bench_median(double *r, int n)
{
	qsort(r, (size_t)n, sizeof(double), bench_cmp);
	return r[n / 2];
}

/*
 * Time @body (which runs @iters operations) bench_runs() times after one
 * warm-up, and print "name ns_per_op" with the median; nothing for a row
 * USKB_BENCH_ONLY leaves out.
 */
#define BENCH(name, iters, ...)                                                 \
	do {                                                                   \
		double _r[BENCH_MAX_RUNS];                                     \
		long _it = (iters);                                            \
		int _k, _runs = bench_runs();                                  \
		if (!bench_only(name))                                         \
			break;                                                 \
		bench_row(name);                                               \
		for (_k = -1; _k < _runs; _k++) {                              \
			double _t0 = bench_now_ns();                           \
			__VA_ARGS__;                                           \
			if (_k >= 0)                                           \
				_r[_k] = (bench_now_ns() - _t0) / (double)_it; \
		}                                                              \
		printf("%s %.2f\n", name, bench_median(_r, _runs));           \
		fflush(stdout);                                                \
	} while (0)

static volatile unsigned long bench_sink;

#endif
