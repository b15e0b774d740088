/* SPDX-License-Identifier: MIT */
/*
 * The device layer: the registry of device types (built-in and registered),
 * open and close, burst transmit and receive with per-queue counters, and
 * the errors devices report.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <net/if.h>

#include "dev/priv.h"

/* why the calling thread's last open (or uskb_dev_spec_receives()) failed */
static __thread char dev_err[256];

int __uskb_dev_fail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(dev_err, sizeof(dev_err), fmt, ap);
	va_end(ap);
	return -err;
}

const char *__uskb_dev_fail_text(void)
{
	return dev_err;
}

bool uskb_dev_running(const struct uskb_dev *dev)
{
	return !__atomic_load_n(&dev->__down, __ATOMIC_RELAXED);
}

const char *uskb_dev_strerror(void)
{
	return dev_err[0] ? dev_err : "no error";
}

/* a device's last error: written by its queues' threads, read by anyone */
static pthread_mutex_t err_lock = PTHREAD_MUTEX_INITIALIZER;

void __uskb_dev_error(struct uskb_dev *dev, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&err_lock);
	va_start(ap, fmt);
	vsnprintf(dev->last_error, sizeof(dev->last_error), fmt, ap);
	va_end(ap);
	pthread_mutex_unlock(&err_lock);
}

int uskb_dev_last_error(const struct uskb_dev *dev, char *buf, size_t len)
{
	int n;

	if (!dev || !buf || !len)
		return -EINVAL;
	pthread_mutex_lock(&err_lock);
	n = snprintf(buf, len, "%s", dev->last_error);
	pthread_mutex_unlock(&err_lock);
	return n;
}

/* numbers devices, so a report cache never mistakes a new device for an old one */
static atomic_ullong open_ids;

/* ---- the registry ---- */

#define MAX_TYPES 32

static const struct uskb_dev_ops *const builtin[] = {
	&__uskb_dev_null_ops, &__uskb_dev_pcap_ops, &__uskb_dev_packet_ops, &__uskb_dev_xdp_ops,
	&__uskb_dev_udp_ops,  &__uskb_dev_tcp_ops,  &__uskb_dev_unix_ops, &__uskb_dev_tap_ops,
	&__uskb_dev_xdp_live_ops,
};

static struct {
	pthread_mutex_t lock;
	unsigned int n;
	const struct uskb_dev_ops *ops[MAX_TYPES];
} reg = { .lock = PTHREAD_MUTEX_INITIALIZER };

static bool type_is(const struct uskb_dev_ops *ops, const char *type, size_t len)
{
	return strlen(ops->type) == len && !strncmp(type, ops->type, len);
}

/* the type named by @len bytes of @type; registered ones under reg.lock */
static const struct uskb_dev_ops *find_locked(const char *type, size_t len)
{
	unsigned int i;

	for (i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++)
		if (type_is(builtin[i], type, len))
			return builtin[i];
	for (i = 0; i < reg.n; i++)
		if (type_is(reg.ops[i], type, len))
			return reg.ops[i];
	return NULL;
}

static const struct uskb_dev_ops *find_type(const char *type, size_t len)
{
	const struct uskb_dev_ops *ops;

	pthread_mutex_lock(&reg.lock);
	ops = find_locked(type, len);
	pthread_mutex_unlock(&reg.lock);
	return ops;
}

int uskb_dev_register(const struct uskb_dev_ops *ops)
{
	int err = 0;

	if (!ops || !ops->type || !*ops->type || strchr(ops->type, ':') || !ops->open ||
	    !ops->xmit)
		return -EINVAL;
	pthread_mutex_lock(&reg.lock);
	if (find_locked(ops->type, strlen(ops->type)))
		err = -EEXIST;
	else if (reg.n == MAX_TYPES)
		err = -ENOSPC;
	else
		reg.ops[reg.n++] = ops;
	pthread_mutex_unlock(&reg.lock);
	return err;
}

/* the type @spec names: a registered or built-in one, or packet: for a bare interface name */
static const struct uskb_dev_ops *spec_type(const char *spec, const char **arg)
{
	const char *colon = strchr(spec, ':');
	size_t tlen = colon ? (size_t)(colon - spec) : strlen(spec);
	const struct uskb_dev_ops *ops = find_type(spec, tlen);

	*arg = colon ? colon + 1 : NULL;
	if (!ops && !colon && if_nametoindex(spec)) {
		ops = &__uskb_dev_packet_ops;
		*arg = spec;
	}
	return ops;
}

/* @spec (not empty) names no device type nor interface: errno and the thread's error say so */
static void no_device(const char *spec)
{
	if (!strchr(spec, ':'))
		errno = -__uskb_dev_fail(ENODEV,
					 "%s: no such interface (ip link shows the ones there "
					 "are), nor a device type: use null, pcap:FILE, "
					 "packet:IFNAME, xdp:IFNAME, xdp-live:IFNAME, "
					 "udp:HOST:PORT, tcp:HOST:PORT, unix:PATH or tap:IFNAME",
					 spec);
	else
		errno = -__uskb_dev_fail(EINVAL,
					 "unknown device \"%s\": use null, pcap:FILE, "
					 "packet:IFNAME, xdp:IFNAME, xdp-live:IFNAME, "
					 "udp:HOST:PORT, tcp:HOST:PORT, unix:PATH, tap:IFNAME "
					 "or an interface name",
					 spec);
}

bool uskb_dev_spec_receives(const char *spec)
{
	const struct uskb_dev_ops *ops;
	const char *arg;

	/* (the thread's error is written only when there is no device: errno says which) */
	errno = 0;
	if (!spec || !*spec) {
		errno = -__uskb_dev_fail(EINVAL, "no device given");
		return false;
	}
	ops = spec_type(spec, &arg);
	if (!ops)
		no_device(spec);
	return ops && ops->rx;
}

struct uskb_dev *uskb_dev_open(const char *spec)
{
	const struct uskb_dev_ops *ops;
	struct uskb_dev *dev;
	const char *arg;
	int err;

	dev_err[0] = 0;
	if (!spec || !*spec) {
		errno = -__uskb_dev_fail(EINVAL, "no device given");
		return NULL;
	}
	ops = spec_type(spec, &arg);
	if (!ops) {
		no_device(spec);
		return NULL;
	}
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;
	snprintf(dev->name, sizeof(dev->name), "%s", spec);
	dev->__open_id = atomic_fetch_add_explicit(&open_ids, 1, memory_order_relaxed) + 1;
	dev->ops = ops;
	dev->mtu = 1500;
	dev->nqueues = 1;
	dev->rx_patience_ms = 100;
	memcpy(dev->mac, "\x02\x00\x00\x00\x00\x01", 6);
	err = dev->ops->open(dev, arg);
	if (err) {
		free(dev);
		errno = -err;
		return NULL;
	}
	dev->qstats = aligned_alloc(64, dev->nqueues * sizeof(*dev->qstats));
	if (!dev->qstats) {
		if (dev->ops->close)
			dev->ops->close(dev);
		free(dev);
		errno = ENOMEM;
		return NULL;
	}
	memset(dev->qstats, 0, dev->nqueues * sizeof(*dev->qstats));
	return dev;
}

void uskb_dev_close(struct uskb_dev *dev)
{
	if (!dev)
		return;
	if (dev->ops->close)
		dev->ops->close(dev);
	free(dev->qstats);
	free(dev);
}

int uskb_dev_xmit(struct uskb_dev *dev, unsigned int queue, struct uskb **skbs, int n, int *res)
{
	int local[64], i, ok = 0, dropped = 0, done = 0;
	unsigned int lens[64];
	struct uskb_dev_stats *q;
	uint64_t bytes = 0;

	if (uskb_unlikely(queue >= dev->nqueues))
		uskb_bug("dev_xmit", NULL, "%s has no queue %u", dev->name, queue);
	/* in chunks of 64: the lengths are read before the device consumes the skbs */
	while (done < n) {
		int k = n - done < 64 ? n - done : 64;
		int *r = res ? res + done : local;

		for (i = 0; i < k; i++) {
			struct uskb *skb = skbs[done + i];

			/* a nonlinear skb needs a scatter-gather device (the stack linearizes) */
			if (uskb_unlikely(uskb_is_nonlinear(skb) && !(dev->features & USKB_DEV_F_SG)))
				uskb_bug("dev_xmit", skb, "paged skb to %s, which has no SG", dev->name);
			lens[i] = skb->len;
		}
		dev->ops->xmit(dev, queue, skbs + done, k, r);
		for (i = 0; i < k; i++) {
			if (r[i] == USKB_XMIT_OK) {
				ok++;
				bytes += lens[i];
			} else if (r[i] == USKB_XMIT_DROP) {
				dropped++;
			}
		}
		done += k;
		/* busy (a tail): the later chunks wait too, or they would pass it */
		if (r[k - 1] == USKB_XMIT_BUSY) {
			for (i = done; res && i < n; i++)
				res[i] = USKB_XMIT_BUSY;
			break;
		}
	}
	if (uskb_unlikely(!dev->qstats)) /* a device built by hand, without counters */
		return ok;
	q = &dev->qstats[queue];
	uskb_count_add(&q->tx_packets, (uint64_t)ok);
	uskb_count_add(&q->tx_bytes, bytes);
	uskb_count_add(&q->tx_dropped, (uint64_t)dropped);
	uskb_count_add(&q->tx_busy, (uint64_t)(n - ok - dropped));
	uskb_dev_tx_settle(q);
	return ok;
}

int uskb_dev_rx(struct uskb_dev *dev, unsigned int queue, struct uskb **skbs, int max,
		int timeout_ms)
{
	uint64_t bytes = 0;
	int n, i;

	if (!dev->ops->rx)
		return -EOPNOTSUPP;
	if (uskb_unlikely(queue >= dev->nqueues))
		uskb_bug("dev_rx", NULL, "%s has no queue %u", dev->name, queue);
	if (queue >= dev->nrxqueues)
		return -EOPNOTSUPP;
	if (max <= 0)
		return 0;
	dev_err[0] = 0;
	n = dev->ops->rx(dev, queue, skbs, max, timeout_ms);
	/*
	 * unlikely: a receive that failed says why in the device too; not a
	 * down device's, whose failure repeats the reason it keeps already
	 * (and would wrap it again at every call)
	 */
	if (uskb_unlikely(n < 0 && n != -EINTR) && uskb_dev_running(dev)) {
		char buf[64];

		__uskb_dev_error(dev, "queue %u: %s", queue,
				 dev_err[0] ? dev_err : strerror_r(-n, buf, sizeof(buf)));
	}
	for (i = 0; i < n; i++)
		bytes += skbs[i]->len;
	if (n > 0 && dev->qstats) {
		uskb_count_add(&dev->qstats[queue].rx_packets, (uint64_t)n);
		uskb_count_add(&dev->qstats[queue].rx_bytes, bytes);
	}
	return n;
}

void uskb_dev_get_stats(const struct uskb_dev *dev, int queue, struct uskb_dev_stats *st)
{
	unsigned int q = queue < 0 ? 0 : (unsigned int)queue;
	unsigned int end = queue < 0 ? dev->nqueues : q + 1;

	memset(st, 0, sizeof(*st));
	if (end > dev->nqueues || !dev->qstats)
		return;
	for (; q < end; q++) {
		const uint64_t *from = (const uint64_t *)&dev->qstats[q];
		uint64_t *to = (uint64_t *)st;

		/* relaxed loads: each counter has one writer, and a moment's figure is enough */
		for (size_t i = 0; i < offsetof(struct uskb_dev_stats, __tx_unsent) / 8; i++)
			to[i] += __atomic_load_n(&from[i], __ATOMIC_RELAXED);
	}
}

void uskb_dev_flush(struct uskb_dev *dev, unsigned int queue)
{
	if (!dev->ops->flush)
		return;
	dev->ops->flush(dev, queue);
	if (dev->qstats)
		uskb_dev_tx_settle(&dev->qstats[queue]);
}

void uskb_dev_drain(struct uskb_dev *dev, unsigned int queue, int timeout_ms)
{
	if (dev->ops->flush)
		dev->ops->flush(dev, queue);
	__uskb_sk_drain(dev, timeout_ms < 0 ? 0 : timeout_ms);
	if (dev->qstats)
		uskb_dev_tx_settle(&dev->qstats[queue]);
}
