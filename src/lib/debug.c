/* SPDX-License-Identifier: MIT */
/* Fault injection (uskb_fault_inject) and the valgrind check behind lib/debug.h. */
#include "lib/debug.h"

atomic_long __uskb_fault_countdown;

void uskb_fault_inject(long nth)
{
	atomic_store(&__uskb_fault_countdown, nth > 0 ? nth : 0);
}

long uskb_fault_pending(void)
{
	return atomic_load(&__uskb_fault_countdown);
}

bool __uskb_fault_fire(void)
{
	return atomic_fetch_sub(&__uskb_fault_countdown, 1) == 1;
}

#ifdef USKB_VALGRIND
bool __uskb_on_valgrind;

__attribute__((constructor)) static void detect_valgrind(void)
{
	__uskb_on_valgrind = RUNNING_ON_VALGRIND != 0;
}
#endif
