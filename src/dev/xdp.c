/* SPDX-License-Identifier: MIT */
/*
 * The xdp: device: a real interface through AF_XDP sockets (libxdp's xsk_*).
 *   xdp:IFNAME[:QUEUE][:copy|:zc]
 * One socket and one UMEM per queue (all the interface's queues, or the one
 * named), so threads on different queues share nothing. A UMEM is 4096
 * frames of 4 KiB: the first half receives (fill ring), the second half
 * transmits (each skb is gathered into a frame; the completion ring gives
 * frames back). The socket binds zero-copy where the driver can and in copy
 * mode otherwise (veth), with need_wakeup: a system call only when the
 * kernel asks for one, and in copy mode one per batch the kernel sends in a
 * call: 256 frames where it lets a socket raise its budget (Linux 6.17's
 * XDP_MAX_TX_SKB_BUDGET), else its default 32.
 *
 * Receiving (the first uskb_dev_rx) attaches a five-instruction XDP program
 * that redirects each queue to its socket, through a bpf_link: the kernel
 * detaches it when the device is closed or the process dies, however it
 * dies. Frames become skbs through rxzc.c: long ones keep their payload in
 * the UMEM frame, which goes back to the fill ring when the last skb on it
 * is freed (from any thread: a lock-free stack the receiving thread
 * drains), or is copied out past the patience.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/syscall.h>

#include "dev/priv.h"
#include "uskb/dev.h"

#ifndef USKB_HAVE_XDP

static int xdp_open(struct uskb_dev *dev, const char *arg)
{
	(void)dev;
	(void)arg;
	return __uskb_dev_fail(EOPNOTSUPP, "xdp: this uskb was built without libxdp (install libxdp-dev "
					 "and libbpf-dev, then rebuild)");
}

const struct uskb_dev_ops __uskb_dev_xdp_ops USKB_HIDDEN = { .type = "xdp", .open = xdp_open };

#else

#include <linux/bpf.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <linux/sockios.h>
#include <poll.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <bpf/bpf.h>
#include <xdp/xsk.h>

#include "dev/rxzc.h"

#define FRAME_SHIFT 12
#define FRAME_SIZE (1u << FRAME_SHIFT)
#define NFRAMES 4096
#define RX_FRAMES (NFRAMES / 2) /* frames 0 .. RX_FRAMES-1 receive, the rest transmit */
#define RING 2048
#define KICK_BATCH 32	/* frames the kernel sends per call in copy mode, by default */
#define KICK_BUDGET 256 /* what a socket asks it to send per call instead */
#ifndef XDP_MAX_TX_SKB_BUDGET
#define XDP_MAX_TX_SKB_BUDGET 9 /* Linux 6.17 */
#endif

struct xq {
	unsigned int qid; /* the interface's queue */
	struct xsk_umem *umem;
	struct xsk_socket *xsk;
	struct xsk_ring_prod fill, tx;
	struct xsk_ring_cons comp, rx;
	unsigned char *area;
	/* transmit */
	uint64_t tx_free[NFRAMES - RX_FRAMES];
	uint16_t tx_len[NFRAMES - RX_FRAMES]; /* of the frame in each TX frame, while in flight */
	unsigned int tx_nfree, tx_pending;
	unsigned int kick; /* frames a wake-up sends in copy mode: KICK_BUDGET or KICK_BATCH */
	struct uskb_dev_link link; /* the interface as this queue last saw it */
	bool tx_gone; /* the frames in flight were counted lost: no completion is taken any more */
	struct uskb_dev_link rx_link; /* the interface as the receiver last saw it */
	/* receive */
	bool rx_on;
	struct rxzc *zc;
	uint64_t next_patience;
	uint64_t alloc_drops; /* frames lost for want of an skb */
};

struct xdp_priv {
	char ifname[IF_NAMESIZE];
	int ifindex;
	unsigned int nq;
	bool zerocopy;
	int ctl_fd; /* for ioctls on the interface, in the open's network namespace */
	pthread_mutex_t attach_lock;
	int map_fd, prog_fd, link_fd;
	struct xq *q[];
};

static void queue_free(struct xq *q)
{
	if (!q)
		return;
	__uskb_rxzc_destroy(q->zc);
	if (q->xsk)
		xsk_socket__delete(q->xsk);
	if (q->umem)
		xsk_umem__delete(q->umem);
	if (q->area)
		munmap(q->area, (size_t)NFRAMES * FRAME_SIZE);
	free(q);
}

static void *frame_addr(void *owner, unsigned int i)
{
	return ((struct xq *)owner)->area + ((size_t)i << FRAME_SHIFT);
}

static int queue_open(struct xdp_priv *p, struct xq **out, unsigned int qid, int bind_mode)
{
	struct xsk_umem_config uc = {
		.fill_size = RING, .comp_size = RING, .frame_size = FRAME_SIZE,
		.frame_headroom = 0, .flags = 0,
	};
	struct xsk_socket_config sc = {
		.rx_size = RING, .tx_size = RING,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD, /* ours comes with rx */
		.bind_flags = (uint16_t)(XDP_USE_NEED_WAKEUP | bind_mode),
	};
	struct xq *q = calloc(1, sizeof(*q));
	int err;

	if (!q)
		return -ENOMEM;
	q->qid = qid;
	q->area = mmap(NULL, (size_t)NFRAMES * FRAME_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (q->area == MAP_FAILED) {
		q->area = NULL;
		err = -errno;
		goto fail;
	}
	err = xsk_umem__create(&q->umem, q->area, (uint64_t)NFRAMES * FRAME_SIZE, &q->fill, &q->comp,
			       &uc);
	if (err)
		goto fail;
	err = xsk_socket__create(&q->xsk, p->ifname, qid, q->umem, &q->rx, &q->tx, &sc);
	if (err)
		goto fail;
	/*
	 * Fewer wake-ups in copy mode: on veth a call costs as much as five
	 * frames do (2.2-2.4 us against ~420-820 ns a frame; docs/benchmarks.md,
	 * section 7). A kernel without the option refuses it: its default batch.
	 * Zero-copy keeps the default rhythm (the driver sends; not measured
	 * here).
	 */
	q->kick = KICK_BUDGET;
	if (bind_mode != XDP_COPY ||
	    setsockopt(xsk_socket__fd(q->xsk), SOL_XDP, XDP_MAX_TX_SKB_BUDGET, &q->kick,
		       sizeof(q->kick)))
		q->kick = KICK_BATCH;
	for (unsigned int i = 0; i < NFRAMES - RX_FRAMES; i++)
		q->tx_free[q->tx_nfree++] = (uint64_t)(RX_FRAMES + i) << FRAME_SHIFT;
	/* frames skbs give back (any thread) wait on its stack for refill() */
	q->zc = __uskb_rxzc_create(RX_FRAMES, 0, frame_addr, NULL, q);
	if (!q->zc) {
		err = -ENOMEM;
		goto fail;
	}
	*out = q;
	return 0;
fail:
	queue_free(q);
	return err < 0 ? err : -err;
}

static void tx_drain(struct xq *q);

static void xdp_close(struct uskb_dev *dev)
{
	struct xdp_priv *p = dev->priv;

	/* what the TX rings hold goes out before the sockets do */
	for (unsigned int i = 0; i < p->nq; i++)
		tx_drain(p->q[i]);

	/* the program first: no frame is redirected to a socket on its way out */
	if (p->link_fd >= 0)
		close(p->link_fd);
	for (unsigned int i = 0; i < p->nq; i++)
		queue_free(p->q[i]);
	if (p->prog_fd >= 0)
		close(p->prog_fd);
	if (p->map_fd >= 0)
		close(p->map_fd);
	if (p->ctl_fd >= 0)
		close(p->ctl_fd);
	pthread_mutex_destroy(&p->attach_lock);
	free(p);
}

#ifndef CAP_BPF
#define CAP_BPF 39
#endif

/* the effective capabilities an AF_XDP socket wants (root in a user namespace may lack them) */
static bool privileged(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { 0 };

	if (syscall(SYS_capget, &h, d))
		return false;
#define HAS(c) (d[(c) / 32].effective & (1u << ((c) % 32)))
	return HAS(CAP_NET_RAW) && HAS(CAP_NET_ADMIN) && (HAS(CAP_BPF) || HAS(CAP_SYS_ADMIN));
#undef HAS
}

static int xdp_open(struct uskb_dev *dev, const char *arg)
{
	char buf[64], *tok, *save = NULL;
	struct xdp_priv *p = NULL;
	unsigned int nq, first = 0, want = 0;
	int fd, err, mode = -1; /* XDP_COPY or XDP_ZEROCOPY as told; -1: zero-copy where it can */
	bool one = false;

	if (!arg || !*arg)
		return __uskb_dev_fail(EINVAL, "xdp: give an interface, as in xdp:eth0 or xdp:eth0:1");
	if (strlen(arg) >= sizeof(buf))
		return __uskb_dev_fail(EINVAL, "xdp: \"%s\" is too long", arg);
	snprintf(buf, sizeof(buf), "%s", arg);
	tok = strtok_r(buf, ":", &save);
	if (!tok || strlen(tok) >= IF_NAMESIZE)
		return __uskb_dev_fail(EINVAL, "xdp: \"%s\" is not an interface name", arg);
	while ((arg = strtok_r(NULL, ":", &save))) {
		char *end;
		unsigned long v = strtoul(arg, &end, 10);

		if (!strcmp(arg, "copy"))
			mode = XDP_COPY;
		else if (!strcmp(arg, "zc"))
			mode = XDP_ZEROCOPY;
		else if (*arg && !*end && v < 65536 && !one)
			one = true, want = (unsigned int)v;
		else
			return __uskb_dev_fail(EINVAL, "xdp:%s: \"%s\" is neither a queue number nor copy or zc",
					     tok, arg);
	}
	if (!if_nametoindex(tok))
		return __uskb_dev_fail(ENODEV, "xdp:%s: no such interface (ip link shows the ones there are)",
				     tok);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return __uskb_dev_fail(errno, "xdp:%s: socket: %s", tok, strerror(errno));
	err = __uskb_dev_probe_ether(dev, fd, "xdp", tok);
	if (err) {
		close(fd);
		return err;
	}
	nq = __uskb_dev_if_queues(tok);
	if (one) {
		if (want >= nq)
			return __uskb_dev_fail(EINVAL, "xdp:%s: no queue %u (it has %u: ethtool -L %s, or a veth "
						     "made with numtxqueues/numrxqueues)",
					     tok, want, nq, tok);
		first = want;
		nq = 1;
	}
	p = calloc(1, sizeof(*p) + nq * sizeof(p->q[0]));
	if (!p) {
		close(fd);
		return -ENOMEM;
	}
	snprintf(p->ifname, sizeof(p->ifname), "%s", tok);
	p->ifindex = (int)if_nametoindex(tok);
	p->ctl_fd = fd;
	p->map_fd = p->prog_fd = p->link_fd = -1;
	pthread_mutex_init(&p->attach_lock, NULL);
	for (unsigned int i = 0; i < nq; i++) {
		/* zero-copy where the driver has it, copy mode otherwise (unless told) */
		err = queue_open(p, &p->q[i], first + i, mode < 0 ? XDP_ZEROCOPY : mode);
		/* a socket closed just before lets go of the queue a moment later (deferred work) */
		for (int tries = 0; err == -EBUSY && tries < 100; tries++) {
			usleep(10000);
			err = queue_open(p, &p->q[i], first + i, mode < 0 ? XDP_ZEROCOPY : mode);
		}
		if (mode < 0 && (err == -EOPNOTSUPP || err == -EINVAL || err == -524 /* ENOTSUPP */))
			err = queue_open(p, &p->q[i], first + i, XDP_COPY);
		else if (mode < 0 && !err)
			p->zerocopy = true;
		if (err)
			break;
		p->q[i]->link.mtu = dev->mtu;
		p->nq = i + 1;
		if (mode == XDP_ZEROCOPY)
			p->zerocopy = true;
	}
	if (err) {
		unsigned int bad = first + p->nq; /* the queue that failed */

		err = -err;
		xdp_close(&(struct uskb_dev){ .priv = p });
		/* refused with the privileges: not a privilege it lacks but a policy (seccomp, an LSM) */
		if ((err == EPERM || err == EACCES) && privileged())
			return __uskb_dev_fail(err, "xdp:%s: AF_XDP refused by this kernel (%s, with the privileges: a "
					       "seccomp or LSM policy): use packet:%s", tok,
					       strerrorname_np(err), tok);
		if (err == EPERM || err == EACCES)
			return __uskb_dev_fail(EPERM, "xdp:%s: needs root (CAP_NET_RAW, CAP_BPF, CAP_NET_ADMIN)",
					     tok);
		if (mode == XDP_ZEROCOPY && (err == EOPNOTSUPP || err == EINVAL || err == 524))
			return __uskb_dev_fail(err, "xdp:%s: the driver has no zero-copy AF_XDP (leave out :zc)",
					     tok);
		if (err == EBUSY)
			return __uskb_dev_fail(err, "xdp:%s: queue %u is taken by another AF_XDP socket", tok,
					     bad);
		return __uskb_dev_fail(err, "xdp:%s: AF_XDP socket on queue %u: %s", tok, bad,
				     strerror(err));
	}
	dev->nqueues = dev->nrxqueues = nq;
	dev->features = USKB_DEV_F_SG | USKB_DEV_F_TX_SKB_SHARING | USKB_DEV_F_MTU;
	dev->priv = p;
	return 0;
}

/* ---- transmit ---- */

static void tx_reclaim(struct xq *q)
{
	uint32_t idx;
	unsigned int n;

	if (uskb_unlikely(q->tx_gone))
		return;
	n = xsk_ring_cons__peek(&q->comp, RING, &idx);

	for (unsigned int i = 0; i < n; i++)
		q->tx_free[q->tx_nfree++] = *xsk_ring_cons__comp_addr(&q->comp, idx + i);
	xsk_ring_cons__release(&q->comp, n);
}

/* the frames taken and never completed: lost once the interface is gone */
static void tx_lost(struct uskb_dev *dev, unsigned int queue, struct xq *q)
{
	bool free_[NFRAMES - RX_FRAMES] = { false };
	uint64_t frames = 0, bytes = 0;

	if (q->tx_gone)
		return;
	tx_reclaim(q);
	q->tx_gone = true;
	for (unsigned int i = 0; i < q->tx_nfree; i++)
		free_[(q->tx_free[i] >> FRAME_SHIFT) - RX_FRAMES] = true;
	for (unsigned int i = 0; i < NFRAMES - RX_FRAMES; i++)
		if (!free_[i]) {
			frames++;
			bytes += q->tx_len[i];
			q->tx_free[q->tx_nfree++] = (uint64_t)(RX_FRAMES + i) << FRAME_SHIFT;
		}
	__uskb_dev_tx_lost(dev, queue, frames, bytes, NULL);
}

/* a wake-up for the kernel's sending; one that says the interface went away stops the device */
static void tx_wakeup(struct uskb_dev *dev, unsigned int queue, struct xq *q)
{
	struct xdp_priv *p = dev->priv;

	if (sendto(xsk_socket__fd(q->xsk), NULL, 0, MSG_DONTWAIT, NULL, 0) < 0 &&
	    __uskb_dev_send_gone(dev, p->ctl_fd, &q->link, errno, "sendto"))
		tx_lost(dev, queue, q);
}

static void tx_kick(struct uskb_dev *dev, unsigned int queue, struct xq *q)
{
	q->tx_pending = 0;
	if (xsk_ring_prod__needs_wakeup(&q->tx))
		tx_wakeup(dev, queue, q);
}

/*
 * Push out everything on the TX ring: in copy mode each call sends a
 * batch, so go on while the kernel says there is more.
 */
static void tx_drain(struct xq *q)
{
	q->tx_pending = 0;
	for (unsigned int i = 0; i < RING / q->kick + 1 && xsk_ring_prod__needs_wakeup(&q->tx); i++)
		if (sendto(xsk_socket__fd(q->xsk), NULL, 0, MSG_DONTWAIT, NULL, 0) >= 0 || errno != EAGAIN)
			break;
	tx_reclaim(q);
}

static void xdp_flush(struct uskb_dev *dev, unsigned int queue)
{
	struct xdp_priv *p = dev->priv;
	struct xq *q = p->q[queue];

	/* frames submitted since the last kick, or left by a kick the kernel cut short */
	if (q->tx_pending || xsk_prod_nb_free(&q->tx, RING) < RING)
		tx_drain(q);
	/* a flush comes before the sender waits: the time to look at the interface */
	if (__uskb_dev_link_check(dev, p->ctl_fd, &q->link, USKB_LINK_IDLE))
		tx_lost(dev, queue, q);
}

static void xdp_xmit(struct uskb_dev *dev, unsigned int queue, struct uskb **skbs, int n, int *res)
{
	struct xdp_priv *p = dev->priv;
	struct xq *q = p->q[queue];
	int i;

	/*
	 * The interface gone or down: everything is dropped, the sender told by
	 * uskb_dev_running(). The kernel does not hold AF_XDP frames to the MTU:
	 * the check refreshes it, and too long frames are dropped here.
	 */
	if (uskb_unlikely(__uskb_dev_link_check(dev, p->ctl_fd, &q->link, USKB_LINK_HOT))) {
		tx_lost(dev, queue, q);
		__uskb_dev_drop_all(skbs, n, res);
		return;
	}
	if (q->tx_nfree < (unsigned int)n)
		tx_reclaim(q);
	for (i = 0; i < n; i++) {
		struct uskb *skb = skbs[i];
		struct xdp_desc *d;
		uint32_t idx;

		if (__uskb_dev_too_long(q->link.mtu, skb) || skb->len > FRAME_SIZE) {
			__uskb_dev_drop(dev, queue, skb, &res[i],
					skb->len > FRAME_SIZE ? "larger than a UMEM frame" :
								__uskb_dev_too_long_why(skb));
			continue;
		}
		if (!q->tx_nfree) {
			/* every frame in flight: push, take back what is done */
			tx_kick(dev, queue, q);
			tx_reclaim(q);
			if (!q->tx_nfree)
				break;
		}
		if (uskb_unlikely(q->tx_gone)) /* a kick found the interface gone: the rest go too */
			break;
		if (xsk_ring_prod__reserve(&q->tx, 1, &idx) != 1)
			break;
		d = xsk_ring_prod__tx_desc(&q->tx, idx);
		d->addr = q->tx_free[--q->tx_nfree];
		d->len = skb->len;
		d->options = 0;
		q->tx_len[(d->addr >> FRAME_SHIFT) - RX_FRAMES] = (uint16_t)skb->len;
		uskb_copy_bits(skb, 0, q->area + d->addr, (int)skb->len);
		xsk_ring_prod__submit(&q->tx, 1);
		res[i] = USKB_XMIT_OK;
		uskb_consume(skb);
		if (++q->tx_pending >= q->kick)
			tx_kick(dev, queue, q);
	}
	if (uskb_unlikely(q->tx_gone)) {
		__uskb_dev_drop_all(skbs + i, n - i, res + i);
		return;
	}
	for (; i < n; i++)
		res[i] = USKB_XMIT_BUSY;
}

/* ---- receive ---- */

/*
 * The redirect program, five instructions:
 *   r2 = ctx->rx_queue_index; r1 = &xsks; r3 = XDP_PASS;
 *   return bpf_redirect_map(r1, r2, r3)   (no socket on the queue: pass)
 */
static int load_prog(int map_fd)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_LDX | BPF_MEM | BPF_W, .dst_reg = BPF_REG_2, .src_reg = BPF_REG_1,
		  .off = offsetof(struct xdp_md, rx_queue_index) },
		{ .code = BPF_LD | BPF_DW | BPF_IMM, .dst_reg = BPF_REG_1,
		  .src_reg = BPF_PSEUDO_MAP_FD, .imm = map_fd },
		{ .code = 0 }, /* the second half of the 64-bit load */
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_3, .imm = XDP_PASS },
		{ .code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_redirect_map },
		{ .code = BPF_JMP | BPF_EXIT },
	};

	return bpf_prog_load(BPF_PROG_TYPE_XDP, "uskb_xsk", "Dual MIT/GPL", insns,
			     sizeof(insns) / sizeof(insns[0]), NULL);
}

/* once per device: the map, the program, the link (native XDP, else generic) */
static int attach(struct uskb_dev *dev, struct xdp_priv *p)
{
	int err = 0;

	pthread_mutex_lock(&p->attach_lock);
	if (p->link_fd >= 0)
		goto out;
	if (p->map_fd < 0)
		p->map_fd = bpf_map_create(BPF_MAP_TYPE_XSKMAP, "uskb_xsks", 4, 4,
					   p->q[p->nq - 1]->qid + 1, NULL);
	if (p->map_fd < 0) {
		err = __uskb_dev_fail(-p->map_fd, "xdp:%s: XSKMAP: %s (root? CAP_BPF)", p->ifname,
				    strerror(-p->map_fd));
		p->map_fd = -1;
		goto out;
	}
	if (p->prog_fd < 0)
		p->prog_fd = load_prog(p->map_fd);
	if (p->prog_fd < 0) {
		err = __uskb_dev_fail(-p->prog_fd, "xdp:%s: loading the XDP program: %s", p->ifname,
				    strerror(-p->prog_fd));
		p->prog_fd = -1;
		goto out;
	}
	for (int i = 0; i < 2; i++) {
		LIBBPF_OPTS(bpf_link_create_opts, lo, .flags = i ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE);

		p->link_fd = bpf_link_create(p->prog_fd, p->ifindex, BPF_XDP, &lo);
		if (p->link_fd >= 0 || p->link_fd == -EBUSY || p->link_fd == -EEXIST)
			break;
	}
	if (p->link_fd < 0) {
		err = p->link_fd == -EBUSY || p->link_fd == -EEXIST ?
			      __uskb_dev_fail(EBUSY, "xdp:%s: another XDP program is attached (ip link set "
						   "dev %s xdp off)",
					    p->ifname, p->ifname) :
			      __uskb_dev_fail(-p->link_fd, "xdp:%s: cannot attach an XDP program: %s",
					    p->ifname, strerror(-p->link_fd));
		p->link_fd = -1;
	}
out:
	pthread_mutex_unlock(&p->attach_lock);
	(void)dev;
	return err;
}

static void fill(struct xq *q, const uint32_t *frames, unsigned int n)
{
	uint32_t idx;

	/* the fill ring holds every receive frame: there is always room */
	if (!n || xsk_ring_prod__reserve(&q->fill, n, &idx) != n)
		return;
	for (unsigned int i = 0; i < n; i++)
		*xsk_ring_prod__fill_addr(&q->fill, idx + i) = (uint64_t)frames[i] << FRAME_SHIFT;
	xsk_ring_prod__submit(&q->fill, n);
	if (xsk_ring_prod__needs_wakeup(&q->fill))
		recvfrom(xsk_socket__fd(q->xsk), NULL, 0, MSG_DONTWAIT, NULL, NULL);
}

/* frames skbs gave back, into the fill ring */
static void refill(struct xq *q)
{
	uint32_t i = __uskb_rxzc_take(q->zc);
	uint32_t batch[64];
	unsigned int n = 0;

	for (; i != RXZC_NONE; i = rxzc_next(q->zc, i)) {
		batch[n++] = i;
		if (n == 64) {
			fill(q, batch, n);
			n = 0;
		}
	}
	fill(q, batch, n);
}

static int rx_start(struct uskb_dev *dev, struct xdp_priv *p, struct xq *q)
{
	uint32_t all[RX_FRAMES];
	int fd = xsk_socket__fd(q->xsk), err;

	if ((err = attach(dev, p)))
		return err;
	err = bpf_map_update_elem(p->map_fd, &q->qid, &fd, 0);
	if (err)
		return __uskb_dev_fail(errno, "xdp:%s: socket into the map: %s", p->ifname, strerror(errno));
	for (uint32_t i = 0; i < RX_FRAMES; i++)
		all[i] = i;
	fill(q, all, RX_FRAMES);
	q->rx_on = true;
	return 0;
}

/* the kernel's drops (its figures are totals) */
static void rx_counters(struct uskb_dev *dev, unsigned int queue, struct xq *q)
{
	struct xdp_statistics st;
	socklen_t len = sizeof(st);
	uint64_t drops = q->alloc_drops;

	/*
	 * rx_dropped counts a frame lost for want of a fill-ring frame (the
	 * fill-ring-empty figure counts the same events again) or too big;
	 * rx_ring_full one lost to a full RX ring.
	 */
	memset(&st, 0, sizeof(st));
	if (!getsockopt(xsk_socket__fd(q->xsk), SOL_XDP, XDP_STATISTICS, &st, &len))
		drops += st.rx_dropped + st.rx_ring_full;
	__atomic_store_n(&dev->qstats[queue].rx_dropped, drops, __ATOMIC_RELAXED);
}

static int xdp_rx(struct uskb_dev *dev, unsigned int queue, struct uskb **skbs, int max,
		  int timeout_ms)
{
	struct xdp_priv *p = dev->priv;
	struct xq *q = p->q[queue];
	uint64_t deadline = 0, now;
	int n = 0, err;

	if (uskb_unlikely(!uskb_dev_running(dev)))
		return __uskb_dev_rx_down(dev);
	if (!q->rx_on && (err = rx_start(dev, p, q)))
		return err;
	if (!q->rx_link.mtu)
		q->rx_link.mtu = dev->mtu;
	rxzc_tune(q->zc, dev->rx_patience_ms);
	for (;;) {
		uint32_t idx, mine[64];
		unsigned int got, nmine = 0;

		refill(q);
		got = xsk_ring_cons__peek(&q->rx, (uint32_t)(max - n < 64 ? max - n : 64), &idx);
		if (got) {
			now = uskb_mono_ns();
			for (unsigned int i = 0; i < got; i++) {
				const struct xdp_desc *d = xsk_ring_cons__rx_desc(&q->rx, idx + i);
				uint32_t f = (uint32_t)(d->addr >> FRAME_SHIFT);
				unsigned char *data = q->area + d->addr;
				struct uskb *skb;

				if (d->len < q->zc->copybreak) {
					/* short: copied, the frame straight back */
					skb = uskb_dev_alloc(d->len);
					if (skb) {
						uskb_put_data(skb, data, d->len);
						q->zc->copied++;
					}
					mine[nmine++] = f;
				} else {
					__uskb_rxzc_open(q->zc, f);
					skb = __uskb_rxzc_skb(q->zc, f, data, d->len);
					__uskb_rxzc_done(q->zc, f, now);
				}
				if (!skb) {
					q->alloc_drops++;
					continue;
				}
				__uskb_dev_rx_skb(dev, skb);
				skbs[n++] = skb;
			}
			xsk_ring_cons__release(&q->rx, got);
			fill(q, mine, nmine);
			if (n < max)
				continue;
		}
		if (n)
			break;
		if (!timeout_ms) {
			/* no waiting here (a multi-queue receiver): look at the interface now and then */
			if (__uskb_dev_link_check(dev, p->ctl_fd, &q->rx_link, USKB_LINK_IDLE))
				return __uskb_dev_rx_down(dev);
			break;
		}
		/* nothing: maybe held frames are what the kernel waits for */
		now = uskb_mono_ns();
		if (now >= q->next_patience) {
			__uskb_rxzc_patience(q->zc, now, RX_FRAMES / 4, RXZC_NONE);
			q->next_patience = now + 10 * 1000000ull;
		}
		if (timeout_ms > 0) {
			if (!deadline)
				deadline = now + (uint64_t)timeout_ms * 1000000ull;
			if (now >= deadline)
				break;
		}
		{
			struct pollfd pfd = { .fd = xsk_socket__fd(q->xsk), .events = POLLIN };
			int wait = timeout_ms < 0 ? 10 : (int)((deadline - now + 999999) / 1000000);

			if (wait > 10)
				wait = 10; /* a frame given back wakes nobody: look again soon */
			if (poll(&pfd, 1, wait) < 0 && errno == EINTR)
				return -EINTR;
			/* the interface went down or away: nothing will come */
			if (__uskb_dev_link_check(dev, p->ctl_fd, &q->rx_link,
						  pfd.revents & POLLERR ? USKB_LINK_NOW : USKB_LINK_IDLE))
				return __uskb_dev_rx_down(dev);
		}
	}
	now = uskb_mono_ns();
	if (now >= q->next_patience || !n) {
		/* every 10 ms, and when idle: a system call, not for each call */
		__uskb_rxzc_patience(q->zc, now, RX_FRAMES / 4, RXZC_NONE);
		rx_counters(dev, queue, q);
		q->next_patience = now + 10 * 1000000ull;
	}
	rxzc_publish(q->zc, &dev->qstats[queue]);
	return n;
}

const struct uskb_dev_ops __uskb_dev_xdp_ops USKB_HIDDEN = {
	.type = "xdp",
	.open = xdp_open,
	.close = xdp_close,
	.xmit = xdp_xmit,
	.flush = xdp_flush,
	.rx = xdp_rx,
};

#endif
