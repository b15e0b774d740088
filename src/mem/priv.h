/* SPDX-License-Identifier: MIT */
#ifndef USKB_MEM_PRIV_H
#define USKB_MEM_PRIV_H

/*
 * The mem layer's private interface: page statistics, per-thread page-pool
 * caches, and the slab of fixed-size objects (skb shells and the size
 * classes of kmalloc-style data buffers).
 */

#include <pthread.h>
#include <stdatomic.h>
#include "lib/compiler.h"
#include "lib/debug.h"
#include "lib/lock.h"
#include "uskb/page.h"
#include "uskb/stats.h"

/* NUMA nodes the mem layer knows: slot 0 is "no node", slot n + 1 node n */
#define USKB_NODE_SLOTS 17

/* a page block from the arenas (fault injection included); NULL + errno */
USKB_HIDDEN struct uskb_page *__uskb_arena_alloc(unsigned int order, int node);
/* a block back to its arena's free list */
USKB_HIDDEN void __uskb_arena_free(struct uskb_page *p);
/* the last reference to a pool page: back to its pool (or the arena) */
USKB_HIDDEN void __uskb_pool_recycle(struct uskb_page *page);
USKB_HIDDEN void __uskb_pool_stats(struct uskb_stats *st);
USKB_HIDDEN void __uskb_frag_stats(struct uskb_stats *st);

/* the mem layer's share of uskb_stats_get() */
USKB_HIDDEN void __uskb_page_stats(struct uskb_stats *st);
/* return the calling thread's page-pool caches, then its free page lists */
USKB_HIDDEN void __uskb_page_thread_flush(void);
/* return the calling thread's free page lists to the arenas */
USKB_HIDDEN void __uskb_pcp_flush(void);

/*
 * A stack of free objects of one size that grows through the objects
 * themselves: some of them (chunks) hold the addresses of the others, so a
 * push never allocates and cannot fail. Chunks stay readable for the
 * sanitizers; the other objects stay poisoned.
 */
struct uskb_objstack {
	struct uskb_lock lock;
	struct uskb_objchunk *top;
	size_t top_n;		/* addresses the top chunk holds */
	unsigned int cap;	/* addresses a chunk holds */
	atomic_bool listed;	/* on the list fork() handles, since its first use */
	struct uskb_objstack *fork_next;
};

#define USKB_OBJSTACK_INIT(objsize)                                    \
	{ .lock = USKB_LOCK_INIT,                                      \
	  .cap = (unsigned int)(((objsize) - 2 * sizeof(void *)) / sizeof(void *)) }

/* Push @n objects (cached, as uskb_mem_cached left them). Cannot fail. */
USKB_HIDDEN void __uskb_objstack_push(struct uskb_objstack *st, void **v, size_t n);
/* Pop up to @n objects into @v, still cached; returns how many. */
USKB_HIDDEN size_t __uskb_objstack_pop(struct uskb_objstack *st, void **v, size_t n);

/*
 * kmalloc-style data buffers ("kbufs"): six size classes, 512 << c bytes,
 * carved from 32 KiB page blocks.
 */
#define USKB_KBUF_CLASSES 6

static inline int uskb_kbuf_class(unsigned int size)
{
	int c;

	if (size <= 512)
		return 0;
	c = 32 - __builtin_clz(size - 1) - 9;
	return c < USKB_KBUF_CLASSES ? c : -1;
}

/* the size of class @c's kbufs, as a constant expression (for tables) */
#define USKB_KBUF_CLASS_SIZE(c) (512u << (c))

static inline unsigned int uskb_kbuf_class_size(int c)
{
	return USKB_KBUF_CLASS_SIZE(c);
}

/* Up to @n kbufs of class @c (cached), carving a new block when needed; how many. */
USKB_HIDDEN unsigned int __uskb_slab_kbufs_get(int c, void **v, unsigned int n);
/* Give @n cached kbufs of class @c back. Cannot fail. */
USKB_HIDDEN void __uskb_slab_kbufs_put(int c, void **v, unsigned int n);
/* Page blocks carved into kbufs (they are never returned) */
USKB_HIDDEN int64_t __uskb_slab_pages(void);

/*
 * Objects of one size from malloc, 64 or more at a time, none across
 * pages (the skb layer's shells).
 */
struct uskb_slab {
	struct uskb_objstack st;
	size_t size;		/* a multiple of the cache line */
	atomic_llong created;	/* objects ever made */
};

#define USKB_SLAB_INIT(objsize) { .st = USKB_OBJSTACK_INIT(objsize), .size = (objsize) }

/* Up to @n objects of @sl (cached) into @v, growing it when needed; how many. */
USKB_HIDDEN size_t __uskb_slab_get(struct uskb_slab *sl, void **v, size_t n);
/* Give @n cached objects back. Cannot fail. */
USKB_HIDDEN void __uskb_slab_put(struct uskb_slab *sl, void **v, size_t n);
USKB_HIDDEN int64_t __uskb_slab_created(struct uskb_slab *sl);

#endif
