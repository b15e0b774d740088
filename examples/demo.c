/* SPDX-License-Identifier: MIT */
/*
 * A tour of libuskb: build a packet with a linear head and page frags, clone
 * it, pskb_copy it, linearize the copy, and show what each step did.
 */
#include <stdio.h>
#include <string.h>
#include <uskb/uskb.h>

static void show(const char *what, const struct uskb *skb)
{
	printf("%-28s len=%-5u data_len=%-5u headlen=%-4u headroom=%-3u tailroom=%-4d "
	       "nr_frags=%u cloned=%d dataref=%#x\n",
	       what, skb->len, skb->data_len, uskb_headlen(skb), uskb_headroom(skb),
	       uskb_tailroom(skb), uskb_shinfo(skb)->nr_frags, uskb_cloned(skb),
	       atomic_load(&uskb_shinfo(skb)->dataref));
}

int main(void)
{
	static const char hdr[] = "ETH|IPv4|UDP header bytes......";
	struct uskb *skb, *clone, *copy;
	struct uskb_page *page;
	unsigned char buf[1500], cbuf[1500];
	int i;

	/* 1. head: 128 bytes of room, 64 of them headroom, 32 bytes of header */
	skb = uskb_alloc(128);
	if (!skb) {
		perror("uskb_alloc");
		return 1;
	}
	uskb_reserve(skb, 64);
	uskb_put_data(skb, hdr, 32);
	show("alloc+reserve+put", skb);

	/* 2. payload: two frags from one page, one from the shared zero page */
	page = uskb_page_alloc(0);
	if (!page) {
		perror("uskb_page_alloc");
		return 1;
	}
	memset(uskb_page_address(page), 'P', USKB_PAGE_SIZE);
	uskb_page_get(page); /* second frag holds its own reference */
	uskb_add_rx_frag(skb, 0, page, 0, 500, USKB_PAGE_SIZE / 2);
	uskb_add_rx_frag(skb, 1, page, 2048, 500, USKB_PAGE_SIZE / 2);
	uskb_page_get(uskb_zero_page());
	uskb_add_rx_frag(skb, 2, uskb_zero_page(), 0, 468, 0);
	show("3 frags (page, page, zero)", skb);
	printf("  page refcount %d, zero page shared and read-only\n", uskb_page_ref_count(page));

	/* 3. clone: a second shell on the same data */
	clone = uskb_clone(skb);
	show("clone: original", skb);
	show("clone: clone", clone);

	/* 4. pskb_copy: private head, frags shared by page reference */
	copy = uskb_pskb_copy(skb);
	show("pskb_copy", copy);
	printf("  page refcount %d (2 frags x 2 shinfos)\n", uskb_page_ref_count(page));

	/* 5. linearize the copy: frags pulled into a new, larger head */
	if (uskb_linearize(copy)) {
		perror("uskb_linearize");
		return 1;
	}
	show("pskb_copy after linearize", copy);
	printf("  page refcount %d (the copy let go of its frags)\n", uskb_page_ref_count(page));

	/* 6. all three hold the same bytes */
	uskb_copy_bits(skb, 0, buf, (int)skb->len);
	uskb_copy_bits(clone, 0, cbuf, (int)clone->len);
	printf("  copy == original: %s; clone == original: %s\n",
	       memcmp(buf, copy->data, copy->len) ? "NO" : "yes",
	       memcmp(buf, cbuf, sizeof(buf)) ? "NO" : "yes");
	printf("  checksum of the packet: %#06x\n",
	       uskb_csum_fold(uskb_checksum(skb, 0, (int)skb->len, 0)));

	uskb_free(copy);
	uskb_free(clone);
	show("original after frees", skb);
	uskb_free(skb);
	i = uskb_stats_all_freed();
	printf("all objects freed: %s\n", i ? "yes" : "NO");
	return i ? 0 : 1;
}
