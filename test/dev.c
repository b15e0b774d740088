/* SPDX-License-Identifier: MIT */
/*
 * The device layer: null and pcap devices, bad specs, counters; tshark reads
 * the pcap; a pcap that cannot grow (a file size limit, as a full disk)
 * keeps its whole records and counts the rest as dropped, exactly.
 */
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "t.h"

#define dev_stat(d, f) ({ struct uskb_dev_stats _s; uskb_dev_get_stats((d), -1, &_s); _s.f; })

static struct uskb *frame(unsigned int i, struct uskb_page *pg)
{
	struct uskb *skb = uskb_alloc(128);

	t_fill(uskb_put(skb, 42), 42, i);
	if (i & 1) { /* a paged one: the frags must land in the file too */
		uskb_page_get(pg);
		uskb_add_rx_frag(skb, 0, pg, (int)i * 8, 100, 100);
	}
	return skb;
}

/* A registered device type: takes every other skb, and says why it dropped the rest. */
static int half_open(struct uskb_dev *dev, const char *arg)
{
	if (arg && strcmp(arg, "ok"))
		return -EINVAL;
	dev->features = USKB_DEV_F_SG;
	return 0;
}

static void half_xmit(struct uskb_dev *dev, unsigned int queue, struct uskb **skbs, int n,
		      int *res)
{
	(void)queue;
	for (int i = 0; i < n; i++) {
		res[i] = i % 2 ? USKB_XMIT_DROP : USKB_XMIT_OK;
		if (i % 2)
			snprintf(dev->last_error, sizeof(dev->last_error), "dropped skb %d", i);
		uskb_consume(skbs[i]);
	}
}

static const struct uskb_dev_ops half_ops = { .type = "half", .open = half_open,
					       .xmit = half_xmit };
static const struct uskb_dev_ops bad_ops = { .type = "ha:lf", .open = half_open,
					      .xmit = half_xmit };
static const struct uskb_dev_ops null_again = { .type = "null", .open = half_open,
						.xmit = half_xmit };

static void registry(void)
{
	struct uskb_dev_stats st;
	struct uskb *skbs[4];
	struct uskb_dev *dev;
	char err[64];
	int i;

	CHECK(uskb_dev_open("half:ok") == NULL);
	CHECK_EQ(uskb_dev_register(&half_ops), 0);
	CHECK_EQ(uskb_dev_register(&half_ops), -EEXIST);
	CHECK_EQ(uskb_dev_register(&null_again), -EEXIST);
	CHECK_EQ(uskb_dev_register(&bad_ops), -EINVAL);
	CHECK_EQ(uskb_dev_register(NULL), -EINVAL);
	CHECK(uskb_dev_open("half:nope") == NULL);
	dev = uskb_dev_open("half:ok");
	CHECK(dev != NULL);
	if (!dev)
		return;
	CHECK_EQ(uskb_dev_last_error(dev, err, sizeof(err)), 0);
	for (i = 0; i < 4; i++) {
		skbs[i] = uskb_alloc(100);
		uskb_put_zero(skbs[i], 60);
	}
	CHECK_EQ(uskb_dev_xmit(dev, 0, skbs, 4, NULL), 2);
	uskb_dev_get_stats(dev, 0, &st);
	CHECK_EQ(st.tx_packets, 2);
	CHECK_EQ(st.tx_dropped, 2);
	CHECK_EQ(uskb_dev_last_error(dev, err, sizeof(err)), (int)strlen("dropped skb 3"));
	CHECK(!strcmp(err, "dropped skb 3"));
	CHECK_EQ(uskb_dev_last_error(dev, err, 0), -EINVAL);
	uskb_dev_close(dev);
}

/* A device with room for so many skbs, busy for the rest (a tail, as dev.h says) */
static int room_left, room_calls;

static void room_xmit(struct uskb_dev *dev, unsigned int queue, struct uskb **skbs, int n, int *res)
{
	(void)dev, (void)queue;
	room_calls++;
	for (int i = 0; i < n; i++) {
		if (room_left <= 0) {
			res[i] = USKB_XMIT_BUSY;
			continue;
		}
		room_left--;
		res[i] = USKB_XMIT_OK;
		uskb_consume(skbs[i]);
	}
}

static const struct uskb_dev_ops room_ops = { .type = "room", .open = half_open, .xmit = room_xmit };

/* 100 skbs (two chunks of 64 for the device) where 50 fit: the second chunk is not tried */
static void busy_tail(void)
{
	struct uskb *skbs[100];
	struct uskb_dev_stats st;
	struct uskb_dev *dev;
	int res[100];

	CHECK_EQ(uskb_dev_register(&room_ops), 0);
	dev = uskb_dev_open("room:ok");
	CHECK(dev != NULL);
	if (!dev)
		return;
	for (int i = 0; i < 100; i++) {
		skbs[i] = uskb_alloc(100);
		uskb_put_zero(skbs[i], 60);
	}
	room_left = 50;
	CHECK_EQ(uskb_dev_xmit(dev, 0, skbs, 100, res), 50);
	CHECK_EQ(room_calls, 1);
	for (int i = 0; i < 100; i++)
		CHECK_EQ(res[i], i < 50 ? USKB_XMIT_OK : USKB_XMIT_BUSY);
	uskb_dev_get_stats(dev, 0, &st);
	CHECK_EQ(st.tx_packets, 50);
	CHECK_EQ(st.tx_busy, 50);
	/* room again: the busy ones, in their order */
	room_left = 100;
	CHECK_EQ(uskb_dev_xmit(dev, 0, skbs + 50, 50, res), 50);
	uskb_dev_close(dev);
}

/*
 * In a child with a 64 KiB file size limit: 1000 frames of 100 bytes are
 * more than the file may hold. Every frame is in the file or counted as
 * dropped, tx_packets is what the file holds, and the file ends on a whole
 * record. The child's exit status is its number of failed checks.
 */
static void pcap_full(void)
{
	const char *path = "/tmp/uskb-dev-full.pcap";
	pid_t pid = fork();
	int st = 0;

	if (pid == 0) {
		struct rlimit rl = { 65536, 65536 };
		struct uskb_dev_stats s;
		struct uskb_dev *dev;
		struct stat sb;
		char err[200];
		int res;

		signal(SIGXFSZ, SIG_IGN); /* EFBIG instead of a signal */
		CHECK_EQ(setrlimit(RLIMIT_FSIZE, &rl), 0);
		dev = uskb_dev_open("pcap:/tmp/uskb-dev-full.pcap");
		CHECK(dev != NULL);
		if (!dev)
			_exit(1);
		for (int i = 0; i < 1000; i++) {
			struct uskb *skb = uskb_alloc(128);

			t_fill(uskb_put(skb, 100), 100, (unsigned int)i);
			uskb_dev_xmit(dev, 0, &skb, 1, &res);
		}
		uskb_dev_flush(dev, 0);
		uskb_dev_get_stats(dev, -1, &s);
		CHECK(stat(path, &sb) == 0);
		CHECK(s.tx_dropped > 0);
		CHECK_EQ(s.tx_packets + s.tx_dropped, 1000);
		CHECK_EQ((uint64_t)sb.st_size, 24 + s.tx_packets * (16 + 100));
		CHECK_EQ(s.tx_bytes, s.tx_packets * 100);
		CHECK(uskb_dev_last_error(dev, err, sizeof(err)) > 0 && strstr(err, "frames lost"));
		uskb_dev_close(dev);
		_exit(t_failures);
	}
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	unlink(path);
}

int main(void)
{
	const char *path = "/tmp/uskb-dev-test.pcap";
	struct uskb_page *pg = uskb_page_alloc(0);
	struct uskb *v[10];
	struct uskb_dev *dev;
	int res[10], i;
	long expect = 0;

	t_fill(uskb_page_address(pg), USKB_PAGE_SIZE, 3);
	/* bad specs: clear errors, nothing opened */
	errno = 0;
	/* a bare name that is neither an interface nor a type */
	CHECK(uskb_dev_open("bogus") == NULL && errno == ENODEV);
	CHECK(strstr(uskb_dev_strerror(), "bogus: no such interface"));
	CHECK(uskb_dev_open("bogus:x") == NULL && errno == EINVAL);
	CHECK(strstr(uskb_dev_strerror(), "unknown device"));
	/* which specs receive, asked without opening */
	/* errno: 0 for a device that cannot receive, the open's error for no device at all */
	errno = EBADF;
	CHECK(!uskb_dev_spec_receives("null") && errno == 0);
	CHECK(!uskb_dev_spec_receives("pcap:/nonexistent/dir/x.pcap") && errno == 0);
	CHECK(!uskb_dev_spec_receives("bogus") && errno == ENODEV);
	CHECK(strstr(uskb_dev_strerror(), "bogus: no such interface"));
	CHECK(!uskb_dev_spec_receives("bogus:x") && errno == EINVAL);
	CHECK(strstr(uskb_dev_strerror(), "unknown device"));
	CHECK(!uskb_dev_spec_receives("") && errno == EINVAL);
	CHECK(uskb_dev_spec_receives("packet:whatever"));
	CHECK(uskb_dev_spec_receives("lo"));
	CHECK(uskb_dev_open("pcap") == NULL && errno == EINVAL);
	CHECK(strstr(uskb_dev_strerror(), "pcap:"));
	CHECK(uskb_dev_open("pcap:/nonexistent-dir/x.pcap") == NULL && errno == ENOENT);
	CHECK(uskb_dev_open("null:x") == NULL && errno == EINVAL);
	CHECK(strstr(uskb_dev_strerror(), "nocsum"));
	dev = uskb_dev_open("null:nocsum");
	CHECK(dev && (dev->features & USKB_DEV_F_SG) &&
	      !(dev->features & (USKB_DEV_F_IP_CSUM | USKB_DEV_F_IPV6_CSUM)));
	uskb_dev_close(dev);
	CHECK(uskb_dev_open("") == NULL);

	/* null: consumes, counts */
	dev = uskb_dev_open("null");
	CHECK(dev && (dev->features & USKB_DEV_F_SG));
	for (i = 0; i < 10; i++) {
		v[i] = frame((unsigned int)i, pg);
		expect += v[i]->len;
	}
	CHECK_EQ(uskb_dev_xmit(dev, 0, v, 10, res), 10);
	CHECK_EQ(dev_stat(dev, tx_packets), 10);
	CHECK_EQ(dev_stat(dev, tx_bytes), expect);
	for (i = 0; i < 10; i++)
		CHECK_EQ(res[i], USKB_XMIT_OK);
	uskb_dev_close(dev);

	/* pcap: every frame, frags included */
	dev = uskb_dev_open("pcap:/tmp/uskb-dev-test.pcap");
	CHECK(dev != NULL);
	for (i = 0; i < 10; i++)
		v[i] = frame((unsigned int)i, pg);
	CHECK_EQ(uskb_dev_xmit(dev, 0, v, 10, NULL), 10);
	uskb_dev_close(dev);
	{
		FILE *f = fopen(path, "rb");
		unsigned char buf[256];
		uint32_t rec[4];
		long n = 0, bytes = 0;

		CHECK(f && fread(buf, 24, 1, f) == 1);
		while (f && fread(rec, sizeof(rec), 1, f) == 1) {
			unsigned char want[200];
			struct uskb *w = frame((unsigned int)n, pg);

			CHECK(rec[2] == rec[3] && rec[2] <= sizeof(buf));
			CHECK(fread(buf, rec[2], 1, f) == 1);
			uskb_copy_bits(w, 0, want, (int)w->len);
			CHECK_EQ(rec[2], w->len);
			CHECK(!memcmp(buf, want, w->len));
			bytes += rec[2];
			uskb_free(w);
			n++;
		}
		CHECK_EQ(n, 10);
		CHECK_EQ(bytes, expect);
		if (f)
			fclose(f);
	}
	if (!system("command -v tshark >/dev/null 2>&1")) {
		/* an independent reader agrees on the frames */
		CHECK_EQ(system("test \"$(tshark -r /tmp/uskb-dev-test.pcap 2>/dev/null | wc -l)\" = 10"),
			 0);
	}
	unlink(path);
	uskb_page_put(pg);
	registry();
	busy_tail();
	pcap_full();
	return t_end("dev");
}
