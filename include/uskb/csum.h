/* SPDX-License-Identifier: MIT */
#ifndef USKB_CSUM_H
#define USKB_CSUM_H

/**
 * @file csum.h
 * The Internet checksum (RFC 1071) as the kernel computes it: a 32-bit
 * partial ones'-complement sum (__wsum) that is folded to 16 bits at the end
 * (__sum16), and the skb-level helpers for CHECKSUM_PARTIAL.
 *
 * Partial sums are in host byte order over 16-bit words read in memory
 * order, so on little-endian hosts a folded result is stored as is.
 */

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef uint32_t uskb_wsum;  /**< __wsum: unfolded partial sum */
typedef uint16_t uskb_sum16; /**< __sum16: folded, complemented checksum */

#define USKB_CSUM_MANGLED_0 ((uskb_sum16)0xffff)

/**
 * csum_partial(): add the bytes of @buf to @sum. Any alignment, any length;
 * 64-bit accumulation.
 */
USKB_API uskb_wsum uskb_csum_partial(const void *buf, size_t len,
				     uskb_wsum sum);
/** Byte-at-a-time reference implementation (tests and benchmarks). */
USKB_API uskb_wsum uskb_csum_partial_ref(const void *buf, size_t len,
					 uskb_wsum sum);

/** csum_add(). */
USKB_INLINE uskb_wsum uskb_csum_add(uskb_wsum a, uskb_wsum b)
{
	uint32_t r = a + b;

	return r + (r < b);
}

/** csum_sub(). */
USKB_INLINE uskb_wsum uskb_csum_sub(uskb_wsum a, uskb_wsum b)
{
	return uskb_csum_add(a, ~b);
}

/** csum_fold(): fold to 16 bits and complement. */
USKB_INLINE uskb_sum16 uskb_csum_fold(uskb_wsum sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (uskb_sum16)~sum;
}

/** csum_unfold(). */
USKB_INLINE uskb_wsum uskb_csum_unfold(uskb_sum16 n)
{
	return n;
}

USKB_INLINE uint32_t __uskb_ror32(uint32_t w, unsigned int s)
{
	return (w >> s) | (w << (32 - s));
}

/**
 * csum_block_add(): add the partial sum @csum2 of a block that starts at
 * byte @offset of the region summed by @csum (odd offsets swap bytes).
 */
USKB_INLINE uskb_wsum uskb_csum_block_add(uskb_wsum csum, uskb_wsum csum2,
					  int offset)
{
	if (offset & 1)
		csum2 = __uskb_ror32(csum2, 8);
	return uskb_csum_add(csum, csum2);
}

/** csum_block_sub(). */
USKB_INLINE uskb_wsum uskb_csum_block_sub(uskb_wsum csum, uskb_wsum csum2,
					  int offset)
{
	if (offset & 1)
		csum2 = __uskb_ror32(csum2, 8);
	return uskb_csum_sub(csum, csum2);
}

/**
 * csum_tcpudp_nofold(): add the IPv4 pseudo header. @saddr and @daddr are
 * in network byte order; @len and @proto in host order.
 */
USKB_API uskb_wsum uskb_csum_tcpudp_nofold(uint32_t saddr, uint32_t daddr,
					   uint32_t len, uint8_t proto,
					   uskb_wsum sum);

/** csum_tcpudp_magic(): pseudo header + fold. */
USKB_INLINE uskb_sum16 uskb_csum_tcpudp_magic(uint32_t saddr, uint32_t daddr,
					      uint32_t len, uint8_t proto,
					      uskb_wsum sum)
{
	return uskb_csum_fold(uskb_csum_tcpudp_nofold(saddr, daddr, len, proto, sum));
}

/**
 * csum_ipv6_magic(): IPv6 pseudo header (16-byte addresses as on the wire)
 * + fold.
 */
USKB_API uskb_sum16 uskb_csum_ipv6_magic(const void *saddr, const void *daddr,
					 uint32_t len, uint8_t proto,
					 uskb_wsum sum);

/** ip_fast_csum(): checksum of an IPv4 header of @ihl 32-bit words. */
USKB_INLINE uskb_sum16 uskb_ip_fast_csum(const void *iph, unsigned int ihl)
{
	/* a header is a few 32-bit words: add them with end-around carry inline */
	const unsigned char *p = (const unsigned char *)iph;
	uint64_t sum = 0;
	uint32_t w;

	for (unsigned int i = 0; i < ihl; i++) {
		memcpy(&w, p + 4 * i, 4);
		sum += w;
	}
	sum = (sum & 0xffffffffu) + (sum >> 32);
	sum = (sum & 0xffffffffu) + (sum >> 32);
	return uskb_csum_fold((uskb_wsum)sum);
}

struct uskb;

/**
 * skb_checksum(): partial sum of @len bytes of the packet from @offset,
 * over head, frags and frag_list, added to @csum. Out-of-range is a bug.
 */
USKB_API uskb_wsum uskb_checksum(const struct uskb *skb, int offset, int len,
				 uskb_wsum csum);

/**
 * skb_checksum_help(): complete a CHECKSUM_PARTIAL checksum in software.
 * Linearizes first when the frags may be shared (user memory may change),
 * makes the written bytes private, stores the folded sum (0 becomes 0xffff)
 * and sets ip_summed = NONE. 0, -EINVAL (bad offsets or GSO) or -ENOMEM.
 */
USKB_API int uskb_checksum_help(struct uskb *skb);

/**
 * skb_partial_csum_set(): declare the checksum at @start (from data) with
 * the result at @start + @off. False (nothing changed) when it does not fit
 * the linear part.
 */
USKB_API bool uskb_partial_csum_set(struct uskb *skb, uint16_t start,
				    uint16_t off);

#ifdef __cplusplus
}
#endif
#endif
