/* SPDX-License-Identifier: MIT */
#ifndef USKB_PKTGEN_LIVE_H
#define USKB_PKTGEN_LIVE_H

/*
 * What uskb-pktgen's live-frames program (bpf/pktgen_live.c) shares with
 * the engine (src/pktgen/live.c, flow.c): one struct in the program's .bss, mapped
 * into the engine's memory. The engine writes the configuration and the
 * starting state before the first run; the program then steps the state
 * per frame, as mod_cur_headers() does, and counts the frames it sent.
 * Only one thread runs a device's program at a time: no atomics.
 */

#include <linux/types.h>

#define PGL_INLINE static inline __attribute__((always_inline))

/* which fields change per frame (cfg.flags) */
enum {
	PGL_IPV6 = 1 << 0,
	PGL_IPSRC_RND = 1 << 1,
	PGL_IPDST_RND = 1 << 2,
	PGL_UDPSRC_RND = 1 << 3,
	PGL_UDPDST_RND = 1 << 4,
	PGL_UDPCSUM = 1 << 5,	   /* the UDP checksum is summed per frame */
	PGL_NO_TIMESTAMP = 1 << 6,
	PGL_FLOW_SEQ = 1 << 7,
	PGL_MACSRC_RND = 1 << 8,
	PGL_MACDST_RND = 1 << 9,
	PGL_DST6_RND = 1 << 10,	   /* min_in6_daddr is set: random IPv6 destinations */
	/*
	 * Something besides the sequence number, time and IPv4 id changes
	 * (flows, MAC, port or address ranges): the engine loads the entry
	 * point pktgen_live, which steps the header state and writes ports
	 * and addresses, and leaves them out of the checksums' base sums.
	 * Without it, pktgen_live_fixed, and the base sums include them as
	 * built. Flag and entry point must agree, or the checksums are wrong.
	 */
	PGL_STEP = 1 << 11,
};

#define PGL_MAX_FLOWS 65536

/*
 * src/dst_mac_count: @mc added to the low four bytes of @base, carrying
 * upward, into @mac[1..5] (@mac[0] stays), as the kernel pktgen does; the
 * engine (flow.c) and the program step MAC ranges with it.
 */
PGL_INLINE void pgl_bump_mac(__u8 *mac, const __u8 *base, __u32 mc)
{
	__u32 tmp = base[5] + (mc & 0xff);

	mac[5] = (__u8)tmp;
	tmp = base[4] + ((mc >> 8) & 0xff) + (tmp >> 8);
	mac[4] = (__u8)tmp;
	tmp = base[3] + ((mc >> 16) & 0xff) + (tmp >> 8);
	mac[3] = (__u8)tmp;
	tmp = base[2] + ((mc >> 24) & 0xff) + (tmp >> 8);
	mac[2] = (__u8)tmp;
	tmp = base[1] + (tmp >> 8);
	mac[1] = (__u8)tmp;
}

/*
 * The kernel pktgen's rules for stepping a range, shared by the engine
 * (flow.c) and the program. Addresses in host order.
 */
/* IPv4 destinations IPDST_RND never picks: loopback, multicast and up, 0/8 */
PGL_INLINE int pgl_ip4_special(__u32 a)
{
	return (a >> 24) == 127 || (a >> 28) == 0xe || a == 0xffffffffu || (a >> 24) == 0;
}

/* a random value of [min, max) from @r (max > min) */
PGL_INLINE __u32 pgl_pick(__u32 r, __u32 min, __u32 max)
{
	return r % (max - min) + min;
}

/* the IPv4 address after @cur in [min, max] (min, when @cur is outside) */
PGL_INLINE __u32 pgl_ip4_next(__u32 cur, __u32 min, __u32 max)
{
	__u32 t = cur + 1;

	return t > max || t < min ? min : t;
}

/* the port after @cur in [min, max): udp_src/dst ranges have max exclusive */
PGL_INLINE __u32 pgl_port_next(__u32 cur, __u32 min, __u32 max)
{
	return cur + 1 >= max ? min : cur + 1;
}

struct pgl_flow {
	__u32 cur_daddr; /* network order */
	__u32 count;
	__u32 init;
};

struct pgl_cfg {
	__u32 flags;
	__u32 len;		/* the frame's length */
	__u32 nh, th;		/* network and transport header offsets */
	__u8 src_mac[6], dst_mac[6]; /* the bases of the MAC ranges */
	__u32 src_mac_count, dst_mac_count;
	__u32 udp_src_min, udp_src_max, udp_dst_min, udp_dst_max;
	__u32 src_min, src_max, dst_min, dst_max; /* IPv4, host order */
	__u32 min6[4], max6[4]; /* IPv6 destination range, as the words lie in memory */
	__u32 cflows, lflow;
	/*
	 * The IPv4 header's 16-bit words as they lie in memory, summed
	 * without id and checksum (and, with PGL_STEP, the addresses); the
	 * UDP checksum's sum without sequence number and time (and, with
	 * PGL_STEP, ports and addresses) (UDPCSUM). Both folded to 16 bits:
	 * the program adds a few dozen words at most, in 32 bits.
	 */
	__u32 ipsum, udpsum;
	__s64 tai_off; /* CLOCK_TAI - CLOCK_REALTIME, ns: refreshed before each run */
	/*
	 * The kernel runs the program on a batch of frames back to back, then
	 * sends them (and a receiver on this CPU takes them) before the next
	 * batch: the run's batch size, a power of two, less one.
	 */
	__u32 batch_mask;
};

struct pgl_state {
	/*
	 * Frames the program sent (XDP_TX), since the start. The only count
	 * it steps per frame: the sequence number and the IPv4 id go with it.
	 */
	__u64 frames;
	__u64 ts_base; /* the time's current second, in ns (0: none yet) */
	__u32 seq_base;	  /* the sequence number of frame 0 */
	__u32 ip_id_base; /* the IPv4 id of frame 0 */
	__u32 cur_saddr, cur_daddr; /* network order */
	__u32 cur_daddr6[4];
	__u32 cur_udp_src, cur_udp_dst;
	__u32 cur_src_mac_offset, cur_dst_mac_offset;
	__u32 curfl, nflows;
	__u32 aborted; /* frames the program could not write (shorter than cfg.len): not sent */
	/*
	 * The per-batch work (live_event()) runs at frame ts_next: a call's
	 * first (the engine sets it to frames before each call), each batch's
	 * first, and within a batch when the time is due. With the time on,
	 * the clock is read then: at each batch's first frame, and within a
	 * batch every ts_every frames: as many as the program itself ran in a
	 * microsecond when it last measured (1 to 32, so that each batch of
	 * 64 measures). So a packet's time is about a microsecond behind at
	 * most, never ahead.
	 */
	__u64 ts_next;
	__u64 call_base;	  /* frames at the call's start: batches count from it */
	__u32 ts_every;
	__u32 ts_sec, ts_usec;	  /* that time, as the pktgen header has it (big-endian) */
	__u32 ts_sum;		  /* their 16-bit halves summed, for the UDP checksum */
	__u64 ts_tai;		  /* when it was read: the clock's TAI ns */
	__u64 ts_n;		  /* and at which frame */
	/*
	 * CLOCK_MONOTONIC when the stop word halted the sending (its lowest
	 * bit set, so never 0); 0: not. Once set, the rest sends nothing.
	 */
	__u64 halted_ns;
};

struct pgl_shared {
	struct pgl_cfg cfg;
	struct pgl_state st;
};

#endif
