/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uskb/uskb.h>

#include <sys/uio.h>

#include "model.h"

#define NSLOTS 8
#define NPAGES 6
#define MAX_PKT 12000

struct slot {
	struct uskb *skb;
	unsigned char *m; /* model bytes */
	unsigned int mlen;
	int extra;	  /* user references taken with uskb_get */
};

#define SKIP                                                                   \
	do {                                                                   \
		M->skipped++;                                                  \
		return;                                                        \
	} while (0)

#define NOWNERS 4
#define UMEM_SIZE 16384

/* a zero-copy owner: its ubuf and what the model expects of it */
struct owner {
	struct uskb_ubuf ubuf; /* first: the callback finds the owner from it */
	struct model *M;
	bool active;	       /* ubuf initialised, completion not yet run */
	bool sender_ref;       /* the sender's reference is still held */
	bool just_completed;   /* checked after the current step */
	int completions;
};

struct model {
	struct model_src *src;
	long skipped;
	struct owner owners[NOWNERS];
	unsigned char *umem, *umem_copy; /* user memory and what it must stay */
	struct slot s[NSLOTS];
	struct uskb_page *pages[NPAGES];
	long op_index;
	int cur_op;
	int failed;
	unsigned char scratch[MAX_PKT * 2 + 64];
};

enum {
	OP_ALLOC, OP_FREE, OP_PUT, OP_PUSH, OP_PULL, OP_PSKB_PULL, OP_TRIM, OP_PSKB_TRIM,
	OP_ADD_FRAG, OP_ADD_ZERO_FRAG, OP_FRAG_LIST, OP_CLONE, OP_COPY, OP_PSKB_COPY,
	OP_EXPAND, OP_COW, OP_COW_HEAD, OP_UNCLONE, OP_UNSHARE, OP_GET, OP_PUT_USER,
	OP_SHARE_CHECK, OP_MAY_PULL, OP_LINEARIZE, OP_COPY_BITS, OP_STORE_BITS, OP_SPLIT,
	OP_COALESCE, OP_HEADER_RELEASE, OP_CHECKSUM, OP_CONDENSE, OP_CSUM_HELP,
	OP_QUEUE, OP_ZC_ATTACH, OP_ZC_PUT, OP_ORPHAN_RX, OP_SKB_ZEROCOPY, NOPS
};

static const char *const names[NOPS] = {
	"alloc", "free", "put", "push", "pull", "pskb_pull", "trim", "pskb_trim",
	"add_rx_frag", "add_zero_frag", "frag_list", "clone", "copy", "pskb_copy",
	"expand_head", "cow", "cow_head", "unclone", "unshare", "get", "put_user",
	"share_check", "may_pull", "linearize", "copy_bits", "store_bits", "split",
	"try_coalesce", "header_release", "checksum", "condense", "checksum_help",
	"queue", "zc_attach", "zc_put", "orphan_frags_rx", "skb_zerocopy",
};

const char *model_op_name(int op)
{
	return op >= 0 && op < NOPS ? names[op] : "?";
}

int model_nops(void)
{
	return NOPS;
}

/* ---- input ---- */

static int src_more(struct model_src *s)
{
	return !s->data || s->pos < s->len;
}

static uint32_t rnd(struct model_src *s)
{
	if (s->data) {
		uint32_t v = 0;
		int i;

		for (i = 0; i < 2; i++)
			v = (v << 8) | (s->pos < s->len ? s->data[s->pos++] : 0);
		return v;
	}
	/* xorshift64* */
	s->rng ^= s->rng >> 12;
	s->rng ^= s->rng << 25;
	s->rng ^= s->rng >> 27;
	return (uint32_t)((s->rng * 0x2545F4914F6CDD1Dull) >> 32);
}

static uint32_t below(struct model *M, uint32_t n)
{
	return n ? rnd(M->src) % n : 0;
}

/* ---- model helpers ---- */

static void fail(struct model *M, int slot, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#include <stdarg.h>
static void fail(struct model *M, int slot, const char *fmt, ...)
{
	va_list ap;

	if (M->failed)
		return;
	M->failed = 1;
	fprintf(stderr, "model: op #%ld (%s) slot %d: ", M->op_index,
		model_op_name(M->cur_op), slot);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void m_set(struct slot *s, const unsigned char *b, unsigned int n)
{
	unsigned char *m = realloc(s->m, n ? n : 1);

	if (!m)
		abort();
	if (n)
		memmove(m, b, n);
	s->m = m;
	s->mlen = n;
}

static void m_insert(struct slot *s, unsigned int at, const unsigned char *b, unsigned int n)
{
	unsigned char *m = realloc(s->m, s->mlen + n + 1);

	if (!m)
		abort();
	memmove(m + at + n, m + at, s->mlen - at);
	memcpy(m + at, b, n);
	s->m = m;
	s->mlen += n;
}

static void m_cut(struct slot *s, unsigned int at, unsigned int n)
{
	memmove(s->m + at, s->m + at + n, s->mlen - at - n);
	s->mlen -= n;
}

static int empty_slot(struct model *M)
{
	int i, start = (int)below(M, NSLOTS);

	for (i = 0; i < NSLOTS; i++)
		if (!M->s[(start + i) % NSLOTS].skb)
			return (start + i) % NSLOTS;
	return -1;
}

static int full_slot(struct model *M)
{
	int i, start = (int)below(M, NSLOTS);

	for (i = 0; i < NSLOTS; i++)
		if (M->s[(start + i) % NSLOTS].skb)
			return (start + i) % NSLOTS;
	return -1;
}

static void rand_bytes(struct model *M, unsigned char *b, unsigned int n)
{
	unsigned int i;
	uint32_t v = rnd(M->src);

	for (i = 0; i < n; i++) {
		b[i] = (unsigned char)(v >> ((i & 3) * 8));
		if ((i & 3) == 3)
			v = v * 1103515245u + 12345u;
	}
}

static void slot_release(struct slot *s)
{
	while (s->extra) {
		uskb_free(s->skb);
		s->extra--;
	}
	uskb_free(s->skb);
	s->skb = NULL;
	s->mlen = 0;
}

/* ---- verification ---- */

static unsigned int fraglist_len(const struct uskb *skb)
{
	const struct uskb *it;
	unsigned int n = 0;

	uskb_walk_frags(skb, it)
		n += it->len;
	return n;
}

static int check_geometry(struct model *M, int idx, const struct uskb *skb, int depth)
{
	const struct uskb_shared_info *sh = uskb_shinfo(skb);
	unsigned int frags = 0, i, dataref;
	const struct uskb *it;

	if (skb->data < skb->head || skb->tail > skb->end ||
	    skb->data + uskb_headlen(skb) != uskb_tail_pointer(skb)) {
		fail(M, idx, "bad head geometry: headroom %u headlen %u tail %u end %u",
		     uskb_headroom(skb), uskb_headlen(skb), skb->tail, skb->end);
		return 1;
	}
	if (sh->nr_frags > USKB_MAX_SKB_FRAGS) {
		fail(M, idx, "nr_frags %u", sh->nr_frags);
		return 1;
	}
	for (i = 0; i < sh->nr_frags; i++) {
		if (!sh->frags[i].len ||
		    sh->frags[i].offset + sh->frags[i].len > uskb_page_size(sh->frags[i].page) ||
		    uskb_page_ref_count(sh->frags[i].page) < 1) {
			fail(M, idx, "bad frag %u", i);
			return 1;
		}
		frags += sh->frags[i].len;
	}
	if (skb->data_len != frags + fraglist_len(skb) || skb->data_len > skb->len) {
		fail(M, idx, "data_len %u != frags %u + frag_list %u", skb->data_len, frags,
		     fraglist_len(skb));
		return 1;
	}
	dataref = atomic_load(&sh->dataref);
	if (!skb->cloned && (dataref & USKB_DATAREF_MASK) != 1) {
		fail(M, idx, "not cloned but dataref %#x", dataref);
		return 1;
	}
	if (atomic_load(&skb->users) < 1) {
		fail(M, idx, "users %d", atomic_load(&skb->users));
		return 1;
	}
	if (depth < 3)
		uskb_walk_frags(skb, it)
			if (check_geometry(M, idx, it, depth + 1))
				return 1;
	return 0;
}

static void verify_slot(struct model *M, int i)
{
	struct slot *s = &M->s[i];

	if (!s->skb)
		return;
	if (s->skb->len != s->mlen) {
		fail(M, i, "len %u, model %u", s->skb->len, s->mlen);
		return;
	}
	if (check_geometry(M, i, s->skb, 0))
		return;
	if (atomic_load(&s->skb->users) != 1 + s->extra) {
		fail(M, i, "users %d, model %d", atomic_load(&s->skb->users), 1 + s->extra);
		return;
	}
	if (uskb_copy_bits(s->skb, 0, M->scratch, (int)s->mlen)) {
		fail(M, i, "copy_bits of the whole packet failed");
		return;
	}
	if (s->mlen && memcmp(M->scratch, s->m, s->mlen)) {
		unsigned int k = 0;

		while (M->scratch[k] == s->m[k])
			k++;
		fail(M, i, "contents differ at byte %u of %u (headlen %u)", k, s->mlen,
		     uskb_headlen(s->skb));
	}
}

static void verify_all(struct model *M)
{
	int i;

	for (i = 0; i < NSLOTS && !M->failed; i++)
		verify_slot(M, i);
}

/* ---- operations ---- */

/*
 * Kernel rule: user memory that must be copied out before sharing (a tap
 * ubuf, no DONT_ORPHAN) cannot be copied while the skb is shared — clone
 * and pskb_copy then fail (-EINVAL). The model keeps out of that corner.
 */
static bool unshareable_zc(const struct uskb *skb)
{
	return uskb_zcopy(skb) && !(uskb_shinfo(skb)->flags & USKB_SKBFL_DONT_ORPHAN) &&
	       uskb_shared(skb);
}

static bool writable(struct slot *s)
{
	return s->extra == 0; /* a shared skb must not be changed (kernel rule) */
}

/*
 * Heads grow with every expand (kmalloc classes double, as in the kernel);
 * stop growing them past 64 KiB so the run stays bounded.
 */
static bool may_grow(struct slot *s)
{
	return uskb_end_offset(s->skb) < 65536;
}

static void op_alloc(struct model *M)
{
	int i = empty_slot(M);
	unsigned int size, res, n;
	struct slot *s;

	if (i < 0)
		SKIP;
	s = &M->s[i];
	size = below(M, 700);
	s->skb = below(M, 4) ? uskb_alloc(size) : uskb_alloc_fclone(size);
	if (!s->skb) {
		fail(M, i, "alloc(%u) failed", size);
		SKIP;
	}
	if (uskb_tailroom(s->skb) < (int)size)
		fail(M, i, "alloc(%u) gave tailroom %d", size, uskb_tailroom(s->skb));
	res = below(M, size + 1);
	uskb_reserve(s->skb, (int)res);
	n = below(M, (unsigned int)uskb_tailroom(s->skb) + 1);
	if (n > MAX_PKT)
		n = MAX_PKT;
	rand_bytes(M, M->scratch, n);
	uskb_put_data(s->skb, M->scratch, n);
	m_set(s, M->scratch, n);
	s->extra = 0;
}

static void op_put(struct model *M, int i, struct slot *s)
{
	unsigned int n;

	/* (other ops may leave a packet past MAX_PKT: then it does not grow here) */
	if (!writable(s) || uskb_is_nonlinear(s->skb) || s->mlen >= MAX_PKT || uskb_unclone(s->skb))
		SKIP;
	n = below(M, (unsigned int)uskb_tailroom(s->skb) + 1);
	if (s->mlen + n > MAX_PKT)
		n = MAX_PKT - s->mlen;
	rand_bytes(M, M->scratch, n);
	if (below(M, 2)) {
		uskb_put_data(s->skb, M->scratch, n);
	} else {
		uskb_put_zero(s->skb, n);
		memset(M->scratch, 0, n);
	}
	m_insert(s, s->mlen, M->scratch, n);
	(void)i;
}

static void op_push(struct model *M, int i, struct slot *s)
{
	unsigned int n = below(M, 200);

	if (!writable(s) || s->mlen + n > MAX_PKT || !may_grow(s))
		SKIP;
	if (uskb_cow(s->skb, n)) {
		fail(M, i, "cow failed");
		SKIP;
	}
	if (uskb_headroom(s->skb) < n || uskb_cloned(s->skb)) {
		fail(M, i, "cow left headroom %u cloned %d", uskb_headroom(s->skb),
		     uskb_cloned(s->skb));
		SKIP;
	}
	rand_bytes(M, M->scratch, n);
	memcpy(uskb_push(s->skb, n), M->scratch, n);
	m_insert(s, 0, M->scratch, n);
}

static void op_pull(struct model *M, int i, struct slot *s)
{
	unsigned int n = below(M, uskb_headlen(s->skb) + 1);
	unsigned char *old = s->skb->data;

	if (!writable(s))
		SKIP;
	if (uskb_pull(s->skb, n) != old + n)
		fail(M, i, "pull returned a wrong pointer");
	m_cut(s, 0, n);
	if (uskb_pull(s->skb, s->skb->len + 1) != NULL)
		fail(M, i, "pull past len did not return NULL");
}

static void op_pskb_pull(struct model *M, int i, struct slot *s)
{
	unsigned int n = below(M, s->mlen + 1);

	if (!writable(s))
		SKIP;
	if (!uskb_pskb_pull(s->skb, n)) {
		fail(M, i, "pskb_pull(%u) failed", n);
		SKIP;
	}
	m_cut(s, 0, n);
}

static void op_trim(struct model *M, int i, struct slot *s)
{
	unsigned int n;

	if (!writable(s) || uskb_is_nonlinear(s->skb))
		SKIP;
	n = below(M, s->mlen + 1);
	uskb_trim(s->skb, n);
	s->mlen = n;
	(void)i;
}

static void op_pskb_trim(struct model *M, int i, struct slot *s)
{
	unsigned int n;

	if (!writable(s))
		SKIP;
	n = below(M, s->mlen + 1);
	if (uskb_pskb_trim(s->skb, n)) {
		fail(M, i, "pskb_trim(%u) failed", n);
		SKIP;
	}
	if (n < s->mlen)
		s->mlen = n;
}

static void op_add_frag(struct model *M, int i, struct slot *s, bool zero)
{
	struct uskb_page *pg = zero ? uskb_zero_page() : M->pages[below(M, NPAGES)];
	struct uskb_shared_info *sh;
	unsigned int off, len;

	/* a zero-copy skb's frags belong to its ubuf (managed): add none */
	if (!writable(s) || uskb_has_frag_list(s->skb) || s->mlen > MAX_PKT - 4096 ||
	    uskb_zcopy(s->skb))
		SKIP;
	if (uskb_unclone(s->skb)) {
		fail(M, i, "unclone failed");
		SKIP;
	}
	sh = uskb_shinfo(s->skb);
	if (sh->nr_frags >= USKB_MAX_SKB_FRAGS)
		SKIP;
	off = below(M, USKB_PAGE_SIZE - 1);
	len = 1 + below(M, USKB_PAGE_SIZE - off);
	uskb_page_get(pg);
	uskb_add_rx_frag(s->skb, sh->nr_frags, pg, (int)off, (int)len, len);
	m_insert(s, s->mlen, (unsigned char *)uskb_page_address(pg) + off, len);
}

static void op_frag_list(struct model *M, int i, struct slot *s)
{
	int j = full_slot(M);
	struct slot *c;

	if (j < 0 || j == i || !writable(s))
		SKIP;
	c = &M->s[j];
	/* a frag_list member gets shared with its parent's clones: no user memory there */
	if (!writable(c) || uskb_has_frag_list(c->skb) || !c->mlen || uskb_zcopy(c->skb) ||
	    s->mlen + c->mlen > MAX_PKT)
		SKIP;
	if (uskb_unclone(s->skb)) {
		fail(M, i, "unclone failed");
		SKIP;
	}
	/* a frag_list chain shared with a copy (members with users > 1) is not ours to extend */
	{
		struct uskb *it;

		uskb_walk_frags(s->skb, it)
			if (uskb_shared(it))
				SKIP;
	}
	uskb_append_frag_list(s->skb, c->skb);
	m_insert(s, s->mlen, c->m, c->mlen);
	c->skb = NULL;
	c->mlen = 0;
}

static void op_clone(struct model *M, int i, struct slot *s)
{
	int j = empty_slot(M);
	struct uskb *n;

	if (j < 0 || unshareable_zc(s->skb))
		SKIP;
	n = uskb_clone(s->skb);
	if (!n) {
		fail(M, i, "clone failed");
		SKIP;
	}
	if (n->head != s->skb->head || !uskb_cloned(n) || !uskb_cloned(s->skb))
		fail(M, i, "clone does not share the head");
	M->s[j].skb = n;
	M->s[j].extra = 0;
	m_set(&M->s[j], s->m, s->mlen);
}

static void op_copy(struct model *M, int i, struct slot *s, bool pskb)
{
	int j = empty_slot(M), f;
	struct uskb *n;
	const struct uskb_shared_info *sh = uskb_shinfo(s->skb);

	if (j < 0 || !may_grow(s) || (pskb && unshareable_zc(s->skb)))
		SKIP;
	n = pskb ? uskb_pskb_copy(s->skb) : uskb_copy(s->skb);
	if (!n) {
		fail(M, i, "copy failed: %s (end %u, data_len %u)", strerror(errno),
		     uskb_end_offset(s->skb), s->skb->data_len);
		SKIP;
	}
	if (n->head == s->skb->head || uskb_cloned(n))
		fail(M, i, "copy shares the head");
	if (uskb_headroom(n) != uskb_headroom(s->skb))
		fail(M, i, "copy changed the headroom");
	if (pskb) {
		/* frags and frag_list are shared, not copied */
		if (uskb_shinfo(n)->nr_frags != sh->nr_frags ||
		    uskb_shinfo(n)->frag_list != sh->frag_list)
			fail(M, i, "pskb_copy did not share the paged data");
		for (f = 0; f < sh->nr_frags; f++)
			if (uskb_shinfo(n)->frags[f].page != sh->frags[f].page)
				fail(M, i, "pskb_copy frag %d differs", f);
	} else if (uskb_is_nonlinear(n)) {
		fail(M, i, "copy is not linear");
	}
	M->s[j].skb = n;
	M->s[j].extra = 0;
	m_set(&M->s[j], s->m, s->mlen);
}

static void op_expand(struct model *M, int i, struct slot *s)
{
	int nhead = (int)below(M, 300), ntail = (int)below(M, 300);
	unsigned int hr = uskb_headroom(s->skb);

	if (!writable(s) || !may_grow(s))
		SKIP;
	if (uskb_expand_head(s->skb, nhead, ntail)) {
		fail(M, i, "expand_head failed");
		SKIP;
	}
	if (uskb_headroom(s->skb) != hr + (unsigned int)nhead || uskb_cloned(s->skb))
		fail(M, i, "expand_head: headroom %u want %u", uskb_headroom(s->skb),
		     hr + (unsigned int)nhead);
}

static void op_cow(struct model *M, int i, struct slot *s, bool head)
{
	unsigned int hr = below(M, 256);

	if (!writable(s) || !may_grow(s))
		SKIP;
	if ((head ? uskb_cow_head(s->skb, hr) : uskb_cow(s->skb, hr)) ||
	    uskb_headroom(s->skb) < hr || (head ? uskb_header_cloned(s->skb) : uskb_cloned(s->skb)))
		fail(M, i, "cow%s(%u) failed", head ? "_head" : "", hr);
}

static void op_unshare(struct model *M, int i, struct slot *s)
{
	bool was = uskb_cloned(s->skb);
	struct uskb *old = s->skb;

	if (!writable(s) || !may_grow(s))
		SKIP;
	s->skb = uskb_unshare(s->skb);
	if (!s->skb) {
		fail(M, i, "unshare failed");
		SKIP;
	}
	if (was == (s->skb == old) || uskb_cloned(s->skb))
		fail(M, i, "unshare: cloned %d, replaced %d", was, s->skb != old);
}

static void op_share_check(struct model *M, int i, struct slot *s)
{
	struct uskb *old = s->skb, *n;

	if (!s->extra || unshareable_zc(s->skb))
		SKIP;
	n = uskb_share_check(old);
	if (!n || n == old) {
		fail(M, i, "share_check did not clone a shared skb");
		SKIP;
	}
	/* the original lost one user; the slot now owns the private clone */
	s->extra--;
	{
		int j = empty_slot(M);

		if (j < 0) {
			uskb_free(n);
			SKIP;
		}
		M->s[j].skb = n;
		M->s[j].extra = 0;
		m_set(&M->s[j], s->m, s->mlen);
	}
}

static void op_may_pull(struct model *M, int i, struct slot *s)
{
	unsigned int n = below(M, s->mlen + 2);

	if (!writable(s))
		SKIP;
	if (uskb_may_pull(s->skb, n) != (n <= s->mlen))
		fail(M, i, "may_pull(%u) of %u bytes", n, s->mlen);
	else if (n <= s->mlen && uskb_headlen(s->skb) < n)
		fail(M, i, "may_pull(%u) left headlen %u", n, uskb_headlen(s->skb));
}

static void op_linearize(struct model *M, int i, struct slot *s)
{
	if (!writable(s))
		SKIP;
	if (uskb_linearize(s->skb) || uskb_is_nonlinear(s->skb) || uskb_has_frag_list(s->skb) ||
	    uskb_shinfo(s->skb)->nr_frags)
		fail(M, i, "linearize failed");
}

static void op_copy_bits(struct model *M, int i, struct slot *s)
{
	unsigned int off = below(M, s->mlen + 1), n = below(M, s->mlen - off + 1);

	if (uskb_copy_bits(s->skb, (int)off, M->scratch, (int)n) ||
	    (n && memcmp(M->scratch, s->m + off, n)))
		fail(M, i, "copy_bits(%u, %u) wrong", off, n);
	if (uskb_copy_bits(s->skb, (int)off, M->scratch, (int)(s->mlen - off + 1)) != -EFAULT)
		fail(M, i, "copy_bits past the end did not fault");
}

static void op_store_bits(struct model *M, int i, struct slot *s)
{
	unsigned int end = below(M, s->mlen + 1), off = below(M, end + 1);

	if (!writable(s))
		SKIP;
	if (uskb_ensure_writable(s->skb, end)) {
		fail(M, i, "ensure_writable(%u) failed", end);
		SKIP;
	}
	if (uskb_headlen(s->skb) < end) {
		fail(M, i, "ensure_writable(%u) left headlen %u", end, uskb_headlen(s->skb));
		SKIP;
	}
	rand_bytes(M, M->scratch, end - off);
	if (uskb_store_bits(s->skb, (int)off, M->scratch, (int)(end - off))) {
		fail(M, i, "store_bits failed");
		SKIP;
	}
	memcpy(s->m + off, M->scratch, end - off);
}

static void op_split(struct model *M, int i, struct slot *s)
{
	int j = empty_slot(M);
	unsigned int len, pos;
	struct uskb *n;

	if (j < 0 || !writable(s) || uskb_has_frag_list(s->skb) || uskb_unclone(s->skb))
		SKIP;
	len = below(M, s->mlen + 1);
	pos = uskb_headlen(s->skb);
	n = uskb_alloc(len < pos ? pos - len : 0);
	if (!n) {
		fail(M, i, "alloc failed");
		SKIP;
	}
	uskb_split(s->skb, n, len);
	M->s[j].skb = n;
	M->s[j].extra = 0;
	m_set(&M->s[j], s->m + len, s->mlen - len);
	s->mlen = len;
}

static void op_coalesce(struct model *M, int i, struct slot *s)
{
	int j = full_slot(M), delta;
	struct slot *f;
	bool stolen;

	if (j < 0 || j == i || !writable(s))
		SKIP;
	f = &M->s[j];
	if (!writable(f) || s->mlen + f->mlen > MAX_PKT)
		SKIP;
	if (!uskb_try_coalesce(s->skb, f->skb, &stolen, &delta))
		SKIP;
	m_insert(s, s->mlen, f->m, f->mlen);
	uskb_free_partial(f->skb, stolen);
	f->skb = NULL;
	f->mlen = 0;
}

static void op_checksum(struct model *M, int i, struct slot *s)
{
	unsigned int off = below(M, s->mlen + 1), n = below(M, s->mlen - off + 1);
	uskb_wsum seed = rnd(M->src);

	if (uskb_csum_fold(uskb_checksum(s->skb, (int)off, (int)n, seed)) !=
	    uskb_csum_fold(uskb_csum_partial_ref(s->m + off, n, seed)))
		fail(M, i, "checksum(%u, %u) differs from the reference", off, n);
}

static void op_csum_help(struct model *M, int i, struct slot *s)
{
	unsigned int hl, start, off;
	uskb_sum16 want;

	if (!writable(s) || uskb_headlen(s->skb) < 2)
		SKIP;
	hl = uskb_headlen(s->skb);
	start = below(M, hl - 1);
	off = below(M, hl - start - 1);
	if (uskb_headroom(s->skb) + start >= 0xffff) {
		/* csum_start is 16 bits: the kernel refuses such offsets */
		if (uskb_partial_csum_set(s->skb, (uint16_t)start, (uint16_t)off))
			fail(M, i, "partial_csum_set accepted csum_start %u", uskb_headroom(s->skb) + start);
		SKIP;
	}
	if (!uskb_partial_csum_set(s->skb, (uint16_t)start, (uint16_t)off)) {
		fail(M, i, "partial_csum_set(%u, %u) refused, headlen %u", start, off, hl);
		SKIP;
	}
	want = uskb_csum_fold(uskb_csum_partial_ref(s->m + start, s->mlen - start, 0));
	if (!want)
		want = 0xffff;
	if (uskb_checksum_help(s->skb)) {
		fail(M, i, "checksum_help failed");
		SKIP;
	}
	memcpy(s->m + start + off, &want, 2);
	if (s->skb->ip_summed != USKB_CHECKSUM_NONE)
		fail(M, i, "checksum_help left ip_summed %d", s->skb->ip_summed);
}

static void op_queue(struct model *M)
{
	struct uskb_head q;
	struct uskb *order[NSLOTS];
	int i, n = 0;

	uskb_queue_head_init(&q);
	for (i = 0; i < NSLOTS; i++)
		if (M->s[i].skb && !M->s[i].skb->next && !M->s[i].skb->prev) {
			order[n++] = M->s[i].skb;
			if (i & 1)
				uskb_queue_tail(&q, M->s[i].skb);
			else
				uskb_queue_head(&q, M->s[i].skb);
		}
	if (uskb_queue_len(&q) != (uint32_t)n)
		fail(M, -1, "queue length %u, want %d", uskb_queue_len(&q), n);
	for (i = 0; i < n; i++) {
		struct uskb *skb = (i & 1) ? uskb_dequeue_tail(&q) : uskb_dequeue(&q);
		int k, found = 0;

		for (k = 0; k < n; k++)
			found |= order[k] == skb;
		if (!found)
			fail(M, -1, "dequeued an unknown skb");
	}
	if (!uskb_queue_empty(&q) || uskb_dequeue(&q))
		fail(M, -1, "queue not empty after dequeuing all");
}

/* ---- zero-copy ---- */

/* each owner lends its own quarter of the user memory */
#define OWNER_MEM (UMEM_SIZE / NOWNERS)

static unsigned char *owner_mem(struct model *M, const struct owner *o)
{
	return M->umem + (o - M->owners) * OWNER_MEM;
}

/* does @skb (or its frag_list) still point into the memory of owner @o? */
static bool points_into_user(struct model *M, const struct owner *o, const struct uskb *skb,
			     int depth)
{
	const struct uskb_shared_info *sh = uskb_shinfo(skb);
	const unsigned char *lo = owner_mem(M, o);
	const struct uskb *it;
	int i;

	for (i = 0; i < sh->nr_frags; i++) {
		const unsigned char *a = uskb_frag_address(&sh->frags[i]);

		if (a >= lo && a < lo + OWNER_MEM)
			return true;
	}
	if (depth < 3)
		uskb_walk_frags(skb, it)
			if (points_into_user(M, o, it, depth + 1))
				return true;
	return false;
}

static void zc_complete(struct uskb *skb, struct uskb_ubuf *uarg, bool success)
{
	struct owner *o = (struct owner *)uarg;
	struct model *M = o->M;
	int i;

	(void)skb;
	(void)success;
	o->completions++;
	if (o->completions != 1)
		fail(M, -1, "owner %ld completed %d times", (long)(o - M->owners), o->completions);
	if (o->sender_ref)
		fail(M, -1, "owner completed while its sender still holds a reference");
	o->active = false;
	o->just_completed = true; /* the step may still be freeing the skb in hand */
	(void)i;
}

/* After a step: no live skb may point into the memory of an owner that completed. */
static void check_completed(struct model *M)
{
	int k, i;

	for (k = 0; k < NOWNERS; k++) {
		struct owner *o = &M->owners[k];

		if (!o->just_completed)
			continue;
		o->just_completed = false;
		for (i = 0; i < NSLOTS; i++)
			if (M->s[i].skb && points_into_user(M, o, M->s[i].skb, 0))
				fail(M, i, "a frag still points into user memory after the completion");
	}
}

static const struct uskb_ubuf_ops zc_ops = { .complete = zc_complete };
static void check_completed(struct model *M);

static void op_zc_attach(struct model *M)
{
	int j = empty_slot(M), k, nseg, n;
	struct iovec iov[3];
	struct owner *o = NULL;
	unsigned int total = 0, copy_len;
	struct uskb *skb;

	if (j < 0)
		SKIP;
	/* an owner still sending, or a fresh one */
	for (k = 0; k < NOWNERS && !o; k++)
		if (M->owners[k].active && M->owners[k].sender_ref && below(M, 2))
			o = &M->owners[k];
	for (k = 0; k < NOWNERS && !o; k++)
		if (!M->owners[k].active) {
			o = &M->owners[k];
			uskb_ubuf_init(&o->ubuf, &zc_ops,
				       below(M, 2) ? USKB_SKBFL_ZEROCOPY_FRAG :
						     USKB_SKBFL_ZEROCOPY_FRAG | USKB_SKBFL_DONT_ORPHAN);
			o->active = true;
			o->sender_ref = true;
			o->completions = 0;
		}
	if (!o)
		SKIP;
	nseg = 1 + (int)below(M, 3);
	for (k = 0; k < nseg; k++) {
		unsigned int off = below(M, OWNER_MEM - 1), len = 1 + below(M, 3000);

		if (off + len > OWNER_MEM)
			len = OWNER_MEM - off;
		iov[k].iov_base = owner_mem(M, o) + off;
		iov[k].iov_len = len;
		total += len;
	}
	skb = uskb_alloc(200 + below(M, 200));
	uskb_reserve(skb, (int)below(M, 64));
	copy_len = below(M, 2) ? USKB_ZC_GOODCOPY_LEN : below(M, 100);
	if ((unsigned int)uskb_tailroom(skb) < total && (unsigned int)uskb_tailroom(skb) < copy_len + 1) {
		uskb_free(skb);
		SKIP;
	}
	n = uskb_zerocopy_attach(skb, iov, nseg, &o->ubuf, copy_len);
	if (n == -EMSGSIZE) { /* small skb, copy needed: fine, nothing changed */
		uskb_free(skb);
		SKIP;
	}
	if (n) {
		fail(M, j, "zerocopy_attach: %d", n);
		uskb_free(skb);
		return;
	}
	M->s[j].skb = skb;
	M->s[j].extra = 0;
	M->s[j].mlen = 0;
	for (k = 0; k < nseg; k++)
		m_insert(&M->s[j], M->s[j].mlen, iov[k].iov_base, (unsigned int)iov[k].iov_len);
}

static void op_zc_put(struct model *M)
{
	int k, start = (int)below(M, NOWNERS);

	for (k = 0; k < NOWNERS; k++) {
		struct owner *o = &M->owners[(start + k) % NOWNERS];

		if (o->active && o->sender_ref) {
			o->sender_ref = false;
			uskb_zcopy_put(&o->ubuf);
			return;
		}
	}
	SKIP;
}

static void op_orphan_rx(struct model *M, int i, struct slot *s)
{
	if (!writable(s) || uskb_cloned(s->skb) || !uskb_zcopy(s->skb))
		SKIP;
	if (uskb_orphan_frags_rx(s->skb)) {
		fail(M, i, "orphan_frags_rx failed");
		return;
	}
	if (uskb_zcopy(s->skb))
		fail(M, i, "orphan_frags_rx left the skb zero-copy");
}

static void op_skb_zerocopy(struct model *M, int i, struct slot *s)
{
	int j = empty_slot(M), hlen, hdr = (int)below(M, 40);
	struct uskb *to;
	unsigned int len;

	if (j < 0 || !writable(s) || !s->mlen || uskb_has_frag_list(s->skb))
		SKIP;
	/* room for the copied part; the frags go by reference */
	len = 1 + below(M, s->mlen);
	hlen = (int)uskb_zerocopy_headlen(s->skb);
	if (hlen > (int)len)
		hlen = (int)len;
	if (!s->skb->head_frag && !hlen)
		SKIP;
	if (uskb_shinfo(s->skb)->nr_frags + 1 > USKB_MAX_SKB_FRAGS)
		SKIP;
	to = uskb_alloc((unsigned int)(hdr + hlen));
	uskb_put_zero(to, (unsigned int)hdr);
	if (uskb_zerocopy(to, s->skb, (int)len, hlen)) {
		fail(M, i, "skb_zerocopy(%u, %d) failed", len, hlen);
		uskb_free(to);
		return;
	}
	M->s[j].skb = to;
	M->s[j].extra = 0;
	memset(M->scratch, 0, (size_t)hdr);
	m_set(&M->s[j], M->scratch, (unsigned int)hdr);
	m_insert(&M->s[j], (unsigned int)hdr, s->m, len);
}

static void step(struct model *M)
{
	int op = (int)below(M, NOPS), i;
	struct slot *s;

	M->cur_op = op;
	if (op == OP_ALLOC) {
		op_alloc(M);
		return;
	}
	if (op == OP_QUEUE) {
		op_queue(M);
		return;
	}
	if (op == OP_ZC_ATTACH) {
		op_zc_attach(M);
		return;
	}
	if (op == OP_ZC_PUT) {
		op_zc_put(M);
		return;
	}
	i = full_slot(M);
	if (i < 0) {
		M->cur_op = OP_ALLOC;
		op_alloc(M);
		return;
	}
	s = &M->s[i];
	switch (op) {
	case OP_FREE:
		if (below(M, 2))
			slot_release(s);
		else {
			while (s->extra--)
				uskb_free(s->skb);
			uskb_consume(s->skb);
			s->skb = NULL;
			s->extra = 0;
		}
		break;
	case OP_PUT: op_put(M, i, s); break;
	case OP_PUSH: op_push(M, i, s); break;
	case OP_PULL: op_pull(M, i, s); break;
	case OP_PSKB_PULL: op_pskb_pull(M, i, s); break;
	case OP_TRIM: op_trim(M, i, s); break;
	case OP_PSKB_TRIM: op_pskb_trim(M, i, s); break;
	case OP_ADD_FRAG: op_add_frag(M, i, s, false); break;
	case OP_ADD_ZERO_FRAG: op_add_frag(M, i, s, true); break;
	case OP_FRAG_LIST: op_frag_list(M, i, s); break;
	case OP_CLONE: op_clone(M, i, s); break;
	case OP_COPY: op_copy(M, i, s, false); break;
	case OP_PSKB_COPY: op_copy(M, i, s, true); break;
	case OP_EXPAND: op_expand(M, i, s); break;
	case OP_COW: op_cow(M, i, s, false); break;
	case OP_COW_HEAD: op_cow(M, i, s, true); break;
	case OP_UNCLONE:
		if (writable(s) && (uskb_unclone(s->skb) || uskb_cloned(s->skb)))
			fail(M, i, "unclone failed");
		break;
	case OP_UNSHARE: op_unshare(M, i, s); break;
	case OP_GET:
		if (s->extra < 3) {
			uskb_get(s->skb);
			s->extra++;
		}
		break;
	case OP_PUT_USER:
		if (s->extra) {
			uskb_free(s->skb);
			s->extra--;
		}
		break;
	case OP_SHARE_CHECK: op_share_check(M, i, s); break;
	case OP_MAY_PULL: op_may_pull(M, i, s); break;
	case OP_LINEARIZE: op_linearize(M, i, s); break;
	case OP_COPY_BITS: op_copy_bits(M, i, s); break;
	case OP_STORE_BITS: op_store_bits(M, i, s); break;
	case OP_SPLIT: op_split(M, i, s); break;
	case OP_COALESCE: op_coalesce(M, i, s); break;
	case OP_HEADER_RELEASE:
		/*
		 * Kernel contract: the header owner releases its own, never-cloned
		 * skb (TCP's write queue); clones then own the bytes below its data.
		 */
		if (!s->skb->nohdr && !s->skb->cloned && writable(s))
			uskb_header_release(s->skb);
		break;
	case OP_CHECKSUM: op_checksum(M, i, s); break;
	case OP_CONDENSE:
		if (writable(s))
			uskb_condense(s->skb);
		break;
	case OP_CSUM_HELP: op_csum_help(M, i, s); break;
	case OP_ORPHAN_RX: op_orphan_rx(M, i, s); break;
	case OP_SKB_ZEROCOPY: op_skb_zerocopy(M, i, s); break;
	}
}

void model_run(struct model_src *src, long max_ops, int verify_every, struct model_result *res)
{
	struct model *M = calloc(1, sizeof(*M));
	int i;

	if (!M)
		abort();
	M->src = src;
	memset(res, 0, sizeof(*res));
	M->umem = malloc(UMEM_SIZE);
	M->umem_copy = malloc(UMEM_SIZE);
	if (!M->umem || !M->umem_copy)
		abort();
	rand_bytes(M, M->umem, UMEM_SIZE);
	memcpy(M->umem_copy, M->umem, UMEM_SIZE);
	for (i = 0; i < NOWNERS; i++)
		M->owners[i].M = M;
	for (i = 0; i < NPAGES; i++) {
		M->pages[i] = uskb_page_alloc(0);
		if (!M->pages[i])
			abort();
		rand_bytes(M, uskb_page_address(M->pages[i]), USKB_PAGE_SIZE);
	}
	for (M->op_index = 0; M->op_index < max_ops && src_more(src) && !M->failed;
	     M->op_index++) {
		long before = M->skipped;

		step(M);
		check_completed(M);
		res->counts[M->cur_op]++;
		if (M->skipped != before)
			res->skipped[M->cur_op]++;
		if (verify_every <= 1 || M->op_index % verify_every == 0)
			verify_all(M);
		/* user memory is never written (checked now and then: it is 16 KiB) */
		if (M->op_index % 512 == 0 && memcmp(M->umem, M->umem_copy, UMEM_SIZE))
			fail(M, -1, "user memory was written");
	}
	verify_all(M);
	res->ops = M->op_index;
	for (i = 0; i < NSLOTS; i++) {
		if (M->s[i].skb)
			slot_release(&M->s[i]);
		free(M->s[i].m);
	}
	/* every owner completes exactly once, after its sender lets go */
	for (i = 0; i < NOWNERS; i++) {
		struct owner *o = &M->owners[i];

		if (o->active && o->sender_ref) {
			o->sender_ref = false;
			uskb_zcopy_put(&o->ubuf);
		}
		if (o->active)
			fail(M, -1, "owner %d never completed", i);
	}
	if (memcmp(M->umem, M->umem_copy, UMEM_SIZE))
		fail(M, -1, "user memory was written");
	res->failed = M->failed;
	free(M->umem);
	free(M->umem_copy);
	for (i = 0; i < NPAGES; i++) {
		if (uskb_page_ref_count(M->pages[i]) != 1 && !res->failed) {
			fprintf(stderr, "model: page %d has %d references after all skbs were freed\n",
				i, uskb_page_ref_count(M->pages[i]));
			res->failed = 1;
		}
		uskb_page_put(M->pages[i]);
	}
	free(M);
}
