/* SPDX-License-Identifier: MIT */
/* The contended paths of struct uskb_lock (lib/lock.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib/lock.h"

/* spins before sleeping: a holder's critical section is a few hundred ns */
#define SPINS 128

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield" ::: "memory");
#endif
}

void __uskb_lock_wait(struct uskb_lock *l)
{
	int i, err;
	uint32_t v;

	/* a holder about to give it back: take it without a syscall */
	for (i = 0; i < SPINS; i++) {
		cpu_relax();
		v = 0;
		if (atomic_load_explicit(&l->v, memory_order_relaxed) == 0 &&
		    atomic_compare_exchange_strong_explicit(&l->v, &v, 1, memory_order_acquire,
							    memory_order_relaxed))
			return;
	}
	/*
	 * Mark it contended (2) and sleep while held; whoever takes it after
	 * a sleep takes it as 2, since another sleeper may still be there:
	 * its unlock then wakes one, maybe for nothing.
	 */
	err = errno; /* (the futex's EAGAIN and EINTR are not the caller's) */
	while (atomic_exchange_explicit(&l->v, 2, memory_order_acquire) != 0)
		syscall(SYS_futex, &l->v, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
	errno = err;
}

void __uskb_lock_wake(struct uskb_lock *l)
{
	int err = errno;

	syscall(SYS_futex, &l->v, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	errno = err;
}
