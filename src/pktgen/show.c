/* SPDX-License-Identifier: MIT */
/*
 * What pktgen shows: the files pgctrl, kpktgend_N and the device's
 * (pktgen_if_show, pktgen_thread_show) and the result line of a run
 * (show_results), in the kernel 6.1 words.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "pg.h"

struct sbuf {
	char *p;
	size_t len, n;
};

__attribute__((format(printf, 2, 3))) static void sb(struct sbuf *s, const char *fmt, ...)
{
	va_list ap;
	int k;

	va_start(ap, fmt);
	k = vsnprintf(s->n < s->len ? s->p + s->n : NULL, s->n < s->len ? s->len - s->n : 0, fmt, ap);
	va_end(ap);
	if (k > 0)
		s->n += (size_t)k;
}

/* pktgen_if_show() */
int __uskb_pg_show_dev(const struct pg_dev *d, char *buf, size_t len)
{
	struct sbuf sbuf = { buf, len, 0 }, *s = &sbuf;
	char a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN], c[INET6_ADDRSTRLEN], m[18];
	bool running = atomic_load(&d->running);
	uint64_t stopped = running ? uskb_mono_ns() : atomic_load(&d->stopped_at);

	sb(s, "Params: count %" PRIu64 "  min_pkt_size: %u  max_pkt_size: %u\n", d->p.count,
	   d->p.min_pkt_size, d->p.max_pkt_size);
	if (d->p.n_imix) {
		sb(s, "     imix_weights: ");
		for (unsigned int i = 0; i < d->p.n_imix; i++)
			sb(s, "%" PRIu64 ",%" PRIu64 " ", d->p.imix[i].size, d->p.imix[i].weight);
		sb(s, "\n");
	}
	sb(s, "     frags: %d  delay: %" PRIu64 "  clone_skb: %d  ifname: %s\n", d->p.nfrags, d->p.delay,
	   d->p.clone_skb, d->odevname);
	sb(s, "     flows: %u flowlen: %u\n", d->p.cflows, d->p.lflow);
	sb(s, "     queue_map_min: %u  queue_map_max: %u\n", d->p.queue_map_min, d->p.queue_map_max);
	if (d->p.skb_priority)
		sb(s, "     skb_priority: %u\n", d->p.skb_priority);
	if (d->p.flags & F_IPV6) {
		sb(s, "     saddr: %s  min_saddr: %s  max_saddr: %s\n", pg_ip6_fmt(a, &d->p.in6_saddr),
		   pg_ip6_fmt(b, &d->p.min_in6_saddr), pg_ip6_fmt(c, &d->p.max_in6_saddr));
		sb(s, "     daddr: %s  min_daddr: %s  max_daddr: %s\n", pg_ip6_fmt(a, &d->p.in6_daddr),
		   pg_ip6_fmt(b, &d->p.min_in6_daddr), pg_ip6_fmt(c, &d->p.max_in6_daddr));
	} else {
		sb(s, "     dst_min: %s  dst_max: %s\n", d->p.dst_min.str, d->p.dst_max.str);
		sb(s, "     src_min: %s  src_max: %s\n", d->p.src_min.str, d->p.src_max.str);
	}
	pg_mac_fmt(m, pg_zero_mac(d->p.src_mac) ? d->nd->dev->mac : d->p.src_mac);
	sb(s, "     src_mac: %s ", m);
	pg_mac_fmt(m, d->p.dst_mac);
	sb(s, "dst_mac: %s\n", m);
	sb(s, "     udp_src_min: %d  udp_src_max: %d  udp_dst_min: %d  udp_dst_max: %d\n",
	   d->p.udp_src_min, d->p.udp_src_max, d->p.udp_dst_min, d->p.udp_dst_max);
	sb(s, "     src_mac_count: %d  dst_mac_count: %d\n", (int)d->p.src_mac_count,
	   (int)d->p.dst_mac_count);
	if (d->p.nr_labels) {
		sb(s, "     mpls: ");
		for (unsigned int i = 0; i < d->p.nr_labels; i++)
			sb(s, "%08x%s", d->p.labels[i], i == d->p.nr_labels - 1 ? "\n" : ", ");
	}
	if (d->p.vlan_id != USKB_PKTGEN_NO_VLAN)
		sb(s, "     vlan_id: %u  vlan_p: %u  vlan_cfi: %u\n", d->p.vlan_id, d->p.vlan_p,
		   d->p.vlan_cfi);
	if (d->p.svlan_id != USKB_PKTGEN_NO_VLAN) /* "vlan_p" (sic), as the kernel prints it */
		sb(s, "     svlan_id: %u  vlan_p: %u  vlan_cfi: %u\n", d->p.svlan_id, d->p.svlan_p,
		   d->p.svlan_cfi);
	if (d->p.tos)
		sb(s, "     tos: 0x%02x\n", d->p.tos);
	if (d->p.traffic_class)
		sb(s, "     traffic_class: 0x%02x\n", d->p.traffic_class);
	if (d->p.burst > 1)
		sb(s, "     burst: %u\n", d->p.burst);
	if (d->p.node >= 0)
		sb(s, "     node: %d\n", d->p.node);
	if (d->p.xmit_mode == M_NETIF_RECEIVE)
		sb(s, "     xmit_mode: netif_receive\n");
	else if (d->p.xmit_mode == M_QUEUE_XMIT)
		sb(s, "     xmit_mode: xmit_queue\n");
	sb(s, "     Flags: ");
	for (int i = 0; i < NR_PKT_FLAGS; i++) {
		if ((1u << i) == F_FLOW_SEQ && !d->p.cflows)
			continue;
		if (d->p.flags & (1u << i))
			sb(s, "%s  ", __uskb_pg_flag_names[i]);
		else if ((1u << i) == F_FLOW_SEQ)
			sb(s, "FLOW_RND  ");
	}
	sb(s, "\n");
	sb(s, "Current:\n     pkts-sofar: %" PRIu64 "  errors: %" PRIu64 "\n",
	   uskb_count_read(&d->sofar) + __uskb_pg_live_unaccounted(d), uskb_count_read(&d->errors));
	if (d->p.n_imix) {
		sb(s, "     imix_size_counts: ");
		for (unsigned int i = 0; i < d->p.n_imix; i++)
			sb(s, "%" PRIu64 ",%" PRIu64 " ", d->p.imix[i].size, d->p.imix[i].count_so_far);
		sb(s, "\n");
	}
	sb(s, "     started: %" PRIu64 "us  stopped: %" PRIu64 "us idle: %" PRIu64 "us\n",
	   atomic_load(&d->started_at) / 1000, stopped / 1000, uskb_count_read(&d->idle_acc) / 1000);
	sb(s, "     seq_num: %d  cur_dst_mac_offset: %d  cur_src_mac_offset: %d\n", (int)d->seq_num,
	   (int)d->p.cur_dst_mac_offset, (int)d->p.cur_src_mac_offset);
	if (d->p.flags & F_IPV6)
		sb(s, "     cur_saddr: %s  cur_daddr: %s\n", pg_ip6_fmt(a, &d->p.cur_in6_saddr),
		   pg_ip6_fmt(b, &d->p.cur_in6_daddr));
	else
		sb(s, "     cur_saddr: %s  cur_daddr: %s\n", pg_ip4_fmt(a, d->p.cur_saddr),
		   pg_ip4_fmt(b, d->p.cur_daddr));
	sb(s, "     cur_udp_dst: %d  cur_udp_src: %d\n", d->p.cur_udp_dst, d->p.cur_udp_src);
	sb(s, "     cur_queue_map: %u\n", d->cur_queue_map);
	sb(s, "     flows: %u\n", d->nflows);
	if (d->result[0])
		sb(s, "Result: %s\n", d->result);
	else
		sb(s, "Result: Idle\n");
	return (int)s->n;
}

int __uskb_pg_show_pgctrl(char *buf, size_t len)
{
	struct sbuf s = { buf, len, 0 };

	sb(&s, "%s", PG_VERSION);
	return (int)s.n;
}

/* pktgen_thread_show() */
int __uskb_pg_show_thread(const struct pg_thread *t, char *buf, size_t len)
{
	struct sbuf s = { buf, len, 0 };
	const struct pg_dev *d;

	sb(&s, "Running: ");
	for (d = t->devs; d; d = d->next)
		if (atomic_load(&d->running))
			sb(&s, "%s ", d->odevname);
	sb(&s, "\nStopped: ");
	for (d = t->devs; d; d = d->next)
		if (!atomic_load(&d->running))
			sb(&s, "%s ", d->odevname);
	sb(&s, "\nResult: %s\n", t->result[0] ? t->result : "NA");
	return (int)s.n;
}

static void compute_rates(const struct pg_dev *d, uint64_t elapsed, uint64_t sofar, uint64_t *pps,
			  uint64_t *bps)
{
	if (!elapsed)
		elapsed = 1;
	*pps = (uint64_t)((unsigned __int128)sofar * 1000000000u / elapsed);
	if (d->p.n_imix) {
		unsigned __int128 bytes = 0;

		for (unsigned int i = 0; i < d->p.n_imix; i++)
			bytes += (unsigned __int128)d->p.imix[i].size * d->p.imix[i].count_so_far;
		*bps = (uint64_t)(bytes * 8 * 1000000000u / elapsed);
	} else {
		*bps = *pps * 8 * d->p.cur_pkt_size;
	}
}

/* show_results() */
void __uskb_pg_show_results(struct pg_dev *d, uint64_t elapsed, uint64_t idle, uint64_t sofar,
			    int nr_frags)
{
	uint64_t pps, bps;
	int n;

	compute_rates(d, elapsed, sofar, &pps, &bps);
	n = snprintf(d->result, RESULT_SZ, "OK: %" PRIu64 "(c%" PRIu64 "+d%" PRIu64 ") usec, %" PRIu64
		     " (%ubyte,%dfrags)\n",
		     elapsed / 1000, (elapsed - (idle > elapsed ? elapsed : idle)) / 1000, idle / 1000,
		     sofar, d->p.cur_pkt_size, nr_frags);
	snprintf(d->result + n, RESULT_SZ - (size_t)n,
		 "  %" PRIu64 "pps %" PRIu64 "Mb/sec (%" PRIu64 "bps) errors: %" PRIu64, pps,
		 bps / 1000000, bps, uskb_count_read(&d->errors));
}
