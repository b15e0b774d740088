/* SPDX-License-Identifier: MIT */
/*
 * The datapath threads, each serving the port receive queues dealt to it
 * (ovs_dp_process_packet and ovs_execute_actions): receive a burst from
 * each, without waiting while any had frames, extract each frame's key, look
 * it up in the thread's own table; a hit runs the flow's actions, a miss
 * becomes an upcall (uskb_ovs_upcall: the frame's pages referenced, not
 * copied) queued to a handler chosen by the flow hash. A full queue is a
 * lost upcall, as the kernel's ovs_dp_upcall failures are. Between bursts
 * the thread applies what the handlers sent back (FLOW_CMD_NEW,
 * PACKET_CMD_EXECUTE), sends what the burst produced, and expires flows.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <linux/if_ether.h>

#include "dp.h"

struct dp dp;

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- sending ---- */

static void port_xmit(struct dpthread *t, unsigned int pi)
{
	struct port *p = &dp.port[pi];
	unsigned int n = t->nout[pi], q = t->txq[pi] >= 0 ? (unsigned int)t->txq[pi] : t->id % p->ntx;
	bool lock = t->txq[pi] < 0 && p->txlock;
	int res[DP_BURST];

	if (!n)
		return;
	if (lock)
		pthread_mutex_lock(&p->txlock[q]);
	uskb_dev_xmit(p->dev, q, t->out[pi], (int)n, res);
	uskb_dev_flush(p->dev, q);
	if (lock)
		pthread_mutex_unlock(&p->txlock[q]);
	for (unsigned int i = 0; i < n; i++)
		if (res[i] == USKB_XMIT_BUSY) /* the device counted it (tx_busy) */
			uskb_free(t->out[pi][i]);
	t->nout[pi] = 0;
}

static void out_flush(struct dpthread *t)
{
	for (unsigned int i = 0; i < dp.nports; i++)
		port_xmit(t, i);
}

static void batch(struct dpthread *t, unsigned int pi, struct uskb *skb)
{
	t->out[pi][t->nout[pi]++] = skb;
	if (t->nout[pi] == DP_BURST)
		port_xmit(t, pi);
}

static void output(struct dpthread *t, unsigned int port, struct uskb *skb)
{
	struct port *p = &dp.port[port - 1];
	struct dpthread *owner;

	if (!p->nrx || t->txq[port - 1] >= 0) {
		batch(t, port - 1, skb);
		return;
	}
	/* another thread's queue: that thread sends it */
	owner = p->rxthr[t->id % p->nrx];
	skb->cb[0] = (char)(port - 1);
	if (!ring_push(owner->inbox[t->id], skb)) {
		cnt_add(&t->handoff_drops, 1);
		uskb_free(skb);
	}
}

/* what other threads handed over, sent on this thread's queue */
static void take_inboxes(struct dpthread *t)
{
	for (unsigned int i = 0; i < dp.nthreads; i++) {
		struct uskb *skb;

		if (!t->inbox[i])
			continue;
		while ((skb = ring_pop(t->inbox[i])))
			batch(t, (unsigned char)skb->cb[0], skb);
	}
}

/* ---- actions ---- */

static struct uskb *push_vlan(struct uskb *skb, uint16_t tpid, uint16_t tci)
{
	uint8_t *p;

	if (uskb_cow_head(skb, 4) || !uskb_may_pull(skb, 12)) {
		uskb_free(skb);
		return NULL;
	}
	p = uskb_push(skb, 4);
	memmove(p, p + 4, 12);
	memcpy(p + 12, &tpid, 2);
	memcpy(p + 14, &tci, 2);
	uskb_reset_mac_header(skb);
	skb->protocol = tpid;
	return skb;
}

static struct uskb *pop_vlan(struct uskb *skb)
{
	uint16_t type;

	if (skb->len < 18 || !uskb_may_pull(skb, 18))
		return skb; /* nothing to pop */
	memcpy(&type, skb->data + 12, 2);
	if (type != htons(ETH_P_8021Q) && type != htons(ETH_P_8021AD))
		return skb;
	if (uskb_ensure_writable(skb, 18)) {
		uskb_free(skb);
		return NULL;
	}
	memmove(skb->data + 4, skb->data, 12);
	uskb_pull(skb, 4);
	uskb_reset_mac_header(skb);
	memcpy(&skb->protocol, skb->data + 12, 2);
	return skb;
}

/* an upcall of @skb (which stays the caller's); false when it was lost */
static bool upcall(struct dpthread *t, struct uskb *skb, const struct uskb_ovs_key *key,
		   uint8_t cmd, const struct actions *a, bool copy, uint32_t *wakemask)
{
	uint32_t fh = uskb_ovs_flow_hash(key);
	struct uskb_ovs_upcall_info info = {
		.family = DP_FAMILY_PACKET,
		.cmd = cmd,
		.portid = t->id + 1, /* the thread a reply goes back to */
		.userdata = cmd == OVS_PACKET_CMD_ACTION ? (const struct nlattr *)a->userdata : NULL,
		.hash = fh | USKB_OVS_PACKET_HASH_SW | (key->tp_src | key->tp_dst ? USKB_OVS_PACKET_HASH_L4 : 0),
		.flags = (dp.copy || copy ? USKB_OVS_UPCALL_COPY : 0) |
			 (dp.unaligned ? USKB_OVS_UPCALL_UNALIGNED : 0),
	};
	struct handler *h;
	struct uskb *msg;
	int err;

	msg = uskb_ovs_upcall(skb, key, &info, &err);
	if (!msg)
		goto lost;
	if (dp.upcall_pcap)
		pcap_write(msg);
	if (dp.handler_socket) {
		err = dp_send_external(msg);
		uskb_free(msg);
		if (err)
			goto lost;
	} else {
		h = dp.hnd[fh % dp.nhandlers];
		if (!ring_push(h->upcalls[t->id], msg)) {
			uskb_free(msg);
			goto lost;
		}
		*wakemask |= 1u << h->id;
	}
	if (cmd == OVS_PACKET_CMD_MISS)
		t->inflight++;
	return true;
lost:
	cnt_add(&t->lost, 1);
	return false;
}

/* run @a on @skb, which the actions consume */
static void execute(struct dpthread *t, struct uskb *skb, const struct actions *a,
		    const struct uskb_ovs_key *key, uint32_t *wakemask)
{
	for (int i = 0; i < a->n && skb; i++) {
		const struct action *x = &a->a[i];

		switch (x->type) {
		case OVS_ACTION_ATTR_OUTPUT: {
			struct uskb *o = i == a->n - 1 ? skb : uskb_clone(skb);

			if (o == skb)
				skb = NULL;
			if (o)
				output(t, x->port, o);
			break;
		}
		case OVS_ACTION_ATTR_PUSH_VLAN:
			skb = push_vlan(skb, x->tpid, x->tci);
			break;
		case OVS_ACTION_ATTR_POP_VLAN:
			skb = pop_vlan(skb);
			break;
		case OVS_ACTION_ATTR_USERSPACE: {
			struct uskb_ovs_key now;

			/* the key of the packet as the actions so far left it */
			if (uskb_ovs_key_extract(skb, key->in_port, &now))
				break;
			cnt_add(&t->action_upcalls, 1);
			/*
			 * Actions after it may rewrite the frame's head in place,
			 * which a zero-copy upcall would share: copy unless it is last.
			 */
			upcall(t, skb, &now, OVS_PACKET_CMD_ACTION, a, i < a->n - 1, wakemask);
			break;
		}
		}
	}
	uskb_free(skb);
}

/* ---- replies ---- */

static void bad_reply(struct dpthread *t, const char *why)
{
	cnt_add(&t->bad_replies, 1);
	if (dp.verbose && cnt_get(&t->bad_replies) <= 10) {
		pthread_mutex_lock(&dp.print_lock);
		fprintf(stderr, "uskb-dp: thread %u: refused a message: %s\n", t->id, why);
		pthread_mutex_unlock(&dp.print_lock);
	}
}

static void apply_reply(struct dpthread *t, struct uskb *msg, uint32_t *wakemask)
{
	struct uskb_ovs_key k;
	struct actions a;
	struct dp_msg m;
	const char *why = NULL;
	int ret;

	if (msg_parse(msg->data, uskb_headlen(msg), msg->len, &m, &why))
		goto bad;
	if (m.family == DP_FAMILY_PACKET && m.genl_cmd == OVS_PACKET_CMD_EXECUTE && t->inflight)
		t->inflight--; /* answered, applied or not */
	if ((m.family == DP_FAMILY_FLOW ? msg_key_exact(m.key, &k, &why) : msg_key(m.key, &k, &why)) ||
	    msg_actions(m.actions, dp.nports, &a, &why))
		goto bad;
	if (k.in_port < 1 || k.in_port > dp.nports || t->txq[k.in_port - 1] < 0 ||
	    !dp.port[k.in_port - 1].nrx) {
		why = "a key whose in_port is not a port this thread receives on";
		goto bad;
	}
	if (m.family == DP_FAMILY_FLOW && m.genl_cmd == OVS_FLOW_CMD_NEW) {
		ret = table_insert(&t->tab, &k, &a, dp.flow_limit);
		if (ret == -ENOSPC)
			cnt_add(&t->flow_limit, 1);
		atomic_store_explicit(&t->flows, t->tab.count, memory_order_relaxed);
	} else if (m.family == DP_FAMILY_PACKET && m.genl_cmd == OVS_PACKET_CMD_EXECUTE) {
		struct uskb *pkt = msg_packet(msg, &m);

		cnt_add(&t->executed, 1);
		if (pkt)
			execute(t, pkt, &a, &k, wakemask);
	} else {
		why = "a command this datapath does not take";
		goto bad;
	}
	uskb_free(msg);
	return;
bad:
	bad_reply(t, why);
	uskb_free(msg);
}

/* ---- the thread ---- */

void dp_wake_handler(struct handler *h)
{
	uint64_t one = 1;

	/*
	 * An RMW, as the handler's going to sleep is one: either it reads
	 * the handler's "sleeping" and wakes it, or the handler's exchange
	 * reads this one and then sees what was queued before it.
	 */
	if (atomic_fetch_add(&h->sleeping, 0))
		(void)!write(h->efd, &one, sizeof(one));
}

static void process(struct dpthread *t, struct port *port, struct uskb *skb, uint64_t now,
		    uint32_t *wakemask)
{
	struct uskb_ovs_key key;
	struct flow *f;

	if (uskb_ovs_key_extract(skb, port->no, &key)) {
		cnt_add(&t->bad_frames, 1);
		uskb_free(skb);
		return;
	}
	f = table_lookup(&t->tab, &key, key_hash(&key));
	if (f) {
		cnt_add(&t->hit, 1);
		f->packets++;
		f->bytes += skb->len;
		f->used_ns = now;
		execute(t, skb, &f->acts, &key, wakemask);
		return;
	}
	cnt_add(&t->missed, 1);
	upcall(t, skb, &key, OVS_PACKET_CMD_MISS, NULL, false, wakemask);
	uskb_free(skb);
}

static void dump(struct dpthread *t, uint64_t now)
{
	pthread_mutex_lock(&dp.print_lock);
	for (uint32_t i = 0; i <= t->tab.mask; i++)
		for (struct flow *f = t->tab.bucket[i]; f; f = f->next)
			flow_print(stdout, f, now);
	fflush(stdout);
	pthread_mutex_unlock(&dp.print_lock);
}

static void take_replies(struct dpthread *t, uint32_t *wakemask)
{
	for (unsigned int h = 0; h < dp.nhandlers; h++) {
		struct uskb *msg;

		while ((msg = ring_pop(t->replies[h])))
			apply_reply(t, msg, wakemask);
	}
}

/*
 * The external handler died: everything it answered was queued before its
 * death was counted, so once those replies are applied, what is still in
 * flight never comes back and is lost.
 */
static void settle_handler_death(struct dpthread *t, uint32_t *wakemask)
{
	unsigned int gen = atomic_load_explicit(&dp.handler_gen, memory_order_acquire);

	if (gen == t->handler_gen)
		return;
	take_replies(t, wakemask);
	cnt_add(&t->lost, t->inflight);
	cnt_add(&t->orphaned, t->inflight);
	t->inflight = 0;
	t->handler_gen = gen;
	atomic_store_explicit(&t->handler_ack, gen, memory_order_release);
}

static void *dp_main(void *arg)
{
	struct dpthread *t = arg;
	struct uskb *skbs[DP_BURST];
	uint64_t sweep_every = (uint64_t)(dp.idle_ms < 4000 ? dp.idle_ms / 4 + 1 : 1000) * 1000000ull;

	t->next_sweep = now_ns() + sweep_every;
	while (!atomic_load_explicit(&dp.stop, memory_order_relaxed)) {
		uint32_t wakemask = 0;
		unsigned long want_dump;
		uint64_t now;
		int got = 0;

		/*
		 * Each queue once, without waiting; when none had anything (for
		 * --spin-us), wait on one of them (in turn), 1 ms at most when
		 * others may hand frames over or a reply is due.
		 */
		for (unsigned int i = 0; i <= t->nrx; i++) {
			const struct rxq *rq;
			int n, timeout = 0;

			if (i == t->nrx) {
				if (got)
					break;
				/* busy: poll again rather than sleep and be woken */
				if (now_ns() - t->last_rx < (uint64_t)dp.spin_us * 1000u)
					continue;
				rq = &t->rx[t->next_rx++ % t->nrx];
				timeout = t->inflight || dp.nthreads > 1 || t->nrx > 1 ? 1 : 20;
			} else {
				rq = &t->rx[i];
			}
			n = uskb_dev_rx(rq->port->dev, rq->q, skbs, DP_BURST, timeout);
			if (n < 0 && n != -EINTR) {
				pthread_mutex_lock(&dp.print_lock);
				fprintf(stderr, "uskb-dp: %s queue %u: receive failed: %s\n", rq->port->spec,
					rq->q, strerror(-n));
				pthread_mutex_unlock(&dp.print_lock);
				atomic_store(&dp.stop, 1);
				break;
			}
			now = now_ns();
			for (int j = 0; j < n; j++)
				process(t, rq->port, skbs[j], now, &wakemask);
			got += n > 0 ? n : 0;
		}
		now = now_ns();
		if (got)
			t->last_rx = now;
		take_replies(t, &wakemask);
		settle_handler_death(t, &wakemask);
		for (unsigned int h = 0; wakemask; h++, wakemask >>= 1)
			if (wakemask & 1)
				dp_wake_handler(dp.hnd[h]);
		take_inboxes(t);
		out_flush(t);
		if (now >= t->next_sweep) {
			uint64_t idle = (uint64_t)dp.idle_ms * 1000000ull;
			unsigned int gone = table_expire(&t->tab, now > idle ? now - idle : 0);

			cnt_add(&t->expired, gone);
			atomic_store_explicit(&t->flows, t->tab.count, memory_order_relaxed);
			t->next_sweep = now + sweep_every;
		}
		want_dump = atomic_load_explicit(&dp.dump_request, memory_order_relaxed);
		if (want_dump != t->dumps_seen) {
			t->dumps_seen = want_dump;
			dump(t, now);
		}
	}
	take_inboxes(t);
	out_flush(t);
	return NULL;
}

int dp_thread_start(struct dpthread *t)
{
	char name[16];
	int ret = pthread_create(&t->tid, NULL, dp_main, t);

	/* "dp0", "dp1"... (top -H, /proc/PID/task/TID/comm) */
	snprintf(name, sizeof(name), "dp%u", t->id % 1000u); /* at most 64 */
	if (!ret)
		pthread_setname_np(t->tid, name);
	return -ret;
}

/* ---- the external handler's socket, datapath side ---- */

int dp_send_external(struct uskb *msg)
{
	int fd = atomic_load_explicit(&dp.hsock, memory_order_relaxed);

	return fd < 0 ? -1 : msg_send(fd, msg, MSG_DONTWAIT);
}

void dp_deliver_reply(struct uskb *msg)
{
	const struct nlmsghdr *nlh = (const struct nlmsghdr *)msg->data;
	struct dpthread *t;

	/* nlmsg_pid names the thread, as the upcall's did */
	if (msg->len < NLMSG_HDRLEN || nlh->nlmsg_pid < 1 || nlh->nlmsg_pid > dp.nthreads) {
		cnt_add(&dp.ext_bad, 1);
		uskb_free(msg);
		return;
	}
	t = dp.thr[nlh->nlmsg_pid - 1];
	/* the socket's reader is the one producer of reply ring 0 */
	while (!ring_push(t->replies[0], msg)) {
		if (atomic_load(&dp.stop)) {
			uskb_free(msg);
			return;
		}
		usleep(100);
	}
}
