/* SPDX-License-Identifier: MIT */
#ifndef USKB_VHOST_H
#define USKB_VHOST_H

/**
 * @file vhost.h
 * A vhost-user net backend (libuskb-vhost): the guest's transmit goes to a
 * uskb device without a copy, as vhost-net's zero copy does (seed 002).
 * Each transmit chain becomes an skb whose frags point into the guest's
 * memory; the chain goes back to the guest (the used ring) only once the
 * device is done with the skb, and always in the order the guest made the
 * chains available. See docs/vhost.md.
 */

#include <stdbool.h>
#include <stdint.h>
#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

struct uskb_dev;
struct uskb_vhost;

/** Why a transmit chain was copied instead of sent in place. */
enum {
	USKB_VHOST_COPY_OFF,	 /**< zero copy switched off */
	USKB_VHOST_COPY_SMALL,	 /**< frame under the copy break (VHOST_GOODCOPY_LEN, 256) */
	USKB_VHOST_COPY_PEND,	 /**< 128 zero-copy buffers already out (VHOST_MAX_PEND) */
	USKB_VHOST_COPY_NOZC,	 /**< the device lacks USKB_DEV_F_ZEROCOPY */
	USKB_VHOST_COPY_ERR,	 /**< the device keeps reporting "copied" (tx_zcopy_err) */
	USKB_VHOST_COPY_SG,	 /**< more pieces than an skb has frags */
	USKB_VHOST_COPY_NR
};

/** One virtqueue's counters. */
struct uskb_vhost_qstats {
	uint64_t packets, bytes;      /**< frames the queue carried */
	uint64_t zcopied;	      /**< sent in place (guest transmit) */
	uint64_t copied[USKB_VHOST_COPY_NR]; /**< copied, by reason */
	uint64_t completions;	      /**< zero-copy skbs the device completed (counted as they go back) */
	uint64_t zcopy_err;	      /**< ... of which it had copied after all */
	uint64_t dropped;	      /**< frames the device dropped, or bad ones */
	uint32_t pending;	      /**< chains not yet back in the used ring */
	uint32_t errors;	      /**< 1 once the queue stopped on a guest error */
};

/** What uskb_vhost_new() takes. */
struct uskb_vhost_config {
	const char *socket;	/**< the unix socket to listen on (created) */
	struct uskb_dev *dev;	/**< the lower device (stays the caller's) */
	bool no_zcopy;		/**< copy every frame */
	unsigned int copybreak;	/**< 0: 256 */
	unsigned int max_pend;	/**< 0: 128 */
	/**
	 * Take at most this many frames from the guest (0: no limit); once
	 * they are taken and back, uskb_vhost_run() returns.
	 */
	uint64_t tx_limit;
	/**
	 * After the rings last had work, look at them again for this many
	 * microseconds without sleeping (vhost-net's busyloop_timeout): the
	 * guest need not kick meanwhile. 0: sleep at once until kicked.
	 */
	unsigned int busy_poll_us;
};

/** Listen on @cfg->socket. NULL and errno on failure (uskb_vhost_strerror()). */
USKB_API struct uskb_vhost *uskb_vhost_new(const struct uskb_vhost_config *cfg);
/** Why the last uskb_vhost_new() failed, or a stopped queue's message. */
USKB_API const char *uskb_vhost_strerror(const struct uskb_vhost *vh);
/**
 * Serve the frontend (one connection at a time; a new one may follow a
 * disconnect) for up to @timeout_ms (-1: until uskb_vhost_stop()).
 * 0, or -errno on a failure of the backend itself.
 */
USKB_API int uskb_vhost_run(struct uskb_vhost *vh, int timeout_ms);
/** Make uskb_vhost_run() return (async-signal-safe, any thread). */
USKB_API void uskb_vhost_stop(struct uskb_vhost *vh);
/**
 * Counters of virtqueue @q (even: guest receive, odd: guest transmit).
 * false when there is no such queue.
 */
USKB_API bool uskb_vhost_get_stats(const struct uskb_vhost *vh, unsigned int q,
				   struct uskb_vhost_qstats *st);
/** true while a frontend is connected and its memory mapped. */
USKB_API bool uskb_vhost_connected(const struct uskb_vhost *vh);
/**
 * Transmit chains a frontend never got back: it went while the device
 * still held them, past the drain's bound (10 s, or a stop). They are kept
 * with the memory they point into until the device completes them, but
 * their frontend cannot learn what became of them. A count over the
 * backend's life; any thread.
 */
USKB_API uint64_t uskb_vhost_abandoned(const struct uskb_vhost *vh);
/** Wait for the zero-copy buffers still out, unmap, close. */
USKB_API void uskb_vhost_free(struct uskb_vhost *vh);

#ifdef __cplusplus
}
#endif

#endif
