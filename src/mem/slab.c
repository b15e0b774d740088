/* SPDX-License-Identifier: MIT */
/*
 * The slab: global stacks of free fixed-size objects behind the per-thread
 * caches: skb shells (carved from 64-shell slabs) and the size classes of
 * kmalloc-style data buffers (carved from 32 KiB page blocks). Objects are
 * never returned to the system; a free only pushes, and cannot fail.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "mem/priv.h"
#include "uskb/skb.h"

/*
 * A free object that holds the addresses of up to st->cap other free
 * objects. The top chunk's count lives in the stack (st->top_n), so a push
 * or pop of one object touches the stack and one line of the chunk's
 * array; a chunk's own n is written when another chunk covers it.
 */
struct uskb_objchunk {
	struct uskb_objchunk *next;
	size_t n;
	void *obj[];
};

#define CHUNK_HDR sizeof(struct uskb_objchunk)

/*
 * The order is a plain stack's: a chunk sits below the objects its array
 * holds, so v[n - 1] of a push is the top, and a pop of k fills v[k - 1]
 * with the top.
 */
void __uskb_objstack_push(struct uskb_objstack *st, void **v, size_t n)
{
	struct uskb_objchunk *c;
	size_t i, cn;

	pthread_mutex_lock(&st->lock);
	st->n += n;
	c = st->top;
	cn = st->top_n;
	for (i = 0; i < n; i++) {
		void *o = v[i];

		if (c && cn < st->cap) {
			c->obj[cn++] = o;
			continue;
		}
		/* the object becomes a chunk: its header and addresses stay readable */
		if (c)
			c->n = cn;
		uskb_mem_defined(o, CHUNK_HDR + st->cap * sizeof(void *));
		((struct uskb_objchunk *)o)->next = c;
		c = o;
		cn = 0;
	}
	st->top = c;
	st->top_n = cn;
	pthread_mutex_unlock(&st->lock);
}

size_t __uskb_objstack_pop(struct uskb_objstack *st, void **v, size_t n)
{
	struct uskb_objchunk *c;
	size_t left = n; /* v[0 .. left - 1] still to fill, from the top down */
	size_t cn;

	pthread_mutex_lock(&st->lock);
	c = st->top;
	cn = st->top_n;
	while (left && c) {
		if (cn) {
			size_t k = cn < left ? cn : left;

			cn -= k;
			left -= k;
			memcpy(v + left, c->obj + cn, k * sizeof(void *));
			continue;
		}
		/* an empty chunk is an object like the others */
		v[--left] = c;
		c = c->next;
		cn = c ? c->n : 0;
		uskb_mem_cached(v[left], CHUNK_HDR + st->cap * sizeof(void *));
	}
	st->top = c;
	st->top_n = cn;
	st->n -= n - left;
	pthread_mutex_unlock(&st->lock);
	if (left) /* the stack ran out: what came sits at the end */
		memmove(v, v + left, (n - left) * sizeof(void *));
	return n - left;
}

/* ---- shells ---- */

#define SHELL_SLAB 64
#define SHELL_SIZE USKB_DATA_ALIGN(sizeof(struct uskb))

static struct uskb_objstack shells = USKB_OBJSTACK_INIT(SHELL_SIZE);
static atomic_llong shells_created;

unsigned int __uskb_slab_shells_get(void **v, unsigned int n)
{
	size_t got = __uskb_objstack_pop(&shells, v, n);

	while (got < n) {
		void *slab[SHELL_SLAB];
		char *mem = uskb_should_fail() ? NULL :
			    aligned_alloc(USKB_CACHE_BYTES, SHELL_SLAB * SHELL_SIZE);
		int i;

		if (!mem)
			break;
		for (i = 0; i < SHELL_SLAB; i++) {
			slab[i] = mem + (size_t)i * SHELL_SIZE;
			uskb_mem_cached(slab[i], SHELL_SIZE);
		}
		atomic_fetch_add_explicit(&shells_created, SHELL_SLAB, memory_order_relaxed);
		__uskb_objstack_push(&shells, slab, SHELL_SLAB);
		got += __uskb_objstack_pop(&shells, v + got, n - got);
	}
	return (unsigned int)got;
}

void __uskb_slab_shells_put(void **v, unsigned int n)
{
	__uskb_objstack_push(&shells, v, n);
}

int64_t __uskb_slab_shells_created(void)
{
	return atomic_load_explicit(&shells_created, memory_order_relaxed);
}

/* ---- kbufs ---- */

#define KBUF_STACK(c) USKB_OBJSTACK_INIT(512u << (c))

static struct uskb_objstack kbufs[USKB_KBUF_CLASSES] = {
	KBUF_STACK(0), KBUF_STACK(1), KBUF_STACK(2), KBUF_STACK(3), KBUF_STACK(4), KBUF_STACK(5),
};
_Static_assert(USKB_KBUF_CLASSES == 6, "one stack per class");

static atomic_llong slab_pages;

unsigned int __uskb_slab_kbufs_get(int c, void **v, unsigned int n)
{
	size_t got = __uskb_objstack_pop(&kbufs[c], v, n);

	while (got < n) {
		struct uskb_page *p = uskb_page_alloc(USKB_PAGE_FRAG_ORDER);
		unsigned int sz = uskb_kbuf_class_size(c), i, cnt;
		void *objs[(USKB_PAGE_SIZE << USKB_PAGE_FRAG_ORDER) / 512];

		if (!p)
			break;
		p->flags |= USKB_PG_SLAB;
		p->private = (uintptr_t)c;
		cnt = (unsigned int)(uskb_page_size(p) / sz);
		/* pushed last to first, so they come off in address order */
		for (i = 0; i < cnt; i++) {
			objs[i] = (char *)p->addr + (size_t)(cnt - 1 - i) * sz;
			uskb_mem_cached(objs[i], sz);
		}
		atomic_fetch_add_explicit(&slab_pages, 1, memory_order_relaxed);
		__uskb_objstack_push(&kbufs[c], objs, cnt);
		got += __uskb_objstack_pop(&kbufs[c], v + got, n - got);
	}
	return (unsigned int)got;
}

void __uskb_slab_kbufs_put(int c, void **v, unsigned int n)
{
	__uskb_objstack_push(&kbufs[c], v, n);
}

int64_t __uskb_slab_pages(void)
{
	return atomic_load_explicit(&slab_pages, memory_order_relaxed);
}
