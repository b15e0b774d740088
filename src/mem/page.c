/* SPDX-License-Identifier: MIT */
/*
 * Pages: arenas of page blocks (the buddy allocator's place), page
 * descriptors, the zero page, and the mem layer's statistics.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mem/priv.h"

#define ARENA_SHIFT 22
#define ARENA_SIZE (1ul << ARENA_SHIFT)
#define ARENA_MAGIC 0x75736b6261726e61ull /* "uskbarna" */

struct arena {
	uint64_t magic;
	unsigned int order;
	int node;
	unsigned int nblocks;
	unsigned int first; /* blocks before this hold the header */
	struct arena *next;
	uint64_t __pad[4];
	struct uskb_page pages[];
};

_Static_assert(sizeof(struct uskb_page) == 64, "page descriptor is one line");
_Static_assert(sizeof(struct arena) % 64 == 0, "descriptors stay aligned");

static struct {
	pthread_mutex_t lock;
	struct uskb_page *free[USKB_PAGE_MAX_ORDER + 1][USKB_NODE_SLOTS];
	struct arena *arenas;
	int64_t in_use[USKB_PAGE_MAX_ORDER + 1];
	uint64_t arena_bytes;
	struct uskb_page *zero[USKB_NODE_SLOTS];
} mem = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int node_slot(int node)
{
	return node < 0 ? 0 : node + 1;
}

static size_t block_size(unsigned int order)
{
	return (size_t)USKB_PAGE_SIZE << order;
}

static long sys_mbind(void *addr, unsigned long len, int mode,
		      const unsigned long *mask, unsigned long maxnode)
{
	return syscall(SYS_mbind, addr, len, mode, mask, maxnode, 0);
}

/*
 * The window: a stretch of address space reserved once (PROT_NONE, no
 * memory) in which arenas are mapped one after the other, so that every
 * arena lies in [win.base, win.base + win.used). Arenas are never unmapped,
 * so this range keeps its pages for the life of the process, and a device
 * may register it with the kernel once (io_uring's fixed buffers) instead of
 * pinning each send. Where the reservation fails (an address-space limit) or
 * runs out, arenas are mapped anywhere, outside the window.
 */
#define WINDOW_SIZE (16ul << 30)

static struct {
	char *base;
	size_t used; /* written under mem.lock, read with acquire */
	bool tried;
	bool full; /* no more arenas in it: used up, or a mapping in it failed */
	/*
	 * Held while the zero pages' protection changes: their creation, and
	 * a pin of the window (which may fault in and pin a GiB: not under
	 * mem.lock, which page allocations take whenever a thread's list is
	 * empty or full).
	 */
	pthread_mutex_t pin_lock;
} win = { .pin_lock = PTHREAD_MUTEX_INITIALIZER };

static void window_reserve(void)
{
	char *raw = mmap(NULL, WINDOW_SIZE + ARENA_SIZE, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	char *base;

	win.tried = true;
	if (raw == MAP_FAILED)
		return;
	base = (char *)(((uintptr_t)raw + ARENA_SIZE - 1) & ~(ARENA_SIZE - 1));
	if (base > raw)
		munmap(raw, (size_t)(base - raw));
	munmap(base + WINDOW_SIZE, (size_t)(raw + ARENA_SIZE - base));
	win.base = base;
}

/* map ARENA_SIZE bytes, ARENA_SIZE-aligned: next in the window, else anywhere */
static char *arena_map(bool *in_window)
{
	char *raw, *base;

	if (!win.tried)
		window_reserve();
	*in_window = false;
	if (win.base && !win.full && win.used + ARENA_SIZE <= WINDOW_SIZE) {
		base = mmap(win.base + win.used, ARENA_SIZE, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
		if (base != MAP_FAILED) {
			*in_window = true;
			return base;
		}
		/* what is left of the reservation there is unknown: arenas go elsewhere from now */
		win.full = true;
	}
	raw = mmap(NULL, 2 * ARENA_SIZE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (raw == MAP_FAILED)
		return NULL;
	base = (char *)(((uintptr_t)raw + ARENA_SIZE - 1) & ~(ARENA_SIZE - 1));
	if (base > raw)
		munmap(raw, (size_t)(base - raw));
	if (base + ARENA_SIZE < raw + 2 * ARENA_SIZE)
		munmap(base + ARENA_SIZE, (size_t)(raw + 2 * ARENA_SIZE - (base + ARENA_SIZE)));
	return base;
}

/* an arena_map() that failed later: give the memory back (to the window's reservation) */
static void arena_unmap(char *base, bool in_window)
{
	if (!in_window)
		munmap(base, ARENA_SIZE);
	else if (mmap(base, ARENA_SIZE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
		      MAP_FIXED, -1, 0) == MAP_FAILED)
		win.full = true; /* never reuse a range whose state is unknown */
}

/* Map a new arena for @order on @node and put its blocks on the free list. */
static int arena_grow(unsigned int order, int node)
{
	size_t bs = block_size(order), hdr;
	unsigned int i;
	struct arena *a;
	bool in_window;
	char *base = arena_map(&in_window);

	if (!base)
		return -ENOMEM;
#ifdef MADV_HUGEPAGE
	madvise(base, ARENA_SIZE, MADV_HUGEPAGE);
	/*
	 * The first page of each GiB of the window (where a registration
	 * starts) stays small. io_uring coalesces a registered range made
	 * of huge pages alone, and then charges each frag of a send from it
	 * its offset into the huge page as well (Linux 6.18): a 9000-byte
	 * send over loopback weighed some 400 KB against the receive
	 * buffer, and TCP windows closed.
	 */
	if (in_window && !((uintptr_t)(base - win.base) & ((1ul << 30) - 1)))
		madvise(base, USKB_PAGE_SIZE, MADV_NOHUGEPAGE);
#endif
	if (node >= 0) {
		unsigned long mask[2] = { 0, 0 };

		if (node >= 128 ||
		    (mask[node / 64] = 1ul << (node % 64),
		     sys_mbind(base, ARENA_SIZE, 1 /* MPOL_PREFERRED */, mask, 129))) {
			arena_unmap(base, in_window);
			return -EINVAL;
		}
	}
	if (in_window)
		__atomic_store_n(&win.used, win.used + ARENA_SIZE, __ATOMIC_RELEASE);
	a = (struct arena *)base;
	a->magic = ARENA_MAGIC;
	a->order = order;
	a->node = node;
	a->nblocks = (unsigned int)(ARENA_SIZE / bs);
	hdr = sizeof(*a) + a->nblocks * sizeof(struct uskb_page);
	a->first = (unsigned int)((hdr + bs - 1) / bs);
	a->next = mem.arenas;
	mem.arenas = a;
	mem.arena_bytes += ARENA_SIZE;
	/* push in reverse so blocks are handed out in address order */
	for (i = a->nblocks; i-- > a->first;) {
		struct uskb_page *p = &a->pages[i];

		p->order = (uint8_t)order;
		p->node = (int8_t)node;
		p->addr = base + (size_t)i * bs;
		p->next = mem.free[order][node_slot(node)];
		mem.free[order][node_slot(node)] = p;
		uskb_mem_cached(p->addr, bs);
	}
	return 0;
}

/*
 * Per-thread page lists (the page allocator's per-CPU lists): a thread keeps
 * up to PCP_HIGH(order) free blocks of each order up to PCP_MAX_ORDER that
 * are bound to no node, and moves them to and from the arenas' lists a
 * batch at a time under mem.lock. A thread that frees and allocates such
 * blocks touches no lock. Blocks another thread frees go to its own list.
 *
 * Each thread's lists are a record that is never freed: the records form a
 * registry under mem.lock, a thread takes a free one (or makes one) at its
 * first page operation and gives it back, empty, when it exits; its later
 * frees (other destructors) go to the arenas. Only the owner touches its
 * lists; n is written by the owner (relaxed) and read by uskb_stats_get(),
 * and every change to n that moves blocks to or from the arenas is made
 * under mem.lock with in_use's, so the counters never see a block twice.
 */
#define PCP_MAX_ORDER 3
#define PCP_HIGH(order) (64u >> (order)) /* 256 KiB per order */

struct pcp {
	struct uskb_page *list[PCP_MAX_ORDER + 1];
	atomic_uint n[PCP_MAX_ORDER + 1];
	bool live;	  /* a thread owns it; under mem.lock */
	struct pcp *next; /* the registry, under mem.lock */
};

static __thread struct pcp *pcp_mine __attribute__((tls_model("initial-exec")));
static __thread bool pcp_dead; /* exiting, or no lists to be had: the arenas only */
static struct pcp *pcps;       /* every record made; under mem.lock */
static pthread_key_t pcp_key;
static pthread_once_t pcp_once = PTHREAD_ONCE_INIT;
static int pcp_key_err;

static void pcp_drain(struct pcp *c);

static void pcp_thread_exit(void *arg)
{
	struct pcp *c = arg;

	pcp_drain(c);
	pcp_mine = NULL;
	pcp_dead = true;
	pthread_mutex_lock(&mem.lock);
	c->live = false;
	pthread_mutex_unlock(&mem.lock);
}

/*
 * A fork's child has one thread: the other threads' lists go back to the
 * arenas. (mem.lock is taken around the fork, so no list is half moved.)
 */
static void pcp_fork_prepare(void)
{
	pthread_mutex_lock(&mem.lock);
}

static void pcp_fork_parent(void)
{
	pthread_mutex_unlock(&mem.lock);
}

static struct uskb_page *pcp_cut(struct pcp *c, unsigned int order, unsigned int k,
				 struct uskb_page **last);
static void pcp_give_back(struct pcp *c, unsigned int order, struct uskb_page *first,
			  struct uskb_page *last, unsigned int k);

static void pcp_fork_child(void)
{
	struct pcp *c;
	struct uskb_page *first, *last;
	unsigned int o, n;

	for (c = pcps; c; c = c->next) {
		if (!c->live || c == pcp_mine)
			continue;
		for (o = 0; o <= PCP_MAX_ORDER; o++)
			if ((n = atomic_load_explicit(&c->n[o], memory_order_relaxed))) {
				first = pcp_cut(c, o, n, &last);
				pcp_give_back(c, o, first, last, n);
			}
		c->live = false;
	}
	pthread_mutex_unlock(&mem.lock);
}

static void pcp_key_init(void)
{
	pcp_key_err = pthread_key_create(&pcp_key, pcp_thread_exit);
	if (!pcp_key_err)
		pthread_atfork(pcp_fork_prepare, pcp_fork_parent, pcp_fork_child);
}

/* This thread's lists, taken at its first page operation; NULL once it exits (or none to be had). */
static struct pcp *pcp_register(void)
{
	struct pcp *c;

	if (pcp_dead)
		return NULL;
	pthread_once(&pcp_once, pcp_key_init);
	if (pcp_key_err) {
		pcp_dead = true;
		return NULL;
	}
	pthread_mutex_lock(&mem.lock);
	for (c = pcps; c && c->live; c = c->next)
		;
	if (!c && (c = calloc(1, sizeof(*c)))) {
		c->next = pcps;
		pcps = c;
	}
	if (c)
		c->live = true;
	pthread_mutex_unlock(&mem.lock);
	if (c && pthread_setspecific(pcp_key, c)) {
		pthread_mutex_lock(&mem.lock);
		c->live = false;
		pthread_mutex_unlock(&mem.lock);
		c = NULL;
	}
	if (!c) {
		pcp_dead = true;
		return NULL;
	}
	pcp_mine = c;
	return c;
}

/* The lists a block of @order bound to @node goes through, or NULL: the arenas directly. */
static inline struct pcp *pcp_of(unsigned int order, int node)
{
	struct pcp *c = pcp_mine;

	if (order > PCP_MAX_ORDER || node >= 0)
		return NULL;
	return uskb_likely(c) ? c : pcp_register();
}

static inline void pcp_count(struct pcp *c, unsigned int order, unsigned int n)
{
	atomic_store_explicit(&c->n[order], n, memory_order_relaxed);
}

static inline unsigned int pcp_n(struct pcp *c, unsigned int order)
{
	return atomic_load_explicit(&c->n[order], memory_order_relaxed);
}

/*
 * Take mem.lock with the free list of (@order, @node) not empty, an arena
 * mapped if need be: true, locked; false + errno, unlocked.
 */
static bool lock_free_list(unsigned int order, int node)
{
	int err;

	pthread_mutex_lock(&mem.lock);
	err = mem.free[order][node_slot(node)] ? 0 : arena_grow(order, node);
	if (err) {
		pthread_mutex_unlock(&mem.lock);
		errno = -err;
		return false;
	}
	return true;
}

/* Up to a quarter of the list's bound from the arenas (mapping one if need be); false + errno. */
static bool pcp_refill(struct pcp *c, unsigned int order)
{
	struct uskb_page **head = &mem.free[order][0], *first, *last;
	unsigned int k = 1, want = PCP_HIGH(order) / 4;

	if (!lock_free_list(order, USKB_NO_NODE))
		return false;
	/* a run off the top keeps the blocks in address order */
	first = last = *head;
	while (k < want && last->next) {
		last = last->next;
		k++;
	}
	*head = last->next;
	mem.in_use[order] += k;
	pcp_count(c, order, pcp_n(c, order) + k);
	pthread_mutex_unlock(&mem.lock);
	last->next = c->list[order];
	c->list[order] = first;
	return true;
}

/* Unlink the top @k (at least one) blocks of @c's list of @order: the run's first, and *@last. */
static struct uskb_page *pcp_cut(struct pcp *c, unsigned int order, unsigned int k,
				 struct uskb_page **last)
{
	struct uskb_page *first = c->list[order], *l = first;

	while (--k)
		l = l->next;
	c->list[order] = l->next;
	*last = l;
	return first;
}

/* Under mem.lock: a run of @k blocks cut from @c's list of @order onto the arenas' list. */
static void pcp_give_back(struct pcp *c, unsigned int order, struct uskb_page *first,
			  struct uskb_page *last, unsigned int k)
{
	last->next = mem.free[order][0];
	mem.free[order][0] = first;
	mem.in_use[order] -= k;
	pcp_count(c, order, pcp_n(c, order) - k);
}

/* The top @k blocks of @c's list of @order back to the arenas (the walk outside the lock). */
static void pcp_spill(struct pcp *c, unsigned int order, unsigned int k)
{
	struct uskb_page *first, *last;

	if (!k)
		return;
	first = pcp_cut(c, order, k, &last);
	pthread_mutex_lock(&mem.lock);
	pcp_give_back(c, order, first, last, k);
	pthread_mutex_unlock(&mem.lock);
}

static void pcp_drain(struct pcp *c)
{
	unsigned int o;

	for (o = 0; o <= PCP_MAX_ORDER; o++)
		pcp_spill(c, o, pcp_n(c, o));
}

void __uskb_pcp_flush(void)
{
	if (pcp_mine)
		pcp_drain(pcp_mine);
}

struct uskb_page *__uskb_arena_alloc(unsigned int order, int node)
{
	struct uskb_page *p;
	struct pcp *c;
	int slot = node_slot(node);

	if (uskb_should_fail()) {
		errno = ENOMEM;
		return NULL;
	}

	c = pcp_of(order, node);
	if (c) {
		p = c->list[order];
		if (uskb_unlikely(!p)) {
			if (!pcp_refill(c, order))
				return NULL;
			p = c->list[order];
		}
		c->list[order] = p->next;
		pcp_count(c, order, pcp_n(c, order) - 1);
		goto out;
	}
	if (!lock_free_list(order, node))
		return NULL;
	p = mem.free[order][slot];
	mem.free[order][slot] = p->next;
	mem.in_use[order]++;
	pthread_mutex_unlock(&mem.lock);
out:
	p->next = NULL;
	p->flags = 0;
	p->pp = NULL;
	p->private = 0;
	p->pp_magic = 0;
	uskb_mem_handed_out(p->addr, block_size(order));
	/* relaxed: the page is not yet visible to any other thread */
	atomic_store_explicit(&p->refcount, 1, memory_order_relaxed);
	return p;
}

void __uskb_arena_free(struct uskb_page *p)
{
	unsigned int order = p->order, n;
	struct pcp *c;

	atomic_store_explicit(&p->refcount, 0, memory_order_relaxed);
	p->pp = NULL;
	p->flags = 0;
	uskb_mem_cached(p->addr, uskb_page_size(p));
	c = pcp_of(order, p->node);
	if (c) {
		n = pcp_n(c, order);
		if (uskb_unlikely(n >= PCP_HIGH(order))) {
			pcp_spill(c, order, PCP_HIGH(order) / 2);
			n -= PCP_HIGH(order) / 2;
		}
		p->next = c->list[order];
		c->list[order] = p;
		pcp_count(c, order, n + 1);
		return;
	}
	pthread_mutex_lock(&mem.lock);
	p->next = mem.free[order][node_slot(p->node)];
	mem.free[order][node_slot(p->node)] = p;
	mem.in_use[order]--;
	pthread_mutex_unlock(&mem.lock);
}

struct uskb_page *uskb_page_alloc_node(unsigned int order, int node)
{
	if (order > USKB_PAGE_MAX_ORDER || node >= USKB_NODE_SLOTS - 1 || node < -1) {
		errno = EINVAL;
		return NULL;
	}
	return __uskb_arena_alloc(order, node);
}

struct uskb_page *uskb_page_alloc(unsigned int order)
{
	return uskb_page_alloc_node(order, USKB_NO_NODE);
}

void __uskb_page_free(struct uskb_page *page)
{
	if (uskb_unlikely(page->flags & (USKB_PG_ZERO | USKB_PG_EXTERNAL)))
		uskb_bug("page_put", NULL, "dropped the base reference of %s %p",
			 (page->flags & USKB_PG_ZERO) ? "the zero page" : "user memory",
			 page->addr);
	if (page->pp)
		__uskb_pool_recycle(page);
	else
		__uskb_arena_free(page);
}

static struct arena *arena_of(const void *addr)
{
	return (struct arena *)((uintptr_t)addr & ~(ARENA_SIZE - 1));
}

bool uskb_addr_is_page(const void *addr)
{
	struct arena *a, *want = arena_of(addr);
	bool found = false;

	pthread_mutex_lock(&mem.lock);
	for (a = mem.arenas; a && !found; a = a->next)
		found = a == want;
	pthread_mutex_unlock(&mem.lock);
	if (!found)
		return false;
	return ((uintptr_t)addr - (uintptr_t)want) >> (USKB_PAGE_SHIFT + want->order) >=
	       want->first;
}

struct uskb_page *uskb_virt_to_page(const void *addr)
{
	struct arena *a = arena_of(addr);
	size_t idx;

	if (uskb_unlikely(a->magic != ARENA_MAGIC))
		uskb_bug("virt_to_page", NULL, "%p is not uskb page memory", addr);
	idx = ((uintptr_t)addr - (uintptr_t)a) >> (USKB_PAGE_SHIFT + a->order);
	if (uskb_unlikely(idx < a->first))
		uskb_bug("virt_to_page", NULL, "%p lies in an arena header", addr);
	return &a->pages[idx];
}

void *uskb_page_window(size_t *len)
{
	*len = __atomic_load_n(&win.used, __ATOMIC_ACQUIRE);
	return *len ? win.base : NULL;
}

int uskb_page_window_pin(int (*fn)(void *arg), void *arg)
{
	int s, err;

	/*
	 * A pin for writing (io_uring's registration) refuses the zero pages'
	 * read-only mapping. They are published (and so seen here) under
	 * pin_lock, already read-only. A restore that fails (no memory for
	 * the mapping's split) leaves the page writable: only its guard is lost.
	 */
	pthread_mutex_lock(&win.pin_lock);
	for (s = 0; s < USKB_NODE_SLOTS; s++)
		if (mem.zero[s])
			mprotect(mem.zero[s]->addr, USKB_PAGE_SIZE, PROT_READ | PROT_WRITE);
	err = fn(arg);
	for (s = 0; s < USKB_NODE_SLOTS; s++)
		if (mem.zero[s])
			mprotect(mem.zero[s]->addr, USKB_PAGE_SIZE, PROT_READ);
	pthread_mutex_unlock(&win.pin_lock);
	return err;
}

/* ---- zero page ---- */

struct uskb_page *uskb_zero_page_node(int node)
{
	int slot = node_slot(node);
	struct uskb_page *p;

	if (node < -1 || node >= USKB_NODE_SLOTS - 1)
		uskb_bug("zero_page", NULL, "no such node %d", node);
	/* fast path: set once, published with release (pktgen asks per packet) */
	p = __atomic_load_n(&mem.zero[slot], __ATOMIC_ACQUIRE);
	if (uskb_likely(p))
		return p;

	p = __uskb_arena_alloc(0, node);
	if (!p && node >= 0)
		p = __uskb_arena_alloc(0, USKB_NO_NODE); /* the node has no memory: any will do */
	if (!p)
		return NULL; /* errno ENOMEM; a later call tries again */
	memset(p->addr, 0, USKB_PAGE_SIZE);
	/* made read-only and published under pin_lock: a window pin sees it or runs after */
	pthread_mutex_lock(&win.pin_lock);
	if (mem.zero[slot]) {
		/* lost a race: keep the first, leak-free by retiring ours */
		struct uskb_page *q = p;

		p = mem.zero[slot];
		pthread_mutex_unlock(&win.pin_lock);
		__uskb_arena_free(q);
		return p;
	}
	if (mprotect(p->addr, USKB_PAGE_SIZE, PROT_READ)) {
		int err = errno;

		pthread_mutex_unlock(&win.pin_lock);
		__uskb_arena_free(p);
		errno = err;
		return NULL;
	}
	p->flags = USKB_PG_ZERO | USKB_PG_READONLY;
	pthread_mutex_lock(&mem.lock);
	mem.in_use[0]--; /* a fixture, not a live page */
	pthread_mutex_unlock(&mem.lock);
	__atomic_store_n(&mem.zero[slot], p, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&win.pin_lock);
	return p;
}

struct uskb_page *uskb_zero_page(void)
{
	return uskb_zero_page_node(USKB_NO_NODE);
}

/* ---- stats ---- */

void __uskb_page_stats(struct uskb_stats *st)
{
	int i, s;

	pthread_mutex_lock(&mem.lock);
	st->pages = 0;
	st->pages_cached = 0;
	for (i = 0; i <= USKB_PAGE_MAX_ORDER; i++) {
		int64_t cached = 0;
		struct pcp *c;

		if (i <= PCP_MAX_ORDER)
			for (c = pcps; c; c = c->next)
				cached += pcp_n(c, (unsigned int)i);
		st->pages_by_order[i] = mem.in_use[i] - cached;
		st->pages += mem.in_use[i] - cached;
		st->pages_cached += cached;
	}
	st->arena_bytes = mem.arena_bytes;
	st->zero_page_refs = 0;
	for (s = 0; s < USKB_NODE_SLOTS; s++) {
		/* published under win.pin_lock, not mem.lock */
		struct uskb_page *z = __atomic_load_n(&mem.zero[s], __ATOMIC_ACQUIRE);

		if (z)
			st->zero_page_refs += uskb_page_ref_count(z) - 1;
	}
	pthread_mutex_unlock(&mem.lock);
	__uskb_pool_stats(st);
	__uskb_frag_stats(st);
}
