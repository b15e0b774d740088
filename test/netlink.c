/* SPDX-License-Identifier: MIT */
/*
 * Netlink messages built in skbs (uskb/netlink.h), read back with libmnl's
 * parser and validator: a generic netlink message with a family header,
 * integers of each width, a flag, a nest with NLA_F_NESTED and one without,
 * a payload of every length from 0 to 8 (the pads zero, whatever the skb's
 * memory held), and nothing written when the tailroom is short.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uskb/uskb.h>
#include "t.h"

#ifdef USKB_HAVE_MNL
#include <libmnl/libmnl.h>

enum { A_U8 = 1, A_U16, A_U32, A_U64, A_FLAG, A_NEST, A_OLDNEST, A_BLOB, A_MAX };

struct seen {
	int n;
	const struct nlattr *tb[A_MAX + 1];
};

static int attr_cb(const struct nlattr *attr, void *data)
{
	struct seen *s = data;
	int type = mnl_attr_get_type(attr);
	static const enum mnl_attr_data_type want[A_MAX] = {
		[A_U8] = MNL_TYPE_U8,	    [A_U16] = MNL_TYPE_U16,	[A_U32] = MNL_TYPE_U32,
		[A_U64] = MNL_TYPE_U64,	    [A_FLAG] = MNL_TYPE_FLAG,	[A_NEST] = MNL_TYPE_NESTED,
		[A_OLDNEST] = MNL_TYPE_NESTED, [A_BLOB] = MNL_TYPE_BINARY,
	};

	if (type <= 0 || type >= A_MAX || mnl_attr_validate(attr, want[type]) < 0)
		return MNL_CB_ERROR;
	s->tb[type] = attr;
	s->n++;
	return MNL_CB_OK;
}

/* the bytes of a linear skb whose memory was dirty before the builders ran */
static struct uskb *dirty_skb(unsigned int size)
{
	struct uskb *skb = uskb_alloc(size);

	memset(skb->data, 0xa5, (size_t)uskb_tailroom(skb));
	return skb;
}

static void test_message(void)
{
	struct uskb *skb = dirty_skb(1024);
	struct nlmsghdr *nlh;
	struct nlattr *nest, *old;
	struct seen s = { 0 };
	uint32_t *fam;
	const struct genlmsghdr *g;
	char buf[1024];
	int len;

	fam = uskb_genlmsg_put(skb, 7, 42, 0x1234, sizeof(*fam), NLM_F_REQUEST, 3, 1);
	CHECK(fam);
	if (!fam) {
		uskb_free(skb);
		return;
	}
	*fam = 0xdeadbeef;
	nlh = (struct nlmsghdr *)skb->data;
	CHECK_EQ(uskb_nla_put_u8(skb, A_U8, 0x11), 0);
	CHECK_EQ(uskb_nla_put_u16(skb, A_U16, 0x2222), 0);
	CHECK_EQ(uskb_nla_put_u32(skb, A_U32, 0x33333333), 0);
	CHECK_EQ(uskb_nla_put_u64(skb, A_U64, 0x4444444455555555ull), 0);
	CHECK_EQ(uskb_nla_put_flag(skb, A_FLAG), 0);
	nest = uskb_nla_nest_start(skb, A_NEST);
	CHECK(nest);
	CHECK_EQ(uskb_nla_put_u32(skb, 1, 9), 0);
	CHECK_EQ(uskb_nla_put(skb, 2, 3, "abc"), 0);
	CHECK(uskb_nla_nest_end(skb, nest) > 0);
	old = uskb_nla_nest_start_noflag(skb, A_OLDNEST);
	CHECK(old && !(old->nla_type & NLA_F_NESTED));
	CHECK_EQ(uskb_nla_put_u16(skb, 1, 5), 0);
	uskb_nla_nest_end(skb, old);
	CHECK_EQ(uskb_nla_put(skb, A_BLOB, 5, "hello"), 0);
	len = uskb_nlmsg_end(skb, nlh);
	CHECK_EQ(len, (int)skb->len);
	CHECK_EQ(nlh->nlmsg_len, skb->len);
	CHECK_EQ(skb->len % 4, 0);

	/* libmnl reads it back */
	memcpy(buf, skb->data, skb->len);
	nlh = (struct nlmsghdr *)buf;
	CHECK(mnl_nlmsg_ok(nlh, (int)skb->len));
	CHECK_EQ(nlh->nlmsg_type, 0x1234);
	CHECK_EQ(nlh->nlmsg_flags, NLM_F_REQUEST);
	CHECK_EQ(nlh->nlmsg_seq, 42);
	CHECK_EQ(nlh->nlmsg_pid, 7);
	g = mnl_nlmsg_get_payload(nlh);
	CHECK_EQ(g->cmd, 3);
	CHECK_EQ(g->version, 1);
	CHECK_EQ(g->reserved, 0);
	CHECK_EQ(*(uint32_t *)((const char *)g + GENL_HDRLEN), 0xdeadbeef);
	CHECK_EQ(mnl_attr_parse(nlh, GENL_HDRLEN + sizeof(*fam), attr_cb, &s), MNL_CB_OK);
	CHECK_EQ(s.n, A_MAX - 1);
	if (s.n == A_MAX - 1) {
		struct seen in = { 0 };

		CHECK_EQ(mnl_attr_get_u8(s.tb[A_U8]), 0x11);
		CHECK_EQ(mnl_attr_get_u16(s.tb[A_U16]), 0x2222);
		CHECK_EQ(mnl_attr_get_u32(s.tb[A_U32]), 0x33333333);
		CHECK(mnl_attr_get_u64(s.tb[A_U64]) == 0x4444444455555555ull);
		CHECK_EQ(mnl_attr_get_payload_len(s.tb[A_FLAG]), 0);
		CHECK(s.tb[A_NEST]->nla_type & NLA_F_NESTED);
		CHECK(!memcmp(mnl_attr_get_payload(s.tb[A_BLOB]), "hello", 5));
		/* the blob's three bytes of pad are zero, not the skb's old 0xa5 */
		CHECK(!memcmp((const char *)mnl_attr_get_payload(s.tb[A_BLOB]) + 5, "\0\0\0", 3));
		mnl_attr_for_each_nested(old, s.tb[A_NEST])
			in.n++;
		CHECK_EQ(in.n, 2);
		CHECK_EQ(mnl_attr_get_payload_len(s.tb[A_OLDNEST]), 8);
	}
	uskb_free(skb);
}

/* every payload length: the attribute's length, its pad of zeros, the next one where it belongs */
static void test_pads(void)
{
	for (int n = 0; n <= 8; n++) {
		struct uskb *skb = dirty_skb(256);
		struct nlmsghdr *nlh = uskb_nlmsg_put(skb, 0, 0, 16, 0, 0);
		const struct nlattr *a;
		unsigned char data[8];
		int i = 0;

		memset(data, 0x5a, sizeof(data));
		CHECK(nlh);
		CHECK_EQ(uskb_nla_put(skb, 1, n, data), 0);
		CHECK_EQ(uskb_nla_put_u32(skb, 2, 77), 0);
		uskb_nlmsg_end(skb, nlh);
		CHECK_EQ(skb->len, (unsigned int)(NLMSG_HDRLEN + uskb_nla_total_size(n) + 8));
		mnl_attr_for_each(a, nlh, 0) {
			if (i == 0) {
				CHECK_EQ(mnl_attr_get_payload_len(a), n);
				for (int k = n; k < NLA_ALIGN(n); k++)
					CHECK_EQ(((const unsigned char *)mnl_attr_get_payload(a))[k], 0);
			} else {
				CHECK_EQ(mnl_attr_get_u32(a), 77);
			}
			i++;
		}
		CHECK_EQ(i, 2);
		uskb_free(skb);
	}
}

/* short tailroom: NULL or -EMSGSIZE, and nothing written */
static void test_no_room(void)
{
	struct uskb *skb = uskb_nlmsg_new(16);
	struct nlmsghdr *nlh;
	struct nlattr *nest;
	unsigned int len;

	CHECK(skb);
	if (!skb)
		return;
	CHECK(uskb_tailroom(skb) >= uskb_nlmsg_total_size(16));
	nlh = uskb_nlmsg_put(skb, 0, 0, 16, 0, 0);
	CHECK(nlh);
	while (uskb_tailroom(skb) >= uskb_nla_total_size(4))
		CHECK_EQ(uskb_nla_put_u32(skb, 1, 1), 0);
	len = skb->len;
	CHECK_EQ(uskb_nla_put_u32(skb, 1, 1), -EMSGSIZE);
	CHECK_EQ(uskb_nla_put_u64(skb, 1, 1), -EMSGSIZE);
	CHECK(!uskb_nla_reserve(skb, 1, 100));
	CHECK(!uskb_nla_reserve(skb, 1, -1));
	CHECK(!uskb_nlmsg_put(skb, 0, 0, 16, 0, 0));
	CHECK(!uskb_genlmsg_put(skb, 0, 0, 16, 0, 0, 1, 1));
	CHECK(!uskb_genlmsg_put(skb, 0, 0, 16, 0x7fffffff, 0, 1, 1));
	CHECK(!uskb_genlmsg_put(skb, 0, 0, 16, -1, 0, 1, 1));
	CHECK_EQ(skb->len, len);
	/* a nest cancelled leaves the message as it was */
	uskb_trim(skb, NLMSG_HDRLEN);
	nest = uskb_nla_nest_start(skb, 3);
	CHECK(nest);
	uskb_nla_put_u8(skb, 1, 1);
	uskb_nla_nest_cancel(skb, nest);
	CHECK_EQ(skb->len, (unsigned int)NLMSG_HDRLEN);
	uskb_free(skb);
	/* an attribute longer than nla_len can say */
	skb = uskb_alloc(70000);
	CHECK(!uskb_nla_reserve(skb, 1, 65532));
	nest = uskb_nla_nest_start(skb, 1);
	while (skb->len < 66000)
		uskb_nla_reserve(skb, 2, 1000);
	CHECK_EQ(uskb_nla_nest_end(skb, nest), -EMSGSIZE);
	CHECK_EQ(skb->len, 0);
	uskb_free(skb);
}

int main(void)
{
	test_message();
	test_pads();
	test_no_room();
	return t_end("netlink");
}

#else

int main(void)
{
	fprintf(stderr, "netlink: skipped: built without libmnl-dev (scripts/deps.sh)\n");
	return 77;
}

#endif
