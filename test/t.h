/* SPDX-License-Identifier: MIT */
/* Tiny test harness: exit 0 pass, 1 fail, 77 skip. */
#ifndef USKB_TEST_T_H
#define USKB_TEST_T_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uskb/uskb.h>
#include <uskb/dev.h>
#include <uskb/pktgen.h>

#define T_SKIP 77

/* HAVE_ASAN: built with AddressSanitizer (gcc or clang) */
#if defined(__SANITIZE_ADDRESS__)
#define HAVE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAVE_ASAN 1
#endif
#endif

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

#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

struct t_remote {
	unsigned int size;
	struct uskb *skb;
};

static inline void *t_remote_alloc(void *arg)
{
	struct t_remote *r = arg;

	r->skb = uskb_alloc(r->size);
	return NULL;
}

/* An skb owned by another thread (which has exited by the time this returns). */
static inline struct uskb *t_alloc_on_other_thread(unsigned int size)
{
	struct t_remote r = { size, NULL };
	pthread_t th;

	pthread_create(&th, NULL, t_remote_alloc, &r);
	pthread_join(th, NULL);
	return r.skb;
}

/*
 * Run @fn(@arg) in a child process with its stdout and stderr captured into
 * @out (NUL-terminated); returns the child's wait status. The child exits
 * with 0 when @fn returns.
 */
static inline int t_run_child(void (*fn)(void *), void *arg, char *out, size_t sz)
{
	int pipefd[2], status;
	ssize_t n, got = 0;
	pid_t pid;

	if (pipe(pipefd))
		abort();
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		dup2(pipefd[1], 1);
		dup2(pipefd[1], 2);
		close(pipefd[0]);
		fn(arg);
		_exit(0);
	}
	close(pipefd[1]);
	while ((n = read(pipefd[0], out + got, sz - 1 - (size_t)got)) > 0)
		got += n;
	out[got] = 0;
	close(pipefd[0]);
	waitpid(pid, &status, 0);
	return status;
}

#endif
