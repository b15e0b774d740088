/* SPDX-License-Identifier: MIT */
#ifndef USKB_PKTGEN_H
#define USKB_PKTGEN_H

/**
 * @file pktgen.h
 * uskb-pktgen, work in progress: the packet builder (the kernel pktgen's
 * fill_packet_ipv4 / fill_packet_ipv6 / pktgen_finalize_skb). The engine,
 * its command language and the CLI come next.
 */

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

struct uskb;
struct uskb_dev;
struct uskb_page;

#define USKB_PKTGEN_MAGIC 0xbe9be955u
#define USKB_PKTGEN_NO_VLAN 0xffff

/** What one packet is built from (the current fields of a pktgen_dev). */
struct uskb_pktgen_pkt {
	unsigned int pkt_size;	/**< cur_pkt_size: the frame without FCS */
	int nfrags;		/**< frags from the zero page (capped at 17) */
	bool ipv6;
	bool udpcsum;		/**< flag UDPCSUM */
	uint8_t dst_mac[6], src_mac[6];
	uint32_t saddr, daddr;	/**< IPv4, network byte order */
	uint8_t saddr6[16], daddr6[16];
	uint16_t udp_src, udp_dst;
	uint8_t tos;		/**< tos, or traffic_class for IPv6 */
	uint32_t labels[16];	/**< MPLS labels as given (BOS is added) */
	int nr_labels;
	uint16_t vlan_id, vlan_p, vlan_cfi; /**< vlan_id USKB_PKTGEN_NO_VLAN: none */
	uint16_t svlan_id, svlan_p, svlan_cfi;
	uint16_t ip_id;		/**< IPv4 id of this packet */
	uint32_t seq_num;
	uint32_t tv_sec, tv_usec; /**< the pktgen header's timestamp (0, 0: NO_TIMESTAMP) */
};

/**
 * Build one packet as the kernel does: Ethernet, MPLS, SVLAN, VLAN,
 * IPv4/IPv6, UDP, the pktgen header, zeros (from @zero_page frags when
 * nfrags > 0, never written). UDPCSUM: CHECKSUM_PARTIAL with the pseudo
 * header sum when @dev has the IP(V6)_CSUM feature, else the full sum in
 * software. NULL + errno.
 */
USKB_API struct uskb *uskb_pktgen_build(const struct uskb_pktgen_pkt *p,
					const struct uskb_dev *dev, struct uskb_page *zero_page);

#ifdef __cplusplus
}
#endif
#endif
