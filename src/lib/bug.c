/* SPDX-License-Identifier: MIT */
/* uskb_bug(): the report of caller misuse, and its handler. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "lib/compiler.h"
#include "uskb/skb.h"

static _Atomic(uskb_bug_handler_t) bug_handler;

uskb_bug_handler_t uskb_set_bug_handler(uskb_bug_handler_t fn)
{
	return atomic_exchange(&bug_handler, fn);
}

void __uskb_bug(const char *op, const struct uskb *skb, const char *file, int line,
		const void *caller, const char *fmt, ...)
{
	char buf[1024];
	int n;
	va_list ap;
	uskb_bug_handler_t fn;

	n = snprintf(buf, sizeof(buf), "uskb BUG: %s: ", op);
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	va_end(ap);
	if (skb && n < (int)sizeof(buf))
		n += snprintf(buf + n, sizeof(buf) - (size_t)n,
			      "\n  skb %p: len=%u data_len=%u headroom=%u headlen=%u "
			      "tail=%u end=%u nr_frags=%u cloned=%u users=%d",
			      (const void *)skb, skb->len, skb->data_len,
			      (unsigned int)(skb->data - skb->head), skb->len - skb->data_len,
			      skb->tail, skb->end, __uskb_shinfo_peek(skb)->nr_frags, skb->cloned,
			      atomic_load_explicit(&skb->users, memory_order_relaxed));
	if (n < (int)sizeof(buf))
		snprintf(buf + n, sizeof(buf) - (size_t)n, "\n  at %s:%d, called from %p\n",
			 file, line, caller);
	fputs(buf, stderr);
	fflush(stderr);
	fn = atomic_load(&bug_handler);
	if (fn)
		fn(buf);
	abort();
}
