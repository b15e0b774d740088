/* SPDX-License-Identifier: MIT */
#ifndef USKB_COMMON_H
#define USKB_COMMON_H

/**
 * @file common.h
 * Shared macros of the uskb headers: inline policy, branch hints, export
 * attribute and the one misuse handler, uskb_bug().
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef USKB_INLINE
#define USKB_INLINE static inline
#endif

#ifndef USKB_API
#define USKB_API __attribute__((visibility("default")))
#endif

#ifndef uskb_likely
#define uskb_likely(x) __builtin_expect(!!(x), 1)
#define uskb_unlikely(x) __builtin_expect(!!(x), 0)
#endif

/** Size of one page of the mem layer (the kernel's PAGE_SIZE on x86-64). */
#define USKB_PAGE_SHIFT 12
#define USKB_PAGE_SIZE (1u << USKB_PAGE_SHIFT)
/** Cache line size: SMP_CACHE_BYTES / L1_CACHE_BYTES. */
#define USKB_CACHE_BYTES 64u
/** "No NUMA node preference" (NUMA_NO_NODE). */
#define USKB_NO_NODE (-1)

struct uskb;

/**
 * Report kernel-style misuse (what the kernel would BUG() on) and abort.
 *
 * Prints the operation, the skb geometry (when @skb is not NULL), the source
 * location and the caller's address to stderr, calls the installed handler
 * (see uskb_set_bug_handler()) and aborts if the handler returns.
 */
USKB_API void __uskb_bug(const char *op, const struct uskb *skb,
			 const char *file, int line, const void *caller,
			 const char *fmt, ...)
	__attribute__((noreturn, cold, format(printf, 6, 7)));

#define uskb_bug(op, skb, ...)                                               \
	__uskb_bug(op, skb, __FILE__, __LINE__, __builtin_return_address(0),  \
		   __VA_ARGS__)

/**
 * Handler run by uskb_bug() after the report is printed. @report is the
 * full text of the report. A handler may longjmp out (tests do); if it
 * returns, the process aborts. Returns the previous handler; NULL restores
 * the default (abort).
 */
typedef void (*uskb_bug_handler_t)(const char *report);
USKB_API uskb_bug_handler_t uskb_set_bug_handler(uskb_bug_handler_t fn);

/**
 * Fault injection, for tests: the @nth allocation the library attempts from
 * now on (a page, head, shell, skb or internal object) fails as if memory
 * had run out; 0 disarms. uskb_fault_pending() returns how many attempts
 * are left before it fires (0 or less once it fired or when disarmed), so a
 * test can tell whether an operation reached the nth allocation.
 */
USKB_API void uskb_fault_inject(long nth);
USKB_API long uskb_fault_pending(void);

#ifdef __cplusplus
}
#endif
#endif
