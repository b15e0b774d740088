/* SPDX-License-Identifier: MIT */
/*
 * xdp-live:IFNAME: frames sent from inside the kernel. The kernel runs an
 * XDP program on a frame we hand it, in live-frames mode (BPF_PROG_RUN with
 * BPF_F_TEST_XDP_LIVE_FRAMES, Linux 5.18+), and what the program returns
 * XDP_TX for leaves through the interface, as the kernel's own XDP
 * forwarding would send it. uskb_dev_xdp_run() runs a caller's program on
 * one frame many times over (uskb-pktgen's live program patches each copy);
 * xmit sends ordinary skbs, one run each, through a two-instruction
 * program. Needs only libbpf's syscall wrappers: nothing is attached to
 * the interface, and every object is a file descriptor that dies with the
 * process.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "dev/priv.h"

#ifndef USKB_HAVE_XDP

static int live_open(struct uskb_dev *dev, const char *arg)
{
	(void)dev;
	(void)arg;
	return __uskb_dev_fail(EOPNOTSUPP, "xdp-live: this uskb was built without libbpf (install "
					 "libbpf-dev, then rebuild)");
}

const struct uskb_dev_ops __uskb_dev_xdp_live_ops USKB_HIDDEN = { .type = "xdp-live",
								  .open = live_open };

int uskb_dev_xdp_run(struct uskb_dev *dev, unsigned int queue, int prog_fd, const void *frame,
		     unsigned int len, uint32_t repeat, uint32_t batch, const volatile uint64_t *sent)
{
	(void)dev, (void)queue, (void)prog_fd, (void)frame, (void)len, (void)repeat, (void)batch,
		(void)sent;
	return -EOPNOTSUPP;
}

#else

#include <linux/bpf.h>
#include <bpf/bpf.h>

/* the largest frame a live run takes: a page less XDP's headroom and the shared info */
#define LIVE_MAX_FRAME 3520

struct lq {
	struct uskb_dev_link link; /* the interface as this queue last saw it */
	unsigned char frame[LIVE_MAX_FRAME];
};

struct live_priv {
	char ifname[IF_NAMESIZE];
	int ctl_fd; /* for ioctls on the interface, in the open's network namespace */
	int tx_fd;  /* the program xmit runs: return XDP_TX */
	unsigned int nq;
	struct lq *q[];
};

/* a two-instruction XDP program: return @action */
static int load_const(int action)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = action },
		{ .code = BPF_JMP | BPF_EXIT },
	};

	return bpf_prog_load(BPF_PROG_TYPE_XDP, action == XDP_TX ? "uskb_live_tx" : "uskb_live_drop",
			     "Dual MIT/GPL", insns, 2, NULL);
}

/* one live run: 0 or -errno */
static int run(const struct uskb_dev *dev, unsigned int queue, int prog_fd, const void *frame,
	       unsigned int len, uint32_t repeat, uint32_t batch)
{
	struct xdp_md ctx = { .data_end = len, .ingress_ifindex = dev->ifindex, .rx_queue_index = queue };
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = len, .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx), .repeat = repeat, .batch_size = batch,
		    .flags = BPF_F_TEST_XDP_LIVE_FRAMES);

	/* libbpf before 1.0 returns -1 and sets errno; later ones return -errno (and set errno) */
	return bpf_prog_test_run_opts(prog_fd, &o) ? -errno : 0;
}

static void live_close(struct uskb_dev *dev)
{
	struct live_priv *p = dev->priv;

	if (!p)
		return;
	for (unsigned int i = 0; i < p->nq; i++)
		free(p->q[i]);
	if (p->tx_fd >= 0)
		close(p->tx_fd);
	if (p->ctl_fd >= 0)
		close(p->ctl_fd);
	free(p);
}

static int live_open(struct uskb_dev *dev, const char *arg)
{
	unsigned char probe[64] = { 0 };
	struct live_priv *p;
	int fd, err, drop;
	unsigned int nq;

	if (!arg || !*arg)
		return __uskb_dev_fail(EINVAL, "xdp-live: give an interface, as in xdp-live:eth0");
	if (strlen(arg) >= IF_NAMESIZE || strchr(arg, ':'))
		return __uskb_dev_fail(EINVAL, "xdp-live: \"%s\" is not an interface name", arg);
	if (!if_nametoindex(arg))
		return __uskb_dev_fail(ENODEV, "xdp-live:%s: no such interface (ip link shows the ones "
					       "there are)", arg);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return __uskb_dev_fail(errno, "xdp-live:%s: socket: %s", arg, strerror(errno));
	err = __uskb_dev_probe_ether(dev, fd, "xdp-live", arg);
	if (err) {
		close(fd);
		return err;
	}
	nq = __uskb_dev_if_queues(arg);
	p = calloc(1, sizeof(*p) + nq * sizeof(p->q[0]));
	if (!p) {
		close(fd);
		return -ENOMEM;
	}
	snprintf(p->ifname, sizeof(p->ifname), "%s", arg);
	p->ctl_fd = fd;
	p->tx_fd = -1;
	dev->priv = p;
	for (unsigned int i = 0; i < nq; i++) {
		p->q[i] = calloc(1, sizeof(*p->q[i]));
		if (!p->q[i]) {
			live_close(dev);
			return -ENOMEM;
		}
		p->q[i]->link.mtu = dev->mtu;
		p->nq = i + 1;
	}
	p->tx_fd = load_const(XDP_TX);
	if (p->tx_fd < 0) {
		err = -p->tx_fd;
		p->tx_fd = -1;
		live_close(dev);
		if (err == EPERM || err == EACCES)
			return __uskb_dev_fail(EPERM, "xdp-live:%s: loading an XDP program needs root "
						      "(CAP_BPF and CAP_NET_ADMIN, or CAP_SYS_ADMIN)", arg);
		return __uskb_dev_fail(err, "xdp-live:%s: loading an XDP program: %s", arg, strerror(err));
	}
	/* does this kernel run live frames? Ask with a program that drops the one frame */
	drop = load_const(XDP_DROP);
	memcpy(probe, dev->mac, 6);
	memcpy(probe + 6, dev->mac, 6);
	err = drop < 0 ? drop : run(dev, 0, drop, probe, sizeof(probe), 1, 0);
	if (drop >= 0)
		close(drop);
	if (err) {
		live_close(dev);
		if (err == -EINVAL || err == -EOPNOTSUPP || err == -524 /* ENOTSUPP */)
			return __uskb_dev_fail(EOPNOTSUPP, "xdp-live:%s: this kernel does not run XDP live "
							  "frames (BPF_F_TEST_XDP_LIVE_FRAMES, Linux "
							  "5.18 and later): use xdp:%s", arg, arg);
		/*
		 * The program loaded, so this is no lack of privilege: a policy
		 * refuses the run itself (a kernel lockdown, a BPF LSM, an
		 * seccomp filter), even to root with every capability.
		 */
		if (err == -EPERM || err == -EACCES)
			return __uskb_dev_fail(EPERM, "xdp-live:%s: live frames refused by this kernel "
						      "(BPF_PROG_RUN with BPF_F_TEST_XDP_LIVE_FRAMES: %s; "
						      "a lockdown or a BPF LSM policy does this): use xdp:%s",
					       arg, strerrorname_np(-err), arg);
		return __uskb_dev_fail(-err, "xdp-live:%s: a live-frames run: %s", arg, strerror(-err));
	}
	dev->nqueues = nq;
	dev->features = USKB_DEV_F_MTU | USKB_DEV_F_SG | USKB_DEV_F_TX_SKB_SHARING | USKB_DEV_F_XDP_RUN;
	return 0;
}

/* the interface still there and up (it fails and says why otherwise) */
static int live_link(struct uskb_dev *dev, struct live_priv *p, unsigned int queue,
		     enum uskb_link_when when)
{
	return __uskb_dev_link_check(dev, p->ctl_fd, &p->q[queue]->link, when);
}

/* a run failed: the interface gone (the device is down), or the error kept for the caller */
static int run_failed(struct uskb_dev *dev, struct live_priv *p, unsigned int queue, int err)
{
	if (err == -EINTR)
		return err;
	if (__uskb_dev_send_gone(dev, p->ctl_fd, &p->q[queue]->link, -err, "BPF_PROG_RUN"))
		return -ENETDOWN;
	/* the interface may have gone in a way the run did not say (it names no device) */
	if (live_link(dev, p, queue, USKB_LINK_NOW))
		return -ENETDOWN;
	__uskb_dev_error(dev, "xdp-live:%s: queue %u: BPF_PROG_RUN: %s", p->ifname, queue,
			 strerror(-err));
	return err;
}

static void live_xmit(struct uskb_dev *dev, unsigned int queue, struct uskb **skbs, int n, int *res)
{
	struct live_priv *p = dev->priv;
	struct lq *q = p->q[queue];

	if (uskb_unlikely(live_link(dev, p, queue, USKB_LINK_HOT))) {
		__uskb_dev_drop_all(skbs, n, res);
		return;
	}
	for (int i = 0; i < n; i++) {
		struct uskb *skb = skbs[i];
		int err;

		if (__uskb_dev_too_long(q->link.mtu, skb) || skb->len > LIVE_MAX_FRAME || skb->len < 14) {
			__uskb_dev_drop(dev, queue, skb, &res[i],
					skb->len > LIVE_MAX_FRAME ? "larger than a live frame" :
					skb->len < 14		  ? "shorter than an Ethernet header" :
								    __uskb_dev_too_long_why(skb));
			continue;
		}
		uskb_copy_bits(skb, 0, q->frame, (int)skb->len);
		err = run(dev, queue, p->tx_fd, q->frame, skb->len, 1, 1);
		/*
		 * The kernel looks for signals only between batches, after the
		 * count is checked: a one-frame run is never cut short, so an
		 * EINTR means it did not run. Try again later.
		 */
		if (err == -EINTR) {
			for (; i < n; i++)
				res[i] = USKB_XMIT_BUSY;
			return;
		}
		if (err) {
			err = run_failed(dev, p, queue, err);
			__uskb_dev_drop_all(skbs + i, 1, res + i);
			if (err == -ENETDOWN) {
				__uskb_dev_drop_all(skbs + i + 1, n - i - 1, res + i + 1);
				return;
			}
			continue;
		}
		res[i] = USKB_XMIT_OK;
		uskb_consume(skb);
	}
}

int uskb_dev_xdp_run(struct uskb_dev *dev, unsigned int queue, int prog_fd, const void *frame,
		     unsigned int len, uint32_t repeat, uint32_t batch, const volatile uint64_t *sent)
{
	struct live_priv *p = dev->priv;
	struct uskb_dev_stats *qs;
	uint64_t before, frames;
	int err;

	if (dev->ops != &__uskb_dev_xdp_live_ops)
		return -EOPNOTSUPP;
	if (uskb_unlikely(queue >= dev->nqueues))
		uskb_bug("dev_xdp_run", NULL, "%s has no queue %u", dev->name, queue);
	if (!repeat)
		return 0;
	if (live_link(dev, p, queue, USKB_LINK_IDLE))
		return -ENETDOWN;
	if (len < 14 || len > LIVE_MAX_FRAME || len > p->q[queue]->link.mtu + 14 + 4) {
		__uskb_dev_error(dev, "xdp-live:%s: queue %u: a frame of %u bytes does not fit the MTU %u",
				 p->ifname, queue, len, p->q[queue]->link.mtu);
		return -EMSGSIZE;
	}
	before = sent ? *sent : 0;
	err = run(dev, queue, prog_fd, frame, len, repeat, batch);
	frames = sent ? *sent - before : err ? 0 : repeat;
	if (err)
		err = run_failed(dev, p, queue, err);
	qs = dev->qstats ? &dev->qstats[queue] : NULL;
	if (qs && frames) {
		uskb_count_add(&qs->tx_packets, frames);
		uskb_count_add(&qs->tx_bytes, frames * len);
	}
	return err;
}

const struct uskb_dev_ops __uskb_dev_xdp_live_ops USKB_HIDDEN = {
	.type = "xdp-live", .open = live_open, .close = live_close, .xmit = live_xmit
};

#endif
