/* SPDX-License-Identifier: MIT */
/*
 * Guest memory that a frontend takes away under the backend. Each region
 * is a MAP_SHARED mapping of the frontend's file; a frontend that shrinks
 * the file (ftruncate) leaves pages past its new end that raise SIGBUS
 * when touched: by the rings, the copies, or a device reading a zero-copy
 * frag. The process must not die of it, nor the other connections.
 *
 * Sealing cannot be relied on: QEMU's memfd backend seals its file against
 * shrinking, but DPDK's virtio-user does not, and the backend may not seal
 * a frontend's file for it (a seal is for good, and the frontend manages
 * its own memory). So every region is registered here, and a SIGBUS inside
 * one is recovered from without unwinding: the handler maps anonymous zero
 * pages over the whole region (MAP_FIXED: an async-signal-safe system
 * call), marks the connection's memory lost, and returns; the faulting
 * access runs again and reads zeros. The backend's loop sees the mark at
 * its next round and closes that connection with a line. A SIGBUS outside
 * every region goes on to what was there before (a handler, or the default
 * action: the process dies as it would have).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>

#include "vhost/priv.h"

#define GUARD_SLOTS 64

struct guard_slot {
	_Atomic uintptr_t start; /* 0: free; stored last, with release */
	_Atomic uintptr_t end;
	atomic_bool *_Atomic lost;
};

static struct guard_slot slots[GUARD_SLOTS];
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t installed = PTHREAD_ONCE_INIT;
static struct sigaction before;

static void on_sigbus(int sig, siginfo_t *si, void *ctx)
{
	uintptr_t a = (uintptr_t)si->si_addr;
	int saved = errno;

	/* (si_code > 0: a fault, not a kill -BUS) */
	for (unsigned int i = 0; si->si_code > 0 && i < GUARD_SLOTS; i++) {
		uintptr_t s = atomic_load_explicit(&slots[i].start, memory_order_acquire);
		uintptr_t e = atomic_load_explicit(&slots[i].end, memory_order_relaxed);

		if (!s || a < s || a >= e)
			continue;
		if (mmap((void *)s, e - s, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
			 0) == MAP_FAILED)
			break;
		atomic_store(atomic_load(&slots[i].lost), true);
		errno = saved;
		return;
	}
	if ((before.sa_flags & SA_SIGINFO) && before.sa_sigaction) {
		before.sa_sigaction(sig, si, ctx);
	} else if (before.sa_handler == SIG_IGN) {
		/* ignored, as before us */
	} else if (before.sa_handler != SIG_DFL) {
		before.sa_handler(sig);
	} else {
		/* the default action: the process dies of it, as it would have */
		signal(SIGBUS, SIG_DFL);
		raise(SIGBUS);
	}
	errno = saved;
}

static void install(void)
{
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO | SA_NODEFER };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, &before);
}

int __uskb_vh_guard_add(void *map, size_t len, atomic_bool *lost)
{
	int ret = -ENOSPC;

	pthread_once(&installed, install);
	pthread_mutex_lock(&slots_lock);
	for (unsigned int i = 0; i < GUARD_SLOTS; i++) {
		if (atomic_load_explicit(&slots[i].start, memory_order_relaxed))
			continue;
		atomic_store(&slots[i].lost, lost);
		atomic_store_explicit(&slots[i].end, (uintptr_t)map + len, memory_order_relaxed);
		atomic_store_explicit(&slots[i].start, (uintptr_t)map, memory_order_release);
		ret = 0;
		break;
	}
	pthread_mutex_unlock(&slots_lock);
	return ret;
}

void __uskb_vh_guard_move(void *map, atomic_bool *lost)
{
	pthread_mutex_lock(&slots_lock);
	for (unsigned int i = 0; i < GUARD_SLOTS; i++)
		if (atomic_load_explicit(&slots[i].start, memory_order_relaxed) == (uintptr_t)map)
			atomic_store(&slots[i].lost, lost);
	pthread_mutex_unlock(&slots_lock);
}

void __uskb_vh_guard_del(void *map)
{
	pthread_mutex_lock(&slots_lock);
	for (unsigned int i = 0; i < GUARD_SLOTS; i++)
		if (atomic_load_explicit(&slots[i].start, memory_order_relaxed) == (uintptr_t)map)
			atomic_store_explicit(&slots[i].start, 0, memory_order_release);
	pthread_mutex_unlock(&slots_lock);
}
