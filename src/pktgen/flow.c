/* SPDX-License-Identifier: MIT */
/*
 * The header state of a device from packet to packet (mod_cur_headers):
 * flows, MAC, port, address and size ranges stepped in order or at random,
 * queue choice, and the packet built from them (fill_packet).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include "pg.h"
#include "../../bpf/pktgen_live.h" /* pgl_bump_mac, shared with the live program */

/*
 * The wall-clock time for a packet's pktgen header, to the microsecond (the
 * kernel takes ktime_get_real_ts64() per packet). clock_gettime() costs
 * ~20 ns through the vDSO here; the TSC ~10 (this VM's AMD EPYC). So the
 * time read last is reused until the TSC says a microsecond has passed
 * since: a timestamp is then at most 1 us behind, never ahead. The TSC's
 * rate is learnt from the clock's own readings (no start-up wait), again
 * every second; until it is known, and where there is no TSC, every packet
 * reads the clock. Per thread: no sharing. (In a batch, even the TSC is
 * read once per chunk: __uskb_pg_stamp_begin.)
 */
static __thread struct {
	struct timespec ts; /* the last reading */
	uint64_t tsc;	    /* the TSC just before it */
	uint64_t per_us;    /* TSC ticks per microsecond, rounded down; 0: not known */
	uint64_t cal_tsc, cal_ns; /* where the rate is measured from */
} rt;

static inline uint64_t tsc_now(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __rdtsc();
#else
	return 0;
#endif
}

/* the clock, read now (at TSC @t); the TSC's rate learnt from it */
static void clock_read(uint64_t t)
{
	uint64_t ns;

	clock_gettime(CLOCK_REALTIME, &rt.ts);
	rt.tsc = t;
	ns = (uint64_t)rt.ts.tv_sec * 1000000000ull + (uint64_t)rt.ts.tv_nsec;
	if (!t)
		return; /* no TSC */
	if (!rt.cal_ns || ns < rt.cal_ns || t < rt.cal_tsc) {
		rt.cal_ns = ns, rt.cal_tsc = t; /* the start, or the clock was set back */
	} else if (ns - rt.cal_ns >= 10000000) {
		/* 10 ms or more: the rate; kept only when it is a plausible one (0.1 to 20 GHz) */
		uint64_t per_us = (t - rt.cal_tsc) * 1000 / (ns - rt.cal_ns);

		rt.per_us = per_us >= 100 && per_us <= 20000 ? per_us : 0;
		if (ns - rt.cal_ns >= 1000000000)
			rt.cal_ns = ns, rt.cal_tsc = t;
	}
}

static void realtime(struct timespec *out)
{
	uint64_t t = tsc_now();

	/* (a TSC behind the last reading, another CPU's, reads the clock too) */
	if (!rt.per_us || t - rt.tsc >= rt.per_us)
		clock_read(t);
	*out = rt.ts;
}

/*
 * A batch's time (batch_xmit). Even the TSC costs ~10 ns a read on this
 * VM, 40 % of a small packet's cost; so in a batch one reading serves a
 * chunk of `every` packets. It is taken at most half a microsecond old at
 * the chunk's start and checked at its end, and `every` is chosen from the
 * last batch's pace so that a chunk takes ~0.4 us. Should the check find a
 * microsecond gone (the thread was preempted in the chunk), the chunk's
 * packets are stamped again with a new reading: later than they were
 * built, still before they are sent. So a time stays at most 1 us behind
 * its packet's build and never ahead of its send. Not with UDPCSUM (the
 * time is under the checksum) or NO_TIMESTAMP, nor until the TSC's rate
 * is known: then each packet reads as before.
 */
static void hold(struct pg_dev *d, uint64_t t)
{
	if (t - rt.tsc >= rt.per_us / 2)
		clock_read(t);
	d->held_sec = (uint32_t)rt.ts.tv_sec; /* (converted once for the chunk's packets) */
	d->held_usec = (uint32_t)(rt.ts.tv_nsec / 1000);
	d->held_tsc = rt.tsc;
	d->hold = true;
}

/* the end of a chunk, @v its @n packets, at TSC @t */
static void check(struct pg_dev *d, struct uskb **v, unsigned int n, uint64_t t)
{
	uint32_t tv[2];

	if (t - d->held_tsc < rt.per_us)
		return;
	clock_read(t);
	tv[0] = htonl((uint32_t)rt.ts.tv_sec);
	tv[1] = htonl((uint32_t)(rt.ts.tv_nsec / 1000));
	for (unsigned int i = 0; i < n; i++) /* the pktgen header's time, after UDP's 8 bytes */
		memcpy(uskb_transport_header(v[i]) + 8 + offsetof(struct pg_hdr, tv_sec), tv, 8);
	uskb_count_add(&d->restamped, n);
}

void __uskb_pg_stamp_begin(struct pg_dev *d)
{
	d->hold = false;
	d->batch_tsc = 0;
	if (d->p.flags & (F_NO_TIMESTAMP | F_UDPCSUM))
		return;
	if (!rt.per_us) { /* each packet reads the clock; this too, to learn the rate */
		clock_read(tsc_now());
		return;
	}
	d->batch_tsc = tsc_now();
	if (d->every > 1)
		hold(d, d->batch_tsc);
}

void __uskb_pg_stamp_chunk(struct pg_dev *d, struct uskb **v, unsigned int n)
{
	uint64_t t = tsc_now();

	check(d, v, n, t);
	hold(d, t);
}

void __uskb_pg_stamp_end(struct pg_dev *d, struct uskb **v, unsigned int n, unsigned int built)
{
	uint64_t t, per;

	if (!d->batch_tsc)
		return;
	t = tsc_now();
	if (d->hold)
		check(d, v, n, t);
	d->hold = false;
	if (!built)
		return;
	/* the pace of this batch: packets per 0.4 us (a preempted batch gives 1, for one batch) */
	per = (t - d->batch_tsc) / built;
	per = per ? rt.per_us * 2 / 5 / per : PG_BATCH;
	d->every = per < 1 ? 1 : per > PG_BATCH ? PG_BATCH : (unsigned int)per;
}

/*
 * As pktgen_setup_inject() does when no source is set: the interface's
 * first IPv4 address, or for IPv6 its link-local address ("use linklevel
 * address if unconfigured"); where the kernel would then give up, an
 * interface with only other IPv6 addresses gives its first one. Devices
 * without an interface, or an interface without such an address, leave
 * the source at zero.
 */
static void iface_source(struct pg_dev *d, bool ip6)
{
	unsigned int ifindex = d->nd->dev->ifindex;
	struct ifaddrs *ifa, *i;
	bool found = false;

	if (!ifindex || getifaddrs(&ifa))
		return;
	for (i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || !i->ifa_name || if_nametoindex(i->ifa_name) != ifindex)
			continue;
		if (!ip6 && i->ifa_addr->sa_family == AF_INET) {
			d->p.src_min.addr = d->p.src_max.addr =
				((const struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
			break;
		}
		if (ip6 && i->ifa_addr->sa_family == AF_INET6) {
			const struct in6_addr *a = &((const struct sockaddr_in6 *)i->ifa_addr)->sin6_addr;

			if (found && !IN6_IS_ADDR_LINKLOCAL(a))
				continue;
			memcpy(&d->p.cur_in6_saddr, a, 16);
			found = true;
			if (IN6_IS_ADDR_LINKLOCAL(a))
				break;
		}
	}
	freeifaddrs(ifa);
}

/* pktgen_setup_inject(): the headers of a run's first packet */
void __uskb_pg_setup_inject(struct pg_dev *d)
{
	unsigned int ntxq = d->nd->dev->nqueues;

	if (ntxq <= d->p.queue_map_min)
		d->p.queue_map_min = (ntxq ? ntxq : 1) - 1;
	if (d->p.queue_map_max >= ntxq)
		d->p.queue_map_max = (ntxq ? ntxq : 1) - 1;
	memcpy(d->hh + 6, pg_zero_mac(d->p.src_mac) ? d->nd->dev->mac : d->p.src_mac, 6);
	memcpy(d->hh, d->p.dst_mac, 6);
	if (d->p.flags & F_IPV6) {
		static const struct in6_addr any = IN6ADDR_ANY_INIT;

		if (d->p.min_pkt_size == 0)
			d->p.min_pkt_size = 14 + 40 + 8 + 16;
		if (!memcmp(&d->p.cur_in6_saddr, &any, 16))
			iface_source(d, true);
	} else {
		if (d->p.min_pkt_size == 0)
			d->p.min_pkt_size = 14 + 20 + 8 + 16;
		/* no src_min: no source range; neither: the interface's address, else 0.0.0.0 */
		if (!d->p.src_min.str[0]) {
			d->p.src_min.addr = d->p.src_max.addr = 0;
			if (!d->p.src_max.str[0])
				iface_source(d, false);
		}
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

/* src/dst_mac_count: the next (or a random) address of the range into @hh */
static void mac_step(struct pg_dev *d, uint32_t count, uint32_t *offset, uint32_t rnd_flag,
		     uint8_t *hh, const uint8_t *base)
{
	uint32_t mc;

	if (count <= 1)
		return;
	if (d->p.flags & rnd_flag) {
		mc = pgl_pick(prandom(d), 0, count);
	} else {
		mc = (*offset)++;
		if (*offset >= count)
			*offset = 0;
	}
	pgl_bump_mac(hh, base, mc);
}

/* udp_src/dst ranges: max exclusive, sequential or random */
static void port_step(struct pg_dev *d, uint16_t min, uint16_t max, uint16_t *cur, uint32_t rnd_flag)
{
	if (min >= max)
		return;
	*cur = (uint16_t)(d->p.flags & rnd_flag ? pgl_pick(prandom(d), min, max) : pgl_port_next(*cur, min, max));
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
		flow = pgl_pick(prandom(d), 0, d->p.cflows);
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

			if (d->p.flags & F_IPSRC_RND)
				t = pgl_pick(prandom(d), imn, imx);
			else
				t = pgl_ip4_next(ntohl(d->p.cur_saddr), imn, imx);
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
						t = pgl_pick(prandom(d), imn, imx);
					while (pgl_ip4_special(t) && ++tries < 1000);
				} else {
					t = pgl_ip4_next(ntohl(d->p.cur_daddr), imn, imx);
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
	/* the same as an unconditional %=, without a divide per packet */
	if (uskb_unlikely(d->cur_queue_map >= d->nd->dev->nqueues))
		d->cur_queue_map %= d->nd->dev->nqueues;
	d->flows[flow].count++;
}

/* the fields of struct uskb_pktgen_pkt a packet's template depends on: all before ip_id */
#define TMPL_KEY offsetof(struct uskb_pktgen_pkt, ip_id)
_Static_assert(offsetof(struct uskb_pktgen_pkt, seq_num) > TMPL_KEY &&
		       offsetof(struct uskb_pktgen_pkt, tv_sec) > TMPL_KEY &&
		       offsetof(struct uskb_pktgen_pkt, tv_usec) > TMPL_KEY,
	       "the per-packet fields come last in struct uskb_pktgen_pkt");

/* frames up to this long are copied whole from the template, zeros and all */
#define TMPL_SHORT 64
_Static_assert(TMPL_SHORT <= PG_TMPL_MAX, "a short frame fits the template");

/* Keep @skb's frame (just built from @p) as the template for the packets after it. */
static void tmpl_keep(struct pg_dev *d, const struct uskb_pktgen_pkt *p, const struct uskb *skb)
{
	struct pg_tmpl *t = d->tmpl;
	unsigned int hlen = (unsigned int)(skb->transport_header - skb->mac_header) + 8 +
			    (unsigned int)sizeof(struct pg_hdr);

	if (p->nfrags > 0 || p->udpcsum || uskb_is_nonlinear(skb) || hlen > PG_TMPL_MAX ||
	    hlen > skb->len)
		return;
	/* a description that changes every packet (random fields): keep only now and then */
	if (t && t->misses >= 8 && (t->misses & 63))
		return;
	if (!t) {
		t = d->tmpl = calloc(1, sizeof(*t));
		if (!t)
			return; /* no template: every packet is built */
	}
	memcpy(&t->key, p, TMPL_KEY);
	t->len = skb->len;
	t->hlen = hlen;
	t->nh = (uint16_t)(skb->network_header - skb->mac_header);
	t->th = (uint16_t)(skb->transport_header - skb->mac_header);
	t->protocol = skb->protocol;
	memcpy(t->frame, skb->data, hlen);
	memset(t->frame + hlen, 0, PG_TMPL_MAX - hlen); /* the zeros after the header (TMPL_SHORT) */
	if (!p->ipv6) {
		/* the header's 16-bit words as they lie in memory, but the id and checksum */
		const unsigned char *iph = t->frame + t->nh;
		uint32_t sum = 0;

		for (int i = 0; i < 20; i += 2) {
			uint16_t w;

			memcpy(&w, iph + i, 2);
			if (i != 4 && i != 10)
				sum += w;
		}
		t->ipsum = sum;
	}
}

/*
 * What a packet made from the template needs of it, read once: stores into
 * a frame may alias the template (an unsigned char array), so a loop over
 * packets keeps these in registers rather than reloading them per field.
 */
struct tmpl_geo {
	const unsigned char *frame;
	unsigned int len, hlen, nh, th;
	uint32_t ipsum;
	uint16_t protocol;
	bool ip4;
};

static inline struct tmpl_geo tmpl_geo(const struct pg_tmpl *t, bool ip4)
{
	return (struct tmpl_geo){ t->frame, t->len, t->hlen, t->nh, t->th, t->ipsum, t->protocol, ip4 };
}

/*
 * Fill @skb (fresh, room for 16 + len) with the template's frame: the
 * frame copied (the pktgen header's magic with it), the IPv4 id @id and
 * header checksum, the sequence number @seq and the time @tv (big-endian
 * seconds and microseconds) patched.
 */
static inline __attribute__((always_inline)) void tmpl_fill(const struct tmpl_geo *g,
							  struct uskb *skb, uint16_t id,
							  uint32_t seq, const uint32_t tv[2])
{
	uint32_t seq_be = htonl(seq);
	unsigned char *data, *pgh;

	/* as uskb_pktgen_build: 16 bytes of headroom */
	uskb_reserve(skb, 16);
	data = uskb_put(skb, g->len);
	if (g->len <= TMPL_SHORT && uskb_tailroom(skb) >= (int)(TMPL_SHORT - g->len)) {
		/* a short frame: one fixed-size copy, zeros included (what passes len is tailroom) */
		memcpy(data, g->frame, TMPL_SHORT);
	} else {
		memcpy(data, g->frame, g->hlen);
		memset(data + g->hlen, 0, g->len - g->hlen);
	}
	skb->protocol = g->protocol;
	uskb_reset_mac_header(skb);
	uskb_set_network_header(skb, (int)g->nh);
	uskb_set_transport_header(skb, (int)g->th);
	if (g->ip4) {
		/* the checksum from the kept sum: no read of the bytes just written */
		uint16_t v = htons(id);
		uskb_sum16 check = uskb_csum_fold(g->ipsum + v);

		memcpy(data + g->nh + 4, &v, 2);
		memcpy(data + g->nh + 10, &check, 2);
	}
	pgh = data + g->th + 8;
	memcpy(pgh + offsetof(struct pg_hdr, seq), &seq_be, 4);
	memcpy(pgh + offsetof(struct pg_hdr, tv_sec), tv, 8);
}

/*
 * The packet @p describes, from the template when only its per-packet
 * fields differ from the one kept (tmpl_fill), in *out (NULL when memory
 * ran out). False when the template does not apply: the caller builds.
 */
static bool tmpl_build(struct pg_dev *d, const struct uskb_pktgen_pkt *p, struct uskb **out)
{
	struct pg_tmpl *t = d->tmpl;
	struct tmpl_geo g;
	uint32_t tv[2];
	struct uskb *skb;

	/* the key holds nfrags and udpcsum: only frames tmpl_keep took can match */
	if (!t)
		return false;
	if (!d->tmpl_same) {
		if (memcmp(&t->key, p, TMPL_KEY)) {
			t->misses++;
			return false;
		}
		t->misses = 0;
		d->tmpl_same = d->fixed; /* nothing varies: it matches every packet of the run */
	}
	*out = skb = d->nspare ? d->spare[--d->nspare] : uskb_alloc(16 + t->len);
	if (!skb)
		return true;
	g = tmpl_geo(t, !p->ipv6);
	tv[0] = htonl(p->tv_sec);
	tv[1] = htonl(p->tv_usec);
	tmpl_fill(&g, skb, p->ip_id, p->seq_num, tv);
	return true;
}

void __uskb_pg_spare_fill(struct pg_dev *d, unsigned int n)
{
	/* (all or nothing: without them each packet allocates its own) */
	if (d->tmpl_same && !d->nspare && n > 1 && !uskb_alloc_bulk(d->spare, n, 16 + d->tmpl->len))
		d->nspare = n;
}

void __uskb_pg_spare_drop(struct pg_dev *d)
{
	if (d->nspare)
		uskb_free_bulk(d->spare, d->nspare);
	d->nspare = 0;
}

bool __uskb_pg_headers_vary(const struct pg_dev *d)
{
	const struct pg_params *p = &d->p;

	return p->cflows || p->src_mac_count > 1 || p->dst_mac_count > 1 ||
	       (p->flags & (F_MPLS_RND | F_VID_RND | F_SVID_RND)) ||
	       p->udp_src_min < p->udp_src_max || p->udp_dst_min < p->udp_dst_max ||
	       (!(p->flags & F_IPV6) && (ntohl(p->src_min.addr) < ntohl(p->src_max.addr) ||
					 ntohl(p->dst_min.addr) < ntohl(p->dst_max.addr))) ||
	       ((p->flags & F_IPV6) && !IN6_IS_ADDR_UNSPECIFIED(&p->min_in6_daddr)) ||
	       p->min_pkt_size < p->max_pkt_size || p->n_imix ||
	       (!(p->flags & F_QUEUE_MAP_CPU) && p->queue_map_min < p->queue_map_max);
}

struct uskb *__uskb_pg_build_next(struct pg_dev *d)
{
	struct uskb_pktgen_pkt *p = &d->pkt;
	struct uskb *skb;

	/* nothing varies: the description stays the first packet's but for the fields below */
	if (d->primed)
		goto per_packet;
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
per_packet:
	p->ip_id = d->ip_id;
	p->seq_num = d->build_seq;
	if (d->p.flags & F_NO_TIMESTAMP) {
		p->tv_sec = p->tv_usec = 0;
	} else if (d->hold) { /* (in a batch: __uskb_pg_stamp_begin) */
		p->tv_sec = d->held_sec;
		p->tv_usec = d->held_usec;
	} else {
		struct timespec ts;

		realtime(&ts);
		p->tv_sec = (uint32_t)ts.tv_sec;
		p->tv_usec = (uint32_t)(ts.tv_nsec / 1000);
	}
	if (!tmpl_build(d, p, &skb)) {
		skb = uskb_pktgen_build(p, d->nd->dev, d->zero);
		if (skb)
			tmpl_keep(d, p, skb);
	}
	if (!skb)
		return NULL;
	d->primed = d->fixed;
	if (!p->ipv6)
		d->ip_id++;
	skb->queue_mapping = (uint16_t)d->cur_queue_map;
	skb->priority = d->p.skb_priority;
	return skb;
}

/*
 * @n packets into @v as __uskb_pg_build_next makes them once the template
 * makes every packet (tmpl_same) and the time is held for them (or off):
 * the batch's spare skbs filled in one loop, the device's state in locals
 * (every store into a frame may alias d, which would reload it per field).
 */
static void tmpl_run(struct pg_dev *d, struct uskb **v, unsigned int n)
{
	const struct tmpl_geo g = tmpl_geo(d->tmpl, !d->pkt.ipv6);
	const uint16_t qmap = (uint16_t)d->cur_queue_map;
	const uint32_t prio = d->p.skb_priority;
	unsigned int ns = d->nspare;
	uint32_t seq = d->build_seq, tv[2] = { 0, 0 };
	uint16_t id = d->ip_id;

	if (!(d->p.flags & F_NO_TIMESTAMP)) {
		tv[0] = htonl(d->held_sec);
		tv[1] = htonl(d->held_usec);
	}
	for (unsigned int i = 0; i < n; i++) {
		struct uskb *skb = d->spare[--ns];

		tmpl_fill(&g, skb, id, seq++, tv);
		if (g.ip4)
			id++;
		skb->queue_mapping = qmap;
		skb->priority = prio;
		v[i] = skb;
	}
	d->nspare = ns;
	d->build_seq = seq;
	d->ip_id = id;
}

unsigned int __uskb_pg_build_run(struct pg_dev *d, struct uskb **v, unsigned int n)
{
	unsigned int i;

	if (d->primed && d->tmpl_same && d->nspare >= n && (d->hold || (d->p.flags & F_NO_TIMESTAMP))) {
		tmpl_run(d, v, n);
		return n;
	}
	for (i = 0; i < n; i++) {
		v[i] = __uskb_pg_fill_packet(d);
		if (!v[i])
			break;
		d->build_seq++;
	}
	return i;
}

struct uskb *__uskb_pg_fill_packet(struct pg_dev *d)
{
	struct uskb *skb = __uskb_pg_build_next(d);

	if (!skb) {
		pthread_mutex_lock(&d->t->pg->lock);
		snprintf(d->result, RESULT_SZ, "No memory");
		pthread_mutex_unlock(&d->t->pg->lock);
	}
	return skb;
}
