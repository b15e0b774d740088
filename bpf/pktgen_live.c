/* SPDX-License-Identifier: MIT */
/*
 * uskb-pktgen's live-frames program (the xdp-live: device). The kernel runs
 * it on one frame, the packet uskb-pktgen built, over and over
 * (BPF_PROG_RUN with BPF_F_TEST_XDP_LIVE_FRAMES); each run steps the
 * header state as the kernel pktgen's mod_cur_headers() does (entry point
 * pktgen_live; pktgen_live_fixed, for commands whose headers do not change,
 * leaves that out), writes the fields that change into the frame (MAC
 * addresses, UDP ports, IP addresses, IPv4 id and checksum, the pktgen
 * header's sequence number and time, the UDP checksum) and sends it:
 * XDP_TX, out of the interface the run names. Built with clang -target bpf
 * and linked into libuskb-pktgen.
 */
#include <stdbool.h>

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "pktgen_live.h"

struct pgl_shared g; /* .bss: the engine's view of it is mmap()ed */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* the engine sets cflows before loading */
	__type(key, __u32);
	__type(value, struct pgl_flow);
} flows SEC(".maps");

/*
 * The instance's stop word (the engine shares one map among its programs),
 * read by live_event() (each batch's first frame, and each read of the
 * clock): once it is seen set, the rest of the call sends nothing and
 * counts nothing, so a stop does not wait for the call to end (at most
 * the rest of a batch of 64 still goes).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, __u32);
} stop SEC(".maps");

/* the MAC offset of a range: the next one, or a random one; false: no range */
static __always_inline bool mac_step(__u32 count, __u32 *offset, bool rnd, __u32 *mc)
{
	if (count <= 1)
		return false;
	if (rnd) {
		*mc = pgl_pick(bpf_get_prandom_u32(), 0, count);
	} else {
		*mc = (*offset)++;
		if (*offset >= count)
			*offset = 0;
	}
	return true;
}

static __always_inline void port_step(__u32 min, __u32 max, __u32 *cur, bool rnd)
{
	if (min >= max)
		return;
	*cur = rnd ? pgl_pick(bpf_get_prandom_u32(), min, max) : pgl_port_next(*cur, min, max);
}

/*
 * A sum of 16-bit words folded to 16 bits: two steps for any 32-bit sum.
 * The program's stay far below 2^32 (a 16-bit base and a few dozen words).
 */
static __always_inline __u32 fold(__u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	return (sum & 0xffff) + (sum >> 16);
}

/* the two halves of a 32-bit word as they lie in memory, summed */
static __always_inline __u32 halves(__u32 w)
{
	return (w & 0xffff) + (w >> 16);
}

/* mod_cur_headers(): the flow, MACs, ports, addresses, in the kernel's order */
static __always_inline void step_headers(struct pgl_cfg *c, struct pgl_state *s, __u8 *eth, __u32 flags)
{
	__u32 fl = 0, mc;
	struct pgl_flow *f = 0;

	if (c->cflows) {
		fl = s->curfl;
		if (flags & PGL_FLOW_SEQ) {
			f = bpf_map_lookup_elem(&flows, &fl);
			if (f && f->count >= c->lflow) {
				f->count = 0;
				f->init = 0;
				if (++s->curfl >= c->cflows)
					s->curfl = 0;
			}
		} else {
			fl = pgl_pick(bpf_get_prandom_u32(), 0, c->cflows);
			s->curfl = fl;
			f = bpf_map_lookup_elem(&flows, &fl);
			if (f && f->count > c->lflow) {
				f->count = 0;
				f->init = 0;
			}
		}
		fl = s->curfl;
		f = bpf_map_lookup_elem(&flows, &fl);
	}
	if (mac_step(c->src_mac_count, &s->cur_src_mac_offset, flags & PGL_MACSRC_RND, &mc))
		pgl_bump_mac(eth + 6, c->src_mac, mc);
	if (mac_step(c->dst_mac_count, &s->cur_dst_mac_offset, flags & PGL_MACDST_RND, &mc))
		pgl_bump_mac(eth, c->dst_mac, mc);
	port_step(c->udp_src_min, c->udp_src_max, &s->cur_udp_src, flags & PGL_UDPSRC_RND);
	port_step(c->udp_dst_min, c->udp_dst_max, &s->cur_udp_dst, flags & PGL_UDPDST_RND);
	if (!(flags & PGL_IPV6)) {
		__u32 imn = c->src_min, imx = c->src_max, t;

		if (imn < imx) {
			if (flags & PGL_IPSRC_RND)
				t = pgl_pick(bpf_get_prandom_u32(), imn, imx);
			else
				t = pgl_ip4_next(bpf_ntohl(s->cur_saddr), imn, imx);
			s->cur_saddr = bpf_htonl(t);
		}
		if (f && f->init) {
			s->cur_daddr = f->cur_daddr;
		} else {
			imn = c->dst_min;
			imx = c->dst_max;
			if (imn < imx) {
				if (flags & PGL_IPDST_RND) {
					for (int tries = 0; tries < 1000; tries++) {
						t = pgl_pick(bpf_get_prandom_u32(), imn, imx);
						if (!pgl_ip4_special(t))
							break;
					}
				} else {
					t = pgl_ip4_next(bpf_ntohl(s->cur_daddr), imn, imx);
				}
				s->cur_daddr = bpf_htonl(t);
			}
			if (f) {
				f->init = 1;
				f->cur_daddr = s->cur_daddr;
				s->nflows++;
			}
		}
	} else if (flags & PGL_DST6_RND) {
		/* (rand | min) & max, a word at a time, as the kernel */
		for (int i = 0; i < 4; i++)
			s->cur_daddr6[i] = (bpf_get_prandom_u32() | c->min6[i]) & c->max6[i];
	}
	if (f)
		f->count++;
}

/*
 * The per-call and per-batch work, out of the per-packet path: at a call's
 * or batch's first frame (the engine sets ts_next to the call's first),
 * and, within a batch, when the time is due. Reads the stop word; with
 * the time on, reads the clock. Returns false when sending has stopped.
 */
static __noinline bool live_event(__u64 n)
{
	struct pgl_cfg *c = &g.cfg;
	struct pgl_state *s = &g.st;
	__u32 zero = 0, *halt = bpf_map_lookup_elem(&stop, &zero);
	__u64 run = n - s->call_base, batch_end = s->call_base + ((run | c->batch_mask) + 1);
	__u64 tai, ns, in;

	if (!halt || *halt) {
		/*
		 * When sending stopped: the run's end, for its rate, and from now
		 * on every frame's halt (called no more once set)
		 */
		s->halted_ns = bpf_ktime_get_ns() | 1;
		return false;
	}
	if (c->flags & PGL_NO_TIMESTAMP) {
		s->ts_next = batch_end;
		return true;
	}
	tai = bpf_ktime_get_tai_ns();
	ns = tai - c->tai_off;
	in = ns - s->ts_base;
	/*
	 * Within a batch: how many frames the last read's took a microsecond
	 * for. (A batch's first read follows the last batch's sending: no
	 * measure of the program's own pace.)
	 */
	if (run & c->batch_mask) {
		__u64 el = tai - s->ts_tai, per_us = el ? (n - s->ts_n) * 1000 / el : 64;

		/* (at most half a batch: the next batch measures again) */
		s->ts_every = per_us < 1 ? 1 : per_us > 32 ? 32 : (__u32)per_us;
	}
	s->ts_tai = tai;
	s->ts_n = n;
	/* a new second (or the clock set back: in wrapped): the one division */
	if (in >= 1000000000) {
		__u64 sec = ns / 1000000000;

		s->ts_base = sec * 1000000000;
		s->ts_sec = bpf_htonl((__u32)sec);
		in = ns - s->ts_base;
	}
	/* in / 1000 for in < 2^32, by multiplying (Granlund-Montgomery) */
	s->ts_usec = bpf_htonl((__u32)((in * 4398046512ull) >> 42));
	s->ts_sum = halves(s->ts_sec) + halves(s->ts_usec);
	s->ts_next = n + s->ts_every < batch_end ? n + s->ts_every : batch_end;
	return true;
}

/*
 * One frame: @step (a constant in each entry point) says whether the
 * headers change besides the sequence number, time and IPv4 id
 * (PGL_STEP). Without it the compiler drops step_headers() and its
 * registers: the common configuration's program is the short one.
 */
static __always_inline int live_frame(struct xdp_md *ctx, const bool step)
{
	struct pgl_cfg *c = &g.cfg;
	struct pgl_state *s = &g.st;
	__u64 n = s->frames; /* this frame's number: sequence number and IPv4 id follow it */
	__u32 nh, th, flags, ipsum, usum, sum;
	__u8 *data, *end, *eth, *iph, *udph;
	__u32 *pg;

	/* first: nothing else is loaded yet to keep across the call */
	if (s->halted_ns)
		return XDP_DROP;
	if (n >= s->ts_next && !live_event(n))
		return XDP_DROP;
	data = (__u8 *)(long)ctx->data;
	end = (__u8 *)(long)ctx->data_end;
	eth = data;
	nh = c->nh & 0xff;
	th = c->th & 0xff;
	flags = c->flags;
	ipsum = c->ipsum;
	usum = c->udpsum;

	/*
	 * The engine checked the frame; the verifier wants to see what is
	 * written here too: the pktgen header always, the MACs when stepped,
	 * the IPv4 header, and the IPv6 destination when stepped.
	 */
	if (data + th + 8 + 16 > end || (step && data + 14 > end) ||
	    (!(flags & PGL_IPV6) ? data + nh + 20 > end : step && data + nh + 40 > end)) {
		s->aborted++;
		return XDP_ABORTED;
	}
	iph = data + nh;
	udph = data + th;
	pg = (__u32 *)(udph + 8);

	/* what changes from packet to packet besides the sequence number, time and IPv4 id */
	if (step) {
		step_headers(c, s, eth, flags);
		*(__u16 *)udph = bpf_htons((__u16)s->cur_udp_src);
		*(__u16 *)(udph + 2) = bpf_htons((__u16)s->cur_udp_dst);
		usum += *(__u16 *)udph + *(__u16 *)(udph + 2);
		if (!(flags & PGL_IPV6)) {
			*(__u32 *)(iph + 12) = s->cur_saddr;
			*(__u32 *)(iph + 16) = s->cur_daddr;
			sum = halves(s->cur_saddr) + halves(s->cur_daddr);
			ipsum += sum;
			usum += sum;
		} else {
			for (int i = 0; i < 4; i++) {
				*(__u32 *)(iph + 24 + 4 * i) = s->cur_daddr6[i];
				usum += halves(s->cur_daddr6[i]);
			}
		}
	}

	/* the pktgen header, the IPv4 id and checksum, the UDP checksum */
	pg[1] = bpf_htonl(s->seq_base + (__u32)n);
	if (flags & PGL_NO_TIMESTAMP) {
		pg[2] = 0;
		pg[3] = 0;
	} else {
		pg[2] = s->ts_sec;
		pg[3] = s->ts_usec;
		usum += s->ts_sum;
	}
	if (!(flags & PGL_IPV6)) {
		__u16 id = bpf_htons((__u16)(s->ip_id_base + (__u32)n));

		*(__u16 *)(iph + 4) = id;
		*(__u16 *)(iph + 10) = (__u16)~fold(ipsum + id);
	}
	if (flags & PGL_UDPCSUM) {
		__u32 check;

		usum += halves(pg[1]);
		check = ~fold(usum) & 0xffff;
		*(__u16 *)(udph + 6) = check ? (__u16)check : 0xffff;
	}
	s->frames = n + 1;
	return XDP_TX;
}

/* the headers change (ranges, flows, random fields): the engine loads this one */
SEC("xdp")
int pktgen_live(struct xdp_md *ctx)
{
	return live_frame(ctx, true);
}

/* only the sequence number, the time and the IPv4 id change */
SEC("xdp")
int pktgen_live_fixed(struct xdp_md *ctx)
{
	return live_frame(ctx, false);
}

char _license[] SEC("license") = "Dual MIT/GPL";
