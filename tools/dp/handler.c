/* SPDX-License-Identifier: MIT */
/*
 * The handlers (ovs-vswitchd's upcall handler threads). Each takes upcall
 * messages, parses them with libmnl, decides the packet's actions by a
 * policy — the rules file first, else an L2 learning switch like OVS's
 * NORMAL action — and answers with two netlink messages: OVS_FLOW_CMD_NEW
 * (install the flow) and OVS_PACKET_CMD_EXECUTE (run the actions on this
 * packet). In-process handlers take upcalls from one ring per datapath
 * thread and answer into that thread's reply ring; an external handler
 * (--handler-of) does the same over a SOCK_SEQPACKET socket.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <libmnl/libmnl.h>

#include "dp.h"

/* ---- the learning switch ---- */

#define MAC_SLOTS 4096

struct mac_entry {
	uint8_t mac[6];
	uint16_t port; /* 0: free */
};

static struct {
	pthread_mutex_t lock;
	struct mac_entry e[MAC_SLOTS];
	unsigned int nports;
} macs = { .lock = PTHREAD_MUTEX_INITIALIZER };

static unsigned int mac_slot(const uint8_t *mac)
{
	uint32_t h = 2166136261u;

	for (int i = 0; i < 6; i++)
		h = (h ^ mac[i]) * 16777619u;
	return h & (MAC_SLOTS - 1);
}

/* the entry for @mac, or the free one it would take (NULL: the table is full) */
static struct mac_entry *mac_find(const uint8_t *mac)
{
	unsigned int s = mac_slot(mac);

	for (unsigned int i = 0; i < MAC_SLOTS; i++) {
		struct mac_entry *e = &macs.e[(s + i) & (MAC_SLOTS - 1)];

		if (!e->port || !memcmp(e->mac, mac, 6))
			return e;
	}
	return NULL;
}

static void normal(const struct uskb_ovs_key *k, struct actions *a)
{
	struct mac_entry *e;
	unsigned int out = 0;

	pthread_mutex_lock(&macs.lock);
	if (!(k->eth_src[0] & 1) && k->in_port >= 1 && k->in_port <= macs.nports &&
	    (e = mac_find(k->eth_src))) {
		memcpy(e->mac, k->eth_src, 6);
		e->port = (uint16_t)k->in_port; /* learnt, or moved */
	}
	if (!(k->eth_dst[0] & 1) && (e = mac_find(k->eth_dst)) && e->port)
		out = e->port;
	pthread_mutex_unlock(&macs.lock);

	memset(a, 0, sizeof(*a));
	if (out) {
		if (out != k->in_port) /* else: it is where it came from: drop */
			a->a[a->n++] = (struct action){ .type = OVS_ACTION_ATTR_OUTPUT, .port = out };
		return;
	}
	/* flood: every port but the input */
	for (unsigned int p = 1; p <= macs.nports && a->n < DP_MAX_ACTIONS; p++)
		if (p != k->in_port)
			a->a[a->n++] = (struct action){ .type = OVS_ACTION_ATTR_OUTPUT, .port = p };
}

static void decide(const struct uskb_ovs_key *k, struct actions *a)
{
	if (rules_match(k, a) == 1)
		return;
	normal(k, a);
}

/*
 * One upcall: its replies in @replies (0, or FLOW_CMD_NEW and
 * PACKET_CMD_EXECUTE). 0, or -EINVAL for a message it refused.
 */
int handler_process(struct handler *h, struct uskb *upcall, struct uskb **replies, int *nreplies)
{
	struct uskb_ovs_key k;
	struct actions a;
	struct dp_msg m;
	const char *why;

	*nreplies = 0;
	if (msg_parse(upcall->data, uskb_headlen(upcall), upcall->len, &m, &why) ||
	    m.family != DP_FAMILY_PACKET ||
	    (m.genl_cmd != OVS_PACKET_CMD_MISS && m.genl_cmd != OVS_PACKET_CMD_ACTION) ||
	    msg_key(m.key, &k, &why)) {
		cnt_add(&h->bad, 1);
		return -EINVAL;
	}
	cnt_add(&h->handled, 1);
	if (m.genl_cmd == OVS_PACKET_CMD_ACTION) {
		/* a userspace action's sample: counted, nothing to answer */
		cnt_add(&h->action_upcalls, 1);
		return 0;
	}
	decide(&k, &a);
	replies[0] = msg_flow_new(m.pid, m.key, &a);
	replies[1] = msg_execute(upcall, &m, &a);
	if (!replies[0] || !replies[1]) {
		uskb_free(replies[0]);
		uskb_free(replies[1]);
		cnt_add(&h->refused, 1);
		return -ENOMEM;
	}
	*nreplies = 2;
	cnt_add(&h->sent_flows, 1);
	cnt_add(&h->sent_executes, 1);
	return 0;
}

/* ---- in-process handler threads ---- */

static void handle_one(struct handler *h, unsigned int from, struct uskb *upcall)
{
	struct uskb *replies[2];
	int n;

	if (dp.handler_stall_ms)
		usleep(dp.handler_stall_ms * 1000u);
	handler_process(h, upcall, replies, &n);
	uskb_free(upcall);
	for (int i = 0; i < n; i++) {
		/* the datapath drains its replies every burst: wait for room, as a send would */
		while (!ring_push(dp.thr[from]->replies[h->id], replies[i])) {
			if (atomic_load(&dp.stop)) {
				uskb_free(replies[i]);
				break;
			}
			usleep(50);
		}
	}
}

static bool any_upcalls(struct handler *h)
{
	for (unsigned int i = 0; i < dp.nthreads; i++)
		if (atomic_load_explicit(&h->upcalls[i]->tail, memory_order_acquire) !=
		    atomic_load_explicit(&h->upcalls[i]->head, memory_order_relaxed))
			return true;
	return false;
}

static void *handler_main(void *arg)
{
	struct handler *h = arg;

	while (!atomic_load_explicit(&dp.stop, memory_order_relaxed)) {
		unsigned int got = 0;

		for (unsigned int i = 0; i < dp.nthreads; i++) {
			struct uskb *msg;

			/* a batch at a time from each thread, as recv_upcalls takes 64 */
			for (int b = 0; b < 64 && (msg = ring_pop(h->upcalls[i])); b++, got++)
				handle_one(h, i, msg);
		}
		if (got)
			continue;
		atomic_exchange(&h->sleeping, 1); /* pairs with dp_wake_handler()'s RMW */
		if (!any_upcalls(h)) {
			struct pollfd pfd = { .fd = h->efd, .events = POLLIN };
			uint64_t v;

			if (poll(&pfd, 1, 100) > 0)
				(void)!read(h->efd, &v, sizeof(v));
		}
		atomic_store(&h->sleeping, 0);
	}
	return NULL;
}

int handlers_start(void)
{
	macs.nports = dp.nports;
	for (unsigned int i = 0; i < dp.nhandlers; i++) {
		struct handler *h = dp.hnd[i];

		char name[16];

		int ret;

		h->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (h->efd < 0)
			return -errno;
		if ((ret = pthread_create(&h->tid, NULL, handler_main, h)))
			return -ret;
		snprintf(name, sizeof(name), "dp-handler%u", i % 100u); /* at most 32 */
		pthread_setname_np(h->tid, name);
	}
	return 0;
}

void handlers_stop(void)
{
	for (unsigned int i = 0; i < dp.nhandlers; i++) {
		struct handler *h = dp.hnd[i];

		if (h->tid) {
			dp_wake_handler(h);
			pthread_join(h->tid, NULL);
		}
		if (h->efd >= 0)
			close(h->efd);
	}
}

/* ---- an external handler: uskb-dp --handler-of PATH ---- */

/* OVS_VPORT_CMD_NEW: the datapath says which ports it has */
static int vport_attr(const struct nlattr *attr, void *data)
{
	if (mnl_attr_get_type(attr) == OVS_VPORT_ATTR_PORT_NO &&
	    mnl_attr_validate(attr, MNL_TYPE_U32) >= 0)
		*(uint32_t *)data = mnl_attr_get_u32(attr);
	return MNL_CB_OK;
}

static void vport_seen(const uint8_t *buf, size_t len)
{
	const struct nlmsghdr *nlh = (const struct nlmsghdr *)buf;
	uint32_t no = 0;

	if (!mnl_nlmsg_ok(nlh, (int)len) ||
	    nlh->nlmsg_len < NLMSG_HDRLEN + GENL_HDRLEN + sizeof(struct ovs_header))
		return;
	mnl_attr_parse(nlh, GENL_HDRLEN + sizeof(struct ovs_header), vport_attr, &no);
	pthread_mutex_lock(&macs.lock);
	if (no >= 1 && no <= DP_MAX_PORTS && no > macs.nports)
		macs.nports = no;
	pthread_mutex_unlock(&macs.lock);
}

int handler_external(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	static uint8_t buf[1 << 17];
	struct handler h = { 0 };
	bool told = false; /* the datapath told its ports */
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "uskb-dp: --handler-of: path too long: %s\n", path);
		return 1;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		fprintf(stderr, "uskb-dp: --handler-of %s: %s\n", path, strerror(errno));
		return 1;
	}
	if (!dp.quiet)
		fprintf(stderr, "uskb-dp: handling upcalls of %s\n", path);
	while (!atomic_load(&dp.stop)) {
		struct uskb *upcall, *replies[2];
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_TRUNC);
		int nr;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 && !told) {
			/* a datapath that has a handler takes no second one */
			fprintf(stderr, "uskb-dp: --handler-of %s: the datapath hung up before telling its "
					"ports: it has a handler already\n", path);
			close(fd);
			return 1;
		}
		if (n <= 0)
			break; /* the datapath went */
		if ((size_t)n > sizeof(buf)) {
			cnt_add(&h.bad, 1);
			continue;
		}
		if (n >= (ssize_t)NLMSG_HDRLEN && ((struct nlmsghdr *)buf)->nlmsg_type == DP_FAMILY_VPORT) {
			vport_seen(buf, (size_t)n);
			told = true;
			continue;
		}
		/* here the packet is in our memory: the kernel copied it through the socket */
		upcall = uskb_alloc((unsigned int)n);
		if (!upcall)
			break;
		uskb_put_data(upcall, buf, (unsigned int)n);
		if (dp.handler_stall_ms)
			usleep(dp.handler_stall_ms * 1000u);
		handler_process(&h, upcall, replies, &nr);
		uskb_free(upcall);
		for (int i = 0; i < nr; i++) {
			msg_send(fd, replies[i], 0);
			uskb_free(replies[i]);
		}
	}
	close(fd);
	if (!dp.quiet)
		fprintf(stderr, "uskb-dp: handled %llu upcalls (%llu refused, %llu userspace actions)\n",
			(unsigned long long)cnt_get(&h.handled), (unsigned long long)cnt_get(&h.bad),
			(unsigned long long)cnt_get(&h.action_upcalls));
	return 0;
}
