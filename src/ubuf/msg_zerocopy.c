/* SPDX-License-Identifier: MIT */
/*
 * MSG_ZEROCOPY: ubufs numbered per socket, whose completions become
 * notifications the sender reads back, merged into ranges.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "ubuf/priv.h"

struct uskb_zc_sock {
	pthread_mutex_t lock;
	atomic_uint zckey;
	atomic_int refs;	/* the owner's + one per ubuf in flight */
	bool dead;
	struct uskb_ubuf_msgzc *head, *tail; /* notifications */
};

static const struct uskb_ubuf_ops msgzc_ops;

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
	/* malloc and a whole-struct store: glibc's calloc skips its thread cache */
	struct uskb_ubuf_msgzc *z = uskb_should_fail() ? NULL : malloc(sizeof(*z));

	if (!z) {
		errno = ENOMEM;
		return NULL;
	}
	*z = (struct uskb_ubuf_msgzc){ .id = atomic_fetch_add(&zs->zckey, 1),
				       .len = 1,
				       .zerocopy = true,
				       .bytelen = (uint32_t)size,
				       .zs = zs };
	uskb_ubuf_init(&z->ubuf, &msgzc_ops, USKB_SKBFL_ZEROCOPY_FRAG | USKB_SKBFL_DONT_ORPHAN);
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
		__uskb_ubuf_put(NULL, uarg, true);
}
