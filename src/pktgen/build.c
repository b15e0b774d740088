/* SPDX-License-Identifier: MIT */
/* uskb-pktgen: building packets as the kernel pktgen does. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "pg.h"

static void put16(unsigned char *p, uint16_t v)
{
	v = htons(v);
	memcpy(p, &v, 2);
}

static void put32(unsigned char *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

/* build_tci(): priority, CFI, id */
static uint16_t tci(uint16_t id, uint16_t cfi, uint16_t prio)
{
	return (uint16_t)(id | (cfi << 12) | (prio << 13));
}

/* pktgen_finalize_skb(): the pktgen header, then zeros (linear or zero-page frags) */
static void finalize(struct uskb *skb, const struct uskb_pktgen_pkt *p, int datalen,
		     struct uskb_page *zero)
{
	struct pg_hdr h = { htonl(USKB_PKTGEN_MAGIC), htonl(p->seq_num), htonl(p->tv_sec),
			    htonl(p->tv_usec) };
	int frags = p->nfrags;

	memcpy(uskb_put(skb, sizeof(h)), &h, sizeof(h));
	datalen -= (int)sizeof(h);
	if (frags <= 0) {
		uskb_put_zero(skb, (unsigned int)datalen);
	} else {
		int len, frag_len, extra, i;
		bool even;

		if (frags > USKB_MAX_SKB_FRAGS)
			frags = USKB_MAX_SKB_FRAGS;
		len = datalen - frags * (int)USKB_PAGE_SIZE;
		if (len > 0) {
			uskb_put_zero(skb, (unsigned int)len);
			datalen = frags * (int)USKB_PAGE_SIZE;
		}
		/*
		 * The kernel's split: datalen / frags each, the last the rest. When
		 * that rest would pass a page (the kernel then adds a frag too many
		 * and a frame longer than its headers say), spread it evenly instead.
		 */
		frag_len = datalen / frags;
		even = datalen - (frags - 1) * frag_len > (int)USKB_PAGE_SIZE;
		extra = datalen % frags;
		for (i = 0; i < frags && datalen > 0; i++) {
			int size = even ? frag_len + (i < extra) : i == frags - 1 ? datalen : frag_len;

			uskb_page_get(zero);
			uskb_add_rx_frag(skb, i, zero, 0, size, 0); /* truesize not grown, as pktgen */
			datalen -= size;
		}
	}
}

struct uskb *uskb_pktgen_build(const struct uskb_pktgen_pkt *p, const struct uskb_dev *dev,
			       struct uskb_page *zero)
{
	int overhead = p->nr_labels * 4 + (p->vlan_id != USKB_PKTGEN_NO_VLAN ? 4 : 0) +
		       (p->vlan_id != USKB_PKTGEN_NO_VLAN && p->svlan_id != USKB_PKTGEN_NO_VLAN ? 4 : 0);
	int iphl = p->ipv6 ? 40 : 20, datalen, i;
	uint16_t l3 = p->ipv6 ? 0x86dd : 0x0800, protocol = l3;
	unsigned char *eth, *iph, *udph;
	struct uskb *skb;

	if (p->nr_labels < 0 || p->nr_labels > 16 || p->pkt_size > 65535) {
		errno = EINVAL;
		return NULL;
	}
	datalen = (int)p->pkt_size - 14 - iphl - 8 - overhead;
	if (datalen < (int)sizeof(struct pg_hdr))
		datalen = (int)sizeof(struct pg_hdr);
	skb = uskb_alloc((unsigned int)(16 + 14 + overhead + iphl + 8 + datalen));
	if (!skb)
		return NULL;
	uskb_reserve(skb, 16);
	eth = uskb_put(skb, 14);
	if (p->nr_labels) {
		protocol = 0x8847; /* ETH_P_MPLS_UC */
		for (i = 0; i < p->nr_labels; i++)
			put32(uskb_put(skb, 4),
			      (p->labels[i] & ~0x100u) | (i == p->nr_labels - 1 ? 0x100u : 0)); /* bottom of stack on the last only */
	}
	if (p->vlan_id != USKB_PKTGEN_NO_VLAN) {
		/* as 6.1: the outer (svlan) tag too is announced as 802.1Q */
		protocol = 0x8100;
		if (p->svlan_id != USKB_PKTGEN_NO_VLAN) {
			put16(uskb_put(skb, 2), tci(p->svlan_id, p->svlan_cfi, p->svlan_p));
			put16(uskb_put(skb, 2), 0x8100);
		}
		put16(uskb_put(skb, 2), tci(p->vlan_id, p->vlan_cfi, p->vlan_p));
		put16(uskb_put(skb, 2), l3);
	}
	memcpy(eth, p->dst_mac, 6);
	memcpy(eth + 6, p->src_mac, 6);
	put16(eth + 12, protocol);
	skb->protocol = htons(protocol);
	uskb_reset_mac_header(skb);
	uskb_set_network_header(skb, (int)skb->len);
	iph = uskb_put_zero(skb, (unsigned int)iphl);
	uskb_set_transport_header(skb, (int)skb->len);
	udph = uskb_put(skb, 8);
	put16(udph, p->udp_src);
	put16(udph + 2, p->udp_dst);
	put16(udph + 4, (uint16_t)(datalen + 8));
	put16(udph + 6, 0);
	if (p->ipv6) {
		put32(iph, 0x60000000u | ((uint32_t)p->tos << 20));
		put16(iph + 4, (uint16_t)(datalen + 8));
		iph[6] = 17;
		iph[7] = 32;
		memcpy(iph + 8, p->saddr6, 16);
		memcpy(iph + 24, p->daddr6, 16);
	} else {
		uint16_t check;

		iph[0] = 0x45;
		iph[1] = p->tos;
		put16(iph + 2, (uint16_t)(20 + 8 + datalen));
		put16(iph + 4, p->ip_id);
		iph[8] = 32;
		iph[9] = 17;
		memcpy(iph + 12, &p->saddr, 4);
		memcpy(iph + 16, &p->daddr, 4);
		check = uskb_ip_fast_csum(iph, 5);
		memcpy(iph + 10, &check, 2);
	}
	finalize(skb, p, datalen, zero);
	if (p->udpcsum) {
		uint32_t ulen = (uint32_t)datalen + 8;
		bool offload = dev && (dev->features & (p->ipv6 ? USKB_DEV_F_IPV6_CSUM :
								    USKB_DEV_F_IP_CSUM));
		uskb_sum16 sum;

		if (offload) {
			/* CHECKSUM_PARTIAL: the device adds the data; we seed the pseudo header */
			sum = p->ipv6 ? (uskb_sum16)~uskb_csum_ipv6_magic(iph + 8, iph + 24, ulen, 17, 0) :
					(uskb_sum16)~uskb_csum_tcpudp_magic(p->saddr, p->daddr, ulen, 17, 0);
			uskb_partial_csum_set(skb, (uint16_t)(udph - skb->data), 6);
		} else {
			uskb_wsum csum = uskb_checksum(skb, (int)(udph - skb->data), (int)ulen, 0);

			sum = p->ipv6 ? uskb_csum_ipv6_magic(iph + 8, iph + 24, ulen, 17, csum) :
					uskb_csum_tcpudp_magic(p->saddr, p->daddr, ulen, 17, csum);
			if (!sum)
				sum = USKB_CSUM_MANGLED_0;
		}
		memcpy(udph + 6, &sum, 2);
	}
	return skb;
}
