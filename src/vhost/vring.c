/* SPDX-License-Identifier: MIT */
/*
 * Split virtqueues and the guest's transmit, as vhost-net's handle_tx
 * with zero copy (handle_tx_zerocopy, vhost_zerocopy_signal_used).
 *
 * Every chain the guest makes available gets an entry in the queue's
 * pending FIFO, in avail order. A chain sent in place (frags into the
 * guest's memory, a ubuf per chain) is done when the device frees the
 * skb, on whichever thread; a copied or dropped one is done at once. The
 * used ring advances over the FIFO's done entries from its tail and stops
 * at the first one not done: chains go back in the order they came,
 * whatever order the device completes them in.
 *
 * The guest is not trusted: every index is checked against the ring, every
 * address and length against the memory table, chains are bounded by the
 * ring's size (loops), an indirect table may not hold another. A queue that
 * breaks a rule stops with a message; the others go on.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "uskb/csum.h"
#include "uskb/dev.h"
#include "vhost/priv.h"

void __uskb_vh_fail(struct uskb_vhost *vh, struct vh_queue *q, const char *fmt, ...)
{
	va_list ap;
	char buf[sizeof(vh->err)];
	int n;

	n = snprintf(buf, sizeof(buf), "queue %u stopped: ", q->idx);
	va_start(ap, fmt);
	vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	va_end(ap);
	fprintf(stderr, "uskb-vhost: %s\n", buf);
	pthread_mutex_lock(&vh->stats_lock); /* read by uskb_vhost_strerror() on any thread */
	memcpy(vh->err, buf, sizeof(buf));
	pthread_mutex_unlock(&vh->stats_lock);
	q->broken = true;
	q->st.errors = 1;
	if (q->err_fd >= 0)
		(void)eventfd_write(q->err_fd, 1);
}

/* the mapped bytes at guest-physical @gpa, at most @len of them contiguous: *n */
static uint8_t *gpa_piece(struct uskb_vhost *vh, uint64_t gpa, uint64_t len, uint64_t *n)
{
	for (unsigned int i = 0; i < vh->nregions; i++) {
		const struct vh_region *r = &vh->reg[i];

		if (gpa >= r->gpa && gpa - r->gpa < r->size) {
			uint64_t left = r->size - (gpa - r->gpa);

			*n = len < left ? len : left;
			return r->host + (gpa - r->gpa);
		}
	}
	return NULL;
}

void *__uskb_vh_gpa(struct uskb_vhost *vh, uint64_t gpa, uint64_t len)
{
	uint64_t n;
	uint8_t *p = gpa_piece(vh, gpa, len, &n);

	return p && n == len ? p : NULL;
}

/* the frontend's (QEMU's) virtual addresses: where the rings are given */
void *__uskb_vh_uva(struct uskb_vhost *vh, uint64_t uva, uint64_t len)
{
	for (unsigned int i = 0; i < vh->nregions; i++) {
		const struct vh_region *r = &vh->reg[i];

		if (uva >= r->uva && uva - r->uva < r->size && len <= r->size - (uva - r->uva))
			return r->host + (uva - r->uva);
	}
	return NULL;
}

/* the frontend negotiated @feature */
static bool has(const struct uskb_vhost *vh, unsigned int feature)
{
	return vh->features & (1ull << feature);
}

static bool event_idx(const struct uskb_vhost *vh)
{
	return has(vh, VIRTIO_RING_F_EVENT_IDX);
}

int __uskb_vh_queue_start(struct uskb_vhost *vh, struct vh_queue *q)
{
	uint64_t num = q->num;

	if (q->started || q->broken || !q->have_addr || !num || !vh->nregions || !q->enabled || !q->kicked)
		return 0;
	q->desc = __uskb_vh_uva(vh, q->desc_uva, 16 * num);
	q->avail = __uskb_vh_uva(vh, q->avail_uva, 6 + 2 * num);
	q->used = __uskb_vh_uva(vh, q->used_uva, 6 + 8 * num);
	if (!q->desc || !q->avail || !q->used) {
		__uskb_vh_fail(vh, q, "a ring (desc %#llx, avail %#llx, used %#llx, %u entries) is not in guest memory",
			       (unsigned long long)q->desc_uva, (unsigned long long)q->avail_uva,
			       (unsigned long long)q->used_uva, q->num);
		return -EINVAL;
	}
	if ((uintptr_t)q->desc % 16 || (uintptr_t)q->avail % 2 || (uintptr_t)q->used % 4) {
		__uskb_vh_fail(vh, q, "a ring is not aligned");
		return -EINVAL;
	}
	if (!q->pend) {
		q->pend = calloc(q->num, sizeof(*q->pend));
		if (!q->pend) {
			__uskb_vh_fail(vh, q, "no memory for %u entries", q->num);
			return -ENOMEM;
		}
	}
	q->pend_head = q->pend_tail = 0;
	q->nzc = 0;
	q->used_idx = __atomic_load_n(&q->used->idx, __ATOMIC_ACQUIRE);
	q->signalled_valid = false;
	q->no_notify = false;
	q->started = true;
	return 0;
}

/* a stop was asked for (uskb_vhost_stop(), until the next uskb_vhost_run()) */
static bool stop_asked(const struct uskb_vhost *vh)
{
	return atomic_load_explicit(&vh->stopping, memory_order_relaxed);
}

/*
 * Retire until nothing is out: the device still holds guest memory. Gives
 * up after @ms by the clock; when a stop is asked for, after a grace of
 * 100 ms (a device about to complete is still waited for: a stop would
 * otherwise keep chains that were done a moment later).
 */
static bool drain(struct uskb_vhost *vh, struct vh_queue *q, unsigned int ms)
{
	uint64_t start = uskb_mono_ns(), end = start + (uint64_t)ms * 1000000, now;

	for (;;) {
		uskb_dev_flush(vh->cfg.dev, 0);
		__uskb_vh_retire(vh, q);
		if (q->pend_head == q->pend_tail)
			return true;
		now = uskb_mono_ns();
		if (now >= end || (stop_asked(vh) && now >= start + 100000000))
			return false;
		usleep(1000);
	}
}

/* the chains still out of a queue that stops: kept, with their entries, for their completions */
static void keep(struct uskb_vhost *vh, struct vh_queue *q)
{
	struct vh_kept *k = calloc(1, sizeof(*k));

	vh->keep_maps = true;
	atomic_fetch_add_explicit(&vh->abandoned, q->pend_head - q->pend_tail, memory_order_relaxed);
	if (!k) {
		/* without a record they cannot be freed later: kept for good (a leak, never a free under them) */
		fprintf(stderr, "uskb-vhost: queue %u: out of memory: %u chains kept for good\n", q->idx,
			q->pend_head - q->pend_tail);
		return;
	}
	*k = (struct vh_kept){ .next = vh->kept, .pend = q->pend, .head = q->pend_head, .tail = q->pend_tail,
			       .num = q->num };
	vh->kept = k;
}

void __uskb_vh_queue_stop(struct uskb_vhost *vh, struct vh_queue *q)
{
	/* skbs the device never took: dropped, which completes them */
	for (unsigned int i = 0; i < q->nbacklog; i++) {
		uskb_free(q->backlog[i]);
		q->st.dropped++;
	}
	q->nbacklog = 0;
	uskb_free(q->rx_skb); /* a received frame that found no buffer */
	q->rx_skb = NULL;
	if (q->started && q->no_notify) /* the next backend wants kicks */
		__atomic_store_n(&q->used->flags, 0, __ATOMIC_RELAXED);
	q->no_notify = false;
	if (q->started && !drain(vh, q, 10000)) {
		/*
		 * The device still holds them: their entries stay where they
		 * are for the completions, and so does the guest memory their
		 * frags point into, until the device gives them all back
		 * (never a free or a reuse under them).
		 */
		fprintf(stderr, "uskb-vhost: queue %u: %u chains still out %s: kept, with their guest memory, "
				"until the device completes them\n", q->idx, q->pend_head - q->pend_tail,
			stop_asked(vh) ? "at a stop" : "after 10 s");
		keep(vh, q);
	} else {
		free(q->pend);
	}
	q->pend = NULL;
	q->pend_head = q->pend_tail = 0;
	q->nzc = 0;
	q->started = false;
}

static void signal_guest(struct uskb_vhost *vh, struct vh_queue *q, uint16_t old)
{
	bool need;

	if (q->call_fd < 0)
		return;
	/* the used index is out before the guest's wish is read (and the guest's order is the reverse) */
	vh_mb();
	if (event_idx(vh)) {
		uint16_t ev = __atomic_load_n(&q->avail->ring[q->num], __ATOMIC_RELAXED);

		if (q->signalled_valid)
			old = q->signalled;
		need = !q->signalled_valid || (uint16_t)(q->used_idx - ev - 1) < (uint16_t)(q->used_idx - old);
		/* as vhost_notify: the window starts here whether or not the guest is called */
		q->signalled = q->used_idx;
		q->signalled_valid = true;
	} else {
		need = !(__atomic_load_n(&q->avail->flags, __ATOMIC_RELAXED) & VRING_AVAIL_F_NO_INTERRUPT);
	}
	if (need)
		(void)eventfd_write(q->call_fd, 1);
}

unsigned int __uskb_vh_retire(struct uskb_vhost *vh, struct vh_queue *q)
{
	uint16_t old = q->used_idx;
	unsigned int n = 0;

	if (!q->started)
		return 0;
	while (q->pend_tail != q->pend_head) {
		struct vh_pend *p = &q->pend[q->pend_tail % q->num];
		struct vring_used_elem *e;

		if (!atomic_load_explicit(&p->done, memory_order_acquire))
			break;
		if (p->zc) {
			q->nzc--;
			q->st.completions++;
			q->st.zcopy_err += p->copied;
		}
		e = &q->used->ring[q->used_idx % q->num];
		e->id = (uint32_t)p->u.desc;
		e->len = 0;
		q->used_idx++;
		q->pend_tail++;
		n++;
	}
	if (!n)
		return 0;
	/* the elements before the index */
	__atomic_store_n(&q->used->idx, q->used_idx, __ATOMIC_RELEASE);
	signal_guest(vh, q, old);
	return n;
}

/* the device is done with a zero-copy skb: on whichever thread freed it */
static void tx_complete(struct uskb *skb, struct uskb_ubuf *uarg, bool success)
{
	struct vh_pend *p = (struct vh_pend *)uarg;

	(void)skb;
	/* counted by the queue's thread when it retires the entry: no shared counter here */
	p->copied = !success;
	/* the last touch: the queue's thread may reuse the entry after it */
	atomic_store_explicit(&p->done, true, memory_order_release);
}

static const struct uskb_ubuf_ops tx_ops = { .complete = tx_complete };

struct chain {
	struct iovec iov[VH_MAX_IOV];
	unsigned int niov;
	uint64_t len;
};

/* 0; -1: the queue broke; 1: no room for another piece (the caller says why) */
static int add_piece(struct uskb_vhost *vh, struct vh_queue *q, struct chain *c, uint64_t gpa, uint32_t len)
{
	while (len) {
		uint64_t n;
		uint8_t *p = gpa_piece(vh, gpa, len, &n);

		if (!p) {
			__uskb_vh_fail(vh, q, "a buffer at %#llx (%u bytes) is outside guest memory",
				       (unsigned long long)gpa, len);
			return -1;
		}
		if (c->niov == VH_MAX_IOV)
			return 1;
		c->iov[c->niov++] = (struct iovec){ p, (size_t)n };
		gpa += n;
		len -= (uint32_t)n;
	}
	return 0;
}

/*
 * A chain filled every piece at descriptor @d of a table of @max: too long,
 * or a loop (whose pieces run out before its count passes the table).
 * Followed on without mapping: a chain that still goes on after @max more
 * steps visits some descriptor twice. Only on this failure path.
 */
static bool loops(const struct vring_desc *tab, unsigned int max, struct vring_desc d)
{
	for (unsigned int k = 0; k <= max; k++) {
		if (!(d.flags & VRING_DESC_F_NEXT) || d.next >= max)
			return false;
		memcpy(&d, (const void *)&tab[d.next], sizeof(d));
	}
	return true;
}

/*
 * The chain from @head, mapped: its readable pieces (transmit) or its
 * writable ones (@write: receive). false: the queue broke
 */
static bool walk(struct uskb_vhost *vh, struct vh_queue *q, uint16_t head, struct chain *c, bool write)
{
	const struct vring_desc *tab = q->desc;
	unsigned int max = q->num, count = 0, i = head;
	bool indirect = false;

	c->niov = 0;
	c->len = 0;
	for (;;) {
		struct vring_desc d;

		if (i >= max) {
			__uskb_vh_fail(vh, q, "descriptor %u beyond a table of %u", i, max);
			return false;
		}
		if (++count > max) {
			__uskb_vh_fail(vh, q, "a descriptor loop from head %u", head);
			return false;
		}
		/* once: the guest may change it meanwhile */
		memcpy(&d, (const void *)&tab[i], sizeof(d));
		if (d.flags & VRING_DESC_F_INDIRECT) {
			if (indirect || !has(vh, VIRTIO_RING_F_INDIRECT_DESC)) {
				__uskb_vh_fail(vh, q, indirect ? "an indirect table inside an indirect table" :
								 "an indirect descriptor, not negotiated");
				return false;
			}
			if (!d.len || d.len % sizeof(struct vring_desc) || d.len / sizeof(struct vring_desc) > 65536 ||
			    !(tab = __uskb_vh_gpa(vh, d.addr, d.len)) || (uintptr_t)tab % 8) {
				__uskb_vh_fail(vh, q, "a bad indirect table at %#llx (%u bytes)",
					       (unsigned long long)d.addr, d.len);
				return false;
			}
			indirect = true;
			max = d.len / sizeof(struct vring_desc);
			count = 0;
			i = 0;
			continue;
		}
		if (!(d.flags & VRING_DESC_F_WRITE) != !write) {
			__uskb_vh_fail(vh, q, write ? "a read-only descriptor in a receive chain" :
						      "a write-only descriptor in a transmit chain");
			return false;
		}
		c->len += d.len;
		if (c->len > 65536 + 64 && !write) {
			/* (a loop of big pieces gets here before its pieces run out) */
			__uskb_vh_fail(vh, q, loops(tab, max, d) ? "a descriptor loop from head %u" :
								   "a transmit chain of more than 64 KiB", head);
			return false;
		}
		switch (add_piece(vh, q, c, d.addr, d.len)) {
		case 0:
			break;
		case 1:
			if (loops(tab, max, d))
				__uskb_vh_fail(vh, q, "a descriptor loop from head %u", head);
			else
				__uskb_vh_fail(vh, q, "a chain of more than %u pieces", VH_MAX_IOV);
			return false;
		default:
			return false;
		}
		if (!(d.flags & VRING_DESC_F_NEXT))
			return true;
		i = d.next;
	}
}

/* @len bytes between @off of the chain and @buf: out of the chain, or into it (@into) */
static void chain_xfer(const struct chain *c, size_t off, void *buf, size_t len, bool into)
{
	for (unsigned int i = 0; i < c->niov && len; i++) {
		char *at;
		size_t n;

		if (off >= c->iov[i].iov_len) {
			off -= c->iov[i].iov_len;
			continue;
		}
		n = c->iov[i].iov_len - off;
		if (n > len)
			n = len;
		at = (char *)c->iov[i].iov_base + off;
		memcpy(into ? at : buf, into ? buf : at, n);
		buf = (char *)buf + n;
		len -= n;
		off = 0;
	}
}

static void chain_copy(const struct chain *c, size_t off, void *to, size_t len)
{
	chain_xfer(c, off, to, len, false);
}

/* frags after @off: how many pieces */
static unsigned int pieces_after(const struct chain *c, size_t off)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < c->niov; i++) {
		if (off >= c->iov[i].iov_len) {
			off -= c->iov[i].iov_len;
			continue;
		}
		off = 0;
		n++;
	}
	return n;
}

/* the skb's frags: the chain's pieces after @off, in place */
static void attach(struct uskb *skb, struct vh_pend *p, const struct chain *c, size_t off)
{
	struct uskb_shared_info *sh = uskb_shinfo(skb);
	unsigned int k = 0;

	for (unsigned int i = 0; i < c->niov; i++) {
		struct uskb_page *pg = &p->pages[k];
		size_t len = c->iov[i].iov_len;
		unsigned int order = 0;

		if (off >= len) {
			off -= len;
			continue;
		}
		while (((size_t)USKB_PAGE_SIZE << order) < len)
			order++;
		memset(pg, 0, sizeof(*pg));
		atomic_init(&pg->refcount, 1); /* the ubuf's; never dropped */
		pg->flags = USKB_PG_EXTERNAL | USKB_PG_READONLY;
		pg->order = (uint8_t)order;
		pg->node = USKB_NO_NODE;
		pg->addr = c->iov[i].iov_base;
		uskb_frag_fill_page_desc(&sh->frags[k], pg, (int)off, (int)(len - off));
		skb->len += (unsigned int)(len - off);
		skb->data_len += (unsigned int)(len - off);
		off = 0;
		k++;
	}
	sh->nr_frags = (uint8_t)k;
}

/*
 * The virtio-net header's checksum request and GSO (virtio_net_hdr_to_skb);
 * false: a frame to drop. A GSO frame (HOST_TSO4/6, offered only when the
 * device segments: USKB_DEV_F_TSO) must ask for its checksum, and is
 * marked DODGY: the device checks its headers before it segments.
 */
static bool apply_hdr(struct uskb_vhost *vh, struct uskb *skb, const struct virtio_net_hdr *h)
{
	uint8_t type = h->gso_type & (uint8_t)~VIRTIO_NET_HDR_GSO_ECN;

	if (h->gso_type != VIRTIO_NET_HDR_GSO_NONE) {
		struct uskb_shared_info *sh = uskb_shinfo(skb);

		if (!(h->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) || !h->gso_size ||
		    !(vh->cfg.dev->features & USKB_DEV_F_TSO) ||
		    !((type == VIRTIO_NET_HDR_GSO_TCPV4 && has(vh, VIRTIO_NET_F_HOST_TSO4)) ||
		      (type == VIRTIO_NET_HDR_GSO_TCPV6 && has(vh, VIRTIO_NET_F_HOST_TSO6))) ||
		    ((h->gso_type & VIRTIO_NET_HDR_GSO_ECN) && !has(vh, VIRTIO_NET_F_HOST_ECN)))
			return false; /* not negotiated, or not a GSO frame the device can take */
		sh->gso_size = h->gso_size;
		sh->gso_type = (type == VIRTIO_NET_HDR_GSO_TCPV4 ? USKB_GSO_TCPV4 : USKB_GSO_TCPV6) | USKB_GSO_DODGY |
			       ((h->gso_type & VIRTIO_NET_HDR_GSO_ECN) ? USKB_GSO_TCP_ECN : 0);
		sh->gso_segs = 0; /* the device works them out */
	}
	if (h->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) {
		if (!uskb_partial_csum_set(skb, h->csum_start, h->csum_offset))
			return false;
		if (!(vh->cfg.dev->features & (USKB_DEV_F_IP_CSUM | USKB_DEV_F_IPV6_CSUM)) &&
		    uskb_checksum_help(skb))
			return false;
	}
	return true;
}

/*
 * The skb for a chain: copied (done at once) or in place (done when the
 * device frees it). NULL: the frame is dropped (counted), its entry done.
 */
static struct uskb *build(struct uskb_vhost *vh, struct vh_queue *q, struct vh_pend *p, const struct chain *c)
{
	struct virtio_net_hdr h;
	size_t frame = c->len - vh->hdr_len;
	unsigned int head;
	int why = -1;
	struct uskb *skb;

	p->zc = false;
	if (c->len < vh->hdr_len + 14) {
		q->st.dropped++;
		atomic_store_explicit(&p->done, true, memory_order_relaxed);
		return NULL;
	}
	chain_copy(c, 0, &h, sizeof(h)); /* the mergeable header's num_buffers is not read on transmit */
	q->st.bytes += frame;
	if (vh->cfg.no_zcopy)
		why = USKB_VHOST_COPY_OFF;
	else if (frame < vh->cfg.copybreak)
		why = USKB_VHOST_COPY_SMALL;
	else if (!(vh->cfg.dev->features & USKB_DEV_F_ZEROCOPY))
		why = USKB_VHOST_COPY_NOZC;
	else if (q->nzc >= vh->cfg.max_pend)
		why = USKB_VHOST_COPY_PEND;
	else if (q->win_packets / 64 < q->st.zcopy_err - q->win_err)
		why = USKB_VHOST_COPY_ERR; /* vhost_net_tx_select_zcopy */
	else if (pieces_after(c, vh->hdr_len + VH_HEAD_COPY) > USKB_MAX_SKB_FRAGS)
		why = USKB_VHOST_COPY_SG;
	head = why < 0 ? (frame < VH_HEAD_COPY ? (unsigned int)frame : VH_HEAD_COPY) : (unsigned int)frame;
	skb = uskb_alloc(head + 2);
	if (!skb) {
		q->st.dropped++;
		atomic_store_explicit(&p->done, true, memory_order_relaxed);
		return NULL;
	}
	uskb_reserve(skb, 2); /* NET_IP_ALIGN: the IP header on 4 */
	chain_copy(c, vh->hdr_len, uskb_put(skb, head), head);
	if (why >= 0) {
		q->st.copied[why]++;
		atomic_store_explicit(&p->done, true, memory_order_relaxed);
	} else {
		bool ref = true;

		attach(skb, p, c, vh->hdr_len + head);
		atomic_init(&p->done, false);
		uskb_ubuf_init(&p->u.ubuf, &tx_ops, USKB_SKBFL_ZEROCOPY_FRAG);
		p->u.ctx = q;
		uskb_zcopy_set(skb, &p->u.ubuf, &ref); /* our reference moves into the skb */
		uskb_shinfo(skb)->flags |= USKB_SKBFL_MANAGED_FRAG_REFS | USKB_SKBFL_SHARED_FRAG;
		p->zc = true;
		q->nzc++;
		q->st.zcopied++;
	}
	if (!apply_hdr(vh, skb, &h)) {
		q->st.dropped++;
		uskb_free(skb); /* completes a zero-copy entry */
		return NULL;
	}
	memcpy(&skb->protocol, skb->data + 12, 2); /* the Ethernet type, as eth_type_trans */
	return skb;
}

/*
 * The device dropped a frame: counted. A device that went down (a peer
 * gone, an interface deleted) drops every frame from then on: that is
 * said once, with its reason, so that it is never only a number. (A frame
 * the device refused on its own, too long say, is only counted: a guest
 * could otherwise write a line per frame.)
 */
static void dev_dropped(struct uskb_vhost *vh, struct vh_queue *q)
{
	q->st.dropped++;
	if (!vh->dev_down_said && !uskb_dev_running(vh->cfg.dev)) {
		char e[160];

		vh->dev_down_said = true;
		if (uskb_dev_last_error(vh->cfg.dev, e, sizeof(e)) <= 0)
			snprintf(e, sizeof(e), "it went down");
		fprintf(stderr, "uskb-vhost: the device failed, its frames are dropped from now on: %s\n", e);
	}
}

/* hand @n skbs to the device; those it is too busy for wait in the backlog. false: still busy */
static bool send(struct uskb_vhost *vh, struct vh_queue *q, struct uskb **skbs, unsigned int n)
{
	int res[VH_BURST];

	if (!n)
		return true;
	uskb_dev_xmit(vh->cfg.dev, 0, skbs, (int)n, res);
	for (unsigned int i = 0; i < n; i++) {
		if (res[i] == USKB_XMIT_BUSY)
			q->backlog[q->nbacklog++] = skbs[i];
		else if (uskb_unlikely(res[i] == USKB_XMIT_DROP))
			dev_dropped(vh, q);
	}
	uskb_dev_flush(vh->cfg.dev, 0);
	return !q->nbacklog;
}

/*
 * The guest need not kick while the backend takes chains anyway (vhost's
 * vhost_disable_notify): without EVENT_IDX, VRING_USED_F_NO_NOTIFY says
 * so; with it, the avail event simply stays behind.
 */
static void notify_off(struct uskb_vhost *vh, struct vh_queue *q)
{
	if (event_idx(vh) || q->no_notify)
		return;
	__atomic_store_n(&q->used->flags, VRING_USED_F_NO_NOTIFY, __ATOMIC_RELAXED);
	q->no_notify = true;
}

/*
 * Ask for a kick when the guest makes more available than the @seen avail
 * index, then look once more (it may have added meanwhile, before it could
 * see the request). true: there is more.
 */
static bool notify_on(struct uskb_vhost *vh, struct vh_queue *q, uint16_t seen)
{
	if (event_idx(vh))
		__atomic_store_n((uint16_t *)&q->used->ring[q->num], seen, __ATOMIC_RELAXED);
	else if (q->no_notify)
		__atomic_store_n(&q->used->flags, 0, __ATOMIC_RELAXED);
	q->no_notify = false;
	vh_mb();
	return __atomic_load_n(&q->avail->idx, __ATOMIC_ACQUIRE) != seen;
}

/*
 * The guest wrote the rings and the frames on another CPU: ask for them
 * ahead (vhost's and DPDK's prefetches). For avail entry @ai (below the
 * avail index): its descriptor, and the frame's first lines once that is
 * in. Only a hint: the chain is checked when it is walked.
 */
static void prefetch_desc(const struct vh_queue *q, uint16_t ai)
{
	uint16_t head = __atomic_load_n(&q->avail->ring[ai % q->num], __ATOMIC_RELAXED);

	if (head < q->num)
		__builtin_prefetch(&q->desc[head]);
}

static void prefetch_frame(struct uskb_vhost *vh, const struct vh_queue *q, uint16_t ai)
{
	uint16_t head = __atomic_load_n(&q->avail->ring[ai % q->num], __ATOMIC_RELAXED);
	struct vring_desc d;
	uint64_t n;
	const uint8_t *p;

	if (head >= q->num)
		return;
	memcpy(&d, (const void *)&q->desc[head], sizeof(d));
	p = gpa_piece(vh, d.addr, d.len, &n);
	if (!p)
		return;
	/* the virtio-net header and what goes into the skb's head, or an indirect table */
	__builtin_prefetch(p);
	if (n > 64)
		__builtin_prefetch(p + 64);
	if (n > 128)
		__builtin_prefetch(p + 128);
}

bool __uskb_vh_tx(struct uskb_vhost *vh, struct vh_queue *q)
{
	struct uskb *skbs[VH_BURST];
	struct chain c;
	bool work;

	if (!q->started || q->broken)
		return false;
	work = __uskb_vh_retire(vh, q);
	if (q->nbacklog) {
		struct uskb *b[VH_BURST];
		unsigned int n = q->nbacklog;

		memcpy(b, q->backlog, n * sizeof(b[0]));
		q->nbacklog = 0;
		if (!send(vh, q, b, n))
			return work; /* (not a reason to look again at once: the device is busy) */
	}
	/* at most VH_WEIGHT chains a call (VHOST_NET_PKT_WEIGHT): the socket and the other queue wait meanwhile */
	for (unsigned int took = 0; took < VH_WEIGHT && !vh_limited(vh, q);) {
		uint16_t avail = __atomic_load_n(&q->avail->idx, __ATOMIC_ACQUIRE);
		unsigned int n = 0;

		if ((uint16_t)(avail - q->last_avail) > q->num) {
			__uskb_vh_fail(vh, q, "avail index %u is more than %u ahead of %u", avail, q->num,
				       q->last_avail);
			return true;
		}
		if (avail == q->last_avail) {
			/* a busy-polling backend looks again soon without being kicked */
			if (vh->spinning || !notify_on(vh, q, q->last_avail))
				break;
			continue;
		}
		notify_off(vh, q);
		while (q->last_avail != avail && n < VH_BURST && q->pend_head - q->pend_tail < q->num &&
		       !vh_limited(vh, q)) {
			uint16_t headi = __atomic_load_n(&q->avail->ring[q->last_avail % q->num], __ATOMIC_RELAXED);
			struct vh_pend *p = &q->pend[q->pend_head % q->num];
			struct uskb *skb;

			if (headi >= q->num) {
				__uskb_vh_fail(vh, q, "head %u beyond a ring of %u", headi, q->num);
				break;
			}
			/* two chains ahead the descriptor, one ahead the frame */
			if ((uint16_t)(avail - q->last_avail) > 2)
				prefetch_desc(q, (uint16_t)(q->last_avail + 2));
			if ((uint16_t)(avail - q->last_avail) > 1)
				prefetch_frame(vh, q, (uint16_t)(q->last_avail + 1));
			if (!walk(vh, q, headi, &c, false))
				break;
			p->u.desc = headi;
			q->pend_head++;
			q->last_avail++;
			q->st.packets++;
			took++;
			work = true;
			/* vhost_net_tx_packet: the err rule looks at the last 1024 frames */
			if (++q->win_packets >= 1024) {
				q->win_packets = 0;
				q->win_err = q->st.zcopy_err;
			}
			skb = build(vh, q, p, &c);
			if (skb)
				skbs[n++] = skb;
		}
		if (!send(vh, q, skbs, n) || q->broken)
			break;
		__uskb_vh_retire(vh, q);
		if (q->pend_head - q->pend_tail == q->num)
			break; /* every chain is out: the device's completions first */
	}
	return __uskb_vh_retire(vh, q) || work;
}

static void chain_write(const struct chain *c, size_t off, const void *from, size_t len)
{
	chain_xfer(c, off, (void *)from, len, true);
}

/* skb bytes [@off, @off + @len) to the chain at @at */
static bool skb_to_chain(const struct uskb *skb, unsigned int off, const struct chain *c, size_t at, size_t len)
{
	uint8_t buf[2048];

	while (len) {
		size_t n = len < sizeof(buf) ? len : sizeof(buf);

		if (uskb_copy_bits(skb, (int)off, buf, (int)n))
			return false;
		chain_write(c, at, buf, n);
		off += (unsigned int)n;
		at += n;
		len -= n;
	}
	return true;
}

/*
 * One frame into the guest's receive buffers (vhost-net's handle_rx,
 * always a copy): with MRG_RXBUF over as many chains as it needs, the
 * count in the first one's header; without, into one chain or dropped.
 * false: not enough buffers yet (the frame waits).
 */
static bool rx_one(struct uskb_vhost *vh, struct vh_queue *q, struct uskb *skb)
{
	bool mrg = has(vh, VIRTIO_NET_F_MRG_RXBUF);
	struct virtio_net_hdr_mrg_rxbuf h = { 0 };
	size_t total = vh->hdr_len + skb->len, done = 0;
	uint16_t avail = __atomic_load_n(&q->avail->idx, __ATOMIC_ACQUIRE), first_used = q->used_idx;
	uint16_t nbufs = 0, take = q->last_avail;
	struct chain c, c0;

	if ((uint16_t)(avail - q->last_avail) > q->num) {
		__uskb_vh_fail(vh, q, "avail index %u is more than %u ahead of %u", avail, q->num, q->last_avail);
		return true;
	}
	/* GUEST_CSUM: a checksum left to do goes to the guest as is (NEEDS_CSUM), a checked one says so */
	if (skb->ip_summed == USKB_CHECKSUM_PARTIAL && has(vh, VIRTIO_NET_F_GUEST_CSUM)) {
		h.hdr.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
		h.hdr.csum_start = (uint16_t)uskb_checksum_start_offset(skb);
		h.hdr.csum_offset = skb->csum_offset;
	} else if (skb->ip_summed == USKB_CHECKSUM_PARTIAL && uskb_checksum_help(skb)) {
		q->st.dropped++;
		return true;
	} else if (skb->ip_summed == USKB_CHECKSUM_UNNECESSARY && has(vh, VIRTIO_NET_F_GUEST_CSUM)) {
		h.hdr.flags = VIRTIO_NET_HDR_F_DATA_VALID;
	}
	/* the chains first: nothing is written until the frame fits */
	while (done < total) {
		uint16_t headi;

		if (take == avail)
			return false;
		headi = __atomic_load_n(&q->avail->ring[take % q->num], __ATOMIC_RELAXED);
		if (headi >= q->num) {
			__uskb_vh_fail(vh, q, "head %u beyond a ring of %u", headi, q->num);
			return true;
		}
		if (!walk(vh, q, headi, &c, true))
			return true;
		if (!nbufs)
			c0 = c;
		if (c.len < (nbufs ? 1 : vh->hdr_len) || (!mrg && c.len < total)) {
			/* a buffer too small for the header, or for the frame without MRG_RXBUF: dropped */
			q->st.dropped++;
			return true;
		}
		{
			size_t here = c.len < total - done ? (size_t)c.len : total - done;
			size_t hdr = nbufs ? 0 : vh->hdr_len;

			if (!skb_to_chain(skb, (unsigned int)(done + hdr - vh->hdr_len), &c, hdr, here - hdr)) {
				q->st.dropped++;
				return true;
			}
			q->used->ring[(uint16_t)(first_used + nbufs) % q->num] =
				(struct vring_used_elem){ .id = headi, .len = (uint32_t)here };
			done += here;
		}
		nbufs++;
		take++;
	}
	h.num_buffers = nbufs;
	chain_write(&c0, 0, &h, vh->hdr_len);
	q->last_avail = take;
	q->used_idx = (uint16_t)(first_used + nbufs);
	q->st.packets++;
	q->st.bytes += skb->len;
	return true;
}

/* the lower device's frames into the guest's receive queue (@q even) */
bool __uskb_vh_rx(struct uskb_vhost *vh, struct vh_queue *q)
{
	uint16_t old = q->used_idx;

	if (!q->started || q->broken)
		return false;
	/* at most VH_WEIGHT frames a call (vhost_exceeds_weight): the socket and transmit wait meanwhile */
	for (unsigned int took = 0; took < VH_WEIGHT;) {
		uint16_t seen = __atomic_load_n(&q->avail->idx, __ATOMIC_ACQUIRE);

		if (!q->rx_skb) {
			int n = uskb_dev_rx(vh->cfg.dev, 0, &q->rx_skb, 1, 0);

			if (n <= 0) {
				q->rx_skb = NULL;
				break;
			}
		}
		if (!rx_one(vh, q, q->rx_skb)) {
			/*
			 * Too few buffers (maybe some, not enough for this frame):
			 * ask for a kick when the guest adds to what was seen, and
			 * try again only if it has.
			 */
			if (!notify_on(vh, q, seen))
				break;
			continue;
		}
		uskb_free(q->rx_skb);
		q->rx_skb = NULL;
		took++;
		if (q->broken)
			break;
	}
	if (q->used_idx == old)
		return false;
	__atomic_store_n(&q->used->idx, q->used_idx, __ATOMIC_RELEASE);
	signal_guest(vh, q, old);
	return true;
}

void __uskb_vh_publish(struct uskb_vhost *vh)
{
	pthread_mutex_lock(&vh->stats_lock);
	for (unsigned int i = 0; i < VH_MAX_QUEUES; i++) {
		struct vh_queue *q = &vh->q[i];

		q->st.pending = q->pend_head - q->pend_tail;
		vh->pub[i] = q->st;
	}
	pthread_mutex_unlock(&vh->stats_lock);
}
