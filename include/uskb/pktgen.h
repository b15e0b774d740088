/* SPDX-License-Identifier: MIT */
#ifndef USKB_PKTGEN_H
#define USKB_PKTGEN_H

/**
 * @file pktgen.h
 * uskb-pktgen: the kernel's packet generator in userspace.
 *
 * The engine keeps the kernel's files as names: "pgctrl", one "kpktgend_N"
 * per generator thread and one file per device added to a thread (the name
 * given to add_device, DEV or DEV@tag). uskb_pktgen_write() is an
 * `echo CMD > /proc/net/pktgen/FILE`; uskb_pktgen_read() is a `cat`. The
 * device part of a name (before '@') is a device registered with
 * uskb_pktgen_register_dev(), or else a uskb_dev_open() spec ("null",
 * "pcap:FILE").
 *
 * The packet builder underneath (fill_packet_ipv4 / fill_packet_ipv6 /
 * pktgen_finalize_skb) is usable on its own: uskb_pktgen_build().
 */

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

struct uskb;
struct uskb_dev;
struct uskb_page;

#define USKB_PKTGEN_MAGIC 0xbe9be955u
#define USKB_PKTGEN_NO_VLAN 0xffff

/** What one packet is built from (the current fields of a pktgen_dev). */
struct uskb_pktgen_pkt {
	unsigned int pkt_size;	/**< cur_pkt_size: the frame without FCS */
	int nfrags;		/**< frags from the zero page (capped at 17) */
	bool ipv6;
	bool udpcsum;		/**< flag UDPCSUM */
	uint8_t dst_mac[6], src_mac[6];
	uint32_t saddr, daddr;	/**< IPv4, network byte order */
	uint8_t saddr6[16], daddr6[16];
	uint16_t udp_src, udp_dst;
	uint8_t tos;		/**< tos, or traffic_class for IPv6 */
	uint32_t labels[16];	/**< MPLS labels as given (BOS is added) */
	int nr_labels;
	uint16_t vlan_id, vlan_p, vlan_cfi; /**< vlan_id USKB_PKTGEN_NO_VLAN: none */
	uint16_t svlan_id, svlan_p, svlan_cfi;
	uint16_t ip_id;		/**< IPv4 id of this packet */
	uint32_t seq_num;
	uint32_t tv_sec, tv_usec; /**< the pktgen header's timestamp (0, 0: NO_TIMESTAMP) */
};

/**
 * Build one packet as the kernel does: Ethernet, MPLS, SVLAN, VLAN,
 * IPv4/IPv6, UDP, the pktgen header, zeros (from @zero_page frags when
 * nfrags > 0, never written). UDPCSUM: CHECKSUM_PARTIAL with the pseudo
 * header sum when @dev has the IP(V6)_CSUM feature, else the full sum in
 * software. NULL + errno.
 */
USKB_API struct uskb *uskb_pktgen_build(const struct uskb_pktgen_pkt *p,
					const struct uskb_dev *dev, struct uskb_page *zero_page);

struct uskb_pktgen;

/** Engine options; zeroes give the defaults. */
struct uskb_pktgen_opts {
	int nthreads;	/**< kpktgend_0..N-1; 0: one per online CPU */
	bool no_pin;	/**< do not pin kpktgend_N to CPU N % ncpus */
	bool seeded;	/**< use @seed for the random flags (else the clock) */
	uint64_t seed;
};

/** A new engine with its threads (not yet running). NULL + errno. */
USKB_API struct uskb_pktgen *uskb_pktgen_new(const struct uskb_pktgen_opts *opts);
/** Remove every device (dropping their skbs and pages) and free; not while a start runs. */
USKB_API void uskb_pktgen_free(struct uskb_pktgen *pg);
/** Number of kpktgend_N threads. */
USKB_API int uskb_pktgen_nthreads(const struct uskb_pktgen *pg);
/**
 * Make @dev known as @name to add_device (the caller keeps ownership and
 * must keep it open until the engine is freed). 0 or -EEXIST / -ENOMEM.
 */
USKB_API int uskb_pktgen_register_dev(struct uskb_pktgen *pg, const char *name,
				      struct uskb_dev *dev);
/**
 * Write one command to @file, as a write() to /proc/net/pktgen/FILE
 * (trailing newline optional). "start" to pgctrl blocks until every device
 * has stopped or uskb_pktgen_stop() is called. 0, or -errno as the kernel's
 * write would fail (EINVAL: unknown command or bad value, ENOENT: no such
 * file, EBUSY: the device is running, ENOTSUP (the kernel's ENOTSUPP):
 * refused for this device). The reply is in uskb_pktgen_result().
 */
USKB_API int uskb_pktgen_write(struct uskb_pktgen *pg, const char *file, const char *cmd);
/**
 * The text after "Result: " of @file (a device or kpktgend_N); NULL if none.
 * It changes when the device stops: during a run use uskb_pktgen_read().
 */
USKB_API const char *uskb_pktgen_result(struct uskb_pktgen *pg, const char *file);
/**
 * The contents of @file, as `cat /proc/net/pktgen/FILE` shows them, into
 * @buf (NUL-terminated, truncated to @len). Returns the full length, or
 * -ENOENT.
 */
USKB_API int uskb_pktgen_read(struct uskb_pktgen *pg, const char *file, char *buf, size_t len);
/** Ask start to stop, or the next start to end at once (async-signal-safe). */
USKB_API void uskb_pktgen_stop(struct uskb_pktgen *pg);

/** Live figures of one device, readable while it runs. */
struct uskb_pktgen_stats {
	uint64_t sofar, errors, tx_bytes;
	uint64_t elapsed_ns, idle_ns; /**< of the run (so far) */
	uint64_t pps, bps;	      /**< as the result line computes them */
	unsigned int pkt_size;	      /**< cur_pkt_size */
	int nfrags;		      /**< of the last skb, -1 if none */
	bool running;
	/**
	 * Of sofar, the frames the device took and then lost (the kernel
	 * refused them after an MTU change, the interface went away), counted
	 * in errors too; known once the device stopped. When two pktgen
	 * devices share a queue, each counts that queue's losses.
	 */
	uint64_t lost;
	/**
	 * The device's zero-copy sends (devices with USKB_DEV_F_ZEROCOPY that
	 * complete when the kernel is done: udp:, tcp: in zc or uring mode):
	 * completed without a copy, copied by the kernel after all, and the
	 * times the device gave zero copy up; and the frames sent from memory
	 * registered with the kernel beforehand (uring). Of the whole device,
	 * whichever pktgen devices share it.
	 */
	uint64_t zc_sent, zc_copied, zc_fallback, zc_fixed;
	bool zerocopy; /**< the device has USKB_DEV_F_ZEROCOPY */
	/**
	 * Packets built in a batch (a new packet per send) share one reading
	 * of the clock per ~0.4 us of building; these are the packets whose
	 * reading aged a microsecond before their chunk ended (the thread was
	 * preempted), stamped again before they were sent.
	 */
	uint64_t restamped;
};
/**
 * Figures of the @i-th device (0-based, in thread order); fills @name
 * (may be NULL). 0, or -ENOENT past the last device.
 */
USKB_API int uskb_pktgen_dev_stats(struct uskb_pktgen *pg, int i, char *name, size_t namelen,
				   struct uskb_pktgen_stats *st);
/**
 * Why the device under pktgen device @file last failed after its open
 * (uskb_dev_last_error()) into @buf: the text's length (0: nothing
 * failed), -ENOENT for no such device, -EINVAL for no room.
 */
USKB_API int uskb_pktgen_dev_error(struct uskb_pktgen *pg, const char *file, char *buf,
				   size_t len);

/* ---- the receiving side: counting pktgen's packets ---- */

/**
 * A receiver of pktgen packets (uskb-pktgen --rx): it finds the pktgen
 * header (magic, sequence number, send time) behind Ethernet, VLAN/SVLAN
 * tags or MPLS labels, IPv4 or IPv6 and UDP, and keeps per stream — a
 * source MAC, source IP address and UDP source port — the count, the packets
 * that never came (lost), those that came after a higher number (reordered)
 * and the repeats of a number (duplicates, within the last 65536), plus a
 * latency histogram (arrival minus the header's send time; sender and
 * receiver must share a clock). The sender numbers every packet it sends;
 * one it sends again (clone_skb, burst: the same skb) keeps its number, and
 * the next number is that much higher. So each packet that arrives stands
 * for one number: lost = the numbers from a stream's first to its highest
 * (and the highest's repeats) that no packet stands for. A burst of 4 that
 * all arrives: 3 duplicates a number, nothing lost. Not thread-safe: one
 * receiver per thread.
 */
struct uskb_pktgen_rx;

struct uskb_pktgen_rx_stats {
	uint64_t packets, bytes; /**< pktgen packets (bytes of the frames) */
	uint64_t other;		 /**< frames that were not pktgen's */
	uint64_t lost;		 /**< packets that never came (above: a repeat stands for a number) */
	uint64_t reordered;	 /**< arrived after a higher number */
	uint64_t duplicates;	 /**< repeats of a number already seen */
	unsigned int streams;	 /**< distinct senders (past 256 their packets count, their numbers are not followed) */
	uint64_t lat_samples;	 /**< packets with a send time (no NO_TIMESTAMP) */
	/** latency in ns: exact min and max; percentiles within 1/16 (a histogram) */
	uint64_t lat_min, lat_p50, lat_p99, lat_p999, lat_max;
};

/** NULL + errno (ENOMEM). */
USKB_API struct uskb_pktgen_rx *uskb_pktgen_rx_new(void);
USKB_API void uskb_pktgen_rx_free(struct uskb_pktgen_rx *rx);
/**
 * Count one received frame (the skb stays the caller's). Its arrival time
 * is skb->tstamp (CLOCK_REALTIME ns) or, when 0, @now_ns. Returns true when
 * it was a pktgen packet.
 */
USKB_API bool uskb_pktgen_rx_count(struct uskb_pktgen_rx *rx, const struct uskb *skb,
				   uint64_t now_ns);
USKB_API void uskb_pktgen_rx_stats(const struct uskb_pktgen_rx *rx,
				   struct uskb_pktgen_rx_stats *st);

#ifdef __cplusplus
}
#endif
#endif
