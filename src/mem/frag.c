/* SPDX-License-Identifier: MIT */
/*
 * page_frag: small fragments carved downwards from 32 KiB blocks with a
 * reference bias, one cache per user (each thread's skb heads).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "mem/priv.h"

static atomic_llong frag_cache_pages;

#define FRAG_BIAS 0x10000u

static int frag_refill(struct uskb_page_frag_cache *nc)
{
	struct uskb_page *p;

	p = __uskb_arena_alloc(USKB_PAGE_FRAG_ORDER, nc->node);
	if (!p)
		p = __uskb_arena_alloc(0, nc->node);
	if (!p)
		return -ENOMEM;
	/* relaxed: not shared yet */
	atomic_fetch_add_explicit(&p->refcount, (int)FRAG_BIAS, memory_order_relaxed);
	nc->page = p;
	nc->bias = FRAG_BIAS + 1;
	nc->offset = (uint32_t)uskb_page_size(p);
	atomic_fetch_add(&frag_cache_pages, 1);
	return 0;
}

/* Drop the cache's remaining bias; true if that freed every reference. */
static bool frag_drop_bias(struct uskb_page_frag_cache *nc)
{
	struct uskb_page *p = nc->page;
	/* acq_rel: pairs with the release in page_put of outstanding frags */
	int old = atomic_fetch_sub_explicit(&p->refcount, (int)nc->bias,
					    memory_order_acq_rel);

	if (uskb_unlikely(old < (int)nc->bias))
		uskb_bug("page_frag", NULL, "refcount %d below bias %u", old, nc->bias);
	return old == (int)nc->bias;
}

void *uskb_page_frag_alloc(struct uskb_page_frag_cache *nc, unsigned int size,
			   unsigned int align)
{
	uint32_t off;

	if (uskb_unlikely(!align || (align & (align - 1)) || align > USKB_PAGE_SIZE ||
			  size > (USKB_PAGE_SIZE << USKB_PAGE_FRAG_ORDER))) {
		errno = EINVAL;
		return NULL;
	}
	if (uskb_should_fail()) {
		errno = ENOMEM;
		return NULL;
	}
	if (uskb_unlikely(!nc->page) && frag_refill(nc))
		goto nomem;
	/* unlikely: one refill per 32 KiB of heads */
	if (uskb_unlikely(nc->offset < size || nc->bias <= 1))
		goto refill;
fit:
	off = (nc->offset - size) & ~(align - 1);
	nc->offset = off;
	nc->bias--;
	return (char *)nc->page->addr + off;

refill:
	if (frag_drop_bias(nc)) {
		/* every fragment came back: reuse the block in place */
		struct uskb_page *p = nc->page;

		if (uskb_page_size(p) >= size) {
			atomic_store_explicit(&p->refcount, (int)FRAG_BIAS + 1,
					      memory_order_relaxed);
			nc->bias = FRAG_BIAS + 1;
			nc->offset = (uint32_t)uskb_page_size(p);
			goto fit;
		}
		atomic_store_explicit(&p->refcount, 1, memory_order_relaxed);
		__uskb_arena_free(p);
	}
	nc->page = NULL;
	atomic_fetch_sub(&frag_cache_pages, 1);
	if (frag_refill(nc))
		goto nomem;
	if (nc->offset >= size)
		goto fit;
	uskb_page_frag_cache_drain(nc); /* only the order-0 fallback came */
nomem:
	errno = ENOMEM;
	return NULL;
}

void uskb_page_frag_free(void *addr)
{
	uskb_page_put(uskb_virt_to_page(addr));
}

void uskb_page_frag_cache_drain(struct uskb_page_frag_cache *nc)
{
	if (!nc->page)
		return;
	if (frag_drop_bias(nc)) {
		atomic_store_explicit(&nc->page->refcount, 1, memory_order_relaxed);
		__uskb_arena_free(nc->page);
	}
	nc->page = NULL;
	nc->bias = 0;
	nc->offset = 0;
	atomic_fetch_sub(&frag_cache_pages, 1);
}

void __uskb_frag_stats(struct uskb_stats *st)
{
	st->frag_cache_pages = atomic_load(&frag_cache_pages);
}
