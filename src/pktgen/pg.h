/* SPDX-License-Identifier: MIT */
#ifndef USKB_PKTGEN_PG_H
#define USKB_PKTGEN_PG_H

/*
 * The private header of uskb-pktgen. Its files use the public headers of
 * libuskb, src/lib/compiler.h and this header, nothing else of the library.
 */

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "lib/compiler.h"
#include "uskb/uskb.h"
#include "uskb/dev.h"
#include "uskb/pktgen.h"

#define PG_VERSION "Packet Generator for packet performance testing. Version: 2.75\n"
#define MAX_CFLOWS 65536
#define MAX_IMIX 20
#define IMIX_PRECISION 100
#define MAX_BURST 1024 /* a burst is sent in pieces of this many */
#define PG_BATCH 32    /* new packets built and handed over per call (xmit.c batch_xmit) */
#define RESULT_SZ 512
#define NAME_SZ 128

/*
 * The flags, in the kernel's order (PKT_FLAGS): X(name) for each. They make
 * the bit numbers F_name_SHIFT, the bits F_name and __uskb_pg_flag_names.
 * IPSEC is not supported.
 */
#define PKT_FLAGS(X)                                                                            \
	X(IPV6) X(IPSRC_RND) X(IPDST_RND) X(TXSIZE_RND) X(UDPSRC_RND) X(UDPDST_RND) X(UDPCSUM) \
	X(NO_TIMESTAMP) X(MPLS_RND) X(QUEUE_MAP_RND) X(QUEUE_MAP_CPU) X(FLOW_SEQ) X(IPSEC)   \
	X(MACSRC_RND) X(MACDST_RND) X(VID_RND) X(SVID_RND) X(NODE) X(SHARED)

#define PG_FLAG_SHIFT(name) F_##name##_SHIFT,
enum { PKT_FLAGS(PG_FLAG_SHIFT) NR_PKT_FLAGS };
#undef PG_FLAG_SHIFT
#define PG_FLAG_BIT(name) F_##name = 1u << F_##name##_SHIFT,
enum { PKT_FLAGS(PG_FLAG_BIT) };
#undef PG_FLAG_BIT

/* "IPV6", "IPSRC_RND", ...: the name of bit i */
extern const char *const __uskb_pg_flag_names[NR_PKT_FLAGS] USKB_HIDDEN;

/*
 * The pktgen header behind the UDP header: big-endian on the wire, at any
 * alignment (copy it in and out with memcpy). tv_sec and tv_usec are the
 * wall-clock send time, both 0 with NO_TIMESTAMP.
 */
struct pg_hdr {
	uint32_t magic; /* USKB_PKTGEN_MAGIC */
	uint32_t seq;
	uint32_t tv_sec;
	uint32_t tv_usec;
};
_Static_assert(sizeof(struct pg_hdr) == 16, "the pktgen header is 16 bytes on the wire");

enum { M_START_XMIT, M_NETIF_RECEIVE, M_QUEUE_XMIT };

/*
 * The frame of the last packet built, as mod_cur_headers leaves the kernel's
 * headers: while nothing but the per-packet fields (IPv4 id, sequence
 * number, timestamp) changes, the next packet is this frame copied and
 * patched instead of built. Linear packets without UDPCSUM only.
 */
#define PG_TMPL_MAX 192 /* headers: 14 + 16 MPLS labels + 2 tags + 40 + 8 + 16 = 150 */

struct pg_tmpl {
	unsigned int misses;	    /* descriptions in a row that differed from the key */
	struct uskb_pktgen_pkt key; /* the packet's description up to ip_id */
	unsigned int len;	    /* the frame's length */
	unsigned int hlen;	    /* bytes up to the end of the pktgen header; zeros after */
	uint16_t nh, th;	    /* network and transport header offsets */
	uint16_t protocol;	    /* skb->protocol, network order */
	uint32_t ipsum;		    /* IPv4: the header's words summed, id and checksum as 0 */
	unsigned char frame[PG_TMPL_MAX];
};

struct flow_state {
	uint32_t cur_daddr;
	unsigned int count;
	bool init;
};

struct imix_pkt {
	uint64_t size, weight, count_so_far;
};

/* A device of the engine (the net_device), shared by the pktgen_devs on it. */
struct pg_netdev {
	struct pg_netdev *next;
	char name[NAME_SZ];
	struct uskb_dev *dev;
	bool owned; /* opened by us from a spec: closed with the last user */
	int users;
	atomic_int active; /* users running now: the last to stop ends the device's stream */
	pthread_mutex_t *txlock; /* HARD_TX_LOCK per queue, taken when users > 1 */
};

/* how long the end of a run gives a stream's peer to take what was sent */
#define PG_FINISH_MS 2000

/* An IPv4 end of a range: as given ("" when unset) and as an address (network order). */
struct pg_ip4 {
	char str[32];
	uint32_t addr;
};

/*
 * What the device commands set (cmd.c): the parameters of a pktgen_dev, the
 * one fact of its device they depend on, and the current values that a
 * command resets along with its parameter, as the kernel's commands do.
 */
struct pg_params {
	uint32_t flags; /* first: offset 0 is never a command's second field */
	unsigned int min_pkt_size, max_pkt_size;
	int nfrags;
	uint64_t delay, count;
	int clone_skb;
	unsigned int burst;
	int node;
	int xmit_mode;
	struct pg_ip4 dst_min, dst_max, src_min, src_max;
	struct in6_addr in6_saddr, in6_daddr, min_in6_saddr, max_in6_saddr, min_in6_daddr,
		max_in6_daddr;
	uint16_t udp_src_min, udp_src_max, udp_dst_min, udp_dst_max;
	uint8_t tos, traffic_class;
	uint32_t labels[16]; /* host order, as given */
	unsigned int nr_labels;
	uint16_t vlan_id, vlan_p, vlan_cfi, svlan_id, svlan_p, svlan_cfi;
	uint32_t src_mac_count, dst_mac_count;
	uint8_t dst_mac[6], src_mac[6];
	unsigned int cflows, lflow;
	unsigned int queue_map_min, queue_map_max;
	uint32_t skb_priority;
	unsigned int n_imix;
	struct imix_pkt imix[MAX_IMIX];
	uint8_t imix_dist[IMIX_PRECISION];
	uint32_t spi;

	bool shared_skbs; /* the device takes shared skbs (clone_skb and burst need it) */

	/* current values */
	unsigned int cur_pkt_size;
	uint32_t cur_saddr, cur_daddr;
	struct in6_addr cur_in6_saddr, cur_in6_daddr;
	uint16_t cur_udp_src, cur_udp_dst;
	uint32_t cur_dst_mac_offset, cur_src_mac_offset;
	bool last_ok; /* the last transmit went out (or the mode never waits for one) */
};

/* the defaults of a new device */
USKB_HIDDEN void __uskb_pg_defaults(struct pg_params *p);
/*
 * Carry out the device command @cmd (pktgen_if_write) on @p, its reply into
 * @result (@len bytes; kept as it was by a successful imix_weights, as the
 * kernel). 0, -errno as the kernel's write fails, or PG_CLEAR_COUNTERS: the
 * caller clears the device's counters. Needs no engine, thread or device.
 */
USKB_HIDDEN int __uskb_pg_parse(struct pg_params *p, const char *cmd, char *result, size_t len);
#define PG_CLEAR_COUNTERS 1
/*
 * The command word of @buf (at most @size - 1 characters, past leading
 * separators) into @name; returns its value: the text after the separators
 * that follow the word.
 */
USKB_HIDDEN const char *__uskb_pg_split(const char *buf, char *name, size_t size);
/* The first word of @s (up to a separator, at most @size - 1 characters) into @dst. */
USKB_HIDDEN void __uskb_pg_word(char *dst, size_t size, const char *s);

static inline bool pg_zero_mac(const uint8_t *m)
{
	return !(m[0] | m[1] | m[2] | m[3] | m[4] | m[5]);
}

static inline void pg_mac_fmt(char *buf, const uint8_t m[6])
{
	sprintf(buf, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}

static inline const char *pg_ip6_fmt(char *buf, const struct in6_addr *a)
{
	inet_ntop(AF_INET6, a, buf, INET6_ADDRSTRLEN);
	return buf;
}

static inline const char *pg_ip4_fmt(char *buf, uint32_t a)
{
	inet_ntop(AF_INET, &a, buf, INET_ADDRSTRLEN);
	return buf;
}

struct pg_thread;

struct pg_dev {
	struct pg_dev *next;
	struct pg_thread *t;
	struct pg_netdev *nd;
	char odevname[NAME_SZ];
	char result[RESULT_SZ];
	struct pg_params p;

	/* state */
	uint8_t hh[14];
	unsigned int cur_queue_map, cur_imix;
	int sent_queue; /* the queue of the last transmit (-1: none): it is what a flush pushes */
	struct flow_state *flows;
	unsigned int nflows, curfl;
	uint32_t seq_num;
	uint16_t ip_id;
	uint64_t rng;
	struct uskb *skb;
	struct uskb_page *zero; /* the shared zero page of this device's node */
	unsigned int last_pkt_size;
	int clone_count;
	int last_nfrags;
	int built_nfrags; /* the last packet built's frags (its skb may be the device's now) */
	uint64_t next_tx;
	_Atomic uint64_t started_at, stopped_at; /* ns, CLOCK_MONOTONIC */
	_Atomic bool running;
	/* written by the device's thread only: uskb_count_add / uskb_count_read */
	uint64_t idle_acc; /* ns */
	uint64_t sofar, errors, tx_bytes;
	uint64_t lost; /* of sofar, lost by the device later (in errors too); set at stop */
	/* the device's tx_dropped per queue at start, and the queues used since */
	uint64_t *drop0;
	unsigned int q_lo, q_hi;
	struct uskb_pktgen_pkt pkt;
	struct pg_tmpl *tmpl; /* the last frame kept, for copying (flow.c); NULL: none yet */
	struct pg_live *live; /* sending through the kernel's replay (live.c); NULL: by skbs */
	/*
	 * The number the next packet built carries: seq_num, as the kernel,
	 * plus what batch_xmit built and the device dropped (a dropped packet
	 * keeps its number there) or has not taken yet (pend: the busy tail
	 * of the last call, sent first in the next).
	 */
	uint32_t build_seq;
	/*
	 * Nothing but the per-packet fields changes (!__uskb_pg_headers_vary,
	 * set at start): after the run's first packet (primed) the next are
	 * built without mod_cur_headers, and once the template matched one
	 * (tmpl_same) without comparing its key.
	 */
	bool fixed, primed, tmpl_same;
	unsigned int npend;
	struct uskb *pend[PG_BATCH];
	/*
	 * A batch's time (flow.c, __uskb_pg_stamp_*): while hold, a packet
	 * built takes held_sec/held_usec (read at TSC held_tsc); one reading
	 * per `every` packets, from the pace of the last batch (begun at TSC
	 * batch_tsc, 0: not measured). restamped: packets whose reading aged
	 * in their chunk, stamped again (a preemption): uskb_count_add / _read.
	 */
	bool hold;
	unsigned int every;
	uint32_t held_sec, held_usec;
	uint64_t held_tsc, batch_tsc, restamped;
	/* a batch's skbs, allocated in one go for the template to fill (flow.c __uskb_pg_spare_*) */
	unsigned int nspare;
	struct uskb *spare[PG_BATCH];
};

struct pg_thread {
	struct uskb_pktgen *pg;
	int id, cpu;
	struct pg_dev *devs; /* newest first, as list_add_rcu */
	char result[RESULT_SZ];
	pthread_t th;
	struct uskb *vec[MAX_BURST];
	int res[MAX_BURST];
};

struct uskb_pktgen {
	int nthreads, ncpus;
	bool pin;
	uint64_t seed;
	bool seeded;
	unsigned int ndevs_made;
	struct pg_netdev *netdevs;
	_Atomic bool running, stop;
	/*
	 * The word every live program of this instance reads before it sends
	 * (live.c): uskb_pktgen_stop() sets it, and a call in the kernel stops
	 * sending at once. Mapped at the first live start (NULL until then).
	 */
	_Atomic(uint32_t *) live_stop;
	int live_stop_fd;
	pthread_mutex_t lock; /* serializes writes */
	struct pg_thread threads[];
};

/* ---- flow.c: the header state ---- */

/* the first packet's headers, at the start of a run */
USKB_HIDDEN void __uskb_pg_setup_inject(struct pg_dev *d);
/*
 * Whether mod_cur_headers() changes anything from packet to packet besides
 * what every packet changes (sequence number, time, IPv4 id): flows, MAC,
 * port or address ranges, random labels or tags, sizes, imix, queues.
 */
USKB_HIDDEN bool __uskb_pg_headers_vary(const struct pg_dev *d);
/* mod_cur_headers(), then the packet of those headers; NULL (result "No memory") */
USKB_HIDDEN struct uskb *__uskb_pg_fill_packet(struct pg_dev *d);
/* the same without the result (for a caller that holds pg->lock): NULL when memory ran out */
USKB_HIDDEN struct uskb *__uskb_pg_build_next(struct pg_dev *d);
/*
 * @n packets in a row, as many __uskb_pg_fill_packet, into @v, numbered
 * from d->build_seq on (which follows); fewer when memory ran out. Within
 * a batch's chunk (__uskb_pg_stamp_*) they take the time held.
 */
USKB_HIDDEN unsigned int __uskb_pg_build_run(struct pg_dev *d, struct uskb **v, unsigned int n);
/*
 * A batch's time: begin before its first packet is built; chunk after each
 * d->every packets built (@v, @n: that chunk's packets), which may stamp
 * them again; end after the last (@v, @n: the last chunk's; @built: the
 * batch's). Packets built between take one reading per chunk.
 */
USKB_HIDDEN void __uskb_pg_stamp_begin(struct pg_dev *d);
USKB_HIDDEN void __uskb_pg_stamp_chunk(struct pg_dev *d, struct uskb **v, unsigned int n);
USKB_HIDDEN void __uskb_pg_stamp_end(struct pg_dev *d, struct uskb **v, unsigned int n, unsigned int built);
/*
 * A batch of @n packets the template will make (every packet's frame is
 * the same but for its per-packet fields: d->tmpl_same): their skbs in
 * one uskb_alloc_bulk, taken by the packets built until spare_drop frees
 * what is left.
 */
USKB_HIDDEN void __uskb_pg_spare_fill(struct pg_dev *d, unsigned int n);
USKB_HIDDEN void __uskb_pg_spare_drop(struct pg_dev *d);

/* ---- xmit.c: running ---- */

/* pktgen_clear_counters() */
USKB_HIDDEN void __uskb_pg_clear_counters(struct pg_dev *d);
/* the per-queue transmit locks of @nd: 0 or -ENOMEM */
USKB_HIDDEN int __uskb_pg_locks_init(struct pg_netdev *nd);
USKB_HIDDEN void __uskb_pg_locks_free(struct pg_netdev *nd);
/* start: run every device until all stop; called with pg->lock held, dropped meanwhile */
USKB_HIDDEN int __uskb_pg_run(struct uskb_pktgen *pg);

/* ---- live.c: xdp-live: devices, whose kernel replays the first frame ---- */

/*
 * Set a run on a device with USKB_DEV_F_XDP_RUN up: refuse what the live
 * program cannot do, build the frame, load the program (d->live). 0, or
 * -errno with the reason in d->result (the device does not run). Called
 * with pg->lock held (dev_start).
 */
USKB_HIDDEN int __uskb_pg_live_start(struct pg_dev *d);
/*
 * Send *@n packets in one call, or fewer when *@n is more than an unpaced
 * call takes (live.c sizes those: *@n is then what the call tried); *ok:
 * how many went (the sequence number and the header state follow). 0 or
 * -errno.
 */
USKB_HIDDEN int __uskb_pg_live_send(struct pg_dev *d, uint32_t *n, uint64_t *ok);
/* the program and its state let go (d->live NULL); a no-op without */
USKB_HIDDEN void __uskb_pg_live_stop(struct pg_dev *d);
/* when the stop word halted @d's sending (CLOCK_MONOTONIC ns), 0: it did not */
USKB_HIDDEN uint64_t __uskb_pg_live_halted(const struct pg_dev *d);
/*
 * After a call: @ok (the call's) joins what the device counted, and the
 * state the program left becomes the device's. With pg->lock held, so that
 * readers see the counters and the program's count move together.
 */
USKB_HIDDEN void __uskb_pg_live_account(struct pg_dev *d, uint64_t ok);
/* what the program sent and live_account has not counted yet: a call's so far (pg->lock held) */
USKB_HIDDEN uint64_t __uskb_pg_live_unaccounted(const struct pg_dev *d);
/* the instance's stop word let go (uskb_pktgen_free) */
USKB_HIDDEN void __uskb_pg_live_free(struct uskb_pktgen *pg);

/* ---- show.c: the files and results; each returns the full length, as snprintf ---- */

USKB_HIDDEN int __uskb_pg_show_pgctrl(char *buf, size_t len);
USKB_HIDDEN int __uskb_pg_show_thread(const struct pg_thread *t, char *buf, size_t len);
USKB_HIDDEN int __uskb_pg_show_dev(const struct pg_dev *d, char *buf, size_t len);
/* the result line of a run that ended (show_results) into d->result */
USKB_HIDDEN void __uskb_pg_show_results(struct pg_dev *d, uint64_t elapsed, uint64_t idle,
					uint64_t sofar, int nr_frags);

#endif
