/* SPDX-License-Identifier: MIT */
#ifndef USKB_LIB_LOCK_H
#define USKB_LIB_LOCK_H

/*
 * A mutex for short critical sections: one word, 0 free, 1 held, 2 held
 * with a waiter asleep in the futex (Drepper's "Futexes are tricky",
 * mutex 3). Taking a free lock is one compare-and-swap and giving it back
 * one exchange, inline, without pthread_mutex_lock/unlock's calls and
 * checks of the mutex's type, owner and robust list (about 55
 * instructions a pair).
 *
 * While the process has one thread (glibc's __libc_single_threaded: no
 * thread was ever created; glibc 2.36 leaves it false in the child of a
 * process that had threads), taking a free lock and giving it back are
 * plain stores, as in glibc's pthread_mutex_lock (2.36): a locked
 * instruction costs several ns here, two pairs of them 16 ns of a 42-ns
 * alloc + free with the caches off. Sound, as nothing else can hold or
 * take the lock then, and the flag only goes from true to false in
 * pthread_create(), which no critical section calls.
 *
 * A fork's child inherits a lock another thread of the parent held, and
 * the half-made change behind it: a user of the lock whose data a child
 * may touch takes it across fork() (pthread_atfork), as mem/slab.c does.
 *
 * Not recursive; no owner, so a misuse is not detected. Zero-initialised
 * is unlocked.
 */

#include <stdatomic.h>
#include <stdint.h>
#include "lib/compiler.h"

#if defined(__has_include)
#if __has_include(<sys/single_threaded.h>)
#include <sys/single_threaded.h>
#define uskb_single_threaded() (__libc_single_threaded != 0)
#endif
#endif
#ifndef uskb_single_threaded
#define uskb_single_threaded() 0
#endif

struct uskb_lock {
	_Atomic uint32_t v;
};

#define USKB_LOCK_INIT { 0 }

/* Slow paths: contended (spin a little, then sleep) and a sleeper to wake. */
USKB_HIDDEN void __uskb_lock_wait(struct uskb_lock *l);
USKB_HIDDEN void __uskb_lock_wake(struct uskb_lock *l);

static inline void uskb_lock(struct uskb_lock *l)
{
	uint32_t free = 0;

	/*
	 * (a lock held then, by a signal handler's victim say, is waited for
	 * as glibc's is; the fences keep the critical section's accesses
	 * after the store and before the unlock's, at no cost)
	 */
	if (uskb_single_threaded() && !atomic_load_explicit(&l->v, memory_order_relaxed)) {
		atomic_store_explicit(&l->v, 1, memory_order_relaxed);
		atomic_signal_fence(memory_order_acquire);
		return;
	}
	if (__builtin_expect(!atomic_compare_exchange_strong_explicit(&l->v, &free, 1,
								      memory_order_acquire,
								      memory_order_relaxed),
			     0))
		__uskb_lock_wait(l);
}

static inline void uskb_unlock(struct uskb_lock *l)
{
	if (uskb_single_threaded()) {
		atomic_signal_fence(memory_order_release);
		atomic_store_explicit(&l->v, 0, memory_order_relaxed);
		return;
	}
	if (__builtin_expect(atomic_exchange_explicit(&l->v, 0, memory_order_release) == 2, 0))
		__uskb_lock_wake(l);
}

#endif
