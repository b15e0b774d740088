/* SPDX-License-Identifier: MIT */
/*
 * The receiving side of pktgen: find the pktgen header in a frame, count
 * per stream, tell lost, reordered and duplicate sequence numbers apart,
 * and keep a latency histogram.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pg.h"

#define MAX_STREAMS 256
#define WINDOW 65536u /* sequence numbers remembered behind the highest */
#define LAT_BUCKETS (61 * 16)

/* a stream: source MAC, source address (IPv4 in the first 4 of 16), UDP source port */
#define KEY_LEN (6 + 16 + 2)

struct stream {
	uint8_t key[KEY_LEN];
	bool used;
	uint64_t first, max; /* 32-bit numbers extended: they wrap after 2^32 packets */
	uint64_t unique;
	uint64_t got;	     /* packets, repeats included */
	uint64_t max_copies; /* how many times the highest number came */
	uint64_t *seen; /* WINDOW bits, seq % WINDOW */
};

struct uskb_pktgen_rx {
	struct uskb_pktgen_rx_stats st;
	struct stream streams[MAX_STREAMS];
	uint64_t lat[LAT_BUCKETS];
};

struct uskb_pktgen_rx *uskb_pktgen_rx_new(void)
{
	struct uskb_pktgen_rx *rx = calloc(1, sizeof(*rx));

	if (!rx)
		return NULL;
	rx->st.lat_min = UINT64_MAX;
	return rx;
}

void uskb_pktgen_rx_free(struct uskb_pktgen_rx *rx)
{
	if (!rx)
		return;
	for (int i = 0; i < MAX_STREAMS; i++)
		free(rx->streams[i].seen);
	free(rx);
}

/*
 * The pktgen header of @f (@len bytes) into @h, and the stream key; false
 * when this is not a pktgen packet.
 */
static bool find_pgh(const uint8_t *f, unsigned int len, uint8_t key[KEY_LEN], struct pg_hdr *h)
{
	unsigned int off = 12, type;
	int tags = 0;

	if (len < 14)
		return false;
	memset(key, 0, KEY_LEN);
	memcpy(key, f + 6, 6);
	type = (unsigned int)f[12] << 8 | f[13];
	off = 14;
	while ((type == 0x8100 || type == 0x88a8) && tags++ < 2) {
		if (len < off + 4)
			return false;
		type = (unsigned int)f[off + 2] << 8 | f[off + 3];
		off += 4;
	}
	if (type == 0x8847 || type == 0x8848) {
		/* MPLS: labels up to the bottom of the stack, then IP by its version */
		for (int i = 0;; i++) {
			if (i == 16 || len < off + 4)
				return false;
			off += 4;
			if (f[off - 2] & 1)
				break;
		}
		if (len < off + 1)
			return false;
		type = (f[off] >> 4) == 6 ? 0x86dd : 0x0800;
	}
	if (type == 0x0800) {
		unsigned int ihl;

		if (len < off + 20 || (f[off] >> 4) != 4 || f[off + 9] != 17)
			return false;
		if (((unsigned int)f[off + 6] << 8 | f[off + 7]) & 0x1fff) /* a later fragment */
			return false;
		ihl = (f[off] & 15u) * 4;
		memcpy(key + 6, f + off + 12, 4);
		off += ihl;
	} else if (type == 0x86dd) {
		if (len < off + 40 || (f[off] >> 4) != 6 || f[off + 6] != 17)
			return false;
		memcpy(key + 6, f + off + 8, 16);
		off += 40;
	} else {
		return false;
	}
	if (len < off + 2)
		return false;
	memcpy(key + 6 + 16, f + off, 2); /* the UDP source port: one per sender thread */
	off += 8;
	if (len < off + sizeof(*h))
		return false;
	memcpy(h, f + off, sizeof(*h));
	return ntohl(h->magic) == USKB_PKTGEN_MAGIC;
}

static struct stream *find_stream(struct uskb_pktgen_rx *rx, const uint8_t key[KEY_LEN])
{
	unsigned int h = 2166136261u, i;

	for (i = 0; i < KEY_LEN; i++)
		h = (h ^ key[i]) * 16777619u;
	for (i = 0; i < MAX_STREAMS; i++) {
		struct stream *s = &rx->streams[(h + i) % MAX_STREAMS];

		if (s->used && !memcmp(s->key, key, KEY_LEN))
			return s;
		if (!s->used) {
			s->seen = calloc(WINDOW / 64, sizeof(uint64_t));
			if (!s->seen)
				return NULL;
			s->used = true;
			memcpy(s->key, key, KEY_LEN);
			rx->st.streams++;
			return s;
		}
	}
	return NULL; /* full: counted, not followed */
}

static bool test_and_set(struct stream *s, uint64_t seq)
{
	uint64_t bit = 1ull << (seq % 64), *w = &s->seen[(seq % WINDOW) / 64];
	bool was = *w & bit;

	*w |= bit;
	return was;
}

static void track(struct uskb_pktgen_rx *rx, struct stream *s, uint32_t seq32)
{
	uint64_t seq;

	s->got++;
	if (!s->unique) {
		/* 2^32 up: room below for late ones */
		s->first = s->max = (1ull << 32) | seq32;
		s->unique = 1;
		s->max_copies = 1;
		test_and_set(s, s->max);
		return;
	}
	/* the nearest number with these low 32 bits: serial arithmetic across the wrap */
	seq = s->max + (uint64_t)(int64_t)(int32_t)(seq32 - (uint32_t)s->max);
	if (seq > s->max) {
		if (seq - s->max >= WINDOW) {
			memset(s->seen, 0, WINDOW / 8);
		} else {
			for (uint64_t q = s->max + 1; q != seq; q++)
				s->seen[(q % WINDOW) / 64] &= ~(1ull << (q % 64));
		}
		s->max = seq;
		s->max_copies = 1;
		test_and_set(s, seq);
		s->unique++;
		return;
	}
	if (s->max - seq < WINDOW && test_and_set(s, seq)) {
		rx->st.duplicates++;
		if (seq == s->max)
			s->max_copies++;
		return;
	}
	/* later than a higher number (or too late to tell a repeat from it) */
	rx->st.reordered++;
	s->unique++;
	if (seq < s->first)
		s->first = seq;
}

static unsigned int lat_bucket(uint64_t v)
{
	unsigned int msb;

	if (v < 16)
		return (unsigned int)v;
	msb = 63u - (unsigned int)__builtin_clzll(v);
	return (msb - 3) * 16 + (unsigned int)((v >> (msb - 4)) & 15);
}

/* the middle of a bucket */
static uint64_t lat_value(unsigned int b)
{
	unsigned int msb = b / 16 + 3;

	if (b < 16)
		return b;
	return ((16ull + b % 16) << (msb - 4)) + ((1ull << (msb - 4)) >> 1);
}

bool uskb_pktgen_rx_count(struct uskb_pktgen_rx *rx, const struct uskb *skb, uint64_t now_ns)
{
	uint8_t f[128 + sizeof(struct pg_hdr)], key[KEY_LEN];
	unsigned int len = skb->len < sizeof(f) ? skb->len : (unsigned int)sizeof(f);
	struct stream *s;
	struct pg_hdr h;
	uint64_t sent, arrived;

	if (uskb_copy_bits(skb, 0, f, (int)len) || !find_pgh(f, len, key, &h)) {
		rx->st.other++;
		return false;
	}
	rx->st.packets++;
	rx->st.bytes += skb->len;
	s = find_stream(rx, key);
	if (s)
		track(rx, s, ntohl(h.seq));
	sent = (uint64_t)ntohl(h.tv_sec) * 1000000000ull + (uint64_t)ntohl(h.tv_usec) * 1000ull;
	if (sent) {
		uint64_t l;

		arrived = skb->tstamp ? skb->tstamp : now_ns;
		l = arrived > sent ? arrived - sent : 0; /* the send time is cut to µs */
		rx->st.lat_samples++;
		rx->lat[lat_bucket(l)]++;
		if (l < rx->st.lat_min)
			rx->st.lat_min = l;
		if (l > rx->st.lat_max)
			rx->st.lat_max = l;
	}
	return true;
}

static uint64_t percentile(const struct uskb_pktgen_rx *rx, double q)
{
	uint64_t want = (uint64_t)((double)rx->st.lat_samples * q), sum = 0;

	if (want >= rx->st.lat_samples)
		want = rx->st.lat_samples - 1;
	for (unsigned int b = 0; b < LAT_BUCKETS; b++) {
		sum += rx->lat[b];
		if (sum > want) {
			uint64_t v = lat_value(b);

			/* never outside what was seen */
			return v < rx->st.lat_min ? rx->st.lat_min : v > rx->st.lat_max ? rx->st.lat_max : v;
		}
	}
	return rx->st.lat_max;
}

void uskb_pktgen_rx_stats(const struct uskb_pktgen_rx *rx, struct uskb_pktgen_rx_stats *st)
{
	*st = rx->st;
	st->lost = 0;
	/*
	 * The sender numbers every packet it sends, and one it sends again
	 * (burst, clone_skb: the same skb) keeps the number it was built with:
	 * each copy stands for a number, and the next one built is that much
	 * higher. So the numbers a stream's packets stand for run from its
	 * first to its highest and the highest's copies; those no packet
	 * stands for are lost.
	 */
	for (int i = 0; i < MAX_STREAMS; i++) {
		const struct stream *s = &rx->streams[i];
		uint64_t span = s->max - s->first + s->max_copies;

		if (s->used && span > s->got)
			st->lost += span - s->got;
	}
	if (!st->lat_samples) {
		st->lat_min = 0;
		return;
	}
	st->lat_p50 = percentile(rx, 0.50);
	st->lat_p99 = percentile(rx, 0.99);
	st->lat_p999 = percentile(rx, 0.999);
}
