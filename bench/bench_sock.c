/* SPDX-License-Identifier: MIT */
/*
 * Zero-copy socket sends, the bare kernel interfaces against the udp:
 * device, on a cache-cold payload: a 512 MB area walked round robin.
 *   bench_sock IMPL MODE SIZE SECS
 * IMPL raw (a bare loop on the socket), rawiov (the same, but a GSO send
 * as an iovec per frame, the sends a device of frames makes) or uskb (skbs whose frags are the
 * area's memory, attached as user buffers, through the udp: device); rawpg
 * and uskbpg: the same on an area of uskb page blocks (512 of 1 MiB), which
 * rawpg registers with its ring (uskb_page_window) and sends from with
 * send_zc_fixed in uring mode, and which the udp: device registers itself;
 * MODE copy, zc (MSG_ZEROCOPY), uring (io_uring send_zc, 32 sends in flight;
 * from registered buffers on the page blocks) or uring-nofixed (never registered);
 * SIZE 1500 or 9000 (one datagram a send) or 64k (UDP_SEGMENT: 44
 * datagrams of 1472 bytes a send). Sends to 198.18.0.2:9: run it in the
 * namespace of scripts/netns-veth.sh up -s, whose tc egress program drops
 * everything without a copy (bench/sock does). Prints "key value" lines:
 * gbps (payload GB/s), cpu_per_gb (CPU-seconds per GB: user + system),
 * sends, copied (sends the kernel reported copied), errors (failed sends,
 * not in sends), fixed (sends, or the device's frames, from registered
 * buffers).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <time.h>
#include <netinet/in.h>
#include <linux/errqueue.h>
#include <netinet/udp.h>
#include <arpa/inet.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include <liburing.h>
#include <uskb/uskb.h>
#include <uskb/dev.h>
#include "bench.h"

#ifndef IORING_SEND_ZC_REPORT_USAGE
#define IORING_SEND_ZC_REPORT_USAGE (1U << 3)
#endif
#ifndef IORING_NOTIF_USAGE_ZC_COPIED
#define IORING_NOTIF_USAGE_ZC_COPIED (1U << 31)
#endif

#define AREA (512ul << 20)
#define SEG 1472
#define QD 32

static unsigned char *area;
static size_t off;
static unsigned long sends, copied, errs, nfixed;

/* the area as uskb page blocks: chunks never cross one */
#define BLK_ORDER 8
#define BLK_SIZE ((size_t)USKB_PAGE_SIZE << BLK_ORDER)
#define NBLK (AREA / BLK_SIZE)
static struct uskb_page *blk[NBLK];
static size_t bi;

static unsigned char *next_chunk(size_t len)
{
	unsigned char *p;

	if (blk[0]) {
		if (off + len > BLK_SIZE) {
			off = 0;
			bi = (bi + 1) % NBLK;
		}
		p = (unsigned char *)uskb_page_address(blk[bi]) + off;
	} else {
		if (off + len > AREA)
			off = 0;
		p = area + off;
	}
	off += len;
	return p;
}

/* rawpg: the window of uskb's pages as the ring's buffer 0 */
struct win_reg {
	struct io_uring *ring;
	struct iovec iov;
};

static int win_register(void *arg)
{
	struct win_reg *w = arg;

	return io_uring_register_buffers(w->ring, &w->iov, 1);
}

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}

/* ---- raw ---- */

static int raw_socket(size_t len, bool gso, bool zc)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(9) };
	int fd = socket(AF_INET, SOCK_DGRAM, 0), one = 1, seg = SEG;

	(void)len;
	inet_pton(AF_INET, "198.18.0.2", &to.sin_addr);
	if (fd < 0 || connect(fd, (struct sockaddr *)&to, sizeof(to)))
		return -1;
	if (gso)
		setsockopt(fd, SOL_UDP, UDP_SEGMENT, &seg, sizeof(seg));
	if (zc && setsockopt(fd, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one)))
		return -1;
	return fd;
}

/* read the MSG_ZEROCOPY notifications there are; how many sends they completed */
static unsigned long drain(int fd)
{
	unsigned long n = 0;

	for (;;) {
		char control[128];
		struct msghdr msg = { .msg_control = control, .msg_controllen = sizeof(control) };
		struct cmsghdr *cm;

		if (recvmsg(fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
			return n;
		for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
			struct sock_extended_err ee;

			memcpy(&ee, CMSG_DATA(cm), sizeof(ee));
			if (ee.ee_origin != SO_EE_ORIGIN_ZEROCOPY)
				continue;
			n += ee.ee_data - ee.ee_info + 1;
			if (ee.ee_code & SO_EE_CODE_ZEROCOPY_COPIED)
				copied += ee.ee_data - ee.ee_info + 1;
		}
	}
}

/* rawiov: the GSO send as an iovec per 1472-byte frame, the sends a device of frames makes */
static bool per_frame_iov;
#define QD2 (2 * QD)
static struct msghdr umsg[QD2];
static struct iovec uiov[QD2][44];

static int raw_run(const char *mode, size_t len, bool gso, double secs)
{
	bool zc = !strcmp(mode, "zc"), ur = !strncmp(mode, "uring", 5);
	bool fixed = ur && blk[0] && strcmp(mode, "uring-nofixed");
	int fd = raw_socket(len, gso, zc);
	double end = bench_now_ns() + secs * 1e9;
	unsigned long outstanding = 0;
	struct io_uring ring;

	if (fd < 0)
		return -1;
	if (ur && io_uring_queue_init(64, &ring, 0))
		return -1;
	if (fixed) {
		struct win_reg w = { &ring, { NULL, 0 } };
		int e;

		w.iov.iov_base = uskb_page_window(&w.iov.iov_len);
		if (!w.iov.iov_base || (uintptr_t)uskb_page_address(blk[NBLK - 1]) + BLK_SIZE >
					       (uintptr_t)w.iov.iov_base + w.iov.iov_len) {
			fprintf(stderr, "bench_sock: the page blocks lie outside uskb's window\n");
			errno = ERANGE;
			return -1;
		}
		e = uskb_page_window_pin(win_register, &w);
		if (e) {
			errno = -e;
			return -1;
		}
	}
	while (bench_now_ns() < end) {
		if (ur) {
			struct io_uring_cqe *cqe;
			unsigned int head, n = 0;

			while (outstanding < QD) {
				struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
				unsigned char *p = next_chunk(len);

				if (per_frame_iov && gso) {
					struct msghdr *m = &umsg[sends % QD2];

					memset(m, 0, sizeof(*m));
					m->msg_iov = uiov[sends % QD2];
					m->msg_iovlen = 44;
					for (int f = 0; f < 44; f++) {
						uiov[sends % QD2][f].iov_base = p + f * SEG;
						uiov[sends % QD2][f].iov_len = SEG;
					}
					io_uring_prep_sendmsg_zc(sqe, fd, m, 0);
					if (fixed) { /* Linux 6.15: the iovecs lie in buffer 0 */
						sqe->ioprio |= IORING_RECVSEND_FIXED_BUF;
						sqe->buf_index = 0;
					}
				} else if (fixed) {
					io_uring_prep_send_zc_fixed(sqe, fd, p, len, 0, 0, 0);
				} else {
					io_uring_prep_send_zc(sqe, fd, p, len, 0, 0);
				}
				sqe->ioprio |= IORING_SEND_ZC_REPORT_USAGE;
				outstanding++;
				sends++;
			}
			io_uring_submit_and_wait(&ring, 1);
			io_uring_for_each_cqe(&ring, head, cqe) {
				n++;
				if (cqe->flags & IORING_CQE_F_NOTIF) {
					outstanding--;
					copied += ((uint32_t)cqe->res & IORING_NOTIF_USAGE_ZC_COPIED) != 0;
				} else if (!(cqe->flags & IORING_CQE_F_MORE)) {
					outstanding--;
				}
				if (!(cqe->flags & IORING_CQE_F_NOTIF) && cqe->res < 0)
					errs++;
			}
			io_uring_cq_advance(&ring, n);
			continue;
		}
		for (int k = 0; k < 64; k++) {
			struct iovec iov[44];
			struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 1 };
			unsigned char *p = next_chunk(len);

			iov[0].iov_base = p;
			iov[0].iov_len = len;
			if (per_frame_iov && gso) { /* an iovec per frame, as a device of frames sends */
				msg.msg_iovlen = 44;
				for (int f = 0; f < 44; f++) {
					iov[f].iov_base = p + f * SEG;
					iov[f].iov_len = SEG;
				}
			}
			if (sendmsg(fd, &msg, zc ? MSG_ZEROCOPY : 0) < 0) {
				if (errno != ENOBUFS && errno != EAGAIN)
					return -1;
				drain(fd);
				continue;
			}
			sends++;
		}
		if (zc)
			drain(fd);
	}
	if (zc) /* what the kernel still holds */
		for (int i = 0; i < 100; i++) {
			drain(fd);
			usleep(1000);
		}
	if (ur)
		io_uring_queue_exit(&ring);
	sends -= errs; /* failed sends carried nothing */
	if (fixed)
		nfixed = sends;
	close(fd);
	return 0;
}

/* ---- uskb: the udp: device, frames attached from the area ---- */

#define POOL 8192

struct ub {
	struct uskb_ubuf u;
	bool busy;
};

static struct ub pool[POOL];

static void ub_complete(struct uskb *skb, struct uskb_ubuf *uarg, bool success)
{
	(void)skb;
	copied += !success;
	((struct ub *)uarg)->busy = false;
}

static const struct uskb_ubuf_ops ub_ops = { .complete = ub_complete };

static int uskb_run(const char *mode, size_t len, bool gso, double secs)
{
	char spec[96];
	struct uskb_dev *dev;
	double end = bench_now_ns() + secs * 1e9;
	unsigned int nub = 0, n = gso ? 44 : 32;
	size_t flen = gso ? SEG : len;

	snprintf(spec, sizeof(spec), "udp:198.18.0.2:9,%s%s,copybreak=0",
		 strcmp(mode, "uring-nofixed") ? mode : "uring,nofixed", gso ? ",gso" : "");
	dev = uskb_dev_open(spec);
	if (!dev) {
		fprintf(stderr, "bench_sock: %s: %s\n", spec, uskb_dev_strerror());
		return -1;
	}
	uskb_zerocopy_set_min_len(0);
	while (bench_now_ns() < end) {
		struct uskb *v[44];
		int res[44], done = 0;

		/* 64k: 44 frames on one user buffer (one send); else 32 frames of one each */
		for (unsigned int i = 0; i < n; i++) {
			struct ub *b;
			struct iovec iov = { next_chunk(flen), flen };

			v[i] = uskb_alloc(0);
			if (blk[0]) { /* a frag of a page block: its reference goes with the skb */
				struct uskb_page *pg = blk[bi];

				uskb_page_get(pg);
				uskb_add_rx_frag(v[i], 0, pg,
						 (int)((char *)iov.iov_base - (char *)uskb_page_address(pg)),
						 (int)flen, (unsigned int)flen);
				continue;
			}
			if (!i || !gso) {
				if (i)
					uskb_zcopy_put(&pool[(nub - 1) % POOL].u);
				b = &pool[nub++ % POOL];
				while (b->busy) /* its frames are still in flight */
					uskb_dev_flush(dev, 0);
				b->busy = true;
				uskb_ubuf_init(&b->u, &ub_ops, USKB_SKBFL_ZEROCOPY_FRAG);
			} else {
				b = &pool[(nub - 1) % POOL];
			}
			if (uskb_zerocopy_attach(v[i], &iov, 1, &b->u, 0))
				abort();
		}
		if (!blk[0])
			uskb_zcopy_put(&pool[(nub - 1) % POOL].u);
		while (done < (int)n) {
			uskb_dev_xmit(dev, 0, v + done, (int)n - done, res + done);
			while (done < (int)n && res[done] != USKB_XMIT_BUSY)
				done++;
			if (done < (int)n)
				uskb_dev_flush(dev, 0);
		}
		sends += gso ? 1 : n;
	}
	uskb_dev_flush(dev, 0);
	{ /* what the device completed so far (the rest completes at close) */
		struct uskb_dev_stats ds;

		uskb_dev_get_stats(dev, -1, &ds);
		nfixed = ds.tx_zc_fixed;
		if (blk[0])
			copied = ds.tx_zc_copied;
	}
	uskb_dev_close(dev); /* waits for what the kernel holds */
	return 0;
}

int main(int argc, char **argv)
{
	const char *impl, *mode;
	size_t len;
	bool gso;
	double secs, t0, c0, t, c;
	int err;

	if (argc != 5) {
		fprintf(stderr, "usage: bench_sock raw|rawiov|uskb|rawpg|uskbpg "
				"copy|zc|uring|uring-nofixed 1500|9000|64k SECS\n");
		return 2;
	}
	impl = argv[1];
	mode = argv[2];
	gso = !strcmp(argv[3], "64k");
	len = gso ? 44 * SEG : (size_t)atol(argv[3]);
	secs = atof(argv[4]);
	if (strstr(impl, "pg")) {
		for (size_t i = 0; i < NBLK; i++) {
			blk[i] = uskb_page_alloc(BLK_ORDER);
			if (!blk[i])
				return 1;
			memset(uskb_page_address(blk[i]), 0x5a, BLK_SIZE);
		}
	} else {
		area = mmap(NULL, AREA, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (area == MAP_FAILED)
			return 1;
		/* faulted in, then cold: the walk leaves the cache behind */
		memset(area, 0x5a, AREA);
	}
	t0 = bench_now_ns();
	c0 = cpu_s();
	per_frame_iov = strstr(impl, "iov");
	err = strncmp(impl, "raw", 3) ? uskb_run(mode, len, gso, secs) : raw_run(mode, len, gso, secs);
	t = (bench_now_ns() - t0) / 1e9;
	c = cpu_s() - c0;
	if (err) {
		fprintf(stderr, "bench_sock: %s %s %s failed: %s\n", impl, mode, argv[3], strerror(errno));
		return 1;
	}
	for (size_t i = 0; i < NBLK && blk[i]; i++)
		uskb_page_put(blk[i]);
	printf("gbps %.3f\ncpu_per_gb %.4f\nsends %lu\ncopied %lu\nerrors %lu\nfixed %lu\n",
	       (double)sends * (double)len / t / 1e9, c / ((double)sends * (double)len / 1e9), sends,
	       copied, errs, nfixed);
	return uskb_stats_all_freed() ? 0 : 1;
}
