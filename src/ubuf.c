/* SPDX-License-Identifier: MIT */
/*
 * The ubuf layer: zero-copy user buffers in skb frags, their reference
 * counting and completion, orphaning (copy out), and attaching user memory
 * from an iovec.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/uio.h>

#include "internal.h"

struct uskb_zc_sock {
	pthread_mutex_t lock;
	atomic_uint zckey;
	atomic_int refs;	/* the owner's + one per ubuf in flight */
	bool dead;
	struct uskb_ubuf_msgzc *head, *tail; /* notifications */
};

void uskb_ubuf_init(struct uskb_ubuf *uarg, const struct uskb_ubuf_ops *ops, uint8_t flags)
{
	uarg->ops = ops;
	atomic_init(&uarg->refcnt, 1);
	uarg->flags = flags;
	atomic_init(&uarg->copied, false);
	uarg->priv = NULL;
}

/* Descriptors for user memory, owned by the ubuf until its completion. */
struct user_pages {
	struct user_pages *next;
	unsigned int n;
	struct uskb_page pages[];
};

/* Drop one reference; the last one completes, exactly once. */
static void ubuf_put(struct uskb *skb, struct uskb_ubuf *uarg, bool success)
{
	struct user_pages *up, *next;
	int old;

	if (!success)
		/* relaxed: the acq_rel decrement below publishes it to the last holder */
		atomic_store_explicit(&uarg->copied, true, memory_order_relaxed);
	/* acq_rel: the completion must come after every holder is done with the data */
	old = atomic_fetch_sub_explicit(&uarg->refcnt, 1, memory_order_acq_rel);
	if (uskb_likely(old > 1))
		return;
	if (uskb_unlikely(old < 1))
		uskb_bug("zcopy_put", skb, "ubuf %p dropped with refcnt %d", (void *)uarg, old);
	up = uarg->priv;
	uarg->priv = NULL;
	/* the owner may free or reuse uarg in complete(): nothing of it is read after */
	uarg->ops->complete(skb, uarg,
			    !atomic_load_explicit(&uarg->copied, memory_order_relaxed));
	for (; up; up = next) {
		next = up->next;
		free(up);
	}
}

struct uskb_ubuf *uskb_zcopy(const struct uskb *skb)
{
	struct uskb_shared_info *shinfo = uskb_shinfo(skb);

	return (shinfo->flags & USKB_SKBFL_ZEROCOPY_ENABLE) ? shinfo->destructor_arg : NULL;
}

void uskb_zcopy_init(struct uskb *skb, struct uskb_ubuf *uarg)
{
	struct uskb_shared_info *shinfo = uskb_shinfo(skb);

	shinfo->destructor_arg = uarg;
	shinfo->flags |= uarg->flags;
	skb->zcopy_hint = 1;
}

void uskb_zcopy_set(struct uskb *skb, struct uskb_ubuf *uarg, bool *have_ref)
{
	if (uskb_unlikely(uskb_zcopy(skb)))
		uskb_bug("zcopy_set", skb, "skb already carries ubuf %p",
			 (void *)uskb_zcopy(skb));
	if (have_ref && *have_ref)
		*have_ref = false;
	else
		uskb_zcopy_get(uarg);
	uskb_zcopy_init(skb, uarg);
}

void uskb_zcopy_clear(struct uskb *skb, bool success)
{
	struct uskb_ubuf *uarg = uskb_zcopy(skb);

	if (!uarg)
		return;
	uskb_shinfo(skb)->flags &= (uint8_t)~USKB_SKBFL_ALL_ZEROCOPY;
	ubuf_put(skb, uarg, success);
}

void uskb_zcopy_get(struct uskb_ubuf *uarg)
{
	/* relaxed: the caller holds a reference already */
	int old = atomic_fetch_add_explicit(&uarg->refcnt, 1, memory_order_relaxed);

	if (uskb_unlikely(old < 1))
		uskb_bug("zcopy_get", NULL, "ubuf %p revived from refcnt %d", (void *)uarg, old);
}

void uskb_zcopy_put(struct uskb_ubuf *uarg)
{
	if (uarg)
		ubuf_put(NULL, uarg, true);
}

static const struct uskb_ubuf_ops msgzc_ops;

void uskb_zcopy_put_abort(struct uskb_ubuf *uarg, bool have_uref)
{
	if (!uarg)
		return;
	if (uarg->ops == &msgzc_ops) {
		/* msg_zerocopy_put_abort(): the send's number goes back */
		struct uskb_ubuf_msgzc *z = (struct uskb_ubuf_msgzc *)uarg;

		atomic_fetch_sub(&z->zs->zckey, 1);
		z->len--;
	}
	if (have_uref)
		ubuf_put(NULL, uarg, true);
}

int uskb_zerocopy_clone(struct uskb *nskb, struct uskb *orig)
{
	struct uskb_ubuf *uarg = uskb_zcopy(orig);

	if (!uarg)
		return 0;
	if (uskb_zcopy(nskb)) {
		if (uskb_zcopy(nskb) == uarg)
			return 0;
		if (uskb_copy_ubufs(nskb))
			return -EIO;
	}
	uskb_zcopy_set(nskb, uarg, NULL);
	return 0;
}

void uskb_zcopy_downgrade_managed(struct uskb *skb)
{
	struct uskb_shared_info *shinfo = uskb_shinfo(skb);
	int i;

	if (!(shinfo->flags & USKB_SKBFL_MANAGED_FRAG_REFS))
		return;
	for (i = 0; i < shinfo->nr_frags; i++)
		uskb_page_get(shinfo->frags[i].page);
	shinfo->flags &= (uint8_t)~USKB_SKBFL_MANAGED_FRAG_REFS;
}

int uskb_copy_ubufs(struct uskb *skb)
{
	struct uskb_shared_info *shinfo;
	struct uskb_page *page, *head = NULL;
	unsigned int order = 0, pagelen = 0, new_frags, i, psize, d_off;
	int num_frags;

	if (uskb_shared(skb) || __uskb_unclone_keep_frags(skb))
		return -EINVAL;
	shinfo = uskb_shinfo(skb);
	num_frags = shinfo->nr_frags;
	if (!num_frags)
		goto release;
	for (i = 0; i < (unsigned int)num_frags; i++)
		pagelen += shinfo->frags[i].len;
	/* the smallest order whose 17 frags can hold it */
	while (((size_t)USKB_PAGE_SIZE << order) * USKB_MAX_SKB_FRAGS < pagelen)
		order++;
	if (order > USKB_PAGE_MAX_ORDER)
		return -ENOMEM;
	psize = USKB_PAGE_SIZE << order;
	new_frags = (pagelen + psize - 1) / psize;
	for (i = 0; i < new_frags; i++) {
		page = uskb_page_alloc(order);
		if (!page) {
			while (head) {
				struct uskb_page *next = (struct uskb_page *)head->private;

				uskb_page_put(head);
				head = next;
			}
			return -ENOMEM;
		}
		page->private = (uintptr_t)head;
		head = page;
	}
	/* copy in order; the chain order of equal pages does not matter */
	page = head;
	d_off = 0;
	for (i = 0; i < (unsigned int)num_frags; i++) {
		const unsigned char *src = uskb_frag_address(&shinfo->frags[i]);
		unsigned int len = shinfo->frags[i].len, done = 0;

		while (done < len) {
			unsigned int copy;

			if (d_off == psize) {
				d_off = 0;
				page = (struct uskb_page *)page->private;
			}
			copy = psize - d_off < len - done ? psize - d_off : len - done;
			memcpy((char *)page->addr + d_off, src + done, copy);
			done += copy;
			d_off += copy;
		}
	}
	/* let go of the user frags (managed ones hold no reference) */
	for (i = 0; i < (unsigned int)num_frags; i++)
		uskb_frag_unref(skb, (int)i);
	for (i = 0; i < new_frags; i++) {
		struct uskb_page *next = (struct uskb_page *)head->private;

		head->private = 0;
		uskb_frag_fill_page_desc(&shinfo->frags[i], head, 0,
					 (int)(i == new_frags - 1 ? d_off : psize));
		head = next;
	}
	shinfo->nr_frags = (uint8_t)new_frags;
release:
	uskb_zcopy_clear(skb, false);
	return 0;
}

int uskb_orphan_frags(struct uskb *skb)
{
	/* likely: no user memory, or a MSG_ZEROCOPY send its owner waits for */
	if (uskb_likely(!uskb_zcopy(skb)) ||
	    (uskb_shinfo(skb)->flags & USKB_SKBFL_DONT_ORPHAN))
		return 0;
	return uskb_copy_ubufs(skb);
}

int uskb_orphan_frags_rx(struct uskb *skb)
{
	if (uskb_likely(!uskb_zcopy(skb)))
		return 0;
	return uskb_copy_ubufs(skb);
}

/* ---- attaching user memory ---- */

static _Atomic unsigned int zc_min_len = USKB_ZC_MIN_LEN;

void uskb_zerocopy_set_min_len(unsigned int len)
{
	atomic_store(&zc_min_len, len);
}

unsigned int uskb_zerocopy_min_len(void)
{
	return atomic_load(&zc_min_len);
}

int uskb_zerocopy_attach(struct uskb *skb, const struct iovec *iov, int iovcnt,
			 struct uskb_ubuf *uarg, unsigned int copy_len)
{
	size_t total = 0, skip;
	struct user_pages *up;
	int i, nfrags = 0, seg;
	unsigned int done = 0;

	if (uskb_unlikely(iovcnt < 0 || !uarg || uskb_is_nonlinear(skb) || uskb_zcopy(skb)))
		return -EINVAL;
	for (i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len > (1u << 30) || total + iov[i].iov_len > (1u << 30))
			return -EMSGSIZE;
		total += iov[i].iov_len;
	}
	if (copy_len > total)
		copy_len = (unsigned int)total;
	/* frags needed after the copied prefix: one per remaining segment */
	skip = copy_len;
	for (i = 0; i < iovcnt; i++) {
		if (skip >= iov[i].iov_len) {
			skip -= iov[i].iov_len;
			continue;
		}
		skip = 0;
		nfrags++;
	}
	if (nfrags == 0 || nfrags > USKB_MAX_SKB_FRAGS ||
	    total < atomic_load_explicit(&zc_min_len, memory_order_relaxed)) {
		/* small, or too scattered: copy it all; the owner hears "copied" */
		if ((size_t)uskb_tailroom(skb) < total)
			return -EMSGSIZE;
		for (i = 0; i < iovcnt; i++)
			if (iov[i].iov_len)
				uskb_put_data(skb, iov[i].iov_base, (unsigned int)iov[i].iov_len);
		atomic_store_explicit(&uarg->copied, true, memory_order_relaxed);
		return 0;
	}
	if ((unsigned int)uskb_tailroom(skb) < copy_len)
		return -EMSGSIZE;
	up = uskb_should_fail() ? NULL : malloc(sizeof(*up) + (size_t)nfrags * sizeof(struct uskb_page));
	if (!up)
		return -ENOMEM;
	memset(up, 0, sizeof(*up) + (size_t)nfrags * sizeof(struct uskb_page));
	up->n = (unsigned int)nfrags;
	/* the head: the first copy_len bytes */
	for (i = 0; i < iovcnt && done < copy_len; i++) {
		unsigned int c = iov[i].iov_len < copy_len - done ? (unsigned int)iov[i].iov_len :
								     copy_len - done;

		if (c)
			uskb_put_data(skb, iov[i].iov_base, c);
		done += c;
	}
	/* the rest: frags straight into the caller's memory, references managed by the ubuf */
	skip = copy_len;
	seg = 0;
	for (i = 0; i < iovcnt; i++) {
		struct uskb_page *p;
		size_t off = 0, len = iov[i].iov_len;
		unsigned int order = 0;

		if (skip >= len) {
			skip -= len;
			continue;
		}
		off = skip;
		skip = 0;
		p = &up->pages[seg];
		while (((size_t)USKB_PAGE_SIZE << order) < len)
			order++;
		atomic_init(&p->refcount, 1); /* the ubuf's; never dropped */
		p->flags = USKB_PG_EXTERNAL | USKB_PG_READONLY;
		p->order = (uint8_t)order;
		p->node = USKB_NO_NODE;
		p->addr = iov[i].iov_base;
		uskb_frag_fill_page_desc(&uskb_shinfo(skb)->frags[seg], p, (int)off, (int)(len - off));
		skb->len += (unsigned int)(len - off);
		skb->data_len += (unsigned int)(len - off);
		seg++;
	}
	uskb_shinfo(skb)->nr_frags = (uint8_t)seg;
	up->next = uarg->priv;
	uarg->priv = up;
	uskb_zcopy_set(skb, uarg, NULL);
	uskb_shinfo(skb)->flags |= USKB_SKBFL_MANAGED_FRAG_REFS | USKB_SKBFL_SHARED_FRAG;
	if (uarg->ops->link_skb) {
		int err = uarg->ops->link_skb(skb, uarg);

		if (err)
			return err; /* the skb holds the data; freeing it completes the ubuf */
	}
	return 0;
}

/* ---- MSG_ZEROCOPY ---- */

static void zc_sock_put(struct uskb_zc_sock *zs)
{
	/* acq_rel: the last one frees what the others queued */
	if (atomic_fetch_sub_explicit(&zs->refs, 1, memory_order_acq_rel) == 1) {
		struct uskb_ubuf_msgzc *n, *next;

		for (n = zs->head; n; n = next) {
			next = n->next;
			free(n);
		}
		pthread_mutex_destroy(&zs->lock);
		free(zs);
	}
}

struct uskb_zc_sock *uskb_zc_sock_create(void)
{
	struct uskb_zc_sock *zs = calloc(1, sizeof(*zs));

	if (!zs)
		return NULL;
	pthread_mutex_init(&zs->lock, NULL);
	atomic_init(&zs->refs, 1);
	return zs;
}

void uskb_zc_sock_destroy(struct uskb_zc_sock *zs)
{
	if (!zs)
		return;
	pthread_mutex_lock(&zs->lock);
	zs->dead = true;
	pthread_mutex_unlock(&zs->lock);
	zc_sock_put(zs);
}

uint32_t uskb_zc_sock_next_id(struct uskb_zc_sock *zs)
{
	return atomic_load(&zs->zckey);
}

/* __msg_zerocopy_callback(): queue (or merge) the completed range. */
static void msgzc_complete(struct uskb *skb, struct uskb_ubuf *uarg, bool success)
{
	struct uskb_ubuf_msgzc *z = (struct uskb_ubuf_msgzc *)uarg;
	struct uskb_zc_sock *zs = z->zs;
	struct uskb_ubuf_msgzc *tail;
	bool queued = false;

	(void)skb;
	z->zerocopy = z->zerocopy && success;
	pthread_mutex_lock(&zs->lock);
	/* nothing to say for an aborted send, nobody to say it to on a dead socket */
	if (z->len && !zs->dead) {
		uint32_t hi = z->id + z->len - 1u;

		tail = zs->tail;
		/*
		 * skb_zerocopy_notify_extend(): extend the last notification
		 * when this range follows it (and the sum stays below 2^32).
		 * Difference: only when both have the same copied mark, so a
		 * copied send is never reported as zero-copy.
		 */
		if (tail && z->id == tail->hi + 1u &&
		    (uint64_t)(tail->hi - tail->id) + 1u + z->len < (1ull << 32) &&
		    tail->zerocopy == z->zerocopy) {
			tail->hi = hi;
		} else {
			z->hi = hi;
			z->next = NULL;
			if (tail)
				tail->next = z;
			else
				zs->head = z;
			zs->tail = z;
			queued = true;
		}
	}
	pthread_mutex_unlock(&zs->lock);
	if (!queued)
		free(z);
	zc_sock_put(zs);
}

static const struct uskb_ubuf_ops msgzc_ops = { .complete = msgzc_complete };

static struct uskb_ubuf *msgzc_alloc(struct uskb_zc_sock *zs, size_t size)
{
	struct uskb_ubuf_msgzc *z = uskb_should_fail() ? NULL : calloc(1, sizeof(*z));

	if (!z) {
		errno = ENOMEM;
		return NULL;
	}
	uskb_ubuf_init(&z->ubuf, &msgzc_ops, USKB_SKBFL_ZEROCOPY_FRAG | USKB_SKBFL_DONT_ORPHAN);
	z->id = atomic_fetch_add(&zs->zckey, 1);
	z->len = 1;
	z->bytelen = (uint32_t)size;
	z->zerocopy = true;
	z->zs = zs;
	atomic_fetch_add(&zs->refs, 1);
	return &z->ubuf;
}

struct uskb_ubuf *uskb_msg_zerocopy_realloc(struct uskb_zc_sock *zs, size_t size,
					    struct uskb_ubuf *prev)
{
	if (size > (1u << 30)) {
		errno = EMSGSIZE;
		return NULL;
	}
	if (prev && prev->ops == &msgzc_ops) {
		struct uskb_ubuf_msgzc *z = (struct uskb_ubuf_msgzc *)prev;
		uint64_t bytelen = (uint64_t)z->bytelen + size;

		/* coalesce while the range is still open at the counter */
		if (z->zs == zs && z->len < 0xffff - 1 && bytelen <= (1u << 19) &&
		    z->id + z->len == atomic_load(&zs->zckey)) {
			z->len++;
			z->bytelen = (uint32_t)bytelen;
			atomic_fetch_add(&zs->zckey, 1);
			uskb_zcopy_get(prev);
			return prev;
		}
	}
	return msgzc_alloc(zs, size);
}

int uskb_zc_sock_read(struct uskb_zc_sock *zs, struct uskb_zc_notif *out, int max)
{
	struct uskb_ubuf_msgzc *n, *done = NULL;
	int k = 0;

	pthread_mutex_lock(&zs->lock);
	while (k < max && (n = zs->head)) {
		out[k].lo = n->id;
		out[k].hi = n->hi;
		out[k].copied = !n->zerocopy;
		k++;
		zs->head = n->next;
		if (!zs->head)
			zs->tail = NULL;
		n->next = done;
		done = n;
	}
	pthread_mutex_unlock(&zs->lock);
	while ((n = done)) {
		done = n->next;
		free(n);
	}
	return k;
}

/* ---- skb_zerocopy: a message that references a packet's data ---- */

unsigned int uskb_zerocopy_headlen(const struct uskb *from)
{
	unsigned int hlen = 0;

	if (!from->head_frag || uskb_headlen(from) < USKB_CACHE_BYTES ||
	    uskb_shinfo(from)->nr_frags >= USKB_MAX_SKB_FRAGS) {
		hlen = uskb_headlen(from);
		if (!hlen)
			hlen = from->len;
	}
	if (uskb_has_frag_list(from))
		hlen = from->len;
	return hlen;
}

/* skb_tx_error(): the send failed; the owner hears (as sent, as the kernel says). */
static void tx_error(struct uskb *skb)
{
	uskb_zcopy_downgrade_managed(skb);
	uskb_zcopy_clear(skb, true);
}

int uskb_zerocopy(struct uskb *to, struct uskb *from, int len, int hlen)
{
	struct uskb_shared_info *tsh = uskb_shinfo(to), *fsh;
	int i, j = 0, plen = 0, ret;

	if (uskb_unlikely(!from->head_frag && !hlen))
		uskb_bug("zerocopy", from, "a kmalloc head cannot be shared: hlen must be set");
	if (uskb_unlikely(len < 0 || hlen < 0 || hlen > len || len > (int)from->len))
		return -EFAULT;
	/* small payloads are not worth the frags */
	if (len <= uskb_tailroom(to))
		return uskb_copy_bits(from, 0, uskb_put(to, (unsigned int)len), len);
	if (hlen) {
		if ((unsigned int)hlen > (unsigned int)uskb_tailroom(to))
			return -EFAULT;
		ret = uskb_copy_bits(from, 0, uskb_put(to, (unsigned int)hlen), hlen);
		if (uskb_unlikely(ret))
			return ret;
		len -= hlen;
	} else {
		plen = (int)uskb_headlen(from) < len ? (int)uskb_headlen(from) : len;
		if (plen) {
			/* frag 0 is from's head, by page reference */
			struct uskb_page *page = uskb_virt_to_page(from->head);

			uskb_frag_fill_page_desc(&tsh->frags[0], page,
						 (int)(from->data - (unsigned char *)page->addr), plen);
			uskb_page_get(page);
			tsh->nr_frags = 1;
			j = 1;
			len -= plen;
		}
	}
	to->len += (unsigned int)(len + plen);
	to->data_len += (unsigned int)(len + plen);
	if (uskb_unlikely(uskb_orphan_frags(from))) {
		tx_error(from);
		return -ENOMEM;
	}
	uskb_zerocopy_clone(to, from);
	fsh = uskb_shinfo(from);
	for (i = 0; i < fsh->nr_frags && len; i++) {
		int size;

		if (uskb_unlikely(j == USKB_MAX_SKB_FRAGS))
			uskb_bug("zerocopy", to, "more than %d frags", USKB_MAX_SKB_FRAGS);
		tsh->frags[j] = fsh->frags[i];
		size = (int)tsh->frags[j].len < len ? (int)tsh->frags[j].len : len;
		tsh->frags[j].len = (uint32_t)size;
		len -= size;
		uskb_frag_ref(to, j);
		j++;
	}
	tsh->nr_frags = (uint8_t)j;
	return 0;
}
