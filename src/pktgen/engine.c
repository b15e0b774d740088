/* SPDX-License-Identifier: MIT */
/*
 * uskb-pktgen engine: the kernel pktgen's files (pgctrl, kpktgend_N, one per
 * device), its command language and replies, its per-device state and the
 * transmit loop, with the kernel 6.1 behaviour the golden captures show.
 * Differences are listed in docs/pktgen.md.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pg.h"

/* ---- random ---- */

static uint32_t prandom(struct pg_dev *d)
{
	/* xorshift64* */
	uint64_t x = d->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	d->rng = x;
	return (uint32_t)((x * 0x2545F4914F6CDD1Dull) >> 32);
}

static bool zero_mac(const uint8_t *m)
{
	return !(m[0] | m[1] | m[2] | m[3] | m[4] | m[5]);
}

/* pktgen_clear_counters() */
static void clear_counters(struct pg_dev *d)
{
	d->seq_num = 1;
	d->idle_acc = 0;
	d->sofar = 0;
	d->tx_bytes = 0;
	d->errors = 0;
}

static int dev_write(struct pg_dev *d, const char *cmd)
{
	int err = __uskb_pg_parse(&d->p, cmd, d->result, sizeof(d->result));

	if (err == PG_CLEAR_COUNTERS) {
		clear_counters(d);
		err = 0;
	}
	return err;
}

/* ---- the device file (pktgen_if_show) ---- */

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

static void dev_show(struct pg_dev *d, struct sbuf *s)
{
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
	pg_mac_fmt(m, zero_mac(d->p.src_mac) ? d->nd->dev->mac : d->p.src_mac);
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
	sb(s, "Current:\n     pkts-sofar: %" PRIu64 "  errors: %" PRIu64 "\n", uskb_count_read(&d->sofar),
	   uskb_count_read(&d->errors));
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
}

/* ---- building packets: mod_cur_headers + fill_packet ---- */

static bool ip4_special(uint32_t a /* host order */)
{
	return (a >> 24) == 127 || (a >> 28) == 0xe || a == 0xffffffffu || (a >> 24) == 0;
}

static void bump_mac(uint8_t *hh, const uint8_t *base, uint32_t mc)
{
	/* add mc to the low four bytes of the address, carrying upward */
	uint32_t tmp = base[5] + (mc & 0xff);

	hh[5] = (uint8_t)tmp;
	tmp = base[4] + ((mc >> 8) & 0xff) + (tmp >> 8);
	hh[4] = (uint8_t)tmp;
	tmp = base[3] + ((mc >> 16) & 0xff) + (tmp >> 8);
	hh[3] = (uint8_t)tmp;
	tmp = base[2] + ((mc >> 24) & 0xff) + (tmp >> 8);
	hh[2] = (uint8_t)tmp;
	tmp = base[1] + (tmp >> 8);
	hh[1] = (uint8_t)tmp;
}

/* src/dst_mac_count: the next (or a random) address of the range into @hh */
static void mac_step(struct pg_dev *d, uint32_t count, uint32_t *offset, uint32_t rnd_flag,
		     uint8_t *hh, const uint8_t *base)
{
	uint32_t mc;

	if (count <= 1)
		return;
	if (d->p.flags & rnd_flag) {
		mc = prandom(d) % count;
	} else {
		mc = (*offset)++;
		if (*offset >= count)
			*offset = 0;
	}
	bump_mac(hh, base, mc);
}

/* udp_src/dst ranges: max exclusive, sequential or random */
static void port_step(struct pg_dev *d, uint16_t min, uint16_t max, uint16_t *cur, uint32_t rnd_flag)
{
	if (min >= max)
		return;
	if (d->p.flags & rnd_flag)
		*cur = (uint16_t)(prandom(d) % (unsigned int)(max - min) + min);
	else if (++*cur >= max)
		*cur = min;
}

static unsigned int f_pick(struct pg_dev *d)
{
	unsigned int flow = d->curfl;

	if (d->p.flags & F_FLOW_SEQ) {
		if (d->flows[flow].count >= d->p.lflow) {
			d->flows[flow].count = 0;
			d->flows[flow].init = false;
			d->curfl++;
			if (d->curfl >= d->p.cflows)
				d->curfl = 0;
		}
	} else {
		flow = prandom(d) % d->p.cflows;
		d->curfl = flow;
		if (d->flows[flow].count > d->p.lflow) {
			d->flows[flow].count = 0;
			d->flows[flow].init = false;
		}
	}
	return d->curfl;
}

static void mod_cur_headers(struct pg_dev *d)
{
	unsigned int flow = 0;
	uint32_t imn, imx;

	if (d->p.cflows)
		flow = f_pick(d);
	mac_step(d, d->p.src_mac_count, &d->p.cur_src_mac_offset, F_MACSRC_RND, d->hh + 6, d->p.src_mac);
	mac_step(d, d->p.dst_mac_count, &d->p.cur_dst_mac_offset, F_MACDST_RND, d->hh, d->p.dst_mac);
	if (d->p.flags & F_MPLS_RND)
		for (unsigned int i = 0; i < d->p.nr_labels; i++)
			if (d->p.labels[i] & 0x100)
				d->p.labels[i] = 0x100 | (prandom(d) & 0x000fffff);
	if ((d->p.flags & F_VID_RND) && d->p.vlan_id != USKB_PKTGEN_NO_VLAN)
		d->p.vlan_id = prandom(d) & 4095;
	if ((d->p.flags & F_SVID_RND) && d->p.svlan_id != USKB_PKTGEN_NO_VLAN)
		d->p.svlan_id = prandom(d) & 4095;
	port_step(d, d->p.udp_src_min, d->p.udp_src_max, &d->p.cur_udp_src, F_UDPSRC_RND);
	port_step(d, d->p.udp_dst_min, d->p.udp_dst_max, &d->p.cur_udp_dst, F_UDPDST_RND);
	if (!(d->p.flags & F_IPV6)) {
		imn = ntohl(d->p.src_min.addr);
		imx = ntohl(d->p.src_max.addr);
		if (imn < imx) {
			uint32_t t;

			if (d->p.flags & F_IPSRC_RND) {
				t = prandom(d) % (imx - imn) + imn;
			} else {
				t = ntohl(d->p.cur_saddr) + 1;
				if (t > imx || t < imn)
					t = imn;
			}
			d->p.cur_saddr = htonl(t);
		}
		if (d->p.cflows && d->flows[flow].init) {
			d->p.cur_daddr = d->flows[flow].cur_daddr;
		} else {
			imn = ntohl(d->p.dst_min.addr);
			imx = ntohl(d->p.dst_max.addr);
			if (imn < imx) {
				uint32_t t;

				if (d->p.flags & F_IPDST_RND) {
					int tries = 0;

					do
						t = prandom(d) % (imx - imn) + imn;
					while (ip4_special(t) && ++tries < 1000);
				} else {
					t = ntohl(d->p.cur_daddr) + 1;
					if (t > imx || t < imn)
						t = imn;
				}
				d->p.cur_daddr = htonl(t);
			}
			if (d->p.cflows) {
				d->flows[flow].init = true;
				d->flows[flow].cur_daddr = d->p.cur_daddr;
				d->nflows++;
			}
		}
	} else if (!IN6_IS_ADDR_UNSPECIFIED(&d->p.min_in6_daddr)) {
		/* only random IPv6 destinations, as the kernel: (rand | min) & max */
		for (int i = 0; i < 4; i++) {
			uint32_t r = prandom(d), mn, mx;

			memcpy(&mn, d->p.min_in6_daddr.s6_addr + 4 * i, 4);
			memcpy(&mx, d->p.max_in6_daddr.s6_addr + 4 * i, 4);
			r = (r | mn) & mx;
			memcpy(d->p.cur_in6_daddr.s6_addr + 4 * i, &r, 4);
		}
	}
	if (d->p.min_pkt_size < d->p.max_pkt_size) {
		unsigned int t;

		if (d->p.flags & F_TXSIZE_RND) {
			t = prandom(d) % (d->p.max_pkt_size - d->p.min_pkt_size) + d->p.min_pkt_size;
		} else {
			t = d->p.cur_pkt_size + 1;
			if (t > d->p.max_pkt_size)
				t = d->p.min_pkt_size;
		}
		d->p.cur_pkt_size = t;
	}
	if (d->p.n_imix) {
		d->cur_imix = d->p.imix_dist[prandom(d) % IMIX_PRECISION];
		d->p.cur_pkt_size = (unsigned int)d->p.imix[d->cur_imix].size;
	}
	/* set_cur_queue_map() */
	if (d->p.flags & F_QUEUE_MAP_CPU) {
		d->cur_queue_map = (unsigned int)d->t->cpu;
	} else if (d->p.queue_map_min <= d->p.queue_map_max) {
		unsigned int t;

		if (d->p.flags & F_QUEUE_MAP_RND) {
			t = prandom(d) % (d->p.queue_map_max - d->p.queue_map_min + 1) + d->p.queue_map_min;
		} else {
			t = d->cur_queue_map + 1;
			if (t > d->p.queue_map_max)
				t = d->p.queue_map_min;
		}
		d->cur_queue_map = t;
	}
	d->cur_queue_map %= d->nd->dev->nqueues;
	d->flows[flow].count++;
}

static struct uskb *fill_packet(struct pg_dev *d)
{
	struct uskb_pktgen_pkt *p = &d->pkt;
	struct uskb *skb;

	mod_cur_headers(d);
	p->pkt_size = d->p.cur_pkt_size;
	p->nfrags = d->p.nfrags;
	p->ipv6 = d->p.flags & F_IPV6;
	p->udpcsum = d->p.flags & F_UDPCSUM;
	memcpy(p->dst_mac, d->hh, 6);
	memcpy(p->src_mac, d->hh + 6, 6);
	p->saddr = d->p.cur_saddr;
	p->daddr = d->p.cur_daddr;
	memcpy(p->saddr6, &d->p.cur_in6_saddr, 16);
	memcpy(p->daddr6, &d->p.cur_in6_daddr, 16);
	p->udp_src = d->p.cur_udp_src;
	p->udp_dst = d->p.cur_udp_dst;
	p->tos = p->ipv6 ? d->p.traffic_class : d->p.tos;
	memcpy(p->labels, d->p.labels, sizeof(p->labels));
	p->nr_labels = (int)d->p.nr_labels;
	p->vlan_id = d->p.vlan_id;
	p->vlan_p = d->p.vlan_p;
	p->vlan_cfi = d->p.vlan_cfi;
	p->svlan_id = d->p.svlan_id;
	p->svlan_p = d->p.svlan_p;
	p->svlan_cfi = d->p.svlan_cfi;
	p->ip_id = d->ip_id;
	p->seq_num = d->seq_num;
	if (d->p.flags & F_NO_TIMESTAMP) {
		p->tv_sec = p->tv_usec = 0;
	} else {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		p->tv_sec = (uint32_t)ts.tv_sec;
		p->tv_usec = (uint32_t)(ts.tv_nsec / 1000);
	}
	skb = uskb_pktgen_build(p, d->nd->dev, d->zero);
	if (!skb) {
		pthread_mutex_lock(&d->t->pg->lock);
		snprintf(d->result, RESULT_SZ, "No memory");
		pthread_mutex_unlock(&d->t->pg->lock);
		return NULL;
	}
	if (!p->ipv6)
		d->ip_id++;
	skb->queue_mapping = (uint16_t)d->cur_queue_map;
	skb->priority = d->p.skb_priority;
	return skb;
}

/* ---- running ---- */

static void setup_inject(struct pg_dev *d)
{
	unsigned int ntxq = d->nd->dev->nqueues;

	if (ntxq <= d->p.queue_map_min)
		d->p.queue_map_min = (ntxq ? ntxq : 1) - 1;
	if (d->p.queue_map_max >= ntxq)
		d->p.queue_map_max = (ntxq ? ntxq : 1) - 1;
	memcpy(d->hh + 6, zero_mac(d->p.src_mac) ? d->nd->dev->mac : d->p.src_mac, 6);
	memcpy(d->hh, d->p.dst_mac, 6);
	if (d->p.flags & F_IPV6) {
		if (d->p.min_pkt_size == 0)
			d->p.min_pkt_size = 14 + 40 + 8 + 16;
	} else {
		if (d->p.min_pkt_size == 0)
			d->p.min_pkt_size = 14 + 20 + 8 + 16;
		/* no address on our devices: an unset source stays 0.0.0.0 */
		d->p.src_min.addr = d->p.src_min.str[0] ? d->p.src_min.addr : 0;
		d->p.src_max.addr = d->p.src_min.str[0] ? d->p.src_max.addr : 0;
	}
	d->p.cur_pkt_size = d->p.min_pkt_size;
	if (d->p.min_pkt_size > d->p.max_pkt_size)
		d->p.max_pkt_size = d->p.min_pkt_size;
	d->p.cur_dst_mac_offset = d->p.cur_src_mac_offset = 0;
	d->p.cur_saddr = d->p.src_min.addr;
	d->p.cur_daddr = d->p.dst_min.addr;
	d->p.cur_udp_dst = d->p.udp_dst_min;
	d->p.cur_udp_src = d->p.udp_src_min;
	d->nflows = 0;
}

/* Set a device up for a run; a failure is its result, and it does not run. */
static void dev_start(struct pg_dev *d)
{
	uint64_t t;

	setup_inject(d);
	d->sent_queue = -1;
	free(d->flows);
	d->flows = calloc(d->p.cflows ? d->p.cflows : 1, sizeof(*d->flows));
	if (!d->flows) {
		snprintf(d->result, RESULT_SZ, "Error starting");
		return;
	}
	d->curfl = 0;
	for (unsigned int i = 0; i < d->p.n_imix; i++)
		d->p.imix[i].count_so_far = 0;
	clear_counters(d);
	if (d->skb) {
		uskb_free(d->skb);
		d->skb = NULL;
	}
	d->last_nfrags = -1;
	d->zero = d->p.node >= 0 && (d->p.flags & F_NODE) ? uskb_zero_page_node(d->p.node) : uskb_zero_page();
	t = uskb_mono_ns();
	atomic_store(&d->started_at, t);
	d->next_tx = t;
	snprintf(d->result, RESULT_SZ, "Starting");
	atomic_store(&d->running, true);
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

static int locks_init(struct pg_netdev *nd)
{
	nd->txlock = calloc(nd->dev->nqueues, sizeof(*nd->txlock));
	if (!nd->txlock)
		return -ENOMEM;
	for (unsigned int q = 0; q < nd->dev->nqueues; q++)
		pthread_mutex_init(&nd->txlock[q], NULL);
	return 0;
}

static void locks_free(struct pg_netdev *nd)
{
	for (unsigned int q = 0; nd->txlock && q < nd->dev->nqueues; q++)
		pthread_mutex_destroy(&nd->txlock[q]);
	free(nd->txlock);
}

/*
 * HARD_TX_LOCK: a lock per queue, and only a device shared by several
 * names needs it (threads on different queues do not wait for each other).
 */
static void tx_lock(struct pg_netdev *nd, unsigned int queue)
{
	if (nd->users > 1)
		pthread_mutex_lock(&nd->txlock[queue]);
}

static void tx_unlock(struct pg_netdev *nd, unsigned int queue)
{
	if (nd->users > 1)
		pthread_mutex_unlock(&nd->txlock[queue]);
}

static void dev_flush(struct pg_dev *d)
{
	unsigned int q = (unsigned int)d->sent_queue;

	if (!d->nd->dev->ops->flush || d->sent_queue < 0)
		return;
	tx_lock(d->nd, q);
	uskb_dev_flush(d->nd->dev, q);
	tx_unlock(d->nd, q);
}

/* pktgen_stop_device() + show_results() */
static void dev_stop(struct pg_dev *d)
{
	uint64_t stopped = uskb_mono_ns(), started = atomic_load(&d->started_at);
	uint64_t elapsed = stopped - started, idle = uskb_count_read(&d->idle_acc), pps, bps;
	uint64_t sofar = uskb_count_read(&d->sofar);
	int nr_frags = d->skb ? uskb_shinfo(d->skb)->nr_frags : -1;
	int n;

	if (!atomic_load(&d->running))
		return;
	dev_flush(d);
	if (d->skb) {
		uskb_free(d->skb);
		d->skb = NULL;
	}
	d->last_nfrags = nr_frags;
	atomic_store(&d->stopped_at, stopped);
	compute_rates(d, elapsed, sofar, &pps, &bps);
	pthread_mutex_lock(&d->t->pg->lock);
	n = snprintf(d->result, RESULT_SZ, "OK: %" PRIu64 "(c%" PRIu64 "+d%" PRIu64 ") usec, %" PRIu64
		     " (%ubyte,%dfrags)\n",
		     elapsed / 1000, (elapsed - (idle > elapsed ? elapsed : idle)) / 1000, idle / 1000,
		     sofar, d->p.cur_pkt_size, nr_frags);
	snprintf(d->result + n, RESULT_SZ - (size_t)n,
		 "  %" PRIu64 "pps %" PRIu64 "Mb/sec (%" PRIu64 "bps) errors: %" PRIu64, pps,
		 bps / 1000000, bps, uskb_count_read(&d->errors));
	atomic_store(&d->running, false);
	pthread_mutex_unlock(&d->t->pg->lock);
}

static bool stopping(const struct pg_dev *d)
{
	return atomic_load_explicit(&d->t->pg->stop, memory_order_relaxed);
}

/*
 * spin(): wait for @until, sleeping (in slices of at most 10 ms, so that a
 * stop is seen) while more than 100 us remain, then spinning.
 */
static void spin(struct pg_dev *d, uint64_t until)
{
	uint64_t start = uskb_mono_ns(), t = start;

	if (until > start) {
		while (until - t >= 100000 && !stopping(d)) {
			uint64_t wake = until - 50000; /* sleep most of it, spin the last 50 us */
			struct timespec ts;

			if (wake - t > 10000000)
				wake = t + 10000000;
			ts.tv_sec = (time_t)(wake / 1000000000u);
			ts.tv_nsec = (long)(wake % 1000000000u);
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
			t = uskb_mono_ns();
		}
		while ((t = uskb_mono_ns()) < until && !stopping(d))
			;
		uskb_count_add(&d->idle_acc, t - start);
	}
	d->next_tx = uskb_add_sat(until, d->p.delay);
}

static struct pg_dev *next_to_run(struct pg_thread *t);

static void pg_xmit(struct pg_thread *t, struct pg_dev *d)
{
	struct pg_netdev *nd = d->nd;
	unsigned int burst = d->p.burst, ok = 0, errs = 0, busy = 0;
	uint64_t sofar = uskb_count_read(&d->sofar);
	int n;

	if (d->p.delay == UINT64_MAX) {
		/* "never transmit": out of next_to_run's way, as the kernel's now + ULONG_MAX */
		struct timespec ts = { 0, 10000000 };

		d->next_tx = UINT64_MAX;
		if (next_to_run(t) == d) /* nothing else to do on this thread */
			nanosleep(&ts, NULL);
		return;
	}
	if (!d->skb || (d->p.last_ok && ++d->clone_count >= d->p.clone_skb)) {
		if (d->skb)
			uskb_free(d->skb);
		d->skb = fill_packet(d);
		if (!d->skb) {
			d->clone_count--;
			sched_yield();
			return;
		}
		d->last_pkt_size = d->skb->len;
		d->clone_count = 0;
	}
	if (d->p.delay && d->p.last_ok) {
		if (d->next_tx > uskb_mono_ns())
			dev_flush(d); /* nothing may wait in the device while we do */
		spin(d, d->next_tx);
		if (stopping(d))
			return;
	}
	/* no overshoot: a burst never sends past count (the kernel's may) */
	if (d->p.count && burst > d->p.count - sofar)
		burst = (unsigned int)(d->p.count - sofar);
	if (burst > MAX_BURST)
		burst = MAX_BURST;
	n = (int)burst;
	atomic_fetch_add_explicit(&d->skb->users, n, memory_order_relaxed);
	for (int i = 0; i < n; i++)
		t->vec[i] = d->skb;
	/* moving to another queue: what waits in the last one goes first */
	if (d->sent_queue != (int)d->cur_queue_map)
		dev_flush(d);
	d->sent_queue = (int)d->cur_queue_map;
	tx_lock(nd, d->cur_queue_map);
	uskb_dev_xmit(nd->dev, d->cur_queue_map, t->vec, n, t->res);
	tx_unlock(nd, d->cur_queue_map);
	for (int i = 0; i < n; i++) {
		switch (t->res[i]) {
		case USKB_XMIT_OK:
			ok++;
			break;
		case USKB_XMIT_DROP:
			errs++;
			break;
		default: /* busy: the reference is still ours; retry later */
			uskb_free(d->skb);
			busy++;
			break;
		}
	}
	/* as the kernel: a busy device gets the same skb again, without delay */
	if (busy) {
		d->p.last_ok = false;
		dev_flush(d);
	}
	else if (ok)
		d->p.last_ok = true;
	if (ok) {
		d->seq_num += ok;
		if (d->p.n_imix)
			d->p.imix[d->cur_imix].count_so_far += ok;
		__atomic_store_n(&d->sofar, sofar + ok, __ATOMIC_RELAXED);
		uskb_count_add(&d->tx_bytes, (uint64_t)ok * d->last_pkt_size);
	}
	if (errs)
		uskb_count_add(&d->errors, errs);
	if (d->p.count && sofar + ok >= d->p.count) {
		/* pktgen_wait_for_skb(): until the device let go of every copy (idle time) */
		uint64_t w = uskb_mono_ns();

		while (atomic_load_explicit(&d->skb->users, memory_order_acquire) != 1 && !stopping(d))
			sched_yield();
		uskb_count_add(&d->idle_acc, uskb_mono_ns() - w);
		dev_stop(d);
	}
}

static struct pg_dev *next_to_run(struct pg_thread *t)
{
	struct pg_dev *best = NULL;

	for (struct pg_dev *d = t->devs; d; d = d->next)
		if (atomic_load_explicit(&d->running, memory_order_relaxed) &&
		    (!best || d->next_tx < best->next_tx))
			best = d;
	return best;
}

static void *thread_worker(void *arg)
{
	struct pg_thread *t = arg;
	struct uskb_pktgen *pg = t->pg;

	if (pg->pin) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(t->cpu, &set);
		pthread_setaffinity_np(pthread_self(), sizeof(set), &set); /* best effort */
	}
	for (;;) {
		struct pg_dev *d;

		if (atomic_load_explicit(&pg->stop, memory_order_relaxed)) {
			for (d = t->devs; d; d = d->next)
				dev_stop(d);
			break;
		}
		d = next_to_run(t);
		if (!d)
			break;
		pg_xmit(t, d);
	}
	uskb_thread_flush(); /* hand this thread's cached skbs and pages back */
	return NULL;
}

/* Called with pg->lock held; drops it while the threads run. */
static int run_all(struct uskb_pktgen *pg)
{
	bool started[pg->nthreads];
	int i;

	atomic_store(&pg->running, true);
	for (i = 0; i < pg->nthreads; i++) {
		struct pg_thread *t = &pg->threads[i];

		started[i] = false;
		for (struct pg_dev *d = t->devs; d; d = d->next)
			dev_start(d);
		if (t->devs && pthread_create(&t->th, NULL, thread_worker, t) == 0)
			started[i] = true;
		else
			for (struct pg_dev *d = t->devs; d; d = d->next)
				if (atomic_load(&d->running)) {
					atomic_store(&d->running, false);
					snprintf(d->result, RESULT_SZ, "Error starting");
				}
	}
	/* writes meanwhile see running and answer EBUSY; stop needs no lock */
	pthread_mutex_unlock(&pg->lock);
	for (i = 0; i < pg->nthreads; i++)
		if (started[i])
			pthread_join(pg->threads[i].th, NULL);
	pthread_mutex_lock(&pg->lock);
	atomic_store(&pg->running, false);
	atomic_store(&pg->stop, false); /* a stop asked before start ended this run */
	return 0;
}

/* ---- devices on threads ---- */

static struct pg_dev *find_dev(struct uskb_pktgen *pg, const char *name)
{
	for (int i = 0; i < pg->nthreads; i++)
		for (struct pg_dev *d = pg->threads[i].devs; d; d = d->next)
			if (!strcmp(d->odevname, name))
				return d;
	return NULL;
}

static void netdev_put(struct uskb_pktgen *pg, struct pg_netdev *nd)
{
	if (--nd->users > 0 || !nd->owned)
		return;
	for (struct pg_netdev **pp = &pg->netdevs; *pp; pp = &(*pp)->next)
		if (*pp == nd) {
			*pp = nd->next;
			break;
		}
	locks_free(nd);
	uskb_dev_close(nd->dev);
	free(nd);
}

static struct pg_netdev *netdev_get(struct uskb_pktgen *pg, const char *base)
{
	struct pg_netdev *nd;

	for (nd = pg->netdevs; nd; nd = nd->next)
		if (!strcmp(nd->name, base)) {
			nd->users++;
			return nd;
		}
	nd = calloc(1, sizeof(*nd));
	if (!nd)
		return NULL;
	nd->dev = uskb_dev_open(base);
	if (!nd->dev || locks_init(nd)) {
		uskb_dev_close(nd->dev);
		free(nd);
		return NULL;
	}
	snprintf(nd->name, sizeof(nd->name), "%s", base);
	nd->owned = true;
	nd->users = 1;
	nd->next = pg->netdevs;
	pg->netdevs = nd;
	return nd;
}

static void dev_remove(struct uskb_pktgen *pg, struct pg_dev *d)
{
	if (d->skb)
		uskb_free(d->skb);
	free(d->flows);
	netdev_put(pg, d->nd);
	free(d);
}

static void rem_all(struct uskb_pktgen *pg, struct pg_thread *t)
{
	while (t->devs) {
		struct pg_dev *d = t->devs;

		t->devs = d->next;
		dev_remove(pg, d);
	}
}

static int add_device(struct uskb_pktgen *pg, struct pg_thread *t, const char *ifname)
{
	char base[NAME_SZ];
	struct pg_dev *d;
	size_t n;

	if (find_dev(pg, ifname))
		return -EBUSY;
	n = strcspn(ifname, "@");
	if (!n || n >= sizeof(base))
		return -EINVAL;
	memcpy(base, ifname, n);
	base[n] = 0;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->nd = netdev_get(pg, base);
	if (!d->nd) {
		int err = errno ? -errno : -ENODEV;

		free(d);
		return err;
	}
	snprintf(d->odevname, sizeof(d->odevname), "%s", ifname);
	d->t = t;
	__uskb_pg_defaults(&d->p);
	d->p.shared_skbs = d->nd->dev->features & USKB_DEV_F_TX_SKB_SHARING;
	d->rng = (pg->seeded ? pg->seed : uskb_mono_ns()) + 0x9E3779B97F4A7C15ull * ++pg->ndevs_made;
	if (!d->rng)
		d->rng = 1;
	d->next = t->devs;
	t->devs = d;
	return 0;
}

static int thread_write(struct uskb_pktgen *pg, struct pg_thread *t, const char *buf)
{
	char name[40];
	const char *v = __uskb_pg_split(buf, name, sizeof(name));
	int err;

	if (!strcmp(name, "add_device")) {
		char f[NAME_SZ];

		__uskb_pg_word(f, sizeof(f), v);
		err = add_device(pg, t, f);
		if (!err)
			snprintf(t->result, RESULT_SZ, "OK: add_device=%s", f);
		else
			snprintf(t->result, RESULT_SZ, "ERROR: can not add device %s", f);
		return err;
	}
	if (!strcmp(name, "rem_device_all")) {
		rem_all(pg, t);
		snprintf(t->result, RESULT_SZ, "OK: rem_device_all");
		return 0;
	}
	if (!strcmp(name, "max_before_softirq")) {
		snprintf(t->result, RESULT_SZ, "OK: Note! max_before_softirq is obsoleted -- Do not use");
		return 0;
	}
	return -EINVAL;
}

/* ---- the public side ---- */

struct uskb_pktgen *uskb_pktgen_new(const struct uskb_pktgen_opts *opts)
{
	struct uskb_pktgen_opts o = opts ? *opts : (struct uskb_pktgen_opts){ 0 };
	long ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct uskb_pktgen *pg;
	int n;

	if (ncpus < 1)
		ncpus = 1;
	n = o.nthreads > 0 ? o.nthreads : (int)ncpus;
	if (o.nthreads < 0 || n > 4096) {
		errno = EINVAL;
		return NULL;
	}
	pg = calloc(1, sizeof(*pg) + (size_t)n * sizeof(pg->threads[0]));
	if (!pg)
		return NULL;
	pg->nthreads = n;
	pg->ncpus = (int)ncpus;
	pg->pin = !o.no_pin;
	pg->seeded = o.seeded;
	pg->seed = o.seed;
	pthread_mutex_init(&pg->lock, NULL);
	for (int i = 0; i < n; i++) {
		pg->threads[i].pg = pg;
		pg->threads[i].id = i;
		pg->threads[i].cpu = i % (int)ncpus;
	}
	return pg;
}

void uskb_pktgen_free(struct uskb_pktgen *pg)
{
	if (!pg)
		return;
	for (int i = 0; i < pg->nthreads; i++)
		rem_all(pg, &pg->threads[i]);
	while (pg->netdevs) { /* registered devices stay the caller's */
		struct pg_netdev *nd = pg->netdevs;

		pg->netdevs = nd->next;
		locks_free(nd);
		if (nd->owned)
			uskb_dev_close(nd->dev);
		free(nd);
	}
	pthread_mutex_destroy(&pg->lock);
	free(pg);
}

int uskb_pktgen_nthreads(const struct uskb_pktgen *pg)
{
	return pg->nthreads;
}

int uskb_pktgen_register_dev(struct uskb_pktgen *pg, const char *name, struct uskb_dev *dev)
{
	struct pg_netdev *nd;

	if (!name || !*name || strlen(name) >= NAME_SZ || strchr(name, '@') || !dev || !dev->ops ||
	    !dev->ops->xmit || !dev->nqueues)
		return -EINVAL;
	for (nd = pg->netdevs; nd; nd = nd->next)
		if (!strcmp(nd->name, name))
			return -EEXIST;
	nd = calloc(1, sizeof(*nd));
	if (!nd)
		return -ENOMEM;
	snprintf(nd->name, sizeof(nd->name), "%s", name);
	nd->dev = dev;
	if (locks_init(nd)) {
		free(nd);
		return -ENOMEM;
	}
	nd->next = pg->netdevs;
	pg->netdevs = nd;
	return 0;
}

static struct pg_thread *thread_by_name(struct uskb_pktgen *pg, const char *file)
{
	char *end;
	long id;

	if (strncmp(file, "kpktgend_", 9) || !isdigit((unsigned char)file[9]))
		return NULL;
	id = strtol(file + 9, &end, 10);
	if (*end || id < 0 || id >= pg->nthreads)
		return NULL;
	return &pg->threads[id];
}

int uskb_pktgen_write(struct uskb_pktgen *pg, const char *file, const char *cmd)
{
	struct pg_thread *t;
	struct pg_dev *d;
	int err = -ENOENT;

	if (!file || !cmd)
		return -EINVAL;
	if (!strcmp(file, "pgctrl")) {
		char w[16];

		__uskb_pg_split(cmd, w, sizeof(w));
		if (!strcmp(w, "stop")) {
			if (atomic_load(&pg->running))
				uskb_pktgen_stop(pg);
			return 0;
		}
		if (strcmp(w, "start") && strcmp(w, "reset"))
			return -EINVAL;
		pthread_mutex_lock(&pg->lock);
		if (atomic_load(&pg->running)) {
			err = -EBUSY;
		} else if (w[0] == 's') {
			err = run_all(pg);
		} else {
			for (int i = 0; i < pg->nthreads; i++)
				rem_all(pg, &pg->threads[i]);
			err = 0;
		}
		pthread_mutex_unlock(&pg->lock);
		return err;
	}
	if (!*cmd)
		return -EINVAL;
	pthread_mutex_lock(&pg->lock);
	if ((t = thread_by_name(pg, file)))
		err = atomic_load(&pg->running) ? -EBUSY : thread_write(pg, t, cmd);
	else if ((d = find_dev(pg, file)))
		err = atomic_load(&pg->running) ? -EBUSY : dev_write(d, cmd);
	pthread_mutex_unlock(&pg->lock);
	return err;
}

const char *uskb_pktgen_result(struct uskb_pktgen *pg, const char *file)
{
	struct pg_thread *t = thread_by_name(pg, file);
	const char *r = NULL;
	struct pg_dev *d;

	if (t)
		return t->result[0] ? t->result : "NA";
	pthread_mutex_lock(&pg->lock);
	d = find_dev(pg, file);
	if (d)
		r = d->result[0] ? d->result : "Idle";
	pthread_mutex_unlock(&pg->lock);
	return r;
}

static int show_file(struct uskb_pktgen *pg, const char *file, struct sbuf *s)
{
	struct pg_thread *t;
	struct pg_dev *d;

	if (!strcmp(file, "pgctrl")) {
		sb(s, "%s", PG_VERSION);
	} else if ((t = thread_by_name(pg, file))) {
		sb(s, "Running: ");
		for (d = t->devs; d; d = d->next)
			if (atomic_load(&d->running))
				sb(s, "%s ", d->odevname);
		sb(s, "\nStopped: ");
		for (d = t->devs; d; d = d->next)
			if (!atomic_load(&d->running))
				sb(s, "%s ", d->odevname);
		sb(s, "\nResult: %s\n", t->result[0] ? t->result : "NA");
	} else if ((d = find_dev(pg, file))) {
		dev_show(d, s);
	} else {
		return -ENOENT;
	}
	return (int)s->n;
}

int uskb_pktgen_read(struct uskb_pktgen *pg, const char *file, char *buf, size_t len)
{
	struct sbuf s = { buf, len, 0 };
	int ret;

	if (len)
		buf[0] = 0;
	pthread_mutex_lock(&pg->lock);
	ret = show_file(pg, file, &s);
	pthread_mutex_unlock(&pg->lock);
	return ret;
}

void uskb_pktgen_stop(struct uskb_pktgen *pg)
{
	atomic_store(&pg->stop, true);
}

static int dev_stats(struct uskb_pktgen *pg, int i, char *name, size_t namelen,
		     struct uskb_pktgen_stats *st)
{
	for (int k = 0; k < pg->nthreads; k++)
		for (struct pg_dev *d = pg->threads[k].devs; d; d = d->next) {
			uint64_t started, stop;

			if (i--)
				continue;
			if (name)
				snprintf(name, namelen, "%s", d->odevname);
			memset(st, 0, sizeof(*st));
			st->running = atomic_load(&d->running);
			started = atomic_load(&d->started_at);
			stop = st->running ? uskb_mono_ns() : atomic_load(&d->stopped_at);
			st->sofar = uskb_count_read(&d->sofar);
			st->errors = uskb_count_read(&d->errors);
			st->tx_bytes = uskb_count_read(&d->tx_bytes);
			st->idle_ns = uskb_count_read(&d->idle_acc);
			st->elapsed_ns = started && stop > started ? stop - started : 0;
			/* the worker owns these while it runs */
			st->pkt_size = st->running ? 0 : d->p.cur_pkt_size;
			st->nfrags = st->running ? -1 : d->last_nfrags;
			if (st->elapsed_ns) {
				st->pps = (uint64_t)((unsigned __int128)st->sofar * 1000000000u /
						     st->elapsed_ns);
				st->bps = (uint64_t)((unsigned __int128)st->tx_bytes * 8 * 1000000000u /
						     st->elapsed_ns);
			}
			return 0;
		}
	return -ENOENT;
}

int uskb_pktgen_dev_stats(struct uskb_pktgen *pg, int i, char *name, size_t namelen,
			  struct uskb_pktgen_stats *st)
{
	int ret;

	pthread_mutex_lock(&pg->lock);
	ret = dev_stats(pg, i, name, namelen, st);
	pthread_mutex_unlock(&pg->lock);
	return ret;
}
