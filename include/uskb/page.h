/* SPDX-License-Identifier: MIT */
#ifndef USKB_PAGE_H
#define USKB_PAGE_H

/**
 * @file page.h
 * The mem layer: refcounted page descriptors over mmap'd arenas, page pools
 * that recycle, the shared zero page, and the page_frag allocator that
 * carves skb heads out of 32 KiB pages.
 *
 * A page (or a block of 2^order pages) is described by a struct uskb_page.
 * Memory comes from 4 MiB arenas, aligned to their size, each arena holding
 * blocks of one order; the arena header (with the descriptor array) sits in
 * the arena's first block, so both page -> address and address -> page are
 * O(1) without any lookup table.
 */

#include <stdatomic.h>
#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Largest supported block order (1 MiB blocks). */
#define USKB_PAGE_MAX_ORDER 8

/** Page flags (struct uskb_page::flags). */
enum {
	USKB_PG_ZERO = 1 << 0,     /**< the shared zero page: never freed, never written */
	USKB_PG_READONLY = 1 << 1, /**< mapped read-only: writes are a bug */
	USKB_PG_POOL = 1 << 2,     /**< belongs to a uskb_page_pool (pp is set) */
	USKB_PG_SLAB = 1 << 3,     /**< carved into skb heads (private = size class) */
	USKB_PG_EXTERNAL = 1 << 4, /**< describes user memory (zero-copy); owned by a ubuf */
};

struct uskb_page_pool;

/** Page descriptor (struct page). 64 bytes, one cache line. */
struct uskb_page {
	atomic_int refcount;	    /**< page_ref_count(); 0 = free */
	uint16_t flags;		    /**< USKB_PG_* */
	uint8_t order;		    /**< block is PAGE_SIZE << order bytes */
	int8_t node;		    /**< NUMA node the memory was bound to, -1 if none */
	void *addr;		    /**< page_address() */
	struct uskb_page_pool *pp;  /**< owning pool, or NULL */
	uintptr_t private;	    /**< page_private(): free for the owner (copy_ubufs chains) */
	struct uskb_page *next;	    /**< free-list link (internal) */
	uint64_t pp_magic;	    /**< USKB_PP_SIGNATURE while owned by a pool */
	uint64_t __pad[2];
};

#define USKB_PP_SIGNATURE 0x40ull

/**
 * page_address(). An acquire load: a received frame's memory may be
 * copied out by its device on another thread, which then publishes the
 * copy's address with a release store (docs/devices.md).
 */
USKB_INLINE void *uskb_page_address(const struct uskb_page *page)
{
	return __atomic_load_n(&page->addr, __ATOMIC_ACQUIRE);
}

/** Bytes in the block: PAGE_SIZE << order. */
USKB_INLINE size_t uskb_page_size(const struct uskb_page *page)
{
	return (size_t)USKB_PAGE_SIZE << page->order;
}

USKB_INLINE int uskb_page_ref_count(const struct uskb_page *page)
{
	return atomic_load_explicit(&page->refcount, memory_order_relaxed);
}

/**
 * Allocate a block of 2^order pages (alloc_pages). refcount = 1.
 * Returns NULL and sets errno (ENOMEM, EINVAL for a bad order).
 */
USKB_API struct uskb_page *uskb_page_alloc(unsigned int order);
/** As uskb_page_alloc(), with memory bound to NUMA node @node (-1: any). */
USKB_API struct uskb_page *uskb_page_alloc_node(unsigned int order, int node);

/** get_page(): take a reference. */
USKB_INLINE void uskb_page_get(struct uskb_page *page)
{
	/* relaxed: taking a ref needs no ordering, the caller already holds one */
	atomic_fetch_add_explicit(&page->refcount, 1, memory_order_relaxed);
}

USKB_API void __uskb_page_free(struct uskb_page *page);

/**
 * put_page(): drop a reference; the last one returns the block to its pool
 * (page pools) or to its arena. The sole owner skips the atomic.
 */
USKB_INLINE void uskb_page_put(struct uskb_page *page)
{
	int old;

	/* acquire: the free path must see every write made under other refs */
	old = atomic_load_explicit(&page->refcount, memory_order_acquire);
	if (uskb_likely(old == 1)) {
		__uskb_page_free(page);
		return;
	}
	/* release: our writes happen before whoever drops the last ref frees it */
	old = atomic_fetch_sub_explicit(&page->refcount, 1, memory_order_acq_rel);
	if (uskb_unlikely(old == 1))
		__uskb_page_free(page);
	else if (uskb_unlikely(old <= 0))
		uskb_bug("page_put", NULL, "page %p refcount was %d", (void *)page, old);
}

/**
 * virt_to_head_page(): the descriptor of the block containing @addr, which
 * must lie in uskb page memory (any page, the zero page included); anything
 * else is a bug.
 */
USKB_API struct uskb_page *uskb_virt_to_page(const void *addr);
/** True when @addr lies in memory owned by the mem layer. */
USKB_API bool uskb_addr_is_page(const void *addr);

/**
 * The window: the range of addresses that holds every page block uskb has
 * mapped so far (skb heads, page frags, pools, the zero page), as
 * [return, return + *len). It only grows, and what is in it is never
 * unmapped, so it may be registered with the kernel once (io_uring's fixed
 * buffers) rather than pinned at every send. NULL with *len 0 before the
 * first page, or where the address space could not be reserved; memory
 * mapped then (or once the window's 16 GiB are used) lies outside it.
 */
USKB_API void *uskb_page_window(size_t *len);
/**
 * Run @fn(@arg) with the zero pages mapped writable, and return what it
 * returns: a pin of the window for writing (io_uring_register_buffers)
 * refuses read-only pages. @fn must not call uskb_zero_page*().
 */
USKB_API int uskb_page_window_pin(int (*fn)(void *arg), void *arg);

/**
 * The shared zero page (ZERO_PAGE, pktgen's per-device zeroed page): one
 * zeroed page per NUMA node, mapped read-only, never freed. get/put count
 * normally; its base reference is never dropped. NULL + errno only when
 * memory for it ran out (the next call tries again).
 */
USKB_API struct uskb_page *uskb_zero_page(void);
USKB_API struct uskb_page *uskb_zero_page_node(int node);

/* ---- page pools (page_pool) ---- */

/** Options of uskb_page_pool_create(); start with sz (libbpf opts). */
struct uskb_page_pool_opts {
	size_t sz;		/**< sizeof(struct uskb_page_pool_opts) */
	unsigned int order;	/**< block order of the pool's pages (default 0) */
	int node;		/**< NUMA node, -1 for any (default -1 when 0 opts) */
	unsigned int pool_size; /**< idle pages kept for recycling (default 1024) */
};

struct uskb_page_pool_stats {
	uint64_t alloc_fast;	/**< allocations served from recycled pages */
	uint64_t alloc_slow;	/**< allocations that went to the arena */
	uint64_t recycled;	/**< pages returned to the pool on last put */
	uint64_t released;	/**< pages returned to the arena (pool full) */
	uint64_t in_use;	/**< pages handed out and not yet returned */
	uint64_t idle;		/**< pages held for recycling */
};

/** Create a pool. NULL opts = defaults. NULL + errno on failure. */
USKB_API struct uskb_page_pool *
uskb_page_pool_create(const struct uskb_page_pool_opts *opts);
/**
 * Destroy a pool: idle pages go back to the arena at once; pages still in
 * use come back to the pool later and are released then; the pool itself is
 * freed with its last page (page_pool_destroy deferral).
 */
USKB_API void uskb_page_pool_destroy(struct uskb_page_pool *pool);
/** Allocate one page (refcount 1) from the pool; NULL + errno on failure. */
USKB_API struct uskb_page *uskb_page_pool_alloc(struct uskb_page_pool *pool);
USKB_API void uskb_page_pool_get_stats(struct uskb_page_pool *pool,
				       struct uskb_page_pool_stats *st);

/* ---- page_frag allocator (page_frag_cache) ---- */

/**
 * Bias-counted fragment allocator: a 32 KiB block (order-0 fallback) is
 * pre-charged with a large refcount bias; each fragment handed out spends
 * one unit of bias, so allocation touches no atomic. A fragment is freed by
 * uskb_page_frag_free() (a page_put of its block). When the block is used
 * up, it is reused in place if every fragment came back, else released.
 * One cache belongs to one thread (zero-initialise it; no set-up needed).
 */
struct uskb_page_frag_cache {
	struct uskb_page *page;
	uint32_t offset;	/**< fragments are carved downwards from here */
	uint32_t bias;		/**< refs held by the cache, not yet handed out */
	int node;
};

#define USKB_PAGE_FRAG_ORDER 3

/**
 * Allocate @size bytes aligned to @align (a power of two, at most a page).
 * NULL + errno (ENOMEM; EINVAL when @size exceeds the 32 KiB block).
 */
USKB_API void *uskb_page_frag_alloc(struct uskb_page_frag_cache *nc,
				    unsigned int size, unsigned int align);
/** Free a fragment from uskb_page_frag_alloc() (page_frag_free). */
USKB_API void uskb_page_frag_free(void *addr);
/** Give back the cache's block and bias (page_frag_cache_drain). */
USKB_API void uskb_page_frag_cache_drain(struct uskb_page_frag_cache *nc);

#ifdef __cplusplus
}
#endif
#endif
