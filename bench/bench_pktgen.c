/* SPDX-License-Identifier: MIT */
/*
 * Shared zero page vs a page per packet (kernel commit "pktgen: speedup fragmented skbs"):
 * 100-byte packets with one frag, sent to the null device, the frag taken
 * from the one shared zero page vs from a page allocated and zeroed for
 * every packet (what pktgen did before). Both loops build with
 * uskb_pktgen_build() exactly as the engine does (timestamp, seq, ip id)
 * and transmit through uskb_dev_xmit(). Prints "key ns_per_packet".
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_setaffinity_np in bench.h */
#endif
#include <arpa/inet.h>
#include <uskb/uskb.h>
#include <uskb/dev.h>
#include <uskb/pktgen.h>
#include "bench.h"

static struct uskb_pktgen_pkt pkt(void)
{
	struct uskb_pktgen_pkt p = { 0 };

	p.pkt_size = 100;
	p.nfrags = 1;
	memcpy(p.dst_mac, "\x02\x00\x00\x00\x00\x02", 6);
	memcpy(p.src_mac, "\x02\x00\x00\x00\x00\x01", 6);
	inet_pton(AF_INET, "198.18.0.1", &p.saddr);
	inet_pton(AF_INET, "198.18.0.2", &p.daddr);
	p.udp_src = p.udp_dst = 9;
	p.vlan_id = p.svlan_id = USKB_PKTGEN_NO_VLAN;
	return p;
}

static void stamp(struct uskb_pktgen_pkt *p)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	p->tv_sec = (uint32_t)ts.tv_sec;
	p->tv_usec = (uint32_t)(ts.tv_nsec / 1000);
	p->seq_num++;
	p->ip_id++;
}

int main(void)
{
	struct uskb_dev *dev = uskb_dev_open("null");
	struct uskb_pktgen_pkt p = pkt();
	struct uskb_page *zp = uskb_zero_page();
	const long n = bench_n(1000000L);

	if (!dev)
		return 1;
	BENCH("pg_seed.shared", n, for (long i = 0; i < n; i++) {
		struct uskb *skb;

		stamp(&p);
		skb = uskb_pktgen_build(&p, dev, zp);
		uskb_dev_xmit(dev, 0, &skb, 1, NULL);
	});
	BENCH("pg_seed.fresh", n, for (long i = 0; i < n; i++) {
		struct uskb_page *pg = uskb_page_alloc(0);
		struct uskb *skb;

		memset(uskb_page_address(pg), 0, USKB_PAGE_SIZE); /* __GFP_ZERO */
		stamp(&p);
		skb = uskb_pktgen_build(&p, dev, pg);
		uskb_page_put(pg); /* the frag holds its own reference */
		uskb_dev_xmit(dev, 0, &skb, 1, NULL);
	});
	uskb_dev_close(dev);
	return 0;
}
