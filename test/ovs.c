/* SPDX-License-Identifier: MIT */
/*
 * Open vSwitch flow keys and upcalls (uskb/ovs.h): keys extracted from
 * crafted frames (IPv4 TCP/UDP/SCTP/ICMP, fragments, ARP, IPv6 with
 * extension headers in and out of order and ND, VLAN tags, 802.2/SNAP) and from every truncation of them,
 * never depending on a byte past the frame; the key attributes in the
 * kernel's order and sizes; and upcall messages read back with libmnl —
 * the copy and zerocopy modes byte-identical over linear heads, page
 * frags, frag_list, CHECKSUM_PARTIAL and short frames, the pad zero even
 * when the bytes after a frag are not, and the packet referenced, not
 * copied, in zerocopy mode.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/if_ether.h>

#include <uskb/uskb.h>
#include "t.h"

#ifdef USKB_HAVE_MNL
#include <libmnl/libmnl.h>

static const uint8_t MAC_A[6] = { 0x02, 0, 0, 0, 0, 0xa }, MAC_B[6] = { 0x02, 0, 0, 0, 0, 0xb };

/* ---- frames ---- */

static size_t eth(uint8_t *p, uint16_t type)
{
	memcpy(p, MAC_B, 6);
	memcpy(p + 6, MAC_A, 6);
	p[12] = (uint8_t)(type >> 8);
	p[13] = (uint8_t)type;
	return 14;
}

static size_t ip4(uint8_t *p, uint8_t proto, uint16_t frag, size_t payload)
{
	memset(p, 0, 20);
	p[0] = 0x45;
	p[1] = 0x10;
	p[2] = (uint8_t)((20 + payload) >> 8);
	p[3] = (uint8_t)(20 + payload);
	p[6] = (uint8_t)(frag >> 8);
	p[7] = (uint8_t)frag;
	p[8] = 64;
	p[9] = proto;
	memcpy(p + 12, (uint8_t[]){ 198, 18, 0, 1 }, 4);
	memcpy(p + 16, (uint8_t[]){ 198, 18, 0, 2 }, 4);
	return 20;
}

static size_t udp(uint8_t *p, size_t payload)
{
	memcpy(p, (uint8_t[]){ 0x04, 0xd2, 0x1a, 0x0a }, 4); /* 1234 -> 6666 */
	p[4] = (uint8_t)((8 + payload) >> 8);
	p[5] = (uint8_t)(8 + payload);
	p[6] = p[7] = 0;
	t_fill(p + 8, payload, 3);
	return 8 + payload;
}

/* eth + IPv4 + UDP with @payload bytes */
static size_t frame_udp4(uint8_t *p, size_t payload)
{
	size_t n = eth(p, ETH_P_IP);

	n += ip4(p + n, 17, 0, 8 + payload);
	return n + udp(p + n, payload);
}

static struct uskb *linear(const uint8_t *f, size_t n)
{
	struct uskb *skb = uskb_alloc((unsigned int)n + 64);

	uskb_put_data(skb, f, (unsigned int)n);
	/* what lies past the frame must not matter */
	memset(uskb_tail_pointer(skb), 0xee, (size_t)uskb_tailroom(skb));
	return skb;
}

static int extract(const uint8_t *f, size_t n, struct uskb_ovs_key *k)
{
	struct uskb *skb = linear(f, n);
	int ret = uskb_ovs_key_extract(skb, 3, k);

	uskb_free(skb);
	return ret;
}

static void test_extract(void)
{
	uint8_t f[256], g[256];
	struct uskb_ovs_key k;
	size_t n;

	/* IPv4 UDP */
	n = frame_udp4(f, 30);
	CHECK_EQ(extract(f, n, &k), 0);
	CHECK(!memcmp(k.eth_src, MAC_A, 6) && !memcmp(k.eth_dst, MAC_B, 6));
	CHECK_EQ(k.eth_type, htons(ETH_P_IP));
	CHECK_EQ(k.in_port, 3);
	CHECK_EQ(k.addr.ipv4.src, htonl(0xc6120001));
	CHECK_EQ(k.addr.ipv4.dst, htonl(0xc6120002));
	CHECK_EQ(k.ip_proto, 17);
	CHECK_EQ(k.ip_tos, 0x10);
	CHECK_EQ(k.ip_ttl, 64);
	CHECK_EQ(k.ip_frag, OVS_FRAG_TYPE_NONE);
	CHECK_EQ(k.tp_src, htons(1234));
	CHECK_EQ(k.tp_dst, htons(6666));

	/* IPv4 TCP with SYN|ACK and the reserved nibble set (masked off) */
	n = eth(f, ETH_P_IP);
	n += ip4(f + n, 6, 0, 20);
	memset(f + n, 0, 20);
	f[n] = 0x30, f[n + 1] = 0x39, f[n + 2] = 0x00, f[n + 3] = 0x50;
	f[n + 12] = 0x5f, f[n + 13] = 0x12;
	n += 20;
	CHECK_EQ(extract(f, n, &k), 0);
	CHECK_EQ(k.tp_src, htons(12345));
	CHECK_EQ(k.tp_dst, htons(80));
	CHECK_EQ(k.tcp_flags, htons(0x0f12));
	/* a data offset under 5 words: no ports */
	f[n - 20 + 12] = 0x4f;
	CHECK_EQ(extract(f, n, &k), 0);
	CHECK_EQ(k.tp_src, 0);
	CHECK_EQ(k.tcp_flags, 0);

	/* ICMP echo: type and code as the ports */
	n = eth(f, ETH_P_IP);
	n += ip4(f + n, 1, 0, 8);
	memcpy(f + n, (uint8_t[]){ 8, 0, 0, 0, 0, 1, 0, 1 }, 8);
	n += 8;
	CHECK_EQ(extract(f, n, &k), 0);
	CHECK_EQ(k.tp_src, htons(8));
	CHECK_EQ(k.tp_dst, 0);

	/* fragments: the first has ports, a later one none */
	n = eth(f, ETH_P_IP);
	n += ip4(f + n, 17, 0x2000, 16);
	n += udp(f + n, 8);
	CHECK_EQ(extract(f, n, &k), 0);
	CHECK_EQ(k.ip_frag, OVS_FRAG_TYPE_FIRST);
	CHECK_EQ(k.tp_dst, htons(6666));
	f[14 + 6] = 0x00, f[14 + 7] = 0x10;
	CHECK_EQ(extract(f, n, &k), 0);
	CHECK_EQ(k.ip_frag, OVS_FRAG_TYPE_LATER);
	CHECK_EQ(k.tp_src, 0);
	CHECK_EQ(k.tp_dst, 0);

	/* a header length under 20 bytes: the IP fields stay zero */
	frame_udp4(f, 10);
	f[14] = 0x44;
	CHECK_EQ(extract(f, 14 + 28 + 10, &k), 0);
	CHECK_EQ(k.eth_type, htons(ETH_P_IP));
	CHECK_EQ(k.addr.ipv4.src, 0);
	CHECK_EQ(k.ip_proto, 0);

	/* ARP request */
	n = eth(f, ETH_P_ARP);
	memcpy(f + n, (uint8_t[]){ 0, 1, 8, 0, 6, 4, 0, 1 }, 8);
	memcpy(f + n + 8, MAC_A, 6);
	memcpy(f + n + 14, (uint8_t[]){ 198, 18, 0, 1 }, 4);
	memset(f + n + 18, 0, 6);
	memcpy(f + n + 24, (uint8_t[]){ 198, 18, 0, 2 }, 4);
	n += 28;
	CHECK_EQ(extract(f, n, &k), 0);
	CHECK_EQ(k.ip_proto, 1);
	CHECK(!memcmp(k.arp_sha, MAC_A, 6));
	CHECK_EQ(k.addr.ipv4.dst, htonl(0xc6120002));
	/* ARP for another protocol: no fields */
	f[14 + 3] = 0x01;
	CHECK_EQ(extract(f, n, &k), 0);
	CHECK_EQ(k.ip_proto, 0);
	CHECK_EQ(k.addr.ipv4.src, 0);

	/* IPv6: hop-by-hop, then a first fragment, then UDP */
	n = eth(f, ETH_P_IPV6);
	memset(f + n, 0, 40);
	f[n] = 0x6a, f[n + 1] = 0xb1, f[n + 2] = 0x23, f[n + 3] = 0x45; /* tc 0xab, label 0x12345 */
	f[n + 6] = 0; /* next: hop-by-hop */
	f[n + 7] = 9;
	f[n + 8] = 0x20, f[n + 23] = 1;
	f[n + 24] = 0x20, f[n + 39] = 2;
	n += 40;
	memset(f + n, 0, 8);
	f[n] = 44; /* hop -> fragment */
	n += 8;
	memset(f + n, 0, 8);
	f[n] = 17;
	f[n + 3] = 1; /* offset 0, M */
	n += 8;
	n += udp(f + n, 4);
	CHECK_EQ(extract(f, n, &k), 0);
	CHECK_EQ(k.eth_type, htons(ETH_P_IPV6));
	CHECK_EQ(k.ip_tos, 0xab);
	CHECK_EQ(k.ipv6_label, htonl(0x12345));
	CHECK_EQ(k.ip_ttl, 9);
	CHECK_EQ(k.ip_proto, 17);
	CHECK_EQ(k.ip_frag, OVS_FRAG_TYPE_FIRST);
	CHECK_EQ(k.tp_dst, htons(6666));
	CHECK_EQ(k.ipv6_exthdrs, (1 << 6) | (1 << 4)); /* HOP, FRAG */
	CHECK_EQ(k.addr.ipv6.dst[15], 2);
	/* a later fragment: protocol "fragment", no ports */
	f[14 + 40 + 8 + 3] = 0x11;
	CHECK_EQ(extract(f, n, &k), 0);
	CHECK_EQ(k.ip_frag, OVS_FRAG_TYPE_LATER);
	CHECK_EQ(k.ip_proto, 44);
	CHECK_EQ(k.tp_dst, 0);

	/* a later fragment whose next header is another extension header:
	 * ipv6_find_hdr() finds no protocol, so "first" with protocol 59 */
	f[14 + 40 + 8] = 60; /* fragment -> destination options */
	CHECK_EQ(extract(f, n, &k), 0);
	CHECK_EQ(k.ip_frag, OVS_FRAG_TYPE_FIRST);
	CHECK_EQ(k.ip_proto, 59);

	/* hop-by-hop, routing, then a destination header last: out of order */
	n = eth(f, ETH_P_IPV6);
	memset(f + n, 0, 40);
	f[n] = 0x60, f[n + 6] = 0;
	n += 40;
	memset(f + n, 0, 24);
	f[n] = 43;	/* hop -> routing */
	f[n + 8] = 60;	/* routing -> destination options */
	f[n + 16] = 17; /* destination options -> UDP */
	n += 24;
	n += udp(f + n, 4);
	CHECK_EQ(extract(f, n, &k), 0);
	CHECK_EQ(k.ipv6_exthdrs, (1 << 6) | (1 << 5) | (1 << 3) | (1 << 8)); /* HOP ROUTER DEST UNSEQ */
	CHECK_EQ(k.ip_proto, 17);
	CHECK_EQ(k.tp_dst, htons(6666));

	/* SCTP: its ports, from a 12-byte common header */
	n = eth(f, ETH_P_IP);
	n += ip4(f + n, 132, 0, 12);
	memcpy(f + n, (uint8_t[]){ 0x0b, 0x59, 0x0b, 0x5a, 0, 0, 0, 1, 0, 0, 0, 0 }, 12);
	CHECK_EQ(extract(f, n + 12, &k), 0);
	CHECK_EQ(k.tp_src, htons(2905));
	CHECK_EQ(k.tp_dst, htons(2906));
	CHECK_EQ(extract(f, n + 11, &k), 0);
	CHECK_EQ(k.tp_src, 0);

	/* IPv6 neighbour solicitation with a source link-layer option */
	n = eth(f, ETH_P_IPV6);
	memset(f + n, 0, 40);
	f[n] = 0x60, f[n + 6] = 58, f[n + 7] = 255;
	n += 40;
	memset(f + n, 0, 32);
	f[n] = 135;
	f[n + 8] = 0xfe, f[n + 9] = 0x80, f[n + 23] = 7;
	f[n + 24] = 1, f[n + 25] = 1;
	memcpy(f + n + 26, MAC_A, 6);
	n += 32;
	CHECK_EQ(extract(f, n, &k), 0);
	CHECK_EQ(k.ip_proto, 58);
	CHECK_EQ(k.tp_src, htons(135));
	CHECK_EQ(k.nd_target[15], 7);
	CHECK(!memcmp(k.arp_sha, MAC_A, 6));
	/* a zero-length option makes it all invalid */
	f[n - 8 + 1] = 0;
	CHECK_EQ(extract(f, n, &k), 0);
	CHECK_EQ(k.nd_target[15], 0);
	CHECK_EQ(k.tp_src, htons(135));

	/* 802.1ad + 802.1Q around IPv4 UDP */
	n = eth(g, 0x88a8);
	memcpy(g + n, (uint8_t[]){ 0x20, 0x05, 0x81, 0x00, 0x00, 0x07 }, 6);
	n += 6;
	g[n++] = 0x08, g[n++] = 0x00;
	n += ip4(g + n, 17, 0, 12);
	n += udp(g + n, 4);
	CHECK_EQ(extract(g, n, &k), 0);
	CHECK_EQ(k.vlan_tpid, htons(0x88a8));
	CHECK_EQ(k.vlan_tci, htons(0x3005));
	CHECK_EQ(k.cvlan_tpid, htons(0x8100));
	CHECK_EQ(k.cvlan_tci, htons(0x1007));
	CHECK_EQ(k.eth_type, htons(ETH_P_IP));
	CHECK_EQ(k.tp_dst, htons(6666));

	/* 802.3 length field: 802.2, unless SNAP carries a type */
	n = eth(f, 60);
	memcpy(f + n, (uint8_t[]){ 0x42, 0x42, 0x03, 0, 0, 0, 0, 0 }, 8);
	CHECK_EQ(extract(f, n + 8, &k), 0);
	CHECK_EQ(k.eth_type, htons(ETH_P_802_2));
	memcpy(f + n, (uint8_t[]){ 0xaa, 0xaa, 0x03, 0, 0, 0, 0x08, 0x06 }, 8);
	CHECK_EQ(extract(f, n + 8, &k), 0);
	CHECK_EQ(k.eth_type, htons(ETH_P_ARP));

	/* too short for Ethernet */
	CHECK_EQ(extract(f, 13, &k), -EINVAL);
}

/*
 * Every truncation of each frame: the key may depend only on the bytes
 * that are there. The same prefix extracted from a frame whose following
 * bytes differ (linear() leaves 0xee after it; here the next byte of the
 * original is flipped) gives the same key, and a key never has a field
 * that came from past the end.
 */
static void test_truncated(void)
{
	uint8_t frames[4][200];
	size_t lens[4], l4end[4] = { 14 + 20 + 8, 14 + 20 + 20, 14 + 4 + 40 + 8, 0 };
	size_t n;

	lens[0] = frame_udp4(frames[0], 40);
	n = eth(frames[1], ETH_P_IP);
	n += ip4(frames[1] + n, 6, 0, 20);
	memset(frames[1] + n, 0x50, 20);
	lens[1] = n + 20;
	n = eth(frames[2], 0x8100);
	memcpy(frames[2] + n, (uint8_t[]){ 0x00, 0x05, 0x86, 0xdd }, 4);
	n += 4;
	memset(frames[2] + n, 0, 40);
	frames[2][n] = 0x60, frames[2][n + 6] = 17;
	n += 40;
	lens[2] = n + udp(frames[2] + n, 10);
	n = eth(frames[3], ETH_P_ARP);
	memcpy(frames[3] + n, (uint8_t[]){ 0, 1, 8, 0, 6, 4, 0, 2 }, 8);
	memset(frames[3] + n + 8, 0x33, 20);
	lens[3] = n + 28;

	for (int f = 0; f < 4; f++) {
		for (size_t len = 14; len <= lens[f]; len++) {
			struct uskb_ovs_key a, b;
			uint8_t copy[200];

			CHECK_EQ(extract(frames[f], len, &a), 0);
			memcpy(copy, frames[f], lens[f]);
			if (len < lens[f])
				copy[len] ^= 0xff;
			CHECK_EQ(extract(copy, len, &b), 0);
			if (memcmp(&a, &b, sizeof(a))) {
				fprintf(stderr, "frame %d cut at %zu: the key saw past the end\n", f, len);
				t_failures++;
			}
			if (len < l4end[f])
				CHECK_EQ(a.tp_dst, 0); /* the L4 header is not whole */
			else if (l4end[f])
				CHECK(a.tp_dst != 0);
		}
	}
}

/* ---- key attributes ---- */

struct attrs {
	int n;
	int type[32];
	int len[32];
	const struct nlattr *at[32];
};

static int collect(const struct nlattr *attr, void *data)
{
	struct attrs *a = data;

	if (a->n == 32 || mnl_attr_validate(attr, MNL_TYPE_UNSPEC) < 0)
		return MNL_CB_ERROR;
	a->type[a->n] = mnl_attr_get_type(attr);
	a->len[a->n] = mnl_attr_get_payload_len(attr);
	a->at[a->n++] = attr;
	return MNL_CB_OK;
}

static void check_attrs(const struct nlattr *nest, const int *types, const int *lens, int n)
{
	struct attrs a = { 0 };

	CHECK_EQ(mnl_attr_parse_nested(nest, collect, &a), MNL_CB_OK);
	CHECK_EQ(a.n, n);
	for (int i = 0; i < n && i < a.n; i++) {
		if (a.type[i] != types[i] || a.len[i] != lens[i]) {
			fprintf(stderr, "key attribute %d: type %d len %d, want %d len %d\n", i,
				a.type[i], a.len[i], types[i], lens[i]);
			t_failures++;
		}
	}
}

static const struct nlattr *put_key(struct uskb *msg, const uint8_t *f, size_t n)
{
	struct uskb_ovs_key k;
	unsigned int at = msg->len;

	CHECK_EQ(extract(f, n, &k), 0);
	CHECK_EQ(uskb_ovs_key_put(msg, &k, OVS_PACKET_ATTR_KEY), 0);
	return (const struct nlattr *)(msg->data + at);
}

static void test_key_attrs(void)
{
	struct uskb *msg = uskb_alloc(4096);
	const struct nlattr *nest;
	struct attrs a = { 0 };
	uint8_t f[200];
	size_t n;
	static const int meta[] = { OVS_KEY_ATTR_RECIRC_ID, OVS_KEY_ATTR_DP_HASH,
				    OVS_KEY_ATTR_PRIORITY, OVS_KEY_ATTR_IN_PORT,
				    OVS_KEY_ATTR_SKB_MARK, OVS_KEY_ATTR_ETHERNET };

	/* IPv4 UDP: metadata, ETHERNET, ETHERTYPE, IPV4, UDP */
	n = frame_udp4(f, 20);
	nest = put_key(msg, f, n);
	check_attrs(nest,
		    (int[]){ meta[0], meta[1], meta[2], meta[3], meta[4], meta[5],
			     OVS_KEY_ATTR_ETHERTYPE, OVS_KEY_ATTR_IPV4, OVS_KEY_ATTR_UDP },
		    (int[]){ 4, 4, 4, 4, 4, 12, 2, 12, 4 }, 9);
	/* the IPV4 attribute as the kernel lays it out */
	CHECK_EQ(mnl_attr_parse_nested(nest, collect, &a), MNL_CB_OK);
	if (a.n == 9) {
		const struct ovs_key_ipv4 *v = mnl_attr_get_payload(a.at[7]);

		CHECK_EQ(v->ipv4_src, htonl(0xc6120001));
		CHECK_EQ(v->ipv4_proto, 17);
		CHECK_EQ(v->ipv4_ttl, 64);
		CHECK_EQ(mnl_attr_get_u32(a.at[3]), 3);
	}

	/* TCP adds TCP_FLAGS; a VLAN tag wraps the rest in ENCAP */
	n = eth(f, 0x8100);
	memcpy(f + n, (uint8_t[]){ 0x00, 0x0a, 0x08, 0x00 }, 4);
	n += 4;
	n += ip4(f + n, 6, 0, 20);
	memset(f + n, 0, 20);
	f[n + 12] = 0x50;
	n += 20;
	uskb_trim(msg, 0);
	nest = put_key(msg, f, n);
	check_attrs(nest,
		    (int[]){ meta[0], meta[1], meta[2], meta[3], meta[4], meta[5],
			     OVS_KEY_ATTR_ETHERTYPE, OVS_KEY_ATTR_VLAN, OVS_KEY_ATTR_ENCAP },
		    (int[]){ 4, 4, 4, 4, 4, 12, 2, 2, 40 }, 9);
	memset(&a, 0, sizeof(a));
	mnl_attr_parse_nested(nest, collect, &a);
	if (a.n == 9) {
		CHECK_EQ(mnl_attr_get_u16(a.at[6]), htons(0x8100));
		CHECK_EQ(mnl_attr_get_u16(a.at[7]), htons(0x100a));
		check_attrs(a.at[8],
			    (int[]){ OVS_KEY_ATTR_ETHERTYPE, OVS_KEY_ATTR_IPV4, OVS_KEY_ATTR_TCP,
				     OVS_KEY_ATTR_TCP_FLAGS },
			    (int[]){ 2, 12, 4, 2 }, 4);
	}

	/* IPv6 ICMPv6 ND: IPV6, IPV6_EXTHDRS, ICMPV6, ND */
	n = eth(f, ETH_P_IPV6);
	memset(f + n, 0, 64);
	f[n] = 0x60, f[n + 6] = 58;
	f[n + 40] = 136;
	n += 64;
	uskb_trim(msg, 0);
	nest = put_key(msg, f, n);
	check_attrs(nest,
		    (int[]){ meta[0], meta[1], meta[2], meta[3], meta[4], meta[5],
			     OVS_KEY_ATTR_ETHERTYPE, OVS_KEY_ATTR_IPV6, OVS_KEY_ATTR_IPV6_EXTHDRS,
			     OVS_KEY_ATTR_ICMPV6, OVS_KEY_ATTR_ND },
		    (int[]){ 4, 4, 4, 4, 4, 12, 2, 40, 2, 2, 28 }, 11);

	/* SCTP */
	n = eth(f, ETH_P_IP);
	n += ip4(f + n, 132, 0, 12);
	memset(f + n, 0, 12);
	uskb_trim(msg, 0);
	nest = put_key(msg, f, n + 12);
	check_attrs(nest,
		    (int[]){ meta[0], meta[1], meta[2], meta[3], meta[4], meta[5],
			     OVS_KEY_ATTR_ETHERTYPE, OVS_KEY_ATTR_IPV4, OVS_KEY_ATTR_SCTP },
		    (int[]){ 4, 4, 4, 4, 4, 12, 2, 12, 4 }, 9);

	/* ARP; 802.2 without ETHERTYPE */
	n = eth(f, ETH_P_ARP);
	memcpy(f + n, (uint8_t[]){ 0, 1, 8, 0, 6, 4, 0, 1 }, 8);
	memset(f + n + 8, 0, 20);
	n += 28;
	uskb_trim(msg, 0);
	nest = put_key(msg, f, n);
	check_attrs(nest,
		    (int[]){ meta[0], meta[1], meta[2], meta[3], meta[4], meta[5],
			     OVS_KEY_ATTR_ETHERTYPE, OVS_KEY_ATTR_ARP },
		    (int[]){ 4, 4, 4, 4, 4, 12, 2, 24 }, 8);
	n = eth(f, 46);
	memset(f + n, 0x42, 46);
	uskb_trim(msg, 0);
	nest = put_key(msg, f, n + 46);
	check_attrs(nest, meta, (int[]){ 4, 4, 4, 4, 4, 12 }, 6);

	/* short tailroom: -EMSGSIZE and nothing left behind */
	uskb_trim(msg, 0);
	uskb_put(msg, (unsigned int)uskb_tailroom(msg) - 60);
	n = frame_udp4(f, 20);
	{
		struct uskb_ovs_key k;
		unsigned int before = msg->len;

		extract(f, n, &k);
		CHECK_EQ(uskb_ovs_key_put(msg, &k, OVS_PACKET_ATTR_KEY), -EMSGSIZE);
		CHECK_EQ(msg->len, before);
	}
	uskb_free(msg);
}

/* ---- upcalls ---- */

static uint8_t *linearized(const struct uskb *msg)
{
	uint8_t *b = malloc(msg->len);

	CHECK_EQ(uskb_copy_bits(msg, 0, b, (int)msg->len), 0);
	return b;
}

/*
 * Parse @b as an upcall: libmnl validates the message and its attributes;
 * returns the PACKET attribute (NULL when it is missing or not last).
 */
static const struct nlattr *parse_upcall(const uint8_t *b, size_t len, uint16_t family,
					 bool aligned)
{
	const struct nlmsghdr *nlh = (const struct nlmsghdr *)b;
	const struct genlmsghdr *g;
	const struct ovs_header *oh;
	struct attrs a = { 0 };

	if (!mnl_nlmsg_ok(nlh, (int)len) || nlh->nlmsg_len != len || nlh->nlmsg_type != family) {
		fprintf(stderr, "upcall: bad message header (len %u of %zu)\n", nlh->nlmsg_len, len);
		t_failures++;
		return NULL;
	}
	if (aligned)
		CHECK_EQ(len % 4, 0);
	g = mnl_nlmsg_get_payload(nlh);
	CHECK_EQ(g->cmd, OVS_PACKET_CMD_MISS);
	CHECK_EQ(g->version, OVS_PACKET_VERSION);
	oh = (const void *)(g + 1);
	CHECK_EQ(oh->dp_ifindex, 77);
	CHECK_EQ(mnl_attr_parse(nlh, GENL_HDRLEN + sizeof(*oh), collect, &a), MNL_CB_OK);
	if (a.n != 3 || a.type[0] != OVS_PACKET_ATTR_KEY || a.type[1] != OVS_PACKET_ATTR_HASH ||
	    a.type[2] != OVS_PACKET_ATTR_PACKET) {
		fprintf(stderr, "upcall: attributes are not KEY, HASH, PACKET\n");
		t_failures++;
		return NULL;
	}
	CHECK_EQ(mnl_attr_get_u64(a.at[1]), 0x312345678ull);
	return a.at[2];
}

/* both modes on @skb; they must agree to the byte, and carry @frame */
static void check_both(struct uskb *skb, const uint8_t *frame, size_t flen, bool expect_zc)
{
	struct uskb_ovs_upcall_info info = {
		.family = 0x1d, .cmd = OVS_PACKET_CMD_MISS, .dp_ifindex = 77,
		.hash = 0x312345678ull,
	};
	struct uskb_ovs_key key;
	uint8_t *bytes[2][2];
	size_t lens[2][2];

	CHECK_EQ(uskb_ovs_key_extract(skb, 1, &key), 0);
	for (int unaligned = 0; unaligned < 2; unaligned++) {
		for (int copy = 0; copy < 2; copy++) {
			struct uskb *msg;
			const struct nlattr *pkt;
			int err = 0;

			info.flags = (copy ? USKB_OVS_UPCALL_COPY : 0) |
				     (unaligned ? USKB_OVS_UPCALL_UNALIGNED : 0);
			msg = uskb_ovs_upcall(skb, &key, &info, &err);
			CHECK(msg);
			if (!msg) {
				fprintf(stderr, "upcall failed: %d\n", err);
				bytes[unaligned][copy] = NULL;
				continue;
			}
			if (!copy && expect_zc) {
				const struct uskb_shared_info *ms = uskb_shinfo(msg), *ss = uskb_shinfo(skb);
				bool shared = false;

				/* referenced, not copied: the packet's last page is in the message */
				for (int i = 0; i < ms->nr_frags; i++)
					shared |= ss->nr_frags ? ms->frags[i].page == ss->frags[ss->nr_frags - 1].page
							       : ms->frags[i].page == uskb_virt_to_page(skb->head);
				CHECK(shared);
			}
			if (copy)
				CHECK_EQ(uskb_shinfo(msg)->nr_frags, 0);
			bytes[unaligned][copy] = linearized(msg);
			lens[unaligned][copy] = msg->len;
			pkt = parse_upcall(bytes[unaligned][copy], msg->len, 0x1d, !unaligned);
			if (pkt) {
				CHECK_EQ(mnl_attr_get_payload_len(pkt), flen);
				CHECK(!memcmp(mnl_attr_get_payload(pkt), frame, flen));
				/* the pad: zeros, up to the aligned end */
				for (size_t i = flen; i < NLA_ALIGN(flen) && !unaligned; i++)
					CHECK_EQ(((const uint8_t *)mnl_attr_get_payload(pkt))[i], 0);
				CHECK_EQ(lens[unaligned][copy],
					 unaligned ? (size_t)((const uint8_t *)pkt - bytes[unaligned][copy]) + 4 + flen
						   : NLA_ALIGN(lens[unaligned][copy]));
			}
			uskb_free(msg);
		}
		if (bytes[unaligned][0] && bytes[unaligned][1]) {
			CHECK_EQ(lens[unaligned][0], lens[unaligned][1]);
			CHECK(lens[unaligned][0] == lens[unaligned][1] &&
			      !memcmp(bytes[unaligned][0], bytes[unaligned][1], lens[unaligned][0]));
		}
		free(bytes[unaligned][0]);
		free(bytes[unaligned][1]);
	}
}

/* a head_frag skb with @hlen bytes in its head and the rest in page frags of @fraglen */
static struct uskb *paged(const uint8_t *f, size_t n, unsigned int hl, unsigned int fraglen,
			  uint8_t after)
{
	struct uskb *skb = uskb_dev_alloc(hl);
	size_t off = hl;
	int i = 0;

	uskb_put_data(skb, f, hl);
	while (off < n) {
		struct uskb_page *pg = uskb_page_alloc(0);
		unsigned int len = (unsigned int)(n - off < fraglen ? n - off : fraglen);
		uint8_t *mem = uskb_page_address(pg);

		/* the bytes after the frag in its page are not zero */
		memset(mem, after, uskb_page_size(pg));
		memcpy(mem + 100, f + off, len);
		uskb_add_rx_frag(skb, i++, pg, 100, (int)len, uskb_page_size(pg));
		off += len;
	}
	return skb;
}

static void test_upcall(void)
{
	static uint8_t f[9100];
	struct uskb *skb, *tail;
	size_t n;

	/* linear (kmalloc head): copied into the head either way */
	for (size_t pl = 18; pl < 1200; pl += 397) {
		n = frame_udp4(f, pl);
		skb = linear(f, n);
		check_both(skb, f, n, false);
		uskb_free(skb);
	}
	/* page frags, lengths of every remainder mod 4, dirty bytes after each frag */
	for (size_t pl = 1158; pl < 1162; pl++) {
		n = frame_udp4(f, pl);
		skb = paged(f, n, 128, 500, 0xab);
		check_both(skb, f, n, true);
		uskb_free(skb);
	}
	/* a head worth sharing (page_frag head, >= 64 bytes): it goes as frag 0 */
	n = frame_udp4(f, 1401);
	skb = uskb_dev_alloc((unsigned int)n);
	uskb_put_data(skb, f, (unsigned int)n);
	CHECK(skb->head_frag);
	check_both(skb, f, n, true);
	uskb_free(skb);
	/* 17 frags and an odd length: no slot for the pad frag, so all is copied */
	n = frame_udp4(f, 17 * 64 + 1);
	skb = paged(f, n, 64 + 1, 64, 0xcd);
	CHECK_EQ(uskb_shinfo(skb)->nr_frags, 17);
	check_both(skb, f, n, false);
	uskb_free(skb);
	/* frag_list: copied whole */
	n = frame_udp4(f, 1000);
	skb = linear(f, 600);
	tail = linear(f + 600, n - 600);
	uskb_append_frag_list(skb, tail);
	check_both(skb, f, n, false);
	uskb_free(skb);
	/* CHECKSUM_PARTIAL: completed, the same in both modes (the copy mode leaves skb be) */
	n = frame_udp4(f, 1001);
	{
		uint8_t want[2000];
		uskb_wsum sum;
		uskb_sum16 folded;

		memcpy(want, f, n);
		sum = uskb_csum_partial(want + 34, n - 34, 0);
		folded = uskb_csum_fold(sum);
		memcpy(want + 40, folded ? &folded : &(uskb_sum16){ 0xffff }, 2);
		for (int round = 0; round < 2; round++) {
			skb = paged(f, n, 128, 600, 0x5a);
			CHECK(uskb_partial_csum_set(skb, 34, 6));
			CHECK_EQ(skb->ip_summed, USKB_CHECKSUM_PARTIAL);
			check_both(skb, want, n, true);
			uskb_free(skb);
		}
	}
	/* short frames: 60 and 14 bytes */
	n = frame_udp4(f, 18);
	skb = linear(f, n);
	check_both(skb, f, n, false);
	uskb_free(skb);
	skb = linear(f, 14);
	check_both(skb, f, 14, false);
	uskb_free(skb);
	/* too long for an attribute: -EFBIG, the skb untouched */
	{
		struct uskb_ovs_upcall_info info = { .family = 1, .cmd = 1 };
		struct uskb_ovs_key k = { 0 };
		int err = 0;

		skb = uskb_alloc(70000);
		uskb_put_zero(skb, 65532);
		CHECK(!uskb_ovs_upcall(skb, &k, &info, &err));
		CHECK_EQ(err, -EFBIG);
		CHECK_EQ(skb->len, 65532);
		uskb_free(skb);
	}
}

/* userdata (an ACTION upcall) sits between KEY and HASH, copied whole */
static void test_userdata(void)
{
	uint8_t f[100], ud[4 + 6] = { 10, 0, OVS_USERSPACE_ATTR_USERDATA, 0, 'h', 'e', 'l', 'l', 'o', '!' };
	struct uskb_ovs_upcall_info info = { .family = 9, .cmd = OVS_PACKET_CMD_ACTION,
					     .userdata = (const struct nlattr *)ud };
	struct uskb_ovs_key key;
	struct attrs a = { 0 };
	struct uskb *skb, *msg;
	uint8_t *b;
	size_t n = frame_udp4(f, 30);

	skb = linear(f, n);
	uskb_ovs_key_extract(skb, 2, &key);
	msg = uskb_ovs_upcall(skb, &key, &info, NULL);
	CHECK(msg);
	if (msg) {
		b = linearized(msg);
		CHECK_EQ(mnl_attr_parse((struct nlmsghdr *)b, GENL_HDRLEN + 4, collect, &a), MNL_CB_OK);
		CHECK_EQ(a.n, 4);
		if (a.n == 4) {
			CHECK_EQ(a.type[1], OVS_PACKET_ATTR_USERDATA);
			CHECK_EQ(a.len[1], 6);
			CHECK(!memcmp(mnl_attr_get_payload(a.at[1]), "hello!", 6));
		}
		free(b);
		uskb_free(msg);
	}
	uskb_free(skb);
}

int main(void)
{
	test_extract();
	test_truncated();
	test_key_attrs();
	test_upcall();
	test_userdata();
	return t_end("ovs");
}

#else

int main(void)
{
	fprintf(stderr, "ovs: skipped: built without libmnl-dev (scripts/deps.sh)\n");
	return 77;
}

#endif
