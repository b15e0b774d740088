/* SPDX-License-Identifier: MIT */
/*
 * Internet checksum on plain buffers: csum_partial with 64-bit accumulation
 * and the pseudo header sums.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "lib/compiler.h"
#include "uskb/csum.h"

/* The sums below place bytes in little-endian 16-bit lanes. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "uskb checksums assume little-endian");

static inline uint64_t add64(uint64_t a, uint64_t b)
{
	a += b;
	return a + (a < b); /* end-around carry */
}

static inline uint64_t load64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint32_t fold64(uint64_t s)
{
	s = (s & 0xffffffffu) + (s >> 32);
	s = (s & 0xffffffffu) + (s >> 32);
	return (uint32_t)s;
}

/*
 * Ones'-complement sum in 64-bit words: a 64-bit ones'-complement sum folds
 * to the same 16-bit result as the 16-bit sum (2^16 - 1 divides 2^64 - 1).
 * Four independent accumulators keep the carry chains short.
 */
uskb_wsum uskb_csum_partial(const void *buf, size_t len, uskb_wsum sum)
{
	const unsigned char *p = buf;
	uint64_t a = sum, b = 0, c = 0, d = 0;

	while (len >= 64) {
		a = add64(a, load64(p));
		b = add64(b, load64(p + 8));
		c = add64(c, load64(p + 16));
		d = add64(d, load64(p + 24));
		a = add64(a, load64(p + 32));
		b = add64(b, load64(p + 40));
		c = add64(c, load64(p + 48));
		d = add64(d, load64(p + 56));
		p += 64;
		len -= 64;
	}
	while (len >= 8) {
		a = add64(a, load64(p));
		p += 8;
		len -= 8;
	}
	if (len) {
		uint64_t t = 0;

		/* little-endian: the tail bytes keep their place in the word */
		memcpy(&t, p, len);
		b = add64(b, t);
	}
	a = add64(a, b);
	c = add64(c, d);
	a = add64(a, c);
	return fold64(a);
}

uskb_wsum uskb_csum_partial_ref(const void *buf, size_t len, uskb_wsum sum)
{
	const unsigned char *p = buf;
	uint64_t s = sum;
	size_t i;

	/* byte by byte, each byte in its lane of a little-endian 16-bit word */
	for (i = 0; i < len; i++)
		s += (i & 1) ? (uint64_t)p[i] << 8 : p[i];
	return fold64(s);
}

uskb_wsum uskb_csum_tcpudp_nofold(uint32_t saddr, uint32_t daddr, uint32_t len,
				  uint8_t proto, uskb_wsum sum)
{
	uint64_t s = sum;

	s += saddr;
	s += daddr;
	/* (proto + len) in network order; bits above 16 fold back in */
	s += (uint64_t)(proto + len) << 8;
	return fold64(s);
}

uskb_sum16 uskb_csum_ipv6_magic(const void *saddr, const void *daddr, uint32_t len,
				uint8_t proto, uskb_wsum sum)
{
	uint64_t s = sum;
	uint32_t w[2];

	s = add64(s, uskb_csum_partial(saddr, 16, 0));
	s = add64(s, uskb_csum_partial(daddr, 16, 0));
	w[0] = __builtin_bswap32(len);
	w[1] = __builtin_bswap32(proto);
	s = add64(s, uskb_csum_partial(w, sizeof(w), 0));
	return uskb_csum_fold(fold64(s));
}
