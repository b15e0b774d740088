/* SPDX-License-Identifier: MIT */
/*
 * skb allocation: __alloc_skb, alloc_skb from the thread's ready pairs and
 * caches, netdev_alloc_skb with page_frag heads, and bulk allocation.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "skb/priv.h"

/*
 * Zero a small fixed-size prefix with plain 16-byte stores: for ~150 bytes
 * "rep stosb" (what memset becomes) costs several ns to start, and its
 * stores do not forward to the loads that follow.
 */
typedef uint64_t uskb_v16 __attribute__((vector_size(16), aligned(8), may_alias));
typedef uint64_t uskb_v32 __attribute__((vector_size(32), aligned(8), may_alias));

static inline __attribute__((always_inline)) void zero_prefix(void *p, size_t n)
{
	uskb_v32 *v = p, z = { 0, 0, 0, 0 };
	char *q = (char *)p + (n & ~(size_t)31);

	/*
	 * n is a constant: these fold to n / 32 plain stores, never a memset
	 * call; 32 bytes wide where the target has them, two 16-byte stores
	 * each where not.
	 */
#define Z32(i)                                                                 \
	if (n >= (i + 1) * 32)                                                 \
		v[i] = z;
	Z32(0) Z32(1) Z32(2) Z32(3) Z32(4)
#undef Z32
	_Static_assert(offsetof(struct uskb, tail) <= 160, "zero_prefix covers 160 bytes");
	if (n & 16) {
		*(uskb_v16 *)q = (uskb_v16){ 0, 0 };
		q += 16;
	}
	if (n & 8)
		*(uint64_t *)q = 0;
}

_Static_assert(offsetof(struct uskb, tail) % 8 == 0, "zero_prefix works in 8s");
_Static_assert(offsetof(struct uskb_shared_info, dataref) % 8 == 0, "zero_prefix works in 8s");

/* 8-byte stores over fields of different types (the layout is asserted) */
typedef uint64_t uskb_u64a __attribute__((may_alias, aligned(8)));

#define OFF(f) offsetof(struct uskb, f)
/* the words build_around() writes whole */
_Static_assert(OFF(tail) == 144 && OFF(end) == 148 && OFF(head) == 152 && OFF(data) == 160 &&
		       OFF(truesize) == 168 && OFF(users) == 172,
	       "build_around's word layout");
_Static_assert(OFF(transport_header) == 122 && OFF(network_header) == 124 &&
		       OFF(mac_header) == 126,
	       "build_around's header word");
_Static_assert(OFF(destructor) == 128 && OFF(alloc_cpu) == 136 && OFF(__shinfo_clean) == 138 &&
		       OFF(__kbuf_class) == 141 && OFF(queue_mapping) == 142,
	       "build_around's free-path word: the flag byte is 140");
_Static_assert(offsetof(struct uskb_shared_info, dataref) == 32 &&
		       offsetof(struct uskb_shared_info, xdp_frags_size) == 36 &&
		       offsetof(struct uskb_shared_info, destructor_arg) == 40,
	       "init_shinfo's last 16 bytes");
#undef OFF

/* the flag byte (140) with only head_frag set: a constant once folded */
static inline __attribute__((always_inline)) uint64_t head_frag_byte(void)
{
	union {
		struct uskb s;
		uint8_t b[sizeof(struct uskb)];
	} u;

	memset(&u, 0, sizeof(u));
	u.s.head_frag = 1;
	return u.b[140];
}

/*
 * The shared info's first line: the prefix zeroed, dataref 1, no
 * xdp_frags_size, no destructor_arg (the last 16 bytes in one store).
 */
static inline __attribute__((always_inline)) void init_shinfo(struct uskb_shared_info *shinfo)
{
	const uskb_v16 rest = { 1, 0 }; /* little-endian: dataref = 1 */

	zero_prefix(shinfo, offsetof(struct uskb_shared_info, dataref));
	*(uskb_v16 *)&shinfo->dataref = rest;
}

/* build_around()'s word at 136: owner, the clean mark, the flag byte, class; queue_mapping 0 */
static inline __attribute__((always_inline)) uint64_t word136_of(int owner, bool head_frag,
								  unsigned int __kbuf_class)
{
	return (uint64_t)(uint16_t)owner | (uint64_t)1 << 16 |
	       (head_frag ? head_frag_byte() << 32 : 0) | (uint64_t)(uint8_t)__kbuf_class << 40;
}

/* ... at 144: tail 0, end @size; at 168: truesize, users 1 */
static inline __attribute__((always_inline)) uint64_t word144_of(unsigned int size)
{
	return (uint64_t)size << 32;
}

static inline __attribute__((always_inline)) uint64_t word168_of(unsigned int size)
{
	return (uint64_t)USKB_TRUESIZE(size) | (uint64_t)1 << 32;
}

/*
 * __build_skb_around(): set up a zeroed shell around head @data from the
 * words at 128, 144 and 168 (word136_of() and the others: made here, or
 * kept in a ready list); @head_kept: the shell holds @data as its head
 * already (a ready pair). The prefix is written in 16-byte stores, the one
 * at 112 already holding the unset mac and transport headers, the one at
 * 128 the free path's destructor and word; the allocator's words after it
 * in 8-byte stores.
 */
static inline __attribute__((always_inline)) void build_words(struct uskb *skb,
							       unsigned char *data, uskb_v16 w128,
							       uint64_t w144, uint64_t w168,
							       bool shinfo_clean, bool head_kept)
{
	/* bytes 112..127: transport (122) and mac (126) headers USKB_HEADER_UNSET */
	const uskb_v16 hdrs = { 0, (uint64_t)USKB_HEADER_UNSET << 16 |
					   (uint64_t)USKB_HEADER_UNSET << 48 };
	uskb_u64a *w = (uskb_u64a *)skb;

	zero_prefix(skb, 112);
	((uskb_v16 *)skb)[7] = hdrs;
	((uskb_v16 *)skb)[8] = w128; /* no destructor; the free path's word */
	w[144 / 8] = w144;
	/* a ready pair's shell still holds its head: one store fewer */
	if (!head_kept)
		w[152 / 8] = (uint64_t)(uintptr_t)data; /* head */
	w[160 / 8] = (uint64_t)(uintptr_t)data; /* data */
	w[168 / 8] = w168;
	/* a ready pair's clean shared info is as init_shinfo() left it: no line to write */
	if (!shinfo_clean)
		init_shinfo((struct uskb_shared_info *)(data + (w144 >> 32)));
}

static inline __attribute__((always_inline)) void
build_around(struct uskb *skb, unsigned char *data, unsigned int size, int owner,
	     bool head_frag, unsigned int __kbuf_class, bool shinfo_clean, bool head_kept)
{
	build_words(skb, data, (uskb_v16){ 0, word136_of(owner, head_frag, __kbuf_class) },
		    word144_of(size), word168_of(size), shinfo_clean, head_kept);
}

void __uskb_ready_words(struct uskb_tls *t)
{
	int c;

	for (c = 0; c < USKB_KBUF_CLASSES; c++) {
		unsigned int size = USKB_WITH_OVERHEAD(uskb_kbuf_class_size(c));

		t->ready[c].zero128 = 0;
		t->ready[c].word136 = word136_of(t->id, false, (unsigned int)c + 1);
		t->ready[c].word144 = word144_of(size);
		t->ready[c].word168 = word168_of(size);
	}
}

static struct uskb *alloc_fclone_shell(struct uskb_tls *t)
{
	struct uskb_fclones *fc = aligned_alloc(USKB_CACHE_BYTES,
						 USKB_DATA_ALIGN(sizeof(*fc)));

	if (!fc)
		return NULL;
	fc->skb2.fclone = USKB_FCLONE_CLONE;
	atomic_init(&fc->fclone_ref, 1);
	uskb_mem_cached(&fc->skb2, sizeof(fc->skb2));
	uskb_count_add(&t->c[USKB_TC_FCLONE_ALLOC], 1);
	uskb_count_add(&t->c[USKB_TC_FC_SKB_ALLOC], 1);
	return &fc->skb1;
}

struct uskb *__uskb_alloc(unsigned int size, unsigned int flags, int node)
{
	struct uskb_tls *t = uskb_tls();
	unsigned int total;
	unsigned char *data;
	struct uskb *skb;
	bool head_frag;

	/* unlikely: sizes near 4 GiB would overflow the head arithmetic */
	if (uskb_unlikely(size > (1u << 30))) {
		errno = EINVAL;
		return NULL;
	}
	size = USKB_DATA_ALIGN(size);
	if (uskb_unlikely(!t))
		return NULL; /* errno ENOMEM: no thread state */
	if (uskb_should_fail()) {
		errno = ENOMEM;
		return NULL;
	}
	if (flags & USKB_ALLOC_FCLONE)
		skb = alloc_fclone_shell(t);
	else
		skb = uskb_shell_get(t);
	if (uskb_unlikely(!skb)) {
		errno = ENOMEM;
		return NULL;
	}
	total = size + USKB_SHINFO_SIZE;
	/* page_frag heads as __netdev_alloc_skb: only while they fit a block */
	head_frag = (flags & USKB_ALLOC_HEAD_FRAG) && node == USKB_NO_NODE &&
		    total <= (USKB_PAGE_SIZE << USKB_PAGE_FRAG_ORDER);
	if (head_frag) {
		data = __uskb_frag_head(t, total);
	} else {
		data = uskb_kbuf_alloc(t, &total, node);
		size = USKB_WITH_OVERHEAD(total); /* the whole object is usable */
	}
	if (uskb_unlikely(!data)) {
		int err = errno;

		if (flags & USKB_ALLOC_FCLONE) {
			free(skb);
			uskb_count_add(&t->c[USKB_TC_FCLONE_FREE], 1);
			uskb_count_add(&t->c[USKB_TC_FC_SKB_FREE], 1);
		} else {
			uskb_shell_put(t, skb);
		}
		errno = err;
		return NULL;
	}
	build_around(skb, data, size, t->id, head_frag,
		     head_frag ? 0 : (unsigned int)(uskb_kbuf_class(total) + 1), false, false);
	if (flags & USKB_ALLOC_FCLONE)
		skb->fclone = USKB_FCLONE_ORIG;
	uskb_count_add(&t->c[USKB_TC_SKB_ALLOC], 1);
	return skb;
}

/*
 * Build @skb (handed out) around @data, a head of size class @c (still
 * cached), from the words the class's ready list @r keeps; @clean: they are a
 * ready pair whose shared info is untouched; @kept: a ready pair.
 */
static inline __attribute__((always_inline)) void build_in_class(const struct uskb_ready *r,
								  struct uskb *skb,
								  unsigned char *data, int c,
								  bool clean, bool kept)
{
	uskb_unpoison(data, uskb_kbuf_class_size(c));
#ifdef USKB_VALGRIND
	/* unlikely: the head handed out; a kept shared info defined (init_shinfo() wrote it) */
	if (uskb_unlikely(__uskb_on_valgrind)) {
		unsigned int csz = uskb_kbuf_class_size(c);

		VALGRIND_MAKE_MEM_UNDEFINED(data, csz);
		if (clean)
			VALGRIND_MAKE_MEM_DEFINED(data + USKB_WITH_OVERHEAD(csz),
						  offsetof(struct uskb_shared_info, frags));
	}
#endif
	build_words(skb, data, *(const uskb_v16 *)&r->zero128, r->word144, r->word168, clean, kept);
}

/*
 * The common allocation: a plain shell and a head of size class @c, both
 * from this thread's caches (counters are the caller's). NULL if memory
 * ran out.
 */
static inline __attribute__((always_inline)) struct uskb *alloc_in_class(struct uskb_tls *t,
									  int c)
{
	struct uskb_kbuf_cache *kc = &t->kbufs[c];
	struct uskb_ready *r = &t->ready[c];
	struct uskb *skb;
	unsigned char *data;
	bool clean = false;

	if (uskb_should_fail())
		return NULL;

	/*
	 * unlikely: no pair ready and the shell cache is empty: take back what
	 * other threads deferred to us first (it refills the pairs without a
	 * lock). Only here, so the fast path never reads the list's cache line.
	 */
	if (uskb_unlikely(!r->n && !t->nshell) && uskb_defer_work(t))
		__uskb_defer_drain_ahead(t);
	/* likely: a pair freed on this thread, shell and head together */
	if (uskb_likely(r->n)) {
		skb = r->skb[--r->n];
		data = uskb_ready_take(skb);
		clean = uskb_clean_mark(skb);
		goto init;
	}
	/*
	 * Caches refill in bulk, and not by a second look at the list: an empty
	 * shell cache here was empty above too, so the list was looked at (and
	 * a second drain step would waste the first's fetches).
	 */
	skb = uskb_likely(t->nshell) ? t->shells[--t->nshell] : __uskb_shell_refill(t, false);
	if (uskb_unlikely(!skb))
		return NULL;
	data = uskb_likely(kc->n) ? kc->obj[--kc->n] : __uskb_kbuf_refill(t, c);
	if (uskb_unlikely(!data)) {
		uskb_mem_handed_out(skb, sizeof(*skb));
		uskb_shell_put(t, skb);
		return NULL;
	}
	uskb_mem_handed_out(skb, sizeof(*skb));
init:
	build_in_class(r, skb, data, c, clean, false);
	return skb;
}

/* uskb_alloc() when no ready pair of the class is at hand: everything else. */
static __attribute__((noinline)) struct uskb *alloc_slow(unsigned int size)
{
	struct uskb_tls *t = uskb_tls();
	struct uskb *skb;
	int c;

	/* unlikely: oversized requests and heads beyond the classes take the general path */
	if (uskb_unlikely(size > (1u << 30)))
		return __uskb_alloc(size, 0, USKB_NO_NODE);
	c = uskb_kbuf_class(USKB_DATA_ALIGN(size) + USKB_SHINFO_SIZE);
	if (uskb_unlikely(c < 0))
		return __uskb_alloc(size, 0, USKB_NO_NODE);
	/* unlikely: no thread state could be made (errno ENOMEM) */
	if (uskb_unlikely(!t))
		return NULL;
	skb = alloc_in_class(t, c);
	if (uskb_unlikely(!skb)) {
		errno = ENOMEM;
		return NULL;
	}
	uskb_count_add(&t->c[USKB_TC_PAIR_ALLOC], 1);
	return skb;
}

/*
 * uskb_kbuf_class() of a head for a request of up to (CLASS_LINES - 1) * 64
 * bytes (the biggest class's, 16064), indexed by the request's 64-byte
 * lines (rounded up): the classes' ranges of lines, in one table.
 */
#define LINES_UPTO(c) ((USKB_KBUF_CLASS_SIZE(c) - USKB_SHINFO_SIZE) / USKB_CACHE_BYTES)
#define CLASS_LINES (LINES_UPTO(USKB_KBUF_CLASSES - 1) + 1)
static const uint8_t class_by_lines[CLASS_LINES] = {
	[0 ... LINES_UPTO(0)] = 0,
	[LINES_UPTO(0) + 1 ... LINES_UPTO(1)] = 1,
	[LINES_UPTO(1) + 1 ... LINES_UPTO(2)] = 2,
	[LINES_UPTO(2) + 1 ... LINES_UPTO(3)] = 3,
	[LINES_UPTO(3) + 1 ... LINES_UPTO(4)] = 4,
	[LINES_UPTO(4) + 1 ... LINES_UPTO(5)] = 5,
};
_Static_assert(USKB_KBUF_CLASSES == 6, "class_by_lines lists six classes");
_Static_assert(USKB_CACHE_BYTES == 64, "class_by_lines counts 64-byte lines");

struct uskb *uskb_alloc(unsigned int size)
{
	struct uskb_tls *t = __uskb_tls_ptr;
	size_t lines = ((size_t)size + USKB_CACHE_BYTES - 1) / USKB_CACHE_BYTES;
	struct uskb_ready *r;
	unsigned char *data;
	struct uskb *skb;
	unsigned int rn;
	int c;

	/*
	 * likely: this thread freed a plain skb of the class, and no fault is
	 * armed: take the pair. A short leaf, so the call saves no registers;
	 * everything else is alloc_slow().
	 */
	if (uskb_likely(t && lines < CLASS_LINES) &&
	    uskb_likely(atomic_load_explicit(&__uskb_fault_countdown, memory_order_relaxed) <= 0)) {
		c = class_by_lines[lines];
		r = &t->ready[c];
		/* (one register: gcc would address each field from t and c again) */
		uskb_hide_var(r);
		rn = r->n;
		if (uskb_likely(rn)) {
			r->n = --rn;
			skb = r->skb[rn];
			data = uskb_ready_take(skb);
			build_in_class(r, skb, data, c, uskb_clean_mark(skb), true);
			uskb_count_add(&t->c[USKB_TC_PAIR_ALLOC], 1);
			return skb;
		}
	}
	return alloc_slow(size);
}

struct uskb *uskb_dev_alloc(unsigned int length)
{
	struct uskb *skb;

	if (length > (1u << 30)) {
		errno = EINVAL;
		return NULL;
	}
	skb = __uskb_alloc(length + USKB_NET_SKB_PAD, USKB_ALLOC_HEAD_FRAG, USKB_NO_NODE);

	if (skb)
		uskb_reserve(skb, USKB_NET_SKB_PAD);
	return skb;
}

/*
 * Build @k skbs of class @c around the ready pairs @src (taken off the
 * list, the newest last) into @skbs, newest first. No valgrind here (the
 * caller tests it): the sanitizer's unpoison alone.
 */
static inline __attribute__((always_inline)) void take_ready(struct uskb **skbs,
							      struct uskb **src, unsigned int k,
							      int c, int owner)
{
	unsigned int i, csz = uskb_kbuf_class_size(c);

	for (i = 0; i < k; i++) {
		struct uskb *skb = src[k - 1 - i];

		uskb_unpoison(skb, sizeof(*skb));
		uskb_unpoison(skb->head, csz);
		/*
		 * not head_kept: gcc drops the store of the head it has just read,
		 * and the loop counts 20 instructions a pair so, 21 with it
		 */
		build_around(skb, skb->head, USKB_WITH_OVERHEAD(csz), owner, false,
			     (unsigned int)c + 1, uskb_clean_mark(skb), false);
		skbs[i] = skb;
	}
}

/*
 * The same loop compiled twice: with AVX2 the zeroing is 32-byte stores
 * (13 stores a pair instead of 18: in bursts of 32 about 20% less time a
 * pair here, 4.4 -> 3.5 ns); without, 16-byte ones. uskb_tls.wide picks,
 * once per call.
 */
#if defined(__x86_64__) && !defined(__AVX2__)
static __attribute__((noinline, target("avx2"))) void
take_ready_wide(struct uskb **skbs, struct uskb **src, unsigned int k, int c, int owner)
{
	take_ready(skbs, src, k, c, owner);
}
#define TAKE_READY_WIDE_FN 1
#endif

static __attribute__((noinline)) void take_ready_narrow(struct uskb **skbs, struct uskb **src,
							 unsigned int k, int c, int owner)
{
	take_ready(skbs, src, k, c, owner);
}

#ifndef TAKE_READY_WIDE_FN
/* AVX2 already the baseline, or not x86-64: one loop */
#define take_ready_wide take_ready_narrow
#endif
#undef TAKE_READY_WIDE_FN

int uskb_alloc_bulk(struct uskb **skbs, unsigned int n, unsigned int size)
{
	struct uskb_tls *t = uskb_tls();
	unsigned int i;
	int c;

	if (uskb_unlikely(size > (1u << 30)))
		return -EINVAL;
	if (uskb_unlikely(!t))
		return -ENOMEM;
	c = uskb_kbuf_class(USKB_DATA_ALIGN(size) + USKB_SHINFO_SIZE);
	/* unlikely: heads too big for a class go one by one */
	if (uskb_unlikely(c < 0)) {
		for (i = 0; i < n; i++) {
			skbs[i] = uskb_alloc(size);
			if (uskb_unlikely(!skbs[i]))
				goto fail;
		}
		return 0;
	}
	/*
	 * likely: ready pairs first, taken in one go: no per-skb test of the
	 * caches or of fault injection (armed, it needs the one-by-one path)
	 */
	i = 0;
	if (uskb_likely(atomic_load_explicit(&__uskb_fault_countdown, memory_order_relaxed) <= 0 &&
			!uskb_vg_on())) {
		struct uskb_ready *r = &t->ready[c];
		unsigned int k;

		for (;;) {
			k = n - i < r->n ? n - i : r->n;
			r->n -= k;
			/* likely on x86-64 CPUs of the last decade: 13 stores a pair, not 18 */
			if (uskb_likely(t->wide))
				take_ready_wide(skbs + i, r->skb + r->n, k, c, t->id);
			else
				take_ready_narrow(skbs + i, r->skb + r->n, k, c, t->id);
			i += k;
			/*
			 * likely in a queue's producer: the pairs ran out, and what
			 * consumers deferred to us refills them (alloc_in_class()'s
			 * test: only with no shell cached), then taken in one go too
			 */
			if (i == n || t->nshell ||
			    !uskb_defer_work(t) ||
			    !__uskb_defer_drain_ahead(t) || !r->n)
				break;
		}
	}
	/* the rest one by one: the per-skb work is two pops and the init */
	for (; i < n; i++) {
		skbs[i] = alloc_in_class(t, c);
		if (uskb_unlikely(!skbs[i]))
			goto fail_counted;
	}
	uskb_count_add(&t->c[USKB_TC_PAIR_ALLOC], n);
	return 0;
fail_counted:
	uskb_count_add(&t->c[USKB_TC_PAIR_ALLOC], i);
fail:
	while (i--)
		uskb_free(skbs[i]);
	return -ENOMEM;
}
