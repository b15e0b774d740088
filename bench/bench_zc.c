/* SPDX-License-Identifier: MIT */
/*
 * Zero-copy user buffers: attach + free of a user buffer (the owner's
 * completion included) vs copying it into pages; skb_zerocopy of a
 * 1200-byte one-frag packet vs copying it. Prints "name ns_per_op".
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_setaffinity_np in bench.h */
#endif
#include <sys/uio.h>
#include <uskb/uskb.h>
#include "bench.h"

/* page-aligned: the copy rows must not depend on where the linker puts it */
static _Alignas(4096) unsigned char ubuf_mem[65536];
static long completions;

static void complete(struct uskb *skb, struct uskb_ubuf *uarg, bool success)
{
	(void)skb;
	(void)uarg;
	completions += success;
}

static const struct uskb_ubuf_ops ops = { .complete = complete };

static void attach_once(size_t len)
{
	struct uskb_ubuf u;
	struct iovec iov = { ubuf_mem, len };
	struct uskb *skb = uskb_alloc(256);

	uskb_ubuf_init(&u, &ops, USKB_SKBFL_ZEROCOPY_FRAG);
	if (uskb_zerocopy_attach(skb, &iov, 1, &u, USKB_ZC_GOODCOPY_LEN))
		abort();
	uskb_zcopy_put(&u);
	uskb_free(skb); /* the completion runs here */
}

/* the copying alternative: the same head bytes, the rest into fresh pages */
static void copy_once(size_t len)
{
	struct uskb *skb = uskb_alloc(256);
	size_t head = len < USKB_ZC_GOODCOPY_LEN ? len : USKB_ZC_GOODCOPY_LEN, off = head;
	int i = 0;

	uskb_put_data(skb, ubuf_mem, (unsigned int)head);
	while (off < len) {
		struct uskb_page *pg = uskb_page_alloc(0);
		size_t n = len - off < USKB_PAGE_SIZE ? len - off : USKB_PAGE_SIZE;

		memcpy(uskb_page_address(pg), ubuf_mem + off, n);
		uskb_add_rx_frag(skb, i++, pg, 0, (int)n, USKB_PAGE_SIZE);
		off += n;
	}
	uskb_free(skb);
}

int main(void)
{
	static const size_t sizes[] = { 192, 256, 384, 512, 1024, 4096, 16384, 65536 };
	struct uskb_page *pg = uskb_page_alloc(0);
	struct uskb *from;
	char name[64];
	unsigned int k;
	long i, n;

	bench_pin(0); /* the CPU of bench_dpdk's main lcore */

	memset(ubuf_mem, 0x3c, sizeof(ubuf_mem));
	uskb_zerocopy_set_min_len(0); /* measure attaching at every size */
	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		n = bench_n(sizes[k] >= 16384 ? 200000 : 1000000);
		snprintf(name, sizeof(name), "zc_attach_%zu", sizes[k]);
		BENCH(name, n, for (i = 0; i < n; i++) attach_once(sizes[k]));
		snprintf(name, sizeof(name), "zc_copy_%zu", sizes[k]);
		BENCH(name, n, for (i = 0; i < n; i++) copy_once(sizes[k]));
	}
	/* skb_zerocopy of a 1200-byte packet: 200-byte page_frag head + one 1000-byte frag */
	from = uskb_dev_alloc(256);
	uskb_put_zero(from, 200);
	uskb_page_get(pg);
	uskb_add_rx_frag(from, 0, pg, 0, 1000, 1000);
	n = bench_n(1000000L);
	BENCH("skb_zerocopy_1200", n, for (i = 0; i < n; i++) {
		struct uskb *to = uskb_alloc(128);

		if (uskb_zerocopy(to, from, 1200, (int)uskb_zerocopy_headlen(from)))
			abort();
		uskb_free(to);
	});
	BENCH("skb_copy_1200", n, for (i = 0; i < n; i++) {
		struct uskb *to = uskb_alloc(1300);

		uskb_copy_bits(from, 0, uskb_put(to, 1200), 1200);
		uskb_free(to);
	});
	uskb_free(from);
	uskb_page_put(pg);
	bench_sink += (unsigned long)completions;
	return uskb_stats_all_freed() ? 0 : 1;
}
