/* SPDX-License-Identifier: MIT */
/* Unit tests: the documented geometry of every skb operation. */
#include "t.h"

static unsigned int dataref(const struct uskb *skb)
{
	return atomic_load(&uskb_shinfo(skb)->dataref);
}

/* A page whose bytes are all written: the frags' bytes are compared */
static struct uskb_page *filled_page(void)
{
	struct uskb_page *pg = uskb_page_alloc(0);

	if (pg)
		t_fill(uskb_page_address(pg), USKB_PAGE_SIZE, 9);
	return pg;
}

/* A packet: @hl bytes of head (after 64 of headroom) + @nfr frags of @fl bytes. */
static struct uskb *mk_flags(unsigned int hl, int nfr, unsigned int fl, struct uskb_page **pg,
			     unsigned int flags)
{
	struct uskb *skb = __uskb_alloc(64 + hl, flags, USKB_NO_NODE);
	int i;

	uskb_reserve(skb, 64);
	t_fill(uskb_put(skb, hl), hl, 1);
	for (i = 0; i < nfr; i++) {
		uskb_page_get(*pg);
		uskb_add_rx_frag(skb, i, *pg, (int)(i * fl) % 2048, (int)fl, fl);
	}
	return skb;
}

static struct uskb *mk(unsigned int hl, int nfr, unsigned int fl, struct uskb_page **pg)
{
	return mk_flags(hl, nfr, fl, pg, 0);
}

static void test_alloc(void)
{
	struct uskb *skb = uskb_alloc(100);

	CHECK(skb);
	CHECK_EQ(skb->len, 0);
	CHECK_EQ(skb->data_len, 0);
	CHECK_EQ(uskb_headroom(skb), 0);
	/* kmalloc-style: the 512-byte class, all of it usable */
	CHECK_EQ(uskb_tailroom(skb), USKB_WITH_OVERHEAD(512));
	CHECK_EQ(uskb_end_offset(skb), USKB_WITH_OVERHEAD(512));
	CHECK_EQ(uskb_shinfo(skb)->nr_frags, 0);
	CHECK_EQ(dataref(skb), 1);
	CHECK_EQ(atomic_load(&skb->users), 1);
	CHECK_EQ(skb->truesize, USKB_TRUESIZE(USKB_WITH_OVERHEAD(512)));
	CHECK(!skb->head_frag);
	CHECK(!uskb_cloned(skb));
	CHECK(!uskb_shared(skb));
	CHECK((uintptr_t)uskb_shinfo(skb) % USKB_CACHE_BYTES == 0);
	CHECK_EQ(skb->mac_header, USKB_HEADER_UNSET);
	CHECK(uskb_shinfo(skb)->frag_list == NULL);
	uskb_free(skb);

	/*
	 * Every request size up to past the biggest class: the head's class
	 * is the smallest its size and shared info fit, the same on the
	 * general path and on uskb_alloc()'s from a ready pair. Every class
	 * holds a ready pair first, so a size taken to a wrong class, higher
	 * or lower, gets that class's pair and its end.
	 */
	for (unsigned int c = 0; c < 6; c++) {
		struct uskb *pair[2];

		for (unsigned int k = 0; k < 2; k++)
			pair[k] = __uskb_alloc((512u << c) - USKB_SHINFO_SIZE, 0, USKB_NO_NODE);
		for (unsigned int k = 0; k < 2; k++) {
			CHECK_EQ(uskb_end_offset(pair[k]), (512u << c) - USKB_SHINFO_SIZE);
			uskb_free(pair[k]);
		}
	}
	for (unsigned int size = 0; size <= 17000; size++) {
		unsigned int want = 0, end;

		for (unsigned int c = 0; c < 6 && !want; c++)
			if (USKB_DATA_ALIGN(size) + USKB_SHINFO_SIZE <= 512u << c)
				want = (512u << c) - USKB_SHINFO_SIZE;
		skb = __uskb_alloc(size, 0, USKB_NO_NODE);
		end = uskb_end_offset(skb);
		CHECK(end >= size);
		if (want)
			CHECK_EQ(end, want);
		uskb_free(skb);
		/* a class's head comes back as the ready pair just freed */
		skb = uskb_alloc(size);
		CHECK_EQ(uskb_end_offset(skb), end);
		CHECK_EQ(skb->truesize, USKB_TRUESIZE(end));
		CHECK_EQ(uskb_tailroom(skb), end);
		CHECK_EQ(atomic_load(&skb->users), 1);
		CHECK_EQ(skb->mac_header, USKB_HEADER_UNSET);
		CHECK_EQ(dataref(skb), 1);
		uskb_free(skb);
	}

	/* large heads take their own page block */
	skb = uskb_alloc(100000);
	CHECK(skb && uskb_tailroom(skb) >= 100000);
	uskb_free(skb);
	errno = 0;
	CHECK(uskb_alloc(0x7fffffff) == NULL && errno == EINVAL);
	skb = uskb_dev_alloc(1500);
	CHECK_EQ(uskb_headroom(skb), USKB_NET_SKB_PAD);
	/* page_frag heads are exact */
	CHECK_EQ(uskb_tailroom(skb), USKB_DATA_ALIGN(1500 + USKB_NET_SKB_PAD) - USKB_NET_SKB_PAD);
	CHECK(skb->head_frag);
	uskb_free(skb);
}

static void test_linear_ops(void)
{
	struct uskb *skb = uskb_alloc(256);
	unsigned char *p, *q;
	int room = uskb_tailroom(skb);

	CHECK(room >= 256);
	uskb_reserve(skb, 32);
	CHECK_EQ(uskb_headroom(skb), 32);
	CHECK_EQ(uskb_tailroom(skb), room - 32);
	p = uskb_put(skb, 10);
	CHECK(p == skb->data);
	CHECK_EQ(skb->len, 10);
	q = uskb_put_zero(skb, 5);
	CHECK(q == p + 10 && q[0] == 0 && q[4] == 0);
	uskb_put_data(skb, "abc", 3);
	CHECK_EQ(skb->len, 18);
	CHECK(!memcmp(skb->data + 15, "abc", 3));
	CHECK_EQ(uskb_tailroom(skb), room - 32 - 18);
	p = uskb_push(skb, 14);
	CHECK(p == skb->data && uskb_headroom(skb) == 18 && skb->len == 32);
	p = uskb_pull(skb, 14);
	CHECK(p == skb->data && uskb_headroom(skb) == 32 && skb->len == 18);
	CHECK(uskb_pull(skb, 19) == NULL);
	CHECK_EQ(skb->len, 18);
	uskb_trim(skb, 20); /* longer: no-op */
	CHECK_EQ(skb->len, 18);
	uskb_trim(skb, 15);
	CHECK_EQ(skb->len, 15);
	CHECK(uskb_tail_pointer(skb) == skb->data + 15);
	CHECK_EQ(uskb_pskb_trim(skb, 3), 0);
	CHECK_EQ(skb->len, 3);
	/* header offsets */
	uskb_reset_network_header(skb);
	uskb_set_transport_header(skb, 2);
	CHECK(uskb_network_header(skb) == skb->data);
	CHECK(uskb_transport_header(skb) == skb->data + 2);
	uskb_free(skb);
}

static void test_frags(void)
{
	struct uskb_page *pg = filled_page();
	struct uskb *skb = uskb_alloc(128);
	unsigned int ts = skb->truesize;

	uskb_put(skb, 20);
	uskb_fill_page_desc(skb, 0, pg, 100, 50); /* takes no reference */
	CHECK_EQ(uskb_page_ref_count(pg), 1);
	CHECK_EQ(uskb_shinfo(skb)->nr_frags, 1);
	CHECK_EQ(skb->len, 20); /* fill_page_desc leaves len alone */
	skb->len += 50;
	skb->data_len += 50;
	CHECK_EQ(uskb_tailroom(skb), 0); /* nonlinear: no tailroom */
	uskb_page_get(pg);
	uskb_add_rx_frag(skb, 1, pg, 200, 60, 2048);
	CHECK_EQ(skb->len, 130);
	CHECK_EQ(skb->data_len, 110);
	CHECK_EQ(uskb_headlen(skb), 20);
	CHECK_EQ(skb->truesize, ts + 2048);
	CHECK(uskb_is_nonlinear(skb));
	CHECK_EQ(uskb_page_ref_count(pg), 2);
	uskb_frag_ref(skb, 0);
	CHECK_EQ(uskb_page_ref_count(pg), 3);
	uskb_frag_unref(skb, 0);
	CHECK_EQ(uskb_page_ref_count(pg), 2);
	CHECK(uskb_frag_address(&uskb_shinfo(skb)->frags[1]) ==
	      (char *)uskb_page_address(pg) + 200);
	uskb_free(skb); /* drops both frag refs: the page goes back */
}

static void test_clone(void)
{
	struct uskb_page *pg = filled_page();
	struct uskb *skb = mk(40, 2, 100, &pg), *c, *c2;

	skb->mark = 7;
	skb->priority = 3;
	memcpy(skb->cb, "control", 8);
	c = uskb_clone(skb);
	CHECK(c && c != skb);
	CHECK(c->head == skb->head && c->data == skb->data);
	CHECK_EQ(dataref(skb), 2);
	CHECK(uskb_cloned(skb) && uskb_cloned(c));
	CHECK_EQ(atomic_load(&c->users), 1);
	CHECK_EQ(c->len, skb->len);
	CHECK_EQ(c->data_len, skb->data_len);
	CHECK_EQ(c->mark, 7);
	CHECK_EQ(c->priority, 3);
	CHECK(!memcmp(c->cb, "control", 8));
	CHECK_EQ(uskb_page_ref_count(pg), 3); /* frags are not re-referenced by a clone */
	c2 = uskb_clone(c);
	CHECK_EQ(dataref(skb), 3);
	uskb_free(c);
	uskb_free(c2);
	CHECK_EQ(dataref(skb), 1);
	CHECK(skb->cloned && !uskb_cloned(skb)); /* flag stays, the test says no */
	uskb_page_put(pg);
	uskb_free(skb);
}

static void test_header_release(void)
{
	struct uskb *skb = uskb_alloc(128), *c;

	uskb_reserve(skb, 32);
	uskb_put(skb, 50);
	c = uskb_clone(skb);
	uskb_header_release(c); /* the clone now only references payload */
	CHECK_EQ(dataref(skb), 2 + (1u << USKB_DATAREF_SHIFT));
	CHECK(uskb_cloned(skb));
	CHECK(!uskb_header_cloned(skb)); /* headers are ours alone */
	/* a second header user makes the header cloned again */
	{
		struct uskb *c2 = uskb_clone(skb);

		CHECK(uskb_header_cloned(skb));
		CHECK_EQ(c2->hdr_len, 0);
		uskb_free(c2);
	}
	/* a clone of a header-released skb may only write before its headroom */
	{
		struct uskb *c3 = uskb_clone(c);

		CHECK_EQ(c3->hdr_len, uskb_headroom(c));
		uskb_free(c3);
	}
	uskb_free(c);
	CHECK_EQ(dataref(skb), 1);
	uskb_free(skb);
}

static void test_fclone(void)
{
	struct uskb *skb = uskb_alloc_fclone(200), *c1, *c2;
	struct uskb_stats st = { .sz = sizeof(st) };

	uskb_put(skb, 100);
	CHECK_EQ(skb->fclone, USKB_FCLONE_ORIG);
	c1 = uskb_clone(skb);
	CHECK(c1 == skb + 1); /* the companion shell */
	CHECK_EQ(c1->fclone, USKB_FCLONE_CLONE);
	c2 = uskb_clone(skb); /* companion busy: an ordinary shell */
	CHECK(c2 != skb + 1 && c2->fclone == USKB_FCLONE_UNAVAILABLE);
	uskb_stats_get(&st);
	CHECK_EQ(st.fclones, 1);
	uskb_free(c1);
	c1 = uskb_clone(skb); /* companion free again: reused */
	CHECK(c1 == skb + 1);
	uskb_free(skb); /* original first: pair lives on with the clone */
	uskb_stats_get(&st);
	CHECK_EQ(st.fclones, 1);
	CHECK_EQ(c1->len, 100);
	uskb_free(c1);
	uskb_stats_get(&st);
	CHECK_EQ(st.fclones, 0);
	uskb_free(c2);
}

static void test_copies(void)
{
	struct uskb_page *pg = filled_page();
	struct uskb *skb = mk(40, 3, 100, &pg), *c, *p;
	unsigned char want[340];

	CHECK_EQ(uskb_copy_bits(skb, 0, want, 340), 0);
	c = uskb_copy(skb);
	CHECK(c && !uskb_is_nonlinear(c) && uskb_shinfo(c)->nr_frags == 0);
	CHECK_EQ(uskb_headroom(c), 64);
	CHECK(t_skb_equals(c, want, 340));
	CHECK_EQ(uskb_page_ref_count(pg), 4);
	p = uskb_pskb_copy(skb);
	CHECK(p->head != skb->head && !uskb_cloned(p) && !uskb_cloned(skb));
	CHECK_EQ(uskb_shinfo(p)->nr_frags, 3);
	CHECK_EQ(uskb_headlen(p), 40);
	CHECK_EQ(uskb_headroom(p), 64);
	CHECK_EQ(uskb_page_ref_count(pg), 7); /* every frag re-referenced */
	CHECK(t_skb_equals(p, want, 340));
	/* the copies are independent heads */
	p->data[0] ^= 0xff;
	c->data[1] ^= 0xff;
	CHECK(t_skb_equals(skb, want, 340));
	uskb_free(p);
	uskb_free(c);
	CHECK_EQ(uskb_page_ref_count(pg), 4);
	uskb_page_put(pg);
	uskb_free(skb);
}

static void test_expand_cow(void)
{
	struct uskb_page *pg = filled_page();
	struct uskb *skb = mk(40, 2, 100, &pg), *c;
	unsigned char want[240];
	unsigned int tr;

	uskb_copy_bits(skb, 0, want, 240);
	c = uskb_clone(skb);
	CHECK_EQ(uskb_expand_head(skb, 100, 50), 0);
	CHECK(skb->head != c->head);
	CHECK_EQ(uskb_headroom(skb), 164);
	CHECK(!uskb_cloned(skb) && !uskb_cloned(c));
	CHECK_EQ(dataref(skb), 1);
	CHECK_EQ(dataref(c), 1);
	CHECK_EQ(uskb_page_ref_count(pg), 5); /* both shinfos hold both frags */
	CHECK(t_skb_equals(skb, want, 240) && t_skb_equals(c, want, 240));
	uskb_free(c);
	CHECK_EQ(uskb_page_ref_count(pg), 3);
	/* cow: enough headroom and private already -> nothing */
	{
		unsigned char *h = skb->head;

		CHECK_EQ(uskb_cow(skb, 100), 0);
		CHECK(skb->head == h);
		CHECK_EQ(uskb_cow(skb, 300), 0);
		CHECK(skb->head != h && uskb_headroom(skb) >= 300);
		CHECK(uskb_headroom(skb) % USKB_NET_SKB_PAD == 164 % USKB_NET_SKB_PAD);
	}
	c = uskb_clone(skb);
	CHECK_EQ(uskb_cow_head(c, 0), 0);
	CHECK(!uskb_cloned(c));
	uskb_free(c);
	c = uskb_clone(skb);
	CHECK_EQ(uskb_unclone(c), 0);
	CHECK(!uskb_cloned(c) && c->head != skb->head);
	uskb_free(c);
	/* unshare: a cloned skb becomes a private linear copy */
	c = uskb_clone(skb);
	{
		struct uskb *u = uskb_unshare(c);

		CHECK(u != c && !uskb_is_nonlinear(u));
		CHECK(t_skb_equals(u, want, 240));
		CHECK(uskb_unshare(u) == u); /* not cloned: unchanged */
		uskb_free(u);
	}
	/* share_check: a shared skb is replaced by a clone */
	uskb_get(skb);
	c = uskb_share_check(skb);
	CHECK(c != skb && atomic_load(&skb->users) == 1);
	CHECK(uskb_share_check(c) == c);
	uskb_free(c);
	/* expand tail only */
	tr = uskb_end_offset(skb);
	CHECK_EQ(uskb_expand_head(skb, 0, 1000), 0);
	CHECK(uskb_end_offset(skb) >= tr + 1000);
	uskb_page_put(pg);
	uskb_free(skb);
}

static void test_pull(void)
{
	struct uskb_page *pg = filled_page();
	struct uskb *skb = mk(40, 3, 100, &pg), *fl, *c;
	unsigned char want[340 + 80];

	t_fill(uskb_page_address(pg), USKB_PAGE_SIZE, 9);
	fl = uskb_alloc(80);
	t_fill(uskb_put(fl, 80), 80, 3);
	uskb_append_frag_list(skb, fl);
	CHECK_EQ(skb->len, 420);
	CHECK_EQ(skb->data_len, 380);
	uskb_copy_bits(skb, 0, want, 420);

	CHECK(uskb_may_pull(skb, 40)); /* already linear */
	CHECK_EQ(uskb_shinfo(skb)->nr_frags, 3);
	CHECK(uskb_may_pull(skb, 90)); /* half of frag 0 */
	CHECK_EQ(uskb_headlen(skb), 90);
	CHECK_EQ(uskb_shinfo(skb)->nr_frags, 3);
	CHECK_EQ(uskb_shinfo(skb)->frags[0].len, 50);
	CHECK(uskb_may_pull(skb, 240)); /* frags 0 and 1 gone */
	CHECK_EQ(uskb_shinfo(skb)->nr_frags, 1);
	CHECK_EQ(uskb_page_ref_count(pg), 2);
	CHECK(t_skb_equals(skb, want, 420));
	CHECK(!uskb_may_pull(skb, 421));
	c = uskb_clone(skb);
	CHECK(uskb_may_pull(skb, 380)); /* into the frag_list, and cloned: head is copied */
	CHECK(skb->head != c->head);
	CHECK_EQ(uskb_shinfo(skb)->nr_frags, 0);
	CHECK(t_skb_equals(skb, want, 420));
	CHECK(t_skb_equals(c, want, 420));
	CHECK_EQ(uskb_linearize(skb), 0);
	CHECK(!uskb_is_nonlinear(skb) && !uskb_has_frag_list(skb));
	CHECK(t_skb_equals(skb, want, 420));
	CHECK(uskb_pskb_pull(skb, 10) && skb->len == 410);
	uskb_free(c);
	uskb_free(skb);
	uskb_page_put(pg);
}

static void test_trim(void)
{
	struct uskb_page *pg = filled_page();
	struct uskb *skb = mk(40, 3, 100, &pg), *fl;
	unsigned char want[500];

	fl = uskb_alloc(100);
	uskb_put(fl, 100);
	uskb_append_frag_list(skb, fl);
	uskb_copy_bits(skb, 0, want, 440);
	CHECK_EQ(uskb_pskb_trim(skb, 400), 0); /* cuts inside the frag_list */
	CHECK_EQ(skb->len, 400);
	CHECK_EQ(fl->len, 60);
	CHECK_EQ(uskb_pskb_trim(skb, 190), 0); /* inside frag 1: frag 2 + frag_list go */
	CHECK_EQ(skb->len, 190);
	CHECK(!uskb_has_frag_list(skb) || skb->data_len == 0);
	CHECK(t_skb_equals(skb, want, 190));
	CHECK_EQ(uskb_pskb_trim(skb, 30), 0); /* inside the head */
	CHECK_EQ(skb->len, 30);
	CHECK_EQ(skb->data_len, 0);
	CHECK_EQ(uskb_shinfo(skb)->nr_frags, 0);
	CHECK_EQ(uskb_page_ref_count(pg), 1);
	CHECK(t_skb_equals(skb, want, 30));
	uskb_free(skb);
	/* condense: small paged data moves into the tailroom */
	skb = uskb_alloc(1000);
	uskb_put(skb, 10);
	uskb_page_get(pg);
	uskb_add_rx_frag(skb, 0, pg, 0, 100, 100);
	uskb_condense(skb);
	CHECK_EQ(skb->data_len, 0);
	CHECK_EQ(skb->len, 110);
	CHECK_EQ(uskb_page_ref_count(pg), 1);
	uskb_free(skb);
	uskb_page_put(pg);
}

static void test_bits(void)
{
	struct uskb_page *pg = filled_page();
	struct uskb *skb = mk(40, 2, 100, &pg);
	unsigned char buf[300], w[300];

	memcpy(skb->head, "HEADROOM", 8);
	CHECK_EQ(uskb_copy_bits(skb, -64, buf, 8), 0); /* negative offset: headroom */
	CHECK(!memcmp(buf, "HEADROOM", 8));
	CHECK_EQ(uskb_copy_bits(skb, -65, buf, 8), -EFAULT);
	CHECK_EQ(uskb_copy_bits(skb, 200, buf, 41), -EFAULT);
	CHECK_EQ(uskb_copy_bits(skb, 0, buf, -1), -EFAULT);
	CHECK_EQ(uskb_copy_bits(skb, 240, buf, 0), 0);
	t_fill(w, 240, 5);
	CHECK_EQ(uskb_store_bits(skb, 0, w, 240), 0); /* spans head and both frags */
	CHECK(t_skb_equals(skb, w, 240));
	CHECK_EQ(uskb_store_bits(skb, 1, w, 240), -EFAULT);
	uskb_page_put(pg);
	uskb_free(skb);
}

static void test_split(void)
{
	struct uskb_page *pg = filled_page();
	struct uskb *skb, *s1;
	unsigned char want[340];

	t_fill(uskb_page_address(pg), USKB_PAGE_SIZE, 4);
	/* split inside the header: tail of head copied, all frags move */
	skb = mk(40, 3, 100, &pg);
	uskb_copy_bits(skb, 0, want, 340);
	s1 = uskb_alloc(64);
	uskb_split(skb, s1, 25);
	CHECK_EQ(skb->len, 25);
	CHECK_EQ(skb->data_len, 0);
	CHECK_EQ(uskb_shinfo(skb)->nr_frags, 0);
	CHECK_EQ(s1->len, 315);
	CHECK_EQ(uskb_headlen(s1), 15);
	CHECK_EQ(uskb_shinfo(s1)->nr_frags, 3);
	CHECK_EQ(uskb_page_ref_count(pg), 4);
	CHECK(t_skb_equals(skb, want, 25) && t_skb_equals(s1, want + 25, 315));
	uskb_free(skb);
	uskb_free(s1);
	/* split inside frag 1: the cut frag is referenced by both */
	skb = mk(40, 3, 100, &pg);
	s1 = uskb_alloc(0);
	uskb_split(skb, s1, 190);
	CHECK_EQ(skb->len, 190);
	CHECK_EQ(skb->data_len, 150);
	CHECK_EQ(uskb_shinfo(skb)->nr_frags, 2);
	CHECK_EQ(uskb_shinfo(skb)->frags[1].len, 50);
	CHECK_EQ(s1->len, 150);
	CHECK_EQ(s1->data_len, 150);
	CHECK_EQ(uskb_shinfo(s1)->nr_frags, 2);
	CHECK_EQ(uskb_shinfo(s1)->frags[0].len, 50);
	CHECK_EQ(uskb_page_ref_count(pg), 5);
	CHECK(t_skb_equals(skb, want, 190) && t_skb_equals(s1, want + 190, 150));
	uskb_free(skb);
	uskb_free(s1);
	uskb_page_put(pg);
}

static void test_coalesce(void)
{
	struct uskb_page *pg = filled_page();
	struct uskb *to, *from, *c;
	bool stolen;
	int delta;
	unsigned char want[400];

	t_fill(uskb_page_address(pg), USKB_PAGE_SIZE, 6);
	/* small: copied into the tailroom */
	to = uskb_alloc(512);
	t_fill(uskb_put(to, 100), 100, 1);
	from = uskb_alloc(64);
	t_fill(uskb_put(from, 50), 50, 2);
	memcpy(want, to->data, 100);
	memcpy(want + 100, from->data, 50);
	CHECK(uskb_try_coalesce(to, from, &stolen, &delta));
	CHECK(!stolen && delta == 0);
	CHECK(t_skb_equals(to, want, 150));
	uskb_free_partial(from, stolen);
	uskb_free(to);
	/* a kmalloc head cannot be stolen; a page_frag head can */
	to = mk(40, 1, 100, &pg);
	from = mk(30, 2, 60, &pg);
	CHECK(!uskb_try_coalesce(to, from, &stolen, &delta));
	uskb_free(from);
	from = mk_flags(30, 2, 60, &pg, USKB_ALLOC_HEAD_FRAG);
	uskb_copy_bits(to, 0, want, 140);
	uskb_copy_bits(from, 0, want + 140, 150);
	CHECK(uskb_try_coalesce(to, from, &stolen, &delta));
	CHECK(stolen);
	CHECK_EQ(uskb_shinfo(to)->nr_frags, 4);
	CHECK_EQ(to->len, 290);
	CHECK(delta > 0);
	uskb_free_partial(from, stolen);
	CHECK(t_skb_equals(to, want, 290));
	uskb_free(to);
	/* a cloned 'to' is refused; a cloned 'from' keeps its frags */
	to = mk(40, 1, 100, &pg);
	c = uskb_clone(to);
	from = mk(0, 1, 100, &pg);
	CHECK(!uskb_try_coalesce(to, from, &stolen, &delta));
	uskb_free(c);
	c = uskb_clone(from);
	CHECK(uskb_try_coalesce(to, from, &stolen, &delta));
	CHECK(!stolen);
	CHECK_EQ(uskb_shinfo(from)->nr_frags, 1);
	CHECK_EQ(uskb_page_ref_count(pg), 4);
	uskb_free_partial(from, stolen);
	uskb_free(c);
	uskb_free(to);
	CHECK_EQ(uskb_page_ref_count(pg), 1);
	uskb_page_put(pg);
}

static void test_queue(void)
{
	struct uskb_head q, q2;
	struct uskb *a = uskb_alloc(0), *b = uskb_alloc(0), *c = uskb_alloc(0);

	uskb_queue_head_init(&q);
	uskb_queue_head_init(&q2);
	CHECK(uskb_queue_empty(&q) && uskb_dequeue(&q) == NULL && uskb_peek(&q) == NULL);
	uskb_queue_tail(&q, a);
	uskb_queue_tail(&q, b);
	uskb_queue_head(&q, c);
	CHECK_EQ(uskb_queue_len(&q), 3);
	CHECK(uskb_peek(&q) == c && uskb_peek_tail(&q) == b);
	CHECK(uskb_dequeue(&q) == c);
	CHECK(uskb_dequeue_tail(&q) == b);
	uskb_append(a, b, &q);
	CHECK(uskb_peek_tail(&q) == b);
	uskb_unlink(a, &q);
	CHECK_EQ(uskb_queue_len(&q), 1);
	uskb_queue_tail(&q2, a);
	uskb_queue_tail(&q2, c);
	uskb_queue_splice_tail_init(&q2, &q);
	CHECK(uskb_queue_empty(&q2));
	CHECK_EQ(uskb_queue_len(&q), 3);
	CHECK(uskb_peek(&q) == b && uskb_peek_tail(&q) == c);
	uskb_queue_purge(&q);
	CHECK(uskb_queue_empty(&q) && uskb_queue_len(&q) == 0);
}

static void test_stats(void)
{
	struct uskb_stats a = { .sz = sizeof(a) }, b = { .sz = sizeof(b) };
	struct uskb *skb, *f, *fc;

	skb = uskb_alloc(10);
	uskb_free(skb); /* the shell is now cached */
	uskb_stats_get(&a);
	skb = uskb_alloc(10);
	f = uskb_alloc_fclone(10);
	fc = uskb_clone(f);
	uskb_stats_get(&b);
	CHECK_EQ(b.skbs, a.skbs + 3);
	CHECK_EQ(b.fclones, a.fclones + 1);
	CHECK_EQ(b.heads, a.heads + 2);
	CHECK_EQ(b.skbs_cached, a.skbs_cached - 1); /* only the plain skb took a shell */
	CHECK_EQ(b.skb_allocs, a.skb_allocs + 3);
	uskb_free(fc);
	uskb_free(f);
	uskb_free(skb);
	uskb_stats_get(&b);
	CHECK_EQ(b.skbs, a.skbs);
	CHECK_EQ(b.skbs_cached, a.skbs_cached);
	CHECK_EQ(b.heads, a.heads);
	/* an older, shorter layout gets the fields it knows */
	{
		struct uskb_stats old;

		memset(&old, 0xff, sizeof(old));
		old.sz = offsetof(struct uskb_stats, heads);
		CHECK_EQ(uskb_stats_get(&old), 0);
		CHECK_EQ(old.skbs, b.skbs);
		CHECK_EQ(old.heads, -1); /* untouched */
		old.sz = 1;
		CHECK_EQ(uskb_stats_get(&old), -EINVAL);
	}
}

/* MANAGED_FRAG_REFS: the skb holds no page refs; sharing or moving frags downgrades */
static void test_managed(void)
{
	struct uskb_page *pg = filled_page();
	struct uskb *skb = uskb_alloc(128), *c, *s1;

	uskb_put(skb, 20);
	/* the owner (say a zero-copy sender) keeps the references itself */
	uskb_add_rx_frag(skb, 0, pg, 0, 1000, 0);
	uskb_add_rx_frag(skb, 1, pg, 2000, 1000, 0);
	uskb_shinfo(skb)->flags |= USKB_SKBFL_MANAGED_FRAG_REFS;
	CHECK_EQ(uskb_page_ref_count(pg), 1);
	uskb_frag_unref(skb, 0); /* no reference to drop */
	CHECK_EQ(uskb_page_ref_count(pg), 1);
	CHECK(uskb_may_pull(skb, 70)); /* eats 50 bytes of frag 0: no put */
	CHECK_EQ(uskb_page_ref_count(pg), 1);
	CHECK_EQ(uskb_pskb_trim(skb, 1500), 0); /* shortens frag 1 */
	CHECK_EQ(uskb_shinfo(skb)->nr_frags, 2);
	CHECK_EQ(uskb_page_ref_count(pg), 1);
	c = uskb_clone(skb);
	CHECK_EQ(uskb_expand_head(skb, 16, 0), 0);
	/* downgrade (+2), then the cloned path's own refs for the new shinfo (+2) */
	CHECK(!(uskb_shinfo(skb)->flags & USKB_SKBFL_MANAGED_FRAG_REFS));
	CHECK(!(uskb_shinfo(c)->flags & USKB_SKBFL_MANAGED_FRAG_REFS));
	CHECK_EQ(uskb_page_ref_count(pg), 5);
	uskb_free(skb);
	CHECK_EQ(uskb_page_ref_count(pg), 3);
	uskb_free(c); /* the old shinfo holds real refs now: they go */
	CHECK_EQ(uskb_page_ref_count(pg), 1);
	/* split downgrades before the cut frag gets a second user */
	skb = uskb_alloc(64);
	uskb_add_rx_frag(skb, 0, pg, 0, 100, 0);
	uskb_shinfo(skb)->flags |= USKB_SKBFL_MANAGED_FRAG_REFS;
	s1 = uskb_alloc(0);
	uskb_split(skb, s1, 50);
	CHECK_EQ(uskb_page_ref_count(pg), 3);
	uskb_free(skb);
	uskb_free(s1);
	CHECK_EQ(uskb_page_ref_count(pg), 1);
	uskb_page_put(pg);
}

/* try_coalesce carries SHARED_FRAG over with the frags */
static void test_coalesce_shared_frag(void)
{
	struct uskb_page *pg = filled_page();
	struct uskb *to = uskb_alloc(64), *from = uskb_alloc(64);
	bool stolen;
	int delta;

	uskb_put(to, 10);
	uskb_page_get(pg);
	uskb_add_rx_frag(to, 0, pg, 0, 100, 100);
	uskb_add_rx_frag(from, 0, pg, 100, 1000, 1000);
	uskb_shinfo(from)->flags |= USKB_SKBFL_SHARED_FRAG;
	CHECK(uskb_try_coalesce(to, from, &stolen, &delta));
	CHECK(uskb_shinfo(to)->flags & USKB_SKBFL_SHARED_FRAG);
	CHECK(uskb_has_shared_frag(to));
	uskb_free_partial(from, stolen);
	uskb_free(to);
}

int main(void)
{
	test_managed();
	test_coalesce_shared_frag();
	test_stats();
	test_alloc();
	test_linear_ops();
	test_frags();
	test_clone();
	test_header_release();
	test_fclone();
	test_copies();
	test_expand_cow();
	test_pull();
	test_trim();
	test_bits();
	test_split();
	test_coalesce();
	test_queue();
	return t_end("skb-geometry");
}
