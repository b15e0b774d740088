/* SPDX-License-Identifier: MIT */
/*
 * The skb geometry: clone / copy / expand / pull / trim / split / coalesce,
 * and the byte walker behind copy_bits, store_bits and skb_checksum.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "skb/priv.h"

/* ---------------- misuse reports ---------------- */

void __uskb_bug_put(struct uskb *skb, unsigned int len)
{
	if (uskb_is_nonlinear(skb))
		uskb_bug("put", skb, "skb_put(len=%u) on a nonlinear skb", len);
	uskb_bug("put", skb, "skb_over_panic: put %u bytes past end (tailroom %u)", len,
		 skb->end - skb->tail);
}

void __uskb_bug_push(struct uskb *skb, unsigned int len)
{
	uskb_bug("push", skb, "skb_under_panic: push %u bytes below head (headroom %u)", len,
		 uskb_headroom(skb));
}

/* ---------------- clone and copy ---------------- */

/* __copy_skb_header(): the metadata a copy or clone inherits. */
static void copy_skb_header(struct uskb *n, const struct uskb *old)
{
	n->tstamp = old->tstamp;
	n->dev = old->dev;
	memcpy(n->cb, old->cb, sizeof(old->cb));
	n->queue_mapping = old->queue_mapping;
	n->headers = old->headers;
}

/* skb_copy_header(): header + gso state. */
static void copy_header_gso(struct uskb *n, const struct uskb *old)
{
	struct uskb_shared_info *sh = uskb_shinfo(n);
	const struct uskb_shared_info *osh = __uskb_shinfo_peek(old);

	copy_skb_header(n, old);
	sh->gso_size = osh->gso_size;
	sh->gso_segs = osh->gso_segs;
	sh->gso_type = osh->gso_type;
}

/* skb_clone() copies the shell from dev to truesize in one block, users excepted */
#define CLONE_FROM offsetof(struct uskb, dev)
#define CLONE_TO offsetof(struct uskb, users)
/* ...but for the clean mark and the byte after it: other holders may clear the mark atomically */
#define CLONE_GAP offsetof(struct uskb, __shinfo_clean)
#define CLONE_RESUME (CLONE_GAP + 2)
/* ...and from the first 8-byte boundary after it, a store per 8 bytes (see uskb_clone()) */
#define CLONE_WORDS ((CLONE_RESUME + 7) & ~(size_t)7)
_Static_assert(offsetof(struct uskb, sk) < CLONE_FROM &&
		       offsetof(struct uskb, destructor) >= CLONE_FROM &&
		       offsetof(struct uskb, truesize) < CLONE_TO &&
		       CLONE_TO + sizeof(atomic_int) == sizeof(struct uskb) &&
		       offsetof(struct uskb, __rsvd) == CLONE_GAP + 1 && CLONE_GAP > CLONE_FROM,
	       "uskb_clone's block copy");

struct uskb *uskb_clone(struct uskb *skb)
{
	struct uskb_fclones *fc = (struct uskb_fclones *)skb;
	struct uskb_tls *t = uskb_tls();
	unsigned int fclone;
	struct uskb *n;
	size_t off;

	if (uskb_unlikely(!t))
		return NULL; /* errno ENOMEM: no thread state */
	/* a clone may be held (a tap): user memory is copied out first */
	if (uskb_unlikely(skb->__zcopy_hint && uskb_orphan_frags(skb))) {
		errno = ENOMEM;
		return NULL;
	}

	if (skb->fclone == USKB_FCLONE_ORIG &&
	    atomic_load_explicit(&fc->fclone_ref, memory_order_acquire) == 1) {
		n = &fc->skb2;
		/* relaxed: skb2 is idle; the owner of skb1 is the only writer */
		atomic_store_explicit(&fc->fclone_ref, 2, memory_order_relaxed);
		uskb_mem_handed_out(n, sizeof(*n));
		fclone = USKB_FCLONE_CLONE;
		uskb_count_add(&t->c[USKB_TC_FC_SKB_ALLOC], 1);
	} else {
		n = uskb_should_fail() ? NULL : uskb_shell_get(t);
		if (!n) {
			errno = ENOMEM;
			return NULL;
		}
		fclone = USKB_FCLONE_UNAVAILABLE;
	}
	/*
	 * __skb_clone(): everything from dev to truesize in one block copy
	 * (wide loads and stores, the header copy included), then what the
	 * clone does not inherit. users and the clean mark are left out:
	 * other holders of @skb change them atomically.
	 */
	memcpy((char *)n + CLONE_FROM, (const char *)skb + CLONE_FROM, CLONE_GAP - CLONE_FROM);
	/*
	 * The part after the gap in stores that hold whole fields: one block
	 * copy from its offset (not 8-aligned) stored head across two 16-byte
	 * stores, and the free that follows a clone waited on its load of head
	 * for both to reach the cache (a load spanning two stores is not
	 * forwarded): clone+free 13.8 ns against 11.9 before the gap
	 * (docs/benchmarks.md).
	 */
	memcpy((char *)n + CLONE_RESUME, (const char *)skb + CLONE_RESUME,
	       CLONE_WORDS - CLONE_RESUME);
	for (off = CLONE_WORDS; off + 8 <= CLONE_TO; off += 8)
		memcpy((char *)n + off, (const char *)skb + off, 8);
	memcpy((char *)n + off, (const char *)skb + off, CLONE_TO - off);
	/* a shared info of two is not as allocated: no clean mark */
	n->__shinfo_clean = 0;
	n->__rsvd = 0;
	n->next = n->prev = NULL;
	n->sk = NULL;
	n->destructor = NULL;
	if (skb->nohdr)
		n->hdr_len = (uint16_t)uskb_headroom(skb);
	/* adjacent bitfield stores: one write of the flag byte */
	n->cloned = 1;
	n->nohdr = 0;
	n->fclone = fclone & 3;
	n->alloc_cpu = t->id;
	atomic_init(&n->users, 1);
	/* relaxed: we hold a data reference, so the count cannot reach zero */
	atomic_fetch_add_explicit(&uskb_shinfo(skb)->dataref, 1, memory_order_relaxed);
	/* once: a write per clone of a flag byte other threads read costs */
	if (!skb->cloned)
		skb->cloned = 1;
	uskb_count_add(&t->c[USKB_TC_SKB_ALLOC], 1);
	return n;
}
#undef CLONE_FROM
#undef CLONE_TO
#undef CLONE_GAP
#undef CLONE_RESUME
#undef CLONE_WORDS

struct uskb *uskb_copy(const struct uskb *skb)
{
	int headerlen = (int)uskb_headroom(skb);
	unsigned int size = uskb_end_offset(skb) + skb->data_len;
	struct uskb *n = uskb_alloc(size);

	if (!n)
		return NULL;
	uskb_reserve(n, headerlen);
	uskb_put(n, skb->len);
	if (uskb_copy_bits(skb, -headerlen, n->head, headerlen + (int)skb->len))
		uskb_bug("copy", skb, "skb geometry inconsistent");
	copy_header_gso(n, skb);
	return n;
}

static void clone_fraglist(struct uskb *skb)
{
	struct uskb *list;

	uskb_walk_frags(skb, list)
		uskb_get(list);
}

struct uskb *__uskb_pskb_copy(struct uskb *skb, int headroom)
{
	unsigned int size = uskb_headlen(skb) + (unsigned int)headroom;
	/* read only: the copy shares the frags, the source's shared info stays as it is */
	const struct uskb_shared_info *shinfo = __uskb_shinfo_peek(skb);
	struct uskb_shared_info *nsh;
	struct uskb *n;
	int i;

	if (headroom < 0) {
		errno = EINVAL;
		return NULL;
	}
	n = uskb_alloc(size);
	if (!n)
		return NULL;
	uskb_reserve(n, headroom);
	uskb_put_data(n, skb->data, uskb_headlen(skb));
	n->truesize += skb->data_len;
	n->data_len = skb->data_len;
	n->len = skb->len;
	nsh = uskb_shinfo(n);
	if (shinfo->nr_frags) {
		if (uskb_orphan_frags(skb) || uskb_zerocopy_clone(n, skb)) {
			uskb_free(n);
			errno = ENOMEM;
			return NULL;
		}
		shinfo = __uskb_shinfo_peek(skb); /* orphaning may have moved the head */
		for (i = 0; i < shinfo->nr_frags; i++) {
			nsh->frags[i] = shinfo->frags[i];
			uskb_frag_ref(skb, i);
		}
		nsh->nr_frags = (uint8_t)i;
		nsh->flags |= shinfo->flags & USKB_SKBFL_SHARED_FRAG;
	}
	if (shinfo->frag_list) {
		nsh->frag_list = shinfo->frag_list;
		clone_fraglist(n);
	}
	copy_header_gso(n, skb);
	return n;
}

struct uskb *uskb_pskb_copy(struct uskb *skb)
{
	return __uskb_pskb_copy(skb, (int)uskb_headroom(skb));
}

/* skb_headers_offset_update(). */
static void headers_offset_update(struct uskb *skb, int off)
{
	if (skb->ip_summed == USKB_CHECKSUM_PARTIAL)
		skb->csum_start = (uint16_t)(skb->csum_start + off);
	if (skb->transport_header != USKB_HEADER_UNSET)
		skb->transport_header = (uint16_t)(skb->transport_header + off);
	skb->network_header = (uint16_t)(skb->network_header + off);
	if (uskb_mac_header_was_set(skb))
		skb->mac_header = (uint16_t)(skb->mac_header + off);
}

static int expand_head(struct uskb *skb, int nhead, int ntail, bool orphan)
{
	struct uskb_shared_info *shinfo;
	unsigned int osize, size, data_off;
	struct uskb_tls *t = uskb_tls();
	unsigned char *data;
	int i;

	if (uskb_unlikely(!t))
		return -ENOMEM;
	/*
	 * A clone must not keep user memory (the kernel orphans after copying
	 * the shared info; a cloned skb that still needs it cannot exist, so
	 * doing it first changes nothing but the order).
	 */
	if (orphan && uskb_cloned(skb) && uskb_orphan_frags(skb))
		return -ENOMEM;
	shinfo = uskb_shinfo(skb);
	osize = uskb_end_offset(skb);

	if (uskb_unlikely(nhead < 0 || ntail < 0))
		uskb_bug("expand_head", skb, "negative growth nhead=%d ntail=%d", nhead, ntail);
	if (uskb_unlikely(uskb_shared(skb)))
		uskb_bug("expand_head", skb, "pskb_expand_head of a shared skb");
	if (uskb_unlikely((uint64_t)osize + (unsigned int)nhead + (unsigned int)ntail >
			  (1u << 30)))
		return -ENOMEM;
	uskb_zcopy_downgrade_managed(skb);
	size = USKB_DATA_ALIGN(osize + (unsigned int)nhead + (unsigned int)ntail) +
	       USKB_SHINFO_SIZE;
	data = uskb_kbuf_alloc(t, &size, USKB_NO_NODE);
	if (!data)
		return -ENOMEM;
	size = USKB_WITH_OVERHEAD(size);
	memcpy(data + nhead, skb->head, skb->tail);
	memcpy(data + size, shinfo,
	       offsetof(struct uskb_shared_info, frags) +
		       shinfo->nr_frags * sizeof(uskb_frag_t));
	if (uskb_cloned(skb)) {
		/* the old data stays with the other clones: take our own refs */
		if (uskb_zcopy(skb))
			uskb_zcopy_get(uskb_zcopy(skb));
		for (i = 0; i < shinfo->nr_frags; i++)
			uskb_frag_ref(skb, i);
		if (shinfo->frag_list)
			clone_fraglist(skb);
		__uskb_release_data(t, skb);
	} else {
		uskb_kbuf_free(t, skb->head, skb->__kbuf_class);
	}
	data_off = (unsigned int)(skb->data - skb->head);
	skb->head = data;
	skb->head_frag = 0;
	skb->__kbuf_class = (uint8_t)(uskb_kbuf_class(size + USKB_SHINFO_SIZE) + 1);
	skb->data = data + nhead + data_off;
	skb->end = size;
	skb->tail += (uint32_t)nhead;
	headers_offset_update(skb, nhead);
	skb->cloned = 0;
	skb->hdr_len = 0;
	skb->nohdr = 0;
	atomic_init(&uskb_shinfo(skb)->dataref, 1);
	if (!skb->sk)
		skb->truesize += size - osize;
	return 0;
}

int uskb_expand_head(struct uskb *skb, int nhead, int ntail)
{
	return expand_head(skb, nhead, ntail, true);
}

int __uskb_unclone_keep_frags(struct uskb *skb)
{
	return uskb_cloned(skb) ? expand_head(skb, 0, 0, false) : 0;
}

static int __cow(struct uskb *skb, unsigned int headroom, bool cloned)
{
	unsigned int delta = 0;

	if (headroom > uskb_headroom(skb))
		delta = headroom - uskb_headroom(skb);
	if (delta || cloned)
		return uskb_expand_head(skb, (int)((delta + USKB_NET_SKB_PAD - 1) &
						   ~(USKB_NET_SKB_PAD - 1)), 0);
	return 0;
}

int uskb_cow(struct uskb *skb, unsigned int headroom)
{
	return __cow(skb, headroom, uskb_cloned(skb));
}

int uskb_cow_head(struct uskb *skb, unsigned int headroom)
{
	return __cow(skb, headroom, uskb_header_cloned(skb));
}

int uskb_unclone(struct uskb *skb)
{
	if (uskb_cloned(skb))
		return uskb_expand_head(skb, 0, 0);
	return 0;
}

struct uskb *uskb_unshare(struct uskb *skb)
{
	if (uskb_cloned(skb)) {
		struct uskb *nskb = uskb_copy(skb);

		if (nskb)
			uskb_consume(skb);
		else
			uskb_free(skb);
		skb = nskb;
	}
	return skb;
}

struct uskb *uskb_share_check(struct uskb *skb)
{
	if (uskb_shared(skb)) {
		struct uskb *nskb = uskb_clone(skb);

		if (nskb)
			uskb_consume(skb);
		else
			uskb_free(skb);
		skb = nskb;
	}
	return skb;
}

void uskb_header_release(struct uskb *skb)
{
	if (uskb_unlikely(skb->nohdr))
		uskb_bug("header_release", skb, "header already released");
	skb->nohdr = 1;
	/* relaxed: counts only; ordering comes with the frees */
	atomic_fetch_add_explicit(&uskb_shinfo(skb)->dataref, 1u << USKB_DATAREF_SHIFT,
				  memory_order_relaxed);
}

/* ---------------- pulling, trimming, linearizing ---------------- */

void *uskb_pull_tail(struct uskb *skb, int delta)
{
	struct uskb_shared_info *shinfo;
	int i, k, eat;

	if (uskb_unlikely(delta < 0 || (unsigned int)delta > skb->data_len))
		uskb_bug("pull_tail", skb, "__pskb_pull_tail(delta=%d) beyond paged data", delta);
	eat = (int)(skb->tail + (unsigned int)delta) - (int)skb->end;
	if (eat > 0 || uskb_cloned(skb)) {
		if (uskb_expand_head(skb, 0, eat > 0 ? eat + 128 : 0))
			return NULL;
	}
	shinfo = uskb_shinfo(skb);
	if (uskb_copy_bits(skb, (int)uskb_headlen(skb), uskb_tail_pointer(skb), delta))
		uskb_bug("pull_tail", skb, "skb geometry inconsistent");

	/* no frag_list: nothing to estimate, the frags hold it all */
	if (!shinfo->frag_list)
		goto pull_pages;
	eat = delta;
	for (i = 0; i < shinfo->nr_frags; i++) {
		int size = (int)shinfo->frags[i].len;

		if (size >= eat)
			goto pull_pages;
		eat -= size;
	}
	if (eat) {
		struct uskb *list = shinfo->frag_list;
		struct uskb *clone = NULL;
		struct uskb *insp = NULL;

		do {
			if ((int)list->len <= eat) {
				/* eaten as a whole */
				eat -= (int)list->len;
				list = list->next;
				insp = list;
			} else {
				/* eaten partially: pull from a private member */
				if (uskb_shared(list)) {
					clone = uskb_clone(list);
					if (!clone)
						return NULL;
					insp = list->next;
					list = clone;
				} else {
					insp = list;
				}
				if (!uskb_pskb_pull(list, (unsigned int)eat)) {
					uskb_free(clone);
					return NULL;
				}
				break;
			}
		} while (eat);
		/* free the members pulled out */
		while ((list = shinfo->frag_list) != insp) {
			shinfo->frag_list = list->next;
			uskb_consume(list);
		}
		if (clone) {
			clone->next = list;
			shinfo->frag_list = clone;
		}
	}
pull_pages:
	eat = delta;
	k = 0;
	for (i = 0; i < shinfo->nr_frags; i++) {
		int size = (int)shinfo->frags[i].len;

		if (size <= eat) {
			uskb_frag_unref(skb, i);
			eat -= size;
		} else {
			uskb_frag_t *frag = &shinfo->frags[k];

			*frag = shinfo->frags[i];
			if (eat) {
				frag->offset += (uint32_t)eat;
				frag->len -= (uint32_t)eat;
				if (!i)
					goto end;
				eat = 0;
			}
			k++;
		}
	}
	shinfo->nr_frags = (uint8_t)k;
end:
	skb->tail += (uint32_t)delta;
	skb->data_len -= (unsigned int)delta;
	/* all user bytes now live in our head: the owner hears "copied" */
	if (!skb->data_len)
		uskb_zcopy_clear(skb, false);
	return uskb_tail_pointer(skb);
}

bool uskb_may_pull(struct uskb *skb, unsigned int len)
{
	/* likely: headers are usually linear already */
	if (uskb_likely(len <= uskb_headlen(skb)))
		return true;
	if (uskb_unlikely(len > skb->len))
		return false;
	return uskb_pull_tail(skb, (int)(len - uskb_headlen(skb))) != NULL;
}

void *uskb_pskb_pull(struct uskb *skb, unsigned int len)
{
	if (uskb_unlikely(len > skb->len))
		return NULL;
	if (len > uskb_headlen(skb) && !uskb_pull_tail(skb, (int)(len - uskb_headlen(skb))))
		return NULL;
	skb->len -= len;
	return skb->data += len;
}

int uskb_linearize(struct uskb *skb)
{
	if (!uskb_is_nonlinear(skb))
		return 0;
	return uskb_pull_tail(skb, (int)skb->data_len) ? 0 : -ENOMEM;
}

void uskb_condense(struct uskb *skb)
{
	if (skb->data_len) {
		if (skb->data_len > skb->end - skb->tail || uskb_cloned(skb))
			return;
		/* the paged data fits the tailroom: free the frags now */
		uskb_pull_tail(skb, (int)skb->data_len);
	}
	skb->truesize = USKB_TRUESIZE(uskb_end_offset(skb));
}

static void drop_fraglist(struct uskb *skb)
{
	uskb_free_list(uskb_shinfo(skb)->frag_list);
	uskb_shinfo(skb)->frag_list = NULL;
}

/* ___pskb_trim(). */
static int pskb_trim_slow(struct uskb *skb, unsigned int len)
{
	struct uskb_shared_info *shinfo;
	struct uskb **fragp, *frag;
	int offset = (int)uskb_headlen(skb);
	int nfrags, i, err;

	if (uskb_cloned(skb) && (err = uskb_expand_head(skb, 0, 0)))
		return err;
	shinfo = uskb_shinfo(skb);
	nfrags = shinfo->nr_frags;
	i = 0;
	if (offset >= (int)len)
		goto drop_pages;
	for (; i < nfrags; i++) {
		int end = offset + (int)shinfo->frags[i].len;

		if (end < (int)len) {
			offset = end;
			continue;
		}
		shinfo->frags[i++].len = len - (unsigned int)offset;
drop_pages:
		shinfo->nr_frags = (uint8_t)i;
		for (; i < nfrags; i++)
			uskb_frag_unref(skb, i);
		if (shinfo->frag_list)
			drop_fraglist(skb);
		goto done;
	}
	for (fragp = &shinfo->frag_list; (frag = *fragp); fragp = &frag->next) {
		int end = offset + (int)frag->len;

		/* the chain may be shared with a pskb_copy: make each link we walk ours */
		if (uskb_shared(frag)) {
			struct uskb *nfrag = uskb_clone(frag);

			if (!nfrag)
				return -ENOMEM;
			nfrag->next = frag->next;
			uskb_consume(frag);
			frag = nfrag;
			*fragp = frag;
		}
		if (end < (int)len) {
			offset = end;
			continue;
		}
		if (end > (int)len && (err = uskb_pskb_trim(frag, len - (unsigned int)offset)))
			return err;
		if (frag->next) {
			uskb_free_list(frag->next);
			frag->next = NULL;
		}
		break;
	}
done:
	if (len > uskb_headlen(skb)) {
		skb->data_len -= skb->len - len;
		skb->len = len;
	} else {
		skb->len = len;
		skb->data_len = 0;
		uskb_set_tail_pointer(skb, (int)len);
	}
	if (!skb->sk)
		uskb_condense(skb);
	return 0;
}

int uskb_pskb_trim(struct uskb *skb, unsigned int len)
{
	if (len >= skb->len)
		return 0;
	if (skb->data_len)
		return pskb_trim_slow(skb, len);
	__uskb_trim(skb, len);
	return 0;
}

int uskb_ensure_writable(struct uskb *skb, unsigned int write_len)
{
	if (!uskb_may_pull(skb, write_len))
		return -ENOMEM;
	if (!uskb_cloned(skb) ||
	    (!uskb_header_cloned(skb) && uskb_headroom(skb) + write_len <= skb->hdr_len))
		return 0;
	return uskb_expand_head(skb, 0, 0);
}

/* ---------------- the byte walker ---------------- */

/*
 * Visit @len bytes of the packet from @offset (negative: the headroom) in
 * order, as contiguous chunks: head, frags, then frag_list members
 * recursively. @fn gets each chunk's address, length and position relative
 * to @offset. 0, -EFAULT when the range does not lie in the packet, or the
 * first non-zero value @fn returns.
 */
typedef int (*walk_fn)(void *ctx, unsigned char *p, int len, int pos,
		       const uskb_frag_t *frag);

static int walk(const struct uskb *skb, int offset, int len, walk_fn fn, void *ctx,
		int pos)
{
	const struct uskb_shared_info *shinfo = __uskb_shinfo_peek(skb);
	int start = (int)uskb_headlen(skb);
	const struct uskb *iter;
	int i, copy, err;

	if (len < 0 || offset < -(int)uskb_headroom(skb) || offset > (int)skb->len - len)
		return -EFAULT;
	if (!len)
		return 0;
	if ((copy = start - offset) > 0) {
		if (copy > len)
			copy = len;
		if ((err = fn(ctx, skb->data + offset, copy, pos, NULL)))
			return err;
		if ((len -= copy) == 0)
			return 0;
		offset += copy;
		pos += copy;
	}
	for (i = 0; i < shinfo->nr_frags; i++) {
		const uskb_frag_t *f = &shinfo->frags[i];
		int end = start + (int)f->len;

		if ((copy = end - offset) > 0) {
			if (copy > len)
				copy = len;
			if ((err = fn(ctx, (unsigned char *)uskb_frag_address(f) + (offset - start),
				      copy, pos, f)))
				return err;
			if ((len -= copy) == 0)
				return 0;
			offset += copy;
			pos += copy;
		}
		start = end;
	}
	uskb_walk_frags(skb, iter) {
		int end = start + (int)iter->len;

		if ((copy = end - offset) > 0) {
			if (copy > len)
				copy = len;
			if ((err = walk(iter, offset - start, copy, fn, ctx, pos)))
				return err;
			if ((len -= copy) == 0)
				return 0;
			offset += copy;
			pos += copy;
		}
		start = end;
	}
	return len ? -EFAULT : 0;
}

static int copy_out(void *ctx, unsigned char *p, int len, int pos, const uskb_frag_t *f)
{
	(void)f;
	memcpy((char *)ctx + pos, p, (size_t)len);
	return 0;
}

int uskb_copy_bits(const struct uskb *skb, int offset, void *to, int len)
{
	return walk(skb, offset, len, copy_out, to, 0);
}

static int copy_in(void *ctx, unsigned char *p, int len, int pos, const uskb_frag_t *f)
{
	if (uskb_unlikely(f && (f->page->flags & USKB_PG_READONLY)))
		uskb_bug("store_bits", NULL, "write into read-only page %p (%s)",
			 f->page->addr, (f->page->flags & USKB_PG_ZERO) ? "the zero page" :
									   "read-only");
	memcpy(p, (const char *)ctx + pos, (size_t)len);
	return 0;
}

int uskb_store_bits(struct uskb *skb, int offset, const void *from, int len)
{
	return walk(skb, offset, len, copy_in, (void *)from, 0);
}

struct csum_ctx {
	uskb_wsum csum;
};

static int csum_chunk(void *ctx, unsigned char *p, int len, int pos, const uskb_frag_t *f)
{
	struct csum_ctx *c = ctx;

	(void)f;
	c->csum = uskb_csum_block_add(c->csum, uskb_csum_partial(p, (size_t)len, 0), pos);
	return 0;
}

uskb_wsum uskb_checksum(const struct uskb *skb, int offset, int len, uskb_wsum csum)
{
	struct csum_ctx c = { csum };

	if (walk(skb, offset, len, csum_chunk, &c, 0))
		uskb_bug("checksum", skb, "range %d+%d outside the packet", offset, len);
	return c.csum;
}

/* ---------------- split, coalesce, frag_list ---------------- */

static void split_inside_header(struct uskb *skb, struct uskb *skb1, uint32_t len,
				unsigned int pos)
{
	struct uskb_shared_info *sh = uskb_shinfo(skb), *sh1 = uskb_shinfo(skb1);
	int i;

	uskb_put_data(skb1, skb->data + len, pos - len);
	/* the paged data moves as it is */
	for (i = 0; i < sh->nr_frags; i++)
		sh1->frags[i] = sh->frags[i];
	sh1->nr_frags = sh->nr_frags;
	sh->nr_frags = 0;
	skb1->data_len = skb->data_len;
	skb1->len += skb1->data_len;
	skb->data_len = 0;
	skb->len = len;
	uskb_set_tail_pointer(skb, (int)len);
}

static void split_no_header(struct uskb *skb, struct uskb *skb1, uint32_t len,
			    unsigned int pos)
{
	struct uskb_shared_info *sh = uskb_shinfo(skb), *sh1 = uskb_shinfo(skb1);
	const int nfrags = sh->nr_frags;
	int i, k = 0;

	sh->nr_frags = 0;
	skb1->len = skb1->data_len = skb->len - len;
	skb->len = len;
	skb->data_len = len - pos;
	for (i = 0; i < nfrags; i++) {
		unsigned int size = sh->frags[i].len;

		if (pos + size > len) {
			sh1->frags[k] = sh->frags[i];
			if (pos < len) {
				/* the split line cuts this frag: both keep a piece */
				uskb_frag_ref(skb, i);
				sh1->frags[0].offset += len - pos;
				sh1->frags[0].len -= len - pos;
				sh->frags[i].len = len - pos;
				sh->nr_frags++;
			}
			k++;
		} else {
			sh->nr_frags++;
		}
		pos += size;
	}
	sh1->nr_frags = (uint8_t)k;
}

void uskb_split(struct uskb *skb, struct uskb *skb1, uint32_t len)
{
	unsigned int pos = uskb_headlen(skb);

	if (uskb_unlikely(uskb_cloned(skb) || uskb_has_frag_list(skb)))
		uskb_bug("split", skb, "skb_split of a cloned skb or one with a frag_list");
	if (uskb_unlikely(skb1->len || uskb_shinfo(skb1)->nr_frags || len > skb->len))
		uskb_bug("split", skb1, "skb_split into a non-empty skb or past the end (len %u)",
			 len);
	uskb_zcopy_downgrade_managed(skb);
	uskb_shinfo(skb1)->flags |= uskb_shinfo(skb)->flags &
				    (USKB_SKBFL_SHARED_FRAG | USKB_SKBFL_PURE_ZEROCOPY);
	uskb_zerocopy_clone(skb1, skb); /* skb1 is fresh: cannot fail */
	if (len < pos)
		split_inside_header(skb, skb1, len, pos);
	else
		split_no_header(skb, skb1, len, pos);
}

bool uskb_try_coalesce(struct uskb *to, struct uskb *from, bool *fragstolen,
		       int *delta_truesize)
{
	struct uskb_shared_info *to_sh, *from_sh;
	int i, delta;
	unsigned int len = from->len;

	*fragstolen = false;
	if (uskb_cloned(to))
		return false;
	if (to->pp_recycle != from->pp_recycle)
		return false;
	if ((int)len <= uskb_tailroom(to)) {
		if (len && uskb_copy_bits(from, 0, uskb_put(to, len), (int)len))
			uskb_bug("try_coalesce", from, "skb geometry inconsistent");
		*delta_truesize = 0;
		return true;
	}
	to_sh = uskb_shinfo(to);
	from_sh = uskb_shinfo(from);
	if (to_sh->frag_list || from_sh->frag_list)
		return false;
	if ((to_sh->flags | from_sh->flags) & USKB_SKBFL_ZEROCOPY_ENABLE)
		return false;
	if (uskb_headlen(from) != 0) {
		struct uskb_page *page;

		if (to_sh->nr_frags + from_sh->nr_frags >= USKB_MAX_SKB_FRAGS)
			return false;
		/* skb_head_is_locked(): a cloned head cannot be stolen */
		if (!from->head_frag || uskb_cloned(from))
			return false;
		delta = (int)(from->truesize - USKB_DATA_ALIGN(sizeof(struct uskb)));
		page = uskb_virt_to_page(from->head);
		uskb_fill_page_desc(to, to_sh->nr_frags, page,
				    (int)(from->data - (unsigned char *)page->addr),
				    (int)uskb_headlen(from));
		*fragstolen = true;
	} else {
		if (to_sh->nr_frags + from_sh->nr_frags > USKB_MAX_SKB_FRAGS)
			return false;
		delta = (int)(from->truesize - USKB_TRUESIZE(uskb_end_offset(from)));
	}
	memcpy(to_sh->frags + to_sh->nr_frags, from_sh->frags,
	       from_sh->nr_frags * sizeof(uskb_frag_t));
	to_sh->nr_frags = (uint8_t)(to_sh->nr_frags + from_sh->nr_frags);
	if (from_sh->nr_frags)
		to_sh->flags |= from_sh->flags & USKB_SKBFL_SHARED_FRAG;
	if (!uskb_cloned(from))
		from_sh->nr_frags = 0;
	/* a cloned from keeps its frags: take refs for the copies in to */
	for (i = 0; i < from_sh->nr_frags; i++)
		uskb_frag_ref(from, i);
	to->truesize += (unsigned int)delta;
	to->len += len;
	to->data_len += len;
	*delta_truesize = delta;
	return true;
}

void uskb_append_frag_list(struct uskb *skb, struct uskb *frag)
{
	struct uskb **pp = &uskb_shinfo(skb)->frag_list;

	if (uskb_unlikely(frag == skb || frag->next))
		uskb_bug("append_frag_list", skb, "bad frag_list member %p", (void *)frag);
	if (uskb_unlikely(uskb_cloned(skb)))
		uskb_bug("append_frag_list", skb, "frag_list of a cloned skb is shared");
	while (*pp)
		pp = &(*pp)->next;
	*pp = frag;
	skb->len += frag->len;
	skb->data_len += frag->len;
	skb->truesize += frag->truesize;
}
