/* SPDX-License-Identifier: MIT */
/*
 * Zero-copy user buffers: the owner's completion runs exactly once, when the
 * last reference to its memory is gone, with success = false when the data
 * had to be copied; user memory is never written; after the completion no
 * frag points into it.
 */
#include <pthread.h>
#include <sys/uio.h>
#include "t.h"

#define UMEM 65536

static unsigned char umem[UMEM];
static unsigned char umem_copy[UMEM];

struct owner {
	struct uskb_ubuf ubuf;
	atomic_int completions;
	atomic_int successes;
};

static void complete(struct uskb *skb, struct uskb_ubuf *uarg, bool success)
{
	struct owner *o = (struct owner *)uarg;

	(void)skb;
	atomic_fetch_add(&o->completions, 1);
	if (success)
		atomic_fetch_add(&o->successes, 1);
}

static const struct uskb_ubuf_ops ops = { .complete = complete };

static void owner_init(struct owner *o, uint8_t flags)
{
	uskb_ubuf_init(&o->ubuf, &ops, flags);
	atomic_init(&o->completions, 0);
	atomic_init(&o->successes, 0);
}

/* does any frag of @skb still point into the user buffer? */
static bool points_into_user(const struct uskb *skb)
{
	const struct uskb_shared_info *sh = uskb_shinfo(skb);
	int i;

	for (i = 0; i < sh->nr_frags; i++) {
		const unsigned char *a = uskb_frag_address(&sh->frags[i]);

		if (a >= umem && a < umem + UMEM)
			return true;
	}
	return false;
}

/* An skb of @len user bytes at @off, in @nseg segments, attached to @o. */
static struct uskb *attach(struct owner *o, size_t off, size_t len, int nseg)
{
	struct iovec iov[32];
	struct uskb *skb = uskb_alloc(256);
	size_t each = len / (size_t)nseg;
	int i;

	for (i = 0; i < nseg; i++) {
		iov[i].iov_base = umem + off + (size_t)i * each;
		iov[i].iov_len = i == nseg - 1 ? len - (size_t)i * each : each;
	}
	uskb_reserve(skb, 64);
	CHECK_EQ(uskb_zerocopy_attach(skb, iov, nseg, &o->ubuf, USKB_ZC_GOODCOPY_LEN), 0);
	CHECK_EQ(skb->len, len);
	CHECK(t_skb_equals(skb, umem + off, len));
	return skb;
}

static void test_attach_free(void)
{
	struct owner o;
	struct uskb *skb;

	owner_init(&o, USKB_SKBFL_ZEROCOPY_FRAG);
	skb = attach(&o, 100, 5000, 3);
	CHECK_EQ(uskb_headlen(skb), USKB_ZC_GOODCOPY_LEN);
	CHECK_EQ(uskb_shinfo(skb)->nr_frags, 3);
	CHECK(points_into_user(skb));
	CHECK(uskb_zcopy(skb) == &o.ubuf);
	CHECK(uskb_shinfo(skb)->flags & USKB_SKBFL_MANAGED_FRAG_REFS);
	CHECK_EQ(atomic_load(&o.ubuf.refcnt), 2); /* the sender's + the skb's */
	uskb_zcopy_put(&o.ubuf); /* the send is done */
	CHECK_EQ(atomic_load(&o.completions), 0);
	uskb_free(skb);
	CHECK_EQ(atomic_load(&o.completions), 1);
	CHECK_EQ(atomic_load(&o.successes), 1);
}

/* tap / vhost flavour: a clone would pin user memory, so the data is copied */
static void test_clone_orphans(void)
{
	struct owner o;
	struct uskb *skb, *c;
	int order;

	for (order = 0; order < 2; order++) {
		owner_init(&o, USKB_SKBFL_ZEROCOPY_FRAG);
		skb = attach(&o, 0, 20000, 4);
		uskb_zcopy_put(&o.ubuf);
		c = uskb_clone(skb);
		/* copied at clone time: the owner already heard, "copied" */
		CHECK_EQ(atomic_load(&o.completions), 1);
		CHECK_EQ(atomic_load(&o.successes), 0);
		CHECK(!points_into_user(skb) && !points_into_user(c));
		CHECK(!uskb_zcopy(skb));
		CHECK(t_skb_equals(c, umem, 20000));
		uskb_free(order ? c : skb);
		uskb_free(order ? skb : c);
		CHECK_EQ(atomic_load(&o.completions), 1);
	}
}

/* kernel rule: a shared tap-flavour skb cannot be copied out, so it cannot be cloned */
static void test_shared_tap_clone_fails(void)
{
	struct owner o;
	struct uskb *skb;

	owner_init(&o, USKB_SKBFL_ZEROCOPY_FRAG);
	skb = attach(&o, 0, 5000, 1);
	uskb_zcopy_put(&o.ubuf);
	uskb_get(skb); /* a second user */
	errno = 0;
	CHECK(uskb_clone(skb) == NULL && errno == ENOMEM);
	CHECK(uskb_pskb_copy(skb) == NULL);
	CHECK(points_into_user(skb)); /* nothing was changed */
	CHECK_EQ(atomic_load(&o.completions), 0);
	uskb_free(skb);
	uskb_free(skb);
	CHECK_EQ(atomic_load(&o.completions), 1);
	CHECK_EQ(atomic_load(&o.successes), 1);
}

/* the vhost flavour: buffers complete out of order; the owner sees its descriptors */
static unsigned long done_desc[8];
static int ndone;

static void vhost_complete(struct uskb *skb, struct uskb_ubuf *uarg, bool success)
{
	struct uskb_ubuf_desc *d = (struct uskb_ubuf_desc *)uarg;

	(void)skb;
	done_desc[ndone++] = d->desc * 10 + success; /* DMA_DONE_LEN / FAILED_LEN */
}

static void test_vhost_flavour(void)
{
	static const struct uskb_ubuf_ops vops = { .complete = vhost_complete };
	struct uskb_ubuf_desc d[3];
	struct uskb *skb[3], *c;
	int i;

	for (i = 0; i < 3; i++) {
		struct iovec iov = { umem + i * 4096, 3000 };

		uskb_ubuf_init(&d[i].ubuf, &vops, USKB_SKBFL_ZEROCOPY_FRAG);
		d[i].desc = (unsigned long)i + 1; /* ring index */
		skb[i] = uskb_alloc(256);
		CHECK_EQ(uskb_zerocopy_attach(skb[i], &iov, 1, &d[i].ubuf, USKB_ZC_GOODCOPY_LEN), 0);
		uskb_zcopy_put(&d[i].ubuf);
	}
	c = uskb_clone(skb[1]); /* a tap holds a clone of #2: its data is copied */
	uskb_free(skb[2]);
	uskb_free(skb[0]);
	uskb_free(skb[1]);
	uskb_free(c);
	CHECK_EQ(ndone, 3);
	CHECK_EQ(done_desc[0], 20); /* #2 copied: FAILED, reported at clone time */
	CHECK_EQ(done_desc[1], 31); /* #3 done */
	CHECK_EQ(done_desc[2], 11); /* #1 done */
}

/* MSG_ZEROCOPY flavour: DONT_ORPHAN, clones share the user memory */
static void test_clone_dont_orphan(void)
{
	struct owner o;
	struct uskb *skb, *c, *p;
	int order;

	for (order = 0; order < 2; order++) {
		owner_init(&o, USKB_SKBFL_ZEROCOPY_FRAG | USKB_SKBFL_DONT_ORPHAN);
		skb = attach(&o, 7, 3000, 2);
		uskb_zcopy_put(&o.ubuf);
		c = uskb_clone(skb);
		p = uskb_pskb_copy(skb); /* shares the frags and the ubuf */
		CHECK(points_into_user(c) && points_into_user(p));
		CHECK(uskb_zcopy(p) == &o.ubuf);
		CHECK_EQ(atomic_load(&o.completions), 0);
		uskb_free(order ? c : skb);
		uskb_free(p);
		CHECK_EQ(atomic_load(&o.completions), 0);
		uskb_free(order ? skb : c);
		CHECK_EQ(atomic_load(&o.completions), 1);
		CHECK_EQ(atomic_load(&o.successes), 1);
	}
	/* a held clone made private again (expand_head) keeps both shinfos counted */
	owner_init(&o, USKB_SKBFL_ZEROCOPY_FRAG | USKB_SKBFL_DONT_ORPHAN);
	skb = attach(&o, 0, 9000, 3);
	uskb_zcopy_put(&o.ubuf);
	c = uskb_clone(skb);
	CHECK_EQ(uskb_expand_head(c, 64, 0), 0);
	CHECK(uskb_zcopy(c) == &o.ubuf && uskb_zcopy(skb) == &o.ubuf);
	uskb_free(skb);
	CHECK_EQ(atomic_load(&o.completions), 0);
	CHECK(t_skb_equals(c, umem, 9000));
	uskb_free(c);
	CHECK_EQ(atomic_load(&o.completions), 1);
}

static void test_orphan_rx_and_linearize(void)
{
	struct owner o;
	struct uskb *skb;

	/* looping to a receiver copies even a DONT_ORPHAN send */
	owner_init(&o, USKB_SKBFL_ZEROCOPY_FRAG | USKB_SKBFL_DONT_ORPHAN);
	skb = attach(&o, 0, 8000, 2);
	uskb_zcopy_put(&o.ubuf);
	CHECK_EQ(uskb_orphan_frags(skb), 0); /* DONT_ORPHAN: nothing happens */
	CHECK(points_into_user(skb));
	CHECK_EQ(uskb_orphan_frags_rx(skb), 0);
	CHECK(!points_into_user(skb) && !uskb_zcopy(skb));
	CHECK_EQ(atomic_load(&o.completions), 1);
	CHECK_EQ(atomic_load(&o.successes), 0);
	CHECK(t_skb_equals(skb, umem, 8000));
	uskb_free(skb);
	/* linearizing pulls the user bytes into the head: "copied" */
	owner_init(&o, USKB_SKBFL_ZEROCOPY_FRAG);
	skb = attach(&o, 0, 3000, 2);
	uskb_zcopy_put(&o.ubuf);
	CHECK_EQ(uskb_linearize(skb), 0);
	CHECK_EQ(atomic_load(&o.completions), 1);
	CHECK_EQ(atomic_load(&o.successes), 0);
	CHECK(t_skb_equals(skb, umem, 3000));
	uskb_free(skb);
	/* checksum_help on shared (user) frags linearizes first */
	owner_init(&o, USKB_SKBFL_ZEROCOPY_FRAG);
	skb = attach(&o, 0, 1000, 1);
	uskb_zcopy_put(&o.ubuf);
	CHECK(uskb_partial_csum_set(skb, 0, 10));
	CHECK_EQ(uskb_checksum_help(skb), 0);
	CHECK_EQ(atomic_load(&o.completions), 1);
	uskb_free(skb);
}

static void test_split(void)
{
	struct owner o;
	struct uskb *skb, *s1;

	owner_init(&o, USKB_SKBFL_ZEROCOPY_FRAG | USKB_SKBFL_DONT_ORPHAN);
	skb = attach(&o, 0, 6000, 2);
	uskb_zcopy_put(&o.ubuf);
	s1 = uskb_alloc(0);
	uskb_split(skb, s1, 2000); /* cuts inside the first user frag */
	CHECK(uskb_zcopy(s1) == &o.ubuf);
	CHECK(t_skb_equals(skb, umem, 2000) && t_skb_equals(s1, umem + 2000, 4000));
	uskb_free(skb);
	CHECK_EQ(atomic_load(&o.completions), 0);
	uskb_free(s1);
	CHECK_EQ(atomic_load(&o.completions), 1);
	CHECK_EQ(atomic_load(&o.successes), 1);
}

static void test_copy_fallbacks(void)
{
	struct owner o;
	struct uskb *skb;
	struct iovec iov[20];
	int i;

	/* below the copy threshold: copied, and the owner hears "copied" */
	owner_init(&o, USKB_SKBFL_ZEROCOPY_FRAG);
	skb = attach(&o, 0, 100, 1);
	CHECK(!uskb_zcopy(skb) && !uskb_is_nonlinear(skb));
	uskb_zcopy_put(&o.ubuf);
	CHECK_EQ(atomic_load(&o.completions), 1);
	CHECK_EQ(atomic_load(&o.successes), 0);
	uskb_free(skb);
	/* below uskb_zerocopy_min_len() (512): copied; with the limit lowered: attached */
	CHECK_EQ(uskb_zerocopy_min_len(), USKB_ZC_MIN_LEN);
	owner_init(&o, USKB_SKBFL_ZEROCOPY_FRAG);
	skb = attach(&o, 0, 400, 1);
	CHECK(!uskb_zcopy(skb));
	uskb_free(skb);
	uskb_zerocopy_set_min_len(0);
	skb = attach(&o, 0, 400, 1);
	CHECK(uskb_zcopy(skb) == &o.ubuf);
	uskb_zerocopy_set_min_len(USKB_ZC_MIN_LEN);
	uskb_free(skb);
	uskb_zcopy_put(&o.ubuf);
	CHECK_EQ(atomic_load(&o.completions), 1);
	CHECK_EQ(atomic_load(&o.successes), 0); /* one of its sends was copied */
	/* more segments than MAX_SKB_FRAGS: copied */
	owner_init(&o, USKB_SKBFL_ZEROCOPY_FRAG);
	skb = uskb_alloc(4096);
	for (i = 0; i < 20; i++) {
		iov[i].iov_base = umem + i * 100;
		iov[i].iov_len = 100;
	}
	CHECK_EQ(uskb_zerocopy_attach(skb, iov, 20, &o.ubuf, 0), 0);
	CHECK(!uskb_zcopy(skb));
	CHECK(t_skb_equals(skb, umem, 2000));
	uskb_zcopy_put(&o.ubuf);
	CHECK_EQ(atomic_load(&o.successes), 0);
	CHECK_EQ(atomic_load(&o.completions), 1);
	/* bad input changes nothing */
	owner_init(&o, USKB_SKBFL_ZEROCOPY_FRAG);
	CHECK_EQ(uskb_zerocopy_attach(skb, iov, -1, &o.ubuf, 0), -EINVAL);
	CHECK_EQ(uskb_zerocopy_attach(skb, iov, 1, NULL, 0), -EINVAL);
	CHECK_EQ(skb->len, 2000);
	uskb_free(skb);
	skb = uskb_alloc(64); /* too small for a 1000-byte copy */
	iov[0].iov_len = 1000;
	CHECK_EQ(uskb_zerocopy_attach(skb, iov, 1, &o.ubuf, 1000), -EMSGSIZE);
	CHECK_EQ(skb->len, 0);
	uskb_free(skb);
	uskb_zcopy_put(&o.ubuf);
	CHECK_EQ(atomic_load(&o.completions), 1);
}

/* one send split into N skbs, freed on N threads: one completion */
#define NT 4
static struct uskb *per_thread[NT][8];

static void *drop(void *arg)
{
	struct uskb **v = arg;
	int i;

	for (i = 0; i < 8; i++) {
		struct uskb *c = uskb_clone(v[i]); /* DONT_ORPHAN: shared */

		uskb_free(v[i]);
		uskb_free(c);
	}
	return NULL;
}

static void test_threads(void)
{
	struct owner o;
	pthread_t th[NT];
	int i, j, round;

	for (round = 0; round < 20; round++) {
		owner_init(&o, USKB_SKBFL_ZEROCOPY_FRAG | USKB_SKBFL_DONT_ORPHAN);
		for (i = 0; i < NT; i++)
			for (j = 0; j < 8; j++)
				per_thread[i][j] = attach(&o, (size_t)(i * 8 + j) * 1000, 1000, 1);
		for (i = 0; i < NT; i++)
			pthread_create(&th[i], NULL, drop, per_thread[i]);
		uskb_zcopy_put(&o.ubuf);
		for (i = 0; i < NT; i++)
			pthread_join(th[i], NULL);
		uskb_cache_drain();
		CHECK_EQ(atomic_load(&o.completions), 1);
		CHECK_EQ(atomic_load(&o.successes), 1);
	}
}

/* ---- skb_zerocopy (the OVS upcall: a message that references the packet) ---- */

static void test_skb_zerocopy(void)
{
	struct uskb_page *pg = uskb_page_alloc(0);
	struct uskb *from, *to, *fl;
	unsigned char want[1400];
	struct owner o;
	int hlen;

	t_fill(uskb_page_address(pg), USKB_PAGE_SIZE, 21);
	/* page_frag head of 200 bytes + one 1000-byte frag */
	from = uskb_dev_alloc(256);
	t_fill(uskb_put(from, 200), 200, 22);
	uskb_page_get(pg); /* the frag's reference; ours stays */
	uskb_add_rx_frag(from, 0, pg, 100, 1000, 1000);
	uskb_copy_bits(from, 0, want, 1200);
	hlen = (int)uskb_zerocopy_headlen(from);
	CHECK_EQ(hlen, 0); /* the head can travel as a frag */
	to = uskb_alloc(64);
	uskb_put_zero(to, 20); /* a netlink + attribute header, say */
	CHECK_EQ(uskb_zerocopy(to, from, 1200, hlen), 0);
	CHECK_EQ(to->len, 1220);
	CHECK_EQ(uskb_shinfo(to)->nr_frags, 2);
	CHECK(uskb_shinfo(to)->frags[0].page == uskb_virt_to_page(from->head));
	CHECK_EQ(uskb_page_ref_count(pg), 3);
	uskb_free(from); /* the message keeps the data alive */
	{
		unsigned char got[1200];

		CHECK_EQ(uskb_copy_bits(to, 20, got, 1200), 0);
		CHECK(!memcmp(got, want, 1200));
	}
	uskb_free(to);
	CHECK_EQ(uskb_page_ref_count(pg), 1);
	/* a kmalloc head is copied (hlen = headlen); a frag_list forces a full copy */
	from = uskb_alloc(256);
	t_fill(uskb_put(from, 100), 100, 23);
	uskb_page_get(pg);
	uskb_add_rx_frag(from, 0, pg, 0, 900, 900);
	CHECK_EQ(uskb_zerocopy_headlen(from), 100);
	fl = uskb_alloc(64);
	uskb_put_zero(fl, 50);
	uskb_append_frag_list(from, fl);
	CHECK_EQ(uskb_zerocopy_headlen(from), 1050);
	uskb_free(from);
	/* an empty kmalloc head (a message pulled to its packet): hlen 0 references every frag */
	from = uskb_alloc(64);
	uskb_page_get(pg);
	uskb_add_rx_frag(from, 0, pg, 0, 700, 700);
	to = uskb_alloc(32);
	CHECK_EQ(uskb_zerocopy(to, from, 700, 0), 0);
	CHECK_EQ(to->data_len, 700);
	CHECK_EQ(uskb_shinfo(to)->nr_frags, 1);
	CHECK(uskb_shinfo(to)->frags[0].page == pg);
	CHECK(t_skb_equals(to, uskb_page_address(pg), 700));
	uskb_free(to);
	uskb_free(from);
	/* with a zero-copy packet the message shares the ubuf: one completion, after both */
	owner_init(&o, USKB_SKBFL_ZEROCOPY_FRAG | USKB_SKBFL_DONT_ORPHAN);
	from = attach(&o, 0, 6000, 2);
	uskb_zcopy_put(&o.ubuf);
	to = uskb_alloc(128);
	hlen = (int)uskb_zerocopy_headlen(from); /* kmalloc head: its 128 bytes */
	CHECK_EQ(uskb_zerocopy(to, from, 6000, hlen), 0);
	CHECK(uskb_zcopy(to) == &o.ubuf);
	CHECK(t_skb_equals(to, umem, 6000));
	uskb_free(from);
	CHECK_EQ(atomic_load(&o.completions), 0);
	uskb_free(to);
	CHECK_EQ(atomic_load(&o.completions), 1);
	CHECK_EQ(atomic_load(&o.successes), 1);
	/* bad lengths */
	from = uskb_alloc(64);
	uskb_put_zero(from, 10);
	to = uskb_alloc(0);
	CHECK_EQ(uskb_zerocopy(to, from, 11, 10), -EFAULT);
	CHECK_EQ(uskb_zerocopy(to, from, 5, 6), -EFAULT);
	uskb_free(to);
	uskb_free(from);
	uskb_page_put(pg);
}

/* ---- MSG_ZEROCOPY ---- */

/* one send of @len bytes on @zs: an skb attached to the (maybe coalesced) ubuf */
static struct uskb *zc_send(struct uskb_zc_sock *zs, struct uskb_ubuf **prev, size_t len,
			    bool keep_ref)
{
	struct uskb_ubuf *u = uskb_msg_zerocopy_realloc(zs, len, *prev);
	struct iovec iov = { umem, len };
	struct uskb *skb = uskb_alloc(256);

	CHECK(u != NULL);
	CHECK_EQ(uskb_zerocopy_attach(skb, &iov, 1, u, 64), 0);
	if (!keep_ref) {
		uskb_zcopy_put(u); /* the end of this sendmsg */
		*prev = NULL;
	} else {
		*prev = u;
	}
	return skb;
}

static void test_msg_zerocopy(void)
{
	struct uskb_zc_sock *zs = uskb_zc_sock_create();
	struct uskb_zc_notif nf[8];
	struct uskb_ubuf *prev = NULL, *u;
	struct uskb *s[8];
	int i;

	/* five sends, completed in order: one merged range 0..4 */
	for (i = 0; i < 5; i++)
		s[i] = zc_send(zs, &prev, 1000, false);
	for (i = 0; i < 5; i++)
		uskb_free(s[i]);
	CHECK_EQ(uskb_zc_sock_read(zs, nf, 8), 1);
	CHECK(nf[0].lo == 0 && nf[0].hi == 4 && !nf[0].copied);
	CHECK_EQ(uskb_zc_sock_read(zs, nf, 8), 0);
	/* a stream of sends coalesced into one ubuf (ids 5..7) */
	s[0] = zc_send(zs, &prev, 1000, true);
	s[1] = zc_send(zs, &prev, 1000, true);
	s[2] = zc_send(zs, &prev, 1000, true);
	CHECK(uskb_zcopy(s[0]) == uskb_zcopy(s[2]));
	CHECK_EQ(((struct uskb_ubuf_msgzc *)prev)->len, 3);
	CHECK_EQ(uskb_zc_sock_next_id(zs), 8);
	uskb_zcopy_put(prev);
	uskb_zcopy_put(prev);
	uskb_zcopy_put(prev); /* each coalesced send held one */
	prev = NULL;
	uskb_free(s[1]);
	uskb_free(s[0]);
	CHECK_EQ(uskb_zc_sock_read(zs, nf, 8), 0); /* s[2] still holds it */
	uskb_free(s[2]);
	CHECK_EQ(uskb_zc_sock_read(zs, nf, 8), 1);
	CHECK(nf[0].lo == 5 && nf[0].hi == 7);
	/* out of order: 10, 8, then 9 joins 8 */
	for (i = 0; i < 3; i++)
		s[i] = zc_send(zs, &prev, 700, false); /* ids 8, 9, 10 */
	uskb_free(s[2]);
	uskb_free(s[0]);
	uskb_free(s[1]);
	CHECK_EQ(uskb_zc_sock_read(zs, nf, 8), 2);
	CHECK(nf[0].lo == 10 && nf[0].hi == 10);
	CHECK(nf[1].lo == 8 && nf[1].hi == 9);
	/* a copied send is reported as such, and not merged with its zero-copy neighbours */
	for (i = 0; i < 3; i++)
		s[i] = zc_send(zs, &prev, 2000, false); /* ids 11, 12, 13 */
	/* looped to a receiver: copied, and (its sender done) completed at once */
	CHECK_EQ(uskb_orphan_frags_rx(s[1]), 0);
	for (i = 0; i < 3; i++)
		uskb_free(s[i]);
	CHECK_EQ(uskb_zc_sock_read(zs, nf, 8), 3);
	CHECK(nf[0].lo == 12 && nf[0].hi == 12 && nf[0].copied);
	CHECK(nf[1].lo == 11 && nf[1].hi == 11 && !nf[1].copied);
	CHECK(nf[2].lo == 13 && nf[2].hi == 13 && !nf[2].copied);
	/* an aborted send gives its number back and says nothing */
	u = uskb_msg_zerocopy_realloc(zs, 100, NULL);
	CHECK_EQ(uskb_zc_sock_next_id(zs), 15);
	uskb_zcopy_put_abort(u, true);
	CHECK_EQ(uskb_zc_sock_next_id(zs), 14);
	CHECK_EQ(uskb_zc_sock_read(zs, nf, 8), 0);
	/* coalescing stops at 512 KiB */
	u = uskb_msg_zerocopy_realloc(zs, 400000, NULL);
	{
		struct uskb_ubuf *v = uskb_msg_zerocopy_realloc(zs, 200000, u);

		CHECK(v != u);
		uskb_zcopy_put(v);
	}
	uskb_zcopy_put(u);
	CHECK_EQ(uskb_zc_sock_read(zs, nf, 8), 2); /* 15, then 14 */
	CHECK(nf[0].lo == 15 && nf[1].lo == 14);
	/* a socket closed with a send in flight: no notification, nothing leaks */
	s[0] = zc_send(zs, &prev, 100, false);
	s[1] = zc_send(zs, &prev, 3000, false);
	uskb_zc_sock_destroy(zs);
	uskb_free(s[0]);
	uskb_free(s[1]);
}

int main(void)
{
	t_fill(umem, UMEM, 11);
	memcpy(umem_copy, umem, UMEM);
	test_attach_free();
	test_clone_orphans();
	test_vhost_flavour();
	test_shared_tap_clone_fails();
	test_clone_dont_orphan();
	test_orphan_rx_and_linearize();
	test_split();
	test_copy_fallbacks();
	test_threads();
	test_msg_zerocopy();
	test_skb_zerocopy();
	CHECK(!memcmp(umem, umem_copy, UMEM)); /* user memory is never written */
	return t_end("zerocopy");
}
