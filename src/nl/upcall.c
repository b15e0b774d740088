/* SPDX-License-Identifier: MIT */
/*
 * The upcall message of seed 004 (queue_userspace_packet): the packet's key
 * and the packet, in a generic netlink message, with the packet referenced
 * by uskb_zerocopy() instead of copied — or copied, as the stock path did,
 * for comparison. Both give the same bytes.
 */
#include <errno.h>
#include <string.h>

#include "uskb/csum.h"
#include "uskb/ovs.h"
#include "uskb/ubuf.h"
#include "lib/compiler.h"

/* upcall_msg_size(): what the message may need, with @hlen packet bytes in its head */
static unsigned int msg_size(const struct uskb_ovs_upcall_info *info, unsigned int hlen)
{
	unsigned int size = NLMSG_ALIGN(sizeof(struct ovs_header)) +
			    (unsigned int)uskb_nla_total_size((int)hlen) + /* PACKET */
			    (unsigned int)uskb_nla_total_size(USKB_OVS_KEY_ATTR_MAX_SIZE) +
			    (unsigned int)uskb_nla_total_size(sizeof(uint32_t)) + /* LEN */
			    (unsigned int)uskb_nla_total_size(sizeof(uint64_t)); /* HASH */

	if (info->userdata)
		size += NLA_ALIGN(info->userdata->nla_len);
	return NLMSG_ALIGN(GENL_HDRLEN + size);
}

/*
 * skb_copy_and_csum_dev() into @to: the frame, and a CHECKSUM_PARTIAL one's
 * checksum completed in the copy (checked as uskb_checksum_help() checks
 * it, and folded the same way, so both modes agree to the byte).
 */
static int copy_and_csum(const struct uskb *skb, uint8_t *to)
{
	int start, field;
	uskb_wsum csum;
	uskb_sum16 folded;

	if (uskb_copy_bits(skb, 0, to, (int)skb->len))
		return -EFAULT;
	if (skb->ip_summed != USKB_CHECKSUM_PARTIAL)
		return 0;
	start = uskb_checksum_start_offset(skb);
	field = start + skb->csum_offset;
	if (__uskb_shinfo_peek(skb)->gso_size || start < 0 || start >= (int)uskb_headlen(skb) ||
	    field + 2 > (int)uskb_headlen(skb))
		return -EINVAL;
	csum = uskb_csum_partial(to + start, skb->len - (unsigned int)start, 0);
	folded = uskb_csum_fold(csum);
	if (!folded)
		folded = USKB_CSUM_MANGLED_0;
	memcpy(to + field, &folded, 2);
	return 0;
}

/*
 * The pad after the packet, zeros: in the head when the packet ended there
 * and it has room, else a frag of the shared zero page.
 */
static int pad_packet(struct uskb *msg)
{
	unsigned int pad = NLA_ALIGN(msg->len) - msg->len;
	struct uskb_shared_info *sh = uskb_shinfo(msg);
	int i = sh->nr_frags;

	if (!pad)
		return 0;
	if (!i && uskb_tailroom(msg) >= (int)pad) {
		uskb_put_zero(msg, pad);
		return 0;
	}
	if (i >= USKB_MAX_SKB_FRAGS)
		return -EMSGSIZE; /* the caller made sure there is a slot */
	uskb_fill_page_desc(msg, i, uskb_zero_page(), 0, (int)pad);
	uskb_frag_ref(msg, i);
	msg->len += pad;
	msg->data_len += pad;
	return 0;
}

struct uskb *uskb_ovs_upcall(struct uskb *skb, const struct uskb_ovs_key *key,
			     const struct uskb_ovs_upcall_info *info, int *err)
{
	bool copy = info->flags & USKB_OVS_UPCALL_COPY;
	bool pad = !(info->flags & USKB_OVS_UPCALL_UNALIGNED);
	struct ovs_header *oh;
	struct nlmsghdr *nlh;
	struct nlattr *nla;
	struct uskb *msg;
	unsigned int hlen;
	int ret;

	if (uskb_nla_attr_size((int)skb->len) > 0xffff) {
		ret = -EFBIG;
		goto fail;
	}
	if (!copy && skb->ip_summed == USKB_CHECKSUM_PARTIAL && (ret = uskb_checksum_help(skb)))
		goto fail;
	if (copy) {
		hlen = skb->len;
	} else {
		hlen = uskb_zerocopy_headlen(skb);
		/* the zero pad needs a frag slot of its own: else copy it all (the
		 * shinfo is read here, after uskb_checksum_help() may have moved it) */
		if (pad && hlen < skb->len && (skb->len & (NLA_ALIGNTO - 1)) &&
		    __uskb_shinfo_peek(skb)->nr_frags + (hlen == 0) >= USKB_MAX_SKB_FRAGS)
			hlen = skb->len;
	}
	if (info->userdata && (info->userdata->nla_len < NLA_HDRLEN)) {
		ret = -EINVAL;
		goto fail;
	}
	/* + NLA_ALIGNTO: uskb_zerocopy() may copy it all when it fits, pad included */
	msg = uskb_nlmsg_new(msg_size(info, hlen) + NLA_ALIGNTO);
	if (!msg) {
		ret = -ENOMEM;
		goto fail;
	}
	ret = -EMSGSIZE;
	oh = uskb_genlmsg_put(msg, info->portid, 0, info->family, sizeof(*oh), 0, info->cmd,
			      OVS_PACKET_VERSION);
	if (!oh)
		goto fail_msg;
	oh->dp_ifindex = info->dp_ifindex;
	nlh = (struct nlmsghdr *)msg->data;
	if (uskb_ovs_key_put(msg, key, OVS_PACKET_ATTR_KEY))
		goto fail_msg;
	if (info->userdata &&
	    uskb_nla_put(msg, OVS_PACKET_ATTR_USERDATA, info->userdata->nla_len - NLA_HDRLEN,
			 uskb_nla_data(info->userdata)))
		goto fail_msg;
	if (uskb_nla_put_u64(msg, OVS_PACKET_ATTR_HASH, info->hash))
		goto fail_msg;
	/* only the header: the packet follows it */
	nla = uskb_nla_reserve(msg, OVS_PACKET_ATTR_PACKET, 0);
	if (!nla)
		goto fail_msg;
	nla->nla_len = (uint16_t)uskb_nla_attr_size((int)skb->len);
	if (copy) {
		if (uskb_tailroom(msg) < (int)skb->len)
			goto fail_msg;
		ret = copy_and_csum(skb, uskb_put(msg, skb->len));
	} else {
		ret = uskb_zerocopy(msg, skb, (int)skb->len, (int)hlen);
	}
	if (ret)
		goto fail_msg;
	if (pad && (ret = pad_packet(msg)))
		goto fail_msg;
	nlh->nlmsg_len = msg->len;
	return msg;
fail_msg:
	uskb_free(msg);
fail:
	if (err)
		*err = ret;
	return NULL;
}
