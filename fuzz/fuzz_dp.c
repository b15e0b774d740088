/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target over uskb-dp's two parsers. The first byte picks one:
 *  - even: the rest is a frame. Its key is extracted from a linear skb and
 *    from a paged one (the same bytes, split where the input says); both
 *    must agree. The key is written as attributes (uskb_ovs_key_put) and
 *    read back by the datapath's parser (msg_key_exact), which must take it and
 *    give the same key back (but for a VLAN tag cut short, whose TPID the
 *    attributes cannot say). An upcall is built in both modes; the two
 *    must be byte-identical and parse.
 *  - odd: the rest is a netlink message from a handler: msg_parse, then the
 *    key, the actions and the packet as the datapath would take them.
 * Nothing may crash, leak or trip a sanitizer.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <libmnl/libmnl.h>
#include <linux/if_ether.h>

#include "../tools/dp/dp.h"

static bool vlan_type(uint16_t be)
{
	return be == htons(ETH_P_8021Q) || be == htons(ETH_P_8021AD);
}

static struct uskb *paged(const uint8_t *f, size_t n, size_t split)
{
	struct uskb *skb = uskb_alloc((unsigned int)split + 1);
	struct uskb_page *pg;

	uskb_put_data(skb, f, (unsigned int)split);
	if (n > split) {
		pg = uskb_page_alloc(0);
		if (!pg) {
			uskb_free(skb);
			return NULL;
		}
		memset(uskb_page_address(pg), 0x77, uskb_page_size(pg));
		memcpy(uskb_page_address(pg), f + split, n - split);
		uskb_add_rx_frag(skb, 0, pg, 0, (int)(n - split), uskb_page_size(pg));
	}
	return skb;
}

static void frame(const uint8_t *f, size_t n, uint8_t split_seed)
{
	struct uskb_ovs_key a, b, back;
	struct uskb *lin, *pg, *msg;
	size_t split;
	int ra, rb;

	if (n > 4000)
		n = 4000;
	split = n ? split_seed % (n + 1) : 0;
	lin = uskb_alloc((unsigned int)n + 1);
	uskb_put_data(lin, f, (unsigned int)n);
	pg = paged(f, n, split);
	ra = uskb_ovs_key_extract(lin, 5, &a);
	rb = pg ? uskb_ovs_key_extract(pg, 5, &b) : ra;
	if (pg && (ra != rb || (!ra && memcmp(&a, &b, sizeof(a)))))
		abort(); /* the key depends on the skb's geometry */
	if (!ra) {
		const char *why;

		msg = uskb_alloc(USKB_OVS_KEY_ATTR_MAX_SIZE);
		if (uskb_ovs_key_put(msg, &a, OVS_FLOW_ATTR_KEY))
			abort(); /* the most a key takes did not fit */
		if (msg_key_exact((const struct nlattr *)msg->data, &back, &why))
			abort(); /* the datapath refused its own key */
		if (memcmp(&a, &back, sizeof(a)) &&
		    !((!a.vlan_tci || !a.cvlan_tci) && vlan_type(a.eth_type)))
			abort();
		uskb_free(msg);
	}
	if (!ra && pg) {
		struct uskb_ovs_upcall_info info = { .family = DP_FAMILY_PACKET, .cmd = 1 };
		struct uskb *m1, *m2;
		int err;

		m1 = uskb_ovs_upcall(pg, &a, &info, &err);
		info.flags = USKB_OVS_UPCALL_COPY;
		m2 = uskb_ovs_upcall(pg, &a, &info, &err);
		if (!m1 != !m2)
			abort();
		if (m1) {
			uint8_t *x = malloc(m1->len), *y = malloc(m2->len);
			struct dp_msg dm;
			const char *why;

			if (m1->len != m2->len || uskb_copy_bits(m1, 0, x, (int)m1->len) ||
			    uskb_copy_bits(m2, 0, y, (int)m2->len) || memcmp(x, y, m1->len))
				abort(); /* zerocopy and copy disagree */
			if (msg_parse(m1->data, uskb_headlen(m1), m1->len, &dm, &why) ||
			    dm.pkt_len != pg->len)
				abort(); /* the datapath cannot read its own upcall */
			free(x);
			free(y);
		}
		uskb_free(m1);
		uskb_free(m2);
	}
	uskb_free(lin);
	uskb_free(pg);
}

static void message(const uint8_t *data, size_t size)
{
	struct uskb_ovs_key k;
	struct actions a;
	struct dp_msg m;
	const char *why;
	struct uskb *skb, *pkt;

	if (size > 70000)
		return;
	skb = uskb_alloc((unsigned int)size + 1);
	uskb_put_data(skb, data, (unsigned int)size);
	if (!msg_parse(skb->data, uskb_headlen(skb), skb->len, &m, &why)) {
		if (!msg_key_exact(m.key, &k, &why)) {
			struct uskb *re = uskb_alloc(USKB_OVS_KEY_ATTR_MAX_SIZE);

			/* what the parser took, it writes back the same */
			if (uskb_ovs_key_put(re, &k, mnl_attr_get_type(m.key)) ||
			    re->len != (unsigned int)NLA_ALIGN(m.key->nla_len) ||
			    memcmp(re->data + NLA_HDRLEN, mnl_attr_get_payload(m.key),
				   m.key->nla_len - NLA_HDRLEN))
				abort();
			uskb_free(re);
		}
		if (!msg_actions(m.actions, 4, &a, &why))
			for (int i = 0; i < a.n; i++)
				if (a.a[i].type == OVS_ACTION_ATTR_OUTPUT && (a.a[i].port < 1 || a.a[i].port > 4))
					abort();
		if (m.pkt_len) {
			pkt = msg_packet(skb, &m);
			if (pkt && pkt->len != m.pkt_len)
				abort();
			uskb_free(pkt);
		}
	}
	uskb_free(skb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	if (data[0] & 1)
		message(data + 1, size - 1);
	else
		frame(data + 2, size - 2, data[1]);
	if (!uskb_stats_all_freed())
		abort();
	return 0;
}
