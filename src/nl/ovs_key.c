/* SPDX-License-Identifier: MIT */
/*
 * Open vSwitch flow keys: extracted from a frame as the kernel's
 * ovs_flow_key_extract() does (net/openvswitch/flow.c), and written as
 * OVS_KEY_ATTR_* attributes in __ovs_nla_put_key()'s order and sizes.
 *
 * The extractor reads a bounded, contiguous view of the frame (its head
 * when that holds enough, else a copy of the first KEY_WINDOW bytes) and
 * checks every header against the bytes that are really there: where the
 * kernel's pskb_may_pull() would fail, it gives the same zeros.
 */
#include <errno.h>
#include <string.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>

#include "uskb/ovs.h"
#include "lib/compiler.h"

_Static_assert(sizeof(struct uskb_ovs_key) == 120, "uskb_ovs_key must have no padding");

/* headers past this many bytes of a frame are not looked at */
#define KEY_WINDOW 512

#define VLAN_CFI 0x1000
#define IP_MF 0x2000
#define IP_OFFSET 0x1fff

/* OpenFlow 1.2's IPv6 extension header bits (OVS_KEY_ATTR_IPV6_EXTHDRS) */
enum {
	EH_NONEXT = 1 << 0,
	EH_ESP = 1 << 1,
	EH_AUTH = 1 << 2,
	EH_DEST = 1 << 3,
	EH_FRAG = 1 << 4,
	EH_ROUTER = 1 << 5,
	EH_HOP = 1 << 6,
	EH_UNREP = 1 << 7,
	EH_UNSEQ = 1 << 8,
};

enum { NH_HOP = 0, NH_TCP = 6, NH_UDP = 17, NH_SCTP = 132, NH_ROUTING = 43, NH_FRAGMENT = 44, NH_ESP = 50,
       NH_AUTH = 51, NH_ICMPV6 = 58, NH_NONE = 59, NH_DEST = 60, NH_ICMP = 1 };

static inline uint16_t rd16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return v;
}

static inline uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/*
 * The bytes the extractor reads: @n of them at @p. A check for bytes past
 * @n records how far it wanted to read (@want): when the view was the
 * skb's head and the frame goes on, the extractor reads again from a copy.
 */
struct view {
	const uint8_t *p;
	unsigned int n, want;
};

static inline bool has(struct view *v, unsigned int end)
{
	if (end <= v->n)
		return true;
	if (end > v->want)
		v->want = end;
	return false;
}

static bool eth_type_vlan(uint16_t be_type)
{
	return be_type == htons(ETH_P_8021Q) || be_type == htons(ETH_P_8021AD);
}

/* parse_vlan_tag(): one tag at @*off, if there is a whole one (+ the type after it) */
static bool vlan_tag(struct view *v, unsigned int *off, uint16_t *tpid,
		     uint16_t *tci)
{
	const uint8_t *p = v->p;

	if (!eth_type_vlan(rd16(p + *off)) || !has(v, *off + 4 + 2))
		return false;
	*tpid = rd16(p + *off);
	*tci = rd16(p + *off + 2) | htons(VLAN_CFI);
	*off += 4;
	return true;
}

/* parse_ethertype(): the type at @*off; 802.2 unless it is a real type or SNAP carries one */
static uint16_t ethertype(struct view *v, unsigned int *off)
{
	const uint8_t *p = v->p;
	uint16_t proto = rd16(p + *off);
	const uint8_t *llc;

	*off += 2;
	if (ntohs(proto) >= ETH_P_802_3_MIN)
		return proto;
	if (!has(v, *off + 8))
		return htons(ETH_P_802_2);
	llc = p + *off; /* dsap ssap ctrl oui[3] type */
	if (llc[0] != 0xaa || llc[1] != 0xaa || llc[2] != 0x03 || (llc[3] | llc[4] | llc[5]) != 0)
		return htons(ETH_P_802_2);
	*off += 8;
	if (ntohs(rd16(llc + 6)) >= ETH_P_802_3_MIN)
		return rd16(llc + 6);
	return htons(ETH_P_802_2);
}

static void l4_ports(struct view *v, unsigned int th, struct uskb_ovs_key *key)
{
	const uint8_t *p = v->p;

	switch (key->ip_proto) {
	case NH_TCP:
		if (has(v, th + 20)) {
			unsigned int doff = (p[th + 12] >> 4) * 4u;

			if (doff >= 20 && has(v, th + doff)) {
				key->tp_src = rd16(p + th);
				key->tp_dst = rd16(p + th + 2);
				key->tcp_flags = rd16(p + th + 12) & htons(0x0fff);
			}
		}
		break;
	case NH_UDP:
	case NH_SCTP:
		if (has(v, th + (key->ip_proto == NH_UDP ? 8 : 12))) {
			key->tp_src = rd16(p + th);
			key->tp_dst = rd16(p + th + 2);
		}
		break;
	}
}

static void ipv4(struct view *v, unsigned int nh, struct uskb_ovs_key *key)
{
	const uint8_t *p = v->p;
	unsigned int ihl, th;
	uint16_t frag;

	if (!has(v, nh + 20))
		return; /* the kernel zeroes the IP fields: they are zero */
	ihl = (p[nh] & 0x0f) * 4u;
	if (ihl < 20 || !has(v, nh + ihl))
		return;
	key->addr.ipv4.src = rd32(p + nh + 12);
	key->addr.ipv4.dst = rd32(p + nh + 16);
	key->ip_proto = p[nh + 9];
	key->ip_tos = p[nh + 1];
	key->ip_ttl = p[nh + 8];
	frag = ntohs(rd16(p + nh + 6));
	if (frag & IP_OFFSET) {
		key->ip_frag = OVS_FRAG_TYPE_LATER;
		return;
	}
	key->ip_frag = (frag & IP_MF) ? OVS_FRAG_TYPE_FIRST : OVS_FRAG_TYPE_NONE;
	th = nh + ihl;
	if (key->ip_proto == NH_ICMP) {
		if (has(v, th + 8)) {
			key->tp_src = htons(p[th]);
			key->tp_dst = htons(p[th + 1]);
		}
		return;
	}
	l4_ports(v, th, key);
}

static void arp(struct view *v, unsigned int nh, struct uskb_ovs_key *key)
{
	const uint8_t *p = v->p;
	const uint8_t *a = p + nh;
	uint16_t op;

	/* Ethernet/IPv4 ARP only: hrd 1, pro 0x0800, hln 6, pln 4 */
	if (!has(v, nh + 28) || rd16(a) != htons(1) || rd16(a + 2) != htons(ETH_P_IP) || a[4] != 6 ||
	    a[5] != 4)
		return;
	op = ntohs(rd16(a + 6));
	key->ip_proto = op <= 0xff ? (uint8_t)op : 0;
	memcpy(key->arp_sha, a + 8, 6);
	memcpy(&key->addr.ipv4.src, a + 14, 4);
	memcpy(key->arp_tha, a + 18, 6);
	memcpy(&key->addr.ipv4.dst, a + 24, 4);
}

/* ipv6_ext_hdr(): the headers ipv6_find_hdr() steps over (not ESP) */
static bool ipv6_ext(uint8_t next)
{
	return next == NH_HOP || next == NH_ROUTING || next == NH_FRAGMENT || next == NH_AUTH ||
	       next == NH_NONE || next == NH_DEST;
}

/*
 * The extension header bits, as the kernel's get_ipv6_ext_hdrs() sets
 * them: each header it steps over, UNREP for one seen twice (a destination
 * options header may come twice: before a routing header and last), UNSEQ
 * for one out of RFC 8200's order. ESP ends the walk unseen; every header
 * is stepped over by its 8-byte length field.
 */
static uint16_t ipv6_exthdrs(struct view *v, unsigned int off, uint8_t next)
{
	const uint8_t *p = v->p;
	uint16_t bits = 0;
	int dests = 0;

	for (int i = 0; i < 32 && ipv6_ext(next); i++) {
		switch (next) {
		case NH_NONE:
			return bits | EH_NONEXT;
		case NH_AUTH:
			if (bits & EH_AUTH)
				bits |= EH_UNREP;
			if ((bits & ~(EH_HOP | EH_DEST | EH_ROUTER | EH_FRAG | EH_UNREP)) || dests >= 2)
				bits |= EH_UNSEQ;
			bits |= EH_AUTH;
			break;
		case NH_DEST:
			if (dests == 0) {
				if (bits & ~(EH_HOP | EH_UNREP))
					bits |= EH_UNSEQ;
				bits |= EH_DEST;
			} else if (dests == 1) {
				if (bits & ~(EH_HOP | EH_DEST | EH_ROUTER | EH_FRAG | EH_AUTH | EH_ESP | EH_UNREP))
					bits |= EH_UNSEQ;
			} else {
				bits |= EH_UNREP;
			}
			dests++;
			break;
		case NH_FRAGMENT:
			if (bits & EH_FRAG)
				bits |= EH_UNREP;
			if ((bits & ~(EH_HOP | EH_DEST | EH_ROUTER | EH_UNREP)) || dests >= 2)
				bits |= EH_UNSEQ;
			bits |= EH_FRAG;
			break;
		case NH_ROUTING:
			if (bits & EH_ROUTER)
				bits |= EH_UNREP;
			if ((bits & ~(EH_HOP | EH_DEST | EH_UNREP)) || dests >= 2)
				bits |= EH_UNSEQ;
			bits |= EH_ROUTER;
			break;
		case NH_HOP:
			if (bits & EH_HOP)
				bits |= EH_UNREP;
			bits |= bits ? EH_UNSEQ : EH_HOP; /* HOP only when it comes first */
			break;
		}
		if (!has(v, off + 2))
			return bits;
		next = p[off];
		off += (p[off + 1] + 1u) * 8;
	}
	return bits;
}

static void ipv6_nd(struct view *v, unsigned int th, struct uskb_ovs_key *key)
{
	const uint8_t *p = v->p;
	unsigned int off = th + 24;

	if (!has(v, off))
		return;
	memcpy(key->nd_target, p + th + 8, 16);
	while (has(v, off + 8)) {
		unsigned int olen = p[off + 1] * 8u;
		uint8_t *dst = NULL;

		if (!olen || !has(v, off + olen))
			goto invalid;
		if (p[off] == 1 && olen == 8)
			dst = key->arp_sha;
		else if (p[off] == 2 && olen == 8)
			dst = key->arp_tha;
		if (dst) {
			static const uint8_t zero[6];

			if (memcmp(dst, zero, 6)) /* the option came twice */
				goto invalid;
			memcpy(dst, p + off + 2, 6);
		}
		off += olen;
	}
	return;
invalid:
	memset(key->nd_target, 0, 16);
	memset(key->arp_sha, 0, 6);
	memset(key->arp_tha, 0, 6);
}

static void ipv6(struct view *v, unsigned int nh, struct uskb_ovs_key *key)
{
	const uint8_t *p = v->p;
	unsigned int off = nh + 40;
	uint8_t next;
	bool frag = false;

	if (!has(v, nh + 40))
		return;
	key->ip_proto = NH_NONE;
	key->ip_tos = (uint8_t)(ntohs(rd16(p + nh)) >> 4);
	key->ip_ttl = p[nh + 7];
	key->ipv6_label = rd32(p + nh) & htonl(0x000fffff);
	memcpy(key->addr.ipv6.src, p + nh + 8, 16);
	memcpy(key->addr.ipv6.dst, p + nh + 24, 16);
	next = p[nh + 6];
	key->ipv6_exthdrs = ipv6_exthdrs(v, off, next);

	/* ipv6_find_hdr(): skip extension headers to the upper layer */
	while (ipv6_ext(next) && next != NH_NONE) {
		unsigned int len;

		if (!has(v, off + (next == NH_FRAGMENT ? 4 : 2)))
			goto error;
		if (next == NH_FRAGMENT) {
			frag = true;
			if (ntohs(rd16(p + off + 2)) & 0xfff8) {
				/* a later fragment; one whose next header is itself an
				 * extension header is a "first" with no protocol, as
				 * ipv6_find_hdr()'s -ENOENT makes it */
				if (ipv6_ext(p[off]) && p[off] != NH_NONE)
					goto error;
				key->ip_frag = OVS_FRAG_TYPE_LATER;
				key->ip_proto = NH_FRAGMENT;
				return;
			}
			len = 8;
		} else {
			len = next == NH_AUTH ? (p[off + 1] + 2u) * 4 : (p[off + 1] + 1u) * 8;
		}
		next = p[off];
		off += len;
	}
	key->ip_frag = frag ? OVS_FRAG_TYPE_FIRST : OVS_FRAG_TYPE_NONE;
	if (next == NH_NONE)
		return;
	key->ip_proto = next;
	if (next == NH_ICMPV6) {
		if (!has(v, off + 8))
			return;
		key->tp_src = htons(p[off]);
		key->tp_dst = htons(p[off + 1]);
		if (p[off + 1] == 0 && (p[off] == 135 || p[off] == 136))
			ipv6_nd(v, off, key);
		return;
	}
	l4_ports(v, off, key);
	return;
error:
	key->ip_frag = frag ? OVS_FRAG_TYPE_FIRST : OVS_FRAG_TYPE_NONE;
}

/* one pass over @v */
static void extract(struct view *v, struct uskb_ovs_key *key)
{
	const uint8_t *p = v->p;
	unsigned int off = 12;

	memcpy(key->eth_dst, p, 6);
	memcpy(key->eth_src, p + 6, 6);
	if (vlan_tag(v, &off, &key->vlan_tpid, &key->vlan_tci))
		vlan_tag(v, &off, &key->cvlan_tpid, &key->cvlan_tci);
	key->eth_type = ethertype(v, &off);

	switch (ntohs(key->eth_type)) {
	case ETH_P_IP:
		ipv4(v, off, key);
		break;
	case ETH_P_IPV6:
		ipv6(v, off, key);
		break;
	case ETH_P_ARP:
	case ETH_P_RARP:
		arp(v, off, key);
		break;
	}
}

int uskb_ovs_key_extract(const struct uskb *skb, uint32_t in_port, struct uskb_ovs_key *key)
{
	unsigned int window = skb->len < KEY_WINDOW ? skb->len : KEY_WINDOW;
	struct view v = { .p = skb->data, .n = uskb_headlen(skb) };
	uint8_t copy[KEY_WINDOW];

	memset(key, 0, sizeof(*key));
	if (skb->len < ETH_HLEN)
		return -EINVAL;
	if (v.n > window)
		v.n = window;
	/* the head, when it holds the headers (the common case: no copy) */
	if (v.n >= ETH_HLEN) {
		extract(&v, key);
		if (v.n == window || v.want <= v.n)
			goto meta;
		memset(key, 0, sizeof(*key));
	}
	/* else what the headers need, up to the window, copied */
	v.n = v.want > ETH_HLEN && v.want < window ? v.want : window;
	if (uskb_copy_bits(skb, 0, copy, (int)v.n))
		return -EINVAL;
	v.p = copy;
	v.want = 0;
	extract(&v, key);
	if (v.want > v.n && v.n < window) { /* it wanted still more: the whole window */
		v.n = window;
		if (uskb_copy_bits(skb, 0, copy, (int)v.n))
			return -EINVAL;
		memset(key, 0, sizeof(*key));
		extract(&v, key);
	}
meta:
	key->priority = skb->priority;
	key->mark = skb->mark;
	key->in_port = in_port;
	return 0;
}

uint32_t uskb_ovs_flow_hash(const struct uskb_ovs_key *key)
{
	/* a multiply-xorshift over the fields the flow dissector would take */
	uint64_t h = 0x9e3779b97f4a7c15ull ^ key->ip_proto;
	uint32_t w[10];
	int nw = 0;

	if (key->eth_type == htons(ETH_P_IP)) {
		w[nw++] = key->addr.ipv4.src;
		w[nw++] = key->addr.ipv4.dst;
	} else if (key->eth_type == htons(ETH_P_IPV6)) {
		memcpy(w, &key->addr.ipv6, 32);
		nw = 8;
	} else {
		memcpy(w, key->eth_src, 6);
		memcpy((uint8_t *)w + 6, key->eth_dst, 6);
		nw = 3;
		h ^= key->eth_type;
	}
	w[nw++] = (uint32_t)key->tp_src << 16 | key->tp_dst;
	for (int i = 0; i < nw; i++) {
		h = (h ^ w[i]) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	return (uint32_t)h ? (uint32_t)h : 1;
}

/* ---- the key as attributes ---- */

static int put_vlan(struct uskb *msg, uint16_t tpid, uint16_t tci)
{
	if (uskb_nla_put(msg, OVS_KEY_ATTR_ETHERTYPE, 2, &tpid) ||
	    uskb_nla_put(msg, OVS_KEY_ATTR_VLAN, 2, &tci))
		return -EMSGSIZE;
	return 0;
}

static int put_l3(struct uskb *msg, const struct uskb_ovs_key *k)
{
	struct nlattr *nla;

	if (k->eth_type == htons(ETH_P_IP)) {
		struct ovs_key_ipv4 *v;

		if (!(nla = uskb_nla_reserve(msg, OVS_KEY_ATTR_IPV4, sizeof(*v))))
			return -EMSGSIZE;
		v = uskb_nla_data(nla);
		v->ipv4_src = k->addr.ipv4.src;
		v->ipv4_dst = k->addr.ipv4.dst;
		v->ipv4_proto = k->ip_proto;
		v->ipv4_tos = k->ip_tos;
		v->ipv4_ttl = k->ip_ttl;
		v->ipv4_frag = k->ip_frag;
	} else if (k->eth_type == htons(ETH_P_IPV6)) {
		struct ovs_key_ipv6 *v;
		struct ovs_key_ipv6_exthdrs eh = { .hdrs = k->ipv6_exthdrs };

		if (!(nla = uskb_nla_reserve(msg, OVS_KEY_ATTR_IPV6, sizeof(*v))))
			return -EMSGSIZE;
		v = uskb_nla_data(nla);
		memcpy(v->ipv6_src, k->addr.ipv6.src, 16);
		memcpy(v->ipv6_dst, k->addr.ipv6.dst, 16);
		v->ipv6_label = k->ipv6_label;
		v->ipv6_proto = k->ip_proto;
		v->ipv6_tclass = k->ip_tos;
		v->ipv6_hlimit = k->ip_ttl;
		v->ipv6_frag = k->ip_frag;
		if (uskb_nla_put(msg, OVS_KEY_ATTR_IPV6_EXTHDRS, sizeof(eh), &eh))
			return -EMSGSIZE;
	} else if (k->eth_type == htons(ETH_P_ARP) || k->eth_type == htons(ETH_P_RARP)) {
		struct ovs_key_arp *v;

		if (!(nla = uskb_nla_reserve(msg, OVS_KEY_ATTR_ARP, sizeof(*v))))
			return -EMSGSIZE;
		v = uskb_nla_data(nla);
		memset(v, 0, sizeof(*v));
		v->arp_sip = k->addr.ipv4.src;
		v->arp_tip = k->addr.ipv4.dst;
		v->arp_op = htons(k->ip_proto);
		memcpy(v->arp_sha, k->arp_sha, 6);
		memcpy(v->arp_tha, k->arp_tha, 6);
	}
	return 0;
}

static int put_l4(struct uskb *msg, const struct uskb_ovs_key *k)
{
	bool v4 = k->eth_type == htons(ETH_P_IP), v6 = k->eth_type == htons(ETH_P_IPV6);

	if ((!v4 && !v6) || k->ip_frag == OVS_FRAG_TYPE_LATER)
		return 0;
	if (k->ip_proto == NH_TCP) {
		struct ovs_key_tcp t = { .tcp_src = k->tp_src, .tcp_dst = k->tp_dst };

		if (uskb_nla_put(msg, OVS_KEY_ATTR_TCP, sizeof(t), &t) ||
		    uskb_nla_put(msg, OVS_KEY_ATTR_TCP_FLAGS, 2, &k->tcp_flags))
			return -EMSGSIZE;
	} else if (k->ip_proto == NH_UDP) {
		struct ovs_key_udp u = { .udp_src = k->tp_src, .udp_dst = k->tp_dst };

		if (uskb_nla_put(msg, OVS_KEY_ATTR_UDP, sizeof(u), &u))
			return -EMSGSIZE;
	} else if (k->ip_proto == NH_SCTP) {
		struct ovs_key_sctp c = { .sctp_src = k->tp_src, .sctp_dst = k->tp_dst };

		if (uskb_nla_put(msg, OVS_KEY_ATTR_SCTP, sizeof(c), &c))
			return -EMSGSIZE;
	} else if (v4 && k->ip_proto == NH_ICMP) {
		struct ovs_key_icmp i = { .icmp_type = (uint8_t)ntohs(k->tp_src),
					  .icmp_code = (uint8_t)ntohs(k->tp_dst) };

		if (uskb_nla_put(msg, OVS_KEY_ATTR_ICMP, sizeof(i), &i))
			return -EMSGSIZE;
	} else if (v6 && k->ip_proto == NH_ICMPV6) {
		struct ovs_key_icmpv6 i = { .icmpv6_type = (uint8_t)ntohs(k->tp_src),
					    .icmpv6_code = (uint8_t)ntohs(k->tp_dst) };

		if (uskb_nla_put(msg, OVS_KEY_ATTR_ICMPV6, sizeof(i), &i))
			return -EMSGSIZE;
		if (i.icmpv6_type == 135 || i.icmpv6_type == 136) {
			struct ovs_key_nd nd;

			memcpy(nd.nd_target, k->nd_target, 16);
			memcpy(nd.nd_sll, k->arp_sha, 6);
			memcpy(nd.nd_tll, k->arp_tha, 6);
			if (uskb_nla_put(msg, OVS_KEY_ATTR_ND, sizeof(nd), &nd))
				return -EMSGSIZE;
		}
	}
	return 0;
}

static int put_body(struct uskb *msg, const struct uskb_ovs_key *k)
{
	struct nlattr *encap = NULL, *in_encap = NULL, *nla;
	struct ovs_key_ethernet *eth;
	int ret = 0;

	if (uskb_nla_put_u32(msg, OVS_KEY_ATTR_RECIRC_ID, k->recirc_id) ||
	    uskb_nla_put_u32(msg, OVS_KEY_ATTR_DP_HASH, k->dp_hash) ||
	    uskb_nla_put_u32(msg, OVS_KEY_ATTR_PRIORITY, k->priority) ||
	    uskb_nla_put_u32(msg, OVS_KEY_ATTR_IN_PORT, k->in_port & 0xffff) ||
	    uskb_nla_put_u32(msg, OVS_KEY_ATTR_SKB_MARK, k->mark))
		return -EMSGSIZE;
	if (!(nla = uskb_nla_reserve(msg, OVS_KEY_ATTR_ETHERNET, sizeof(*eth))))
		return -EMSGSIZE;
	eth = uskb_nla_data(nla);
	memcpy(eth->eth_src, k->eth_src, 6);
	memcpy(eth->eth_dst, k->eth_dst, 6);
	if (k->vlan_tci || eth_type_vlan(k->eth_type)) {
		if (put_vlan(msg, k->vlan_tpid, k->vlan_tci) ||
		    !(encap = uskb_nla_nest_start_noflag(msg, OVS_KEY_ATTR_ENCAP)))
			return -EMSGSIZE;
		if (!k->vlan_tci)
			goto unencap;
		if (k->cvlan_tci || eth_type_vlan(k->eth_type)) {
			if (put_vlan(msg, k->cvlan_tpid, k->cvlan_tci) ||
			    !(in_encap = uskb_nla_nest_start_noflag(msg, OVS_KEY_ATTR_ENCAP)))
				return -EMSGSIZE;
			if (!k->cvlan_tci)
				goto unencap;
		}
	}
	if (k->eth_type == htons(ETH_P_802_2))
		goto unencap; /* 802.2 is said by leaving ETHERTYPE out */
	if (uskb_nla_put(msg, OVS_KEY_ATTR_ETHERTYPE, 2, &k->eth_type))
		return -EMSGSIZE;
	if (eth_type_vlan(k->eth_type))
		goto unencap; /* a third tag: nothing more is known */
	if ((ret = put_l3(msg, k)) || (ret = put_l4(msg, k)))
		return ret;
unencap:
	if (in_encap && uskb_nla_nest_end(msg, in_encap) < 0)
		return -EMSGSIZE;
	if (encap && uskb_nla_nest_end(msg, encap) < 0)
		return -EMSGSIZE;
	return 0;
}

int uskb_ovs_key_put(struct uskb *msg, const struct uskb_ovs_key *key, int attrtype)
{
	struct nlattr *nest = uskb_nla_nest_start_noflag(msg, attrtype);
	int ret;

	if (!nest)
		return -EMSGSIZE;
	ret = put_body(msg, key);
	if (ret || uskb_nla_nest_end(msg, nest) < 0) {
		uskb_nla_nest_cancel(msg, nest);
		return -EMSGSIZE;
	}
	return 0;
}
