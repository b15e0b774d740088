/* SPDX-License-Identifier: MIT */
/*
 * Pooled objects are poisoned: a use after free through the skb shell cache
 * or a freed page is caught by ASan (sanitizer builds) or by valgrind
 * (plain builds, when valgrind is installed). Each touch runs in a child.
 */
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>
#include "t.h"

static volatile unsigned int sink;

static void touch_freed_skb(void)
{
	struct uskb *skb = uskb_alloc(100);

	uskb_put(skb, 10);
	uskb_free(skb); /* the shell goes back to this thread's cache */
	sink = skb->len;
}

/* freed by another thread than its owner: it waits on the owner's defer list */
static void touch_deferred_skb(void)
{
	struct uskb *skb = t_alloc_on_other_thread(100);

	uskb_put(skb, 10);
	uskb_free(skb);
	sink = skb->len;
}

static void touch_freed_page(void)
{
	struct uskb_page *p = uskb_page_alloc(0);
	unsigned char *a = uskb_page_address(p);

	uskb_page_put(p);
	sink = a[100];
}

struct child {
	const char *self, *which;
	int vg;
};

/* Re-run this program in mode @which (under valgrind when asked). */
static void exec_mode(void *arg)
{
	struct child *c = arg;

	if (c->vg)
		execlp("valgrind", "valgrind", "--error-exitcode=9", "-q", c->self, c->which,
		       (char *)NULL);
	else
		execl(c->self, c->self, c->which, (char *)NULL);
	_exit(127);
}

int main(int argc, char **argv)
{
	static char out[65536];
	const char *modes[] = { "skb", "page", "deferred" };
	int vg = 0, i, status;

	if (argc > 1) {
		if (!strcmp(argv[1], "skb"))
			touch_freed_skb();
		else if (!strcmp(argv[1], "deferred"))
			touch_deferred_skb();
		else
			touch_freed_page();
		return 0;
	}
#if defined(__SANITIZE_THREAD__)
	printf("TSan build: valgrind cannot run it, ASan is not in it: skipped\n");
	return T_SKIP;
#endif
#ifndef HAVE_ASAN
	if (system("command -v valgrind >/dev/null 2>&1")) {
		printf("neither ASan nor valgrind available: skipped\n");
		return T_SKIP;
	}
	vg = 1;
#endif
	for (i = 0; i < 3; i++) {
		struct child c = { argv[0], modes[i], vg };

		status = t_run_child(exec_mode, &c, out, sizeof(out));
		if (vg) {
			CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 9);
			CHECK(strstr(out, "Invalid read") != NULL);
		} else {
			CHECK(!WIFEXITED(status) || WEXITSTATUS(status) != 0);
			CHECK(strstr(out, "use-after-poison") != NULL);
		}
		printf("use after free of a %s: %s by %s\n",
		       i == 2 ? "deferred skb (on its owner's list)" : modes[i],
		       t_failures ? "NOT caught" : "caught", vg ? "valgrind" : "ASan");
		if (t_failures)
			fprintf(stderr, "%s\n", out);
	}
	return t_end("uaf");
}
