/* SPDX-License-Identifier: MIT */
/*
 * Netlink messages in skbs: the kernel's nlmsg_put / genlmsg_put / nla_put
 * family, writing at the tail of the linear area. A builder checks the
 * tailroom first and writes nothing when it is short; pads are zeros.
 */
#include <errno.h>
#include <string.h>

#include "uskb/netlink.h"
#include "lib/compiler.h"

/* nla_len is 16 bits: the most an attribute (header included) may hold */
#define NLA_LEN_MAX 0xffff

struct uskb *uskb_nlmsg_new(unsigned int payload)
{
	if (payload > (unsigned int)NLMSG_ALIGN(0x7fffffff - NLMSG_HDRLEN - NLMSG_ALIGNTO)) {
		errno = EMSGSIZE;
		return NULL;
	}
	return uskb_alloc((unsigned int)uskb_nlmsg_total_size((int)payload));
}

struct nlmsghdr *uskb_nlmsg_put(struct uskb *skb, uint32_t portid, uint32_t seq, int type,
				int payload, int flags)
{
	struct nlmsghdr *nlh;

	if (payload < 0 || payload > 0x7fffffff - NLMSG_HDRLEN - (int)NLMSG_ALIGNTO ||
	    uskb_tailroom(skb) < uskb_nlmsg_total_size(payload))
		return NULL;
	nlh = uskb_put_zero(skb, (unsigned int)uskb_nlmsg_total_size(payload));
	nlh->nlmsg_len = (uint32_t)uskb_nlmsg_msg_size(payload);
	nlh->nlmsg_type = (uint16_t)type;
	nlh->nlmsg_flags = (uint16_t)flags;
	nlh->nlmsg_seq = seq;
	nlh->nlmsg_pid = portid;
	return nlh;
}

void *uskb_genlmsg_put(struct uskb *skb, uint32_t portid, uint32_t seq, uint16_t family,
		       int hdrsize, int flags, uint8_t cmd, uint8_t version)
{
	struct nlmsghdr *nlh;
	struct genlmsghdr *g;

	if (hdrsize < 0 || hdrsize > 0x7fffffff - (int)GENL_HDRLEN - NLMSG_HDRLEN - (int)NLMSG_ALIGNTO)
		return NULL; /* the sum below must not overflow */
	nlh = uskb_nlmsg_put(skb, portid, seq, family, GENL_HDRLEN + hdrsize, flags);
	if (!nlh)
		return NULL;
	g = uskb_nlmsg_data(nlh);
	g->cmd = cmd;
	g->version = version;
	g->reserved = 0;
	return (unsigned char *)g + GENL_HDRLEN;
}

int uskb_nlmsg_end(struct uskb *skb, struct nlmsghdr *nlh)
{
	nlh->nlmsg_len = (uint32_t)(uskb_tail_pointer(skb) - (unsigned char *)nlh);
	return (int)skb->len;
}

struct nlattr *uskb_nla_reserve(struct uskb *skb, int attrtype, int attrlen)
{
	struct nlattr *nla;

	if (attrlen < 0 || attrlen > NLA_LEN_MAX - NLA_HDRLEN ||
	    uskb_tailroom(skb) < uskb_nla_total_size(attrlen))
		return NULL;
	nla = uskb_put(skb, (unsigned int)uskb_nla_total_size(attrlen));
	nla->nla_type = (uint16_t)attrtype;
	nla->nla_len = (uint16_t)uskb_nla_attr_size(attrlen);
	memset((unsigned char *)uskb_nla_data(nla) + attrlen, 0,
	       (size_t)(uskb_nla_total_size(attrlen) - uskb_nla_attr_size(attrlen)));
	return nla;
}

int uskb_nla_put(struct uskb *skb, int attrtype, int attrlen, const void *data)
{
	struct nlattr *nla = uskb_nla_reserve(skb, attrtype, attrlen);

	if (!nla)
		return -EMSGSIZE;
	if (attrlen)
		memcpy(uskb_nla_data(nla), data, (size_t)attrlen);
	return 0;
}

int uskb_nla_put_u8(struct uskb *skb, int attrtype, uint8_t value)
{
	return uskb_nla_put(skb, attrtype, sizeof(value), &value);
}

int uskb_nla_put_u16(struct uskb *skb, int attrtype, uint16_t value)
{
	return uskb_nla_put(skb, attrtype, sizeof(value), &value);
}

int uskb_nla_put_u32(struct uskb *skb, int attrtype, uint32_t value)
{
	return uskb_nla_put(skb, attrtype, sizeof(value), &value);
}

int uskb_nla_put_u64(struct uskb *skb, int attrtype, uint64_t value)
{
	return uskb_nla_put(skb, attrtype, sizeof(value), &value);
}

int uskb_nla_put_flag(struct uskb *skb, int attrtype)
{
	return uskb_nla_put(skb, attrtype, 0, NULL);
}

struct nlattr *uskb_nla_nest_start_noflag(struct uskb *skb, int attrtype)
{
	/* the length is set when the nest ends */
	return uskb_nla_reserve(skb, attrtype, 0);
}

struct nlattr *uskb_nla_nest_start(struct uskb *skb, int attrtype)
{
	return uskb_nla_nest_start_noflag(skb, attrtype | NLA_F_NESTED);
}

int uskb_nla_nest_end(struct uskb *skb, struct nlattr *start)
{
	size_t len = (size_t)(uskb_tail_pointer(skb) - (unsigned char *)start);

	if (len > NLA_LEN_MAX) { /* nla_len cannot say it: the nest goes */
		uskb_nla_nest_cancel(skb, start);
		return -EMSGSIZE;
	}
	start->nla_len = (uint16_t)len;
	return (int)skb->len;
}

void uskb_nla_nest_cancel(struct uskb *skb, struct nlattr *start)
{
	uskb_trim(skb, (unsigned int)((unsigned char *)start - skb->data));
}
