/* SPDX-License-Identifier: MIT */
/*
 * Running: the kpktgend_N threads, each sending for the device whose next
 * transmit is earliest (pktgen_xmit), the pacing between transmits, the
 * per-queue transmit lock of a shared device, and starting and stopping
 * devices.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "pg.h"

/* pktgen_clear_counters() */
void __uskb_pg_clear_counters(struct pg_dev *d)
{
	d->seq_num = 1;
	d->idle_acc = 0;
	d->sofar = 0;
	d->tx_bytes = 0;
	d->errors = 0;
	d->restamped = 0;
}

/* Set a device up for a run; a failure is its result, and it does not run. */
/*
 * The largest frame the parameters build fits the interface: 0, or the
 * result line refusing the run, which names both numbers.
 */
static int check_mtu(struct pg_dev *d)
{
	const struct uskb_dev *dev = d->nd->dev;
	unsigned int max = d->p.max_pkt_size > d->p.min_pkt_size ? d->p.max_pkt_size :
								    d->p.min_pkt_size;
	/* the device refreshes its MTU while other threads send on it */
	unsigned int limit, mtu = __atomic_load_n(&dev->mtu, __ATOMIC_RELAXED);

	if (!(dev->features & USKB_DEV_F_MTU))
		return 0;
	for (unsigned int i = 0; i < d->p.n_imix; i++)
		if (d->p.imix[i].size > max)
			max = (unsigned int)d->p.imix[i].size;
	/* a 802.1Q tag outermost may pass the MTU by its 4 bytes; an 802.1ad one may not */
	limit = mtu + 14 +
		(d->p.vlan_id != USKB_PKTGEN_NO_VLAN && d->p.svlan_id == USKB_PKTGEN_NO_VLAN ? 4 : 0);
	if (max <= limit)
		return 0;
	snprintf(d->result, RESULT_SZ,
		 "ERROR: pkt_size %u does not fit the MTU %u of %s (frames of at most %u bytes)", max,
		 mtu, d->odevname, limit);
	return -EMSGSIZE;
}

static void dev_start(struct pg_dev *d)
{
	uint64_t t;

	__uskb_pg_setup_inject(d);
	if (check_mtu(d))
		return;
	d->sent_queue = -1;
	free(d->flows);
	d->flows = calloc(d->p.cflows ? d->p.cflows : 1, sizeof(*d->flows));
	if (!d->flows) {
		snprintf(d->result, RESULT_SZ, "Error starting");
		return;
	}
	d->curfl = 0;
	for (unsigned int i = 0; i < d->p.n_imix; i++)
		d->p.imix[i].count_so_far = 0;
	__uskb_pg_clear_counters(d);
	d->build_seq = d->seq_num;
	d->fixed = !__uskb_pg_headers_vary(d);
	d->primed = d->tmpl_same = false;
	if (d->skb) {
		uskb_free(d->skb);
		d->skb = NULL;
	}
	d->last_nfrags = -1;
	d->built_nfrags = -1;
	d->zero = d->p.node >= 0 && (d->p.flags & F_NODE) ? uskb_zero_page_node(d->p.node) : uskb_zero_page();
	if (!d->zero) {
		snprintf(d->result, RESULT_SZ, "Error starting");
		return;
	}
	/* what the device dropped so far, to tell the frames it loses later (dev_stop) */
	free(d->drop0);
	d->drop0 = calloc(d->nd->dev->nqueues, sizeof(*d->drop0));
	if (!d->drop0) {
		snprintf(d->result, RESULT_SZ, "Error starting");
		return;
	}
	for (unsigned int q = 0; q < d->nd->dev->nqueues; q++) {
		struct uskb_dev_stats qs;

		uskb_dev_get_stats(d->nd->dev, (int)q, &qs);
		d->drop0[q] = qs.tx_dropped;
	}
	d->q_lo = UINT_MAX;
	d->q_hi = 0;
	d->lost = 0;
	/* the kernel replays the frame: check the commands, build it, load the program */
	if ((d->nd->dev->features & USKB_DEV_F_XDP_RUN) && __uskb_pg_live_start(d))
		return;
	t = uskb_mono_ns();
	atomic_store(&d->started_at, t);
	d->next_tx = t;
	snprintf(d->result, RESULT_SZ, "Starting");
	atomic_fetch_add(&d->nd->active, 1);
	atomic_store(&d->running, true);
}

int __uskb_pg_locks_init(struct pg_netdev *nd)
{
	nd->txlock = calloc(nd->dev->nqueues, sizeof(*nd->txlock));
	if (!nd->txlock)
		return -ENOMEM;
	for (unsigned int q = 0; q < nd->dev->nqueues; q++)
		pthread_mutex_init(&nd->txlock[q], NULL);
	return 0;
}

void __uskb_pg_locks_free(struct pg_netdev *nd)
{
	for (unsigned int q = 0; nd->txlock && q < nd->dev->nqueues; q++)
		pthread_mutex_destroy(&nd->txlock[q]);
	free(nd->txlock);
}

/*
 * HARD_TX_LOCK: a lock per queue, and only a device shared by several
 * names needs it (threads on different queues do not wait for each other).
 */
static void tx_lock(struct pg_netdev *nd, unsigned int queue)
{
	if (nd->users > 1)
		pthread_mutex_lock(&nd->txlock[queue]);
}

static void tx_unlock(struct pg_netdev *nd, unsigned int queue)
{
	if (nd->users > 1)
		pthread_mutex_unlock(&nd->txlock[queue]);
}

static void dev_flush(struct pg_dev *d)
{
	unsigned int q = (unsigned int)d->sent_queue;

	if (!d->nd->dev->ops->flush || d->sent_queue < 0)
		return;
	tx_lock(d->nd, q);
	uskb_dev_flush(d->nd->dev, q);
	tx_unlock(d->nd, q);
}

/*
 * The last device of a run on its netdev: PG_FINISH_MS for a stream's peer
 * to take what was sent (uskb_dev_drain): what it does not take is lost,
 * and counted as such rather than discarded unseen at close
 */
static void dev_finish(struct pg_dev *d)
{
	unsigned int q = (unsigned int)d->sent_queue;

	if (atomic_fetch_sub(&d->nd->active, 1) != 1 || d->sent_queue < 0) {
		dev_flush(d);
		return;
	}
	tx_lock(d->nd, q);
	uskb_dev_drain(d->nd->dev, q, PG_FINISH_MS);
	tx_unlock(d->nd, q);
}

/* pktgen_stop_device() */
/*
 * Frames the device took and lost afterwards: what it dropped on the queues
 * this device used, beyond the drops the transmits reported (errors).
 */
static uint64_t late_lost(const struct pg_dev *d)
{
	uint64_t dropped = 0, errors = uskb_count_read(&d->errors);

	for (unsigned int q = d->q_lo; q <= d->q_hi && q < d->nd->dev->nqueues; q++) {
		struct uskb_dev_stats qs;

		uskb_dev_get_stats(d->nd->dev, (int)q, &qs);
		dropped += qs.tx_dropped - d->drop0[q];
	}
	return dropped > errors ? dropped - errors : 0;
}

static void dev_stop(struct pg_dev *d)
{
	uint64_t stopped = uskb_mono_ns(), started = atomic_load(&d->started_at);
	uint64_t halted = __uskb_pg_live_halted(d);
	int nr_frags = d->skb ? __uskb_shinfo_peek(d->skb)->nr_frags : d->built_nfrags;

	if (!atomic_load(&d->running))
		return;
	/* a live call the stop word halted ran on without sending: the run ended then */
	if (halted > started && halted < stopped)
		stopped = halted;
	dev_finish(d);
	d->lost = late_lost(d);
	uskb_count_add(&d->errors, d->lost);
	if (d->skb) {
		uskb_free(d->skb);
		d->skb = NULL;
	}
	for (unsigned int i = 0; i < d->npend; i++) /* built, never taken */
		uskb_free(d->pend[i]);
	d->npend = 0;
	d->last_nfrags = nr_frags;
	atomic_store(&d->stopped_at, stopped);
	pthread_mutex_lock(&d->t->pg->lock);
	__uskb_pg_live_stop(d); /* (readers look into it under the lock) */
	__uskb_pg_show_results(d, stopped - started, uskb_count_read(&d->idle_acc),
			       uskb_count_read(&d->sofar), nr_frags);
	atomic_store(&d->running, false);
	pthread_mutex_unlock(&d->t->pg->lock);
}

static bool stopping(const struct pg_dev *d)
{
	return atomic_load_explicit(&d->t->pg->stop, memory_order_relaxed);
}

/*
 * spin(): wait for @until, sleeping (in slices of at most 10 ms, so that a
 * stop is seen) while more than 100 us remain, then spinning.
 */
static void spin(struct pg_dev *d, uint64_t until)
{
	uint64_t start = uskb_mono_ns(), t = start;

	if (until > start) {
		/* t may pass until while asleep: compare before subtracting (unsigned) */
		while (t < until && until - t >= 100000 && !stopping(d)) {
			uint64_t wake = until - 50000; /* sleep most of it, spin the last 50 us */
			struct timespec ts;

			if (wake - t > 10000000)
				wake = t + 10000000;
			ts.tv_sec = (time_t)(wake / 1000000000u);
			ts.tv_nsec = (long)(wake % 1000000000u);
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
			t = uskb_mono_ns();
		}
		while ((t = uskb_mono_ns()) < until && !stopping(d))
			;
		uskb_count_add(&d->idle_acc, t - start);
	}
	d->next_tx = uskb_add_sat(until, d->p.delay);
}

static struct pg_dev *next_to_run(struct pg_thread *t);

/*
 * A paced run on an xdp-live: device: up to 20 kpps one packet per call, on
 * time (a one-packet call costs ~15-30 us here); faster, the packets due in
 * each 20 ms go in one call (a call of more than one costs a grace period
 * in the kernel, ~1.5 ms: per packet it would not keep up).
 */
#define LIVE_ONE_BY_ONE 50000 /* ns: delays from this up are kept per packet */
#define LIVE_PACE 20000000    /* ns: faster paced runs send this long's packets per call */

/*
 * An xdp-live: device: the kernel sends a number of packets per call, as
 * many as are due (a paced run: delay) and left to count (live.c sizes the
 * calls of an unpaced run). The program counts what it sent: sofar is
 * exact even when a signal cuts a call short.
 */
static void live_xmit(struct pg_dev *d)
{
	uint64_t sofar = uskb_count_read(&d->sofar), n = UINT32_MAX, ok;
	uint32_t tried;
	int err;

	if (d->p.delay) {
		n = d->p.delay >= LIVE_ONE_BY_ONE ? 1 : LIVE_PACE / d->p.delay;
		spin(d, d->next_tx);
		if (stopping(d))
			return;
	}
	if (d->p.count && n > d->p.count - sofar)
		n = d->p.count - sofar;
	tried = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
	d->sent_queue = (int)d->cur_queue_map;
	d->q_lo = d->q_hi = d->cur_queue_map;
	tx_lock(d->nd, d->cur_queue_map);
	err = __uskb_pg_live_send(d, &tried, &ok);
	tx_unlock(d->nd, d->cur_queue_map);
	n = tried; /* the call may have tried fewer (an unpaced call's size) */
	/* spin() set the next time one packet on; the call was n */
	if (d->p.delay)
		d->next_tx = uskb_add_sat(d->next_tx, (n - 1) * d->p.delay);
	pthread_mutex_lock(&d->t->pg->lock);
	if (ok) {
		__atomic_store_n(&d->sofar, sofar + ok, __ATOMIC_RELAXED);
		uskb_count_add(&d->tx_bytes, ok * d->last_pkt_size);
	}
	__uskb_pg_live_account(d, ok);
	pthread_mutex_unlock(&d->t->pg->lock);
	/* a signal (a stop, most likely) cut the call short: what went is counted */
	if (err && err != -EINTR) {
		/*
		 * The frame no longer fits, the interface went away: one failed
		 * transmit (the kernel pktgen's error count), and the run ends
		 */
		uskb_count_add(&d->errors, 1);
		dev_stop(d);
		if (err == -EBADMSG) { /* not the device's: say it in the result */
			pthread_mutex_lock(&d->t->pg->lock);
			snprintf(d->result, RESULT_SZ, "ERROR: the live program could not write the frame "
				 "(%" PRIu64 " sent)", sofar + ok);
			pthread_mutex_unlock(&d->t->pg->lock);
		}
		return;
	}
	if (d->p.count && sofar + ok >= d->p.count)
		dev_stop(d);
}

/* the queue bookkeeping before a transmit on d->cur_queue_map */
static void queue_note(struct pg_dev *d)
{
	/* moving to another queue: what waits in the last one goes first */
	if (d->sent_queue != (int)d->cur_queue_map)
		dev_flush(d);
	d->sent_queue = (int)d->cur_queue_map;
	if (uskb_unlikely(d->cur_queue_map < d->q_lo))
		d->q_lo = d->cur_queue_map;
	if (uskb_unlikely(d->cur_queue_map > d->q_hi))
		d->q_hi = d->cur_queue_map;
}

/*
 * After a transmit: @ok sent (@bytes), @errs dropped, @busy still ours.
 * As the kernel: a busy device gets the same packets again, without delay;
 * an interface that went away (!netif_running) ends the run: false then.
 */
static bool tx_done(struct pg_dev *d, uint64_t sofar, unsigned int ok, uint64_t bytes,
		    unsigned int errs, unsigned int busy)
{
	if (busy) {
		d->p.last_ok = false;
		dev_flush(d);
	} else if (ok) {
		d->p.last_ok = true;
	}
	if (ok) {
		d->seq_num += ok;
		__atomic_store_n(&d->sofar, sofar + ok, __ATOMIC_RELAXED);
		uskb_count_add(&d->tx_bytes, bytes);
	}
	if (errs) {
		uskb_count_add(&d->errors, errs);
		if (uskb_unlikely(!uskb_dev_running(d->nd->dev))) {
			dev_stop(d);
			return false;
		}
	}
	return true;
}

/*
 * A new packet per send (burst 1, clone_skb 0), unpaced, on one queue,
 * without imix: batch_xmit builds up to PG_BATCH distinct packets and hands
 * them to the device in one call, as testpmd's txonly does, instead of a
 * call per packet. The run's last packet is left to pg_xmit, which waits
 * for the device to let go of it.
 */
static bool batch_ok(const struct pg_dev *d, uint64_t sofar)
{
	if (d->npend)
		return true;
	return d->p.burst == 1 && !d->p.clone_skb && !d->p.delay && !d->p.n_imix && !d->skb &&
	       ((d->p.flags & F_QUEUE_MAP_CPU) || d->p.queue_map_min >= d->p.queue_map_max) &&
	       (!d->p.count || d->p.count - sofar > 1);
}

/*
 * Each packet is numbered as it is built: one the device drops keeps its
 * number (a receiver counts it lost), where the kernel, building one at a
 * time, gives the number to the next packet. Packets the device was busy
 * for wait in d->pend and go first next time, as the kernel resends its skb.
 */
static void batch_xmit(struct pg_thread *t, struct pg_dev *d)
{
	uint64_t sofar = uskb_count_read(&d->sofar), bytes = 0;
	unsigned int n, first, chunk, got, want = PG_BATCH, ok = 0, errs = 0, busy = 0;
	uint32_t len[PG_BATCH];

	if (d->p.count && want > d->p.count - sofar - 1)
		want = (unsigned int)(d->p.count - sofar - 1); /* (more than npend: they counted in) */
	for (n = 0; n < d->npend; n++) {
		t->vec[n] = d->pend[n];
		len[n] = d->pend[n]->len;
	}
	first = n;
	__uskb_pg_spare_fill(d, want - n);
	__uskb_pg_stamp_begin(d);
	for (chunk = n; n < want; n += got) {
		unsigned int m = want - n;

		if (d->hold) { /* one reading of the time per chunk of d->every */
			if (n - chunk == d->every) {
				__uskb_pg_stamp_chunk(d, t->vec + chunk, n - chunk);
				chunk = n;
			}
			if (m > d->every - (n - chunk))
				m = d->every - (n - chunk);
		}
		got = __uskb_pg_build_run(d, t->vec + n, m);
		for (unsigned int i = n; i < n + got; i++)
			len[i] = t->vec[i]->len;
		if (got < m) { /* no memory */
			n += got;
			break;
		}
	}
	__uskb_pg_stamp_end(d, t->vec + chunk, n - chunk, n - first);
	__uskb_pg_spare_drop(d);
	if (!n) { /* no memory: "No memory" said; try again */
		sched_yield();
		return;
	}
	if (n > d->npend) {
		d->last_pkt_size = len[n - 1];
		d->built_nfrags = __uskb_shinfo_peek(t->vec[n - 1])->nr_frags;
	}
	d->npend = 0;
	queue_note(d);
	tx_lock(d->nd, d->cur_queue_map);
	uskb_dev_xmit(d->nd->dev, d->cur_queue_map, t->vec, (int)n, t->res);
	tx_unlock(d->nd, d->cur_queue_map);
	for (unsigned int i = 0; i < n; i++) {
		switch (t->res[i]) {
		case USKB_XMIT_OK:
			ok++;
			bytes += len[i];
			break;
		case USKB_XMIT_DROP:
			errs++;
			break;
		default: /* busy: still ours, sent first next time */
			d->pend[busy++] = t->vec[i];
			break;
		}
	}
	d->npend = busy;
	tx_done(d, sofar, ok, bytes, errs, busy);
}

static void pg_xmit(struct pg_thread *t, struct pg_dev *d)
{
	struct pg_netdev *nd = d->nd;
	unsigned int burst = d->p.burst, ok = 0, errs = 0, busy = 0;
	uint64_t sofar = uskb_count_read(&d->sofar);
	struct uskb *skb;
	int n, handed;

	if (d->p.delay == UINT64_MAX) {
		/* "never transmit": out of next_to_run's way, as the kernel's now + ULONG_MAX */
		struct timespec ts = { 0, 10000000 };

		d->next_tx = UINT64_MAX;
		if (next_to_run(t) == d) /* nothing else to do on this thread */
			nanosleep(&ts, NULL);
		return;
	}
	if (d->live) {
		live_xmit(d);
		return;
	}
	if (batch_ok(d, sofar)) {
		batch_xmit(t, d);
		return;
	}
	if (!d->skb || (d->p.last_ok && ++d->clone_count >= d->p.clone_skb)) {
		if (d->skb)
			uskb_free(d->skb);
		d->skb = __uskb_pg_fill_packet(d);
		if (!d->skb) {
			d->clone_count--;
			sched_yield();
			return;
		}
		d->last_pkt_size = d->skb->len;
		d->built_nfrags = __uskb_shinfo_peek(d->skb)->nr_frags;
		d->clone_count = 0;
	}
	if (d->p.delay && d->p.last_ok) {
		if (d->next_tx > uskb_mono_ns())
			dev_flush(d); /* nothing may wait in the device while we do */
		spin(d, d->next_tx);
		if (stopping(d))
			return;
	}
	/* no overshoot: a burst never sends past count (the kernel's may) */
	if (d->p.count && burst > d->p.count - sofar)
		burst = (unsigned int)(d->p.count - sofar);
	if (burst > MAX_BURST)
		burst = MAX_BURST;
	n = (int)burst;
	/*
	 * The kernel adds a reference per copy and keeps its own, to drop it
	 * when the next packet is built. When this send is the skb's last
	 * (clone_skb reached once it succeeds; not a retry after busy, which
	 * is resent until it goes out) and not the run's last (whose copies
	 * the end waits for), our reference goes with it instead: two atomic
	 * operations fewer per packet, the same packets and counts.
	 */
	handed = d->p.last_ok && d->clone_count + 1 >= d->p.clone_skb &&
		 (!d->p.count || sofar + burst < d->p.count);
	skb = d->skb;
	if (n - handed)
		atomic_fetch_add_explicit(&skb->users, n - handed, memory_order_relaxed);
	for (int i = 0; i < n; i++)
		t->vec[i] = skb;
	queue_note(d);
	tx_lock(nd, d->cur_queue_map);
	uskb_dev_xmit(nd->dev, d->cur_queue_map, t->vec, n, t->res);
	tx_unlock(nd, d->cur_queue_map);
	for (int i = 0; i < n; i++) {
		switch (t->res[i]) {
		case USKB_XMIT_OK:
			ok++;
			break;
		case USKB_XMIT_DROP:
			errs++;
			break;
		default: /* busy: the reference is still ours; retry later */
			busy++;
			break;
		}
	}
	/* each busy copy gave a reference back: keep one for the retry when ours went */
	for (unsigned int i = (unsigned int)handed; i < busy; i++)
		uskb_free(skb);
	if (handed && !busy)
		d->skb = NULL; /* the device has our reference: the next call builds */
	d->build_seq += ok; /* (ahead of seq_num by what a batch lost) */
	if (ok && d->p.n_imix)
		d->p.imix[d->cur_imix].count_so_far += ok;
	if (!tx_done(d, sofar, ok, (uint64_t)ok * d->last_pkt_size, errs, busy))
		return;
	if (d->p.count && sofar + ok >= d->p.count) {
		/* pktgen_wait_for_skb(): until the device let go of every copy (idle time) */
		uint64_t w = uskb_mono_ns();

		/* a zero-copy device lets go when the kernel says so: flushing takes that word */
		while (atomic_load_explicit(&d->skb->users, memory_order_acquire) != 1 && !stopping(d)) {
			dev_flush(d);
			sched_yield();
		}
		uskb_count_add(&d->idle_acc, uskb_mono_ns() - w);
		dev_stop(d);
	}
}

static struct pg_dev *next_to_run(struct pg_thread *t)
{
	struct pg_dev *best = NULL;

	for (struct pg_dev *d = t->devs; d; d = d->next)
		if (atomic_load_explicit(&d->running, memory_order_relaxed) &&
		    (!best || d->next_tx < best->next_tx))
			best = d;
	return best;
}

static void *thread_worker(void *arg)
{
	struct pg_thread *t = arg;
	struct uskb_pktgen *pg = t->pg;

	if (pg->pin) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(t->cpu, &set);
		pthread_setaffinity_np(pthread_self(), sizeof(set), &set); /* best effort */
	}
	for (;;) {
		struct pg_dev *d;

		if (atomic_load_explicit(&pg->stop, memory_order_relaxed)) {
			for (d = t->devs; d; d = d->next)
				dev_stop(d);
			break;
		}
		d = next_to_run(t);
		if (!d)
			break;
		pg_xmit(t, d);
	}
	uskb_thread_flush(); /* hand this thread's cached skbs and pages back */
	return NULL;
}

int __uskb_pg_run(struct uskb_pktgen *pg)
{
	bool started[pg->nthreads];
	int i;

	atomic_store(&pg->running, true);
	/*
	 * Every device first, then the threads: a device that ends early must
	 * not find itself the last user of a netdev another thread's device
	 * has yet to start on (the last one to stop drains the stream)
	 */
	for (i = 0; i < pg->nthreads; i++)
		for (struct pg_dev *d = pg->threads[i].devs; d; d = d->next)
			dev_start(d);
	for (i = 0; i < pg->nthreads; i++) {
		struct pg_thread *t = &pg->threads[i];

		started[i] = false;
		if (t->devs && pthread_create(&t->th, NULL, thread_worker, t) == 0)
			started[i] = true;
		else
			for (struct pg_dev *d = t->devs; d; d = d->next)
				if (atomic_load(&d->running)) {
					__uskb_pg_live_stop(d);
					atomic_fetch_sub(&d->nd->active, 1);
					atomic_store(&d->running, false);
					snprintf(d->result, RESULT_SZ, "Error starting");
				}
	}
	/* writes meanwhile see running and answer EBUSY; stop needs no lock */
	pthread_mutex_unlock(&pg->lock);
	for (i = 0; i < pg->nthreads; i++)
		if (started[i])
			pthread_join(pg->threads[i].th, NULL);
	pthread_mutex_lock(&pg->lock);
	atomic_store(&pg->running, false);
	if (atomic_load(&pg->live_stop)) /* (the word first: stop() sets it first) */
		__atomic_store_n(atomic_load(&pg->live_stop), 0, __ATOMIC_RELAXED);
	atomic_store(&pg->stop, false); /* a stop asked before start ended this run */
	return 0;
}
