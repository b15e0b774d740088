/* SPDX-License-Identifier: MIT */
/*
 * uskb-pktgen engine: the public uskb_pktgen_* calls on the kernel pktgen's
 * files (pgctrl, kpktgend_N, one per device), the thread commands and the
 * devices the engine's pktgen_devs send on, with the kernel 6.1 behaviour
 * the golden captures show. Differences are listed in docs/pktgen.md.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pg.h"

/* pktgen_if_write() */
static int dev_write(struct pg_dev *d, const char *cmd)
{
	int err = __uskb_pg_parse(&d->p, cmd, d->result, sizeof(d->result));

	if (err == PG_CLEAR_COUNTERS) {
		__uskb_pg_clear_counters(d);
		err = 0;
	}
	return err;
}

/* ---- devices on threads ---- */

static struct pg_dev *find_dev(struct uskb_pktgen *pg, const char *name)
{
	for (int i = 0; i < pg->nthreads; i++)
		for (struct pg_dev *d = pg->threads[i].devs; d; d = d->next)
			if (!strcmp(d->odevname, name))
				return d;
	return NULL;
}

static void netdev_put(struct uskb_pktgen *pg, struct pg_netdev *nd)
{
	if (--nd->users > 0 || !nd->owned)
		return;
	for (struct pg_netdev **pp = &pg->netdevs; *pp; pp = &(*pp)->next)
		if (*pp == nd) {
			*pp = nd->next;
			break;
		}
	__uskb_pg_locks_free(nd);
	uskb_dev_close(nd->dev);
	free(nd);
}

static struct pg_netdev *netdev_get(struct uskb_pktgen *pg, const char *base)
{
	struct pg_netdev *nd;

	for (nd = pg->netdevs; nd; nd = nd->next)
		if (!strcmp(nd->name, base)) {
			nd->users++;
			return nd;
		}
	nd = calloc(1, sizeof(*nd));
	if (!nd)
		return NULL;
	nd->dev = uskb_dev_open(base);
	if (!nd->dev || __uskb_pg_locks_init(nd)) {
		uskb_dev_close(nd->dev);
		free(nd);
		return NULL;
	}
	snprintf(nd->name, sizeof(nd->name), "%s", base);
	nd->owned = true;
	nd->users = 1;
	nd->next = pg->netdevs;
	pg->netdevs = nd;
	return nd;
}

static void dev_remove(struct uskb_pktgen *pg, struct pg_dev *d)
{
	if (d->skb)
		uskb_free(d->skb);
	free(d->flows);
	free(d->tmpl);
	free(d->drop0);
	netdev_put(pg, d->nd);
	free(d);
}

static void rem_all(struct uskb_pktgen *pg, struct pg_thread *t)
{
	while (t->devs) {
		struct pg_dev *d = t->devs;

		t->devs = d->next;
		dev_remove(pg, d);
	}
}

static int add_device(struct uskb_pktgen *pg, struct pg_thread *t, const char *ifname)
{
	char base[NAME_SZ];
	struct pg_dev *d;
	size_t n;

	if (find_dev(pg, ifname))
		return -EBUSY;
	n = strcspn(ifname, "@");
	if (!n || n >= sizeof(base))
		return -EINVAL;
	memcpy(base, ifname, n);
	base[n] = 0;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->nd = netdev_get(pg, base);
	if (!d->nd) {
		int err = errno ? -errno : -ENODEV;

		free(d);
		return err;
	}
	snprintf(d->odevname, sizeof(d->odevname), "%s", ifname);
	d->t = t;
	__uskb_pg_defaults(&d->p);
	d->p.shared_skbs = d->nd->dev->features & USKB_DEV_F_TX_SKB_SHARING;
	d->rng = (pg->seeded ? pg->seed : uskb_mono_ns()) + 0x9E3779B97F4A7C15ull * ++pg->ndevs_made;
	if (!d->rng)
		d->rng = 1;
	d->next = t->devs;
	t->devs = d;
	return 0;
}

static int thread_write(struct uskb_pktgen *pg, struct pg_thread *t, const char *buf)
{
	char name[40];
	const char *v = __uskb_pg_split(buf, name, sizeof(name));
	int err;

	if (!strcmp(name, "add_device")) {
		char f[NAME_SZ + 1];

		/* one character more than a name may have: a longer one is refused, never cut */
		__uskb_pg_word(f, sizeof(f), v);
		if (strlen(f) >= NAME_SZ) {
			snprintf(t->result, RESULT_SZ, "ERROR: device name longer than %d characters: %.40s...",
				 NAME_SZ - 1, f);
			return -ENAMETOOLONG;
		}
		err = add_device(pg, t, f);
		if (!err)
			snprintf(t->result, RESULT_SZ, "OK: add_device=%s", f);
		else
			snprintf(t->result, RESULT_SZ, "ERROR: can not add device %s", f);
		return err;
	}
	if (!strcmp(name, "rem_device_all")) {
		rem_all(pg, t);
		snprintf(t->result, RESULT_SZ, "OK: rem_device_all");
		return 0;
	}
	if (!strcmp(name, "max_before_softirq")) {
		snprintf(t->result, RESULT_SZ, "OK: Note! max_before_softirq is obsoleted -- Do not use");
		return 0;
	}
	return -EINVAL;
}

/* ---- the public side ---- */

struct uskb_pktgen *uskb_pktgen_new(const struct uskb_pktgen_opts *opts)
{
	struct uskb_pktgen_opts o = opts ? *opts : (struct uskb_pktgen_opts){ 0 };
	long ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct uskb_pktgen *pg;
	int n;

	if (ncpus < 1)
		ncpus = 1;
	n = o.nthreads > 0 ? o.nthreads : (int)ncpus;
	if (o.nthreads < 0 || n > 4096) {
		errno = EINVAL;
		return NULL;
	}
	pg = calloc(1, sizeof(*pg) + (size_t)n * sizeof(pg->threads[0]));
	if (!pg)
		return NULL;
	pg->nthreads = n;
	pg->ncpus = (int)ncpus;
	pg->pin = !o.no_pin;
	pg->seeded = o.seeded;
	pg->seed = o.seed;
	pg->live_stop_fd = -1;
	pthread_mutex_init(&pg->lock, NULL);
	for (int i = 0; i < n; i++) {
		pg->threads[i].pg = pg;
		pg->threads[i].id = i;
		pg->threads[i].cpu = i % (int)ncpus;
	}
	return pg;
}

void uskb_pktgen_free(struct uskb_pktgen *pg)
{
	if (!pg)
		return;
	for (int i = 0; i < pg->nthreads; i++)
		rem_all(pg, &pg->threads[i]);
	while (pg->netdevs) { /* registered devices stay the caller's */
		struct pg_netdev *nd = pg->netdevs;

		pg->netdevs = nd->next;
		__uskb_pg_locks_free(nd);
		if (nd->owned)
			uskb_dev_close(nd->dev);
		free(nd);
	}
	__uskb_pg_live_free(pg);
	pthread_mutex_destroy(&pg->lock);
	free(pg);
}

int uskb_pktgen_nthreads(const struct uskb_pktgen *pg)
{
	return pg->nthreads;
}

int uskb_pktgen_register_dev(struct uskb_pktgen *pg, const char *name, struct uskb_dev *dev)
{
	struct pg_netdev *nd;

	if (!name || !*name || strlen(name) >= NAME_SZ || strchr(name, '@') || !dev || !dev->ops ||
	    !dev->ops->xmit || !dev->nqueues)
		return -EINVAL;
	for (nd = pg->netdevs; nd; nd = nd->next)
		if (!strcmp(nd->name, name))
			return -EEXIST;
	nd = calloc(1, sizeof(*nd));
	if (!nd)
		return -ENOMEM;
	snprintf(nd->name, sizeof(nd->name), "%s", name);
	nd->dev = dev;
	if (__uskb_pg_locks_init(nd)) {
		free(nd);
		return -ENOMEM;
	}
	nd->next = pg->netdevs;
	pg->netdevs = nd;
	return 0;
}

static struct pg_thread *thread_by_name(struct uskb_pktgen *pg, const char *file)
{
	char *end;
	long id;

	if (strncmp(file, "kpktgend_", 9) || !isdigit((unsigned char)file[9]))
		return NULL;
	id = strtol(file + 9, &end, 10);
	if (*end || id < 0 || id >= pg->nthreads)
		return NULL;
	return &pg->threads[id];
}

int uskb_pktgen_write(struct uskb_pktgen *pg, const char *file, const char *cmd)
{
	struct pg_thread *t;
	struct pg_dev *d;
	int err = -ENOENT;

	if (!file || !cmd)
		return -EINVAL;
	if (!strcmp(file, "pgctrl")) {
		char w[16];

		__uskb_pg_split(cmd, w, sizeof(w));
		if (!strcmp(w, "stop")) {
			if (atomic_load(&pg->running))
				uskb_pktgen_stop(pg);
			return 0;
		}
		if (strcmp(w, "start") && strcmp(w, "reset"))
			return -EINVAL;
		pthread_mutex_lock(&pg->lock);
		if (atomic_load(&pg->running)) {
			err = -EBUSY;
		} else if (w[0] == 's') {
			err = __uskb_pg_run(pg);
		} else {
			for (int i = 0; i < pg->nthreads; i++)
				rem_all(pg, &pg->threads[i]);
			err = 0;
		}
		pthread_mutex_unlock(&pg->lock);
		return err;
	}
	if (!*cmd)
		return -EINVAL;
	pthread_mutex_lock(&pg->lock);
	if ((t = thread_by_name(pg, file)))
		err = atomic_load(&pg->running) ? -EBUSY : thread_write(pg, t, cmd);
	else if ((d = find_dev(pg, file)))
		err = atomic_load(&pg->running) ? -EBUSY : dev_write(d, cmd);
	pthread_mutex_unlock(&pg->lock);
	return err;
}

const char *uskb_pktgen_result(struct uskb_pktgen *pg, const char *file)
{
	struct pg_thread *t = thread_by_name(pg, file);
	const char *r = NULL;
	struct pg_dev *d;

	if (t)
		return t->result[0] ? t->result : "NA";
	pthread_mutex_lock(&pg->lock);
	d = find_dev(pg, file);
	if (d)
		r = d->result[0] ? d->result : "Idle";
	pthread_mutex_unlock(&pg->lock);
	return r;
}

int uskb_pktgen_read(struct uskb_pktgen *pg, const char *file, char *buf, size_t len)
{
	struct pg_thread *t;
	struct pg_dev *d;
	int ret = -ENOENT;

	if (len)
		buf[0] = 0;
	pthread_mutex_lock(&pg->lock);
	if (!strcmp(file, "pgctrl"))
		ret = __uskb_pg_show_pgctrl(buf, len);
	else if ((t = thread_by_name(pg, file)))
		ret = __uskb_pg_show_thread(t, buf, len);
	else if ((d = find_dev(pg, file)))
		ret = __uskb_pg_show_dev(d, buf, len);
	pthread_mutex_unlock(&pg->lock);
	return ret;
}

void uskb_pktgen_stop(struct uskb_pktgen *pg)
{
	uint32_t *w = atomic_load(&pg->live_stop);

	/* the live programs' word first, then the engine's (the run's end clears them in that order) */
	if (w) /* (a plain store: this may run in a signal handler) */
		__atomic_store_n(w, 1, __ATOMIC_RELAXED);
	atomic_store(&pg->stop, true);
}

static int dev_stats(struct uskb_pktgen *pg, int i, char *name, size_t namelen,
		     struct uskb_pktgen_stats *st)
{
	for (int k = 0; k < pg->nthreads; k++)
		for (struct pg_dev *d = pg->threads[k].devs; d; d = d->next) {
			uint64_t started, stop, unacc;

			if (i--)
				continue;
			if (name)
				snprintf(name, namelen, "%s", d->odevname);
			memset(st, 0, sizeof(*st));
			st->running = atomic_load(&d->running);
			started = atomic_load(&d->started_at);
			stop = st->running ? uskb_mono_ns() : atomic_load(&d->stopped_at);
			/* an xdp-live: call in the kernel counts as it goes (its size is fixed at start) */
			unacc = __uskb_pg_live_unaccounted(d);
			st->sofar = uskb_count_read(&d->sofar) + unacc;
			st->errors = uskb_count_read(&d->errors);
			st->lost = st->running ? 0 : d->lost;
			st->tx_bytes = uskb_count_read(&d->tx_bytes) + (unacc ? unacc * d->last_pkt_size : 0);
			st->idle_ns = uskb_count_read(&d->idle_acc);
			st->restamped = uskb_count_read(&d->restamped);
			if (d->nd && d->nd->dev) {
				struct uskb_dev_stats ds;

				uskb_dev_get_stats(d->nd->dev, -1, &ds);
				st->zc_sent = ds.tx_zc;
				st->zc_copied = ds.tx_zc_copied;
				st->zc_fallback = ds.tx_zc_fallback;
				st->zc_fixed = ds.tx_zc_fixed;
				st->zerocopy = d->nd->dev->features & USKB_DEV_F_ZEROCOPY;
			}
			st->elapsed_ns = started && stop > started ? stop - started : 0;
			/* the worker owns these while it runs */
			st->pkt_size = st->running ? 0 : d->p.cur_pkt_size;
			st->nfrags = st->running ? -1 : d->last_nfrags;
			if (st->elapsed_ns) {
				st->pps = (uint64_t)((unsigned __int128)st->sofar * 1000000000u /
						     st->elapsed_ns);
				st->bps = (uint64_t)((unsigned __int128)st->tx_bytes * 8 * 1000000000u /
						     st->elapsed_ns);
			}
			return 0;
		}
	return -ENOENT;
}

int uskb_pktgen_dev_stats(struct uskb_pktgen *pg, int i, char *name, size_t namelen,
			  struct uskb_pktgen_stats *st)
{
	int ret;

	pthread_mutex_lock(&pg->lock);
	ret = dev_stats(pg, i, name, namelen, st);
	pthread_mutex_unlock(&pg->lock);
	return ret;
}

int uskb_pktgen_dev_error(struct uskb_pktgen *pg, const char *file, char *buf, size_t len)
{
	struct pg_dev *d;
	int ret = -ENOENT;

	if (!buf || !len)
		return -EINVAL;
	pthread_mutex_lock(&pg->lock);
	d = find_dev(pg, file);
	if (d)
		ret = uskb_dev_last_error(d->nd->dev, buf, len);
	pthread_mutex_unlock(&pg->lock);
	return ret;
}
