/* SPDX-License-Identifier: MIT */
#ifndef USKB_SKB_H
#define USKB_SKB_H

/**
 * @file skb.h
 * The packet buffer: struct uskb (struct sk_buff) and its shared info, with
 * the kernel's geometry and the kernel's names behind a uskb_ prefix.
 *
 *     head | headroom | data .. tail | tailroom | end: struct uskb_shared_info
 *                                                     frags[] -> pages
 *                                                     frag_list -> uskb chain
 *
 * tail and end are offsets from head (NET_SKBUFF_DATA_USES_OFFSET), the shared
 * info sits at head + end. len counts every byte of the packet, data_len the
 * bytes outside the linear head (frags and frag_list).
 *
 * Functions returning int return 0 or a negative errno; functions returning
 * a new skb return NULL and set errno. What the kernel BUG()s on goes to
 * uskb_bug(). See docs/kernel-names.md for the name map.
 */

#include <stdatomic.h>
#include <string.h>
#include "common.h"
#include "page.h"

#ifdef __cplusplus
extern "C" {
#endif

/** CONFIG_MAX_SKB_FRAGS default. */
#define USKB_MAX_SKB_FRAGS 17
/** NET_SKB_PAD: default headroom reserved by the device-style allocators. */
#define USKB_NET_SKB_PAD 64
#define USKB_NET_IP_ALIGN 2

#define USKB_DATA_ALIGN(x) (((x) + (USKB_CACHE_BYTES - 1)) & ~(USKB_CACHE_BYTES - 1))

/** ip_summed values. */
enum {
	USKB_CHECKSUM_NONE = 0,
	USKB_CHECKSUM_UNNECESSARY = 1,
	USKB_CHECKSUM_COMPLETE = 2,
	USKB_CHECKSUM_PARTIAL = 3,
};

/**
 * skb_shared_info::gso_type (SKB_GSO_*, the kernel's values): what the
 * segments of a GSO skb (gso_size set) are. Only a device with
 * USKB_DEV_F_TSO takes one.
 */
enum {
	USKB_GSO_TCPV4 = 1 << 0,
	USKB_GSO_DODGY = 1 << 1,   /**< from an untrusted source (a guest): check it before segmenting */
	USKB_GSO_TCP_ECN = 1 << 2, /**< the TCP header has CWR set */
	USKB_GSO_TCPV6 = 1 << 4,
};

/** skb_shared_info::flags (SKBFL_*). */
enum {
	USKB_SKBFL_ZEROCOPY_ENABLE = 1 << 0,
	USKB_SKBFL_SHARED_FRAG = 1 << 1,
	USKB_SKBFL_PURE_ZEROCOPY = 1 << 2,
	USKB_SKBFL_DONT_ORPHAN = 1 << 3,
	USKB_SKBFL_MANAGED_FRAG_REFS = 1 << 4,
};
#define USKB_SKBFL_ZEROCOPY_FRAG (USKB_SKBFL_ZEROCOPY_ENABLE | USKB_SKBFL_SHARED_FRAG)
#define USKB_SKBFL_ALL_ZEROCOPY                                                \
	(USKB_SKBFL_ZEROCOPY_FRAG | USKB_SKBFL_PURE_ZEROCOPY |                 \
	 USKB_SKBFL_DONT_ORPHAN | USKB_SKBFL_MANAGED_FRAG_REFS)

/** fclone states (skb->fclone). */
enum {
	USKB_FCLONE_UNAVAILABLE = 0, /**< ordinary skb */
	USKB_FCLONE_ORIG = 1,	     /**< first of an fclone pair */
	USKB_FCLONE_CLONE = 2,	     /**< second of an fclone pair */
};

/** dataref: low half counts all references, the high half payload-only ones. */
#define USKB_DATAREF_SHIFT 16
#define USKB_DATAREF_MASK ((1u << USKB_DATAREF_SHIFT) - 1)

/** skb_frag_t: {page, len, offset}, 16 bytes (bio_vec compatible order). */
typedef struct uskb_frag {
	struct uskb_page *page;
	uint32_t len;
	uint32_t offset;
} uskb_frag_t;

/** struct skb_shared_info, fields in the kernel's order. */
struct uskb_shared_info {
	uint8_t flags;	   /**< USKB_SKBFL_* */
	uint8_t meta_len;
	uint8_t nr_frags;
	uint8_t tx_flags;
	uint16_t gso_size;
	uint16_t gso_segs;
	struct uskb *frag_list;
	uint64_t hwtstamp;
	uint32_t gso_type;
	uint32_t tskey;
	/* everything above is zeroed at allocation */
	atomic_uint dataref;
	uint32_t xdp_frags_size;
	void *destructor_arg; /**< the ubuf (zero-copy owner), if any */
	uskb_frag_t frags[USKB_MAX_SKB_FRAGS];
};

/* struct_group(headers): the kernel copies these in one memcpy. */
#define __USKB_HEADERS                                                         \
	uint8_t pkt_type : 3, ip_summed : 2, csum_level : 2, csum_valid : 1;   \
	uint8_t __hdr_pad[3];                                                  \
	union {                                                                \
		uint32_t csum;                                                 \
		struct {                                                       \
			uint16_t csum_start;                                   \
			uint16_t csum_offset;                                  \
		};                                                             \
	};                                                                     \
	uint32_t priority;                                                     \
	uint32_t hash;                                                         \
	uint32_t mark;                                                         \
	uint16_t protocol; /* network byte order, as the kernel */             \
	uint16_t transport_header;                                             \
	uint16_t network_header;                                               \
	uint16_t mac_header;

/**
 * struct sk_buff. Fields before tail are zeroed at allocation.
 *
 * The last of its three cache lines (from destructor on) holds everything
 * a free reads, users included: a thread that frees another thread's skb
 * reads no other line of it.
 */
struct uskb {
	union {
		struct {
			struct uskb *next;
			struct uskb *prev;
		};
		struct uskb *ll_next; /**< deferred-free list link */
	};
	void *sk;  /**< owning socket-like object (opaque) */
	void *dev; /**< device (opaque) */
	uint64_t tstamp;
	char cb[48] __attribute__((aligned(8)));
	unsigned int len;
	unsigned int data_len;
	uint16_t mac_len;
	uint16_t hdr_len;
	/* the headers group, copied as one block by __copy_skb_header */
	union {
		struct {
			__USKB_HEADERS
		};
		struct {
			__USKB_HEADERS
		} headers;
	};
	/* the free path's line (64-byte aligned within the shell) */
	void (*destructor)(struct uskb *skb);
	int16_t alloc_cpu; /**< id of the thread cache the shell came from (u16 in the kernel) */
	/*
	 * allocator-private: 1 while the shared info is as the allocator left
	 * it (nothing attached, dataref 1) and no pointer to it was handed out;
	 * uskb_shinfo() clears it. A byte of its own, cleared atomically:
	 * readers of one skb on several threads may each clear it, so a copy
	 * of a live shell goes around it. (The allocation writes it plainly,
	 * on a shell nobody else holds.)
	 */
	uint8_t __shinfo_clean;
	uint8_t __rsvd;
	uint8_t cloned : 1, nohdr : 1, fclone : 2, head_frag : 1, pfmemalloc : 1,
		pp_recycle : 1,
		__zcopy_hint : 1; /* allocator-private: may carry a zero-copy ubuf; 0: certainly not */
	uint8_t __kbuf_class; /**< allocator-private: 1 + size class of a kbuf head; 0 otherwise */
	uint16_t queue_mapping;
	/* fields below are set by the allocator */
	uint32_t tail;
	uint32_t end;
	unsigned char *head;
	unsigned char *data;
	unsigned int truesize;
	atomic_int users;
};

#define USKB_HEADER_UNSET 0xffff

/** sizeof(struct uskb_shared_info) rounded to a cache line. */
#define USKB_SHINFO_SIZE USKB_DATA_ALIGN(sizeof(struct uskb_shared_info))
/** SKB_HEAD_ALIGN(x): bytes of head memory for x bytes of data. */
#define USKB_HEAD_ALIGN(x) (USKB_DATA_ALIGN(x) + USKB_SHINFO_SIZE)
/** SKB_WITH_OVERHEAD(x): data bytes that fit a head block of x bytes. */
#define USKB_WITH_OVERHEAD(x) ((x) - USKB_SHINFO_SIZE)
/** SKB_TRUESIZE(x). */
#define USKB_TRUESIZE(x)                                                       \
	((x) + USKB_DATA_ALIGN(sizeof(struct uskb)) + USKB_SHINFO_SIZE)

/* ---------------- geometry (inline) ---------------- */

/*
 * The shared info, for reading only: unlike uskb_shinfo(), it leaves the
 * skb's clean mark. The library's own read-only helpers use it.
 */
USKB_INLINE const struct uskb_shared_info *__uskb_shinfo_peek(const struct uskb *skb)
{
	return (const struct uskb_shared_info *)(skb->head + skb->end);
}

/*
 * skb_shinfo(). The pointer may be written through, so the skb loses its
 * clean mark: its release and its next allocation then read and rewrite
 * the shared info instead of trusting it untouched. (Only a handed-out
 * pointer can change a shared info: compute it from uskb_end_pointer()
 * and the allocator will not know.)
 */
USKB_INLINE struct uskb_shared_info *uskb_shinfo(const struct uskb *skb)
{
	uint8_t *clean = (uint8_t *)&skb->__shinfo_clean;

	/* likely clear already: a clean skb pays one store, on first use */
	if (__atomic_load_n(clean, __ATOMIC_RELAXED))
		__atomic_store_n(clean, 0, __ATOMIC_RELAXED);
	return (struct uskb_shared_info *)(skb->head + skb->end);
}

/*
 * The shared info for its sole writer, the skb's builder (frags, frag_list:
 * writing those on an skb whose data is shared is a bug anyway): the clean
 * mark is cleared with one store, no load and no branch. A load of the
 * byte right after the 4-KiB copies that fill a frag's page cost
 * zc_copy_16384 some 4 % (docs/benchmarks.md §15).
 */
USKB_INLINE struct uskb_shared_info *__uskb_shinfo_build(struct uskb *skb)
{
	__atomic_store_n(&skb->__shinfo_clean, 0, __ATOMIC_RELAXED);
	return (struct uskb_shared_info *)(skb->head + skb->end);
}

USKB_INLINE unsigned char *uskb_tail_pointer(const struct uskb *skb)
{
	return skb->head + skb->tail;
}

USKB_INLINE unsigned char *uskb_end_pointer(const struct uskb *skb)
{
	return skb->head + skb->end;
}

USKB_INLINE unsigned int uskb_end_offset(const struct uskb *skb)
{
	return skb->end;
}

USKB_INLINE void uskb_reset_tail_pointer(struct uskb *skb)
{
	skb->tail = (uint32_t)(skb->data - skb->head);
}

USKB_INLINE void uskb_set_tail_pointer(struct uskb *skb, int offset)
{
	uskb_reset_tail_pointer(skb);
	skb->tail += offset;
}

USKB_INLINE bool uskb_is_nonlinear(const struct uskb *skb)
{
	return skb->data_len != 0;
}

USKB_INLINE unsigned int uskb_headlen(const struct uskb *skb)
{
	return skb->len - skb->data_len;
}

USKB_INLINE unsigned int uskb_headroom(const struct uskb *skb)
{
	return (unsigned int)(skb->data - skb->head);
}

USKB_INLINE int uskb_tailroom(const struct uskb *skb)
{
	return uskb_is_nonlinear(skb) ? 0 : (int)(skb->end - skb->tail);
}

/** skb_availroom without reserved_tailroom. */
USKB_INLINE int uskb_availroom(const struct uskb *skb)
{
	return uskb_tailroom(skb);
}

USKB_INLINE bool uskb_has_frag_list(const struct uskb *skb)
{
	return __uskb_shinfo_peek(skb)->frag_list != NULL;
}

/** skb_cloned(): the data is shared with another skb. */
USKB_INLINE bool uskb_cloned(const struct uskb *skb)
{
	/*
	 * acquire: "not cloned" means the data is ours to write; that must come
	 * after the other holders' releases (their last reads of it).
	 */
	return skb->cloned &&
	       (atomic_load_explicit(&__uskb_shinfo_peek(skb)->dataref, memory_order_acquire) &
		USKB_DATAREF_MASK) != 1;
}

/** skb_header_cloned(): the header part is shared with another skb. */
USKB_INLINE bool uskb_header_cloned(const struct uskb *skb)
{
	unsigned int dataref;

	if (!skb->cloned)
		return false;
	/* acquire: as in uskb_cloned(), a "no" licenses writes to the header */
	dataref = atomic_load_explicit(&__uskb_shinfo_peek(skb)->dataref, memory_order_acquire);
	dataref = (dataref & USKB_DATAREF_MASK) - (dataref >> USKB_DATAREF_SHIFT);
	return dataref != 1;
}

/** skb_shared(): more than one user holds this skb. */
USKB_INLINE bool uskb_shared(const struct uskb *skb)
{
	/* acquire: "not shared" licenses writes after the other users' releases */
	return atomic_load_explicit(&skb->users, memory_order_acquire) != 1;
}

/** skb_get(): take a user reference. */
USKB_INLINE struct uskb *uskb_get(struct uskb *skb)
{
	/* relaxed: the caller already holds a reference */
	atomic_fetch_add_explicit(&skb->users, 1, memory_order_relaxed);
	return skb;
}

USKB_INLINE bool uskb_has_shared_frag(const struct uskb *skb)
{
	return uskb_is_nonlinear(skb) &&
	       (__uskb_shinfo_peek(skb)->flags & USKB_SKBFL_SHARED_FRAG);
}

/* ---- frags ---- */

USKB_INLINE struct uskb_page *uskb_frag_page(const uskb_frag_t *frag)
{
	return frag->page;
}

USKB_INLINE unsigned int uskb_frag_size(const uskb_frag_t *frag)
{
	return frag->len;
}

USKB_INLINE unsigned int uskb_frag_off(const uskb_frag_t *frag)
{
	return frag->offset;
}

USKB_INLINE void *uskb_frag_address(const uskb_frag_t *frag)
{
	return (char *)uskb_page_address(frag->page) + frag->offset;
}

/** skb_frag_fill_page_desc(). */
USKB_INLINE void uskb_frag_fill_page_desc(uskb_frag_t *frag,
					  struct uskb_page *page, int off,
					  int size)
{
	frag->page = page;
	frag->offset = (uint32_t)off;
	frag->len = (uint32_t)size;
}

/**
 * skb_fill_page_desc(): set frag @i and nr_frags = i + 1. Takes no page
 * reference: the caller's reference moves into the skb. len, data_len and
 * truesize are the caller's to update (see uskb_add_rx_frag()).
 */
USKB_INLINE void uskb_fill_page_desc(struct uskb *skb, int i,
				     struct uskb_page *page, int off, int size)
{
	struct uskb_shared_info *sh = __uskb_shinfo_build(skb);

	if (uskb_unlikely(i < 0 || i >= USKB_MAX_SKB_FRAGS))
		uskb_bug("fill_page_desc", skb, "frag index %d out of range", i);
	uskb_frag_fill_page_desc(&sh->frags[i], page, off, size);
	sh->nr_frags = (uint8_t)(i + 1);
}

/** skb_add_rx_frag(): fill_page_desc and account len, data_len, truesize. */
USKB_INLINE void uskb_add_rx_frag(struct uskb *skb, int i,
				  struct uskb_page *page, int off, int size,
				  unsigned int truesize)
{
	uskb_fill_page_desc(skb, i, page, off, size);
	skb->len += (unsigned int)size;
	skb->data_len += (unsigned int)size;
	skb->truesize += truesize;
}

/** skb_frag_ref(): take a page reference on frag @f. */
USKB_INLINE void uskb_frag_ref(struct uskb *skb, int f)
{
	uskb_page_get(__uskb_shinfo_peek(skb)->frags[f].page);
}

/**
 * skb_frag_unref(): drop the page reference of frag @f — none is held when
 * the frags are managed (MANAGED_FRAG_REFS: the zero-copy owner holds them).
 */
USKB_INLINE void uskb_frag_unref(struct uskb *skb, int f)
{
	if (!(__uskb_shinfo_peek(skb)->flags & USKB_SKBFL_MANAGED_FRAG_REFS))
		uskb_page_put(__uskb_shinfo_peek(skb)->frags[f].page);
}

/* ---- headers ---- */

USKB_INLINE void uskb_reset_mac_header(struct uskb *skb)
{
	skb->mac_header = (uint16_t)(skb->data - skb->head);
}
USKB_INLINE void uskb_reset_network_header(struct uskb *skb)
{
	skb->network_header = (uint16_t)(skb->data - skb->head);
}
USKB_INLINE void uskb_reset_transport_header(struct uskb *skb)
{
	skb->transport_header = (uint16_t)(skb->data - skb->head);
}
USKB_INLINE void uskb_set_mac_header(struct uskb *skb, int offset)
{
	skb->mac_header = (uint16_t)(skb->data - skb->head + offset);
}
USKB_INLINE void uskb_set_network_header(struct uskb *skb, int offset)
{
	skb->network_header = (uint16_t)(skb->data - skb->head + offset);
}
USKB_INLINE void uskb_set_transport_header(struct uskb *skb, int offset)
{
	skb->transport_header = (uint16_t)(skb->data - skb->head + offset);
}
USKB_INLINE unsigned char *uskb_mac_header(const struct uskb *skb)
{
	return skb->head + skb->mac_header;
}
USKB_INLINE unsigned char *uskb_network_header(const struct uskb *skb)
{
	return skb->head + skb->network_header;
}
USKB_INLINE unsigned char *uskb_transport_header(const struct uskb *skb)
{
	return skb->head + skb->transport_header;
}
USKB_INLINE bool uskb_mac_header_was_set(const struct uskb *skb)
{
	return skb->mac_header != USKB_HEADER_UNSET;
}
USKB_INLINE int uskb_checksum_start_offset(const struct uskb *skb)
{
	return skb->csum_start - (int)uskb_headroom(skb);
}

/* ---------------- allocation and free ---------------- */

/** __alloc_skb() flags. */
enum {
	USKB_ALLOC_FCLONE = 1,	  /**< allocate an fclone pair (alloc_skb_fclone) */
	USKB_ALLOC_HEAD_FRAG = 2, /**< head from the page_frag cache (netdev_alloc_skb) */
};

/**
 * __alloc_skb(): an skb with at least @size bytes of linear room, headroom
 * 0, users 1, dataref 1. As kmalloc does, the head comes from a size class
 * (512 B .. 16 KiB including the shared info) and the skb may use all of
 * it, so tailroom can exceed @size; larger heads take a page block. With
 * USKB_ALLOC_HEAD_FRAG the head is carved from the thread's page_frag cache
 * instead (head_frag = 1, exact size). NULL + errno (ENOMEM, EINVAL).
 */
USKB_API struct uskb *__uskb_alloc(unsigned int size, unsigned int flags,
				   int node);

/** alloc_skb(size): as __uskb_alloc(size, 0, USKB_NO_NODE), on a shorter path. */
USKB_API struct uskb *uskb_alloc(unsigned int size);

/** alloc_skb_fclone(size): clone will use the companion shell. */
USKB_INLINE struct uskb *uskb_alloc_fclone(unsigned int size)
{
	return __uskb_alloc(size, USKB_ALLOC_FCLONE, USKB_NO_NODE);
}

/**
 * netdev_alloc_skb() / napi_alloc_skb(): room for @length bytes after
 * NET_SKB_PAD of headroom (already reserved), head from the page_frag
 * cache (head_frag = 1), so the head can later travel as a frag.
 */
USKB_API struct uskb *uskb_dev_alloc(unsigned int length);

/**
 * kfree_skb(): drop a user reference; the last frees the skb, and the data
 * when this was the last reference to it. NULL is ignored.
 */
USKB_API void uskb_free(struct uskb *skb);
/** consume_skb(): as uskb_free(), counted as consumed rather than dropped. */
USKB_API void uskb_consume(struct uskb *skb);
/**
 * kfree_skb_partial(): free an skb whose head was stolen by
 * uskb_try_coalesce() (@head_stolen) — only the shell goes; else uskb_consume.
 */
USKB_API void uskb_free_partial(struct uskb *skb, bool head_stolen);
/** kfree_skb_list(): free a ->next chain. */
USKB_API void uskb_free_list(struct uskb *segs);

/* ---------------- linear data (inline fast paths) ---------------- */

USKB_API void __uskb_bug_put(struct uskb *skb, unsigned int len) __attribute__((noreturn, cold));
USKB_API void __uskb_bug_push(struct uskb *skb, unsigned int len) __attribute__((noreturn, cold));

/** skb_reserve(): grow headroom of an empty skb. */
USKB_INLINE void uskb_reserve(struct uskb *skb, int len)
{
	if (uskb_unlikely(skb->len || skb->tail + (uint32_t)len > skb->end))
		uskb_bug("reserve", skb, "reserve %d on a non-empty or too small skb", len);
	skb->data += len;
	skb->tail += (uint32_t)len;
}

/** skb_put(): extend the linear data at the tail; returns the old tail. */
USKB_INLINE void *uskb_put(struct uskb *skb, unsigned int len)
{
	unsigned char *tmp = uskb_tail_pointer(skb);

	if (uskb_unlikely(uskb_is_nonlinear(skb) || len > skb->end - skb->tail))
		__uskb_bug_put(skb, len);
	skb->tail += len;
	skb->len += len;
	return tmp;
}

/** skb_put_zero(). */
USKB_INLINE void *uskb_put_zero(struct uskb *skb, unsigned int len)
{
	void *tmp = uskb_put(skb, len);

	memset(tmp, 0, len);
	return tmp;
}

/** skb_put_data(). */
USKB_INLINE void *uskb_put_data(struct uskb *skb, const void *data,
				unsigned int len)
{
	void *tmp = uskb_put(skb, len);

	if (len)
		memcpy(tmp, data, len);
	return tmp;
}

/** skb_push(): extend the data at the front into the headroom. */
USKB_INLINE void *uskb_push(struct uskb *skb, unsigned int len)
{
	if (uskb_unlikely(len > uskb_headroom(skb)))
		__uskb_bug_push(skb, len);
	skb->data -= len;
	skb->len += len;
	return skb->data;
}

/** __skb_pull(): remove from the front; the linear part must hold @len. */
USKB_INLINE void *__uskb_pull(struct uskb *skb, unsigned int len)
{
	if (uskb_unlikely(len > uskb_headlen(skb)))
		uskb_bug("pull", skb, "__skb_pull(len=%u) into paged data", len);
	skb->len -= len;
	return skb->data += len;
}

/**
 * skb_pull(): remove @len bytes from the front. NULL when @len exceeds the
 * packet; pulling past the linear part is a bug (use uskb_pskb_pull()).
 */
USKB_INLINE void *uskb_pull(struct uskb *skb, unsigned int len)
{
	return uskb_unlikely(len > skb->len) ? NULL : __uskb_pull(skb, len);
}

/** __skb_trim(): linear skbs only. */
USKB_INLINE void __uskb_trim(struct uskb *skb, unsigned int len)
{
	if (uskb_unlikely(uskb_is_nonlinear(skb)))
		uskb_bug("trim", skb, "skb_trim(len=%u) of a nonlinear skb", len);
	skb->len = len;
	uskb_set_tail_pointer(skb, (int)len);
}

/** skb_trim(): shorten a linear skb to @len (no-op if already shorter). */
USKB_INLINE void uskb_trim(struct uskb *skb, unsigned int len)
{
	if (skb->len > len)
		__uskb_trim(skb, len);
}

/* ---------------- sharing, copying, reshaping ---------------- */

/** skb_clone(): new shell sharing the data (dataref++). NULL + errno. */
USKB_API struct uskb *uskb_clone(struct uskb *skb);
/** skb_copy(): fully private linear copy, same headroom. NULL + errno. */
USKB_API struct uskb *uskb_copy(const struct uskb *skb);
/** pskb_copy(): private head, frags and frag_list shared. NULL + errno. */
USKB_API struct uskb *uskb_pskb_copy(struct uskb *skb);
/** __pskb_copy(): as pskb_copy with @headroom bytes of headroom. */
USKB_API struct uskb *__uskb_pskb_copy(struct uskb *skb, int headroom);
/**
 * pskb_expand_head(): reallocate the head with @nhead more bytes of
 * headroom and @ntail more of tailroom; after it the head is private
 * (cloned = 0). A shared skb (users > 1) is a bug. 0 or -ENOMEM (the skb is
 * unchanged on failure).
 */
USKB_API int uskb_expand_head(struct uskb *skb, int nhead, int ntail);
/** skb_cow(): private head with at least @headroom bytes of headroom. */
USKB_API int uskb_cow(struct uskb *skb, unsigned int headroom);
/** skb_cow_head(): as skb_cow, but only the header part must be private. */
USKB_API int uskb_cow_head(struct uskb *skb, unsigned int headroom);
/** skb_unclone(): make the head private if cloned. */
USKB_API int uskb_unclone(struct uskb *skb);
/**
 * skb_unshare(): if cloned, replace by a private copy (the original is
 * released either way on failure). Returns the skb to use, or NULL.
 */
USKB_API struct uskb *uskb_unshare(struct uskb *skb);
/**
 * skb_share_check(): if shared (users > 1), replace by a clone and drop one
 * user reference of the original. Returns the skb to use, or NULL.
 */
USKB_API struct uskb *uskb_share_check(struct uskb *skb);
/**
 * __pskb_pull_tail(): move @delta bytes from the frags / frag_list into the
 * linear head, reallocating it if needed. Returns the new tail pointer or
 * NULL (-ENOMEM; the skb is unchanged).
 */
USKB_API void *uskb_pull_tail(struct uskb *skb, int delta);
/** pskb_may_pull(): make sure the first @len bytes are linear. */
USKB_API bool uskb_may_pull(struct uskb *skb, unsigned int len);
/** pskb_pull(): pull @len bytes even from paged data; NULL on failure. */
USKB_API void *uskb_pskb_pull(struct uskb *skb, unsigned int len);
/** skb_linearize(): make the whole packet linear. 0 or -ENOMEM. */
USKB_API int uskb_linearize(struct uskb *skb);
/** pskb_trim(): shorten to @len, frags and frag_list included. 0/-ENOMEM. */
USKB_API int uskb_pskb_trim(struct uskb *skb, unsigned int len);
/**
 * skb_copy_bits(): copy @len bytes at @offset (negative: headroom) out of
 * the packet. 0 or -EFAULT when out of range.
 */
USKB_API int uskb_copy_bits(const struct uskb *skb, int offset, void *to,
			    int len);
/**
 * skb_store_bits(): write @len bytes at @offset into the packet, frags
 * included. The caller must own the bytes (kernel rule); writing into the
 * zero page or another read-only page is a bug. 0 or -EFAULT.
 */
USKB_API int uskb_store_bits(struct uskb *skb, int offset, const void *from,
			     int len);
/**
 * skb_split(): move the bytes from @len on into the empty skb @skb1. The
 * skb must not be cloned and have no frag_list (the kernel's TCP rule).
 */
USKB_API void uskb_split(struct uskb *skb, struct uskb *skb1, uint32_t len);
/**
 * skb_try_coalesce(): append @from's data to @to without copying when
 * possible. On true, @from must be released with uskb_free_partial(from,
 * *fragstolen); *delta_truesize is what @to's truesize grew by.
 */
USKB_API bool uskb_try_coalesce(struct uskb *to, struct uskb *from,
				bool *fragstolen, int *delta_truesize);
/** skb_header_release(): from now on this skb references only payload. */
USKB_API void uskb_header_release(struct uskb *skb);
/** skb_condense(): pull small paged data into spare tailroom. */
USKB_API void uskb_condense(struct uskb *skb);
/** skb_ensure_writable(): first @write_len bytes linear and private. */
USKB_API int uskb_ensure_writable(struct uskb *skb, unsigned int write_len);

/* ---- frag_list ---- */

/** skb_frag_list_init(). */
USKB_INLINE void uskb_frag_list_init(struct uskb *skb)
{
	__uskb_shinfo_build(skb)->frag_list = NULL;
}

/**
 * Append @frag (whose reference the caller gives up) to @skb's frag_list,
 * accounting len, data_len and truesize (skb_gro_receive_list style).
 */
USKB_API void uskb_append_frag_list(struct uskb *skb, struct uskb *frag);

#define uskb_walk_frags(skb, iter)                                             \
	for (iter = __uskb_shinfo_peek(skb)->frag_list; iter; iter = iter->next)

/* ---------------- queues ---------------- */

/** struct sk_buff_head: a locked doubly linked list of skbs. */
struct uskb_head {
	struct uskb *next;
	struct uskb *prev;
	uint32_t qlen;
	atomic_flag lock;
};

USKB_API void uskb_queue_head_init(struct uskb_head *list);
/* uskb_queue_len() and uskb_queue_empty() read without the lock: the caller
 * holds it or owns the list. */
USKB_INLINE uint32_t uskb_queue_len(const struct uskb_head *list)
{
	return list->qlen;
}
USKB_INLINE bool uskb_queue_empty(const struct uskb_head *list)
{
	return list->next == (const struct uskb *)list;
}
/** Unlocked variants (caller holds the lock or owns the list). */
USKB_API void __uskb_queue_tail(struct uskb_head *list, struct uskb *newsk);
USKB_API void __uskb_queue_head(struct uskb_head *list, struct uskb *newsk);
USKB_API struct uskb *__uskb_dequeue(struct uskb_head *list);
USKB_API struct uskb *__uskb_dequeue_tail(struct uskb_head *list);
USKB_API void __uskb_unlink(struct uskb *skb, struct uskb_head *list);
USKB_API struct uskb *uskb_peek(const struct uskb_head *list);
USKB_API struct uskb *uskb_peek_tail(const struct uskb_head *list);
/** Locked variants. */
USKB_API void uskb_queue_tail(struct uskb_head *list, struct uskb *newsk);
USKB_API void uskb_queue_head(struct uskb_head *list, struct uskb *newsk);
USKB_API struct uskb *uskb_dequeue(struct uskb_head *list);
USKB_API struct uskb *uskb_dequeue_tail(struct uskb_head *list);
USKB_API void uskb_unlink(struct uskb *skb, struct uskb_head *list);
USKB_API void uskb_append(struct uskb *old, struct uskb *newsk,
			  struct uskb_head *list);
/** skb_queue_purge(): take every skb off the list (one locked step) and free them. */
USKB_API void uskb_queue_purge(struct uskb_head *list);
/**
 * skb_queue_splice_tail_init(): move all of @list to the tail of @head and
 * empty @list. Unlocked, as the kernel's: the caller holds both lists' locks
 * or owns them.
 */
USKB_API void uskb_queue_splice_tail_init(struct uskb_head *list,
					  struct uskb_head *head);

#define uskb_queue_walk(queue, skb)                                            \
	for (skb = (queue)->next; skb != (struct uskb *)(queue); skb = skb->next)

#ifdef __cplusplus
}
#endif
#endif
