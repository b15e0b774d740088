/* SPDX-License-Identifier: MIT */
/*
 * libuskb-vhost against a frontend of our own: guest memory in a memfd,
 * split rings written by hand, the backend serving on another thread, a
 * lower device that holds the skbs until the test frees them.
 *  - the order rule: 64 chains sent in place, completed in a shuffled
 *    order: the used ring never passes the first chain not yet completed,
 *    and gives back every head once, in avail order; the skbs' bytes are
 *    the guest's;
 *  - the copy rules: 128 out in place, the rest copied (pend); a device
 *    that copies after all (orphan) makes the backend copy (err); short
 *    frames copied (small); a header, an indirect table;
 *  - a hostile guest: a descriptor loop, a buffer past guest memory, a head
 *    beyond the ring, an indirect table inside one, an avail index too far
 *    ahead, rings outside memory, bad memory tables (too many regions,
 *    missing fds, overlap, past the file's end), a message longer than any:
 *    each stops its queue (or is refused) with a message, and the next
 *    connection is served; loops are named loops (with bytes in their
 *    pieces too), a long chain a long chain; features not offered are
 *    refused with a line; RESET_OWNER is acked under REPLY_ACK; a message
 *    cut short, or replies never read, cost the connection within 1 s.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/virtio_net.h>
#include <linux/virtio_ring.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "t.h"
#include "uskb/dev.h"
#include "uskb/vhost.h"

static int t_failures;

/* ---- a lower device that holds what it is given ---- */

enum { HOLD, ORPHAN };
static struct {
	pthread_mutex_t lock;
	struct uskb *held[1024];
	int n, mode;
} hold = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void hold_xmit(struct uskb_dev *dev, unsigned int q, struct uskb **skbs, int n, int *res)
{
	(void)dev;
	(void)q;
	for (int i = 0; i < n; i++) {
		res[i] = USKB_XMIT_OK;
		if (__atomic_load_n(&hold.mode, __ATOMIC_RELAXED) == ORPHAN) {
			/* a device that had to copy after all: the guest's buffer is told "copied" */
			CHECK_EQ(uskb_orphan_frags(skbs[i]), 0);
			uskb_free(skbs[i]);
			continue;
		}
		pthread_mutex_lock(&hold.lock);
		hold.held[hold.n++] = skbs[i];
		pthread_mutex_unlock(&hold.lock);
	}
}

/* what the device "receives": frames the test queues */
static struct {
	pthread_mutex_t lock;
	struct uskb *q[64];
	int n;
} rxq = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int hold_rx(struct uskb_dev *dev, unsigned int q, struct uskb **skbs, int max, int timeout_ms)
{
	int n;

	(void)dev;
	(void)q;
	(void)timeout_ms;
	pthread_mutex_lock(&rxq.lock);
	n = rxq.n < max ? rxq.n : max;
	memcpy(skbs, rxq.q, (size_t)n * sizeof(*skbs));
	memmove(rxq.q, rxq.q + n, (size_t)(rxq.n - n) * sizeof(*skbs));
	rxq.n -= n;
	pthread_mutex_unlock(&rxq.lock);
	return n;
}

static const struct uskb_dev_ops hold_ops = { .type = "hold", .xmit = hold_xmit, .rx = hold_rx };
static struct uskb_dev hold_dev = { .name = "hold", .ops = &hold_ops,
				    .features = USKB_DEV_F_SG | USKB_DEV_F_ZEROCOPY, .mtu = 65535,
				    .nqueues = 1, .nrxqueues = 1 };

static int held(void)
{
	pthread_mutex_lock(&hold.lock);
	int n = hold.n;
	pthread_mutex_unlock(&hold.lock);
	return n;
}

/* free the held skbs in the order @perm (NULL: as they came) */
static void release(const int *perm)
{
	pthread_mutex_lock(&hold.lock);
	for (int i = 0; i < hold.n; i++)
		uskb_free(hold.held[perm ? perm[i] : i]);
	hold.n = 0;
	pthread_mutex_unlock(&hold.lock);
}

/* ---- the backend, on its own thread ---- */

static struct uskb_vhost *vh;
static pthread_t vh_thread;
static char sock_path[108];

static void *serve(void *arg)
{
	(void)arg;
	CHECK_EQ(uskb_vhost_run(vh, -1), 0);
	return NULL;
}

static struct uskb_vhost_qstats qstats(unsigned int q)
{
	struct uskb_vhost_qstats st;

	CHECK(uskb_vhost_get_stats(vh, q, &st));
	return st;
}

static struct uskb_vhost_qstats stats(void)
{
	return qstats(1);
}

/* wait until @cond holds (up to 3 s); its last value */
#define WAIT_FOR(cond)                                                      \
	({                                                                  \
		bool _ok = false;                                           \
		for (int _i = 0; _i < 3000 && !(_ok = (cond)); _i++)        \
			usleep(1000);                                       \
		_ok;                                                        \
	})

/* ---- the guest ---- */

#define MEM (4u << 20)
#define NUM 256u
#define DESC_OFF 0x0000u
#define AVAIL_OFF 0x1000u
#define USED_OFF 0x2000u
#define IND_OFF 0x3000u
#define BUF_OFF 0x10000u
#define BUF_SZ 4096u
#define RX_DESC_OFF 0x4000u	/* ring 0, the guest's receive */
#define RX_AVAIL_OFF 0x5000u
#define RX_USED_OFF 0x6000u
#define RX_BUF_OFF 0x210000u
#define RX_BUF_SZ 1024u

static uint64_t extra_feats; /* MRG_RXBUF for the receive tests */
static bool shrink_in_up;    /* guest_up: the memory file shrinks right after SET_MEM_TABLE */
static bool no_event_idx;    /* the busy-poll test, with VRING_USED_F_NO_NOTIFY */

struct guest {
	int memfd, fd, kick, call;
	uint8_t *mem;
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;
	uint16_t avail_idx, next_head;
};

struct msg {
	uint32_t request, flags, size;
	uint8_t p[256];
} __attribute__((packed));

static int send_msg(struct guest *g, uint32_t req, uint32_t flags, const void *p, uint32_t size,
		    const int *fds, int nfds)
{
	struct msg m = { req, 0x1 | flags, size };
	char cbuf[CMSG_SPACE(8 * sizeof(int))];
	struct iovec iov = { &m, 12 + size };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (size)
		memcpy(m.p, p, size);
	if (nfds) {
		struct cmsghdr *c;

		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, (size_t)nfds * sizeof(int));
	}
	return sendmsg(g->fd, &mh, MSG_NOSIGNAL) == (ssize_t)(12 + size) ? 0 : -1;
}

/* a reply's u64 (GET_* or the REPLY_ACK status); ~0 when none came */
static uint64_t reply_u64(struct guest *g)
{
	struct msg m;
	struct pollfd pfd = { .fd = g->fd, .events = POLLIN };
	uint64_t v = ~0ull;

	if (poll(&pfd, 1, 3000) != 1 || recv(g->fd, &m, 12, MSG_WAITALL) != 12 || m.size > sizeof(m.p) ||
	    (m.size && recv(g->fd, m.p, m.size, MSG_WAITALL) != (ssize_t)m.size))
		return ~0ull;
	if (!(m.flags & 0x4))
		return ~0ull;
	if (m.size >= 8)
		memcpy(&v, m.p, 8);
	else if (m.size == 8 - 4)
		v = 0;
	return v;
}

static uint64_t req_ack(struct guest *g, uint32_t req, const void *p, uint32_t size, const int *fds, int nfds)
{
	if (send_msg(g, req, 0x8, p, size, fds, nfds))
		return ~0ull;
	return reply_u64(g);
}

static void put_u64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

struct region {
	uint64_t gpa, size, uva, off;
};

/* connect and set up ring 1 (transmit); NULL-ring options for the hostile cases */
static bool guest_up(struct guest *g, bool indirect)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	uint64_t f, feats = (1ull << VIRTIO_F_VERSION_1) | (no_event_idx ? 0 : 1ull << VIRTIO_RING_F_EVENT_IDX) |
			    (1ull << 30);
	struct region r = { 0, MEM, 0, 0 };
	uint8_t p[64];
	uint32_t st[2];

	if (indirect)
		feats |= 1ull << VIRTIO_RING_F_INDIRECT_DESC;
	feats |= extra_feats;
	memset(g->mem, 0, MEM);
	g->desc = (void *)(g->mem + DESC_OFF);
	g->avail = (void *)(g->mem + AVAIL_OFF);
	g->used = (void *)(g->mem + USED_OFF);
	g->avail_idx = g->next_head = 0;
	g->fd = socket(AF_UNIX, SOCK_STREAM, 0);
	strcpy(sa.sun_path, sock_path);
	if (connect(g->fd, (struct sockaddr *)&sa, sizeof(sa)))
		return false;
	send_msg(g, 1, 0, NULL, 0, NULL, 0); /* GET_FEATURES */
	f = reply_u64(g);
	CHECK((f & feats) == feats);
	put_u64(p, feats);
	send_msg(g, 2, 0, p, 8, NULL, 0);
	send_msg(g, 15, 0, NULL, 0, NULL, 0);
	CHECK(reply_u64(g) & (1ull << 3));
	put_u64(p, 1ull << 3); /* REPLY_ACK */
	send_msg(g, 16, 0, p, 8, NULL, 0);
	/* NEED_REPLY on a request with a reply of its own: that reply only (the next one is in step) */
	send_msg(g, 17, 0x8, NULL, 0, NULL, 0);
	CHECK_EQ(reply_u64(g), 1);
	send_msg(g, 1, 0, NULL, 0, NULL, 0);
	CHECK((reply_u64(g) & feats) == feats);
	send_msg(g, 3, 0, NULL, 0, NULL, 0);
	r.uva = (uint64_t)(uintptr_t)g->mem;
	memset(p, 0, 8);
	p[0] = 1;
	memcpy(p + 8, &r, sizeof(r));
	if (req_ack(g, 5, p, 8 + sizeof(r), &g->memfd, 1) != 0)
		return false;
	if (shrink_in_up)
		CHECK_EQ(ftruncate(g->memfd, 0), 0);
	st[0] = 1, st[1] = NUM;
	send_msg(g, 8, 0, st, 8, NULL, 0);
	st[1] = 0;
	send_msg(g, 10, 0, st, 8, NULL, 0);
	{
		uint64_t a[5] = { 0, (uintptr_t)g->desc, (uintptr_t)g->used, (uintptr_t)g->avail, 0 };
		uint32_t idx[2] = { 1, 0 };

		memcpy(p, idx, 8);
		memcpy(p + 8, &a[1], 32);
		send_msg(g, 9, 0, p, 40, NULL, 0);
	}
	put_u64(p, 1);
	send_msg(g, 12, 0, p, 8, &g->kick, 1);
	send_msg(g, 13, 0, p, 8, &g->call, 1);
	st[0] = 1, st[1] = 1;
	return req_ack(g, 18, st, 8, NULL, 0) == 0;
}

static void guest_down(struct guest *g)
{
	close(g->fd);
	CHECK(WAIT_FOR(!uskb_vhost_connected(vh)));
}

/* the frame of sequence @seq, @len bytes (after the 12-byte header) */
static void frame_bytes(uint8_t *f, unsigned int len, unsigned int seq)
{
	t_fill(f, len, seq);
	memset(f, 0x02, 12); /* MACs */
	f[12] = 0x88, f[13] = 0xb5;
}

/*
 * One chain of @ndesc descriptors: the header and the frame in one; or a
 * header descriptor, then the frame in one or two more. Returns the head.
 * A test phase makes at most NUM descriptors available at once (a guest
 * reuses a descriptor only once it is back).
 */
static uint16_t post(struct guest *g, unsigned int len, unsigned int seq, unsigned int ndesc)
{
	uint16_t h = g->next_head + ndesc > NUM ? 0 : g->next_head;
	uint8_t *buf = g->mem + BUF_OFF + (size_t)(g->avail_idx % NUM) * 2 * BUF_SZ;
	uint64_t b = (uint64_t)(buf - g->mem), a = ndesc == 3 ? len / 2 : len;

	memset(buf, 0, 12);
	frame_bytes(buf + 12, len, seq);
	if (ndesc == 1) {
		g->desc[h] = (struct vring_desc){ b, 12 + len, 0, 0 };
	} else {
		g->desc[h] = (struct vring_desc){ b, 12, VRING_DESC_F_NEXT, (uint16_t)(h + 1) };
		g->desc[h + 1] = (struct vring_desc){ b + 12, (uint32_t)a, 0, 0 };
	}
	if (ndesc == 3) {
		g->desc[h + 1].flags = VRING_DESC_F_NEXT;
		g->desc[h + 1].next = (uint16_t)(h + 2);
		g->desc[h + 2] = (struct vring_desc){ b + 12 + a, (uint32_t)(len - a), 0, 0 };
	}
	g->next_head = (uint16_t)(h + ndesc);
	g->avail->ring[g->avail_idx % NUM] = h;
	__atomic_store_n(&g->avail->idx, ++g->avail_idx, __ATOMIC_RELEASE);
	return h;
}

static void kick(struct guest *g)
{
	eventfd_write(g->kick, 1);
}

static uint16_t used_idx(struct guest *g)
{
	return __atomic_load_n(&g->used->idx, __ATOMIC_ACQUIRE);
}

/* ---- the order rule ---- */

static void order_rule(struct guest *g)
{
	enum { N = 64 };
	uint16_t heads[N];
	int perm[N];
	bool freed[N] = { 0 };
	uint8_t want[2000];
	uint64_t zc0 = stats().zcopied;

	CHECK(guest_up(g, true));
	for (int i = 0; i < N; i++)
		heads[i] = post(g, 1000, (unsigned int)i, 2 + i % 2);
	kick(g);
	CHECK(WAIT_FOR(held() == N));
	CHECK_EQ(used_idx(g), 0);
	CHECK_EQ(stats().zcopied - zc0, N);
	/* the skbs carry the guest's bytes, in place */
	pthread_mutex_lock(&hold.lock);
	for (int i = 0; i < hold.n; i++) {
		frame_bytes(want, 1000, (unsigned int)i);
		CHECK(uskb_zcopy(hold.held[i]) != NULL);
		CHECK(t_skb_equals(hold.held[i], want, 1000));
		CHECK(uskb_shinfo(hold.held[i])->nr_frags >= 1);
	}
	pthread_mutex_unlock(&hold.lock);
	/* completed in a shuffled order: the used ring only ever reaches the first one not done */
	for (int i = 0; i < N; i++)
		perm[i] = (i * 37 + 11) % N;
	pthread_mutex_lock(&hold.lock);
	for (int i = 0; i < N; i++) {
		int prefix = 0;

		uskb_free(hold.held[perm[i]]);
		freed[perm[i]] = true;
		while (prefix < N && freed[prefix])
			prefix++;
		usleep(500);
		CHECK(used_idx(g) <= prefix);
	}
	hold.n = 0;
	pthread_mutex_unlock(&hold.lock);
	CHECK(WAIT_FOR(used_idx(g) == N));
	for (int i = 0; i < N; i++)
		CHECK_EQ(g->used->ring[i].id, heads[i]);
	{
		/* and the guest was called (its call eventfd) */
		eventfd_t calls = 0;

		CHECK(eventfd_read(g->call, &calls) == 0 && calls >= 1);
	}
	CHECK_EQ(stats().pending, 0);
	printf("order: %d chains completed shuffled, given back in avail order, each once\n", N);

	/* 200 at once: 128 in place (VHOST_MAX_PEND), the rest copied; short frames copied */
	{
		struct uskb_vhost_qstats a = stats(), b;
		uint16_t u0 = used_idx(g);

		for (int i = 0; i < 200; i++)
			post(g, 1000, (unsigned int)i, 1);
		for (int i = 0; i < 10; i++)
			post(g, 100, (unsigned int)i, 1);
		kick(g);
		CHECK(WAIT_FOR(stats().packets - a.packets == 210));
		b = stats();
		CHECK_EQ(b.zcopied - a.zcopied, 128);
		CHECK_EQ(b.copied[USKB_VHOST_COPY_PEND] - a.copied[USKB_VHOST_COPY_PEND], 72);
		CHECK_EQ(b.copied[USKB_VHOST_COPY_SMALL] - a.copied[USKB_VHOST_COPY_SMALL], 10);
		/* the copied ones wait behind the first in place: nothing back yet */
		CHECK_EQ(used_idx(g), u0);
		CHECK_EQ(held(), 210);
		release(NULL);
		CHECK(WAIT_FOR(used_idx(g) == (uint16_t)(u0 + 210)));
		printf("copy rules: 128 in place, 72 copied (pend), 10 short ones copied (small)\n");
	}
	/* a device that copies after all: the backend stops sending in place (err) */
	{
		struct uskb_vhost_qstats a = stats(), b;

		__atomic_store_n(&hold.mode, ORPHAN, __ATOMIC_RELAXED);
		for (int i = 0; i < 100; i++) {
			post(g, 1000, (unsigned int)i, 1);
			kick(g);
			WAIT_FOR(stats().packets - a.packets == (uint64_t)i + 1);
		}
		__atomic_store_n(&hold.mode, HOLD, __ATOMIC_RELAXED);
		b = stats();
		CHECK(b.zcopy_err > a.zcopy_err);
		CHECK(b.copied[USKB_VHOST_COPY_ERR] - a.copied[USKB_VHOST_COPY_ERR] > 50);
		release(NULL);
		printf("err: %llu completions copied, then %llu frames copied (err)\n",
		       (unsigned long long)(b.zcopy_err - a.zcopy_err),
		       (unsigned long long)(b.copied[USKB_VHOST_COPY_ERR] - a.copied[USKB_VHOST_COPY_ERR]));
	}
	guest_down(g);
}

/* ---- checksum offload (VIRTIO_NET_F_CSUM) ---- */

static uint32_t sum16(const uint8_t *p, size_t n, uint32_t s)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (n & 1)
		s += (uint32_t)(p[n - 1] << 8);
	return s;
}

static uint16_t fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

/*
 * A UDP/IPv4 frame whose checksum the guest leaves to the device
 * (NEEDS_CSUM, the pseudo-header sum in the field, as Linux does): the
 * device here has no checksum offload, so the backend completes it.
 */
static void csum_offload(struct guest *g)
{
	enum { LEN = 14 + 20 + 8 + 700 };
	uint8_t *buf = g->mem + BUF_OFF, *f = buf + 12;
	struct virtio_net_hdr *h = (void *)buf;
	uint8_t got[LEN];
	uint32_t s;

	extra_feats = 1ull << VIRTIO_NET_F_CSUM;
	CHECK(guest_up(g, true));
	memset(buf, 0, 12 + LEN);
	frame_bytes(f, LEN, 5);
	f[12] = 0x08, f[13] = 0x00;
	memcpy(f + 14, "\x45\x00\x02\xd8\x00\x00\x00\x00\x40\x11\x00\x00\xc6\x12\x00\x01\xc6\x12\x00\x02", 20);
	f[34] = 0, f[35] = 9, f[36] = 0, f[37] = 9, f[38] = (8 + 700) >> 8, f[39] = (8 + 700) & 0xff;
	/* the pseudo-header sum, not inverted */
	s = sum16(f + 26, 8, 17 + 8 + 700);
	f[40] = (uint8_t)(fold(s) >> 8), f[41] = (uint8_t)fold(s);
	h->flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	h->csum_start = 34;
	h->csum_offset = 6;
	g->desc[0] = (struct vring_desc){ BUF_OFF, 12 + LEN, 0, 0 };
	g->avail->ring[0] = 0;
	__atomic_store_n(&g->avail->idx, 1, __ATOMIC_RELEASE);
	kick(g);
	CHECK(WAIT_FOR(held() == 1));
	pthread_mutex_lock(&hold.lock);
	CHECK_EQ(hold.held[0]->len, LEN);
	CHECK(!uskb_copy_bits(hold.held[0], 0, got, LEN));
	pthread_mutex_unlock(&hold.lock);
	/* the whole UDP checksum, pseudo-header included, sums to 0xffff */
	CHECK_EQ(fold(sum16(got + 34, 8 + 700, sum16(got + 26, 8, 17 + 8 + 700))), 0xffff);
	CHECK(got[40] || got[41]);
	CHECK(!memcmp(got + 42, f + 42, 700));
	release(NULL);
	CHECK(WAIT_FOR(used_idx(g) == 1));
	guest_down(g);
	extra_feats = 0;
	printf("csum: a NEEDS_CSUM frame to a device without checksum offload leaves complete\n");
}

/* the features the backend offers now (GET_FEATURES on a connection of its own) */
static uint64_t offered_now(struct guest *g)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	uint64_t f;

	g->fd = socket(AF_UNIX, SOCK_STREAM, 0);
	strcpy(sa.sun_path, sock_path);
	CHECK(connect(g->fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	send_msg(g, 1, 0, NULL, 0, NULL, 0);
	f = reply_u64(g);
	close(g->fd);
	return f;
}

/* one chain: a TCP/IPv4 frame of @payload bytes with the virtio-net header @h */
static void post_tcp(struct guest *g, const struct virtio_net_hdr *h, unsigned int payload, unsigned int seq)
{
	uint8_t *buf = g->mem + BUF_OFF + (size_t)(g->avail_idx % NUM) * 2 * BUF_SZ, *f = buf + 12;
	unsigned int len = 14 + 20 + 20 + payload;
	uint16_t head = g->next_head;

	memset(buf, 0, 12);
	memcpy(buf, h, sizeof(*h));
	frame_bytes(f, len, seq);
	f[12] = 0x08, f[13] = 0x00;
	memcpy(f + 14, "\x45\x00\x00\x00\x00\x00\x40\x00\x40\x06\x00\x00\xc6\x12\x00\x01\xc6\x12\x00\x02", 20);
	f[46] = 0x50; /* a 20-byte TCP header */
	g->desc[head] = (struct vring_desc){ (uint64_t)(buf - g->mem), 12 + len, 0, 0 };
	g->next_head = (uint16_t)(head + 1);
	g->avail->ring[g->avail_idx % NUM] = head;
	__atomic_store_n(&g->avail->idx, ++g->avail_idx, __ATOMIC_RELEASE);
}

/* HOST_TSO4/6: offered when the device segments (USKB_DEV_F_TSO); a GSO frame keeps its gso fields */
static void tso(struct guest *g)
{
	struct virtio_net_hdr h = { .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM, .gso_type = VIRTIO_NET_HDR_GSO_TCPV4,
				    .hdr_len = 54, .gso_size = 1000, .csum_start = 34, .csum_offset = 16 };
	uint64_t tso_bits = (1ull << VIRTIO_NET_F_HOST_TSO4) | (1ull << VIRTIO_NET_F_HOST_TSO6);
	uint64_t d0;

	/* a device that does not segment: not offered, and a GSO frame is dropped */
	CHECK(!(offered_now(g) & tso_bits));
	CHECK(offered_now(g) & (1ull << VIRTIO_NET_F_GUEST_CSUM));
	extra_feats = 1ull << VIRTIO_NET_F_CSUM;
	CHECK(guest_up(g, false));
	d0 = stats().dropped;
	post_tcp(g, &h, 3000, 1);
	kick(g);
	CHECK(WAIT_FOR(used_idx(g) == 1));
	CHECK(WAIT_FOR(stats().dropped - d0 == 1)); /* (the counters are published after the round) */
	CHECK_EQ(held(), 0);
	guest_down(g);

	/* one that does */
	hold_dev.features |= USKB_DEV_F_TSO | USKB_DEV_F_IP_CSUM | USKB_DEV_F_IPV6_CSUM;
	CHECK((offered_now(g) & tso_bits) == tso_bits);
	extra_feats = (1ull << VIRTIO_NET_F_CSUM) | (1ull << VIRTIO_NET_F_HOST_TSO4);
	CHECK(guest_up(g, false));
	d0 = stats().dropped; /* (before the chains: the backend may take them before the kick) */
	post_tcp(g, &h, 3000, 2);
	/* TSO6 and ECN were not negotiated: those frames are dropped */
	h.gso_type = VIRTIO_NET_HDR_GSO_TCPV6;
	post_tcp(g, &h, 3000, 3);
	h.gso_type = VIRTIO_NET_HDR_GSO_TCPV4 | VIRTIO_NET_HDR_GSO_ECN;
	post_tcp(g, &h, 3000, 4);
	/* and GSO without a checksum to finish is no GSO frame */
	h.gso_type = VIRTIO_NET_HDR_GSO_TCPV4;
	h.flags = 0;
	post_tcp(g, &h, 3000, 5);
	kick(g);
	CHECK(WAIT_FOR(held() == 1));
	CHECK(WAIT_FOR(stats().dropped - d0 == 3));
	pthread_mutex_lock(&hold.lock);
	if (hold.n == 1) {
		struct uskb *skb = hold.held[0];

		CHECK_EQ(skb->len, 14 + 20 + 20 + 3000);
		CHECK_EQ(uskb_shinfo(skb)->gso_size, 1000);
		CHECK_EQ(uskb_shinfo(skb)->gso_type, USKB_GSO_TCPV4 | USKB_GSO_DODGY);
		CHECK_EQ(skb->ip_summed, USKB_CHECKSUM_PARTIAL);
		CHECK_EQ(uskb_checksum_start_offset(skb), 34);
	}
	pthread_mutex_unlock(&hold.lock);
	release(NULL);
	CHECK(WAIT_FOR(used_idx(g) == 4));
	guest_down(g);
	hold_dev.features &= ~(uint32_t)(USKB_DEV_F_TSO | USKB_DEV_F_IP_CSUM | USKB_DEV_F_IPV6_CSUM);
	extra_feats = 0;
	printf("tso: offered only over a device that segments; a TCPv4 GSO frame keeps gso_size and type, "
	       "others not negotiated are dropped\n");
}

/* ---- the guest's receive ---- */

/* ring 0 with @n write-only buffers of RX_BUF_SZ bytes */
static void rx_up(struct guest *g, unsigned int n)
{
	struct vring_desc *d = (void *)(g->mem + RX_DESC_OFF);
	struct vring_avail *av = (void *)(g->mem + RX_AVAIL_OFF);
	uint8_t p[64];
	uint32_t st[2] = { 0, NUM };
	uint64_t a[4] = { (uintptr_t)d, (uintptr_t)(g->mem + RX_USED_OFF), (uintptr_t)av, 0 };

	for (unsigned int i = 0; i < n; i++) {
		d[i] = (struct vring_desc){ RX_BUF_OFF + i * RX_BUF_SZ, RX_BUF_SZ, VRING_DESC_F_WRITE, 0 };
		av->ring[i] = (uint16_t)i;
	}
	av->idx = (uint16_t)n;
	send_msg(g, 8, 0, st, 8, NULL, 0);
	st[1] = 0;
	send_msg(g, 10, 0, st, 8, NULL, 0);
	memcpy(p, st, 8);
	memcpy(p + 8, a, 32);
	send_msg(g, 9, 0, p, 40, NULL, 0);
	put_u64(p, 0);
	send_msg(g, 12, 0, p, 8, &g->kick, 1);
	send_msg(g, 13, 0, p, 8, &g->call, 1);
	st[1] = 1;
	CHECK_EQ(req_ack(g, 18, st, 8, NULL, 0), 0);
}

static void rx_frame(unsigned int len, unsigned int seq)
{
	struct uskb *skb = uskb_alloc(len);

	frame_bytes(uskb_put(skb, len), len, seq);
	pthread_mutex_lock(&rxq.lock);
	rxq.q[rxq.n++] = skb;
	pthread_mutex_unlock(&rxq.lock);
}

static void guest_rx(struct guest *g)
{
	static const unsigned int sizes[] = { 100, 1500, 3000 };
	struct vring_used *used = (void *)(g->mem + RX_USED_OFF);
	uint8_t want[4000], got[4000];
	unsigned int e = 0;

	/* MRG_RXBUF: a frame over as many 1 KiB buffers as it needs, their count in the header */
	extra_feats = 1ull << VIRTIO_NET_F_MRG_RXBUF;
	CHECK(guest_up(g, true));
	rx_up(g, 16);
	for (unsigned int i = 0; i < 3; i++)
		rx_frame(sizes[i], i);
	CHECK(WAIT_FOR(__atomic_load_n(&used->idx, __ATOMIC_ACQUIRE) == 6));
	for (unsigned int i = 0; i < 3; i++) {
		struct virtio_net_hdr_mrg_rxbuf h;
		unsigned int nb = (sizes[i] + 12 + RX_BUF_SZ - 1) / RX_BUF_SZ, len = 0;

		memcpy(&h, g->mem + RX_BUF_OFF + used->ring[e].id * RX_BUF_SZ, 12);
		CHECK_EQ(h.num_buffers, nb);
		CHECK_EQ(h.hdr.flags, 0);
		for (unsigned int k = 0; k < nb; k++, e++) {
			unsigned int skip = k ? 0 : 12;

			memcpy(got + len, g->mem + RX_BUF_OFF + used->ring[e].id * RX_BUF_SZ + skip,
			       used->ring[e].len - skip);
			len += used->ring[e].len - skip;
		}
		frame_bytes(want, sizes[i], i);
		CHECK_EQ(len, sizes[i]);
		CHECK(!memcmp(got, want, sizes[i]));
	}
	CHECK_EQ(qstats(0).packets, 3);
	guest_down(g);
	printf("guest rx: 100, 1500 and 3000 bytes into 1 KiB buffers: 1, 2 and 3 of them (MRG_RXBUF)\n");

	/* without it: one buffer per frame; a frame that does not fit is dropped */
	extra_feats = 0;
	CHECK(guest_up(g, true));
	rx_up(g, 4);
	rx_frame(500, 7);
	rx_frame(3000, 8);
	rx_frame(600, 9);
	CHECK(WAIT_FOR(__atomic_load_n(&used->idx, __ATOMIC_ACQUIRE) == 2));
	CHECK(WAIT_FOR(qstats(0).dropped == 1));
	CHECK_EQ(used->ring[0].len, 512);
	CHECK_EQ(used->ring[1].len, 612);
	frame_bytes(want, 600, 9);
	CHECK(!memcmp(g->mem + RX_BUF_OFF + used->ring[1].id * RX_BUF_SZ + 12, want, 600));
	guest_down(g);
	printf("guest rx: without MRG_RXBUF one buffer a frame, a frame too big dropped\n");

	/* checksums the device left to do (CHECKSUM_PARTIAL) or checked (UNNECESSARY) */
	for (int gc = 1; gc >= 0; gc--) {
		struct virtio_net_hdr_mrg_rxbuf h;
		struct uskb *skb;
		uint16_t u0;

		extra_feats = (1ull << VIRTIO_NET_F_MRG_RXBUF) | (gc ? 1ull << VIRTIO_NET_F_GUEST_CSUM : 0);
		CHECK(guest_up(g, true));
		rx_up(g, 4);
		u0 = 0;
		for (int k = 0; k < 2; k++) {
			skb = uskb_alloc(600);
			frame_bytes(uskb_put(skb, 600), 600, 20 + (unsigned int)k);
			skb->data[40] = skb->data[41] = 0;
			if (k == 0)
				CHECK(uskb_partial_csum_set(skb, 34, 6));
			else
				skb->ip_summed = USKB_CHECKSUM_UNNECESSARY;
			pthread_mutex_lock(&rxq.lock);
			rxq.q[rxq.n++] = skb;
			pthread_mutex_unlock(&rxq.lock);
		}
		CHECK(WAIT_FOR(__atomic_load_n(&used->idx, __ATOMIC_ACQUIRE) == (uint16_t)(u0 + 2)));
		memcpy(&h, g->mem + RX_BUF_OFF + used->ring[0].id * RX_BUF_SZ, 12);
		memcpy(got, g->mem + RX_BUF_OFF + used->ring[0].id * RX_BUF_SZ + 12, 600);
		if (gc) {
			/* GUEST_CSUM: passed on as it is, the sum not done */
			CHECK_EQ(h.hdr.flags, VIRTIO_NET_HDR_F_NEEDS_CSUM);
			CHECK_EQ(h.hdr.csum_start, 34);
			CHECK_EQ(h.hdr.csum_offset, 6);
			CHECK(got[40] == 0 && got[41] == 0);
		} else {
			/* without: completed here (the sum from csum_start to the end comes to 0xffff) */
			CHECK_EQ(h.hdr.flags, 0);
			CHECK_EQ(fold(sum16(got + 34, 600 - 34, 0)), 0xffff);
		}
		memcpy(&h, g->mem + RX_BUF_OFF + used->ring[1].id * RX_BUF_SZ, 12);
		CHECK_EQ(h.hdr.flags, gc ? VIRTIO_NET_HDR_F_DATA_VALID : 0);
		guest_down(g);
	}
	extra_feats = 0;
	printf("guest rx: GUEST_CSUM passes NEEDS_CSUM and DATA_VALID on; without it the sum is done\n");

	/* a buffer, but too few for the frame: it waits, and the backend serves transmit meanwhile */
	{
		struct vring_desc *d = (void *)(g->mem + RX_DESC_OFF);
		struct vring_avail *av = (void *)(g->mem + RX_AVAIL_OFF);

		extra_feats = 1ull << VIRTIO_NET_F_MRG_RXBUF;
		CHECK(guest_up(g, true));
		rx_up(g, 1);
		rx_frame(3000, 30);
		usleep(50000);
		CHECK_EQ(__atomic_load_n(&used->idx, __ATOMIC_ACQUIRE), 0);
		post(g, 100, 1, 1);
		kick(g);
		CHECK(WAIT_FOR(used_idx(g) == 1));
		/* two buffers more: the frame goes, over all three */
		for (unsigned int i = 1; i < 3; i++) {
			d[i] = (struct vring_desc){ RX_BUF_OFF + i * RX_BUF_SZ, RX_BUF_SZ, VRING_DESC_F_WRITE, 0 };
			av->ring[i] = (uint16_t)i;
		}
		__atomic_store_n(&av->idx, 3, __ATOMIC_RELEASE);
		kick(g);
		CHECK(WAIT_FOR(__atomic_load_n(&used->idx, __ATOMIC_ACQUIRE) == 3));
		guest_down(g);
		release(NULL);
		extra_feats = 0;
		printf("guest rx: a frame waits for enough buffers without holding up transmit\n");
	}
}

/* ---- a hostile guest ---- */

/* what the backend writes to stderr from here on goes into a file (its lines are checked) */
struct grab {
	int saved, fd;
};

static struct grab grab_stderr(void)
{
	struct grab gr = { dup(2), open("/tmp", O_TMPFILE | O_RDWR, 0600) };

	fflush(stderr);
	dup2(gr.fd, 2);
	return gr;
}

/* stderr back; what was written meanwhile into @buf */
static void grab_end(struct grab gr, char *buf, size_t len)
{
	ssize_t n;

	fflush(stderr);
	dup2(gr.saved, 2);
	close(gr.saved);
	n = pread(gr.fd, buf, len - 1, 0);
	buf[n > 0 ? n : 0] = 0;
	close(gr.fd);
}

/* the queue stopped with an error saying @why, and the backend goes on */
static void expect_stop(struct guest *g, const char *what, const char *why)
{
	kick(g);
	if (!WAIT_FOR(stats().errors == 1)) {
		fprintf(stderr, "%s: the queue did not stop\n", what);
		t_failures++;
	} else if (!strstr(uskb_vhost_strerror(vh), why)) {
		fprintf(stderr, "%s: stopped for another reason: %s\n", what, uskb_vhost_strerror(vh));
		t_failures++;
	}
	release(NULL);
	guest_down(g);
	printf("hostile: %s: queue stopped\n", what);
}

/* the chain at head 0 offered (the descriptors the caller wrote), then as expect_stop() */
static void offer_stop(struct guest *g, const char *what, const char *why)
{
	g->avail->ring[0] = 0;
	__atomic_store_n(&g->avail->idx, 1, __ATOMIC_RELEASE);
	expect_stop(g, what, why);
}

static void hostile(struct guest *g)
{
	uint8_t p[256];

	/* a descriptor loop */
	CHECK(guest_up(g, true));
	g->desc[0] = (struct vring_desc){ BUF_OFF, 0, VRING_DESC_F_NEXT, 1 }; /* empty: no piece limit first */
	g->desc[1] = (struct vring_desc){ BUF_OFF, 0, VRING_DESC_F_NEXT, 0 };
	offer_stop(g, "a descriptor loop", "descriptor loop");
	/* loops of pieces with bytes: their pieces run out first, and they are still named loops */
	CHECK(guest_up(g, true));
	g->desc[0] = (struct vring_desc){ BUF_OFF, 100, VRING_DESC_F_NEXT, 1 };
	g->desc[1] = (struct vring_desc){ BUF_OFF, 100, VRING_DESC_F_NEXT, 0 };
	offer_stop(g, "two descriptors that point at each other", "descriptor loop");
	CHECK(guest_up(g, true));
	g->desc[0] = (struct vring_desc){ BUF_OFF, 100, VRING_DESC_F_NEXT, 0 };
	offer_stop(g, "a descriptor that points at itself", "descriptor loop");
	/* and a chain that is only long: 70 pieces, no loop */
	CHECK(guest_up(g, true));
	for (unsigned int i = 0; i < 70; i++)
		g->desc[i] = (struct vring_desc){ BUF_OFF + i * 16, 16, i < 69 ? VRING_DESC_F_NEXT : 0,
						  (uint16_t)(i + 1) };
	offer_stop(g, "a chain of 70 pieces", "a chain of more than 64 pieces");

	/* a buffer that runs past guest memory */
	CHECK(guest_up(g, true));
	g->desc[0] = (struct vring_desc){ MEM - 100, 1000, 0, 0 };
	offer_stop(g, "a buffer past guest memory", "outside guest memory");

	/* a buffer at an address far beyond it (no overflow on the way) */
	CHECK(guest_up(g, true));
	g->desc[0] = (struct vring_desc){ ~0ull - 10, 1000, 0, 0 };
	offer_stop(g, "a buffer at 2^64 - 11", "outside guest memory");

	/* a head beyond the ring */
	CHECK(guest_up(g, true));
	g->avail->ring[0] = NUM + 5;
	__atomic_store_n(&g->avail->idx, 1, __ATOMIC_RELEASE);
	expect_stop(g, "a head beyond the ring", "beyond a ring");

	/* a next beyond the ring */
	CHECK(guest_up(g, true));
	g->desc[0] = (struct vring_desc){ BUF_OFF, 100, VRING_DESC_F_NEXT, 60000 };
	offer_stop(g, "a next beyond the ring", "beyond a table");

	/* an indirect table inside an indirect table */
	CHECK(guest_up(g, true));
	{
		struct vring_desc *ind = (void *)(g->mem + IND_OFF);

		ind[0] = (struct vring_desc){ IND_OFF + 64, 32, VRING_DESC_F_INDIRECT, 0 };
		g->desc[0] = (struct vring_desc){ IND_OFF, 32, VRING_DESC_F_INDIRECT, 0 };
	}
	offer_stop(g, "an indirect table inside one", "inside an indirect");

	/* an indirect table whose size is not whole descriptors */
	CHECK(guest_up(g, true));
	g->desc[0] = (struct vring_desc){ IND_OFF, 20, VRING_DESC_F_INDIRECT, 0 };
	offer_stop(g, "an indirect table of 20 bytes", "bad indirect table");

	/* indirect descriptors the guest did not negotiate */
	CHECK(guest_up(g, false));
	g->desc[0] = (struct vring_desc){ IND_OFF, 32, VRING_DESC_F_INDIRECT, 0 };
	offer_stop(g, "an indirect descriptor not negotiated", "not negotiated");

	/* an avail index more than a ring ahead */
	CHECK(guest_up(g, true));
	__atomic_store_n(&g->avail->idx, NUM + 1, __ATOMIC_RELEASE);
	expect_stop(g, "an avail index a ring ahead", "ahead of");

	/* a write-only descriptor in a transmit chain */
	CHECK(guest_up(g, true));
	g->desc[0] = (struct vring_desc){ BUF_OFF, 100, VRING_DESC_F_WRITE, 0 };
	offer_stop(g, "a write-only descriptor", "write-only");

	/* rings outside guest memory: the address is refused, the queue stopped */
	CHECK(guest_up(g, true));
	{
		uint32_t st[2] = { 1, 0 };
		uint64_t a[4] = { (uintptr_t)g->mem + MEM - 8, (uintptr_t)g->used, (uintptr_t)g->avail, 0 };

		/* GET_VRING_BASE stops the ring: its reply is the state {1, next avail 0} */
		send_msg(g, 11, 0, st, 8, NULL, 0);
		CHECK_EQ(reply_u64(g), 1);
		memcpy(p, st, 8);
		memcpy(p + 8, a, 32);
		CHECK_EQ(req_ack(g, 9, p, 40, NULL, 0), 0); /* kept: the ring is not running */
		put_u64(p, 1);
		CHECK_EQ(req_ack(g, 12, p, 8, &g->kick, 1), 1); /* kicked: it would start, and is refused */
		CHECK(WAIT_FOR(stats().errors == 1));
	}
	guest_down(g);
	printf("hostile: a ring outside guest memory: refused\n");

	/* bad memory tables: NAKs, nothing mapped, the connection goes on */
	CHECK(guest_up(g, true));
	{
		struct region r[2] = { { 0, MEM, (uintptr_t)g->mem, 0 }, { MEM / 2, MEM / 2, (uintptr_t)g->mem, 0 } };
		int fds[2] = { g->memfd, g->memfd };

		memset(p, 0, sizeof(p));
		p[0] = 9;
		CHECK_EQ(req_ack(g, 5, p, 8 + sizeof(r), fds, 2), 1);
		p[0] = 1;
		memcpy(p + 8, r, sizeof(r[0]));
		CHECK_EQ(req_ack(g, 5, p, 8 + sizeof(r[0]), NULL, 0), 1);
		p[0] = 2;
		memcpy(p + 8, r, sizeof(r));
		CHECK_EQ(req_ack(g, 5, p, 8 + sizeof(r), fds, 2), 1);
		r[0].size = 2 * MEM; /* past the end of the memfd: would fault when read */
		p[0] = 1;
		memcpy(p + 8, r, sizeof(r[0]));
		CHECK_EQ(req_ack(g, 5, p, 8 + sizeof(r[0]), fds, 1), 1);
		/* an unknown request, a live-migration log: refused */
		CHECK_EQ(req_ack(g, 200, p, 8, NULL, 0), 1);
		CHECK_EQ(req_ack(g, 6, p, 8, NULL, 0), 1);
		/* still connected: a good request is answered */
		send_msg(g, 1, 0, NULL, 0, NULL, 0);
		CHECK(reply_u64(g) != ~0ull);
	}
	guest_down(g);
	printf("hostile: bad memory tables, an unknown request, SET_LOG_BASE: refused\n");

	/*
	 * Features not offered: NAKed with a line that says which bits;
	 * RESET_OWNER clears REPLY_ACK and still acks (a frontend waits for it)
	 */
	CHECK(guest_up(g, true));
	{
		char err[512];
		struct grab gr = grab_stderr();

		put_u64(p, 1ull << 62);
		CHECK_EQ(req_ack(g, 2, p, 8, NULL, 0), 1);
		put_u64(p, 1ull << 60);
		CHECK_EQ(req_ack(g, 16, p, 8, NULL, 0), 1);
		grab_end(gr, err, sizeof(err));
		CHECK(strstr(err, "SET_FEATURES refused: bits 0x4000000000000000 were not offered") != NULL);
		CHECK(strstr(err, "SET_PROTOCOL_FEATURES refused: bits 0x1000000000000000 were not offered") !=
		      NULL);
		CHECK_EQ(req_ack(g, 4, NULL, 0, NULL, 0), 0); /* RESET_OWNER */
	}
	guest_down(g);
	printf("hostile: features not offered refused with a line; RESET_OWNER acked\n");

	/* a message longer than any: the connection is closed */
	CHECK(guest_up(g, true));
	{
		struct msg m = { 5, 1, 100000 };

		CHECK_EQ(send(g->fd, &m, 12, MSG_NOSIGNAL), 12);
		CHECK(WAIT_FOR(!uskb_vhost_connected(vh)));
		close(g->fd);
	}
	printf("hostile: a message of 100000 bytes: connection closed\n");

	/* a message that stalls: 8 bytes announced, 3 sent; closed within the bound (1 s), not waited on */
	CHECK(guest_up(g, true));
	{
		struct msg m = { 2, 1, 8 }; /* SET_FEATURES */

		CHECK_EQ(send(g->fd, &m, 12 + 3, MSG_NOSIGNAL), 15);
		CHECK(WAIT_FOR(!uskb_vhost_connected(vh)));
		close(g->fd);
	}
	printf("hostile: a message cut short: connection closed\n");

	/* a frontend that never reads its replies: GET_FEATURES until its socket is full */
	CHECK(guest_up(g, true));
	{
		struct msg m = { 1, 1, 0 };
		int sent = 0;

		/* as fast as the backend reads them, until it closes (its replies fill our socket first) */
		for (int i = 0; i < 5000 && uskb_vhost_connected(vh); i++) {
			ssize_t n = send(g->fd, &m, 12, MSG_NOSIGNAL | MSG_DONTWAIT);

			if (n == 12)
				sent++;
			else if (n < 0 && errno == EAGAIN)
				usleep(1000);
			else
				break;
		}
		CHECK(sent > 100);
		CHECK(WAIT_FOR(!uskb_vhost_connected(vh)));
		close(g->fd);
	}
	printf("hostile: a frontend that takes no replies: connection closed\n");

	/* and the next guest is served */
	CHECK(guest_up(g, true));
	for (int i = 0; i < 10; i++)
		post(g, 500, (unsigned int)i, 2);
	kick(g);
	CHECK(WAIT_FOR(held() == 10));
	release(NULL);
	CHECK(WAIT_FOR(used_idx(g) == 10));
	CHECK_EQ(stats().errors, 0);
	guest_down(g);
	printf("hostile: the next guest is served\n");
}

/* ---- a frontend that shrinks its memory file (SIGBUS under the backend) ---- */

static void shrink(struct guest *g)
{
	char err[2048];
	struct grab gr = grab_stderr();

	/* after SET_MEM_TABLE, before the rings: the ring set-up reads pages that are gone */
	shrink_in_up = true;
	(void)guest_up(g, true); /* (the backend closes it on the way) */
	shrink_in_up = false;
	CHECK(WAIT_FOR(!uskb_vhost_connected(vh)));
	close(g->fd);
	CHECK_EQ(ftruncate(g->memfd, MEM), 0);

	/* during traffic: frames out in place, the file shrinks, they complete into a used ring gone */
	CHECK(guest_up(g, true));
	for (int i = 0; i < 10; i++)
		post(g, 500, (unsigned int)i, 2);
	kick(g);
	CHECK(WAIT_FOR(held() == 10));
	CHECK_EQ(ftruncate(g->memfd, 0), 0);
	release(NULL);
	kick(g);
	CHECK(WAIT_FOR(!uskb_vhost_connected(vh)));
	close(g->fd);
	CHECK_EQ(ftruncate(g->memfd, MEM), 0);
	grab_end(gr, err, sizeof(err));
	{
		const char *a = strstr(err, "memory file shrank");

		CHECK(a && strstr(a + 1, "memory file shrank"));
		if (!a)
			fprintf(stderr, "shrink: the backend said: %s\n", err);
	}

	/* the next guest is served */
	CHECK(guest_up(g, true));
	for (int i = 0; i < 10; i++)
		post(g, 500, (unsigned int)i, 2);
	kick(g);
	CHECK(WAIT_FOR(held() == 10));
	release(NULL);
	CHECK(WAIT_FOR(used_idx(g) == 10));
	guest_down(g);
	printf("shrink: a memory file shrunk before the rings and during traffic: each connection closed, "
	       "the next served\n");
}

/*
 * ---- chains the device never gives back when their frontend goes ----
 * The drain waits for them 10 s by the clock, a stop ends the wait at once
 * (Ctrl-C in uskb-vhost); they are kept with their memory, and the next
 * frontend is served (its SET_MEM_TABLE was NAKed for good once).
 */
static void kept_chains(struct guest *g)
{
	struct uskb_vhost_config cfg = { .dev = &hold_dev, .socket = sock_path };
	char err[1024];
	struct grab gr;
	struct timespec a, b;

	/* a backend of its own: the earlier tests' copied completions would make it copy (the err rule) */
	uskb_vhost_stop(vh);
	pthread_join(vh_thread, NULL);
	uskb_vhost_free(vh);
	vh = uskb_vhost_new(&cfg);
	CHECK(vh != NULL);
	if (!vh)
		return;
	pthread_create(&vh_thread, NULL, serve, NULL);
	gr = grab_stderr();
	CHECK(guest_up(g, true));
	for (int i = 0; i < 10; i++)
		post(g, 500, (unsigned int)i, 2);
	kick(g);
	CHECK(WAIT_FOR(held() == 10));
	close(g->fd); /* the frontend goes, ten chains out */
	usleep(1000000); /* the backend is in its 10 s drain by then, even under a sanitizer */
	clock_gettime(CLOCK_MONOTONIC, &a);
	uskb_vhost_stop(vh);
	pthread_join(vh_thread, NULL);
	clock_gettime(CLOCK_MONOTONIC, &b);
	CHECK(b.tv_sec - a.tv_sec < 2); /* not the drain's 10 s */
	CHECK(!uskb_vhost_connected(vh));
	grab_end(gr, err, sizeof(err));
	CHECK(strstr(err, "queue 1: 10 chains still out at a stop: kept") != NULL);
	CHECK_EQ(uskb_vhost_abandoned(vh), 10);
	if (!strstr(err, "at a stop"))
		fprintf(stderr, "kept chains: the backend said: %s\n", err);

	/* served again: the next frontend's memory table is taken, its frames go */
	pthread_create(&vh_thread, NULL, serve, NULL);
	CHECK(guest_up(g, true));
	for (int i = 0; i < 10; i++)
		post(g, 500, (unsigned int)i, 2);
	kick(g);
	CHECK(WAIT_FOR(held() == 20));
	release(NULL); /* the kept ten complete too: freed at the next table, or at the end */
	CHECK(WAIT_FOR(used_idx(g) == 10));
	guest_down(g);
	printf("kept chains: a stop ends the drain at once; the next frontend is served\n");
}

/* ---- busy polling: no kicks wanted while the backend spins ---- */

/* the avail event: where the backend wants a kick (EVENT_IDX) */
static uint16_t avail_event(struct guest *g)
{
	return __atomic_load_n((uint16_t *)&g->used->ring[NUM], __ATOMIC_ACQUIRE);
}

static uint16_t used_flags(struct guest *g)
{
	return __atomic_load_n(&g->used->flags, __ATOMIC_ACQUIRE);
}

static void busy_poll(struct guest *g)
{
	struct uskb_vhost_config cfg = { .dev = &hold_dev, .socket = sock_path, .busy_poll_us = 300000 };

	uskb_vhost_stop(vh);
	pthread_join(vh_thread, NULL);
	uskb_vhost_free(vh);
	vh = uskb_vhost_new(&cfg);
	CHECK(vh != NULL);
	if (!vh)
		return;
	pthread_create(&vh_thread, NULL, serve, NULL);

	/* EVENT_IDX: the first chain is kicked; the next ones are taken unkicked, the avail event stays */
	CHECK(guest_up(g, false));
	post(g, 100, 0, 1);
	kick(g);
	CHECK(WAIT_FOR(used_idx(g) == 1));
	for (unsigned int i = 1; i <= 20; i++) {
		post(g, 100, i, 1);
		CHECK(WAIT_FOR(used_idx(g) == i + 1));
	}
	CHECK(avail_event(g) < 21);
	/* the spin ends 0.3 s after the last work: then the backend asks for a kick past what it took */
	CHECK(WAIT_FOR(avail_event(g) == 21));
	guest_down(g);
	release(NULL);

	/* without it: VRING_USED_F_NO_NOTIFY while the backend spins, cleared when it stops */
	no_event_idx = true;
	CHECK(guest_up(g, false));
	post(g, 100, 0, 1);
	kick(g);
	CHECK(WAIT_FOR(used_idx(g) == 1));
	post(g, 100, 1, 1);
	CHECK(WAIT_FOR(used_idx(g) == 2));
	CHECK_EQ(used_flags(g), VRING_USED_F_NO_NOTIFY);
	CHECK(WAIT_FOR(used_flags(g) == 0));
	kick(g); /* (a kick nothing needed: harmless) */
	post(g, 100, 2, 1);
	kick(g);
	CHECK(WAIT_FOR(used_idx(g) == 3));
	guest_down(g);
	release(NULL);
	no_event_idx = false;
	printf("busy poll: 20 chains taken without kicks, the kick asked for again when the spin ends\n");
}

int main(void)
{
	struct guest g = { 0 };
	struct uskb_vhost_config cfg = { .dev = &hold_dev };

	snprintf(sock_path, sizeof(sock_path), "/tmp/uskb-vhost-test.%d.sock", getpid());
	cfg.socket = sock_path;
	vh = uskb_vhost_new(&cfg);
	if (!vh) {
		fprintf(stderr, "uskb_vhost_new: %s\n", uskb_vhost_strerror(NULL));
		return 1;
	}
	g.memfd = memfd_create("guest", 0);
	CHECK(g.memfd >= 0 && ftruncate(g.memfd, MEM) == 0);
	g.mem = mmap(NULL, MEM, PROT_READ | PROT_WRITE, MAP_SHARED, g.memfd, 0);
	CHECK(g.mem != MAP_FAILED);
	g.kick = eventfd(0, EFD_CLOEXEC);
	g.call = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	pthread_create(&vh_thread, NULL, serve, NULL);

	order_rule(&g);
	csum_offload(&g);
	tso(&g);
	guest_rx(&g);
	hostile(&g);
	shrink(&g);
	kept_chains(&g);
	busy_poll(&g);

	uskb_vhost_stop(vh);
	pthread_join(vh_thread, NULL);
	uskb_vhost_free(vh);
	munmap(g.mem, MEM);
	close(g.memfd);
	close(g.kick);
	close(g.call);
	return t_end("vhost");
}
