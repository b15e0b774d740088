/* SPDX-License-Identifier: MIT */
/* struct uskb_head queues (sk_buff_head). */
#define _GNU_SOURCE
#include "skb/priv.h"

static inline void q_lock(struct uskb_head *list)
{
	/* acquire: the list's contents are published by the previous unlock */
	while (atomic_flag_test_and_set_explicit(&list->lock, memory_order_acquire))
		__builtin_ia32_pause();
}

static inline void q_unlock(struct uskb_head *list)
{
	atomic_flag_clear_explicit(&list->lock, memory_order_release);
}

void uskb_queue_head_init(struct uskb_head *list)
{
	list->prev = list->next = (struct uskb *)list;
	list->qlen = 0;
	atomic_flag_clear(&list->lock);
}

static void insert(struct uskb *newsk, struct uskb *prev, struct uskb *next,
		   struct uskb_head *list)
{
	newsk->next = next;
	newsk->prev = prev;
	next->prev = newsk;
	prev->next = newsk;
	list->qlen++;
}

void __uskb_queue_tail(struct uskb_head *list, struct uskb *newsk)
{
	insert(newsk, list->prev, (struct uskb *)list, list);
}

void __uskb_queue_head(struct uskb_head *list, struct uskb *newsk)
{
	insert(newsk, (struct uskb *)list, list->next, list);
}

void __uskb_unlink(struct uskb *skb, struct uskb_head *list)
{
	struct uskb *next = skb->next, *prev = skb->prev;

	list->qlen--;
	skb->next = skb->prev = NULL;
	next->prev = prev;
	prev->next = next;
}

struct uskb *uskb_peek(const struct uskb_head *list)
{
	struct uskb *skb = list->next;

	return skb == (const struct uskb *)list ? NULL : skb;
}

struct uskb *uskb_peek_tail(const struct uskb_head *list)
{
	struct uskb *skb = list->prev;

	return skb == (const struct uskb *)list ? NULL : skb;
}

struct uskb *__uskb_dequeue(struct uskb_head *list)
{
	struct uskb *skb = uskb_peek(list);

	if (skb)
		__uskb_unlink(skb, list);
	return skb;
}

struct uskb *__uskb_dequeue_tail(struct uskb_head *list)
{
	struct uskb *skb = uskb_peek_tail(list);

	if (skb)
		__uskb_unlink(skb, list);
	return skb;
}

void uskb_queue_tail(struct uskb_head *list, struct uskb *newsk)
{
	q_lock(list);
	__uskb_queue_tail(list, newsk);
	q_unlock(list);
}

void uskb_queue_head(struct uskb_head *list, struct uskb *newsk)
{
	q_lock(list);
	__uskb_queue_head(list, newsk);
	q_unlock(list);
}

struct uskb *uskb_dequeue(struct uskb_head *list)
{
	struct uskb *skb;

	q_lock(list);
	skb = __uskb_dequeue(list);
	q_unlock(list);
	return skb;
}

struct uskb *uskb_dequeue_tail(struct uskb_head *list)
{
	struct uskb *skb;

	q_lock(list);
	skb = __uskb_dequeue_tail(list);
	q_unlock(list);
	return skb;
}

void uskb_unlink(struct uskb *skb, struct uskb_head *list)
{
	q_lock(list);
	__uskb_unlink(skb, list);
	q_unlock(list);
}

void uskb_append(struct uskb *old, struct uskb *newsk, struct uskb_head *list)
{
	q_lock(list);
	insert(newsk, old, old->next, list);
	q_unlock(list);
}

/* Reset the list to empty; the lock is left alone (__skb_queue_head_init). */
static void reset_list(struct uskb_head *list)
{
	list->prev = list->next = (struct uskb *)list;
	list->qlen = 0;
}

void uskb_queue_purge(struct uskb_head *list)
{
	struct uskb *skb, *next;

	/* take the whole list under the lock, free outside it (a producer cannot starve us) */
	q_lock(list);
	skb = uskb_queue_empty(list) ? NULL : list->next;
	if (skb)
		list->prev->next = NULL;
	reset_list(list);
	q_unlock(list);
	for (; skb; skb = next) {
		next = skb->next;
		skb->next = skb->prev = NULL;
		uskb_free(skb);
	}
}

void uskb_queue_splice_tail_init(struct uskb_head *list, struct uskb_head *head)
{
	struct uskb *first, *last;

	if (uskb_queue_empty(list))
		return;
	first = list->next;
	last = list->prev;
	first->prev = head->prev;
	head->prev->next = first;
	last->next = (struct uskb *)head;
	head->prev = last;
	head->qlen += list->qlen;
	reset_list(list);
}
