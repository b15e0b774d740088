/* SPDX-License-Identifier: MIT */
/*
 * The slab: global stacks of free fixed-size objects behind the per-thread
 * caches: slabs of objects from malloc (the skb layer's shells, 84 at a
 * time) and the size classes of kmalloc-style data buffers (carved from
 * 32 KiB page blocks). Objects are never returned to the system; a free
 * only pushes, and cannot fail.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "mem/priv.h"

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
 * fork(): another thread of the parent must not be inside a stack at the
 * fork: the child would wait forever for its lock (glibc 2.36 leaves the
 * child's __libc_single_threaded false, lib/lock.h). Every stack goes on a
 * list before its lock is first taken; the prepare handler takes the
 * list's lock and then every stack's, the parent and the child give them
 * back. The handler is registered at load, so it runs after the prepare
 * handlers an application registers later (which may free skbs). No stack
 * lock is held while the list's is taken.
 */
static struct {
	struct uskb_lock lock;
	struct uskb_objstack *first;
} forklist;

static void stacks_fork_prepare(void)
{
	struct uskb_objstack *st;

	uskb_lock(&forklist.lock);
	for (st = forklist.first; st; st = st->fork_next)
		uskb_lock(&st->lock);
}

static void stacks_fork_done(void)
{
	struct uskb_objstack *st;

	for (st = forklist.first; st; st = st->fork_next)
		uskb_unlock(&st->lock);
	uskb_unlock(&forklist.lock);
}

static __attribute__((constructor)) void forklist_init(void)
{
	/* (fails only without memory, at load: nothing to do but go on) */
	(void)pthread_atfork(stacks_fork_prepare, stacks_fork_done, stacks_fork_done);
}

static __attribute__((noinline)) void stack_list(struct uskb_objstack *st)
{
	uskb_lock(&forklist.lock);
	if (!atomic_load_explicit(&st->listed, memory_order_relaxed)) {
		st->fork_next = forklist.first;
		forklist.first = st;
		atomic_store_explicit(&st->listed, true, memory_order_relaxed);
	}
	uskb_unlock(&forklist.lock);
}

/* Take @st's lock; the first time, put @st on the fork list before. */
static inline void stack_lock(struct uskb_objstack *st)
{
	/* unlikely: the stack's first push or pop */
	if (uskb_unlikely(!atomic_load_explicit(&st->listed, memory_order_relaxed)))
		stack_list(st);
	uskb_lock(&st->lock);
}

/*
 * The order is a plain stack's: a chunk sits below the objects its array
 * holds, so v[n - 1] of a push is the top, and a pop of k fills v[k - 1]
 * with the top.
 */
void __uskb_objstack_push(struct uskb_objstack *st, void **v, size_t n)
{
	struct uskb_objchunk *c;
	size_t i, cn;

	stack_lock(st);
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
	uskb_unlock(&st->lock);
}

size_t __uskb_objstack_pop(struct uskb_objstack *st, void **v, size_t n)
{
	struct uskb_objchunk *c;
	size_t left = n; /* v[0 .. left - 1] still to fill, from the top down */
	size_t cn;

	stack_lock(st);
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
	uskb_unlock(&st->lock);
	if (left) /* the stack ran out: what came sits at the end */
		memmove(v, v + left, (n - left) * sizeof(void *));
	return n - left;
}

/* ---- slabs of objects from malloc ---- */

#define SLAB_OBJS 64 /* at least, a slab */
#define SLAB_PAGE 4096

/*
 * Objects no larger than a page are placed whole within pages: a store
 * split across two pages (the clone's 16-byte move at an skb's offset
 * 0x7a, say) costs several times a split across lines, and about one
 * 192-byte shell in 32 straddled a page boundary otherwise. The kernel's
 * slabs need not care: its direct map has huge pages. So a slab is whole
 * pages, the last bytes of each left unused (64 of 4096 for a shell) and
 * poisoned, so an overrun past a page's last object is still caught.
 *
 * slab_carve() puts a new slab of @sl's objects on its stack: false when
 * memory ran out. (Out of __uskb_slab_get(), whose every call would
 * otherwise pay its two divisions.)
 */
static bool slab_carve(struct uskb_slab *sl)
{
	size_t per = sl->size <= SLAB_PAGE ? SLAB_PAGE / sl->size : 0;
	size_t pages = per ? (SLAB_OBJS + per - 1) / per : 0;
	size_t total = per ? pages * per : SLAB_OBJS, i;
	void *objs[2 * SLAB_OBJS]; /* total < SLAB_OBJS + per, and per <= SLAB_PAGE / 64 */
	char *mem = uskb_should_fail() ? NULL :
		    per ? aligned_alloc(SLAB_PAGE, pages * SLAB_PAGE) :
			  aligned_alloc(USKB_CACHE_BYTES, SLAB_OBJS * sl->size);

	if (!mem)
		return false;
	for (i = 0; i < total; i++) {
		objs[i] = per ? mem + i / per * SLAB_PAGE + i % per * sl->size : mem + i * sl->size;
		uskb_mem_cached(objs[i], sl->size);
	}
	for (i = 0; per && per * sl->size < SLAB_PAGE && i < pages; i++)
		uskb_mem_cached(mem + i * SLAB_PAGE + per * sl->size, SLAB_PAGE - per * sl->size);
	atomic_fetch_add_explicit(&sl->created, (int64_t)total, memory_order_relaxed);
	__uskb_objstack_push(&sl->st, objs, total);
	return true;
}

size_t __uskb_slab_get(struct uskb_slab *sl, void **v, size_t n)
{
	size_t got = __uskb_objstack_pop(&sl->st, v, n);

	/* unlikely: the stack ran dry */
	while (uskb_unlikely(got < n) && slab_carve(sl))
		got += __uskb_objstack_pop(&sl->st, v + got, n - got);
	return got;
}

void __uskb_slab_put(struct uskb_slab *sl, void **v, size_t n)
{
	__uskb_objstack_push(&sl->st, v, n);
}

int64_t __uskb_slab_created(struct uskb_slab *sl)
{
	return atomic_load_explicit(&sl->created, memory_order_relaxed);
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
