/* SPDX-License-Identifier: MIT */
/*
 * Allocation failure injection: for every N, the Nth allocation of each
 * scenario fails (uskb_fault_inject). Whatever fails must fail cleanly:
 * an error comes back, nothing leaks, the owner's completion still runs
 * exactly once, and user memory is never written.
 */
#include <sys/uio.h>
#include "t.h"

#define UMEM 40000
static unsigned char umem[UMEM], umem_copy[UMEM];

struct owner {
	struct uskb_ubuf ubuf;
	int completions;
};

static void complete(struct uskb *skb, struct uskb_ubuf *uarg, bool success)
{
	(void)skb;
	(void)success;
	((struct owner *)uarg)->completions++;
}

static const struct uskb_ubuf_ops ops = { .complete = complete };

/* A zero-copy skb of @len user bytes in 2 segments, or NULL (owner keeps its ref). */
static struct uskb *zc_skb(struct owner *o, size_t len)
{
	struct iovec iov[2] = { { umem, len / 2 }, { umem + len / 2, len - len / 2 } };
	struct uskb *skb = uskb_alloc(256);

	if (!skb)
		return NULL;
	if (uskb_zerocopy_attach(skb, iov, 2, &o->ubuf, 64)) {
		uskb_free(skb);
		return NULL;
	}
	return skb;
}

typedef void (*scenario_fn)(struct owner *o);

static void sc_clone_tap(struct owner *o)
{
	struct uskb *skb = zc_skb(o, 20000), *c;

	if (!skb)
		return;
	c = uskb_clone(skb); /* orphans: copies into pages */
	uskb_free(c);
	uskb_free(skb);
}

static void sc_pskb_copy(struct owner *o)
{
	struct uskb *skb = zc_skb(o, 20000), *c;

	if (!skb)
		return;
	c = uskb_pskb_copy(skb);
	uskb_free(skb);
	uskb_free(c);
}

static void sc_expand_cloned(struct owner *o)
{
	struct uskb *skb = zc_skb(o, 9000), *c;

	if (!skb)
		return;
	c = uskb_clone(skb);
	if (c)
		uskb_expand_head(c, 128, 64);
	uskb_free(skb);
	uskb_free(c);
}

static void sc_split(struct owner *o)
{
	struct uskb *skb = zc_skb(o, 9000), *s1;

	if (!skb)
		return;
	s1 = uskb_alloc(0);
	if (s1 && !uskb_unclone(skb))
		uskb_split(skb, s1, 3000);
	uskb_free(s1);
	uskb_free(skb);
}

static void sc_skb_zerocopy(struct owner *o)
{
	struct uskb *skb = zc_skb(o, 9000), *to;

	if (!skb)
		return;
	to = uskb_alloc(256);
	if (to)
		uskb_zerocopy(to, skb, (int)skb->len, (int)uskb_zerocopy_headlen(skb));
	uskb_free(skb);
	uskb_free(to);
}

static void sc_orphan_rx_linearize(struct owner *o)
{
	struct uskb *skb = zc_skb(o, 30000), *b = zc_skb(o, 3000);

	if (skb)
		uskb_orphan_frags_rx(skb);
	if (b)
		uskb_linearize(b);
	uskb_free(skb);
	uskb_free(b);
}

static void sc_plain(struct owner *o)
{
	struct uskb_page *pg = uskb_page_alloc(0);
	struct uskb *skb = uskb_dev_alloc(200), *fl, *c, *p;

	(void)o;
	if (!pg || !skb)
		goto out;
	uskb_put_zero(skb, 100);
	uskb_page_get(pg);
	uskb_add_rx_frag(skb, 0, pg, 0, 2000, 2000);
	fl = uskb_alloc(64);
	if (fl) {
		uskb_put_zero(fl, 60);
		uskb_append_frag_list(skb, fl);
	}
	c = uskb_clone(skb);
	p = uskb_pskb_copy(skb);
	if (c) {
		uskb_may_pull(c, 2150);  /* into the shared frag_list: expand + clone */
		uskb_pskb_trim(c, 2120); /* inside the frag_list */
	}
	if (p) {
		struct uskb *cp = uskb_copy(p);

		uskb_free(cp);
		uskb_linearize(p);
	}
	uskb_free(c);
	uskb_free(p);
out:
	uskb_free(skb);
	if (pg)
		uskb_page_put(pg);
}

static const struct {
	const char *name;
	scenario_fn fn;
	uint8_t flags;
} scenarios[] = {
	{ "clone (tap: copies)", sc_clone_tap, USKB_SKBFL_ZEROCOPY_FRAG },
	{ "pskb_copy (tap)", sc_pskb_copy, USKB_SKBFL_ZEROCOPY_FRAG },
	{ "pskb_copy (MSG_ZEROCOPY)", sc_pskb_copy,
	  USKB_SKBFL_ZEROCOPY_FRAG | USKB_SKBFL_DONT_ORPHAN },
	{ "expand_head of a clone", sc_expand_cloned,
	  USKB_SKBFL_ZEROCOPY_FRAG | USKB_SKBFL_DONT_ORPHAN },
	{ "split", sc_split, USKB_SKBFL_ZEROCOPY_FRAG | USKB_SKBFL_DONT_ORPHAN },
	{ "skb_zerocopy", sc_skb_zerocopy, USKB_SKBFL_ZEROCOPY_FRAG },
	{ "orphan_frags_rx, linearize", sc_orphan_rx_linearize,
	  USKB_SKBFL_ZEROCOPY_FRAG | USKB_SKBFL_DONT_ORPHAN },
	{ "clone/copy/pull/trim, no ubuf", sc_plain, USKB_SKBFL_ZEROCOPY_FRAG },
};

int main(void)
{
	unsigned int s;
	long total = 0;

	t_fill(umem, UMEM, 5);
	memcpy(umem_copy, umem, UMEM);
	for (s = 0; s < sizeof(scenarios) / sizeof(scenarios[0]); s++) {
		long n;

		for (n = 1;; n++) {
			struct owner o = { .completions = 0 };
			long left;

			uskb_ubuf_init(&o.ubuf, &ops, scenarios[s].flags);
			uskb_fault_inject(n);
			scenarios[s].fn(&o);
			left = uskb_fault_pending();
			uskb_fault_inject(0);
			uskb_zcopy_put(&o.ubuf); /* the sender's reference */
			if (o.completions != 1) {
				fprintf(stderr, "%s, failing allocation %ld: %d completions\n",
					scenarios[s].name, n, o.completions);
				t_failures++;
			}
			if (!uskb_stats_all_freed()) {
				fprintf(stderr, "%s, failing allocation %ld: leak\n",
					scenarios[s].name, n);
				t_failures++;
			}
			if (memcmp(umem, umem_copy, UMEM)) {
				fprintf(stderr, "%s: user memory written\n", scenarios[s].name);
				t_failures++;
				memcpy(umem, umem_copy, UMEM);
			}
			if (left > 0 || t_failures)
				break; /* this run made fewer than n allocations: all points covered */
		}
		printf("%-32s %3ld allocation points, each failed once\n", scenarios[s].name, n - 1);
		total += n - 1;
	}
	printf("failure injection: %ld points exercised\n", total);
	return t_end("failinject");
}
