/* SPDX-License-Identifier: MIT */
/*
 * Attaching user memory from an iovec: frags that point at the caller's
 * pages, owned by a ubuf until its completion.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/uio.h>

#include "ubuf/priv.h"

static _Atomic unsigned int zc_min_len = USKB_ZC_MIN_LEN;

void uskb_zerocopy_set_min_len(unsigned int len)
{
	atomic_store(&zc_min_len, len);
}

unsigned int uskb_zerocopy_min_len(void)
{
	return atomic_load(&zc_min_len);
}

int uskb_zerocopy_attach(struct uskb *skb, const struct iovec *iov, int iovcnt,
			 struct uskb_ubuf *uarg, unsigned int copy_len)
{
	size_t total = 0, skip;
	struct __uskb_user_pages *up;
	int i, nfrags = 0, seg;
	unsigned int done = 0;

	if (uskb_unlikely(iovcnt < 0 || !uarg || uskb_is_nonlinear(skb) || uskb_zcopy(skb)))
		return -EINVAL;
	for (i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len > (1u << 30) || total + iov[i].iov_len > (1u << 30))
			return -EMSGSIZE;
		total += iov[i].iov_len;
	}
	if (copy_len > total)
		copy_len = (unsigned int)total;
	/* frags needed after the copied prefix: one per remaining segment */
	skip = copy_len;
	for (i = 0; i < iovcnt; i++) {
		if (skip >= iov[i].iov_len) {
			skip -= iov[i].iov_len;
			continue;
		}
		skip = 0;
		nfrags++;
	}
	if (nfrags == 0 || nfrags > USKB_MAX_SKB_FRAGS ||
	    total < atomic_load_explicit(&zc_min_len, memory_order_relaxed)) {
		/* small, or too scattered: copy it all; the owner hears "copied" */
		if ((size_t)uskb_tailroom(skb) < total)
			return -EMSGSIZE;
		for (i = 0; i < iovcnt; i++)
			if (iov[i].iov_len)
				uskb_put_data(skb, iov[i].iov_base, (unsigned int)iov[i].iov_len);
		atomic_store_explicit(&uarg->copied, true, memory_order_relaxed);
		return 0;
	}
	if ((unsigned int)uskb_tailroom(skb) < copy_len)
		return -EMSGSIZE;
	/*
	 * malloc, and each descriptor written whole below, not memset: gcc
	 * makes malloc + memset a calloc, which glibc 2.36 serves past its
	 * per-thread cache (callgrind: 149 instructions a call against 41,
	 * and the free after it 107 against 88).
	 */
	up = uskb_should_fail() ? NULL : malloc(sizeof(*up) + (size_t)nfrags * sizeof(struct uskb_page));
	if (!up)
		return -ENOMEM;
	up->n = (unsigned int)nfrags;
	/* the head: the first copy_len bytes */
	for (i = 0; i < iovcnt && done < copy_len; i++) {
		unsigned int c = iov[i].iov_len < copy_len - done ? (unsigned int)iov[i].iov_len :
								     copy_len - done;

		if (c)
			uskb_put_data(skb, iov[i].iov_base, c);
		done += c;
	}
	/* the rest: frags straight into the caller's memory, references managed by the ubuf */
	skip = copy_len;
	seg = 0;
	for (i = 0; i < iovcnt; i++) {
		struct uskb_page *p;
		size_t off = 0, len = iov[i].iov_len;
		unsigned int order = 0;

		if (skip >= len) {
			skip -= len;
			continue;
		}
		off = skip;
		skip = 0;
		p = &up->pages[seg];
		while (((size_t)USKB_PAGE_SIZE << order) < len)
			order++;
		*p = (struct uskb_page){ .flags = USKB_PG_EXTERNAL | USKB_PG_READONLY,
					 .order = (uint8_t)order,
					 .node = USKB_NO_NODE,
					 .addr = iov[i].iov_base };
		atomic_init(&p->refcount, 1); /* the ubuf's; never dropped */
		uskb_frag_fill_page_desc(&uskb_shinfo(skb)->frags[seg], p, (int)off, (int)(len - off));
		skb->len += (unsigned int)(len - off);
		skb->data_len += (unsigned int)(len - off);
		seg++;
	}
	uskb_shinfo(skb)->nr_frags = (uint8_t)seg;
	up->next = uarg->priv;
	uarg->priv = up;
	uskb_zcopy_set(skb, uarg, NULL);
	uskb_shinfo(skb)->flags |= USKB_SKBFL_MANAGED_FRAG_REFS | USKB_SKBFL_SHARED_FRAG;
	if (uarg->ops->link_skb) {
		int err = uarg->ops->link_skb(skb, uarg);

		if (err)
			return err; /* the skb holds the data; freeing it completes the ubuf */
	}
	return 0;
}
