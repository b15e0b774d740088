/* SPDX-License-Identifier: MIT */
/*
 * The pktgen engine's behaviour beyond the golden captures:
 *   - commands and bad values: the reply and the error of each;
 *   - burst and clone_skb reuse one skb through the users count; busy and
 *     dropped results are retried / counted as the kernel does;
 *   - the shared zero page is never written by a run with frags;
 *   - two threads on one device; stop from another thread; pacing;
 *   - live counters back to zero (t_end).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include "t.h"
#include "pktgen/pg.h" /* white box: the batch clock (__uskb_pg_stamp_*) */

#define dev_stat(d, f) ({ struct uskb_dev_stats _s; uskb_dev_get_stats((d), -1, &_s); _s.f; })

/* ---- a recording device ---- */

static struct {
	int calls, pkts, busy_every, drop_every, seen;
	uint32_t seqs[4096];
	uint32_t last;
	int distinct; /* packets built: changes of seq_num */
	uint16_t queue_max;
	int last_q, pending[2], switches; /* frames not flushed per queue; queue changes */
	uint64_t ts_us[64];  /* the pktgen header's time of the first packets (us) */
	int64_t ts_ahead;    /* the most any was ahead of the clock at transmit (us) */
	uint64_t ts_behind;  /* ... and behind it */
	/*
	 * Every frame taken against the run's first (frame0): the same bytes
	 * but for the IPv4 id and checksum and the pktgen header's sequence
	 * number and time; a valid IPv4 checksum; each new sequence number
	 * the last plus one, the IPv4 id stepping with it. The time: how
	 * often it changed, and went back. Each frame the device consumes is
	 * scribbled over before it is freed, so a head that comes back
	 * holds no bytes the builder could leave unwritten.
	 */
	unsigned char frame0[2048];
	unsigned int len0;
	uint16_t last_id;
	int frame_diffs, bad_csums, seq_breaks, id_breaks;
	uint64_t last_at;
	int ts_changes, ts_backwards;
} rec;

/*
 * A preemption in the middle of a batch, made by a timer's signal to the
 * sending thread that spins 5 us (test_timestamps_preempted).
 */
static struct {
	bool on, armed;
	timer_t timer;
	volatile sig_atomic_t in_xmit;
	volatile uint64_t hit_end; /* the last spin's end (us, wall clock); 0: none since the last call */
	int hits, late;
	/* the busy tail of the last call (sent first in the next), when it was refused (us) */
	int tail, tail_checked;
	uint64_t tail_at;
} pre;

static uint64_t wall_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* the pktgen header's time (us) */
static uint64_t pgh_us(struct uskb *skb)
{
	uint32_t tv[2];

	CHECK(uskb_copy_bits(skb, 14 + 20 + 8 + 8, tv, 8) == 0);
	return (uint64_t)ntohl(tv[0]) * 1000000 + ntohl(tv[1]);
}

static void spin_us(unsigned int us)
{
	for (uint64_t end = wall_us() + us; wall_us() < end;)
		;
}

static void pre_spin(int sig)
{
	int saved = errno;

	(void)sig;
	if (!pre.in_xmit) {
		spin_us(5);
		pre.hit_end = wall_us();
	}
	errno = saved;
}

/* a call begins: after a spin, the batch's last packet was built after it (see the test) */
static void pre_begin(struct uskb **skbs, int n)
{
	if (!pre.armed) {
		struct sigevent ev = { .sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGUSR2 };
		struct itimerspec every = { { 0, 20000 }, { 0, 20000 } };

		ev._sigev_un._tid = gettid();
		pre.armed = timer_create(CLOCK_MONOTONIC, &ev, &pre.timer) == 0;
		CHECK(pre.armed);
		CHECK(!pre.armed || timer_settime(pre.timer, 0, &every, NULL) == 0);
	}
	pre.in_xmit = 1;
	/* the tail refused last time was built before then: never stamped again since */
	for (int i = 0; i < pre.tail && i < n; i++) {
		CHECK(pgh_us(skbs[i]) <= pre.tail_at);
		pre.tail_checked++;
	}
	pre.tail = 0;
	if (!pre.hit_end)
		return;
	pre.hits++;
	if (pgh_us(skbs[n - 1]) + 1 < pre.hit_end)
		pre.late++;
	pre.hit_end = 0;
}

/* a frame taken: see rec (the sequence numbers themselves are checked by rec_xmit's callers) */
static void rec_frame(struct uskb *skb)
{
	unsigned int len = skb->len < sizeof(rec.frame0) ? skb->len : sizeof(rec.frame0);
	unsigned int nh = (unsigned int)(uskb_network_header(skb) - skb->data);
	unsigned int pgh = (unsigned int)(uskb_transport_header(skb) - skb->data) + 8;
	bool ip4 = skb->protocol == htons(0x0800);
	unsigned char f[sizeof(rec.frame0)];
	uint32_t seq;
	uint16_t id;

	CHECK(uskb_copy_bits(skb, 0, f, (int)len) == 0);
	CHECK(pgh + 16 <= len);
	memcpy(&seq, f + pgh + 4, 4);
	seq = ntohl(seq);
	if (ip4) {
		uint32_t sum = 0;

		for (unsigned int j = nh; j < nh + 20; j += 2)
			sum += (uint32_t)f[j] << 8 | f[j + 1];
		while (sum >> 16)
			sum = (sum & 0xffff) + (sum >> 16);
		if (sum != 0xffff)
			rec.bad_csums++;
		id = (uint16_t)(f[nh + 4] << 8 | f[nh + 5]);
		if (rec.len0 && (uint16_t)(id - rec.last_id) != (uint16_t)(seq - rec.last))
			rec.id_breaks++;
		rec.last_id = id;
		memset(f + nh + 4, 0, 2);
		memset(f + nh + 10, 0, 2);
	}
	if (rec.len0 && seq != rec.last && seq != rec.last + 1)
		rec.seq_breaks++;
	memset(f + pgh + 4, 0, 12);
	if (!rec.len0) {
		memcpy(rec.frame0, f, len);
		rec.len0 = skb->len;
	} else if (skb->len != rec.len0 || memcmp(f, rec.frame0, len)) {
		rec.frame_diffs++;
	}
}

/* every frame as the first, in sequence (see rec) */
static void rec_frames_ok(void)
{
	CHECK(rec.len0 > 0);
	CHECK_EQ(rec.frame_diffs, 0);
	CHECK_EQ(rec.bad_csums, 0);
	CHECK_EQ(rec.seq_breaks, 0);
	CHECK_EQ(rec.id_breaks, 0);
	CHECK_EQ(rec.ts_backwards, 0);
}

static void rec_xmit(struct uskb_dev *dev, unsigned int queue, struct uskb **skbs, int n, int *res)
{
	(void)dev;
	if (pre.on)
		pre_begin(skbs, n);
	if ((int)queue != rec.last_q) {
		/* the queue left was flushed first: nothing of it may wait behind us */
		CHECK_EQ(rec.pending[rec.last_q], 0);
		rec.switches++;
		rec.last_q = (int)queue;
	}
	rec.pending[queue] += n;
	rec.calls++;
	for (int i = 0; i < n; i++) {
		unsigned char pgh[16];
		uint32_t seq;

		rec.seen++;
		if (rec.busy_every && rec.seen % rec.busy_every == 0) {
			/* not taken: still the caller's, and so is the rest (a tail, as dev.h says) */
			if (pre.on) {
				pre.tail = n - i;
				pre.tail_at = wall_us();
			}
			for (; i < n; i++)
				res[i] = USKB_XMIT_BUSY;
			break;
		}
		rec_frame(skbs[i]);
		CHECK(uskb_copy_bits(skbs[i], (int)(uskb_transport_header(skbs[i]) - skbs[i]->data) + 8, pgh, 16) == 0);
		CHECK(!memcmp(pgh, "\xbe\x9b\xe9\x55", 4));
		{
			/* its wall-clock time against the clock's now */
			uint32_t sec, usec;
			struct timespec ts;
			uint64_t now, at;

			clock_gettime(CLOCK_REALTIME, &ts);
			now = (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
			memcpy(&sec, pgh + 8, 4);
			memcpy(&usec, pgh + 12, 4);
			at = (uint64_t)ntohl(sec) * 1000000 + ntohl(usec);
			if (at > now && (int64_t)(at - now) > rec.ts_ahead)
				rec.ts_ahead = (int64_t)(at - now);
			if (at <= now && now - at > rec.ts_behind)
				rec.ts_behind = now - at;
			if (rec.pkts < 64)
				rec.ts_us[rec.pkts] = at;
			if (rec.len0 && at != rec.last_at) {
				rec.ts_changes++;
				if (at < rec.last_at)
					rec.ts_backwards++;
			}
			rec.last_at = at;
		}
		memcpy(&seq, pgh + 4, 4);
		if (ntohl(seq) != rec.last) {
			rec.distinct++;
			rec.last = ntohl(seq);
		}
		if (rec.pkts < 4096)
			rec.seqs[rec.pkts] = ntohl(seq);
		if (rec.drop_every && rec.seen % rec.drop_every == 0) {
			res[i] = USKB_XMIT_DROP;
		} else {
			res[i] = USKB_XMIT_OK;
			rec.pkts++;
		}
		if (!uskb_shared(skbs[i]) && !uskb_cloned(skbs[i]))
			memset(skbs[i]->data, 0x5a, uskb_headlen(skbs[i]));
		uskb_free(skbs[i]);
	}
	pre.in_xmit = 0;
}

static void rec_flush(struct uskb_dev *dev, unsigned int queue)
{
	(void)dev;
	rec.pending[queue] = 0;
}

static const struct uskb_dev_ops rec_ops = { .type = "rec", .xmit = rec_xmit, .flush = rec_flush };

static struct uskb_dev *rec_dev(void)
{
	static struct uskb_dev dev;
	static struct uskb_dev_stats qstats[2];

	memset(&dev, 0, sizeof(dev));
	memset(qstats, 0, sizeof(qstats));
	dev.qstats = qstats;
	snprintf(dev.name, sizeof(dev.name), "rec");
	dev.ops = &rec_ops;
	dev.features = USKB_DEV_F_SG | USKB_DEV_F_TX_SKB_SHARING;
	dev.mtu = 1500;
	dev.nqueues = 2; /* queue 1 for test_queues */
	memcpy(dev.mac, "\x02\x00\x00\x00\x00\x01", 6);
	memset(&rec, 0, sizeof(rec));
	return &dev;
}

static struct uskb_pktgen *engine(int threads)
{
	struct uskb_pktgen_opts o = { .nthreads = threads, .seeded = true, .seed = 42, .no_pin = true };
	struct uskb_pktgen *pg = uskb_pktgen_new(&o);

	CHECK(pg != NULL);
	return pg;
}

static void cmd_ok(struct uskb_pktgen *pg, const char *file, const char *cmd)
{
	int err = uskb_pktgen_write(pg, file, cmd);

	if (err) {
		fprintf(stderr, "\"%s\" > %s: %d (%s)\n", cmd, file, err, uskb_pktgen_result(pg, file));
		t_failures++;
	}
}

/* ---- commands and bad values ---- */

struct cmd_case {
	const char *cmd;
	int err;
	const char *reply; /* prefix of the reply; NULL: unchanged */
};

static const struct cmd_case cases[] = {
	{ "count 20", 0, "OK: count=20" },
	{ "count", -EINVAL, "ERROR: count needs a decimal number" },
	{ "count x", -EINVAL, "ERROR: count needs a decimal number" },
	{ "count 123456789012345678901", -ERANGE, "ERROR: count: at most 20 digits" },
	{ "count 99999999999999999999", -ERANGE, "ERROR: count: the number is too big" },
	{ "pkt_size 10", 0, "OK: pkt_size=42" }, /* clamped, as the kernel */
	{ "pkt_size 70000", -ERANGE, "ERROR: pkt_size: 70000 is out of range" },
	{ "min_pkt_size 100", 0, "OK: min_pkt_size=100" },
	{ "max_pkt_size 200", 0, "OK: max_pkt_size=200" },
	{ "  \"pkt_size\" = 100\n", 0, "OK: pkt_size=100" }, /* separators skipped */
	{ "pkt_size=100", -EINVAL, "No such parameter \"pkt_size=100\"" }, /* '=' ends no name */
	{ "frags 4", 0, "OK: frags=4" },
	{ "delay 2147483647", 0, "OK: delay=18446744073709551615" }, /* 0x7FFFFFFF: never */
	{ "delay 0", 0, "OK: delay=0" },
	{ "ratep 1000", 0, "OK: rate=1000" },
	{ "rate 300M", 0, "OK: rate=300" },
	{ "ratep 0", -EINVAL, "ERROR: ratep must be above 0" },
	{ "delay 0", 0, "OK: delay=0" },
	{ "udp_src_min 1000", 0, "OK: udp_src_min=1000" },
	{ "udp_dst_max 70000", -ERANGE, "ERROR: udp_dst_max: 70000 is not a port" },
	{ "clone_skb 10", 0, "OK: clone_skb=10" },
	{ "imix_weights 64,7 576,4", -EINVAL, "ERROR: imix_weights cannot be used with clone_skb" },
	{ "clone_skb 0", 0, "OK: clone_skb=0" },
	{ "imix_weights 64,7 576,4 1500,1", 0, NULL }, /* the kernel replies nothing */
	{ "imix_weights 64", -EINVAL, "ERROR: imix_weights wants SIZE,WEIGHT pairs" },
	{ "clone_skb 1", -EINVAL, "ERROR: clone_skb cannot be used with imix_weights" },
	{ "burst 32", 0, "OK: burst=32" },
	{ "burst 0", 0, "OK: burst=1" },
	{ "node 0", 0, "OK: node=0" },
	{ "node 999", 0, "ERROR: node not possible" },
	{ "xmit_mode queue_xmit", 0, "OK: xmit_mode=queue_xmit" },
	{ "burst 8", -ENOTSUP, "ERROR: burst needs a device that takes shared skbs" },
	{ "xmit_mode bogus", -EINVAL, "xmit_mode -:bogus:- unknown" },
	{ "xmit_mode start_xmit", 0, "OK: xmit_mode=start_xmit" },
	{ "flag UDPCSUM", 0, "OK: flags=0x40" },
	{ "flag IPV6", -EINVAL, "Flag -:IPV6:- unknown" }, /* IPV6 can only be cleared */
	{ "flag NODE_ALLOC", -EINVAL, "Flag -:NODE_ALLOC:- unknown" },
	{ "flag NODE", 0, "OK: flags=0x20040" },
	{ "flag !NODE", 0, "OK: flags=0x40" },
	{ "flag FLOW_RND", 0, "OK: flags=0x40" }, /* = !FLOW_SEQ */
	{ "flag !FLOW_RND", 0, "OK: flags=0x840" },
	{ "flag !FLOW_SEQ", 0, "OK: flags=0x40" },
	{ "dst 198.18.0.2", 0, "OK: dst_min=198.18.0.2" },
	{ "dst_max 198.18.0.9", 0, "OK: dst_max=198.18.0.9" },
	{ "dst 198.18.0.256", -EINVAL, "ERROR: dst: not an IPv4 address: \"198.18.0.256\"" },
	{ "src_min 1.2.3", -EINVAL, "ERROR: src_min: not an IPv4 address" },
	{ "dst_mac 02:00:00:00:00:02", 0, "OK: dstmac 02:00:00:00:00:02" },
	{ "src_mac 02:00:00:00:00:0g", -EINVAL, "ERROR: src_mac: not a MAC address" },
	{ "dst_mac 02:00:00:00:00:022", -EINVAL, "ERROR: dst_mac: not a MAC address" },
	{ "flows 70000", 0, "OK: flows=65536" },
	{ "flows 0", 0, "OK: flows=0" },
	{ "mpls 0001000a,0002000b", 0, "OK: mpls=0001000a,0002000b" },
	{ "mpls zz", -EINVAL, "ERROR: mpls wants hex labels" },
	{ "mpls 1,2,3,4,5,6,7,8,9,a,b,c,d,e,f,10,11", -E2BIG, "ERROR: mpls: at most 16 labels" },
	{ "vlan_id 5", 0, "OK: vlan_id=5" }, /* turns MPLS off */
	{ "vlan_id 40000", -ERANGE, "ERROR: vlan_id: at most 4 digits" },
	{ "vlan_p 8", 0, "ERROR: vlan_p must be 0-7" },
	{ "vlan_p 3", 0, "OK: vlan_p=3" },
	{ "svlan_id 7", 0, "OK: svlan_id=7" },
	{ "svlan_cfi 1", 0, "OK: svlan_cfi=1" },
	{ "tos 1", 0, "ERROR: tos must be 00-ff" },
	{ "tos 1f", 0, "OK: tos=0x1f" },
	{ "traffic_class 123", 0, "ERROR: traffic_class must be 00-ff" },
	{ "dst6 fd00::2", 0, "OK: dst6=fd00::2" }, /* sets IPV6 */
	{ "dst6 fd00:::2", -EINVAL, "ERROR: dst6: not an IPv6 address" },
	{ "flag !IPV6", 0, "OK: flags=0x40" },
	{ "skb_priority 7", 0, "OK: skb_priority=7" },
	{ "queue_map_max 123456", -ERANGE, "ERROR: queue_map_max: at most 5 digits" },
	{ "clear_counters", 0, "OK: Clearing counters." },
	{ "bogus 1", -EINVAL, "No such parameter \"bogus\"" },
	{ "a_name_far_too_long_for_the_kernel 1", -EINVAL, "No such parameter \"a_name_far_too_\"" },
};

static void test_commands(void)
{
	struct uskb_dev *dev = rec_dev();
	struct uskb_pktgen *pg = engine(1);
	char buf[4096];

	CHECK_EQ(uskb_pktgen_register_dev(pg, "rec", dev), 0);
	CHECK_EQ(uskb_pktgen_register_dev(pg, "rec", dev), -EEXIST);
	CHECK_EQ(uskb_pktgen_register_dev(pg, "a@b", dev), -EINVAL);
	dev->nqueues = 0; /* a device without queues cannot be used */
	CHECK_EQ(uskb_pktgen_register_dev(pg, "noq", dev), -EINVAL);
	dev->nqueues = 1;
	/* the thread file */
	CHECK_EQ(strcmp(uskb_pktgen_result(pg, "kpktgend_0"), "NA"), 0);
	CHECK(uskb_pktgen_result(pg, "kpktgend_1") == NULL);
	CHECK_EQ(uskb_pktgen_write(pg, "kpktgend_1", "add_device rec"), -ENOENT);
	CHECK_EQ(uskb_pktgen_write(pg, "kpktgend_0", "add_device nosuchdev"), -ENODEV);
	CHECK_EQ(strcmp(uskb_pktgen_result(pg, "kpktgend_0"), "ERROR: can not add device nosuchdev"), 0);
	cmd_ok(pg, "kpktgend_0", "add_device rec");
	CHECK_EQ(uskb_pktgen_write(pg, "kpktgend_0", "add_device rec"), -EBUSY);
	cmd_ok(pg, "kpktgend_0", "add_device rec@1"); /* the same device again, under a tag */
	CHECK_EQ(uskb_pktgen_write(pg, "kpktgend_0", "bogus"), -EINVAL);
	cmd_ok(pg, "kpktgend_0", "max_before_softirq 100");
	CHECK(strstr(uskb_pktgen_result(pg, "kpktgend_0"), "obsoleted") != NULL);
	CHECK_EQ(uskb_pktgen_write(pg, "pgctrl", "bogus"), -EINVAL);
	CHECK(uskb_pktgen_read(pg, "pgctrl", buf, sizeof(buf)) > 0);
	CHECK_EQ(strcmp(buf, "Packet Generator for packet performance testing. Version: 2.75\n"), 0);
	CHECK_EQ(uskb_pktgen_read(pg, "nosuch", buf, sizeof(buf)), -ENOENT);
	CHECK(uskb_pktgen_read(pg, "kpktgend_0", buf, sizeof(buf)) > 0);
	CHECK_EQ(strcmp(buf, "Running: \nStopped: rec@1 rec \nResult: OK: Note! max_before_softirq is "
			     "obsoleted -- Do not use\n"),
		 0);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct cmd_case *c = &cases[i];
		char before[600];
		const char *res;
		int err;

		snprintf(before, sizeof(before), "%s", uskb_pktgen_result(pg, "rec"));
		err = uskb_pktgen_write(pg, "rec", c->cmd);
		res = uskb_pktgen_result(pg, "rec");
		if (err != c->err || (c->reply && strncmp(res, c->reply, strlen(c->reply))) ||
		    (!c->reply && strcmp(res, before))) {
			fprintf(stderr, "\"%s\": %d \"%s\", want %d \"%s\"\n", c->cmd, err, res, c->err,
				c->reply ? c->reply : before);
			t_failures++;
		}
	}
	/* the device file shows what was set */
	CHECK(uskb_pktgen_read(pg, "rec", buf, sizeof(buf)) > 0);
	CHECK(strstr(buf, "     imix_weights: 64,7 576,4 1500,1 \n") != NULL);
	CHECK(strstr(buf, "     vlan_id: 5  vlan_p: 3  vlan_cfi: 0\n") != NULL);
	CHECK(strstr(buf, "     svlan_id: 7  vlan_p: 0  vlan_cfi: 1\n") != NULL);
	CHECK(strstr(buf, "     tos: 0x1f\n     node: 0\n     Flags: UDPCSUM  \n") != NULL);
	CHECK(strstr(buf, "     skb_priority: 7\n") != NULL);
	CHECK(strstr(buf, "     dst_min: 198.18.0.2  dst_max: 198.18.0.9\n") != NULL);
	cmd_ok(pg, "pgctrl", "reset");
	CHECK_EQ(uskb_pktgen_write(pg, "rec", "count 1"), -ENOENT);
	uskb_pktgen_free(pg);
}

/* ---- burst, clone_skb, busy and drop ---- */

static void run_rec(int count, int burst, int clone, int busy_every, int drop_every,
		    const char *extra)
{
	struct uskb_dev *dev = rec_dev();
	struct uskb_pktgen *pg = engine(1);
	char cmd[64];

	rec.busy_every = busy_every;
	rec.drop_every = drop_every;
	CHECK_EQ(uskb_pktgen_register_dev(pg, "rec", dev), 0);
	cmd_ok(pg, "kpktgend_0", "add_device rec");
	snprintf(cmd, sizeof(cmd), "count %d", count);
	cmd_ok(pg, "rec", cmd);
	snprintf(cmd, sizeof(cmd), "burst %d", burst);
	cmd_ok(pg, "rec", cmd);
	snprintf(cmd, sizeof(cmd), "clone_skb %d", clone);
	cmd_ok(pg, "rec", cmd);
	/* @extra: commands separated by ';' */
	if (extra) {
		char buf[256], *save = NULL;

		snprintf(buf, sizeof(buf), "%s", extra);
		for (char *c = strtok_r(buf, ";", &save); c; c = strtok_r(NULL, ";", &save))
			cmd_ok(pg, "rec", c);
	}
	cmd_ok(pg, "pgctrl", "start");
	CHECK(!strncmp(uskb_pktgen_result(pg, "rec"), "OK: ", 4));
	uskb_pktgen_free(pg);
}

static void test_reuse(void)
{
	/* burst 10, clone 0: a new skb per transmit call, sent 10 times */
	run_rec(1000, 10, 0, 0, 0, NULL);
	CHECK_EQ(rec.pkts, 1000);
	CHECK_EQ(rec.calls, 100);
	CHECK_EQ(rec.distinct, 100);
	for (int i = 0; i < 1000; i++)
		if (rec.seqs[i] != (uint32_t)(i / 10 * 10 + 1)) {
			fprintf(stderr, "burst: packet %d has seq %u\n", i, rec.seqs[i]);
			t_failures++;
			break;
		}
	/* the last burst is cut at count (the kernel would overshoot) */
	run_rec(25, 10, 0, 0, 0, NULL);
	CHECK_EQ(rec.pkts, 25);
	CHECK_EQ(rec.calls, 3);
	/* clone_skb 4, burst 1: each skb goes out on 4 calls (the kernel's count) */
	run_rec(100, 1, 4, 0, 0, NULL);
	CHECK_EQ(rec.pkts, 100);
	CHECK_EQ(rec.distinct, 25);
	/* clone_skb 0, burst 1: seq runs 1..N */
	run_rec(300, 1, 0, 0, 0, NULL);
	CHECK_EQ(rec.distinct, 300);
	for (int i = 0; i < 300; i++)
		CHECK_EQ(rec.seqs[i], (uint32_t)i + 1);
	/* ... built and handed over 32 a call (ceil(299 / 32) calls), the last alone */
	CHECK_EQ(rec.calls, 11);
	/* paced, one per call, as the kernel */
	run_rec(20, 1, 0, 0, 0, "delay 1000");
	CHECK_EQ(rec.pkts, 20);
	CHECK_EQ(rec.calls, 20);
	/* busy: not counted, retried with the same packet; no gap in seq */
	run_rec(300, 1, 0, 7, 0, NULL);
	CHECK_EQ(rec.pkts, 300);
	for (int i = 0; i < 300; i++)
		CHECK_EQ(rec.seqs[i], (uint32_t)i + 1);
	/* drops: errors, not sent */
	{
		struct uskb_dev *dev = rec_dev();
		struct uskb_pktgen *pg = engine(1);
		struct uskb_pktgen_stats st;

		rec.drop_every = 5;
		CHECK_EQ(uskb_pktgen_register_dev(pg, "rec", dev), 0);
		cmd_ok(pg, "kpktgend_0", "add_device rec");
		cmd_ok(pg, "rec", "count 100");
		cmd_ok(pg, "pgctrl", "start");
		CHECK_EQ(uskb_pktgen_dev_stats(pg, 0, NULL, 0, &st), 0);
		CHECK_EQ(st.sofar, 100);
		CHECK_EQ(st.errors, 24); /* 124 tries, every 5th dropped */
		CHECK(strstr(uskb_pktgen_result(pg, "rec"), "errors: 24") != NULL);
		/*
		 * Built 32 at a time, each packet numbered as built: a dropped
		 * one keeps its number (the kernel, one at a time, would give it
		 * to the next); no number twice. The device's seq_num counts
		 * what went, as the kernel's.
		 */
		for (int i = 0; i < 100; i++) {
			CHECK(rec.seqs[i] % 5 != 0);
			if (i)
				CHECK(rec.seqs[i] > rec.seqs[i - 1]);
		}
		CHECK_EQ(rec.seqs[99], 124);
		{
			char buf[4096];

			CHECK(uskb_pktgen_read(pg, "rec", buf, sizeof(buf)) > 0);
			CHECK(strstr(buf, "seq_num: 101 ") != NULL);
		}
		CHECK_EQ(uskb_pktgen_dev_stats(pg, 1, NULL, 0, &st), -ENOENT);
		uskb_pktgen_free(pg);
	}
}

/* ---- the zero page is never written ---- */

static uint64_t page_sum(const unsigned char *p)
{
	uint64_t s = 0;

	for (size_t i = 0; i < USKB_PAGE_SIZE; i++)
		s = s * 31 + p[i] + 1;
	return s;
}

/* queues: a run cycling over two flushes the one it leaves, and the last at the end */
static void test_queues(void)
{
	run_rec(100, 1, 3, 0, 0, "queue_map_max 1");
	CHECK_EQ(rec.pkts, 100);
	CHECK(rec.switches >= 20); /* a new queue with each new packet (every 4 sends) */
	CHECK_EQ(rec.pending[0] + rec.pending[1], 0);
}

static void test_zero_page(void)
{
	struct uskb_page *zp = uskb_zero_page();
	const unsigned char *mem = uskb_page_address(zp);
	uint64_t before = page_sum(mem);
	struct uskb_pktgen *pg = engine(1);
	struct uskb_pktgen_stats st;

	for (size_t i = 0; i < USKB_PAGE_SIZE; i++)
		if (mem[i]) {
			fprintf(stderr, "zero page byte %zu is %u\n", i, mem[i]);
			t_failures++;
			break;
		}
	cmd_ok(pg, "kpktgend_0", "add_device null");
	cmd_ok(pg, "null", "count 2000");
	cmd_ok(pg, "null", "frags 17");
	cmd_ok(pg, "null", "flag UDPCSUM");
	cmd_ok(pg, "null", "min_pkt_size 60");
	cmd_ok(pg, "null", "max_pkt_size 9000");
	cmd_ok(pg, "pgctrl", "start");
	CHECK_EQ(uskb_pktgen_dev_stats(pg, 0, NULL, 0, &st), 0);
	CHECK_EQ(st.sofar, 2000);
	CHECK_EQ(st.nfrags, 17);
	uskb_pktgen_free(pg);
	CHECK_EQ(page_sum(mem), before);
}

/* ---- two threads, one device; stop from outside; pacing ---- */

static void *starter(void *arg)
{
	return (void *)(intptr_t)uskb_pktgen_write(arg, "pgctrl", "start");
}

static void test_threads(void)
{
	struct uskb_dev *dev = uskb_dev_open("null");
	struct uskb_pktgen *pg = engine(2);
	struct uskb_pktgen_stats st;
	pthread_t th;
	void *ret;

	CHECK(dev != NULL);
	CHECK_EQ(uskb_pktgen_register_dev(pg, "nulldev", dev), 0);
	cmd_ok(pg, "kpktgend_0", "add_device nulldev@0");
	cmd_ok(pg, "kpktgend_1", "add_device nulldev@1");
	cmd_ok(pg, "nulldev@0", "count 20000");
	cmd_ok(pg, "nulldev@1", "count 30000");
	cmd_ok(pg, "nulldev@1", "burst 16");
	cmd_ok(pg, "nulldev@1", "clone_skb 100");
	cmd_ok(pg, "nulldev@0", "frags 2");
	cmd_ok(pg, "pgctrl", "start");
	CHECK_EQ(dev_stat(dev, tx_packets), 50000);
	CHECK_EQ(uskb_pktgen_dev_stats(pg, 0, NULL, 0, &st), 0);
	CHECK_EQ(st.sofar, 20000);
	CHECK_EQ(uskb_pktgen_dev_stats(pg, 1, NULL, 0, &st), 0);
	CHECK_EQ(st.sofar, 30000);

	/* count 0 runs until stopped; commands are refused meanwhile */
	cmd_ok(pg, "nulldev@0", "count 0");
	cmd_ok(pg, "nulldev@1", "count 0");
	CHECK_EQ(pthread_create(&th, NULL, starter, pg), 0);
	/* wait until this run is under way (the counters still hold the last run's) */
	for (int i = 0; i < 2; i++)
		do
			usleep(1000);
		while (uskb_pktgen_dev_stats(pg, i, NULL, 0, &st) == 0 &&
		       (!st.running || st.sofar < 1000));
	CHECK_EQ(uskb_pktgen_write(pg, "nulldev@0", "count 5"), -EBUSY);
	CHECK_EQ(uskb_pktgen_write(pg, "pgctrl", "stop"), 0);
	pthread_join(th, &ret);
	CHECK_EQ((int)(intptr_t)ret, 0);
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(uskb_pktgen_dev_stats(pg, i, NULL, 0, &st), 0);
		CHECK(!st.running && st.sofar > 0);
		/*
		 * a run ended by stop reports its last packet's frags, also when
		 * the device holds that skb (this device has no SG: 0, never -1)
		 */
		CHECK_EQ(st.nfrags, 0);
	}
	CHECK(!strncmp(uskb_pktgen_result(pg, "nulldev@0"), "OK: ", 4));
	CHECK(strstr(uskb_pktgen_result(pg, "nulldev@0"), ",0frags)") != NULL);

	/* pacing: 200 packets at 20000 pps take at least 199 gaps of 50 us */
	cmd_ok(pg, "kpktgend_1", "rem_device_all");
	cmd_ok(pg, "nulldev@0", "count 200");
	cmd_ok(pg, "nulldev@0", "ratep 20000");
	cmd_ok(pg, "pgctrl", "start");
	CHECK_EQ(uskb_pktgen_dev_stats(pg, 0, NULL, 0, &st), 0);
	CHECK_EQ(st.sofar, 200);
	CHECK(st.elapsed_ns >= 199ull * 50000);
	uskb_pktgen_free(pg);
	uskb_dev_close(dev);
}

/* stop is honoured in a long delay; "never transmit" starves nobody; stop before start */
static void test_stop_and_delay(void)
{
	struct uskb_pktgen *pg = engine(1);
	struct uskb_pktgen_stats st;
	pthread_t th;
	uint64_t t0;
	void *ret;

	cmd_ok(pg, "kpktgend_0", "add_device null@slow");
	cmd_ok(pg, "kpktgend_0", "add_device null@never");
	cmd_ok(pg, "kpktgend_0", "add_device null@fast");
	cmd_ok(pg, "null@slow", "count 0");
	cmd_ok(pg, "null@slow", "delay 60000000000"); /* a packet a minute */
	cmd_ok(pg, "null@never", "count 0");
	cmd_ok(pg, "null@never", "delay 2147483647");
	cmd_ok(pg, "null@fast", "count 5000");
	CHECK_EQ(pthread_create(&th, NULL, starter, pg), 0);
	/* fast finishes although never and slow share its thread */
	do
		usleep(1000);
	while (uskb_pktgen_dev_stats(pg, 0, NULL, 0, &st) == 0 && (st.running || st.sofar < 5000));
	CHECK_EQ(st.sofar, 5000);
	t0 = (uint64_t)time(NULL);
	uskb_pktgen_stop(pg);
	pthread_join(th, &ret);
	CHECK((uint64_t)time(NULL) - t0 < 30); /* not the minute of the delay */
	CHECK_EQ(uskb_pktgen_dev_stats(pg, 1, NULL, 0, &st), 0);
	CHECK_EQ(st.sofar, 0); /* never */
	CHECK_EQ(uskb_pktgen_dev_stats(pg, 2, NULL, 0, &st), 0);
	CHECK(st.sofar <= 2); /* slow: at most the two the kernel sends before its first wait */
	/* a stop asked before start ends that run at once */
	cmd_ok(pg, "kpktgend_0", "rem_device_all");
	cmd_ok(pg, "kpktgend_0", "add_device null");
	cmd_ok(pg, "null", "count 0");
	uskb_pktgen_stop(pg);
	cmd_ok(pg, "pgctrl", "start");
	CHECK_EQ(uskb_pktgen_dev_stats(pg, 0, NULL, 0, &st), 0);
	CHECK(!st.running);
	/* and does not linger into the next one */
	cmd_ok(pg, "null", "count 100");
	cmd_ok(pg, "pgctrl", "start");
	CHECK_EQ(uskb_pktgen_dev_stats(pg, 0, NULL, 0, &st), 0);
	CHECK_EQ(st.sofar, 100);
	uskb_pktgen_free(pg);
}

/*
 * The pktgen header's time: the wall clock to the microsecond, never ahead
 * of it (the engine reuses a reading for up to a microsecond of TSC).
 */
static void test_timestamps(void)
{
	/* back to back: none ahead of the clock */
	run_rec(200000, 1, 0, 0, 0, NULL);
	CHECK_EQ(rec.pkts, 200000);
	CHECK_EQ(rec.ts_ahead, 0);
	CHECK(rec.ts_behind < 1000000); /* (a scheduling delay between build and transmit) */
	/* batches of template-made packets, the time held per chunk: it moves (~1 ms at least) */
	rec_frames_ok();
	CHECK_EQ(rec.distinct, rec.pkts);
	CHECK(rec.ts_changes >= 100);
	/* the same without a time, and over IPv6 (batches made without a clock) */
	run_rec(100000, 1, 0, 0, 0, "flag NO_TIMESTAMP");
	CHECK_EQ(rec.pkts, 100000);
	rec_frames_ok();
	CHECK_EQ(rec.distinct, rec.pkts);
	CHECK_EQ(rec.ts_us[63], 0);
	CHECK_EQ(rec.ts_changes, 0);
	/*
	 * (A run's thread learns the TSC's rate in its first 10 ms, reading
	 * the clock per packet meanwhile: runs with a time hold it per chunk
	 * only after that; NO_TIMESTAMP runs are made in batches at once.)
	 */
	run_rec(300000, 1, 0, 0, 0, "dst6 fd00::2");
	CHECK_EQ(rec.pkts, 300000);
	rec_frames_ok();
	CHECK_EQ(rec.distinct, rec.pkts);
	CHECK_EQ(rec.ts_ahead, 0);
	CHECK(rec.ts_changes >= 50);
	run_rec(50000, 1, 0, 0, 0, "dst6 fd00::2;flag NO_TIMESTAMP");
	CHECK_EQ(rec.pkts, 50000);
	rec_frames_ok();
	/* a one-copy frame with payload (its zeros come from the template) */
	run_rec(50000, 1, 0, 0, 0, "pkt_size 62;flag NO_TIMESTAMP");
	CHECK_EQ(rec.pkts, 50000);
	rec_frames_ok();
	CHECK_EQ(rec.len0, 62);
	/* longer than a one-copy frame: header copied, zeros after it written */
	run_rec(50000, 1, 0, 0, 0, "pkt_size 300;flag NO_TIMESTAMP");
	CHECK_EQ(rec.pkts, 50000);
	rec_frames_ok();
	CHECK_EQ(rec.len0, 300);
	/* busy tails sent first next time, and drops (a dropped packet keeps its number) */
	run_rec(20000, 1, 0, 7, 0, "flag NO_TIMESTAMP");
	CHECK_EQ(rec.pkts, 20000);
	rec_frames_ok();
	CHECK_EQ(rec.distinct, rec.pkts);
	run_rec(20000, 1, 0, 0, 5, "flag NO_TIMESTAMP");
	CHECK_EQ(rec.pkts, 20000);
	rec_frames_ok(); /* (the device saw the dropped ones too: no gap) */
	/*
	 * 2 ms apart: each packet its own time. The engine keeps a schedule
	 * (a late packet is followed sooner), so the span is what is sure:
	 * the 20th cannot leave before 17 delays after the schedule began
	 * (the first three go before the first wait), the first maybe late
	 * under a sanitizer: at least 15 here. Readings reused too long would
	 * span microseconds.
	 */
	run_rec(20, 1, 0, 0, 0, "delay 2000000");
	CHECK_EQ(rec.pkts, 20);
	CHECK_EQ(rec.ts_ahead, 0);
	if (rec.ts_us[19] < rec.ts_us[0] + 15 * 2000) {
		fprintf(stderr, "timestamps: 20 packets 2 ms apart span %lld us\n",
			(long long)(rec.ts_us[19] - rec.ts_us[0]));
		t_failures++;
	}
	for (int i = 1; i < 20; i++)
		CHECK(rec.ts_us[i] >= rec.ts_us[i - 1]);
	printf("timestamps: never ahead of the clock; packets 2 ms apart span the delays\n");
}

/* ---- the batch clock, white box ---- */

/* @n packets built beforehand take the held reading, as __uskb_pg_build_next does (quickly) */
static void chunk_stamp(struct pg_dev *d, struct uskb **v, int n)
{
	uint32_t tv[2] = { htonl(d->held_sec), htonl(d->held_usec) };

	CHECK(d->hold);
	for (int i = 0; i < n; i++)
		memcpy(uskb_transport_header(v[i]) + 16, tv, 8);
}

/*
 * One reading per chunk: held at most half a microsecond old; a chunk
 * whose reading aged a microsecond by its end (a preemption) is stamped
 * again with a reading taken after, never one from before; the chunk
 * length follows the batch's pace.
 */
static void test_stamp_chunks(void)
{
#if !defined(__x86_64__) && !defined(__i386__)
	printf("stamps: no TSC here: each packet reads the clock\n");
	return;
#endif
	struct pg_dev *d = calloc(1, sizeof(*d));
	struct uskb *v[8];
	uint64_t before, after, t0, t1, base;
	int tries;

	CHECK(d != NULL);
	/* until the TSC's rate is learnt (10 ms of readings), a batch is not timed */
	for (tries = 0; tries < 1000; tries++) {
		__uskb_pg_stamp_begin(d);
		if (d->batch_tsc)
			break;
		spin_us(100);
	}
	CHECK(d->batch_tsc != 0);
	__uskb_pg_stamp_end(d, NULL, 0, 0);
	CHECK(!d->hold);

	/* a quick chunk: one reading, kept */
	for (int i = 0; i < 8; i++) {
		struct uskb_pktgen_pkt p = { .pkt_size = 64, .vlan_id = 0xffff, .svlan_id = 0xffff };

		CHECK((v[i] = uskb_pktgen_build(&p, NULL, NULL)) != NULL);
	}
	d->every = 4;
	before = wall_us();
	t0 = uskb_mono_ns();
	__uskb_pg_stamp_begin(d);
	chunk_stamp(d, v, 4);
	__uskb_pg_stamp_chunk(d, v, 4);
	t1 = uskb_mono_ns();
	after = wall_us();
	for (int i = 0; i < 4; i++) {
		CHECK(pgh_us(v[i]) + 1 >= before); /* (at most half a microsecond old) */
		CHECK(pgh_us(v[i]) <= after);
	}
	if (t1 - t0 < 400) /* (not under a sanitizer, nor interrupted) */
		CHECK_EQ(d->restamped, 0);
	base = d->restamped;
	/* preempted in the middle of the next: stamped again, after the preemption */
	chunk_stamp(d, v + 4, 2);
	spin_us(5);
	before = wall_us();
	chunk_stamp(d, v + 6, 2);
	__uskb_pg_stamp_end(d, v + 4, 4, 8);
	after = wall_us();
	CHECK(!d->hold);
	CHECK_EQ(d->restamped, base + 4);
	for (int i = 4; i < 8; i++) {
		CHECK(pgh_us(v[i]) >= before);
		CHECK(pgh_us(v[i]) <= after);
	}
	for (int i = 0; i < 8; i++)
		uskb_free(v[i]);
	/* that batch's pace (a preemption in it) gives one packet per reading */
	CHECK_EQ(d->every, 1);
	/* and a batch with one reading per packet holds none */
	__uskb_pg_stamp_begin(d);
	CHECK(!d->hold);
	CHECK(d->batch_tsc != 0);
	__uskb_pg_stamp_end(d, NULL, 0, 32);
	CHECK(d->every > 1); /* an empty batch is quick */
	/* NO_TIMESTAMP and UDPCSUM: never */
	d->p.flags = F_UDPCSUM;
	__uskb_pg_stamp_begin(d);
	CHECK(!d->hold && !d->batch_tsc);
	free(d);
	printf("stamps: one reading per chunk; a preempted chunk stamped again after it\n");
}

/*
 * The engine under real preemptions: a timer's signal spins 5 us in the
 * sending thread every 20 us. Every packet still goes, none with a time
 * ahead of its send, and chunks are stamped again. (How many batches
 * after a spin end in a packet with a time from before it is printed, not
 * checked: a spin after the last packet took its time, in the rest of its
 * build or the call's start, makes one legitimately, 7-27 % of the spins
 * here depending on the load; test_stamp_chunks checks the rule itself.)
 */
static void test_timestamps_preempted(void)
{
#ifdef __SANITIZE_THREAD__
	/* TSan delivers a signal at its own points, and a storm of them starves the thread */
	printf("timestamps: preemptions by signal not tried under TSan\n");
	return;
#endif
	struct sigaction sa = { .sa_handler = pre_spin }, old;
	struct uskb_dev *dev = rec_dev();
	struct uskb_pktgen *pg = engine(1);
	struct uskb_pktgen_stats st;

	CHECK(sigaction(SIGUSR2, &sa, &old) == 0);
	memset(&pre, 0, sizeof(pre));
	pre.on = true;
	rec.busy_every = 1000; /* busy tails, sent first in the next call: never stamped again */
	CHECK_EQ(uskb_pktgen_register_dev(pg, "rec", dev), 0);
	cmd_ok(pg, "kpktgend_0", "add_device rec");
	cmd_ok(pg, "rec", "count 2000000");
	cmd_ok(pg, "pgctrl", "start");
	CHECK_EQ(uskb_pktgen_dev_stats(pg, 0, NULL, 0, &st), 0);
	pre.on = false;
	if (pre.armed)
		CHECK(timer_delete(pre.timer) == 0);
	CHECK(sigaction(SIGUSR2, &old, NULL) == 0);
	uskb_pktgen_free(pg);
	CHECK_EQ(rec.pkts, 2000000);
	CHECK_EQ(rec.ts_ahead, 0);
	rec_frames_ok();
	CHECK(pre.hits >= 100);
	CHECK(pre.tail_checked >= 100);
#if defined(__x86_64__) || defined(__i386__)
	CHECK(st.restamped > 0); /* (elsewhere no TSC: each packet reads the clock) */
#endif
	printf("timestamps: %d preemptions in a batch, %d late, %" PRIu64 " packets stamped again\n",
	       pre.hits, pre.late, st.restamped);
}

int main(void)
{
	test_commands();
	test_reuse();
	test_queues();
	test_zero_page();
	test_threads();
	test_stop_and_delay();
	test_timestamps();
	test_timestamps_preempted();
	test_stamp_chunks();
	uskb_thread_flush();
	return t_end("pktgen-engine");
}
