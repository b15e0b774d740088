/* SPDX-License-Identifier: MIT */
/* Timing helpers shared by the benchmark programs. */
#ifndef USKB_BENCH_H
#define USKB_BENCH_H

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

#define BENCH_RUNS 7

/*
 * Time @body (which runs @iters operations) BENCH_RUNS times after one
 * warm-up, and print "name ns_per_op" with the median.
 */
#define BENCH(name, iters, ...)                                                 \
	do {                                                                   \
		double _r[BENCH_RUNS];                                         \
		long _it = (iters);                                            \
		int _k;                                                        \
		for (_k = -1; _k < BENCH_RUNS; _k++) {                         \
			double _t0 = bench_now_ns();                           \
			__VA_ARGS__;                                                \
			if (_k >= 0)                                           \
				_r[_k] = (bench_now_ns() - _t0) / (double)_it; \
		}                                                              \
		qsort(_r, BENCH_RUNS, sizeof(double), bench_cmp);              \
		printf("%s %.2f\n", name, _r[BENCH_RUNS / 2]);                 \
		fflush(stdout);                                                \
	} while (0)

static volatile unsigned long bench_sink;

#endif
