/* SPDX-License-Identifier: MIT */
/* Zero-copy receive out of a kernel-shared region (rxzc.c). */
#ifndef USKB_RXZC_H
#define USKB_RXZC_H

#include <stdatomic.h>
#include "dev/priv.h"
#include "uskb/page.h"

struct rxzc;

/* One hand-over of a slot's memory: a ubuf and a page descriptor over it. */
struct rxzc_unit {
	struct uskb_ubuf ubuf;	/* first: the completion finds the unit from it */
	struct uskb_page page;	/* over the slot's memory, or the copy of it */
	struct rxzc *zc;	/* NULL once orphaned: the unit lives on alone */
	struct uskb_page *copy;
	uint64_t held_since;	/* when the device let go of it */
	unsigned int used;	/* the slot's bytes up to the end of its last frag: what a copy-out copies */
	atomic_int state;
	unsigned int idx;
};

struct rxzc {
	atomic_bool dead;	/* the owner is closing: nothing goes back */
	unsigned int n, order;
	unsigned int copybreak; /* frames shorter than this are copied whole (rxzc_tune) */
	uint64_t patience_ns;
	uint64_t copied, orphaned; /* receiving thread only */
	void (*give_back)(struct rxzc *zc, unsigned int idx);
	/* created without a give_back: the slots given back, a lock-free stack (any thread pushes) */
	_Atomic uint32_t ret_head;
	uint32_t *ret_next;
	void *owner;
	void *(*addr_of)(void *owner, unsigned int idx);
	struct rxzc_unit *slot[]; /* changed by the receiving thread only */
};

/*
 * At the start of each receive call: the device's patience and the
 * library's copy break (never within the 128 bytes the head copies).
 */
static inline void rxzc_tune(struct rxzc *zc, unsigned int patience_ms)
{
	unsigned int cb = uskb_zerocopy_min_len();

	zc->patience_ns = (uint64_t)patience_ms * 1000000ull;
	zc->copybreak = cb > USKB_ZC_GOODCOPY_LEN ? cb : USKB_ZC_GOODCOPY_LEN + 1;
}

/* At its end: the counts the receiving thread keeps, into the queue's counters. */
static inline void rxzc_publish(const struct rxzc *zc, struct uskb_dev_stats *q)
{
	__atomic_store_n(&q->rx_copied, zc->copied, __ATOMIC_RELAXED);
	__atomic_store_n(&q->rx_orphaned, zc->orphaned, __ATOMIC_RELAXED);
}

/*
 * n slots of 4 KiB << order; addr_of(owner, i) is slot i's memory. A slot
 * whose last skb went is handed to give_back(zc, i) on whichever thread
 * freed it; with give_back NULL it goes onto a stack of the rxzc's own that
 * the receiving thread empties with __uskb_rxzc_take().
 */
USKB_HIDDEN struct rxzc *__uskb_rxzc_create(unsigned int n, unsigned int order,
				void *(*addr_of)(void *, unsigned int),
				void (*give_back)(struct rxzc *, unsigned int), void *owner);

#define RXZC_NONE UINT32_MAX
/*
 * The slots given back since the last call (the stack of a give_back-less
 * rxzc): the first, or RXZC_NONE; rxzc_next() walks to the others.
 */
USKB_HIDDEN uint32_t __uskb_rxzc_take(struct rxzc *zc);
static inline uint32_t rxzc_next(const struct rxzc *zc, uint32_t i)
{
	return zc->ret_next[i];
}
/* slot i's memory is still out (with skbs): the kernel cannot have it yet */
USKB_HIDDEN bool __uskb_rxzc_busy(const struct rxzc *zc, unsigned int i);
/* the kernel handed slot i over: the device walks it */
USKB_HIDDEN void __uskb_rxzc_open(struct rxzc *zc, unsigned int i);
/* an skb for the frame at data (inside slot i): copied below copybreak, else a frag */
USKB_HIDDEN struct uskb *__uskb_rxzc_skb(struct rxzc *zc, unsigned int i, const void *data, unsigned int len);
/* the device is through with slot i: it goes back once its skbs are gone */
USKB_HIDDEN void __uskb_rxzc_done(struct rxzc *zc, unsigned int i, uint64_t now);
/*
 * Copy out slots held past the patience, and (a region whose free slots the
 * kernel takes in any order: next RXZC_NONE) others while fewer than
 * min_free are not out, or (a ring the kernel fills in order, next the slot
 * it fills now or soon) those in the half of the ring from next: the
 * others it will not need before it has been round. Give back the memory
 * of slots copied out at least 10 ms ago.
 */
USKB_HIDDEN void __uskb_rxzc_patience(struct rxzc *zc, uint64_t now, unsigned int min_free,
				      unsigned int next);
/* copy out everything still held; after it nothing touches the region */
USKB_HIDDEN void __uskb_rxzc_destroy(struct rxzc *zc);

#endif
