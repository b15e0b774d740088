/* SPDX-License-Identifier: MIT */
#ifndef USKB_TOOLS_DP_H
#define USKB_TOOLS_DP_H

/*
 * uskb-dp, a flow datapath between uskb devices whose misses go up as Open
 * vSwitch upcalls (seed 004). What its files share:
 *   main.c     options, ports, threads, the stats loop, the end;
 *   datapath.c the datapath threads: receive, look up, execute, upcall,
 *              apply the handlers' replies, expire flows;
 *   flow.c     the per-thread exact-match flow table, dumping flows;
 *   msg.c      every netlink message read or written here: upcalls parsed,
 *              FLOW_CMD_NEW and PACKET_CMD_EXECUTE built and parsed, keys and
 *              actions read back from attributes (libmnl);
 *   handler.c  the handler threads and their policy (a learning switch,
 *              rules), in-process or behind --handler-socket;
 *   rules.c    the rules file;
 *   pcap.c     --upcall-pcap (LINKTYPE_NETLINK).
 */

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <uskb/uskb.h>
#include <uskb/dev.h>
#include <uskb/ovs.h>

#include "lib/compiler.h"

#ifndef USKB_VERSION_STRING
#error "build with -DUSKB_VERSION_STRING=\"x.y.z\" (the Makefile's VERSION)"
#endif

#define DP_MAX_PORTS 32
#define DP_MAX_THREADS 64
#define DP_MAX_QUEUES 64 /* receive queues over all ports */
#define DP_MAX_HANDLERS 32
#define DP_MAX_ACTIONS 32
#define DP_MAX_USERDATA 64
#define DP_BURST 64

/* generic netlink family ids of this datapath ("ovs_packet", "ovs_flow") */
#define DP_FAMILY_PACKET 0x1e
#define DP_FAMILY_FLOW 0x1f
#define DP_FAMILY_VPORT 0x20 /* "ovs_vport": the ports, told to an external handler */

/* ---- a bounded single-producer single-consumer ring of pointers ---- */

struct ring {
	_Alignas(64) atomic_ulong head; /* consumer */
	_Alignas(64) atomic_ulong tail; /* producer */
	_Alignas(64) unsigned long mask;
	void *slot[];
};

struct ring *ring_new(unsigned int size); /* size: a power of two */
void ring_free(struct ring *r);

static inline bool ring_push(struct ring *r, void *v)
{
	unsigned long t = atomic_load_explicit(&r->tail, memory_order_relaxed);

	if (t - atomic_load_explicit(&r->head, memory_order_acquire) > r->mask)
		return false;
	r->slot[t & r->mask] = v;
	atomic_store_explicit(&r->tail, t + 1, memory_order_release);
	return true;
}

static inline void *ring_pop(struct ring *r)
{
	unsigned long h = atomic_load_explicit(&r->head, memory_order_relaxed);
	void *v;

	if (h == atomic_load_explicit(&r->tail, memory_order_acquire))
		return NULL;
	v = r->slot[h & r->mask];
	atomic_store_explicit(&r->head, h + 1, memory_order_release);
	return v;
}

/* a counter with one writer that other threads may read */
typedef _Atomic uint64_t counter_t;

static inline void cnt_add(counter_t *c, uint64_t n)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
			      memory_order_relaxed);
}

static inline uint64_t cnt_get(counter_t *c)
{
	return atomic_load_explicit(c, memory_order_relaxed);
}

/* ---- actions ---- */

struct action {
	uint16_t type; /* OVS_ACTION_ATTR_* */
	uint16_t tpid, tci; /* PUSH_VLAN (be) */
	uint32_t port;	    /* OUTPUT */
};

struct actions {
	int n;
	/* USERSPACE's OVS_USERSPACE_ATTR_USERDATA, whole (header included); one per list */
	uint16_t udlen;
	_Alignas(4) uint8_t userdata[DP_MAX_USERDATA];
	struct action a[DP_MAX_ACTIONS]; /* last: a flow keeps only the n it has */
};

/* the bytes of @a that matter (a flow is allocated with no more) */
#define ACTIONS_SIZE(n) (offsetof(struct actions, a) + (size_t)(n) * sizeof(struct action))

/* ---- ports and threads ---- */

struct port {
	unsigned int no; /* 1.. */
	const char *spec;
	struct uskb_dev *dev;
	unsigned int ntx; /* transmit queues in use */
	/*
	 * A device queue is one thread's at a time, receive and transmit
	 * alike (uskb/dev.h): a port that receives has its queues owned by
	 * their receiving threads, and others hand them frames to send
	 * (their inboxes). A port that only sends is shared under a lock
	 * per queue, when threads would share one.
	 */
	struct dpthread *rxthr[DP_MAX_QUEUES]; /* the owner of each receive queue */
	unsigned int nrx;
	pthread_mutex_t *txlock;
};

struct flow {
	struct flow *next;
	struct uskb_ovs_key key;
	uint32_t hash;
	uint64_t packets, bytes, used_ns, created_ns;
	struct actions acts; /* last, cut to its n actions */
};

struct table {
	struct flow **bucket;
	uint32_t mask;
	uint32_t count;
};

struct handler;

/* a receive queue a thread serves */
struct rxq {
	struct port *port;
	unsigned int q;
};

struct dpthread {
	unsigned int id;
	struct rxq rx[DP_MAX_QUEUES]; /* the queues it receives on (and sends on) */
	unsigned int nrx, next_rx;
	int txq[DP_MAX_PORTS]; /* per port: the queue it owns there, or -1 */
	pthread_t tid;
	struct table tab;
	/* replies from each handler (FLOW_CMD_NEW, PACKET_CMD_EXECUTE) */
	struct ring *replies[DP_MAX_HANDLERS];
	/* frames other threads want sent on this thread's queues, one ring per thread (port in cb[0]) */
	struct ring *inbox[DP_MAX_THREADS];
	uint64_t inflight;   /* misses queued whose EXECUTE has not come back */
	uint64_t next_sweep; /* when to look for idle flows next */
	uint64_t last_rx;    /* when a frame came last */
	uint64_t dumps_seen;
	unsigned int handler_gen; /* the external handler deaths this thread has settled */
	atomic_uint handler_ack;  /* the same, for the socket's reader to wait on */
	/* what stats show, written here only */
	counter_t hit, missed, lost, action_upcalls, flows, executed, bad_replies, flow_limit,
		bad_frames, expired, handoff_drops;
	counter_t orphaned; /* of lost: in flight to an external handler that died */
	/* frames to send, by port, flushed at the end of each burst */
	unsigned int nout[DP_MAX_PORTS];
	struct uskb *out[DP_MAX_PORTS][DP_BURST];
};

struct handler {
	unsigned int id;
	pthread_t tid;
	int efd;		 /* eventfd the datapath threads wake it with */
	atomic_int sleeping;
	struct ring *upcalls[DP_MAX_THREADS]; /* from each datapath thread */
	counter_t handled, action_upcalls, bad, sent_flows, sent_executes, refused;
};

/* ---- the run ---- */

struct dp {
	struct port port[DP_MAX_PORTS];
	unsigned int nports;
	struct dpthread *thr[DP_MAX_THREADS];
	unsigned int nthreads;
	struct handler *hnd[DP_MAX_HANDLERS];
	unsigned int nhandlers;
	/* options */
	bool copy, unaligned, json, quiet, dump_flows, verbose;
	unsigned int want_threads; /* --threads (0: one per receive queue) */
	unsigned int spin_us; /* --spin-us */
	unsigned int queue_len, flow_limit, idle_ms, handler_stall_ms;
	double stats_interval, duration;
	const char *upcall_pcap, *rules_file, *handler_socket;
	bool handler_only; /* --handler-of: this process only runs handlers */
	/*
	 * The external handler's socket (datapath side), -1 while there is
	 * none; SEQPACKET sends are atomic. Its reader owns it: at the
	 * handler's death it sets -1, counts the death in handler_gen, waits
	 * for each thread to settle it (handler_ack: what was in flight to the
	 * dead handler counted as lost), and only then closes it and takes the
	 * next handler.
	 */
	atomic_int hsock;
	atomic_uint handler_gen;
	counter_t ext_bad; /* replies from it that name no thread (its reader writes it) */
	counter_t handler_deaths; /* external handlers that died while the run went on (the reader) */
	atomic_int stop;
	atomic_ulong dump_request; /* SIGUSR1: each thread prints its flows */
	pthread_mutex_t print_lock;
};
extern struct dp dp;

uint64_t now_ns(void);

/* datapath.c */
int dp_thread_start(struct dpthread *t);
void dp_wake_handler(struct handler *h);
/* an upcall or reply for datapath thread @t arrived over --handler-socket */
void dp_deliver_reply(struct uskb *msg);
int dp_send_external(struct uskb *msg);

/* flow.c */
int table_init(struct table *tab, unsigned int limit);
void table_destroy(struct table *tab);
struct flow *table_lookup(struct table *tab, const struct uskb_ovs_key *key, uint32_t hash);
/* 0, -EEXIST (the flow's actions were replaced), -ENOSPC at the flow limit, -ENOMEM */
int table_insert(struct table *tab, const struct uskb_ovs_key *key, const struct actions *a,
		 unsigned int limit);
unsigned int table_expire(struct table *tab, uint64_t older_than_ns);
void flow_print(FILE *f, const struct flow *fl, uint64_t now);
void key_print(FILE *f, const struct uskb_ovs_key *k);
void actions_print(FILE *f, const struct actions *a);
uint32_t key_hash(const struct uskb_ovs_key *k);

/* msg.c: what a parsed message holds */
struct dp_msg {
	uint8_t genl_cmd;
	uint16_t family;
	uint32_t pid;
	const struct nlattr *key;     /* the KEY nest */
	const struct nlattr *actions; /* the ACTIONS nest (replies) */
	const struct nlattr *userdata;
	unsigned int pkt_off, pkt_len; /* where the packet's bytes are in the message */
	uint64_t hash;
	bool have_hash;
};
/*
 * Parse a message: @head holds its first @headlen bytes (every attribute
 * header, and every attribute but the packet, whole), @len is its length.
 * 0 or -EINVAL, with why in @why.
 */
int msg_parse(const uint8_t *head, size_t headlen, size_t len, struct dp_msg *m,
	      const char **why);
int msg_key(const struct nlattr *nest, struct uskb_ovs_key *k, const char **why);
/* msg_key(), and the key must be the datapath's own encoding of one (a flow's must) */
int msg_key_exact(const struct nlattr *nest, struct uskb_ovs_key *k, const char **why);
int msg_actions(const struct nlattr *nest, unsigned int nports, struct actions *a,
		const char **why);
int msg_put_actions(struct uskb *msg, int attrtype, const struct actions *a);
struct uskb *msg_flow_new(uint32_t pid, const struct nlattr *key, const struct actions *a);
/* EXECUTE for the packet of @upcall (a parsed message @m), the packet referenced */
struct uskb *msg_execute(struct uskb *upcall, const struct dp_msg *m, const struct actions *a);
/* the packet of a parsed message as an skb of its own (sharing the message's memory) */
struct uskb *msg_packet(struct uskb *msg, const struct dp_msg *m);
/* one sendmsg() of the head and the frags of @msg on @fd: 0, or -1 (errno) */
int msg_send(int fd, struct uskb *msg, int flags);

/* handler.c */
int handlers_start(void);
void handlers_stop(void);
int handler_process(struct handler *h, struct uskb *upcall, struct uskb **replies, int *nreplies);
int handler_external(const char *path); /* --handler-of PATH */

/* rules.c */
int rules_load(const char *path);
/* the actions of the first rule matching @k: 1 (in @a), 0 none, -1 "normal" */
int rules_match(const struct uskb_ovs_key *k, struct actions *a);
void rules_free(void);

/* pcap.c */
int pcap_open(const char *path);
void pcap_write(const struct uskb *msg);
void pcap_close(void);

#endif
