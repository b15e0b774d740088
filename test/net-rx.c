/* SPDX-License-Identifier: MIT */
/*
 * Receiving from real interfaces: a veth pair in a network namespace of
 * this process's own (unshare; it goes away with the process). For every
 * transmit device and every receive device: N frames of three sizes arrive
 * exactly once, byte for byte, short ones copied and long ones as frags on
 * the kernel's memory; the counters agree with the interface's. Then the
 * lifetime rules: skbs held past the patience are copied out and stay
 * correct while the ring is reused; freeing on another thread gives the
 * memory back; closing with skbs out leaves them valid; orphan_frags copies.
 * Needs root (skips with 77 otherwise).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <inttypes.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "t.h"

#define dev_stat(d, f) ({ struct uskb_dev_stats _s; uskb_dev_get_stats((d), -1, &_s); _s.f; })

#define N 3000
#define ETYPE 0x88b5 /* IEEE local experimental: the stack leaves it alone */

static uint8_t mac_a[6], mac_b[6];

static unsigned int size_of(unsigned int seq)
{
	static const unsigned int sizes[] = { 60, 100, 1000, 1514 };

	return sizes[seq % 4];
}

static void frame_bytes(unsigned int seq, uint8_t *f)
{
	uint16_t t = htons(ETYPE);
	uint32_t s = htonl(seq);
	unsigned int len = size_of(seq);

	memcpy(f, mac_b, 6);
	memcpy(f + 6, mac_a, 6);
	memcpy(f + 12, &t, 2);
	memcpy(f + 14, &s, 4);
	t_fill(f + 18, len - 18, seq);
}

static struct uskb *frame(unsigned int seq)
{
	struct uskb *skb = uskb_alloc(1600);

	frame_bytes(seq, uskb_put(skb, size_of(seq)));
	return skb;
}

/* the sequence number of an skb of ours, or -1 */
static long seq_of(const struct uskb *skb)
{
	uint8_t h[18];
	uint32_t s;

	if (skb->len < 18 || uskb_copy_bits(skb, 0, h, 18) || h[12] != (ETYPE >> 8) ||
	    h[13] != (ETYPE & 0xff))
		return -1;
	memcpy(&s, h + 14, 4);
	return (long)ntohl(s);
}

static int frame_ok(const struct uskb *skb)
{
	static uint8_t want[2048];
	long seq = seq_of(skb);

	if (seq < 0)
		return 0;
	frame_bytes((unsigned int)seq, want);
	return t_skb_equals(skb, want, size_of((unsigned int)seq));
}

/* frames of ours the receiver has taken: the sender keeps at most WINDOW ahead */
static atomic_uint rx_taken;
#define WINDOW 256 /* frames: well inside both rings, even a block (1 ms) per burst */

static void send_range(struct uskb_dev *tx, unsigned int from, unsigned int to)
{
	unsigned int base = atomic_load(&rx_taken);

	for (unsigned int s = from; s < to;) {
		/* flow control, as a real sender would need (a sanitizer slows the receiver) */
		for (int w = 0; w < 2000 && s - from > atomic_load(&rx_taken) - base + WINDOW; w++)
			usleep(100);
		struct uskb *v[32];
		int res[32], k = 0, i;

		while (k < 32 && s + (unsigned int)k < to) {
			v[k] = frame(s + (unsigned int)k);
			k++;
		}
		uskb_dev_xmit(tx, 0, v, k, res);
		uskb_dev_flush(tx, 0);
		for (i = 0; i < k && res[i] != USKB_XMIT_BUSY; i++)
			CHECK_EQ(res[i], USKB_XMIT_OK);
		for (int j = i; j < k; j++)
			uskb_free(v[j]); /* busy: try those again */
		s += (unsigned int)i;
		if (i < k)
			usleep(100);
	}
}

struct sender {
	struct uskb_dev *dev;
	unsigned int from, to;
	pthread_t th;
	unsigned int per, gap_us; /* paced: per frames, then a gap */
};

static void *sender_main(void *arg)
{
	struct sender *s = arg;

	if (!s->gap_us) {
		send_range(s->dev, s->from, s->to);
		return NULL;
	}
	for (unsigned int x = s->from; x < s->to; x += s->per) {
		send_range(s->dev, x, x + s->per < s->to ? x + s->per : s->to);
		usleep(s->gap_us);
	}
	return NULL;
}

/* send from another thread while this one receives, as a real receiver would */
static struct sender *send_bg(struct uskb_dev *dev, unsigned int from, unsigned int to)
{
	struct sender *s = malloc(sizeof(*s));

	*s = (struct sender){ dev, from, to, 0 };
	pthread_create(&s->th, NULL, sender_main, s);
	return s;
}

/* light traffic: per frames every gap_us */
static struct sender *send_paced(struct uskb_dev *dev, unsigned int from, unsigned int to,
				 unsigned int per, unsigned int gap_us)
{
	struct sender *s = malloc(sizeof(*s));

	*s = (struct sender){ .dev = dev, .from = from, .to = to, .per = per, .gap_us = gap_us };
	pthread_create(&s->th, NULL, sender_main, s);
	return s;
}

static void send_wait(struct sender *s)
{
	pthread_join(s->th, NULL);
	free(s);
}

/* receive until @want of ours came (or 3 s without any); they go to @keep or are freed */
static unsigned int receive(struct uskb_dev *rx, unsigned int want, struct uskb **keep,
			    unsigned char *seen, unsigned int *zc)
{
	unsigned int got = 0, idle = 0;

	while (got < want && idle < 30) {
		struct uskb *v[64];
		int n = uskb_dev_rx(rx, 0, v, 64, 100);

		CHECK(n >= 0);
		idle = n > 0 ? 0 : idle + 1;
		for (int i = 0; i < n; i++) {
			long seq = seq_of(v[i]);

			if (seq < 0) {
				uskb_free(v[i]);
				continue;
			}
			atomic_fetch_add(&rx_taken, 1);
			if (seen) {
				CHECK(!seen[seq]); /* exactly once */
				seen[seq] = 1;
			}
			CHECK(v[i]->protocol == htons(ETYPE) && uskb_mac_header(v[i]) == v[i]->data &&
			      v[i]->dev == rx);
			if (!frame_ok(v[i])) {
				fprintf(stderr, "frame %ld differs from the one sent\n", seq);
				t_failures++;
			}
			/* short frames copied (never below the 128 copied anyway), long ones zero-copy */
			if (size_of((unsigned int)seq) < uskb_zerocopy_min_len() ||
			    size_of((unsigned int)seq) <= USKB_ZC_GOODCOPY_LEN) {
				CHECK(!uskb_is_nonlinear(v[i]));
			} else {
				CHECK(uskb_shinfo(v[i])->nr_frags == 1 && uskb_zcopy(v[i]));
				if (zc)
					(*zc)++;
			}
			if (keep)
				keep[got] = v[i];
			else
				uskb_free(v[i]);
			got++;
		}
	}
	return got;
}

/* field 1 of /proc/net/dev is received packets, 9 sent ones */
static long long if_packets(const char *ifname, int field)
{
	FILE *f = fopen("/proc/self/net/dev", "r");
	char line[512], name[64];
	long long v = -1;

	while (f && fgets(line, sizeof(line), f)) {
		char *c = strchr(line, ':');

		if (c && sscanf(line, " %63[^:]", name) == 1 && !strcmp(name, ifname)) {
			char *t = strtok(c + 1, " \t");

			for (int i = 0; t && i < field; i++)
				t = strtok(NULL, " \t");
			if (t)
				v = atoll(t);
		}
	}
	if (f)
		fclose(f);
	return v;
}

#define if_rx_packets(i) if_packets(i, 1)
#define if_tx_packets(i) if_packets(i, 9)

/* an XDP program left on an interface shows in ip link */
static bool xdp_attached(const char *ifname)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "ip link show %s | grep -q xdp", ifname);
	return system(cmd) == 0;
}

struct remote_free {
	struct uskb **v;
	unsigned int n;
};

static void *free_all(void *arg)
{
	struct remote_free *r = arg;

	for (unsigned int i = 0; i < r->n; i++)
		uskb_free(r->v[i]);
	return NULL;
}

/* one transmit device against one receive device */
static void pair(const char *txs, const char *rxs)
{
	static unsigned char seen[N];
	struct uskb_dev *tx = uskb_dev_open(txs), *rx;
	struct uskb **held = calloc(N, sizeof(*held));
	long long before = if_rx_packets("ub"), tx_before = if_tx_packets("ua");
	unsigned int got, zc = 0, i;
	uint64_t orphaned;
	struct sender *sd;

	if (!tx)
		fprintf(stderr, "%s: %s\n", txs, uskb_dev_strerror());
	rx = uskb_dev_open(rxs);
	if (!rx)
		fprintf(stderr, "%s: %s\n", rxs, uskb_dev_strerror());
	if (!tx || !rx) {
		t_failures++;
		uskb_dev_close(tx);
		uskb_dev_close(rx);
		free(held);
		return;
	}
	CHECK_EQ(uskb_dev_rx(rx, 0, held, 1, 0), 0); /* starts receiving */
	{
		/* a frame past the MTU is dropped, counted, and the device says why */
		unsigned int len = tx->mtu + 14 + 100;
		struct uskb *big = uskb_alloc(len);
		struct uskb_dev_stats st;
		char why[200];
		int r = -1;

		((unsigned char *)uskb_put_zero(big, len))[12] = 0x08; /* an IPv4 Ethernet frame */
		CHECK_EQ(uskb_dev_xmit(tx, 0, &big, 1, &r), 0);
		CHECK_EQ(r, USKB_XMIT_DROP);
		uskb_dev_get_stats(tx, 0, &st);
		CHECK_EQ(st.tx_dropped, 1);
		CHECK(uskb_dev_last_error(tx, why, sizeof(why)) > 0 &&
		      strstr(why, "longer than the MTU allows"));
	}
	memset(seen, 0, sizeof(seen));
	sd = send_bg(tx, 0, N);
	got = receive(rx, N, NULL, seen, &zc);
	send_wait(sd);
	CHECK_EQ(got, N);
	CHECK_EQ(zc, N / 2);
	CHECK_EQ(dev_stat(tx, tx_packets), N);
	CHECK_EQ(dev_stat(rx, rx_packets), N);
	CHECK_EQ(dev_stat(rx, rx_dropped), 0);
	CHECK_EQ(if_rx_packets("ub") - before, N);
	CHECK_EQ(if_tx_packets("ua") - tx_before, N);
	/* receiving through xdp: attaches the program (and only that does) */
	CHECK_EQ(xdp_attached("ub"), !strncmp(rxs, "xdp:", 4));
	CHECK(!xdp_attached("ua"));
	printf("%s -> %s: %u of %d once, byte for byte (%u zero-copy)\n", txs, rxs, got, N, zc);

	/* a copy break below the 128 bytes the head takes: those frames are copied whole */
	uskb_zerocopy_set_min_len(64);
	sd = send_bg(tx, 0, 400);
	CHECK_EQ(receive(rx, 400, NULL, NULL, NULL), 400);
	send_wait(sd);
	uskb_zerocopy_set_min_len(USKB_ZC_MIN_LEN);

	/* held past the patience: copied out, still right while the ring is reused */
	rx->rx_patience_ms = 20;
	send_range(tx, 0, 300);
	got = receive(rx, 300, held, NULL, NULL);
	CHECK_EQ(got, 300);
	usleep(30 * 1000);
	sd = send_bg(tx, 0, 3 * N); /* 9 MB: every ring block is written again */
	CHECK_EQ(receive(rx, 3 * N, NULL, NULL, NULL), 3 * N);
	send_wait(sd);
	CHECK(dev_stat(rx, rx_orphaned) > 0);
	for (i = 0; i < got; i++)
		if (!frame_ok(held[i])) {
			fprintf(stderr, "held frame %u changed after the ring moved on\n", i);
			t_failures++;
			break;
		}
	/* a clone that would be held: orphan_frags copies it off the ring */
	send_range(tx, 1, 2);
	CHECK_EQ(receive(rx, 1, held + got, NULL, NULL), 1);
	{
		struct uskb *c = uskb_clone(held[got]);

		uskb_free(held[got]);
		CHECK(c && uskb_orphan_frags(c) == 0 && !uskb_zcopy(c) && frame_ok(c));
		held[got] = c;
	}
	got++;
	printf("%s: %" PRIu64 " ring blocks or frames orphaned; %u held frames intact\n", rxs,
	       dev_stat(rx, rx_orphaned), got);

	for (i = 0; i < got; i++)
		uskb_free(held[i]);

	/*
	 * Freed on another thread, still on the kernel's memory (a patience
	 * nobody reaches): that thread gives the memory back, and the ring
	 * keeps flowing for 3 MB more without copying anything out.
	 */
	rx->rx_patience_ms = 60000;
	orphaned = dev_stat(rx, rx_orphaned);
	sd = send_bg(tx, 0, 400);
	got = receive(rx, 400, held, NULL, NULL);
	send_wait(sd);
	CHECK_EQ(got, 400);
	{
		struct remote_free r = { held, got };
		pthread_t th;

		pthread_create(&th, NULL, free_all, &r);
		pthread_join(th, NULL);
	}
	sd = send_bg(tx, 0, N);
	CHECK_EQ(receive(rx, N, NULL, NULL, NULL), N);
	send_wait(sd);
	CHECK_EQ(dev_stat(rx, rx_orphaned), orphaned);
	CHECK_EQ(dev_stat(rx, rx_dropped), 0);

	/*
	 * One frame held, the patience still out of reach. packet:'s kernel
	 * fills the blocks in order and stops at one still held, so the
	 * block is copied out before the kernel gets back to it: nothing is
	 * dropped. Light traffic (2 frames a millisecond, a block each) takes
	 * the ring round twice in 150 ms.
	 */
	if (!strncmp(rxs, "packet:", 7)) {
		send_range(tx, 2, 3); /* 1000 bytes: on the ring */
		CHECK_EQ(receive(rx, 1, held, NULL, NULL), 1);
		CHECK(uskb_zcopy(held[0]));
		orphaned = dev_stat(rx, rx_orphaned);
		sd = send_paced(tx, 3, 303, 2, 1000);
		CHECK_EQ(receive(rx, 300, NULL, NULL, NULL), 300);
		send_wait(sd);
		CHECK(dev_stat(rx, rx_orphaned) > orphaned);
		CHECK_EQ(dev_stat(rx, rx_dropped), 0);
		CHECK(frame_ok(held[0]));
		uskb_free(held[0]);
		printf("%s: a frame held while the ring went round: copied out, nothing dropped\n", rxs);
	}

	/* closed with skbs out: they stay valid, the kernel's memory goes */
	send_range(tx, 0, 30);
	got = receive(rx, 30, held, NULL, NULL);
	CHECK_EQ(got, 30);
	/* and in the middle of a block: one frame taken, freed, the rest not yet read */
	send_range(tx, 0, 10);
	usleep(20 * 1000);
	{
		struct uskb *one = NULL;
		int k = uskb_dev_rx(rx, 0, &one, 1, 1000);

		CHECK_EQ(k, 1);
		if (k == 1)
			uskb_free(one);
	}
	uskb_dev_close(rx);
	for (i = 0; i < got; i++)
		CHECK(frame_ok(held[i]));
	for (i = 0; i < got; i++)
		uskb_free(held[i]);
	uskb_dev_close(tx);
	free(held);
	/* nothing stays attached */
	CHECK(!xdp_attached("ua") && !xdp_attached("ub"));
}

static int sh(const char *cmd)
{
	int rc = system(cmd);

	return rc == 0 ? 0 : -1;
}

static void read_mac(const char *ifname, uint8_t *mac)
{
	char path[128];
	unsigned int m[6];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/net/%s/address", ifname);
	f = fopen(path, "r");
	if (f && fscanf(f, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) == 6)
		for (int i = 0; i < 6; i++)
			mac[i] = (uint8_t)m[i];
	if (f)
		fclose(f);
}

int main(int argc, char **argv)
{
	bool xdp_ok = true;
	static const char *const txs[] = { "packet:ua", "packet:ua:mmsg", "xdp:ua" };
	static const char *const rxs[] = { "packet:ub", "xdp:ub" };
	struct uskb *v[1];

	(void)argc;
	(void)argv;
	if (geteuid() != 0) {
		printf("not root: the veth tests need CAP_NET_ADMIN\n");
		return T_SKIP;
	}
	if (unshare(CLONE_NEWNET)) {
		printf("cannot make a network namespace: %s\n", strerror(errno));
		return T_SKIP;
	}
	/* sysfs as this namespace sees it, for the MACs */
	if (unshare(CLONE_NEWNS) || sh("mount --make-rprivate / && mount -t sysfs sysfs /sys")) {
		printf("cannot mount sysfs for the namespace\n");
		return T_SKIP;
	}
	if (sh("ip link add ua type veth peer name ub && ip link set ua up && ip link set ub up")) {
		printf("cannot create a veth pair (ip, veth module)\n");
		return T_SKIP;
	}
	/* no IPv6 neighbour discovery: only our frames on the wire */
	sh("echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6 2>/dev/null");
	read_mac("ua", mac_a);
	read_mac("ub", mac_b);

	/* a device that cannot receive says so */
	{
		struct uskb_dev *d = uskb_dev_open("null");

		CHECK_EQ(uskb_dev_rx(d, 0, v, 1, 0), -EOPNOTSUPP);
		uskb_dev_close(d);
	}
	/*
	 * xdp: once: a build without libxdp, or a kernel that refuses AF_XDP
	 * (a policy, or no XDP sockets), leaves its pairs out, said once
	 */
	{
		struct uskb_dev *d = uskb_dev_open("xdp:ua");
		const char *why = d ? "" : uskb_dev_strerror();

		if (d) {
			uskb_dev_close(d);
		} else if (strstr(why, "refused by this kernel") || strstr(why, "built without") ||
			   strstr(why, "Address family not supported")) {
			printf("xdp: pairs not tried: %s\n", why);
			xdp_ok = false;
		} else {
			fprintf(stderr, "xdp:ua: %s\n", why);
			t_failures++;
		}
	}
	for (unsigned int t = 0; t < sizeof(txs) / sizeof(txs[0]); t++)
		for (unsigned int r = 0; r < sizeof(rxs) / sizeof(rxs[0]); r++)
			if (xdp_ok || (strncmp(txs[t], "xdp:", 4) && strncmp(rxs[r], "xdp:", 4)))
				pair(txs[t], rxs[r]);
	return t_end("net-rx");
}
