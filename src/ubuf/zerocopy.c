/* SPDX-License-Identifier: MIT */
/*
 * skb_zerocopy: a message whose frags reference another packet's data
 * (its head by page reference), after skb_zerocopy_headlen decided what to
 * copy.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "ubuf/priv.h"

unsigned int uskb_zerocopy_headlen(const struct uskb *from)
{
	unsigned int hlen = 0;

	if (!from->head_frag || uskb_headlen(from) < USKB_CACHE_BYTES ||
	    __uskb_shinfo_peek(from)->nr_frags >= USKB_MAX_SKB_FRAGS) {
		hlen = uskb_headlen(from);
		if (!hlen)
			hlen = from->len;
	}
	if (uskb_has_frag_list(from))
		hlen = from->len;
	return hlen;
}

/* skb_tx_error(): the send failed; the owner hears (as sent, as the kernel says). */
static void tx_error(struct uskb *skb)
{
	uskb_zcopy_downgrade_managed(skb);
	uskb_zcopy_clear(skb, true);
}

int uskb_zerocopy(struct uskb *to, struct uskb *from, int len, int hlen)
{
	struct uskb_shared_info *tsh = uskb_shinfo(to), *fsh;
	int i, j = 0, plen = 0, ret;

	if (uskb_unlikely(!from->head_frag && !hlen && uskb_headlen(from)))
		uskb_bug("zerocopy", from, "a kmalloc head cannot be shared: hlen must be set");
	if (uskb_unlikely(len < 0 || hlen < 0 || hlen > len || len > (int)from->len))
		return -EFAULT;
	/* small payloads are not worth the frags */
	if (len <= uskb_tailroom(to))
		return uskb_copy_bits(from, 0, uskb_put(to, (unsigned int)len), len);
	if (hlen) {
		if ((unsigned int)hlen > (unsigned int)uskb_tailroom(to))
			return -EFAULT;
		ret = uskb_copy_bits(from, 0, uskb_put(to, (unsigned int)hlen), hlen);
		if (uskb_unlikely(ret))
			return ret;
		len -= hlen;
	} else {
		plen = (int)uskb_headlen(from) < len ? (int)uskb_headlen(from) : len;
		if (plen) {
			/* frag 0 is from's head, by page reference */
			struct uskb_page *page = uskb_virt_to_page(from->head);

			uskb_frag_fill_page_desc(&tsh->frags[0], page,
						 (int)(from->data - (unsigned char *)page->addr), plen);
			uskb_page_get(page);
			tsh->nr_frags = 1;
			j = 1;
			len -= plen;
		}
	}
	to->len += (unsigned int)(len + plen);
	to->data_len += (unsigned int)(len + plen);
	if (uskb_unlikely(uskb_orphan_frags(from))) {
		tx_error(from);
		return -ENOMEM;
	}
	uskb_zerocopy_clone(to, from);
	fsh = uskb_shinfo(from);
	for (i = 0; i < fsh->nr_frags && len; i++) {
		int size;

		if (uskb_unlikely(j == USKB_MAX_SKB_FRAGS))
			uskb_bug("zerocopy", to, "more than %d frags", USKB_MAX_SKB_FRAGS);
		tsh->frags[j] = fsh->frags[i];
		size = (int)tsh->frags[j].len < len ? (int)tsh->frags[j].len : len;
		tsh->frags[j].len = (uint32_t)size;
		len -= size;
		uskb_frag_ref(to, j);
		j++;
	}
	tsh->nr_frags = (uint8_t)j;
	return 0;
}
