/* SPDX-License-Identifier: MIT */
/*
 * A first zero-copy program: the application's own memory goes into skbs
 * without a copy, and the application hears exactly once, through
 * ops->complete, when it may reuse that memory, and whether the data was
 * copied on the way.
 *
 *   1. send:    attach, "transmit", free      -> complete(success = 1)
 *   2. a tap:   uskb_clone() of the skb       -> the data is copied out and
 *               the buffer completes at once     (success = 0)
 *   3. MSG_ZEROCOPY flavour (DONT_ORPHAN): a clone shares the memory, and
 *               the buffer completes when the last of the two is freed
 *
 * Build: cc zerocopy.c $(pkg-config --cflags --libs uskb)
 * Exits 0 when every step behaved as described, 1 otherwise.
 */
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <uskb/uskb.h>

/* the application's buffer, with the ubuf the library calls back through */
struct app_buf {
	struct uskb_ubuf ubuf; /* first, so complete() can cast back */
	const char *name;
	int completions;
	bool success;
	unsigned char mem[8192];
};

static void app_complete(struct uskb *skb, struct uskb_ubuf *uarg, bool success)
{
	struct app_buf *b = (struct app_buf *)uarg;

	(void)skb; /* the skb whose release dropped the last reference, or NULL */
	b->completions++;
	b->success = success;
	printf("  complete(%s, success=%d): the application owns its memory again\n", b->name,
	       success);
}

static const struct uskb_ubuf_ops app_ops = { .complete = app_complete };

/* an skb whose first 128 bytes are copied into the head and the rest points into b->mem */
static struct uskb *build(struct app_buf *b, size_t len)
{
	struct iovec iov = { .iov_base = b->mem, .iov_len = len };
	struct uskb *skb = uskb_alloc(256);
	int err;

	if (!skb) {
		perror("uskb_alloc");
		return NULL;
	}
	uskb_reserve(skb, 64); /* room for headers pushed later */
	err = uskb_zerocopy_attach(skb, &iov, 1, &b->ubuf, USKB_ZC_GOODCOPY_LEN);
	if (err) {
		fprintf(stderr, "uskb_zerocopy_attach: %s\n", strerror(-err));
		uskb_free(skb);
		return NULL;
	}
	printf("  %s: %u bytes, %u in the head, %u in %u frag(s) pointing into the buffer\n",
	       b->name, skb->len, uskb_headlen(skb), skb->data_len, uskb_shinfo(skb)->nr_frags);
	return skb;
}

static int expect(const struct app_buf *b, int completions, bool success, const char *when)
{
	if (b->completions == completions && (!completions || b->success == success))
		return 0;
	fprintf(stderr, "%s %s: %d completions (success %d), expected %d (success %d)\n",
		b->name, when, b->completions, b->success, completions, success);
	return 1;
}

int main(void)
{
	static struct app_buf a = { .name = "buffer A" }, t = { .name = "buffer B" },
			      m = { .name = "buffer C" };
	struct uskb *skb, *clone;
	int bad = 0;

	memset(a.mem, 'a', sizeof(a.mem));
	memset(t.mem, 'b', sizeof(t.mem));
	memset(m.mem, 'c', sizeof(m.mem));

	/* 1. the plain send: one reference is the sender's, one the skb's */
	puts("1. send and free");
	uskb_ubuf_init(&a.ubuf, &app_ops, USKB_SKBFL_ZEROCOPY_FRAG);
	skb = build(&a, 4000);
	if (!skb)
		return 1;
	uskb_zcopy_put(&a.ubuf); /* the send is built: drop the sender's reference */
	bad |= expect(&a, 0, true, "while the skb is in flight");
	uskb_free(skb); /* the lower device is done with it */
	bad |= expect(&a, 1, true, "after the free");

	/* 2. tap/vhost flavour: whoever could hold a clone gets a private copy */
	puts("2. clone (a tap looking at the packet)");
	uskb_ubuf_init(&t.ubuf, &app_ops, USKB_SKBFL_ZEROCOPY_FRAG);
	skb = build(&t, 6000);
	if (!skb)
		return 1;
	uskb_zcopy_put(&t.ubuf);
	clone = uskb_clone(skb);
	if (!clone) {
		perror("uskb_clone");
		return 1;
	}
	bad |= expect(&t, 1, false, "after the clone");
	/* the memory is the application's again: overwriting it leaves the packet alone */
	memset(t.mem, 'X', sizeof(t.mem));
	if (uskb_copy_bits(clone, 200, t.mem, 1) != 0 || t.mem[0] != 'b') {
		fprintf(stderr, "the clone changed with the application's memory\n");
		bad = 1;
	}
	uskb_free(clone);
	uskb_free(skb);
	bad |= expect(&t, 1, false, "after both frees");

	/* 3. MSG_ZEROCOPY flavour: the owner waits for the completion anyway */
	puts("3. clone with DONT_ORPHAN (MSG_ZEROCOPY)");
	uskb_ubuf_init(&m.ubuf, &app_ops, USKB_SKBFL_ZEROCOPY_FRAG | USKB_SKBFL_DONT_ORPHAN);
	skb = build(&m, 6000);
	if (!skb)
		return 1;
	uskb_zcopy_put(&m.ubuf);
	clone = uskb_clone(skb);
	if (!clone) {
		perror("uskb_clone");
		return 1;
	}
	uskb_free(skb);
	bad |= expect(&m, 0, true, "while the clone lives");
	uskb_free(clone);
	bad |= expect(&m, 1, true, "after the last free");

	if (!uskb_stats_all_freed())
		bad = 1;
	puts(bad ? "FAILED" : "every buffer completed exactly once");
	return bad;
}
