/* SPDX-License-Identifier: MIT */
#ifndef USKB_STATS_H
#define USKB_STATS_H

/**
 * @file stats.h
 * Live-object counters of the library, for programs and tests.
 */

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Counters; read with uskb_stats_get(). Start with sz (libbpf opts). */
struct uskb_stats {
	size_t sz;		   /**< set to sizeof(struct uskb_stats) */
	/* live objects */
	int64_t skbs;		   /**< skbs allocated and not freed (fclone pairs count once) */
	int64_t fclones;	   /**< fclone pairs live */
	int64_t heads;		   /**< skb heads live */
	int64_t pages;		   /**< page blocks handed out of arenas (any order), pools' idle pages included */
	int64_t pages_by_order[10];
	int64_t slab_pages;	   /**< page blocks carved into skb heads (kept as a cache) */
	int64_t pool_pages_idle;   /**< pages held idle by page pools */
	int64_t pools;		   /**< page pools alive */
	int64_t frag_cache_pages;  /**< blocks held by threads' page_frag caches */
	int64_t zero_page_refs;	   /**< references to the zero pages beyond their base */
	int64_t skbs_cached;	   /**< idle skb shells held by caches */
	/* totals */
	uint64_t skb_allocs;
	uint64_t skb_frees;
	uint64_t arena_bytes;	   /**< bytes mmap'd for arenas */
	/* per-thread caches and deferred free (cache.h) */
	uint64_t cache_hits;	   /**< shells served by a thread's own cache */
	uint64_t cache_misses;	   /**< shell allocations that went to the global pool */
	uint64_t deferred;	   /**< skbs handed to their owner's defer list */
	uint64_t drained;	   /**< deferred skbs freed by their owner */
	uint64_t direct_frees;	   /**< skbs another thread freed itself (cap, fclone, zero-copy, owner gone) */
	int64_t defer_pending;	   /**< deferred skbs not yet drained */
	int64_t threads;	   /**< threads with a cache */
	/* added 2026-12-04: older callers' sz ends before it */
	int64_t pages_cached;	   /**< free page blocks held by threads' page lists (not in pages) */
};

/**
 * Fill @st (whose sz the caller sets; older/newer layouts are handled by
 * copying min(sz, ours)). 0 or -EINVAL.
 */
USKB_API int uskb_stats_get(struct uskb_stats *st);

/** Print the counters, one per line, to @f (a FILE *). */
USKB_API void uskb_stats_print(void *f);

/**
 * Return this thread's cached objects (skb shells, page_frag block, free
 * pages) to the global pools, so the live counters read exact. Threads do
 * this automatically when they exit.
 */
USKB_API void uskb_thread_flush(void);

/**
 * True when no skb, head, page (outside pools' idle lists), pool or extra
 * zero-page reference is live. Flushes this thread's caches first.
 * Writes a description of what is still live to stderr when false.
 */
USKB_API bool uskb_stats_all_freed(void);

#ifdef __cplusplus
}
#endif
#endif
