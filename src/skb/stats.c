/* SPDX-License-Identifier: MIT */
/* uskb_stats_get(): the live-object counters of every thread and of the mem layer. */
#include <stdio.h>
#include <string.h>

#include "skb/priv.h"

int uskb_stats_get(struct uskb_stats *out)
{
	struct uskb_stats st;
	int64_t sum[USKB_TC_NR], pending = 0;
	size_t sz;

	if (!out || out->sz < sizeof(size_t))
		return -EINVAL;
	sz = out->sz < sizeof(st) ? out->sz : sizeof(st);
	memset(&st, 0, sizeof(st));
	memset(sum, 0, sizeof(sum));
	__uskb_tls_counters(sum, &st.threads, &pending);
#define SUM(i) sum[USKB_TC_##i]
	/* a pair is an skb and a head */
	SUM(SKB_ALLOC) += SUM(PAIR_ALLOC);
	SUM(KBUF_ALLOC) += SUM(PAIR_ALLOC);
	SUM(SKB_FREE) += SUM(PAIR_FREE);
	SUM(KBUF_FREE) += SUM(PAIR_FREE);
	st.skb_allocs = (uint64_t)SUM(SKB_ALLOC);
	st.skb_frees = (uint64_t)SUM(SKB_FREE);
	st.skbs = SUM(SKB_ALLOC) - SUM(SKB_FREE);
	st.fclones = SUM(FCLONE_ALLOC) - SUM(FCLONE_FREE);
	st.heads = SUM(KBUF_ALLOC) - SUM(KBUF_FREE);
	/* every shell is either live (outside fclone pairs) or cached */
	st.skbs_cached = __uskb_slab_created(&__uskb_shells) - (st.skbs - (SUM(FC_SKB_ALLOC) - SUM(FC_SKB_FREE)));
	st.cache_misses = (uint64_t)SUM(CACHE_MISS);
	/* every shell allocation is a hit or a miss; fclone halves use no shell */
	st.cache_hits = (uint64_t)(SUM(SKB_ALLOC) - SUM(FC_SKB_ALLOC) - SUM(CACHE_MISS));
	st.deferred = (uint64_t)SUM(DEFERRED);
	st.drained = (uint64_t)SUM(DRAINED);
	st.direct_frees = (uint64_t)SUM(DIRECT);
	st.defer_pending = pending;
#undef SUM
	__uskb_page_stats(&st);
	st.slab_pages = __uskb_slab_pages();
	st.sz = sz;
	memcpy(out, &st, sz);
	return 0;
}

void uskb_stats_print(void *fp)
{
	struct uskb_stats st = { .sz = sizeof(st) };
	FILE *f = fp ? fp : stdout;
	int i;

	uskb_stats_get(&st);
	fprintf(f, "skbs            %lld\n", (long long)st.skbs);
	fprintf(f, "fclones         %lld\n", (long long)st.fclones);
	fprintf(f, "heads           %lld\n", (long long)st.heads);
	fprintf(f, "pages           %lld", (long long)st.pages);
	for (i = 0; i <= USKB_PAGE_MAX_ORDER; i++)
		if (st.pages_by_order[i])
			fprintf(f, " o%d=%lld", i, (long long)st.pages_by_order[i]);
	fprintf(f, "\nslab_pages      %lld\n", (long long)st.slab_pages);
	fprintf(f, "pages_cached    %lld\n", (long long)st.pages_cached);
	fprintf(f, "pool_pages_idle %lld\n", (long long)st.pool_pages_idle);
	fprintf(f, "pools           %lld\n", (long long)st.pools);
	fprintf(f, "frag_cache_pages %lld\n", (long long)st.frag_cache_pages);
	fprintf(f, "zero_page_refs  %lld\n", (long long)st.zero_page_refs);
	fprintf(f, "skbs_cached     %lld\n", (long long)st.skbs_cached);
	fprintf(f, "skb_allocs      %llu\n", (unsigned long long)st.skb_allocs);
	fprintf(f, "skb_frees       %llu\n", (unsigned long long)st.skb_frees);
	fprintf(f, "arena_bytes     %llu\n", (unsigned long long)st.arena_bytes);
	fprintf(f, "threads         %lld\n", (long long)st.threads);
	fprintf(f, "cache_hits      %llu\n", (unsigned long long)st.cache_hits);
	fprintf(f, "cache_misses    %llu\n", (unsigned long long)st.cache_misses);
	fprintf(f, "deferred        %llu\n", (unsigned long long)st.deferred);
	fprintf(f, "drained         %llu\n", (unsigned long long)st.drained);
	fprintf(f, "direct_frees    %llu\n", (unsigned long long)st.direct_frees);
	fprintf(f, "defer_pending   %lld\n", (long long)st.defer_pending);
}

bool uskb_stats_all_freed(void)
{
	struct uskb_stats st = { .sz = sizeof(st) };

	uskb_thread_flush();
	uskb_stats_get(&st);
	if (!st.skbs && !st.fclones && !st.heads && st.pages == st.slab_pages && !st.pools &&
	    !st.defer_pending &&
	    !st.zero_page_refs && !st.frag_cache_pages)
		return true;
	fputs("uskb: live objects remain:\n", stderr);
	uskb_stats_print(stderr);
	return false;
}
