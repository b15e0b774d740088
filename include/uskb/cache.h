/* SPDX-License-Identifier: MIT */
#ifndef USKB_CACHE_H
#define USKB_CACHE_H

/**
 * @file cache.h
 * Per-thread allocation caches and deferred free to the owning thread —
 * the kernel's NAPI skb cache and skb_attempt_defer_free() with threads in
 * the place of CPUs.
 *
 * Every thread that allocates gets a cache of skb shells and of heads (one
 * per size class) on its first allocation; nothing needs setting up. Each
 * skb records the cache it came from (skb->alloc_cpu). When the last
 * reference to an skb is dropped:
 * - on the owning thread, the shell and head go straight back to its cache;
 * - on another thread, the skb is pushed onto the owner's lock-free defer
 *   list (fewer than defer_max wait there), and the owner frees it into its own
 *   cache when its shell cache runs empty (ahead: what it takes at one such
 *   miss, it frees over the next ones, a ready list's worth each, its
 *   memory fetched meanwhile; a miss with nothing taken before frees half
 *   of what it takes, as much at most, at once) or on uskb_cache_drain();
 *   past the cap, or for fclones and zero-copy skbs, the freeing thread
 *   frees it itself ("direct").
 * A thread that exits returns its cached objects to the global pools; skbs
 * it allocated may still be freed later by anyone.
 */

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

struct uskb;

/** Largest per-thread shell cache. */
#define USKB_CACHE_MAX 256

/** Tunables; start with sz (libbpf opts). */
struct uskb_cache_opts {
	size_t sz;
	/** shells a thread caches (NAPI_SKB_CACHE_SIZE; kernel 5.12–6.18: 64,
	 * Nov 2025: 128). 0 disables the cache: every alloc and free goes to
	 * the global pool. Default 64. */
	unsigned int cache_size;
	/** shells taken from the global pool at once on a miss
	 * (NAPI_SKB_CACHE_BULK: 16, Nov 2025: 32). Default 16. */
	unsigned int bulk;
	/** shells handed back when the cache is full (NAPI_SKB_CACHE_HALF /
	 * _FREE: 32). Default 32. */
	unsigned int flush;
	/** net.core.skb_defer_max (64 until Nov 2025, then 128): as in the
	 * kernel, a free that would bring the count on a thread's defer list
	 * to this value is done directly instead, so at most defer_max - 1
	 * wait there (the owner may hold one list it took, and up to 256 skbs
	 * it walked, besides: see uskb_cache_drain); 0 and 1 disable
	 * deferral. Default 128, at most 65535. */
	unsigned int defer_max;
};

/** Read the current tunables. 0 or -EINVAL (bad sz). */
USKB_API int uskb_cache_get_opts(struct uskb_cache_opts *opts);
/**
 * Set the tunables for all threads (takes effect at each cache's next
 * refill or flush). -EINVAL when out of range (cache_size > 256, bulk or
 * flush 0 or above cache_size while the cache is on, defer_max > 65535).
 */
USKB_API int uskb_cache_set_opts(const struct uskb_cache_opts *opts);

/**
 * An eventfd (non-blocking, close-on-exec) that becomes readable when the
 * calling thread's defer list reaches half of defer_max — for owners that
 * sleep. Wake up, then call uskb_cache_drain(). Owned by the library,
 * closed when the thread exits. Returns the fd or a negative errno.
 */
USKB_API int uskb_cache_eventfd(void);

/**
 * Free the skbs other threads deferred to the calling thread: those its
 * allocations took ahead, and those on its list when called (one take:
 * what is pushed meanwhile waits for the next call). Reset its eventfd.
 * Allocation drains by itself whenever the thread's shell cache runs
 * empty. Called back from a release that a drain runs (a destructor), it
 * does nothing. Returns how many were freed.
 */
USKB_API unsigned int uskb_cache_drain(void);

/**
 * skb_attempt_defer_free(): release the caller's (last) reference to @skb,
 * deferring the work to the owning thread when it is another one. This is
 * also what uskb_free() does; the name is here for ported code.
 */
USKB_API void uskb_attempt_defer_free(struct uskb *skb);

/**
 * Allocate @n skbs of @size bytes of room (as uskb_alloc()) into @skbs,
 * all or nothing. 0, or -ENOMEM / -EINVAL (nothing allocated).
 */
USKB_API int uskb_alloc_bulk(struct uskb **skbs, unsigned int n, unsigned int size);

/**
 * Drop one reference to each of @n skbs (as uskb_free(); NULL entries are
 * skipped). skbs owned by other threads are gathered per owner and handed
 * over with one atomic operation per owner. An skb may appear several
 * times, once per reference dropped; adjacent copies of a shared skb (a
 * burst of one skb's references) take one atomic subtraction together.
 */
USKB_API void uskb_free_bulk(struct uskb **skbs, unsigned int n);

#ifdef __cplusplus
}
#endif
#endif
