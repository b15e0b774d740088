/* SPDX-License-Identifier: MIT */
/**
 * @file netlink.h
 * Netlink messages built in skbs, as the kernel's include/net/netlink.h and
 * genetlink.h build them: a struct nlmsghdr, an optional family header,
 * then attributes (struct nlattr), each padded to NLA_ALIGNTO (4) with
 * zeros. The layout is the kernel's uapi (linux/netlink.h,
 * linux/genetlink.h), so any netlink parser reads what these write (the
 * tests check them against libmnl).
 *
 * Every builder writes at the skb's tail, into its linear area, and fails
 * (NULL, or -EMSGSIZE) without writing anything when the tailroom is short,
 * as the kernel's do: a message is sized first (uskb_nlmsg_total_size(),
 * uskb_nla_total_size()) and allocated with uskb_nlmsg_new().
 */
#ifndef USKB_NETLINK_H
#define USKB_NETLINK_H

#include <stdint.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>

#include "skb.h"

#ifdef __cplusplus
extern "C" {
#endif

/** nlmsg_msg_size(): a message's length without trailing pad. */
USKB_INLINE int uskb_nlmsg_msg_size(int payload)
{
	return NLMSG_HDRLEN + payload;
}

/** nlmsg_total_size(): a message's length with its pad. */
USKB_INLINE int uskb_nlmsg_total_size(int payload)
{
	return NLMSG_ALIGN(uskb_nlmsg_msg_size(payload));
}

/** nla_attr_size(): an attribute's length without trailing pad. */
USKB_INLINE int uskb_nla_attr_size(int payload)
{
	return NLA_HDRLEN + payload;
}

/** nla_total_size(): an attribute's length with its pad. */
USKB_INLINE int uskb_nla_total_size(int payload)
{
	return NLA_ALIGN(uskb_nla_attr_size(payload));
}

/** nlmsg_data(): the payload after the header. */
USKB_INLINE void *uskb_nlmsg_data(const struct nlmsghdr *nlh)
{
	return (unsigned char *)nlh + NLMSG_HDRLEN;
}

/** nla_data(): an attribute's payload. */
USKB_INLINE void *uskb_nla_data(const struct nlattr *nla)
{
	return (unsigned char *)nla + NLA_HDRLEN;
}

/**
 * nlmsg_new(): an skb for a message of @payload bytes (uskb_nlmsg_total_size
 * of it), NULL when memory ran out.
 */
USKB_API struct uskb *uskb_nlmsg_new(unsigned int payload);

/**
 * nlmsg_put(): a message header at the tail, with room for @payload bytes
 * after it (zeroed, and padded); nlmsg_len covers them until
 * uskb_nlmsg_end(). NULL when the tailroom is short.
 */
USKB_API struct nlmsghdr *uskb_nlmsg_put(struct uskb *skb, uint32_t portid, uint32_t seq,
					 int type, int payload, int flags);

/**
 * genlmsg_put(): a message of generic netlink family @family (its id, the
 * nlmsg_type) with a genlmsghdr (@cmd, @version) and @hdrsize bytes of
 * the family's own header after it (zeroed). Returns that family header
 * (where the genlmsghdr ends), NULL when the tailroom is short.
 */
USKB_API void *uskb_genlmsg_put(struct uskb *skb, uint32_t portid, uint32_t seq,
				uint16_t family, int hdrsize, int flags, uint8_t cmd,
				uint8_t version);

/** nlmsg_end(): nlmsg_len from @nlh to the skb's tail; returns skb->len. */
USKB_API int uskb_nlmsg_end(struct uskb *skb, struct nlmsghdr *nlh);

/**
 * nla_reserve(): an attribute of @attrtype with room for @attrlen bytes;
 * its pad is zeroed, its payload is the caller's to write. NULL when the
 * tailroom is short.
 */
USKB_API struct nlattr *uskb_nla_reserve(struct uskb *skb, int attrtype, int attrlen);

/** nla_put(): an attribute with @attrlen bytes of @data (and zero pad); 0 or -EMSGSIZE. */
USKB_API int uskb_nla_put(struct uskb *skb, int attrtype, int attrlen, const void *data);
/** nla_put_u8() and the others: an attribute of one integer, in host order. */
USKB_API int uskb_nla_put_u8(struct uskb *skb, int attrtype, uint8_t value);
USKB_API int uskb_nla_put_u16(struct uskb *skb, int attrtype, uint16_t value);
USKB_API int uskb_nla_put_u32(struct uskb *skb, int attrtype, uint32_t value);
/** nla_put_u64_64bit() without the pad attribute: 8 bytes, 4-aligned (as libmnl reads them). */
USKB_API int uskb_nla_put_u64(struct uskb *skb, int attrtype, uint64_t value);
/** nla_put_flag(): an attribute with no payload. */
USKB_API int uskb_nla_put_flag(struct uskb *skb, int attrtype);

/**
 * nla_nest_start(): an attribute that will hold attributes, with
 * NLA_F_NESTED set in its type; uskb_nla_nest_start_noflag() leaves the
 * type as given (what Open vSwitch's keys use). NULL when the tailroom is
 * short.
 */
USKB_API struct nlattr *uskb_nla_nest_start(struct uskb *skb, int attrtype);
USKB_API struct nlattr *uskb_nla_nest_start_noflag(struct uskb *skb, int attrtype);
/** nla_nest_end(): the nest's length up to the tail; returns skb->len. */
USKB_API int uskb_nla_nest_end(struct uskb *skb, struct nlattr *start);
/** nla_nest_cancel(): trim the skb back to before @start. */
USKB_API void uskb_nla_nest_cancel(struct uskb *skb, struct nlattr *start);

#ifdef __cplusplus
}
#endif

#endif
