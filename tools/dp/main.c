/* SPDX-License-Identifier: MIT */
/*
 * uskb-dp: a flow datapath between uskb devices whose misses go up as Open
 * vSwitch upcalls built with skb_zerocopy (seed 004). Options, ports,
 * threads, the stats loop and the end.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <poll.h>
#include <linux/genetlink.h>

#include "dp.h"
#include "lib/unixpath.h"

static const char usage[] =
	"Usage: uskb-dp -p PORT [-p PORT]... [OPTION]...\n"
	"       uskb-dp --handler-of PATH [--rules FILE]\n"
	"\n"
	"A flow datapath between uskb devices. Each packet's Open vSwitch flow key\n"
	"is looked up in an exact-match table; a miss goes to a handler thread as an\n"
	"OVS_PACKET_CMD_MISS upcall whose packet is referenced (uskb_zerocopy), not\n"
	"copied. Handlers answer with OVS_FLOW_CMD_NEW and OVS_PACKET_CMD_EXECUTE.\n"
	"\n"
	"Ports (numbered from 1 in the order given):\n"
	"  -p, --port SPEC        a uskb device: packet:IFNAME, xdp:IFNAME[:QUEUE][:copy|:zc],\n"
	"                         null, pcap:FILE (send only), ... (uskb_dev_open(3));\n"
	"                         one datapath thread per receive queue\n"
	"Upcalls:\n"
	"  -t, --threads N        datapath threads, the receive queues dealt round to them\n"
	"                         (default: one per receive queue)\n"
	"      --spin-us US       after a frame, poll the queues US microseconds more\n"
	"                         before sleeping (default 50; 0: sleep at once)\n"
	"  -H, --handlers N       handler threads (default 1)\n"
	"      --copy             copy each packet into its upcall (the stock path)\n"
	"                         instead of referencing its pages\n"
	"      --unaligned        no pad after the packet (OVS_DP_F_UNALIGNED)\n"
	"      --queue N          upcalls queued per datapath thread and handler before\n"
	"                         they are lost (default 256)\n"
	"      --rules FILE       the handlers' rules, before the learning switch\n"
	"      --handler-socket PATH  handlers in another process: serve upcalls on\n"
	"                         this SOCK_SEQPACKET socket (uskb-dp --handler-of PATH),\n"
	"                         waiting for it within -d; a live process's is refused\n"
	"      --handler-of PATH  be that process: handle the upcalls of the datapath at PATH\n"
	"      --upcall-pcap FILE write every upcall to FILE (pcap, LINKTYPE_NETLINK)\n"
	"      --handler-stall MS handlers sleep MS before each upcall (to test loss)\n"
	"Flows:\n"
	"      --flow-limit N     most flows per datapath thread (default 200000)\n"
	"      --idle-ms MS       a flow unused for MS goes (default 10000)\n"
	"      --dump-flows       print the flows at the end (and on SIGUSR1)\n"
	"Running:\n"
	"  -d, --duration SEC     stop after SEC seconds (default: at Ctrl-C)\n"
	"      --stats SEC        print the counters every SEC seconds\n"
	"      --json             counters as one JSON object per line\n"
	"  -v, --verbose          say why messages were refused\n"
	"      --quiet            print nothing but errors (and --stats/--dump-flows)\n"
	"  -h, --help             this text\n"
	"  -V, --version\n"
	"\n"
	"Exit status: 0, 1 for a failure while running (an external handler that\n"
	"died among them, or objects left live at the end), 2 for bad options, rules\n"
	"or a handler socket path it may not take, 5 for a port that cannot be opened.\n";

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		atomic_fetch_add(&dp.dump_request, 1);
	else
		interrupted = 1;
}

static void die_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "uskb-dp: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'uskb-dp --help'.\n");
	exit(2);
}

static unsigned long num(const char *opt, const char *s, unsigned long min, unsigned long max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || end == s || *end || v < min || v > max || *s == '-') {
		fprintf(stderr, "uskb-dp: %s: '%s' is not a number from %lu to %lu\n", opt, s, min, max);
		exit(2);
	}
	return v;
}

static double seconds(const char *opt, const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || *end || !(v > 0) || !isfinite(v) || v > 1e7) {
		fprintf(stderr, "uskb-dp: %s: '%s' is not a positive number of seconds\n", opt, s);
		exit(2);
	}
	return v;
}

enum {
	O_COPY = 256, O_UNALIGNED, O_QUEUE, O_RULES, O_HSOCK, O_HOF, O_PCAP, O_STALL, O_LIMIT,
	O_IDLE, O_DUMP, O_STATS, O_JSON, O_QUIET, O_SPIN,
};

static const struct option lopts[] = {
	{ "port", required_argument, NULL, 'p' },
	{ "handlers", required_argument, NULL, 'H' },
	{ "threads", required_argument, NULL, 't' },
	{ "spin-us", required_argument, NULL, O_SPIN },
	{ "copy", no_argument, NULL, O_COPY },
	{ "unaligned", no_argument, NULL, O_UNALIGNED },
	{ "queue", required_argument, NULL, O_QUEUE },
	{ "rules", required_argument, NULL, O_RULES },
	{ "handler-socket", required_argument, NULL, O_HSOCK },
	{ "handler-of", required_argument, NULL, O_HOF },
	{ "upcall-pcap", required_argument, NULL, O_PCAP },
	{ "handler-stall", required_argument, NULL, O_STALL },
	{ "flow-limit", required_argument, NULL, O_LIMIT },
	{ "idle-ms", required_argument, NULL, O_IDLE },
	{ "dump-flows", no_argument, NULL, O_DUMP },
	{ "duration", required_argument, NULL, 'd' },
	{ "stats", required_argument, NULL, O_STATS },
	{ "json", no_argument, NULL, O_JSON },
	{ "verbose", no_argument, NULL, 'v' },
	{ "quiet", no_argument, NULL, O_QUIET },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ 0 },
};

static const char *port_specs[DP_MAX_PORTS];

static void parse(int argc, char **argv)
{
	unsigned long handlers = 1;
	int c;

	dp.queue_len = 256;
	dp.spin_us = 50;
	dp.flow_limit = 200000;
	dp.idle_ms = 10000;
	dp.hsock = -1;
	while ((c = getopt_long(argc, argv, "p:H:t:d:vhV", lopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (dp.nports == DP_MAX_PORTS)
				die_usage("at most %s ports", "32");
			port_specs[dp.nports++] = optarg;
			break;
		case 'H': handlers = num("--handlers", optarg, 1, DP_MAX_HANDLERS); break;
		case O_SPIN: dp.spin_us = (unsigned int)num("--spin-us", optarg, 0, 1000000); break;
		case 't': dp.want_threads = (unsigned int)num("--threads", optarg, 1, DP_MAX_THREADS); break;
		case O_COPY: dp.copy = true; break;
		case O_UNALIGNED: dp.unaligned = true; break;
		case O_QUEUE: dp.queue_len = (unsigned int)num("--queue", optarg, 1, 65536); break;
		case O_RULES: dp.rules_file = optarg; break;
		case O_HSOCK: dp.handler_socket = optarg; break;
		case O_HOF: dp.handler_socket = optarg, dp.handler_only = true; break;
		case O_PCAP: dp.upcall_pcap = optarg; break;
		case O_STALL: dp.handler_stall_ms = (unsigned int)num("--handler-stall", optarg, 0, 60000); break;
		case O_LIMIT: dp.flow_limit = (unsigned int)num("--flow-limit", optarg, 0, 1 << 24); break;
		case O_IDLE: dp.idle_ms = (unsigned int)num("--idle-ms", optarg, 1, 86400000); break;
		case O_DUMP: dp.dump_flows = true; break;
		case 'd': dp.duration = seconds("--duration", optarg); break;
		case O_STATS: dp.stats_interval = seconds("--stats", optarg); break;
		case O_JSON: dp.json = true; break;
		case 'v': dp.verbose = true; break;
		case O_QUIET: dp.quiet = true; break;
		case 'h': fputs(usage, stdout); exit(0);
		case 'V': printf("uskb-dp %s\n", USKB_VERSION_STRING); exit(0);
		default: fprintf(stderr, "Try 'uskb-dp --help'.\n"); exit(2);
		}
	}
	if (optind < argc)
		die_usage("unexpected argument '%s'", argv[optind]);
	if (dp.handler_only) {
		if (dp.nports)
			die_usage("%s: a handler process has no ports of its own", "--handler-of");
		return;
	}
	if (!dp.nports)
		die_usage("%s", "no ports: give at least one with -p SPEC");
	dp.nhandlers = dp.handler_socket ? 1 : (unsigned int)handlers;
	/* a power of two, at least what was asked */
	while (dp.queue_len & (dp.queue_len - 1))
		dp.queue_len += dp.queue_len & -dp.queue_len;
}

static void open_ports(void)
{
	struct rxq all[DP_MAX_QUEUES];
	unsigned int nq = 0, nthreads;

	for (unsigned int i = 0; i < dp.nports; i++) {
		struct port *p = &dp.port[i];

		p->no = i + 1;
		p->spec = port_specs[i];
		p->dev = uskb_dev_open(p->spec);
		if (!p->dev) {
			fprintf(stderr, "uskb-dp: port %u: %s\n", p->no, uskb_dev_strerror());
			exit(5); /* as uskb-pktgen and uskb-vhost */
		}
		p->ntx = p->dev->nqueues ? p->dev->nqueues : 1;
		for (unsigned int q = 0; q < p->dev->nrxqueues; q++) {
			if (nq == DP_MAX_QUEUES) {
				fprintf(stderr, "uskb-dp: more than %d receive queues\n", DP_MAX_QUEUES);
				exit(1);
			}
			all[nq++] = (struct rxq){ .port = p, .q = q };
		}
	}
	if (!nq) {
		fprintf(stderr, "uskb-dp: no port can receive: nothing to do\n");
		exit(2);
	}
	/* the receive queues dealt round to the threads; each owns its queues */
	nthreads = dp.want_threads && dp.want_threads < nq ? dp.want_threads : nq;
	for (unsigned int i = 0; i < nthreads; i++) {
		struct dpthread *t = aligned_alloc(64, (sizeof(*t) + 63) & ~(size_t)63);

		if (!t)
			exit(1);
		memset(t, 0, sizeof(*t));
		t->id = i;
		for (unsigned int p = 0; p < DP_MAX_PORTS; p++)
			t->txq[p] = -1;
		dp.thr[dp.nthreads++] = t;
	}
	for (unsigned int i = 0; i < nq; i++) {
		struct dpthread *t = dp.thr[i % nthreads];
		struct port *p = all[i].port;

		t->rx[t->nrx++] = all[i];
		p->rxthr[p->nrx++] = t;
		if (t->txq[p->no - 1] < 0)
			t->txq[p->no - 1] = (int)all[i].q;
	}
	/* threads that would share a transmit queue of a send-only port take turns on it */
	for (unsigned int i = 0; i < dp.nports; i++) {
		struct port *p = &dp.port[i];

		if (p->nrx || dp.nthreads <= p->ntx)
			continue;
		p->txlock = calloc(p->ntx, sizeof(*p->txlock));
		for (unsigned int q = 0; q < p->ntx; q++)
			pthread_mutex_init(&p->txlock[q], NULL);
	}
}

static struct ring *ring_or_die(unsigned int size)
{
	struct ring *r = ring_new(size);

	if (!r) {
		fprintf(stderr, "uskb-dp: out of memory\n");
		exit(1);
	}
	return r;
}

struct ring *ring_new(unsigned int size)
{
	struct ring *r = aligned_alloc(64, (sizeof(*r) + size * sizeof(void *) + 63) & ~(size_t)63);

	if (!r)
		return NULL;
	atomic_init(&r->head, 0);
	atomic_init(&r->tail, 0);
	r->mask = size - 1;
	return r;
}

void ring_free(struct ring *r)
{
	struct uskb *msg;

	if (!r)
		return;
	while ((msg = ring_pop(r)))
		uskb_free(msg);
	free(r);
}

static void make_rings(void)
{
	for (unsigned int h = 0; h < dp.nhandlers; h++) {
		struct handler *hd = NULL;

		if (!dp.handler_socket) {
			hd = calloc(1, sizeof(*hd));
			if (!hd)
				exit(1);
			hd->id = h;
			hd->efd = -1;
			dp.hnd[h] = hd;
		}
		for (unsigned int i = 0; i < dp.nthreads; i++) {
			if (hd)
				hd->upcalls[i] = ring_or_die(dp.queue_len);
			/* room for both replies of every queued upcall, and more */
			dp.thr[i]->replies[h] = ring_or_die(dp.queue_len * 4);
		}
	}
	/* a ring from each thread to each other thread that owns queues */
	for (unsigned int i = 0; i < dp.nthreads; i++)
		for (unsigned int j = 0; j < dp.nthreads; j++)
			if (i != j)
				dp.thr[i]->inbox[j] = ring_or_die(DP_BURST * 16);
	for (unsigned int i = 0; i < dp.nthreads; i++)
		if (table_init(&dp.thr[i]->tab, dp.flow_limit)) {
			fprintf(stderr, "uskb-dp: out of memory\n");
			exit(1);
		}
}

/* ---- --handler-socket: the datapath's side ---- */

static pthread_t reader;
static int listen_fd = -1;

static int send_vports(int fd)
{
	for (unsigned int i = 0; i < dp.nports; i++) {
		struct uskb *msg = uskb_nlmsg_new(GENL_HDRLEN + 4 + 256);
		struct ovs_header *oh;
		int ret = -1;

		if (!msg)
			return -1;
		oh = uskb_genlmsg_put(msg, 0, 0, DP_FAMILY_VPORT, sizeof(*oh), 0, OVS_VPORT_CMD_NEW,
				      OVS_VPORT_VERSION);
		if (oh && !uskb_nla_put_u32(msg, OVS_VPORT_ATTR_PORT_NO, dp.port[i].no) &&
		    !uskb_nla_put(msg, OVS_VPORT_ATTR_NAME, (int)strnlen(dp.port[i].spec, 200) + 1,
				  dp.port[i].spec)) {
			uskb_nlmsg_end(msg, (struct nlmsghdr *)msg->data);
			ret = send(fd, msg->data, msg->len, MSG_NOSIGNAL) == (ssize_t)msg->len ? 0 : -1;
		}
		uskb_free(msg);
		if (ret)
			return -1;
	}
	return 0;
}

/*
 * A reply from the handler on @fd: 1, 0 when none is waiting, -1 when the
 * handler is gone. A handler that died with upcalls unread makes the
 * kernel report ECONNRESET once, ahead of the replies it sent before:
 * those are still read (1), and @reset remembers the death.
 */
static int take_reply(int fd, bool *reset)
{
	static uint8_t buf[1 << 17];
	ssize_t n = recv(fd, buf, sizeof(buf), MSG_TRUNC | MSG_DONTWAIT);
	struct uskb *msg;

	if (n < 0 && errno == ECONNRESET) {
		*reset = true;
		return 1;
	}
	if (n < 0)
		return errno == EINTR ? 1 : errno == EAGAIN || errno == EWOULDBLOCK ? (*reset ? -1 : 0) : -1;
	/*
	 * A seqpacket socket reads 0 both at its end and for an empty
	 * message: only a peer that hung up ends the handler; an empty
	 * message is a bad reply, counted
	 */
	if (n == 0) {
		struct pollfd pfd = { .fd = fd, .events = POLLRDHUP };

		if (poll(&pfd, 1, 0) >= 0 && (pfd.revents & (POLLRDHUP | POLLHUP)))
			return -1;
		cnt_add(&dp.ext_bad, 1);
		return 1;
	}
	if ((size_t)n > sizeof(buf) || !(msg = uskb_alloc((unsigned int)n))) {
		cnt_add(&dp.ext_bad, 1);
		return 1;
	}
	uskb_put_data(msg, buf, (unsigned int)n);
	dp_deliver_reply(msg);
	return 1;
}

/* every reply waiting on @fd: false when the handler is gone (its end read) */
static bool take_replies(int fd)
{
	bool reset = false;
	int r;

	while ((r = take_reply(fd, &reset)) > 0 && !atomic_load(&dp.stop))
		;
	return r >= 0;
}

/* a handler that connected: told the ports, then the threads' upcalls go to it */
static bool take_handler(int fd)
{
	int sndbuf = 4 << 20;

	/* the socket's buffer is the upcall queue: the kernel's handlers get 4 MiB */
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	if (send_vports(fd))
		return false;
	atomic_store_explicit(&dp.hsock, fd, memory_order_release);
	return true;
}

static uint64_t orphaned_total(void)
{
	uint64_t n = 0;

	for (unsigned int i = 0; i < dp.nthreads; i++)
		n += cnt_get(&dp.thr[i]->orphaned);
	return n;
}

/*
 * The handler on @fd died: no upcall goes to it any more, each thread
 * counts what it had in flight there as lost, and then (no thread can be
 * sending on it now) the socket closes
 */
static int stale_fd = -1; /* a handler buried at the stop: closed once the threads have ended */

static void bury_handler(int fd)
{
	uint64_t before = orphaned_total();
	unsigned int gen;

	atomic_store_explicit(&dp.hsock, -1, memory_order_release);
	gen = atomic_fetch_add_explicit(&dp.handler_gen, 1, memory_order_acq_rel) + 1;
	for (unsigned int i = 0; i < dp.nthreads && !atomic_load(&dp.stop); i++)
		while (atomic_load_explicit(&dp.thr[i]->handler_ack, memory_order_acquire) != gen &&
		       !atomic_load(&dp.stop))
			usleep(1000);
	if (atomic_load(&dp.stop)) {
		/* a thread may not have settled: the fd stays open (never reused) until they end */
		stale_fd = fd;
		return;
	}
	close(fd);
	{
		pthread_mutex_lock(&dp.print_lock);
		fprintf(stderr,
			"uskb-dp: --handler-socket %s: the external handler went away; %" PRIu64
			" upcall%s in flight to it counted as lost; waiting for another\n",
			dp.handler_socket, orphaned_total() - before, orphaned_total() - before == 1 ? "" : "s");
		pthread_mutex_unlock(&dp.print_lock);
	}
}

/*
 * The socket's reader: replies to the threads; a handler that dies is
 * buried and the next one that connects takes over; one that connects
 * while another serves is refused (its recv reads the end at once).
 */
static void *reader_main(void *arg)
{
	int fd = (int)(intptr_t)arg;

	while (!atomic_load(&dp.stop)) {
		struct pollfd pfd[2] = { { .fd = listen_fd, .events = POLLIN },
					 { .fd = fd, .events = POLLIN } };
		int nfd;

		if (poll(pfd, fd >= 0 ? 2 : 1, 100) <= 0)
			continue;
		/*
		 * The handler's replies, all that wait: a killed handler's
		 * successor may connect before its end is read, and must find
		 * it buried, not be refused as a second handler
		 */
		if (fd >= 0 && (pfd[1].revents || (pfd[0].revents & POLLIN)) && !take_replies(fd)) {
			bury_handler(fd);
			fd = -1;
			cnt_add(&dp.handler_deaths, 1);
		}
		if (!(pfd[0].revents & POLLIN) ||
		    (nfd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC)) < 0)
			continue;
		pthread_mutex_lock(&dp.print_lock);
		if (fd >= 0) {
			/* another uskb-dp's probe of the path (a connect) lands here too */
			if (dp.verbose)
				fprintf(stderr, "uskb-dp: --handler-socket %s: refused a second connection: a "
						"handler is connected\n", dp.handler_socket);
			close(nfd);
		} else if (take_handler(nfd)) {
			if (!dp.quiet)
				fprintf(stderr, "uskb-dp: --handler-socket %s: a new handler took over\n",
					dp.handler_socket);
			fd = nfd;
		} else {
			close(nfd);
		}
		pthread_mutex_unlock(&dp.print_lock);
	}
	/* the end: main closes it once the datapath threads, which may still send on it, have ended */
	return (void *)(intptr_t)fd;
}

/* the socket file goes with the process, however it exits (a kill -9's is replaced by the next run) */
static void unlink_handler_socket(void)
{
	unlink(dp.handler_socket);
}

/*
 * Bind the handler socket (a live process's path is refused: exit 2) and
 * wait for the first handler, within the run's duration (-d) and until a
 * signal
 */
static void serve_handler_socket(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	uint64_t end = dp.duration ? now_ns() + (uint64_t)(dp.duration * 1e9) : 0;
	int claim, fd = -1;

	if (strlen(dp.handler_socket) >= sizeof(sa.sun_path))
		die_usage("--handler-socket: path too long: %s", dp.handler_socket);
	strcpy(sa.sun_path, dp.handler_socket);
	claim = uskb_unix_path_claim(dp.handler_socket, SOCK_SEQPACKET);
	if (claim == -EADDRINUSE || claim == -ENOTSOCK) {
		fprintf(stderr, "uskb-dp: --handler-socket %s: %s\n", dp.handler_socket,
			claim == -EADDRINUSE ? "a live process serves this socket (another uskb-dp?): not "
					       "taken over" :
					       "something other than a socket is there: left alone");
		exit(2);
	}
	listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(listen_fd, 4)) {
		fprintf(stderr, "uskb-dp: --handler-socket %s: %s\n", dp.handler_socket, strerror(errno));
		exit(1);
	}
	atexit(unlink_handler_socket);
	if (!dp.quiet)
		fprintf(stderr, "uskb-dp: waiting for a handler on %s (uskb-dp --handler-of %s)\n",
			dp.handler_socket, dp.handler_socket);
	for (;;) {
		struct pollfd pfd = { .fd = listen_fd, .events = POLLIN };
		uint64_t now = now_ns();
		int ms = end ? (now >= end ? 0 : (int)((end - now) / 1000000) + 1) : -1;

		if (end && now >= end) {
			fprintf(stderr, "uskb-dp: --handler-socket %s: no handler came within the run's %g s\n",
				dp.handler_socket, dp.duration);
			exit(1);
		}
		if (poll(&pfd, 1, ms) > 0 && (fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
			if (take_handler(fd))
				break;
			close(fd);
			fd = -1;
		}
		if (interrupted) {
			fprintf(stderr, "uskb-dp: --handler-socket %s: interrupted while waiting for a handler\n",
				dp.handler_socket);
			exit(1);
		}
	}
	if (pthread_create(&reader, NULL, reader_main, (void *)(intptr_t)fd)) {
		fprintf(stderr, "uskb-dp: --handler-socket: cannot start its reader\n");
		exit(1);
	}
}

/* ---- counters ---- */

struct totals {
	uint64_t hit, missed, lost, flows, executed, bad_replies, bad_frames, action_upcalls,
		flow_limit, expired, handled, refused, handoff_drops, orphaned, handler_deaths;
};

static void totals(struct totals *s)
{
	memset(s, 0, sizeof(*s));
	for (unsigned int i = 0; i < dp.nthreads; i++) {
		struct dpthread *t = dp.thr[i];

		s->hit += cnt_get(&t->hit);
		s->missed += cnt_get(&t->missed);
		s->lost += cnt_get(&t->lost);
		s->flows += cnt_get(&t->flows);
		s->executed += cnt_get(&t->executed);
		s->bad_replies += cnt_get(&t->bad_replies);
		s->bad_frames += cnt_get(&t->bad_frames);
		s->action_upcalls += cnt_get(&t->action_upcalls);
		s->flow_limit += cnt_get(&t->flow_limit);
		s->expired += cnt_get(&t->expired);
		s->handoff_drops += cnt_get(&t->handoff_drops);
		s->orphaned += cnt_get(&t->orphaned);
	}
	s->bad_replies += cnt_get(&dp.ext_bad);
	s->handler_deaths = cnt_get(&dp.handler_deaths);
	for (unsigned int h = 0; h < dp.nhandlers; h++) {
		if (!dp.hnd[h])
			continue;
		s->handled += cnt_get(&dp.hnd[h]->handled);
		s->refused += cnt_get(&dp.hnd[h]->bad) + cnt_get(&dp.hnd[h]->refused);
	}
}

static void print_stats(double elapsed, bool final)
{
	struct totals s;

	totals(&s);
	if (dp.json) {
		printf("{\"time\": %.3f, \"final\": %s, \"mode\": \"%s\", \"hit\": %" PRIu64
		       ", \"missed\": %" PRIu64 ", \"lost\": %" PRIu64 ", \"flows\": %" PRIu64
		       ", \"expired\": %" PRIu64 ", \"flow_limit_hit\": %" PRIu64
		       ", \"executed\": %" PRIu64 ", \"action_upcalls\": %" PRIu64
		       ", \"handled\": %" PRIu64 ", \"refused\": %" PRIu64
		       ", \"bad_replies\": %" PRIu64 ", \"bad_frames\": %" PRIu64
		       ", \"handoff_drops\": %" PRIu64 ", \"handler_deaths\": %" PRIu64
		       ", \"lost_in_flight\": %" PRIu64 ", \"ports\": [",
		       elapsed, final ? "true" : "false", dp.copy ? "copy" : "zerocopy", s.hit,
		       s.missed, s.lost, s.flows, s.expired, s.flow_limit, s.executed,
		       s.action_upcalls, s.handled, s.refused, s.bad_replies, s.bad_frames,
		       s.handoff_drops, s.handler_deaths, s.orphaned);
	} else {
		printf("uskb-dp: %.1f s (%s upcalls)\n  lookups: hit:%" PRIu64 " missed:%" PRIu64
		       " lost:%" PRIu64 "\n  flows: %" PRIu64 "\n",
		       elapsed, dp.copy ? "copy" : "zerocopy", s.hit, s.missed, s.lost, s.flows);
		printf("  upcalls: handled:%" PRIu64 " refused:%" PRIu64 " executed:%" PRIu64
		       " bad-replies:%" PRIu64 " action:%" PRIu64 "\n",
		       s.handled, s.refused, s.executed, s.bad_replies, s.action_upcalls);
		if (s.expired || s.flow_limit || s.bad_frames || s.handoff_drops)
			printf("  expired:%" PRIu64 " flow-limit-hit:%" PRIu64 " bad-frames:%" PRIu64
			       " handoff-drops:%" PRIu64 "\n",
			       s.expired, s.flow_limit, s.bad_frames, s.handoff_drops);
		if (s.handler_deaths)
			printf("  handler deaths:%" PRIu64 " lost in flight:%" PRIu64 "\n",
			       s.handler_deaths, s.orphaned);
	}
	for (unsigned int i = 0; i < dp.nports; i++) {
		struct uskb_dev_stats st;

		uskb_dev_get_stats(dp.port[i].dev, -1, &st);
		if (dp.json)
			printf("%s{\"port\": %u, \"spec\": \"%s\", \"rx_packets\": %" PRIu64
			       ", \"rx_bytes\": %" PRIu64 ", \"rx_dropped\": %" PRIu64
			       ", \"rx_copied\": %" PRIu64 ", \"rx_orphaned\": %" PRIu64
			       ", \"tx_packets\": %" PRIu64 ", \"tx_bytes\": %" PRIu64
			       ", \"tx_dropped\": %" PRIu64 "}",
			       i ? ", " : "", dp.port[i].no, dp.port[i].spec, st.rx_packets, st.rx_bytes,
			       st.rx_dropped, st.rx_copied, st.rx_orphaned, st.tx_packets, st.tx_bytes,
			       st.tx_dropped + st.tx_busy);
		else
			printf("  port %u: %s\n    RX packets:%" PRIu64 " dropped:%" PRIu64
			       "\n    TX packets:%" PRIu64 " dropped:%" PRIu64 "\n",
			       dp.port[i].no, dp.port[i].spec, st.rx_packets, st.rx_dropped,
			       st.tx_packets, st.tx_dropped + st.tx_busy);
	}
	if (dp.json)
		printf("]}\n");
	fflush(stdout);
}

static void catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

int main(int argc, char **argv)
{
	uint64_t start, next_stats;
	unsigned int started;
	int status = 0, ret;

	parse(argc, argv);
	catch_signals();
	if (dp.rules_file && rules_load(dp.rules_file))
		return 2;
	if (dp.handler_only) {
		status = handler_external(dp.handler_socket);
		rules_free();
		return status;
	}
	pthread_mutex_init(&dp.print_lock, NULL);
	open_ports();
	make_rings();
	if (dp.upcall_pcap && pcap_open(dp.upcall_pcap))
		return 1;
	/* the run's -d counts from here: a wait for the external handler is part of it */
	start = now_ns();
	if (dp.handler_socket)
		serve_handler_socket();
	else if ((ret = handlers_start())) {
		fprintf(stderr, "uskb-dp: cannot start the handlers: %s\n", strerror(-ret));
		return 1;
	}
	for (started = 0; started < dp.nthreads; started++)
		if ((ret = dp_thread_start(dp.thr[started]))) {
			fprintf(stderr, "uskb-dp: cannot start a thread: %s\n", strerror(-ret));
			atomic_store(&dp.stop, 1);
			status = 1;
			break;
		}
	if (!dp.quiet && !status) {
		char hs[32];

		snprintf(hs, sizeof(hs), "%u handler%s", dp.nhandlers, dp.nhandlers == 1 ? "" : "s");
		fprintf(stderr, "uskb-dp: %u port%s, %u datapath thread%s, %s, %s upcalls\n",
			dp.nports, dp.nports == 1 ? "" : "s", dp.nthreads, dp.nthreads == 1 ? "" : "s",
			dp.handler_socket ? "an external handler" : hs, dp.copy ? "copied" : "zero-copy");
	}
	next_stats = start + (uint64_t)(dp.stats_interval * 1e9);
	while (!interrupted && !atomic_load(&dp.stop)) {
		uint64_t now = now_ns();

		if (dp.duration && now - start >= (uint64_t)(dp.duration * 1e9))
			break;
		if (dp.stats_interval && now >= next_stats) {
			pthread_mutex_lock(&dp.print_lock);
			print_stats((double)(now - start) / 1e9, false);
			pthread_mutex_unlock(&dp.print_lock);
			next_stats += (uint64_t)(dp.stats_interval * 1e9);
		}
		usleep(10000);
	}
	atomic_store(&dp.stop, 1);
	for (unsigned int i = 0; i < started; i++)
		pthread_join(dp.thr[i]->tid, NULL);
	if (dp.handler_socket) {
		void *last;

		pthread_join(reader, &last);
		atomic_store(&dp.hsock, -1);
		if ((int)(intptr_t)last >= 0)
			close((int)(intptr_t)last);
		if (stale_fd >= 0)
			close(stale_fd);
		close(listen_fd);
	} else {
		handlers_stop();
	}
	if (!dp.quiet || dp.json)
		print_stats((double)(now_ns() - start) / 1e9, true);
	if (cnt_get(&dp.handler_deaths)) {
		fprintf(stderr, "uskb-dp: %" PRIu64 " external handler%s died during the run; %" PRIu64
				" upcall%s in flight to %s counted as lost\n",
			cnt_get(&dp.handler_deaths), cnt_get(&dp.handler_deaths) == 1 ? "" : "s",
			orphaned_total(), orphaned_total() == 1 ? "" : "s",
			cnt_get(&dp.handler_deaths) == 1 ? "it" : "them");
		status = 1;
	}
	if (dp.dump_flows)
		for (unsigned int i = 0; i < dp.nthreads; i++)
			for (uint32_t b = 0; b <= dp.thr[i]->tab.mask; b++)
				for (struct flow *f = dp.thr[i]->tab.bucket[b]; f; f = f->next)
					flow_print(stdout, f, now_ns());
	/* what is still queued goes, then the tables and the ports */
	for (unsigned int i = 0; i < dp.nthreads; i++) {
		for (unsigned int h = 0; h < dp.nhandlers; h++) {
			ring_free(dp.thr[i]->replies[h]);
			if (dp.hnd[h])
				ring_free(dp.hnd[h]->upcalls[i]);
		}
		for (unsigned int j = 0; j < dp.nthreads; j++)
			ring_free(dp.thr[i]->inbox[j]);
		table_destroy(&dp.thr[i]->tab);
	}
	for (unsigned int i = 0; i < dp.nports; i++) {
		uskb_dev_close(dp.port[i].dev);
		free(dp.port[i].txlock);
	}
	for (unsigned int i = 0; i < dp.nthreads; i++)
		free(dp.thr[i]);
	for (unsigned int h = 0; h < dp.nhandlers; h++)
		free(dp.hnd[h]);
	pcap_close();
	rules_free();
	if (!uskb_stats_all_freed()) {
		fprintf(stderr, "uskb-dp: live objects remain at the end (a leak)\n");
		status = 1;
	}
	return status;
}
