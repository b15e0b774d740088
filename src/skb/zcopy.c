/* SPDX-License-Identifier: MIT */
/*
 * Zero-copy user buffers on skbs: the ubuf reference counts and their one
 * completion, zerocopy_clone, and orphaning (copying user memory out).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "skb/priv.h"

void uskb_ubuf_init(struct uskb_ubuf *uarg, const struct uskb_ubuf_ops *ops, uint8_t flags)
{
	uarg->ops = ops;
	atomic_init(&uarg->refcnt, 1);
	uarg->flags = flags;
	atomic_init(&uarg->copied, false);
	uarg->priv = NULL;
}

/* Drop one reference; the last one completes, exactly once. */
void __uskb_ubuf_put(struct uskb *skb, struct uskb_ubuf *uarg, bool success)
{
	struct __uskb_user_pages *up, *next;
	int old;

	if (!success)
		/* relaxed: the acq_rel decrement below publishes it to the last holder */
		atomic_store_explicit(&uarg->copied, true, memory_order_relaxed);
	/* acq_rel: the completion must come after every holder is done with the data */
	old = atomic_fetch_sub_explicit(&uarg->refcnt, 1, memory_order_acq_rel);
	if (uskb_likely(old > 1))
		return;
	if (uskb_unlikely(old < 1))
		uskb_bug("zcopy_put", skb, "ubuf %p dropped with refcnt %d", (void *)uarg, old);
	up = uarg->priv;
	uarg->priv = NULL;
	/* the owner may free or reuse uarg in complete(): nothing of it is read after */
	uarg->ops->complete(skb, uarg,
			    !atomic_load_explicit(&uarg->copied, memory_order_relaxed));
	for (; up; up = next) {
		next = up->next;
		free(up);
	}
}

struct uskb_ubuf *uskb_zcopy(const struct uskb *skb)
{
	const struct uskb_shared_info *shinfo = __uskb_shinfo_peek(skb);

	return (shinfo->flags & USKB_SKBFL_ZEROCOPY_ENABLE) ? shinfo->destructor_arg : NULL;
}

void uskb_zcopy_init(struct uskb *skb, struct uskb_ubuf *uarg)
{
	struct uskb_shared_info *shinfo = uskb_shinfo(skb);

	shinfo->destructor_arg = uarg;
	shinfo->flags |= uarg->flags;
	skb->__zcopy_hint = 1;
}

void uskb_zcopy_set(struct uskb *skb, struct uskb_ubuf *uarg, bool *have_ref)
{
	if (uskb_unlikely(uskb_zcopy(skb)))
		uskb_bug("zcopy_set", skb, "skb already carries ubuf %p",
			 (void *)uskb_zcopy(skb));
	if (have_ref && *have_ref)
		*have_ref = false;
	else
		uskb_zcopy_get(uarg);
	uskb_zcopy_init(skb, uarg);
}

void uskb_zcopy_clear(struct uskb *skb, bool success)
{
	struct uskb_ubuf *uarg = uskb_zcopy(skb);

	if (!uarg)
		return;
	uskb_shinfo(skb)->flags &= (uint8_t)~USKB_SKBFL_ALL_ZEROCOPY;
	__uskb_ubuf_put(skb, uarg, success);
}

void uskb_zcopy_get(struct uskb_ubuf *uarg)
{
	/* relaxed: the caller holds a reference already */
	int old = atomic_fetch_add_explicit(&uarg->refcnt, 1, memory_order_relaxed);

	if (uskb_unlikely(old < 1))
		uskb_bug("zcopy_get", NULL, "ubuf %p revived from refcnt %d", (void *)uarg, old);
}

void uskb_zcopy_put(struct uskb_ubuf *uarg)
{
	if (uarg)
		__uskb_ubuf_put(NULL, uarg, true);
}

int uskb_zerocopy_clone(struct uskb *nskb, struct uskb *orig)
{
	struct uskb_ubuf *uarg = uskb_zcopy(orig);

	if (!uarg)
		return 0;
	if (uskb_zcopy(nskb)) {
		if (uskb_zcopy(nskb) == uarg)
			return 0;
		if (uskb_copy_ubufs(nskb))
			return -EIO;
	}
	uskb_zcopy_set(nskb, uarg, NULL);
	return 0;
}

void uskb_zcopy_downgrade_managed(struct uskb *skb)
{
	struct uskb_shared_info *shinfo = uskb_shinfo(skb);
	int i;

	if (!(shinfo->flags & USKB_SKBFL_MANAGED_FRAG_REFS))
		return;
	for (i = 0; i < shinfo->nr_frags; i++)
		uskb_page_get(shinfo->frags[i].page);
	shinfo->flags &= (uint8_t)~USKB_SKBFL_MANAGED_FRAG_REFS;
}

int uskb_copy_ubufs(struct uskb *skb)
{
	struct uskb_shared_info *shinfo;
	struct uskb_page *page, *head = NULL;
	unsigned int order = 0, pagelen = 0, new_frags, i, psize, d_off;
	int num_frags;

	if (uskb_shared(skb) || __uskb_unclone_keep_frags(skb))
		return -EINVAL;
	shinfo = uskb_shinfo(skb);
	num_frags = shinfo->nr_frags;
	if (!num_frags)
		goto release;
	for (i = 0; i < (unsigned int)num_frags; i++)
		pagelen += shinfo->frags[i].len;
	/* the smallest order whose 17 frags can hold it */
	while (((size_t)USKB_PAGE_SIZE << order) * USKB_MAX_SKB_FRAGS < pagelen)
		order++;
	if (order > USKB_PAGE_MAX_ORDER)
		return -ENOMEM;
	psize = USKB_PAGE_SIZE << order;
	new_frags = (pagelen + psize - 1) / psize;
	for (i = 0; i < new_frags; i++) {
		page = uskb_page_alloc(order);
		if (!page) {
			while (head) {
				struct uskb_page *next = (struct uskb_page *)head->private;

				uskb_page_put(head);
				head = next;
			}
			return -ENOMEM;
		}
		page->private = (uintptr_t)head;
		head = page;
	}
	/* copy in order; the chain order of equal pages does not matter */
	page = head;
	d_off = 0;
	for (i = 0; i < (unsigned int)num_frags; i++) {
		const unsigned char *src = uskb_frag_address(&shinfo->frags[i]);
		unsigned int len = shinfo->frags[i].len, done = 0;

		while (done < len) {
			unsigned int copy;

			if (d_off == psize) {
				d_off = 0;
				page = (struct uskb_page *)page->private;
			}
			copy = psize - d_off < len - done ? psize - d_off : len - done;
			memcpy((char *)page->addr + d_off, src + done, copy);
			done += copy;
			d_off += copy;
		}
	}
	/* let go of the user frags (managed ones hold no reference) */
	for (i = 0; i < (unsigned int)num_frags; i++)
		uskb_frag_unref(skb, (int)i);
	for (i = 0; i < new_frags; i++) {
		struct uskb_page *next = (struct uskb_page *)head->private;

		head->private = 0;
		uskb_frag_fill_page_desc(&shinfo->frags[i], head, 0,
					 (int)(i == new_frags - 1 ? d_off : psize));
		head = next;
	}
	shinfo->nr_frags = (uint8_t)new_frags;
release:
	uskb_zcopy_clear(skb, false);
	return 0;
}

int uskb_orphan_frags(struct uskb *skb)
{
	/* likely: no user memory, or a MSG_ZEROCOPY send its owner waits for */
	if (uskb_likely(!uskb_zcopy(skb)) ||
	    (__uskb_shinfo_peek(skb)->flags & USKB_SKBFL_DONT_ORPHAN))
		return 0;
	return uskb_copy_ubufs(skb);
}

int uskb_orphan_frags_rx(struct uskb *skb)
{
	if (uskb_likely(!uskb_zcopy(skb)))
		return 0;
	return uskb_copy_ubufs(skb);
}
