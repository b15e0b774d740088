/* SPDX-License-Identifier: MIT */
/**
 * @file ovs.h
 * Open vSwitch's datapath upcall (seed 004) on uskb: the flow key a packet
 * gives (the kernel's ovs_flow_key_extract), that key as nested netlink
 * attributes (ovs_nla_put_key), and the OVS_PACKET_CMD_MISS / _ACTION
 * message built around the packet (queue_userspace_packet) — with the
 * packet referenced through uskb_zerocopy(), or copied.
 *
 * Structures and attribute numbers are the kernel's uapi
 * (linux/openvswitch.h), so ovs-vswitchd, libmnl or tshark read what these
 * write. A userspace datapath has no conntrack and no tunnels: keys carry
 * no CT_* and no TUNNEL attributes (what a kernel without
 * CONFIG_NF_CONNTRACK writes).
 */
#ifndef USKB_OVS_H
#define USKB_OVS_H

#include <stdint.h>
#include <linux/openvswitch.h>

#include "netlink.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * struct sw_flow_key, exact-match form: every field a key attribute
 * carries, in the byte order of the attribute (be: network order). It has
 * no padding: keys compare and hash as bytes, so zero one before filling
 * it by hand.
 */
struct uskb_ovs_key {
	uint32_t recirc_id; /**< OVS_KEY_ATTR_RECIRC_ID (0 for a packet from a port) */
	uint32_t dp_hash;   /**< OVS_KEY_ATTR_DP_HASH */
	uint32_t priority;  /**< skb->priority */
	uint32_t in_port;   /**< the datapath port the packet came in on */
	uint32_t mark;	    /**< skb->mark (OVS_KEY_ATTR_SKB_MARK) */
	uint8_t eth_src[6];
	uint8_t eth_dst[6];
	uint16_t vlan_tpid; /**< be: outer tag's TPID; 0 when untagged */
	uint16_t vlan_tci;  /**< be: its TCI with 0x1000 (VLAN_CFI) set: "a tag was there" */
	uint16_t cvlan_tpid; /**< be: inner tag (802.1ad: the customer tag) */
	uint16_t cvlan_tci;
	uint16_t eth_type;  /**< be: after the tags; ETH_P_802_2 for an 802.2/802.3 frame */
	uint8_t ip_proto;   /**< IP protocol; ARP: the opcode when it fits 8 bits */
	uint8_t ip_tos;	    /**< IPv4 TOS, IPv6 traffic class */
	uint8_t ip_ttl;	    /**< TTL / hop limit */
	uint8_t ip_frag;    /**< OVS_FRAG_TYPE_NONE, _FIRST or _LATER */
	uint16_t ipv6_exthdrs; /**< OVS_KEY_ATTR_IPV6_EXTHDRS bits (OFPIEH12_*) */
	uint16_t tcp_flags; /**< be: the 12 flag bits of a TCP header */
	uint16_t tp_src;    /**< be: L4 source port; ICMP: the type */
	uint16_t tp_dst;    /**< be: L4 destination port; ICMP: the code */
	uint16_t reserved;  /**< zero */
	uint32_t ipv6_label; /**< be: the flow label (20 bits) */
	union {
		struct {
			uint32_t src, dst; /**< be */
		} ipv4;		/**< IPv4, and ARP's sender and target IPs */
		struct {
			uint8_t src[16], dst[16];
		} ipv6;
	} addr;
	uint8_t arp_sha[6]; /**< ARP sender MAC; IPv6 ND: source link-layer option */
	uint8_t arp_tha[6]; /**< ARP target MAC; IPv6 ND: target link-layer option */
	uint8_t nd_target[16]; /**< IPv6 ND target address */
};

/**
 * The most bytes uskb_ovs_key_put() writes for one key (its nest header
 * included): the value to size a message with (ovs_key_attr_size()).
 */
#define USKB_OVS_KEY_ATTR_MAX_SIZE 256

/**
 * ovs_flow_key_extract(): fill @key from the frame in @skb (from its data,
 * an Ethernet header) and the metadata (@in_port, skb->priority,
 * skb->mark). Reads only bytes the frame has: a truncated header gives the
 * fields that were there, zeros for the rest, as the kernel's extractor
 * does. @skb is not changed (it may be non-linear and shared). 0, or
 * -EINVAL for a frame shorter than an Ethernet header.
 */
USKB_API int uskb_ovs_key_extract(const struct uskb *skb, uint32_t in_port,
				  struct uskb_ovs_key *key);

/**
 * ovs_nla_put_key(): @key as a nest of type @attrtype (OVS_PACKET_ATTR_KEY,
 * OVS_FLOW_ATTR_KEY) holding its OVS_KEY_ATTR_* attributes in the kernel's
 * order: RECIRC_ID, DP_HASH, PRIORITY, IN_PORT, SKB_MARK, ETHERNET, the
 * VLAN tags with their ENCAP nests, ETHERTYPE, IPV4 / IPV6 + IPV6_EXTHDRS /
 * ARP, then TCP + TCP_FLAGS / UDP / SCTP / ICMP / ICMPV6 (+ ND). 0, or -EMSGSIZE
 * when the tailroom is short (nothing is left written).
 */
USKB_API int uskb_ovs_key_put(struct uskb *msg, const struct uskb_ovs_key *key, int attrtype);

/**
 * A software flow hash of @key's addresses, protocol and ports (the skb
 * hash the kernel's flow dissector gives): what picks a handler, and the
 * low 32 bits of OVS_PACKET_ATTR_HASH.
 */
USKB_API uint32_t uskb_ovs_flow_hash(const struct uskb_ovs_key *key);

/** uskb_ovs_upcall() flags. */
enum {
	/**
	 * Copy the packet into the message's linear area (the stock path,
	 * skb_copy_and_csum_dev) instead of referencing its frags.
	 */
	USKB_OVS_UPCALL_COPY = 1 << 0,
	/**
	 * OVS_DP_F_UNALIGNED: leave the message unpadded after the packet
	 * (nlmsg_len = exact length), as ovs-vswitchd asks its datapath.
	 * Without it the packet attribute is padded to 4 bytes with zeros.
	 */
	USKB_OVS_UPCALL_UNALIGNED = 1 << 1,
};

/** What an upcall says besides the packet and its key (struct dp_upcall_info). */
struct uskb_ovs_upcall_info {
	uint16_t family;	  /**< the "ovs_packet" generic netlink family id: nlmsg_type */
	uint8_t cmd;		  /**< OVS_PACKET_CMD_MISS or OVS_PACKET_CMD_ACTION */
	int dp_ifindex;		  /**< ovs_header.dp_ifindex */
	uint32_t portid;	  /**< nlmsg_pid */
	const struct nlattr *userdata; /**< ACTION: copied whole as OVS_PACKET_ATTR_USERDATA */
	uint64_t hash;		  /**< OVS_PACKET_ATTR_HASH (bit 32: software hash, 33: L4) */
	unsigned int flags;	  /**< USKB_OVS_UPCALL_* */
};

/** OVS_PACKET_HASH_SW_BIT and _L4_BIT of OVS_PACKET_ATTR_HASH. */
#define USKB_OVS_PACKET_HASH_SW (1ull << 32)
#define USKB_OVS_PACKET_HASH_L4 (1ull << 33)

/**
 * queue_userspace_packet(): the upcall message for @skb (an Ethernet frame)
 * with @key: nlmsghdr, genlmsghdr (@info->cmd, version 1), ovs_header, then
 * OVS_PACKET_ATTR_KEY, _USERDATA (when given), _HASH and _PACKET, last.
 *
 * A CHECKSUM_PARTIAL checksum is completed first (in @skb itself unless
 * copying). The packet goes in by uskb_zerocopy(): uskb_zerocopy_headlen()
 * bytes are copied into the message's head and the rest are references to
 * @skb's frags, which the message keeps alive (and with them a zero-copy
 * owner). The pad after an unaligned packet is zeros, never the bytes that
 * follow it in its page: in the head when everything was copied, else a
 * frag on the shared zero page. With USKB_OVS_UPCALL_COPY the whole packet
 * is copied; the two give the same bytes.
 *
 * Returns the message, nlmsg_len set (its skb length), or NULL with *@err:
 * -EFBIG (a packet longer than an attribute can say), -ENOMEM, -EINVAL (a
 * CHECKSUM_PARTIAL skb whose offsets are wrong) or -EMSGSIZE (userdata too
 * long). @skb stays the caller's either way.
 */
USKB_API struct uskb *uskb_ovs_upcall(struct uskb *skb, const struct uskb_ovs_key *key,
				      const struct uskb_ovs_upcall_info *info, int *err);

#ifdef __cplusplus
}
#endif

#endif
