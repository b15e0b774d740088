/* SPDX-License-Identifier: MIT */
#ifndef USKB_LIB_DEBUG_H
#define USKB_LIB_DEBUG_H

/*
 * Sanitizer and valgrind annotations for pooled memory, and fault injection
 * (uskb_fault_inject): what every allocator of the library checks.
 */

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include "lib/compiler.h"

#if defined(__SANITIZE_ADDRESS__)
#define USKB_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define USKB_ASAN 1
#endif
#endif

#ifdef USKB_ASAN
#include <sanitizer/asan_interface.h>
#define uskb_poison(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define uskb_unpoison(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define uskb_poison(p, n) ((void)(p), (void)(n))
#define uskb_unpoison(p, n) ((void)(p), (void)(n))
#endif

#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>) && !defined(USKB_NO_VALGRIND)
#include <valgrind/memcheck.h>
#define USKB_VALGRIND 1
#endif
#endif

#ifdef USKB_VALGRIND
/* Set once at load time: the client requests cost nothing when not under valgrind. */
extern bool __uskb_on_valgrind USKB_HIDDEN;
/* unlikely: only under valgrind */
#define uskb_vg(req)                                    \
	do {                                            \
		if (uskb_unlikely(__uskb_on_valgrind)) \
			req;                            \
	} while (0)
#else
#define uskb_vg(req) ((void)0)
#endif

/*
 * Running under valgrind (its client requests are wanted): a bulk loop
 * tests this once and, when false, poisons with uskb_poison() alone.
 */
static inline bool uskb_vg_on(void)
{
#ifdef USKB_VALGRIND
	return __uskb_on_valgrind;
#else
	return false;
#endif
}

/* ASan built in or valgrind running: a loop that only annotates runs only then. */
static inline bool uskb_mem_checks(void)
{
#ifdef USKB_ASAN
	return true;
#else
	return uskb_vg_on();
#endif
}

/* Mark pooled memory unusable (in a cache) / usable (handed out). */
static inline void uskb_mem_cached(void *p, size_t n)
{
	uskb_poison(p, n);
	uskb_vg(VALGRIND_MAKE_MEM_NOACCESS(p, n));
}

static inline void uskb_mem_handed_out(void *p, size_t n)
{
	uskb_unpoison(p, n);
	uskb_vg(VALGRIND_MAKE_MEM_UNDEFINED(p, n));
}

/* A pooled object's bookkeeping words: usable while the rest stays cached. */
static inline void uskb_mem_defined(void *p, size_t n)
{
	uskb_unpoison(p, n);
	uskb_vg(VALGRIND_MAKE_MEM_DEFINED(p, n));
}

extern atomic_long __uskb_fault_countdown USKB_HIDDEN;
USKB_HIDDEN bool __uskb_fault_fire(void);

/* True when this allocation must fail (a test asked for it). */
static inline bool uskb_should_fail(void)
{
	/* relaxed, unlikely: armed only by tests */
	if (uskb_likely(atomic_load_explicit(&__uskb_fault_countdown, memory_order_relaxed) <= 0))
		return false;
	return __uskb_fault_fire();
}

#endif
