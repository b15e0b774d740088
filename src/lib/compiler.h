/* SPDX-License-Identifier: MIT */
#ifndef USKB_LIB_COMPILER_H
#define USKB_LIB_COMPILER_H

/*
 * The bottom of the private headers: what every layer of the library may use.
 * Header-only (no symbols), so a file including it depends on no object.
 *
 * Naming: every symbol of the library that is not API is called __uskb_*
 * and declared USKB_HIDDEN; static functions and inline helpers in private
 * headers are free to use short names.
 */

#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include "uskb/common.h"

/* A symbol shared between the library's files and invisible outside it. */
#define USKB_HIDDEN __attribute__((visibility("hidden")))

#define uskb_container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

/*
 * Make @var opaque to the optimiser (the kernel's OPTIMIZER_HIDE_VAR): its
 * value stays in one register, and the accesses through it are addressed
 * from that register, not recomputed from how it was made. No instruction.
 */
#define uskb_hide_var(var) __asm__("" : "+r"(var))

/*
 * A counter with one writer (its thread) and readers anywhere: a relaxed load
 * and store, no read-modify-write, so as cheap as a plain add on x86, and
 * readers never see a torn value. For plain (non-_Atomic) integer objects.
 */
#define uskb_count_add(p, v) \
	__atomic_store_n((p), __atomic_load_n((p), __ATOMIC_RELAXED) + (v), __ATOMIC_RELAXED)
#define uskb_count_read(p) __atomic_load_n((p), __ATOMIC_RELAXED)

/* Nanoseconds on @clock (CLOCK_MONOTONIC, CLOCK_REALTIME, ...). */
static inline uint64_t uskb_clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t uskb_mono_ns(void)
{
	return uskb_clock_ns(CLOCK_MONOTONIC);
}

/* a + b, stuck at UINT64_MAX instead of wrapping */
static inline uint64_t uskb_add_sat(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

#endif
