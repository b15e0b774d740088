/* SPDX-License-Identifier: MIT */
/* A single-producer single-consumer pointer ring for the benchmarks. */
#ifndef USKB_BENCH_SPSC_H
#define USKB_BENCH_SPSC_H

#include <stdatomic.h>

#define SPSC_SIZE 4096 /* power of two */

struct spsc {
	_Alignas(64) atomic_ulong head; /* consumer */
	_Alignas(64) atomic_ulong tail; /* producer */
	_Alignas(64) void *slot[SPSC_SIZE];
};

/* Push up to n; returns how many went in. */
static inline unsigned int spsc_push(struct spsc *r, void **v, unsigned int n)
{
	unsigned long t = atomic_load_explicit(&r->tail, memory_order_relaxed);
	unsigned long h = atomic_load_explicit(&r->head, memory_order_acquire);
	unsigned int room = (unsigned int)(SPSC_SIZE - (t - h)), i;

	if (n > room)
		n = room;
	/* full: no store, or a waiting producer would take the consumer's line each time */
	if (!n)
		return 0;
	for (i = 0; i < n; i++)
		r->slot[(t + i) & (SPSC_SIZE - 1)] = v[i];
	atomic_store_explicit(&r->tail, t + n, memory_order_release);
	return n;
}

static inline unsigned int spsc_pop(struct spsc *r, void **v, unsigned int n)
{
	unsigned long h = atomic_load_explicit(&r->head, memory_order_relaxed);
	unsigned long t = atomic_load_explicit(&r->tail, memory_order_acquire);
	unsigned int have = (unsigned int)(t - h), i;

	if (n > have)
		n = have;
	/* empty: no store, or a polling consumer would take the producer's line each time */
	if (!n)
		return 0;
	for (i = 0; i < n; i++)
		v[i] = r->slot[(h + i) & (SPSC_SIZE - 1)];
	atomic_store_explicit(&r->head, h + n, memory_order_release);
	return n;
}

#endif
