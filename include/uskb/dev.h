/* SPDX-License-Identifier: MIT */
#ifndef USKB_DEV_H
#define USKB_DEV_H

/**
 * @file dev.h
 * The device layer (struct net_device + ndo_start_xmit): transmit backends
 * with feature flags, a burst transmit with a result per skb, and counters.
 * Devices are named by spec strings:
 *   "null"        consumes every skb (pktgen into a dummy device);
 *   "null:nocsum" the same without checksum offload;
 *   "pcap:FILE"   writes each frame — head, frags and frag_list — to a
 *                 classic pcap file (Ethernet, microsecond timestamps);
 *   "packet:IFNAME[:mmsg]"  a real interface through AF_PACKET (TX ring
 *                 with qdisc bypass, or sendmmsg; a TPACKET_V3 ring to
 *                 receive); a bare interface name means the same
 *                 (docs/devices.md);
 *   "xdp:IFNAME[:QUEUE][:copy|:zc]"  AF_XDP;
 *   "xdp-live:IFNAME"  frames sent from inside the kernel: an XDP program
 *                 run on them in live-frames mode (BPF_PROG_RUN), its
 *                 XDP_TX out of the interface (uskb_dev_xdp_run());
 *   "udp:HOST:PORT[,OPT...]", "tcp:HOST:PORT[,OPT...]", "unix:PATH[,OPT...]"
 *                 frames through a kernel socket, framed as QEMU's -netdev
 *                 dgram and stream; options copy, zc (MSG_ZEROCOPY), uring
 *                 (io_uring send_zc), gso, listen, local=, copybreak=,
 *                 inflight= (uskb_dev_open(3)).
 *
 * Receiving (uskb_dev_rx) is zero-copy where it pays: a frame longer than
 * uskb_zerocopy_min_len() becomes an skb whose head holds the first
 * USKB_ZC_GOODCOPY_LEN bytes and whose frag points into the memory the
 * kernel wrote it to (a ring block); that memory goes back to the kernel
 * when the last skb on it is freed. Shorter frames are copied whole.
 */

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

struct uskb;

/** Feature flags (NETIF_F_*). */
enum {
	USKB_DEV_F_SG = 1 << 0,		 /**< takes paged skbs (NETIF_F_SG) */
	USKB_DEV_F_IP_CSUM = 1 << 1,	 /**< completes CHECKSUM_PARTIAL for IPv4 */
	USKB_DEV_F_IPV6_CSUM = 1 << 2,	 /**< ... and for IPv6 */
	/**
	 * Sends user frags without copying them: each skb completes only once
	 * the device is done with its memory (udp:, tcp: in zc and uring mode,
	 * after the kernel's notification; null at once). A device without it
	 * copies the bytes in xmit (packet:, xdp:, pcap:, the sockets' copy mode).
	 */
	USKB_DEV_F_ZEROCOPY = 1 << 3,
	USKB_DEV_F_TX_SKB_SHARING = 1 << 4, /**< an skb may be sent while still shared (IFF_TX_SKB_SHARING) */
	USKB_DEV_F_MTU = 1 << 5,	 /**< drops frames past mtu + 14 (one VLAN tag: + 4), as a real interface */
	/**
	 * Takes TCP GSO skbs (gso_size, gso_type USKB_GSO_TCPV4/TCPV6,
	 * CHECKSUM_PARTIAL) of up to 64 KiB past the MTU, and has them
	 * segmented (NETIF_F_TSO | NETIF_F_TSO6: tap:, whose kernel does it);
	 * for IPv4 with USKB_DEV_F_IP_CSUM, for IPv6 with USKB_DEV_F_IPV6_CSUM.
	 */
	USKB_DEV_F_TSO = 1 << 6,
	/**
	 * Runs an XDP program on a frame in the kernel, many times over, and
	 * sends what it returns XDP_TX for (uskb_dev_xdp_run(): xdp-live:).
	 */
	USKB_DEV_F_XDP_RUN = 1 << 7,
};

/** Per-skb transmit result (netdev_tx_t / NET_XMIT_*). */
enum {
	USKB_XMIT_OK = 0,   /**< sent; the device consumed the skb reference */
	USKB_XMIT_DROP = 1, /**< dropped; the device consumed the skb reference */
	USKB_XMIT_BUSY = 2, /**< not taken: the reference is still the caller's */
};

struct uskb_dev_stats {
	uint64_t tx_packets;  /**< sent; frames taken and lost later move to tx_dropped */
	uint64_t tx_bytes;
	uint64_t tx_dropped;  /**< refused by the device, or taken and lost later */
	uint64_t tx_busy;
	uint64_t rx_packets;
	uint64_t rx_bytes;
	uint64_t rx_dropped;  /**< lost by the kernel: its ring was full */
	uint64_t rx_copied;   /**< frames copied whole (shorter than the copy break) */
	uint64_t rx_orphaned; /**< ring blocks copied out: skbs held past the patience */
	uint64_t tx_zc;	      /**< zero-copy sends the kernel completed without a copy */
	uint64_t tx_zc_copied; /**< zero-copy sends the kernel copied after all */
	uint64_t tx_zc_fallback; /**< times the device gave up zero copy (the kernel kept copying) */
	uint64_t tx_zc_fixed; /**< frames sent from memory registered with the kernel once (uring) */
	/* library-private: frames (and bytes) found lost, still to leave tx_packets */
	uint64_t __tx_unsent, __tx_unsent_bytes;
} __attribute__((aligned(64))); /* one per queue, each on its own cache lines */

struct uskb_dev;

struct uskb_dev_ops {
	const char *type; /**< the spec prefix */
	int (*open)(struct uskb_dev *dev, const char *arg);
	void (*close)(struct uskb_dev *dev);
	/** Send @n skbs on @queue; fill @res[i] with USKB_XMIT_*. */
	void (*xmit)(struct uskb_dev *dev, unsigned int queue, struct uskb **skbs, int n,
		     int *res);
	/**
	 * Optional: push out what xmit queued without sending yet (a device may
	 * hold a few frames to send them in one call, as the kernel's
	 * xmit_more). Callers flush before they wait and when they stop.
	 */
	void (*flush)(struct uskb_dev *dev, unsigned int queue);
	/**
	 * Optional: receive up to @max skbs from @queue, waiting up to
	 * @timeout_ms (0: do not wait, -1: forever) when none is ready.
	 * Returns how many, or -errno.
	 */
	int (*rx)(struct uskb_dev *dev, unsigned int queue, struct uskb **skbs, int max,
		  int timeout_ms);
};

struct uskb_dev {
	char name[64];
	const struct uskb_dev_ops *ops;
	uint32_t features; /**< USKB_DEV_F_* */
	unsigned int mtu;  /**< largest frame without the Ethernet header */
	unsigned int nqueues;
	unsigned int nrxqueues; /**< queues uskb_dev_rx takes (0 .. nrxqueues-1); 0: none */
	uint8_t mac[6];
	/**
	 * Counters, one set per queue (nqueues): each is written only by the
	 * thread using that queue. Read them with uskb_dev_get_stats(). A
	 * device set up by hand (not by uskb_dev_open) may leave it NULL: it
	 * then has no counters.
	 */
	struct uskb_dev_stats *qstats;
	/**
	 * How long a received skb may keep the kernel's memory (ms, default
	 * 100): past it — or when too much of the ring is held, or when the
	 * kernel filling a packet: ring in order is within half a ring of
	 * it — the memory is
	 * copied out (orphaned), the skbs on it switched to the copy, and
	 * the memory given back 10 ms later. Checked while receiving. Keep
	 * the skb, not a pointer into a frag's memory: such a pointer is good
	 * for the patience plus those 10 ms only.
	 */
	unsigned int rx_patience_ms;
	void *priv;
	/**
	 * Why the device last failed after it was opened (a queue set up on
	 * first use, a send the kernel refused): read it with
	 * uskb_dev_last_error(). Empty when nothing failed.
	 */
	char last_error[160];
	uint64_t __open_id; /* library-private: unique per uskb_dev_open() */
	/**
	 * The kernel interface the device sends on (packet:, xdp:), in the
	 * network namespace it was opened in; 0 for devices without one
	 * (null, pcap). pktgen takes an unset source address from it.
	 */
	unsigned int ifindex;
	unsigned int __down; /* library-private: see uskb_dev_running() */
};

/**
 * Threads: a queue is used by one thread at a time (transmit, flush and
 * receive on it); different queues of one device may be used by different
 * threads at once.
 */

/**
 * Open a device from its spec ("null", "pcap:FILE"). NULL + errno (EINVAL
 * for an unknown type or a missing argument; the open's own errno
 * otherwise). uskb_dev_strerror() describes the last failure of this thread.
 */
USKB_API struct uskb_dev *uskb_dev_open(const char *spec);
/**
 * One line explaining why the calling thread's last uskb_dev_open() failed,
 * or its last uskb_dev_spec_receives() that found no device.
 */
USKB_API const char *uskb_dev_strerror(void);
/**
 * Whether the device @spec names can receive (its type has rx), decided
 * without opening it: nothing is created, bound or truncated. Only the
 * type is asked ("packet:nosuch0" receives; its open fails). When false,
 * errno is 0 if @spec names a device whose type cannot receive, ENODEV if
 * it is a bare name that is no interface (nor a type), EINVAL for an
 * unknown type or an empty @spec: uskb_dev_strerror() then says why, as
 * uskb_dev_open() would.
 */
USKB_API bool uskb_dev_spec_receives(const char *spec);
/**
 * Copy why @dev last failed after its open (see struct uskb_dev's
 * last_error) into @buf; the text's length (0: nothing failed), or -EINVAL.
 */
USKB_API int uskb_dev_last_error(const struct uskb_dev *dev, char *buf, size_t len);
/**
 * Add a device type: uskb_dev_open("TYPE:ARG") then calls @ops->open (open
 * and xmit are required). @ops must outlive every device of its type.
 * 0, -EEXIST for a type that is already there, -EINVAL for a type with a
 * ':' or without open/xmit, -ENOSPC past 32 types.
 */
USKB_API int uskb_dev_register(const struct uskb_dev_ops *ops);
/**
 * netif_running(): false once the device found its interface deleted or
 * down (uskb_dev_last_error() says which). It then drops every frame and
 * stays down: close it and open it again when the interface is back.
 */
USKB_API bool uskb_dev_running(const struct uskb_dev *dev);
/** Flush and close; NULL is ignored. */
USKB_API void uskb_dev_close(struct uskb_dev *dev);
/**
 * Transmit a burst: the device consumes the reference of every skb it
 * reports OK or DROP; BUSY ones stay the caller's. BUSY ones are a tail:
 * once one is BUSY, so is every later one (the built-in devices; a
 * registered device must do the same, or its callers lose their order).
 * @res may be NULL. Returns how many were sent (OK).
 */
USKB_API int uskb_dev_xmit(struct uskb_dev *dev, unsigned int queue, struct uskb **skbs,
			   int n, int *res);

/**
 * Receive up to @max skbs from @queue of @dev, waiting up to @timeout_ms
 * (0: return at once, -1: no limit) when none is ready. The first call
 * starts receiving (sets up the ring). Each skb is the caller's, its
 * mac_header at the Ethernet header, protocol set, tstamp the kernel's
 * receive time (CLOCK_REALTIME ns) where the device has one. Returns how
 * many (0 on timeout, or -EINTR when a signal arrived), -EOPNOTSUPP for a
 * device (or a queue: see nrxqueues) that cannot receive, or another
 * -errno. packet: receives everything on queue 0; xdp: on every queue.
 */
USKB_API int uskb_dev_rx(struct uskb_dev *dev, unsigned int queue, struct uskb **skbs, int max,
			 int timeout_ms);

/**
 * The counters of @queue, or the sum over all queues when @queue < 0. May
 * be called while other threads use the device (the figures are then a
 * moment's).
 */
USKB_API void uskb_dev_get_stats(const struct uskb_dev *dev, int queue, struct uskb_dev_stats *st);

/**
 * The kernel's replay of one frame (xdp-live: devices): the XDP program
 * @prog_fd runs on @frame (@len bytes, an Ethernet frame) @repeat times in
 * live-frames mode (BPF_PROG_RUN with BPF_F_TEST_XDP_LIVE_FRAMES, Linux
 * 5.18+), @batch frames at a time (0: the kernel's 64), on the calling
 * CPU; every copy the program returns XDP_TX for is handed to the
 * interface (@queue is the run's rx_queue_index: the driver picks its
 * transmit queue, a veth by CPU). Each run starts from @frame or from a
 * copy the program already changed (the kernel recycles them): the
 * program writes every field it changes. @sent, where the program counts
 * the frames it sent (NULL: a complete run counts all, an interrupted one
 * none), gives the device's counters their exact growth; drops by the
 * kernel after the program (interface down, no XDP transmit in the
 * driver) are not seen. 0; -EINTR when a signal cut the run short (@sent
 * says how far it got); -EMSGSIZE for a frame past the MTU or a page;
 * -ENETDOWN once the interface is gone or down; -EOPNOTSUPP for a device
 * of another type; or the kernel's -errno.
 */
USKB_API int uskb_dev_xdp_run(struct uskb_dev *dev, unsigned int queue, int prog_fd,
			      const void *frame, unsigned int len, uint32_t repeat, uint32_t batch,
			      const volatile uint64_t *sent);

/** Push out frames @dev holds back for batching (ops->flush); a no-op for most. */
USKB_API void uskb_dev_flush(struct uskb_dev *dev, unsigned int queue);
/**
 * Before a pause or the end: uskb_dev_flush(), then, for a stream (tcp:,
 * unix:), up to @timeout_ms for the peer to take what was sent (a frame
 * half out finished; TCP: every byte acknowledged, the zero-copy sends
 * completed). A peer that has not by then loses the frames it did not
 * acknowledge: they move from tx_packets to tx_dropped, with the reason in
 * uskb_dev_last_error(), and the connection is reset so that they are
 * never sent late (a listening device waits for its next peer, a
 * connecting one goes down). A peer that took everything keeps its
 * connection. For other devices the same as uskb_dev_flush().
 */
USKB_API void uskb_dev_drain(struct uskb_dev *dev, unsigned int queue, int timeout_ms);

#ifdef __cplusplus
}
#endif
#endif
