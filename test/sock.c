/* SPDX-License-Identifier: MIT */
/*
 * The socket devices (udp:, tcp:, unix:) on loopback: specs and their
 * errors; frames of 60 B to 64 KiB, linear, paged and with a frag_list,
 * arrive byte for byte in every mode (copy, zc, uring, gso); udp receives
 * into slots that skbs keep (recvmmsg, or io_uring multishot with provided
 * buffers), copied out when held too long; stream framing
 * survives split reads and refuses a bad length prefix by dropping the
 * connection; a listening device takes a new peer after the last went; a
 * client whose peer goes away goes down; a slow reader makes the sender
 * busy, never loses or tears a frame. Zero copy to a receiver on this host
 * completes as copied and falls back to copy mode, each user buffer
 * completing exactly once.
 * As root, in a network namespace of its own: a veth whose egress drops
 * everything (bpf/tc_drop.o, a sink that takes no copy): zc and uring sends
 * complete not-copied, in ranges; a 64 KiB GSO send of zero-page frags;
 * ENOBUFS from a small optmem_max loses nothing; close waits for every send.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <sys/utsname.h>

#include <dirent.h>

#include "t.h"

#define dev_stat(d, f) ({ struct uskb_dev_stats _s; uskb_dev_get_stats((d), -1, &_s); _s.f; })

static int port_base;
static char sockdir[64];

/* ---- frames ---- */

enum geo { LINEAR, PAGED, FRAGLIST };

/*
 * A frame of @len bytes (pattern from @seed; its first 4 bytes are @seed so
 * the receiver can tell frames apart) as @g says.
 */
static struct uskb *frame(unsigned int len, unsigned int seed, enum geo g, unsigned char *want)
{
	struct uskb *skb;
	unsigned int head = len, off;
	int f = 0;

	t_fill(want, len, seed);
	memcpy(want, &seed, len >= 4 ? 4 : len);
	if (g != LINEAR && len > 64)
		head = 64;
	skb = uskb_alloc(head);
	uskb_put_data(skb, want, head);
	off = head;
	/* frags, then (FRAGLIST) the last half of what is left in a frag_list skb */
	while (off < len - (g == FRAGLIST ? (len - off) / 2 : 0)) {
		unsigned int end = len - (g == FRAGLIST ? (len - head) / 2 : 0);
		unsigned int n = end - off < 4096 ? end - off : 4096;
		struct uskb_page *pg = uskb_page_alloc(0);

		memcpy(uskb_page_address(pg), want + off, n);
		uskb_add_rx_frag(skb, f++, pg, 0, (int)n, 4096);
		off += n;
		if (off == end)
			break;
	}
	if (off < len) {
		struct uskb *c = uskb_alloc(len - off);

		uskb_put_data(c, want + off, len - off);
		uskb_append_frag_list(skb, c); /* accounts len and data_len */
	}
	return skb;
}

/* send @skb until the device takes it (a busy device is flushed and asked again) */
static int send_one(struct uskb_dev *d, struct uskb *skb)
{
	for (int tries = 0; tries < 20000; tries++) {
		int res;

		uskb_dev_xmit(d, 0, &skb, 1, &res);
		if (res != USKB_XMIT_BUSY)
			return res;
		uskb_dev_flush(d, 0);
	}
	uskb_free(skb);
	return -1;
}

/* receive one frame within @ms */
static struct uskb *recv_one(struct uskb_dev *d, int ms)
{
	struct uskb *skb = NULL;
	struct timespec t0, t;

	/* by the clock: a stream trickling in returns 0 at once, again and again */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (t = t0; (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms;
	     clock_gettime(CLOCK_MONOTONIC, &t)) {
		int n = uskb_dev_rx(d, 0, &skb, 1, 50);

		if (n == 1)
			return skb;
		if (n < 0 && n != -EINTR)
			return NULL;
	}
	return NULL;
}

static const unsigned int sizes[] = { 60, 61, 1514, 4096, 9000, 65000, 65536, 65550 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* every size in every geometry from @tx to @rx, byte for byte, in order */
static void roundtrip(struct uskb_dev *tx, struct uskb_dev *rx, unsigned int max_len, const char *what)
{
	static unsigned char want[70000];
	unsigned int seed = 1;

	for (unsigned int s = 0; s < NSIZES; s++) {
		if (sizes[s] > max_len)
			continue;
		for (int g = LINEAR; g <= FRAGLIST; g++, seed++) {
			struct uskb *skb = frame(sizes[s], seed, (enum geo)g, want), *got;

			if (send_one(tx, skb) != USKB_XMIT_OK) {
				fprintf(stderr, "%s: size %u geo %d not sent\n", what, sizes[s], g);
				t_failures++;
				continue;
			}
			uskb_dev_flush(tx, 0);
			got = recv_one(rx, 3000);
			if (!got || !t_skb_equals(got, want, sizes[s])) {
				fprintf(stderr, "%s: size %u geo %d: %s\n", what, sizes[s], g,
					got ? "bytes differ" : "not received");
				t_failures++;
			}
			if (got)
				uskb_free(got);
		}
	}
}

/* ---- specs ---- */

static void bad_spec(const char *spec, int err, const char *text)
{
	struct uskb_dev *d = uskb_dev_open(spec);

	if (d) {
		fprintf(stderr, "%s: opened\n", spec);
		t_failures++;
		uskb_dev_close(d);
		return;
	}
	if (errno != err || !strstr(uskb_dev_strerror(), text)) {
		fprintf(stderr, "%s: errno %d (want %d), \"%s\" (want \"%s\")\n", spec, errno, err,
			uskb_dev_strerror(), text);
		t_failures++;
	}
}

static void test_specs(void)
{
	char spec[128];

	bad_spec("udp:", EINVAL, "give an address");
	bad_spec("udp:127.0.0.1", EINVAL, "has no port");
	bad_spec("udp:fd00::2:9000", EINVAL, "brackets");
	bad_spec("udp:127.0.0.1:70000", EINVAL, "a host and a port");
	bad_spec("udp:127.0.0.1:9000,bogus", EINVAL, "unknown option \"bogus\"");
	bad_spec("udp:127.0.0.1:9000,zc,nofixed", EINVAL, "nofixed is for uring");
	bad_spec("udp:127.0.0.1:9000,copybreak=x", EINVAL, "copybreak=x");
	bad_spec("udp:127.0.0.1:9000,inflight=1", EINVAL, "inflight=1");
	bad_spec("tcp:127.0.0.1:9000,gso", EINVAL, "gso is for udp");
	bad_spec("tcp:127.0.0.1:9000,local=127.0.0.1:1", EINVAL, "local= is for udp");
	bad_spec("udp:127.0.0.1:9000,listen,local=127.0.0.1:1", EINVAL, "drop local=");
	bad_spec("unix:/tmp/x.sock,zc", EOPNOTSUPP, "unix socket cannot send without copying");
	bad_spec("unix:/tmp/x.sock,uring", EOPNOTSUPP, "unix socket cannot send without copying");
	bad_spec("unix:", EINVAL, "give an address");
	snprintf(spec, sizeof(spec), "tcp:127.0.0.1:%d", port_base + 99); /* nobody listens */
	bad_spec(spec, ECONNREFUSED, "connect");
	snprintf(spec, sizeof(spec), "unix:%s/nobody.sock", sockdir);
	bad_spec(spec, ENOENT, "connect");
	CHECK(uskb_dev_spec_receives("udp:127.0.0.1:9"));
	CHECK(uskb_dev_spec_receives("tcp:127.0.0.1:9,listen"));
	CHECK(uskb_dev_spec_receives("unix:/x"));
}

/* ---- user buffers: each completes exactly once ---- */

static atomic_int ub_done, ub_ok, ub_twice;

struct ub {
	struct uskb_ubuf u;
	atomic_int calls;
	unsigned char mem[16384];
};

static void ub_complete(struct uskb *skb, struct uskb_ubuf *uarg, bool success)
{
	struct ub *b = (struct ub *)uarg;

	(void)skb;
	if (atomic_fetch_add(&b->calls, 1))
		atomic_fetch_add(&ub_twice, 1);
	atomic_fetch_add(&ub_done, 1);
	if (success)
		atomic_fetch_add(&ub_ok, 1);
}

static const struct uskb_ubuf_ops ub_ops = { .complete = ub_complete };

/* an skb whose @len bytes (after a 64-byte head) are the user memory of @b */
static struct uskb *user_frame(struct ub *b, unsigned int len)
{
	struct iovec iov = { b->mem, len };
	struct uskb *skb = uskb_alloc(256);

	atomic_init(&b->calls, 0);
	t_fill(b->mem, len, len);
	uskb_ubuf_init(&b->u, &ub_ops, USKB_SKBFL_ZEROCOPY_FRAG);
	if (uskb_zerocopy_attach(skb, &iov, 1, &b->u, 64))
		abort();
	uskb_zcopy_put(&b->u); /* the skb holds the buffer now */
	return skb;
}

/*
 * Whether uring sends can come from registered buffers here: registering
 * uskb's window pins it (root, or a memlock limit that takes it), and a
 * send of several iovecs (sendmsg_zc) takes a registered buffer from
 * Linux 6.15.
 */
static bool can_fix(bool vectored)
{
	struct utsname u;
	int major = 0, minor = 0;

	if (geteuid() != 0)
		return false;
	if (!vectored)
		return true;
	if (uname(&u) || sscanf(u.release, "%d.%d", &major, &minor) != 2)
		return false;
	return major > 6 || (major == 6 && minor >= 15);
}

/*
 * io_uring refused by this kernel (sysctl kernel.io_uring_disabled, a
 * seccomp or LSM policy) or missing from the build: the uring cases are
 * left out, said once; any other failure to open is one.
 */
static bool uring_ok;

static void probe_uring(void)
{
	struct uskb_dev *d = uskb_dev_open("udp:127.0.0.1:9,uring");
	const char *why;

	if (d) {
		uskb_dev_close(d);
		uring_ok = true;
		return;
	}
	why = uskb_dev_strerror();
	if (strstr(why, "refused by this kernel") || strstr(why, "this build has no io_uring") ||
	    strstr(why, "io_uring has no send_zc")) {
		printf("uring cases not tried: %s\n", why);
		return;
	}
	fprintf(stderr, "udp:127.0.0.1:9,uring: %s\n", why);
	t_failures++;
}

/* ---- udp ---- */

static void test_udp(const char *opts, const char *rx_opts)
{
	char rs[128], ts[128];
	struct uskb_dev *rx, *tx;

	snprintf(rs, sizeof(rs), "udp:127.0.0.1:%d,listen%s", port_base, rx_opts);
	snprintf(ts, sizeof(ts), "udp:127.0.0.1:%d%s", port_base, opts);
	rx = uskb_dev_open(rs);
	tx = uskb_dev_open(ts);
	CHECK(rx && tx);
	if (!rx || !tx) {
		fprintf(stderr, "%s / %s: %s\n", rs, ts, uskb_dev_strerror());
		uskb_dev_close(tx);
		uskb_dev_close(rx);
		return;
	}
	roundtrip(tx, rx, 65000, ts);
	/* uring: the frames in uskb's memory went from registered buffers (until the fallback) */
	if (strstr(opts, "uring")) {
		uskb_dev_flush(tx, 0);
		CHECK_EQ(dev_stat(tx, tx_zc_fixed) > 0, !strstr(opts, "nofixed") && can_fix(false));
	}
	/* replies: a listening udp device sends to the last sender */
	{
		unsigned char want[100];
		struct uskb *got;

		CHECK_EQ(send_one(rx, frame(100, 77, LINEAR, want)), USKB_XMIT_OK);
		got = recv_one(tx, 2000);
		CHECK(got && t_skb_equals(got, want, 100));
		if (got)
			uskb_free(got);
	}
	uskb_dev_close(tx);
	uskb_dev_close(rx);
}

/*
 * Receive without copying: a long datagram stays in the slot the kernel
 * wrote it to, as a frag; short ones are copied whole. Skbs held past the
 * patience (or more than half the slots) are copied out and stay intact.
 */
static void test_udp_rx_zc(const char *rx_opts)
{
	enum { N = 60 };
	static unsigned char want[N][3000];
	struct uskb *held[N];
	char rs[128], ts[96];
	struct uskb_dev *rx, *tx;
	int i, got = 0;

	/* a pair as QEMU's dgram netdev makes: each sends to the other's local address */
	snprintf(rs, sizeof(rs), "udp:127.0.0.1:%d,local=127.0.0.1:%d%s", port_base + 5, port_base + 4,
		 rx_opts);
	snprintf(ts, sizeof(ts), "udp:127.0.0.1:%d,local=127.0.0.1:%d", port_base + 4, port_base + 5);
	rx = uskb_dev_open(rs);
	tx = uskb_dev_open(ts);
	CHECK(rx && tx);
	if (!rx || !tx)
		goto out;
	for (i = 0; i < N; i++) {
		CHECK_EQ(send_one(tx, frame(3000, 500 + (unsigned int)i, PAGED, want[i])), USKB_XMIT_OK);
		held[got] = recv_one(rx, 2000); /* kept: the slots run short */
		if (held[got])
			got++;
	}
	CHECK_EQ(got, N);
	CHECK(uskb_is_nonlinear(held[0])); /* the frame stayed in its slot */
	CHECK(dev_stat(rx, rx_orphaned) > 0); /* more than half the slots held: copied out */
	for (i = 0; i < got; i++) {
		CHECK(t_skb_equals(held[i], want[i], 3000));
		uskb_free(held[i]);
	}
	/* a short frame is copied whole */
	CHECK_EQ(send_one(tx, frame(100, 1, LINEAR, want[0])), USKB_XMIT_OK);
	held[0] = recv_one(rx, 2000);
	CHECK(held[0] && !uskb_is_nonlinear(held[0]) && t_skb_equals(held[0], want[0], 100));
	if (held[0])
		uskb_free(held[0]);
	CHECK(dev_stat(rx, rx_copied) >= 1);
	/* closing with skbs out copies them out first */
	CHECK_EQ(send_one(tx, frame(3000, 9, PAGED, want[0])), USKB_XMIT_OK);
	held[0] = recv_one(rx, 2000);
	uskb_dev_close(rx);
	rx = NULL;
	CHECK(held[0] && t_skb_equals(held[0], want[0], 3000));
	if (held[0])
		uskb_free(held[0]);
out:
	uskb_dev_close(tx);
	uskb_dev_close(rx);
}

/* gso: a burst of equal frames goes as one send and arrives as as many datagrams */
static void test_udp_gso(void)
{
	static unsigned char want[11][1000];
	struct uskb *v[11], *got;
	char rs[64], ts[64];
	struct uskb_dev *rx, *tx;
	int res[11], i;

	snprintf(rs, sizeof(rs), "udp:127.0.0.1:%d,listen", port_base + 1);
	snprintf(ts, sizeof(ts), "udp:127.0.0.1:%d,gso", port_base + 1);
	rx = uskb_dev_open(rs);
	tx = uskb_dev_open(ts);
	CHECK(rx && tx);
	if (!rx || !tx)
		goto out;
	for (i = 0; i < 11; i++)
		v[i] = frame(i < 10 ? 1000 : 500, 100 + (unsigned int)i, PAGED, want[i]);
	CHECK_EQ(uskb_dev_xmit(tx, 0, v, 11, res), 11);
	for (i = 0; i < 11; i++) {
		got = recv_one(rx, 2000);
		CHECK(got && t_skb_equals(got, want[i], i < 10 ? 1000 : 500));
		if (got)
			uskb_free(got);
	}
out:
	uskb_dev_close(tx);
	uskb_dev_close(rx);
}

/*
 * Zero copy to a receiver on this host: the kernel copies; every user buffer
 * completes exactly once with success = false, and the device gives up zero
 * copy (once) after a run of copied sends.
 */
static void test_udp_local_copied(const char *mode)
{
	enum { N = 64 };
	static struct ub b[N];
	char rs[64], ts[96];
	struct uskb_dev *rx, *tx;
	int i, got = 0;

	atomic_store(&ub_done, 0);
	atomic_store(&ub_ok, 0);
	atomic_store(&ub_twice, 0);
	snprintf(rs, sizeof(rs), "udp:127.0.0.1:%d,listen", port_base + 2);
	snprintf(ts, sizeof(ts), "udp:127.0.0.1:%d,%s,copybreak=0", port_base + 2, mode);
	rx = uskb_dev_open(rs);
	tx = uskb_dev_open(ts);
	CHECK(rx && tx);
	if (!rx || !tx)
		goto out;
	CHECK(tx->features & USKB_DEV_F_ZEROCOPY);
	for (i = 0; i < N; i++) {
		CHECK_EQ(send_one(tx, user_frame(&b[i], 4000)), USKB_XMIT_OK);
		uskb_dev_flush(tx, 0);
	}
	for (i = 0; i < N; i++) {
		struct uskb *skb = recv_one(rx, 2000);

		if (skb) {
			got++;
			uskb_free(skb);
		}
	}
	CHECK_EQ(got, N);
	uskb_dev_close(tx); /* waits for what the kernel still holds */
	tx = NULL;
	CHECK_EQ(atomic_load(&ub_done), N);
	CHECK_EQ(atomic_load(&ub_twice), 0);
	/* the first sends were zero-copy attempts the kernel copied: those say so */
	CHECK(atomic_load(&ub_ok) < N);
out:
	if (tx) {
		CHECK_EQ(dev_stat(tx, tx_zc_fallback), 1);
		uskb_dev_close(tx);
	}
	uskb_dev_close(rx);
}

static void test_fallback_counted(const char *mode)
{
	char rs[64], ts[96];
	struct uskb_dev *rx, *tx;
	unsigned char want[2000];
	int i;

	snprintf(rs, sizeof(rs), "udp:127.0.0.1:%d,listen", port_base + 3);
	snprintf(ts, sizeof(ts), "udp:127.0.0.1:%d,%s,copybreak=0", port_base + 3, mode);
	rx = uskb_dev_open(rs);
	tx = uskb_dev_open(ts);
	CHECK(rx && tx);
	if (!rx || !tx)
		goto out;
	for (i = 0; i < 200; i++) {
		CHECK_EQ(send_one(tx, frame(2000, (unsigned int)i, PAGED, want)), USKB_XMIT_OK);
		uskb_dev_flush(tx, 0);
		if (i % 16 == 15) { /* keep the receiver's buffer from filling */
			struct uskb *v[64];
			int n;

			while ((n = uskb_dev_rx(rx, 0, v, 64, 0)) > 0)
				uskb_free_bulk(v, (unsigned int)n);
		}
	}
	for (i = 0; i < 100 && dev_stat(tx, tx_zc_fallback) == 0; i++) {
		uskb_dev_flush(tx, 0);
		usleep(1000);
	}
	CHECK_EQ(dev_stat(tx, tx_zc_fallback), 1);
	CHECK(dev_stat(tx, tx_zc_copied) >= 32);
	CHECK_EQ(dev_stat(tx, tx_packets), 200);
	{
		char e[192];

		/* counted, not an error: every frame went out */
		CHECK_EQ(uskb_dev_last_error(tx, e, sizeof(e)), 0);
	}
out:
	uskb_dev_close(tx);
	uskb_dev_close(rx);
}

/* ---- streams ---- */

static void stream_spec(char *buf, size_t n, const char *kind, int port_off, const char *opts)
{
	if (!strcmp(kind, "unix"))
		snprintf(buf, n, "unix:%s/s%d.sock%s", sockdir, port_off, opts);
	else
		snprintf(buf, n, "tcp:127.0.0.1:%d%s", port_base + port_off, opts);
}

static int raw_connect(const char *kind, int port_off)
{
	int fd;

	if (!strcmp(kind, "unix")) {
		struct sockaddr_un un = { .sun_family = AF_UNIX };

		snprintf(un.sun_path, sizeof(un.sun_path), "%s/s%d.sock", sockdir, port_off);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		if (connect(fd, (struct sockaddr *)&un, sizeof(un)))
			return -1;
	} else {
		struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons((uint16_t)(port_base + port_off)) };

		in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(fd, (struct sockaddr *)&in, sizeof(in)))
			return -1;
	}
	return fd;
}

/* the options of the listening (receiving) side of the stream tests */
static const char *lopts = ",listen";

static void test_stream(const char *kind, const char *opts)
{
	char rs[128], ts[128], what[300];
	struct uskb_dev *rx, *tx;

	stream_spec(rs, sizeof(rs), kind, 10, lopts);
	stream_spec(ts, sizeof(ts), kind, 10, opts);
	rx = uskb_dev_open(rs);
	tx = rx ? uskb_dev_open(ts) : NULL;
	CHECK(rx && tx);
	if (!rx || !tx) {
		fprintf(stderr, "%s / %s: %s\n", rs, ts, uskb_dev_strerror());
		goto out;
	}
	snprintf(what, sizeof(what), "%s -> %s", ts, rs);
	roundtrip(tx, rx, 65550, what);
	/* uring: length prefixes, heads and frags all lie in uskb's registered memory */
	if (strstr(opts, "uring")) {
		uskb_dev_flush(tx, 0);
		CHECK_EQ(dev_stat(tx, tx_zc_fixed) > 0, can_fix(true));
	}
	/* the other way: the listening side sends to its peer */
	roundtrip(rx, tx, 9000, what);
out:
	uskb_dev_close(tx);
	uskb_dev_close(rx);
}

/* a frame written in pieces: the header split, then the payload in two */
static void test_split_reads(const char *kind)
{
	unsigned char frame_bytes[4 + 1000], want[1000];
	uint32_t be = htonl(1000);
	struct uskb_dev *rx;
	struct uskb *got;
	char rs[128], e[192];
	int fd;

	stream_spec(rs, sizeof(rs), kind, 11, lopts);
	rx = uskb_dev_open(rs);
	CHECK(rx);
	if (!rx)
		return;
	t_fill(want, sizeof(want), 5);
	memcpy(frame_bytes, &be, 4);
	memcpy(frame_bytes + 4, want, sizeof(want));
	fd = raw_connect(kind, 11);
	CHECK(fd >= 0);
	CHECK_EQ(write(fd, frame_bytes, 2), 2);
	CHECK(!recv_one(rx, 100));
	CHECK_EQ(write(fd, frame_bytes + 2, 300), 300);
	CHECK(!recv_one(rx, 100));
	CHECK_EQ(write(fd, frame_bytes + 302, sizeof(frame_bytes) - 302), (long)sizeof(frame_bytes) - 302);
	got = recv_one(rx, 2000);
	CHECK(got && t_skb_equals(got, want, sizeof(want)));
	if (got)
		uskb_free(got);
	/* a bad length (0, then past the limit) drops the connection; the next peer is heard */
	for (int k = 0; k < 2; k++) {
		uint32_t bad = htonl(k ? 70000 : 0);

		CHECK_EQ(write(fd, &bad, 4), 4);
		CHECK(!recv_one(rx, 300));
		uskb_dev_last_error(rx, e, sizeof(e));
		CHECK(strstr(e, k ? "bad frame length 70000" : "bad frame length 0"));
		CHECK(uskb_dev_running(rx));
		close(fd);
		fd = raw_connect(kind, 11);
		CHECK(fd >= 0);
		CHECK_EQ(write(fd, frame_bytes, sizeof(frame_bytes)), (long)sizeof(frame_bytes));
		got = recv_one(rx, 2000);
		CHECK(got && t_skb_equals(got, want, sizeof(want)));
		if (got)
			uskb_free(got);
	}
	close(fd);
	uskb_dev_close(rx);
}

/*
 * tcp, uring receive: a frame whole in a chunk of the stream stays in the
 * slot the kernel wrote it to; skbs held past half the slots are copied out
 * and stay intact; one written in pieces (the length split too) is put
 * together; closing with skbs out copies them out first.
 */
static void test_stream_rx_slots(void)
{
	enum { N = 60, LEN = 3000 };
	static unsigned char want[N][LEN], bytes[4 + LEN];
	struct uskb *held[N];
	struct uskb_dev *rx;
	char rs[128];
	int fd, i, got = 0, nonlinear = 0;

	stream_spec(rs, sizeof(rs), "tcp", 17, ",listen,uring");
	rx = uskb_dev_open(rs);
	CHECK(rx);
	if (!rx)
		return;
	fd = raw_connect("tcp", 17);
	CHECK(fd >= 0);
	for (i = 0; i < N && fd >= 0; i++) {
		uint32_t be = htonl(LEN);

		t_fill(want[i], LEN, 700 + (unsigned int)i);
		memcpy(bytes, &be, 4);
		memcpy(bytes + 4, want[i], LEN);
		CHECK_EQ(write(fd, bytes, sizeof(bytes)), (long)sizeof(bytes));
		held[got] = recv_one(rx, 2000); /* kept: the slots run short */
		if (held[got]) {
			nonlinear += uskb_is_nonlinear(held[got]);
			got++;
		}
	}
	CHECK_EQ(got, N);
	CHECK(nonlinear > 0); /* frames stayed in their slots */
	CHECK(dev_stat(rx, rx_orphaned) > 0); /* more than half the slots held: copied out */
	for (i = 0; i < got; i++) {
		CHECK(t_skb_equals(held[i], want[i], LEN));
		uskb_free(held[i]);
	}
	/* in pieces: two bytes of the length, then the rest of it and some, then the rest */
	if (fd >= 0) {
		CHECK_EQ(write(fd, bytes, 2), 2);
		CHECK(!recv_one(rx, 100));
		CHECK_EQ(write(fd, bytes + 2, 1000), 1000);
		CHECK(!recv_one(rx, 100));
		CHECK_EQ(write(fd, bytes + 1002, sizeof(bytes) - 1002), (long)sizeof(bytes) - 1002);
		held[0] = recv_one(rx, 2000);
		CHECK(held[0] && t_skb_equals(held[0], want[N - 1], LEN));
		/* held while the device closes: copied out first */
		uskb_dev_close(rx);
		rx = NULL;
		CHECK(held[0] && t_skb_equals(held[0], want[N - 1], LEN));
		if (held[0])
			uskb_free(held[0]);
		close(fd);
	}
	uskb_dev_close(rx);
}

/* a client whose peer goes away (or breaks the framing) goes down and says why */
static void test_client_down(const char *kind)
{
	char ls[128], ts[160], e[192];
	struct uskb_dev *tx;
	unsigned char want[1000];
	int lfd, cfd, i, res = USKB_XMIT_OK;

	for (int bad = 0; bad < 2; bad++) {
		struct uskb *skb;

		stream_spec(ls, sizeof(ls), kind, 12 + bad, "");
		/* the listener is a plain socket */
		if (!strcmp(kind, "unix")) {
			struct sockaddr_un un = { .sun_family = AF_UNIX };

			snprintf(un.sun_path, sizeof(un.sun_path), "%s/s%d.sock", sockdir, 12 + bad);
			unlink(un.sun_path);
			lfd = socket(AF_UNIX, SOCK_STREAM, 0);
			CHECK(!bind(lfd, (struct sockaddr *)&un, sizeof(un)));
		} else {
			struct sockaddr_in in = { .sin_family = AF_INET,
						  .sin_port = htons((uint16_t)(port_base + 12 + bad)) };
			int one = 1;

			in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
			lfd = socket(AF_INET, SOCK_STREAM, 0);
			setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
			CHECK(!bind(lfd, (struct sockaddr *)&in, sizeof(in)));
		}
		listen(lfd, 1);
		snprintf(ts, sizeof(ts), "%s", ls);
		tx = uskb_dev_open(ts);
		CHECK(tx);
		if (!tx) {
			close(lfd);
			continue;
		}
		cfd = accept(lfd, NULL, NULL);
		if (bad) { /* a zero-length prefix towards the device */
			uint32_t zero = 0;

			CHECK_EQ(write(cfd, &zero, 4), 4);
			CHECK(!recv_one(tx, 300));
			CHECK(!uskb_dev_running(tx));
			uskb_dev_last_error(tx, e, sizeof(e));
			CHECK(strstr(e, "bad frame length 0"));
		} else {
			close(cfd);
			cfd = -1;
			for (i = 0; i < 1000 && uskb_dev_running(tx); i++) {
				skb = frame(1000, (unsigned int)i, LINEAR, want);
				uskb_dev_xmit(tx, 0, &skb, 1, &res);
				if (res == USKB_XMIT_BUSY)
					uskb_free(skb);
				usleep(1000);
			}
			CHECK(!uskb_dev_running(tx));
			CHECK_EQ(res, USKB_XMIT_DROP);
			uskb_dev_last_error(tx, e, sizeof(e));
			CHECK(strstr(e, "the peer went away"));
			CHECK_EQ(uskb_dev_rx(tx, 0, &skb, 1, 0), -ENETDOWN);
		}
		if (cfd >= 0)
			close(cfd);
		close(lfd);
		uskb_dev_close(tx);
	}
}

/* a listening device takes the next peer after one went away */
static void test_reconnect(const char *kind)
{
	char rs[128], ts[128];
	struct uskb_dev *rx, *tx;
	unsigned char want[500];
	int got = 0;

	stream_spec(rs, sizeof(rs), kind, 14, lopts);
	stream_spec(ts, sizeof(ts), kind, 14, "");
	rx = uskb_dev_open(rs);
	CHECK(rx);
	if (!rx)
		return;
	for (int peer = 0; peer < 3; peer++) {
		tx = uskb_dev_open(ts);
		CHECK(tx);
		if (!tx)
			break;
		for (int i = 0; i < 10; i++)
			CHECK_EQ(send_one(tx, frame(500, (unsigned int)(peer * 10 + i), PAGED, want)),
				 USKB_XMIT_OK);
		uskb_dev_close(tx);
		for (int i = 0; i < 10; i++) {
			struct uskb *skb = recv_one(rx, 2000);

			if (skb) {
				uint32_t seed;

				uskb_copy_bits(skb, 0, &seed, 4);
				got += seed == (uint32_t)(peer * 10 + i);
				uskb_free(skb);
			}
		}
	}
	CHECK_EQ(got, 30);
	CHECK(uskb_dev_running(rx));
	uskb_dev_close(rx);
}

/*
 * A listening zc device whose peer goes and another comes: the new socket
 * numbers its MSG_ZEROCOPY sends from 0 again, and the device follows.
 */
static void test_listen_zc_reconnect(void)
{
	char ls[128];
	unsigned char want[10000];
	struct uskb_dev *d;
	struct uskb *skb;
	uint64_t before;
	int fd, i;

	stream_spec(ls, sizeof(ls), "tcp", 16, ",listen,zc,copybreak=0");
	d = uskb_dev_open(ls);
	CHECK(d);
	if (!d)
		return;
	for (int peer = 0; peer < 2; peer++) {
		fd = raw_connect("tcp", 16);
		CHECK(fd >= 0);
		before = dev_stat(d, tx_zc_copied) + dev_stat(d, tx_zc);
		for (i = 0; i < 5; i++)
			CHECK_EQ(send_one(d, frame(10000, (unsigned int)i, PAGED, want)), USKB_XMIT_OK);
		/* each send completes (copied: the peer is on this host) */
		for (i = 0; i < 2000 && dev_stat(d, tx_zc_copied) + dev_stat(d, tx_zc) < before + 5; i++) {
			uskb_dev_flush(d, 0);
			usleep(1000);
		}
		CHECK_EQ(dev_stat(d, tx_zc_copied) + dev_stat(d, tx_zc), before + 5);
		close(fd);
		/* the device hears the peer go when it reads */
		for (i = 0; i < 20 && uskb_dev_rx(d, 0, &skb, 1, 50) == 0; i++)
			;
	}
	CHECK(uskb_dev_running(d));
	uskb_dev_close(d);
}

/* a reader slower than the sender: busy results, partial sends, and no frame torn or lost */
struct reader {
	struct uskb_dev *rx;
	int n, ok;
};

static void *slow_reader(void *arg)
{
	struct reader *r = arg;
	static unsigned char want[65536];
	int seen = 0;

	usleep(200000); /* the sender fills the socket first */
	while (seen < r->n) {
		struct uskb *skb = recv_one(r->rx, 5000);
		uint32_t seed;

		if (!skb)
			break;
		uskb_copy_bits(skb, 0, &seed, 4);
		t_fill(want, 65536, seed);
		memcpy(want, &seed, 4);
		r->ok += seed == (uint32_t)seen && t_skb_equals(skb, want, 65536);
		seen++;
		uskb_free(skb);
	}
	return NULL;
}

static void test_backpressure(const char *kind, const char *opts)
{
	char rs[128], ts[128];
	static unsigned char want[65536];
	struct reader r = { .n = 200 };
	struct uskb_dev *tx;
	pthread_t th;
	long busy = 0;

	stream_spec(rs, sizeof(rs), kind, 15, lopts);
	stream_spec(ts, sizeof(ts), kind, 15, opts);
	r.rx = uskb_dev_open(rs);
	tx = r.rx ? uskb_dev_open(ts) : NULL;
	CHECK(r.rx && tx);
	if (!tx) {
		uskb_dev_close(r.rx);
		return;
	}
	pthread_create(&th, NULL, slow_reader, &r);
	for (int i = 0; i < r.n; i++) {
		struct uskb *skb = frame(65536, (unsigned int)i, PAGED, want);
		int res;

		struct timespec t0, t;

		/* by the clock: a reader gone makes this fail, not hang */
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (t = t0; t.tv_sec - t0.tv_sec < 60; clock_gettime(CLOCK_MONOTONIC, &t)) {
			uskb_dev_xmit(tx, 0, &skb, 1, &res);
			if (res != USKB_XMIT_BUSY)
				break;
			busy++;
			uskb_dev_flush(tx, 0);
		}
		if (res == USKB_XMIT_BUSY)
			uskb_free(skb);
		CHECK_EQ(res, USKB_XMIT_OK);
	}
	uskb_dev_close(tx);
	pthread_join(th, NULL);
	if (r.ok != r.n)
		fprintf(stderr, "backpressure %s%s: %d of %d frames arrived\n", kind, opts, r.ok, r.n);
	CHECK_EQ(r.ok, r.n);
	CHECK(busy > 0); /* the reader did make the sender wait */
	uskb_dev_close(r.rx);
}


/* ---- the end of a run on a stream: uskb_dev_drain ---- */

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* every whole frame the peer @fd can read (4-byte big-endian length, then the frame) until its end */
static int frames_read(int fd, unsigned int want_len)
{
	static unsigned char buf[1 << 16];
	size_t have = 0;
	int whole = 0;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 3000) <= 0)
			break;
		n = read(fd, buf + have, sizeof(buf) - have);
		if (n <= 0)
			break; /* the end, or the reset after what it had */
		have += (size_t)n;
		while (have >= 4) {
			uint32_t len;

			memcpy(&len, buf, 4);
			len = ntohl(len);
			if (len != want_len) {
				fprintf(stderr, "drain: a frame of %u bytes in the stream (want %u)\n", len, want_len);
				return -1;
			}
			if (have < 4 + len)
				break;
			whole++;
			memmove(buf, buf + 4 + len, have - 4 - len);
			have -= 4 + len;
		}
	}
	return whole;
}

struct peer {
	int fd, got;
	unsigned int len;
};

static void *peer_reads(void *arg)
{
	struct peer *p = arg;

	p->got = frames_read(p->fd, p->len);
	return NULL;
}

/*
 * A peer that reads: the drain returns at once, nothing lost, and the
 * connection goes on (a frame sent after it arrives too). A peer that
 * stopped reading (a window of a few KB): the drain waits its bound, the
 * frames the peer did not acknowledge move to tx_dropped with a reason,
 * the connection is reset (the device down: it connected), and exactly the
 * others can still be read, whole and in order.
 */
static void test_drain(const char *opts)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	static unsigned char want[9000];
	socklen_t slen = sizeof(sa);
	char spec[128], err[160] = "";

	for (int stall = 0; stall < 2; stall++) {
		int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), rcv = 4096, sent = 0, res;
		struct peer peer = { .fd = -1, .len = stall ? 1000 : 9000 };
		unsigned int n = stall ? 100000 : 200;
		struct uskb_dev *tx;
		pthread_t th;
		uint64_t dropped;
		double t0, took;

		/* the accepted socket inherits the small window of a peer that stopped reading */
		if (stall)
			setsockopt(lfd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
		sa.sin_port = 0;
		CHECK(!bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) && !listen(lfd, 1) &&
		      !getsockname(lfd, (struct sockaddr *)&sa, &slen));
		snprintf(spec, sizeof(spec), "tcp:127.0.0.1:%u%s", ntohs(sa.sin_port), opts);
		tx = uskb_dev_open(spec);
		CHECK(tx != NULL);
		if (!tx) {
			close(lfd);
			return;
		}
		if (!stall) {
			peer.fd = accept(lfd, NULL, NULL);
			pthread_create(&th, NULL, peer_reads, &peer);
		}
		/* n frames; a stalled peer: until the kernel holds all it will (busy 200 times in a row) */
		for (unsigned int i = 0, busy = 0; i < n && busy < 200; i++) {
			struct uskb *skb = frame(peer.len, i, PAGED, want);

			uskb_dev_xmit(tx, 0, &skb, 1, &res);
			if (res == USKB_XMIT_BUSY) {
				uskb_free(skb);
				busy += stall;
				i--;
				uskb_dev_flush(tx, 0);
				continue;
			}
			busy = 0;
			CHECK_EQ(res, USKB_XMIT_OK);
			sent++;
		}
		t0 = now_s();
		uskb_dev_drain(tx, 0, 500);
		took = now_s() - t0;
		dropped = dev_stat(tx, tx_dropped);
		uskb_dev_last_error(tx, err, sizeof(err));
		CHECK_EQ(dev_stat(tx, tx_packets) + dropped, (uint64_t)sent);
		if (!stall) {
			/* the connection goes on */
			struct uskb *skb = frame(peer.len, (unsigned int)sent, PAGED, want);

			CHECK_EQ(send_one(tx, skb), USKB_XMIT_OK);
			sent++;
		}
		CHECK(uskb_dev_running(tx) == !stall);
		uskb_dev_close(tx);
		if (stall) {
			peer.fd = accept(lfd, NULL, NULL);
			peer.got = frames_read(peer.fd, peer.len);
			CHECK(sent > 20);
			CHECK(took >= 0.45 && took < 1.5);
			CHECK(dropped > 0 && dropped < (uint64_t)sent);
			CHECK(strstr(err, "the peer took no more within 500 ms: connection reset") != NULL);
		} else {
			pthread_join(th, NULL);
			CHECK_EQ(sent, 201);
			CHECK(took < 0.4);
			CHECK_EQ(dropped, 0);
		}
		/* what was not counted lost is the peer's, whole, in order */
		CHECK_EQ((uint64_t)peer.got, (uint64_t)sent - dropped);
		if (t_failures)
			fprintf(stderr, "drain%s, %s peer: sent %d, dropped %llu, the peer read %d; %.2f s: %s\n",
				opts, stall ? "stalled" : "reading", sent, (unsigned long long)dropped, peer.got,
				took, err);
		close(peer.fd);
		close(lfd);
	}
}

/*
 * A listening device whose peer stopped reading: the drain counts what the
 * peer did not take and resets it, a frame half out included, and the
 * next peer gets whole frames from the first byte (never the rest of the
 * old one's frame)
 */
static void test_drain_listen(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	static unsigned char want[9000];
	int p1 = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), rcv = 4096, sent = 0, res;
	struct peer second = { .fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), .len = 9000 };
	uint16_t port = (uint16_t)(port_base + 1900);
	struct uskb_dev *tx;
	char spec[64];
	uint64_t dropped;
	pthread_t th;
	int got1;

	snprintf(spec, sizeof(spec), "tcp:127.0.0.1:%u,listen", port);
	tx = uskb_dev_open(spec);
	CHECK(tx != NULL);
	if (!tx)
		return;
	sa.sin_port = htons(port);
	setsockopt(p1, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
	CHECK_EQ(connect(p1, (struct sockaddr *)&sa, sizeof(sa)), 0);
	for (unsigned int i = 0, busy = 0; busy < 200 && i < 100000; i++) {
		struct uskb *skb = frame(9000, i, PAGED, want);

		uskb_dev_xmit(tx, 0, &skb, 1, &res);
		if (res == USKB_XMIT_BUSY) {
			uskb_free(skb);
			busy++;
			i--;
			uskb_dev_flush(tx, 0);
			continue;
		}
		busy = 0;
		sent += res == USKB_XMIT_OK;
	}
	uskb_dev_drain(tx, 0, 300);
	dropped = dev_stat(tx, tx_dropped);
	CHECK(sent > 0 && dropped > 0);
	CHECK(uskb_dev_running(tx)); /* listening: it waits for the next peer */
	got1 = frames_read(p1, 9000);
	CHECK_EQ((uint64_t)got1, (uint64_t)sent - dropped);
	/* the next peer: whole frames only */
	CHECK_EQ(connect(second.fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	pthread_create(&th, NULL, peer_reads, &second);
	for (unsigned int i = 0; i < 20; i++)
		CHECK_EQ(send_one(tx, frame(9000, 1000 + i, PAGED, want)), USKB_XMIT_OK);
	uskb_dev_drain(tx, 0, 3000);
	uskb_dev_close(tx);
	pthread_join(th, NULL);
	CHECK_EQ(second.got, 20);
	if (t_failures)
		fprintf(stderr, "drain, listening: sent %d, dropped %llu, the first peer read %d, the second %d\n",
			sent, (unsigned long long)dropped, got1, second.got);
	close(p1);
	close(second.fd);
}

/* ---- as root: a sink that takes no copy ---- */

static int sh(const char *cmd)
{
	return system(cmd) == 0 ? 0 : -1;
}

static char tc_obj[512];

static int sink_setup(void)
{
	char cmd[1024];

	if (unshare(CLONE_NEWNET))
		return -1;
	snprintf(cmd, sizeof(cmd),
		 "ip link add ua type veth peer name ub && ip link set lo up && ip link set ua up && "
		 "ip link set ub up && ip addr add 198.18.0.1/24 dev ua && "
		 "ip neigh replace 198.18.0.2 lladdr 02:00:00:00:00:02 dev ua nud permanent && "
		 "tc qdisc add dev ua clsact && "
		 "tc filter add dev ua egress bpf direct-action obj %s sec tc", tc_obj);
	return sh(cmd);
}

static void test_sink(const char *mode)
{
	enum { N = 1000 };
	static struct ub b[N];
	char ts[96];
	struct uskb_dev *tx;
	int i, ranges = 0;

	atomic_store(&ub_done, 0);
	atomic_store(&ub_ok, 0);
	atomic_store(&ub_twice, 0);
	snprintf(ts, sizeof(ts), "udp:198.18.0.2:9,%s,copybreak=0", mode);
	tx = uskb_dev_open(ts);
	CHECK(tx);
	if (!tx) {
		fprintf(stderr, "%s: %s\n", ts, uskb_dev_strerror());
		return;
	}
	for (i = 0; i < N; i++) {
		struct uskb *skb = user_frame(&b[i], 1000);
		int before = atomic_load(&ub_done), res;

		do { /* the bound on bytes in flight may make it wait */
			uskb_dev_xmit(tx, 0, &skb, 1, &res);
			if (res == USKB_XMIT_BUSY)
				uskb_dev_flush(tx, 0);
		} while (res == USKB_XMIT_BUSY);
		CHECK_EQ(res, USKB_XMIT_OK);
		/* completions come several at once: one notification covers a range */
		ranges += atomic_load(&ub_done) - before > 1;
	}
	for (i = 0; i < 1000 && atomic_load(&ub_done) < N; i++) {
		uskb_dev_flush(tx, 0);
		usleep(1000);
	}
	CHECK_EQ(atomic_load(&ub_done), N);
	CHECK_EQ(atomic_load(&ub_ok), N);
	CHECK_EQ(atomic_load(&ub_twice), 0);
	CHECK_EQ(dev_stat(tx, tx_zc), N);
	CHECK_EQ(dev_stat(tx, tx_zc_copied), 0);
	CHECK_EQ(dev_stat(tx, tx_zc_fallback), 0);
	CHECK_EQ(dev_stat(tx, tx_dropped), 0);
	CHECK_EQ(dev_stat(tx, tx_zc_fixed), 0); /* user memory: never registered */
	if (!strcmp(mode, "zc"))
		CHECK(ranges > 0);
	uskb_dev_close(tx);

	/*
	 * GSO with zero copy. A zero-copy UDP send holds at most 17 frags
	 * (MAX_SKB_FRAGS), one per page an iovec touches: 44 frames of 1472
	 * bytes from one 64 KiB area (each in one or two pages) take at least 3
	 * sends; frames of a head and a zero-page frag (two pieces each) take 8
	 * per send. None is copied, none is lost.
	 */
	snprintf(ts, sizeof(ts), "udp:198.18.0.2:9,%s,gso,copybreak=0", mode);
	tx = uskb_dev_open(ts);
	CHECK(tx);
	if (tx) {
		struct uskb_page *area = uskb_page_alloc(4);
		struct uskb *v[44];
		uint64_t zc_before;
		int res[44];

		for (i = 0; i < 44; i++) {
			v[i] = uskb_alloc(0);
			uskb_page_get(area);
			uskb_add_rx_frag(v[i], 0, area, i * 1472, 1472, 1472);
		}
		uskb_page_put(area);
		CHECK_EQ(uskb_dev_xmit(tx, 0, v, 44, res), 44);
		for (i = 0; i < 100; i++) {
			uskb_dev_flush(tx, 0);
			usleep(1000);
		}
		CHECK(dev_stat(tx, tx_zc) >= 3 && dev_stat(tx, tx_zc) < 44); /* GSO: several a send */
		CHECK_EQ(dev_stat(tx, tx_zc_copied), 0);
		CHECK_EQ(dev_stat(tx, tx_dropped), 0);
		CHECK_EQ(dev_stat(tx, tx_packets), 44);
		/* uring: page memory lies in uskb's window, which the device registered */
		CHECK_EQ(dev_stat(tx, tx_zc_fixed), strcmp(mode, "uring") || !can_fix(true) ? 0 : 44);
		zc_before = dev_stat(tx, tx_zc);
		for (i = 0; i < 44; i++) {
			v[i] = uskb_alloc(64);
			uskb_put_zero(v[i], 42);
			uskb_page_get(uskb_zero_page());
			uskb_add_rx_frag(v[i], 0, uskb_zero_page(), 0, 1472 - 42, 4096);
		}
		CHECK_EQ(uskb_dev_xmit(tx, 0, v, 44, res), 44);
		for (i = 0; i < 100; i++) {
			uskb_dev_flush(tx, 0);
			usleep(1000);
		}
		/* 88 pieces, 8 frames a send: 6 sends */
		CHECK_EQ(dev_stat(tx, tx_zc) - zc_before, 6);
		CHECK_EQ(dev_stat(tx, tx_zc_copied), 0);
		CHECK_EQ(dev_stat(tx, tx_dropped), 0);
		/* heads and the zero page (writable only while registering) lie there too */
		CHECK_EQ(dev_stat(tx, tx_zc_fixed), strcmp(mode, "uring") || !can_fix(true) ? 0 : 88);
		uskb_dev_close(tx);
	}

	/* close with sends in flight: each buffer completes before close returns */
	atomic_store(&ub_done, 0);
	snprintf(ts, sizeof(ts), "udp:198.18.0.2:9,%s,copybreak=0", mode);
	tx = uskb_dev_open(ts);
	CHECK(tx);
	if (tx) {
		for (i = 0; i < 100; i++)
			CHECK_EQ(send_one(tx, user_frame(&b[i], 1000)), USKB_XMIT_OK);
		uskb_dev_close(tx);
		CHECK_EQ(atomic_load(&ub_done), 100);
		CHECK_EQ(atomic_load(&ub_twice), 0);
	}
}

/* GSO of frames past the MTU: the route refuses it (EMSGSIZE since 6.13); GSO goes off, nothing is lost */
static void test_gso_refused(const char *opts)
{
	unsigned char want[1500];
	struct uskb *v[10];
	struct uskb_dev *tx;
	char ts[96], e[192];
	int res[10], i;

	snprintf(ts, sizeof(ts), "udp:198.18.0.2:9,gso%s", opts);
	tx = uskb_dev_open(ts);
	CHECK(tx);
	if (!tx)
		return;
	for (i = 0; i < 10; i++)
		v[i] = frame(1500, (unsigned int)i, PAGED, want); /* 1528-byte datagrams, MTU 1500 */
	CHECK_EQ(uskb_dev_xmit(tx, 0, v, 10, res), 10);
	CHECK_EQ(dev_stat(tx, tx_dropped), 0);
	uskb_dev_last_error(tx, e, sizeof(e));
	CHECK(strstr(e, "UDP_SEGMENT refused"));
	uskb_dev_close(tx);
}

/* ENOBUFS: a small optmem_max caps the notifications the kernel keeps; nothing is lost */
static void test_enobufs(void)
{
	enum { N = 3000 };
	struct uskb_dev *tx;
	unsigned char want[1000];
	int i;

	if (sh("sysctl -qw net.core.optmem_max=4096"))
		return;
	tx = uskb_dev_open("udp:198.18.0.2:9,zc,copybreak=0,inflight=64m");
	CHECK(tx);
	if (!tx)
		return;
	for (i = 0; i < N; i++)
		CHECK_EQ(send_one(tx, frame(1000, (unsigned int)i, PAGED, want)), USKB_XMIT_OK);
	uskb_dev_close(tx);
	sh("sysctl -qw net.core.optmem_max=131072");
}

int main(int argc, char **argv)
{
	char *slash;

	port_base = 20000 + (int)(getpid() % 20000);
	snprintf(sockdir, sizeof(sockdir), "/tmp/uskb-sock.%d", (int)getpid());
	mkdir(sockdir, 0700);

	test_specs();
	probe_uring();
	test_udp("", "");
	test_udp(",zc", "");
	test_udp(",zc,copybreak=0", "");
	if (uring_ok) {
		test_udp(",uring,copybreak=0", ",uring"); /* listen in uring mode still knows whom to reply to */
		test_udp(",uring,nofixed,copybreak=0", "");
	}
	test_udp_gso();
	test_udp_rx_zc("");
	if (uring_ok)
		test_udp_rx_zc(",uring");
	test_udp_local_copied("zc");
	if (uring_ok)
		test_udp_local_copied("uring");
	test_fallback_counted("zc");
	if (uring_ok)
		test_fallback_counted("uring");
	for (int k = 0; k < 2; k++) {
		const char *kind = k ? "unix" : "tcp";

		test_stream(kind, "");
		test_split_reads(kind);
		test_client_down(kind);
		test_reconnect(kind);
		test_backpressure(kind, "");
	}
	test_stream("tcp", ",zc,copybreak=0");
	if (uring_ok)
		test_stream("tcp", ",uring,copybreak=0");
	test_listen_zc_reconnect();
	test_backpressure("tcp", ",zc,copybreak=0");
	test_drain("");
	test_drain(",zc,copybreak=0");
	test_drain_listen();
	if (uring_ok)
		test_drain(",uring,copybreak=0");
	if (uring_ok) {
		test_backpressure("tcp", ",uring,copybreak=0");
		/* the receiving side in uring mode: multishot receive into slots */
		lopts = ",listen,uring";
		test_stream("tcp", "");
		test_stream("tcp", ",uring,copybreak=0");
		test_split_reads("tcp");
		test_reconnect("tcp");
		test_backpressure("tcp", "");
		lopts = ",listen";
		test_stream_rx_slots();
	}

	/* the sink: root, a network namespace of our own, bpf/tc_drop.o */
	snprintf(tc_obj, sizeof(tc_obj), "%s", argv[0]);
	slash = strrchr(tc_obj, '/');
	snprintf(slash ? slash + 1 : tc_obj, sizeof(tc_obj) - (size_t)(slash ? slash + 1 - tc_obj : 0),
		 "../bpf/tc_drop.o");
	(void)argc;
	if (getuid() != 0 || access(tc_obj, R_OK))
		printf("sink tests skipped: %s\n", getuid() ? "not root" : "no build/bpf/tc_drop.o (clang)");
	else if (sink_setup())
		printf("sink tests skipped: no veth or tc here\n");
	else {
		test_sink("zc");
		if (uring_ok) {
			test_sink("uring");
			test_sink("uring,nofixed");
		}
		test_gso_refused("");
		test_gso_refused(",zc,copybreak=0");
		test_enobufs();
	}
	/* the unix: sockets the listeners bound stay as files: the directory goes whole */
	{
		DIR *dir = opendir(sockdir);
		struct dirent *e;
		char path[sizeof(sockdir) + 256];

		while (dir && (e = readdir(dir)))
			if (e->d_name[0] != '.') {
				snprintf(path, sizeof(path), "%s/%s", sockdir, e->d_name);
				unlink(path);
			}
		if (dir)
			closedir(dir);
	}
	CHECK_EQ(rmdir(sockdir), 0);
	return t_end("sock");
}
