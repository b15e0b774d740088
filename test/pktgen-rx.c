/* SPDX-License-Identifier: MIT */
/*
 * The receiving side of pktgen (uskb_pktgen_rx_*): the pktgen header found
 * behind every encapsulation pktgen makes, sequence numbers told apart as
 * lost, reordered and duplicate — across the 32-bit wrap too — streams by
 * source MAC, address and UDP source port, and latency percentiles from
 * known delays.
 */
#include <arpa/inet.h>
#include <stdint.h>

#include "t.h"

enum { V4, V6, VLAN, QINQ, MPLS, NOT_UDP, BAD_MAGIC };

/* the UDP source port of the frames made next (uskb-pktgen -t N: 9 + thread) */
static uint16_t udp_sport = 9;

/* a pktgen frame: seq, send time (s, us), arrival at tstamp; mac_last picks the source MAC */
static struct uskb *frame(int kind, uint32_t seq, uint32_t sec, uint32_t usec, uint64_t tstamp,
			  uint8_t mac_last)
{
	struct uskb *skb = uskb_alloc(256);
	uint8_t *f = uskb_put(skb, 128), *p;
	uint16_t type;
	uint32_t w[4] = { htonl(0xbe9be955u), htonl(seq), htonl(sec), htonl(usec) };

	memset(f, 0, 128);
	memcpy(f, "\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00", 11);
	f[11] = mac_last;
	p = f + 12;
	if (kind == VLAN || kind == QINQ) {
		if (kind == QINQ) {
			memcpy(p, "\x88\xa8\x00\x05", 4);
			p += 4;
		}
		memcpy(p, "\x81\x00\x00\x07", 4);
		p += 4;
	}
	if (kind == MPLS) {
		memcpy(p, "\x88\x47\x00\x01\x00\x40\x00\x02\x01\x40", 10); /* two labels, S on the second */
		p += 10;
	} else {
		type = htons(kind == V6 ? 0x86dd : 0x0800);
		memcpy(p, &type, 2);
		p += 2;
	}
	if (kind == V6) {
		p[0] = 0x60;
		p[6] = 17;
		p[8 + 15] = 1; /* source fd00::1-ish */
		p += 40;
	} else {
		p[0] = 0x45;
		p[9] = kind == NOT_UDP ? 6 : 17;
		memcpy(p + 12, "\xc6\x12\x00\x01", 4); /* 198.18.0.1 */
		p += 20;
	}
	p[0] = (uint8_t)(udp_sport >> 8);
	p[1] = (uint8_t)udp_sport;
	p += 8; /* UDP */
	if (kind == BAD_MAGIC)
		w[0] = htonl(0x12345678);
	memcpy(p, w, 16);
	skb->tstamp = tstamp;
	return skb;
}

static void feed(struct uskb_pktgen_rx *rx, int kind, uint32_t seq, uint8_t mac)
{
	struct uskb *skb = frame(kind, seq, 0, 0, 0, mac);

	uskb_pktgen_rx_count(rx, skb, 0);
	uskb_free(skb);
}

static struct uskb_pktgen_rx_stats stats(struct uskb_pktgen_rx *rx)
{
	struct uskb_pktgen_rx_stats st;

	uskb_pktgen_rx_stats(rx, &st);
	return st;
}

int main(void)
{
	struct uskb_pktgen_rx *rx = uskb_pktgen_rx_new();
	struct uskb_pktgen_rx_stats st;
	uint32_t s;

	/* every encapsulation is found; others are "other" */
	for (int k = V4; k <= MPLS; k++)
		feed(rx, k, 1, (uint8_t)(10 + k));
	feed(rx, NOT_UDP, 1, 1);
	feed(rx, BAD_MAGIC, 1, 1);
	st = stats(rx);
	CHECK_EQ(st.packets, 5);
	CHECK_EQ(st.other, 2);
	CHECK_EQ(st.streams, 5); /* five source MACs */
	CHECK_EQ(st.lost + st.reordered + st.duplicates, 0);
	CHECK_EQ(st.lat_samples, 0); /* no send times (NO_TIMESTAMP) */
	uskb_pktgen_rx_free(rx);

	/* in order; then a gap of 5; one late; one twice */
	rx = uskb_pktgen_rx_new();
	for (s = 1; s <= 100; s++)
		feed(rx, V4, s, 1);
	st = stats(rx);
	CHECK(st.packets == 100 && st.lost == 0 && st.reordered == 0 && st.duplicates == 0);
	for (s = 106; s <= 110; s++)
		feed(rx, V4, s, 1);
	CHECK_EQ(stats(rx).lost, 5); /* 101..105 */
	feed(rx, V4, 103, 1);
	st = stats(rx);
	CHECK_EQ(st.lost, 4);
	CHECK_EQ(st.reordered, 1);
	feed(rx, V4, 103, 1);
	feed(rx, V4, 110, 1);
	st = stats(rx);
	CHECK_EQ(st.duplicates, 2);
	CHECK_EQ(st.lost, 3); /* the repeat of 103 stands for a number the sender used (burst) */
	/* another stream keeps its own numbers */
	for (s = 1; s <= 10; s++)
		feed(rx, V4, s, 2);
	st = stats(rx);
	CHECK(st.streams == 2 && st.duplicates == 2 && st.lost == 3);
	uskb_pktgen_rx_free(rx);

	/*
	 * burst 4, the kernel's numbering: one skb sent four times keeps its
	 * number, the next is 4 higher. All 1000 arrive: 750 duplicates, none
	 * lost; then one copy of a burst never comes: 1 lost
	 */
	rx = uskb_pktgen_rx_new();
	for (s = 1; s <= 1000; s += 4)
		for (int c = 0; c < 4; c++)
			feed(rx, V4, s, 1);
	st = stats(rx);
	CHECK(st.packets == 1000 && st.duplicates == 750 && st.lost == 0 && st.reordered == 0);
	for (int c = 0; c < 3; c++)
		feed(rx, V4, 1001, 1);
	feed(rx, V4, 1005, 1);
	st = stats(rx);
	CHECK_EQ(st.lost, 1);
	/* a whole burst missing: its 4 numbers */
	feed(rx, V4, 1013, 1);
	CHECK_EQ(stats(rx).lost, 1 + 3 + 4);
	uskb_pktgen_rx_free(rx);

	/* two sender threads: same MAC and address, own UDP source ports, numbers interleaved */
	rx = uskb_pktgen_rx_new();
	for (s = 1; s <= 50; s++) {
		udp_sport = 9;
		feed(rx, V4, s, 1);
		udp_sport = 10;
		feed(rx, V4, s, 1);
	}
	udp_sport = 9;
	st = stats(rx);
	CHECK(st.streams == 2 && st.packets == 100);
	CHECK_EQ(st.lost + st.reordered + st.duplicates, 0);
	uskb_pktgen_rx_free(rx);

	/* across the 32-bit wrap: nothing lost, nothing reordered; a late one before it */
	rx = uskb_pktgen_rx_new();
	for (s = 0xfffffff0u; s != 0x10u; s++)
		if (s != 0xfffffffeu)
			feed(rx, V6, s, 1);
	st = stats(rx);
	CHECK_EQ(st.packets, 31);
	CHECK_EQ(st.lost, 1);
	CHECK_EQ(st.reordered, 0);
	feed(rx, V6, 0xfffffffeu, 1);
	st = stats(rx);
	CHECK(st.lost == 0 && st.reordered == 1 && st.duplicates == 0);
	uskb_pktgen_rx_free(rx);

	/* latency: 1000 packets delayed 1..1000 us; the arrival from tstamp, or now_ns */
	rx = uskb_pktgen_rx_new();
	for (s = 1; s <= 1000; s++) {
		uint64_t sent = 1700000000ull * 1000000000ull + 123000; /* at a whole us */
		struct uskb *skb = frame(V4, s, 1700000000u, 123, s % 2 ? sent + s * 1000ull : 0, 1);

		uskb_pktgen_rx_count(rx, skb, sent + s * 1000ull);
		uskb_free(skb);
	}
	st = stats(rx);
	CHECK_EQ(st.lat_samples, 1000);
	CHECK_EQ(st.lat_min, 1000);
	CHECK_EQ(st.lat_max, 1000000);
	/* within 1/16 of 500, 990 and 999 us */
	CHECK(st.lat_p50 >= 500000 * 15 / 16 && st.lat_p50 <= 500000 * 17 / 16);
	CHECK(st.lat_p99 >= 990000 * 15 / 16 && st.lat_p99 <= 990000 * 17 / 16);
	CHECK(st.lat_p999 >= 999000 * 15 / 16 && st.lat_p999 <= 1000000);
	CHECK(st.lat_p50 <= st.lat_p99 && st.lat_p99 <= st.lat_p999);
	printf("latency 1..1000 us: p50 %.1f us, p99 %.1f us, p99.9 %.1f us\n", st.lat_p50 / 1e3,
	       st.lat_p99 / 1e3, st.lat_p999 / 1e3);
	uskb_pktgen_rx_free(rx);
	return t_end("pktgen-rx");
}
