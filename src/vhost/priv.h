/* SPDX-License-Identifier: MIT */
/* The vhost-user backend's private state (proto.c: the socket and the
 * memory table; vring.c: the split rings and guest transmit). */
#ifndef USKB_VHOST_PRIV_H
#define USKB_VHOST_PRIV_H

#include <linux/virtio_net.h>
#include <pthread.h>
#include <linux/virtio_ring.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "lib/compiler.h"
#include "uskb/skb.h"
#include "uskb/ubuf.h"
#include "uskb/vhost.h"

#define VH_MAX_REGIONS 8
#define VH_MAX_QUEUES 2		/* one queue pair (MQ: not yet) */
#define VH_MAX_RING 32768	/* the largest split ring virtio allows */
#define VH_MAX_IOV 64		/* pieces of one chain, after splitting at region ends */
#define VH_BURST 32
#define VH_HEAD_COPY 128	/* bytes of a zero-copy frame that go in the skb's head */
#define VH_WEIGHT 256		/* chains a queue takes before the loop looks elsewhere */

struct vh_region {
	uint64_t gpa, size, uva;
	uint8_t *host;		/* the region's guest-physical start, mapped here */
	void *map;		/* the mmap, which may start before host (mmap_offset) */
	size_t map_len;
};

/* one transmit chain out with a zero-copy skb (or copied, done at once) */
struct vh_pend {
	struct uskb_ubuf_desc u; /* first: the completion finds the entry from it */
	atomic_bool done;
	bool zc;
	bool copied;		/* the device copied after all (written before done) */
	struct uskb_page pages[USKB_MAX_SKB_FRAGS];
};

/* the chains a stopped queue could not wait for, and the memory they point into */
struct vh_kept {
	struct vh_kept *next;
	atomic_bool lost;	/* a SIGBUS in its memory (guard.c): nobody's connection to close */
	struct vh_pend *pend;
	uint32_t head, tail;	/* the entries still out: tail .. head - 1 (mod num) */
	uint16_t num;
	unsigned int nregions;
	struct vh_region reg[VH_MAX_REGIONS];
};

struct vh_queue {
	unsigned int idx;
	uint16_t num;
	bool enabled, started, broken, have_addr, kicked;
	bool no_notify;		/* we set VRING_USED_F_NO_NOTIFY (no EVENT_IDX) */
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;
	uint64_t desc_uva, avail_uva, used_uva;
	uint16_t last_avail;	/* the next avail entry to take */
	uint16_t used_idx;	/* our copy of used->idx */
	uint16_t signalled;	/* used_idx at the last call (EVENT_IDX) */
	bool signalled_valid;
	int kick_fd, call_fd, err_fd;
	/* chains in avail order: [tail, head) are out; pend[i % num] */
	struct vh_pend *pend;
	uint32_t pend_head, pend_tail;
	uint32_t nzc;		/* zero-copy entries among them */
	uint32_t win_packets;	/* frames in this window of 1024 (the err rule) */
	uint64_t win_err;	/* zcopy_err when the window began */
	struct uskb *backlog[VH_BURST]; /* skbs the device was too busy to take */
	unsigned int nbacklog;
	struct uskb *rx_skb;	/* receive: a frame waiting for guest buffers */
	struct uskb_vhost_qstats st; /* this thread's; copied out under the stats lock */
};

struct uskb_vhost {
	struct uskb_vhost_config cfg;
	char *path;
	int lfd, cfd;		/* listening, connected */
	atomic_bool connected;	/* cfd open and guest memory mapped (for other threads) */
	bool spinning;		/* busy polling: the rings are looked at again without a kick */
	uint64_t spin_until;	/* ... until then (CLOCK_MONOTONIC ns) */
	unsigned int spins;	/* rounds spun: the socket is looked at every 64 (across calls) */
	/*
	 * Chains the device had not given back when their connection went
	 * (after the drain's bound): their entries, and the guest memory their
	 * frags point into, are kept until the device completes them all
	 * (proto.c: reap_kept); the next frontend is served meanwhile.
	 * keep_maps: the connection going now left some; its regions join
	 * the newest record instead of being unmapped.
	 */
	struct vh_kept *kept;
	bool keep_maps;
	atomic_uint_fast64_t abandoned; /* chains kept so: never back to the frontend they came from */
	atomic_bool mem_lost;	/* a region's file shrank under it: SIGBUS, recovered (guard.c) */
	int stop_fd;		/* eventfd: uskb_vhost_stop() */
	uint64_t features, protocol_features;
	bool owner;
	unsigned int nregions;
	struct vh_region reg[VH_MAX_REGIONS];
	struct vh_queue q[VH_MAX_QUEUES];
	unsigned int hdr_len;	/* virtio-net header: 12 with VERSION_1 or MRG_RXBUF, else 10 */
	char err[256];
	bool dev_down_said;	/* the lower device went down, and that was said */
	atomic_bool stopping;	/* uskb_vhost_stop() was called (until the next uskb_vhost_run()) */
	pthread_mutex_t stats_lock;
	struct uskb_vhost_qstats pub[VH_MAX_QUEUES];
};

/*
 * A full barrier between our store to guest memory and our load of the
 * guest's (used index, then its event index). TSan has no fences: there a
 * locked add stands in for one (the same instruction on x86).
 */
static inline void vh_mb(void)
{
#if defined(__SANITIZE_THREAD__)
	static _Atomic int x;

	atomic_fetch_add_explicit(&x, 0, memory_order_seq_cst);
#else
	atomic_thread_fence(memory_order_seq_cst);
#endif
}

/* the frames the caller asked for (tx_limit) are taken */
static inline bool vh_limited(const struct uskb_vhost *vh, const struct vh_queue *q)
{
	return vh->cfg.tx_limit && q->st.packets >= vh->cfg.tx_limit;
}

/* vring.c */
USKB_HIDDEN void *__uskb_vh_gpa(struct uskb_vhost *vh, uint64_t gpa, uint64_t len);
USKB_HIDDEN void *__uskb_vh_uva(struct uskb_vhost *vh, uint64_t uva, uint64_t len);
USKB_HIDDEN int __uskb_vh_queue_start(struct uskb_vhost *vh, struct vh_queue *q);
USKB_HIDDEN void __uskb_vh_queue_stop(struct uskb_vhost *vh, struct vh_queue *q);
/* tx, rx: true when they moved something (a busy-polling loop keeps spinning) */
USKB_HIDDEN bool __uskb_vh_tx(struct uskb_vhost *vh, struct vh_queue *q);
USKB_HIDDEN unsigned int __uskb_vh_retire(struct uskb_vhost *vh, struct vh_queue *q);
USKB_HIDDEN bool __uskb_vh_rx(struct uskb_vhost *vh, struct vh_queue *q);
USKB_HIDDEN void __uskb_vh_fail(struct uskb_vhost *vh, struct vh_queue *q, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
USKB_HIDDEN void __uskb_vh_publish(struct uskb_vhost *vh);
/* guard.c: a region's mapping watched for SIGBUS, which sets *@lost; 0 or -ENOSPC */
USKB_HIDDEN int __uskb_vh_guard_add(void *map, size_t len, atomic_bool *lost);
USKB_HIDDEN void __uskb_vh_guard_del(void *map);
/* the mapping's SIGBUS now sets *@lost */
USKB_HIDDEN void __uskb_vh_guard_move(void *map, atomic_bool *lost);

#endif
