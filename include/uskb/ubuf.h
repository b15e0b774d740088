/* SPDX-License-Identifier: MIT */
#ifndef USKB_UBUF_H
#define USKB_UBUF_H

/**
 * @file ubuf.h
 * Zero-copy user buffers (struct ubuf_info): an application's own memory
 * travels in skb frags without a copy, and its owner is told exactly once
 * when no skb references that memory any more — or that it was copied,
 * when somebody (a clone for a tap, a loop to receive) would have held it
 * too long. See docs/zerocopy.md for the lifetime rules.
 *
 * Reference counting (as the kernel's): each skb shared info that carries
 * user frags holds one reference on the ubuf, dropped at its last data
 * reference; the sender holds one more while it builds the skbs and drops
 * it with uskb_zcopy_put(). **Difference from the kernel:** the library
 * counts the references and calls ops->complete exactly once, when the count
 * reaches zero, with success = false if any holder had to copy the data;
 * the kernel calls ->complete at every drop and leaves counting to it.
 */

#include <stdatomic.h>
#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

struct uskb;
struct uskb_ubuf;

/** ubuf_info_ops. */
struct uskb_ubuf_ops {
	/**
	 * The last reference is gone. @skb is the skb whose release dropped
	 * it (NULL when the sender's own reference was last). @success is
	 * false when the data was copied somewhere on the way (the
	 * MSG_ZEROCOPY "copied" mark). Runs on whichever thread dropped the
	 * reference. After it returns the library never touches the user
	 * memory again.
	 */
	void (*complete)(struct uskb *skb, struct uskb_ubuf *uarg, bool success);
	/** Optional (io_uring): called when an skb takes the ubuf; 0 or -errno. */
	int (*link_skb)(struct uskb *skb, struct uskb_ubuf *uarg);
};

/** struct ubuf_info. */
struct uskb_ubuf {
	const struct uskb_ubuf_ops *ops;
	atomic_int refcnt;
	uint8_t flags;		/**< USKB_SKBFL_* the skbs inherit */
	atomic_bool copied;	/**< somebody copied the data (success = false) */
	void *priv;		/**< library-owned (user page descriptors) */
};

/**
 * The vhost / tap flavour (the other half of struct ubuf_info_msgzc): the
 * owner's descriptor (vhost: the ring index of the buffer) and context
 * (vhost: its per-queue ubufs). Embed it and recover it from the ubuf in
 * ->complete; flags USKB_SKBFL_ZEROCOPY_FRAG (no DONT_ORPHAN: a clone that
 * could be held copies the data).
 */
struct uskb_ubuf_desc {
	struct uskb_ubuf ubuf;
	unsigned long desc;
	void *ctx;
};

/**
 * Set up @uarg with one reference (the sender's) and @flags (typically
 * USKB_SKBFL_ZEROCOPY_FRAG, plus USKB_SKBFL_DONT_ORPHAN for MSG_ZEROCOPY).
 */
USKB_API void uskb_ubuf_init(struct uskb_ubuf *uarg, const struct uskb_ubuf_ops *ops,
			     uint8_t flags);

/** skb_zcopy(): the skb's ubuf, or NULL. */
USKB_API struct uskb_ubuf *uskb_zcopy(const struct uskb *skb);
/**
 * skb_zcopy_init(): attach @uarg to a fresh @skb, moving the caller's
 * reference into it.
 */
USKB_API void uskb_zcopy_init(struct uskb *skb, struct uskb_ubuf *uarg);
/**
 * skb_zcopy_set(): attach @uarg to a non-zero-copy @skb. With *have_ref
 * true the caller's reference moves in (and *have_ref becomes false);
 * otherwise a new reference is taken. @have_ref may be NULL.
 */
USKB_API void uskb_zcopy_set(struct uskb *skb, struct uskb_ubuf *uarg, bool *have_ref);
/**
 * skb_zcopy_clear(): drop the skb's ubuf reference (success as given) and
 * clear the zero-copy flags.
 */
USKB_API void uskb_zcopy_clear(struct uskb *skb, bool success);
/** net_zcopy_get(): one more reference. */
USKB_API void uskb_zcopy_get(struct uskb_ubuf *uarg);
/** net_zcopy_put(): drop the sender's reference (success). */
USKB_API void uskb_zcopy_put(struct uskb_ubuf *uarg);
/**
 * net_zcopy_put_abort(): the send failed before any skb took the data.
 * For a MSG_ZEROCOPY ubuf the send's number is given back (the counter and
 * the ubuf's len go down by one); then the sender's reference is dropped
 * if @have_uref.
 */
USKB_API void uskb_zcopy_put_abort(struct uskb_ubuf *uarg, bool have_uref);
/**
 * skb_zerocopy_clone(): let @nskb share @orig's ubuf (a reference more).
 * If @nskb carries a different ubuf, its data is copied first.
 * 0 or -EIO (copy failed).
 */
USKB_API int uskb_zerocopy_clone(struct uskb *nskb, struct uskb *orig);

/**
 * skb_copy_ubufs(): copy the user frags into private pages (the smallest
 * page order whose 17 frags can hold them), release the user frags and
 * drop the ubuf with success = false. -EINVAL when shared, -ENOMEM.
 */
USKB_API int uskb_copy_ubufs(struct uskb *skb);
/**
 * skb_orphan_frags(): copy unless DONT_ORPHAN (a MSG_ZEROCOPY send may be
 * held: its owner waits for the notification). 0 or -errno.
 */
USKB_API int uskb_orphan_frags(struct uskb *skb);
/** skb_orphan_frags_rx(): always copy (the skb may loop to a receiver). */
USKB_API int uskb_orphan_frags_rx(struct uskb *skb);

/**
 * skb_zcopy_downgrade_managed(): frags whose references the ubuf owns
 * (MANAGED_FRAG_REFS) get references of the skb's own.
 */
USKB_API void uskb_zcopy_downgrade_managed(struct uskb *skb);

/* ---- skb_zerocopy: a message built on a packet's data ---- */

/**
 * skb_zerocopy_headlen(): how many bytes uskb_zerocopy() must copy into the
 * head of the new message: none when @from's head is a page fragment of a
 * useful size (it then travels as frag 0), all of the linear part
 * otherwise, all of the packet when there is a frag_list.
 */
USKB_API unsigned int uskb_zerocopy_headlen(const struct uskb *from);
/**
 * skb_zerocopy(): append @len bytes of @from to @to without copying the
 * payload: @hlen bytes are copied into @to's head (or, with @hlen 0, @from's
 * head page becomes frag 0: a kmalloc head may take @hlen 0 only when it is
 * empty), then @from's frags are referenced, and @to
 * shares @from's ubuf. Everything is copied when @len fits @to's tailroom.
 * @to needs room for the frags (its caller sized it with
 * uskb_zerocopy_headlen()). 0, -EFAULT (bad lengths) or -ENOMEM (user
 * memory could not be copied out; @to must then be freed).
 */
USKB_API int uskb_zerocopy(struct uskb *to, struct uskb *from, int len, int hlen);

/* ---- MSG_ZEROCOPY: ids, coalescing and the notification queue ---- */

/**
 * The socket-side state of MSG_ZEROCOPY (struct sock's sk_zckey and error
 * queue): a counter that numbers sends and a queue of completion ranges the
 * application reads. Create with uskb_zc_sock_create(); ubufs in flight keep
 * it alive after uskb_zc_sock_destroy().
 */
struct uskb_zc_sock;

/** One notification: sends lo..hi (inclusive) completed (sock_extended_err). */
struct uskb_zc_notif {
	uint32_t lo;	/**< ee_info */
	uint32_t hi;	/**< ee_data */
	bool copied;	/**< SO_EE_CODE_ZEROCOPY_COPIED: the data was copied */
};

/** A MSG_ZEROCOPY ubuf (struct ubuf_info_msgzc, MSG_ZEROCOPY half). */
struct uskb_ubuf_msgzc {
	struct uskb_ubuf ubuf;
	uint32_t id;		/**< first send number */
	uint16_t len;		/**< sends covered (coalesced) */
	bool zerocopy;		/**< all covered sends went without a copy */
	uint32_t bytelen;	/**< bytes covered */
	struct uskb_zc_sock *zs;
	/* internal: the notification this becomes once completed */
	uint32_t hi;
	struct uskb_ubuf_msgzc *next;
};

/** NULL + errno on failure. */
USKB_API struct uskb_zc_sock *uskb_zc_sock_create(void);
/** Stop queueing notifications and drop the owner's reference. */
USKB_API void uskb_zc_sock_destroy(struct uskb_zc_sock *zs);
/**
 * msg_zerocopy_realloc(): the ubuf for a send of @size bytes. If @prev is
 * this socket's last ubuf and still open (its id range ends at the next
 * id, fewer than 65534 sends, at most 512 KiB), it is extended by one send
 * and returned with one more reference (the stream case); otherwise a new
 * ubuf is allocated with one reference (the sender's), flags
 * ZEROCOPY_FRAG | DONT_ORPHAN, id = the next number. NULL + errno.
 */
USKB_API struct uskb_ubuf *uskb_msg_zerocopy_realloc(struct uskb_zc_sock *zs, size_t size,
						     struct uskb_ubuf *prev);
/**
 * Read up to @max notifications (oldest first), removing them. Adjacent
 * ranges with the same copied mark are merged as they complete. Returns the
 * number read.
 */
USKB_API int uskb_zc_sock_read(struct uskb_zc_sock *zs, struct uskb_zc_notif *out, int max);
/** The next send number (sk_zckey). */
USKB_API uint32_t uskb_zc_sock_next_id(struct uskb_zc_sock *zs);

/** Bytes copied into the head before user frags begin (macvtap's GOODCOPY_LEN). */
#define USKB_ZC_GOODCOPY_LEN 128
/**
 * Default of the size below which uskb_zerocopy_attach() copies everything:
 * attaching costs a fixed ~40 ns (descriptors, the completion), copying
 * grows with the size; on the development machine they cross between 384
 * and 512 bytes (docs/benchmarks.md, bench/bench_zc.c). vhost-net uses 256.
 */
#define USKB_ZC_MIN_LEN 512

/** Set the size below which attaching copies (default USKB_ZC_MIN_LEN). */
USKB_API void uskb_zerocopy_set_min_len(unsigned int len);
USKB_API unsigned int uskb_zerocopy_min_len(void);

struct iovec;

/**
 * Fill the linear @skb from the user memory in @iov: the first @copy_len
 * bytes (USKB_ZC_GOODCOPY_LEN is the macvtap default) are copied into the
 * head, the rest become frags that point straight into the caller's memory
 * (MANAGED_FRAG_REFS | SHARED_FRAG, no page references, read-only), and the
 * skb takes a reference on @uarg. When the data is shorter than
 * uskb_zerocopy_min_len() or @copy_len, or the rest would need more than 17
 * frags, everything is copied instead and @uarg is marked copied (its
 * completion will say success = false).
 * The caller keeps its own reference and drops it with uskb_zcopy_put().
 * One sender builds its skbs on one ubuf at a time (as one sendmsg does):
 * attaching to the same ubuf from two threads at once is not supported.
 * 0, -EINVAL (skb not linear or already zero-copy), -EMSGSIZE (no room for
 * the copied part), -ENOMEM: the skb is then unchanged. An error from
 * ops->link_skb is returned with the skb already attached (freeing it
 * drops its reference).
 */
USKB_API int uskb_zerocopy_attach(struct uskb *skb, const struct iovec *iov, int iovcnt,
				  struct uskb_ubuf *uarg, unsigned int copy_len);

#ifdef __cplusplus
}
#endif
#endif
