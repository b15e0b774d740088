/* SPDX-License-Identifier: MIT */
/* Checksums on skbs: skb_checksum_help and skb_partial_csum_set. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "skb/priv.h"

int uskb_checksum_help(struct uskb *skb)
{
	uskb_wsum csum;
	int ret, offset;
	uskb_sum16 folded;

	if (skb->ip_summed == USKB_CHECKSUM_COMPLETE)
		goto out_set_summed;
	if (__uskb_shinfo_peek(skb)->gso_size)
		return -EINVAL;
	/* frags that may change under us (user memory) cannot be summed in place */
	if (uskb_has_shared_frag(skb)) {
		ret = uskb_linearize(skb);
		if (ret)
			return ret;
	}
	offset = uskb_checksum_start_offset(skb);
	if (offset < 0 || offset >= (int)uskb_headlen(skb))
		return -EINVAL;
	csum = uskb_checksum(skb, offset, (int)skb->len - offset, 0);
	offset += skb->csum_offset;
	if (offset + (int)sizeof(uskb_sum16) > (int)uskb_headlen(skb))
		return -EINVAL;
	ret = uskb_ensure_writable(skb, (unsigned int)offset + sizeof(uskb_sum16));
	if (ret)
		return ret;
	folded = uskb_csum_fold(csum);
	if (!folded)
		folded = USKB_CSUM_MANGLED_0;
	memcpy(skb->data + offset, &folded, sizeof(folded));
out_set_summed:
	skb->ip_summed = USKB_CHECKSUM_NONE;
	return 0;
}

bool uskb_partial_csum_set(struct uskb *skb, uint16_t start, uint16_t off)
{
	uint32_t csum_end = (uint32_t)start + off + sizeof(uskb_sum16);
	uint32_t csum_start = uskb_headroom(skb) + start;

	if (csum_start >= 0xffff || csum_end > uskb_headlen(skb))
		return false;
	skb->ip_summed = USKB_CHECKSUM_PARTIAL;
	skb->csum_start = (uint16_t)csum_start;
	skb->csum_offset = off;
	skb->transport_header = (uint16_t)csum_start;
	return true;
}
