/* SPDX-License-Identifier: MIT */
/* Tiny test harness: exit 0 pass, 1 fail, 77 skip. */
#ifndef USKB_TEST_T_H
#define USKB_TEST_T_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uskb/uskb.h>

#define T_SKIP 77

static int t_failures;

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, \
				__LINE__, #cond);                              \
			t_failures++;                                          \
		}                                                              \
	} while (0)

#define CHECK_EQ(a, b)                                                         \
	do {                                                                   \
		long long _a = (long long)(a), _b = (long long)(b);            \
		if (_a != _b) {                                                \
			fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %lld, %s == %lld\n", \
				__FILE__, __LINE__, #a, _a, #b, _b);           \
			t_failures++;                                          \
		}                                                              \
	} while (0)

/* Every test ends here: live counters must be back to zero. */
static inline int t_end(const char *name)
{
	if (!uskb_stats_all_freed()) {
		fprintf(stderr, "%s: live objects remain at the end\n", name);
		t_failures++;
	}
	if (t_failures) {
		fprintf(stderr, "%s: %d check(s) failed\n", name, t_failures);
		return 1;
	}
	return 0;
}

/* Fill @n bytes with a pattern derived from @seed. */
static inline void t_fill(void *p, size_t n, unsigned int seed)
{
	unsigned char *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		b[i] = (unsigned char)(seed * 31 + i * 7 + (i >> 8));
}

/* Check the bytes of @skb equal @want. */
static inline int t_skb_equals(const struct uskb *skb, const void *want, size_t n)
{
	unsigned char *buf;
	int ok;

	if (skb->len != n)
		return 0;
	buf = malloc(n ? n : 1);
	ok = buf && !uskb_copy_bits(skb, 0, buf, (int)n) && !memcmp(buf, want, n);
	free(buf);
	return ok;
}

#endif
