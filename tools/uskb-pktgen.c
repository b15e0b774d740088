/* SPDX-License-Identifier: MIT */
/*
 * uskb-pktgen: the kernel's pktgen in userspace. The options are those of
 * the kernel's samples/pktgen/parameters.sh; extra arguments are raw pktgen
 * device commands; --script runs pg_ctrl / pg_thread / pg_set lines.
 * See man/uskb-pktgen.8.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uskb/uskb.h>
#include <uskb/dev.h>
#include <uskb/pktgen.h>

#define VERSION "0.1.0"

static struct uskb_pktgen *g_pg;
static int verbose, quiet, json, dry_run;
static bool hush; /* dry run: only the last command's reply is shown */
static double duration;

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: uskb-pktgen -i DEV [OPTION]... [\"COMMAND VALUE\"]...\n"
		"       uskb-pktgen --script FILE [--json] [-q]\n"
		"       uskb-pktgen --rx DEV [-n COUNT] [--duration S] [--json] [-q]\n"
		"The kernel's packet generator in userspace: its command language, its packets\n"
		"and its result lines. Each extra argument is a raw pktgen device command\n"
		"applied after the options (e.g. \"flag IPSRC_RND\" \"src_min 198.18.0.1\").\n"
		"\n"
		"Options of the kernel's samples/pktgen/parameters.sh:\n"
		"  -i DEV        output device: null, null:nocsum, pcap:FILE, packet:IFNAME\n"
		"                [:mmsg], xdp:IFNAME[:QUEUE][:copy|:zc] or an interface name\n"
		"                (required unless --veth)\n"
		"  -s SIZE       packet size without FCS (default 60)\n"
		"  -d DEST_IP    destination address or CIDR range\n"
		"                (default 198.18.0.42, with -6 fd00::1)\n"
		"  -m DST_MAC    destination MAC (default 90:e2:ba:ff:ff:ff)\n"
		"  -p PORT       UDP destination port N or range N-M\n"
		"  -t THREADS    generator threads, one device (DEV@N) each (default 1)\n"
		"  -f FIRST      first thread number (default 0)\n"
		"  -c CLONE_SKB  send each built skb this many more times (default 0)\n"
		"  -n COUNT      packets per thread, 0 = until stopped (default 100000;\n"
		"                0 when --duration is given)\n"
		"  -b BURST      skbs handed to the device per call (default 1)\n"
		"  -w DELAY      nanoseconds between packets (default 0)\n"
		"  -6            IPv6\n"
		"  -k            UDP checksum (flag UDPCSUM)\n"
		"  -a            append: accepted for compatibility (each run starts clean)\n"
		"  -v            print each command and its reply\n"
		"  -x            print the device files before starting\n"
		"More:\n"
		"      --frags N      payload in N frags of the shared zero page\n"
		"      --rate MBPS    total rate in Mb/s on the wire (preamble, FCS and gap\n"
		"                     counted), split over the threads\n"
		"      --ratep PPS    total packets per second, split over the threads\n"
		"      --duration S   stop after S seconds\n"
		"      --seed N       seed for the random flags (runs repeat exactly)\n"
		"      --imix \"S,W S,W ...\"  packet sizes and weights\n"
		"      --json         one JSON object per device instead of the status block\n"
		"      --script FILE  run pg_ctrl / pg_thread N / pg_set DEV lines\n"
		"      --dry-run      with --script: check the commands, send nothing\n"
		"      --print-range ADDR  print the first and last address of a CIDR range\n"
		"      --veth         (root) send through a private veth pair made for the run\n"
		"                     (198.18.0.1 -> 198.18.0.2) and removed after it; -i may\n"
		"                     then name the kind: packet (default), packet::mmsg, xdp\n"
		"      --no-pin       do not pin thread N to CPU N\n"
		"      --rx DEV       receive instead (packet:IFNAME, xdp:IFNAME[:QUEUE] or an\n"
		"                     interface name; all the device's queues):\n"
		"                     count pktgen packets, lost / reordered / duplicate\n"
		"                     sequence numbers, latency p50/p99/p99.9 from the send\n"
		"                     times (same clock: same machine); ends after -n COUNT\n"
		"                     pktgen packets (default: none), --duration or Ctrl-C\n"
		"  -q, --quiet        no progress line on stderr\n"
		"  -h, --help         this text\n"
		"      --version      print the version\n"
		"\n"
		"While running, a progress line per second goes to stderr; Ctrl-C stops\n"
		"cleanly and reports. Exit status: 0 ok, 1 bad usage, 2 the engine could\n"
		"not be set up, 5 a command was refused (a device that cannot be opened too).\n");
}

static void die_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "uskb-pktgen: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'uskb-pktgen --help'.\n");
	exit(1);
}

/* proc_cmd() of functions.sh: write, then complain unless the reply is OK */
static void proc_cmd(const char *file, const char *cmd)
{
	int err = uskb_pktgen_write(g_pg, file, cmd);
	const char *res = uskb_pktgen_result(g_pg, file);

	if (verbose)
		fprintf(stderr, "cmd: %s > %s%s%s\n", cmd, file, res ? "\n  Result: " : "",
			res ? res : "");
	if (strcmp(file, "pgctrl") && res && strncmp(res, "OK:", 3) && !verbose && !hush)
		fprintf(stderr, "Result: %s\n", res);
	if (err) {
		if (!strncmp(cmd, "add_device", 10) && err != -EBUSY)
			fprintf(stderr, "uskb-pktgen: %s\n", uskb_dev_strerror());
		fprintf(stderr, "ERROR: Write error(%d: %s) occurred cmd: \"%s > %s\"\n", -err,
			strerror(-err), cmd, file);
		uskb_pktgen_free(g_pg);
		exit(5);
	}
}

static void proc_cmdf(const char *file, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void proc_cmdf(const char *file, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	proc_cmd(file, buf);
}

/* ---- running, progress, results ---- */

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
	(void)sig;
	if (interrupted) {
		signal(SIGINT, SIG_DFL);
		raise(SIGINT);
	}
	interrupted = 1;
	if (g_pg)
		uskb_pktgen_stop(g_pg);
}

struct progress {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;
};

static void *progress_main(void *arg)
{
	struct progress *p = arg;
	struct timespec start, next;
	uint64_t last_sent = 0, last_bytes = 0;
	bool tty = isatty(2);

	clock_gettime(CLOCK_MONOTONIC, &start);
	next = start;
	pthread_mutex_lock(&p->mu);
	for (int tick = 1; !p->done; tick++) {
		struct uskb_pktgen_stats st;
		uint64_t sent = 0, bytes = 0, errors = 0;
		struct timespec now;
		double t;

		struct timespec wake;

		next.tv_sec++;
		wake = next;
		if (duration > 0 && duration < (double)(next.tv_sec - start.tv_sec)) {
			/* the deadline falls before this tick: wake for it */
			double end = (double)start.tv_sec + (double)start.tv_nsec / 1e9 + duration;

			wake.tv_sec = (time_t)end;
			wake.tv_nsec = (long)((end - (double)wake.tv_sec) * 1e9);
		}
		while (!p->done && pthread_cond_timedwait(&p->cv, &p->mu, &wake) != ETIMEDOUT)
			;
		if (p->done)
			break;
		clock_gettime(CLOCK_MONOTONIC, &now);
		t = (double)(now.tv_sec - start.tv_sec) + (double)(now.tv_nsec - start.tv_nsec) / 1e9;
		if (duration > 0 && t >= duration) {
			uskb_pktgen_stop(g_pg);
			break;
		}
		for (int i = 0; uskb_pktgen_dev_stats(g_pg, i, NULL, 0, &st) == 0; i++) {
			sent += st.sofar;
			bytes += st.tx_bytes;
			errors += st.errors;
		}
		if (!quiet)
			fprintf(stderr, "%s%6.1fs %12" PRIu64 " pps %8" PRIu64 " Mb/s  errors %" PRIu64
					"  sent %" PRIu64 "%s",
				tty ? "\r" : "", t, sent - last_sent, (bytes - last_bytes) * 8 / 1000000,
				errors, sent, tty ? "\033[K" : "\n");
		last_sent = sent;
		last_bytes = bytes;
		(void)tick;
	}
	pthread_mutex_unlock(&p->mu);
	if (!quiet && tty && last_sent)
		fputc('\n', stderr);
	return NULL;
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if (*s == '\n')
			printf("\\n");
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

static void report(void)
{
	char name[256], *buf = malloc(65536);
	struct uskb_pktgen_stats st;

	if (!buf)
		return;
	for (int i = 0; uskb_pktgen_dev_stats(g_pg, i, name, sizeof(name), &st) == 0; i++) {
		const char *res = uskb_pktgen_result(g_pg, name);
		unsigned long long us = 0, busy = 0, idle = 0, sofar = 0, pps = 0, mb = 0, bps = 0,
				   errs = 0;
		unsigned int size = 0;
		int frags = 0;

		if (!json) {
			uskb_pktgen_read(g_pg, name, buf, 65536);
			printf("%s%s", i ? "\n" : "", buf);
			continue;
		}
		/* the figures of the result line itself */
		if (!res || sscanf(res, "OK: %llu(c%llu+d%llu) usec, %llu (%ubyte,%dfrags)\n  %llupps "
					"%lluMb/sec (%llubps) errors: %llu",
				   &us, &busy, &idle, &sofar, &size, &frags, &pps, &mb, &bps, &errs) != 10) {
			printf("{\"device\": ");
			json_str(name);
			printf(", \"ok\": false, \"result\": ");
			json_str(res ? res : "");
			printf("}\n");
			continue;
		}
		printf("{\"device\": ");
		json_str(name);
		printf(", \"ok\": true, \"usec\": %llu, \"busy_usec\": %llu, \"idle_usec\": %llu, "
		       "\"packets\": %llu, \"pkt_size\": %u, \"frags\": %d, \"pps\": %llu, "
		       "\"mbps\": %llu, \"bps\": %llu, \"errors\": %llu, \"tx_bytes\": %" PRIu64
		       ", \"result\": ",
		       us, busy, idle, sofar, size, frags, pps, mb, bps, errs, st.tx_bytes);
		json_str(res);
		printf("}\n");
	}
	fflush(stdout);
	free(buf);
}

static void start_run(void)
{
	struct progress p = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };
	pthread_condattr_t ca;
	bool prog;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p.cv, &ca);
	prog = pthread_create(&p.th, NULL, progress_main, &p) == 0;
	proc_cmd("pgctrl", "start");
	if (prog) {
		pthread_mutex_lock(&p.mu);
		p.done = true;
		pthread_cond_signal(&p.cv);
		pthread_mutex_unlock(&p.mu);
		pthread_join(p.th, NULL);
	}
	if (interrupted)
		fprintf(stderr, "uskb-pktgen: interrupted, stopped\n");
	report();
}

/* ---- script mode ---- */

static char *unquote(char *s)
{
	size_t n;

	while (*s == ' ' || *s == '\t')
		s++;
	n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
		s[--n] = 0;
	if (n >= 2 && (s[0] == '"' || s[0] == '\'') && s[n - 1] == s[0]) {
		s[n - 1] = 0;
		s++;
	}
	return s;
}

static int run_script(const char *path)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	char line[1024];
	int lineno = 0, nlines = 0;
	bool ran = false;

	if (!f) {
		fprintf(stderr, "uskb-pktgen: cannot open %s: %s\n", path, strerror(errno));
		return 1;
	}
	if (dry_run && f != stdin) {
		while (fgets(line, sizeof(line), f))
			nlines++;
		rewind(f);
	}
	while (fgets(line, sizeof(line), f)) {
		char *s = line, *word, *rest;

		lineno++;
		hush = dry_run && lineno < nlines;
		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s || *s == '#' || *s == '\n')
			continue;
		word = strsep(&s, " \t\n");
		rest = s ? s : (char *)"";
		if (!strcmp(word, "pg_ctrl")) {
			rest = unquote(rest);
			if (!strcmp(rest, "start")) {
				if (!dry_run)
					start_run();
				ran = true;
			} else {
				proc_cmd("pgctrl", rest);
			}
		} else if (!strcmp(word, "pg_thread") || !strcmp(word, "pg_set")) {
			char file[300], *arg;

			while (*rest == ' ' || *rest == '\t')
				rest++;
			arg = strsep(&rest, " \t\n");
			if (!arg || !*arg || !rest) {
				fprintf(stderr, "uskb-pktgen: %s:%d: %s needs a %s and a command\n", path,
					lineno, word, word[3] == 't' ? "thread number" : "device");
				return 1;
			}
			if (word[3] == 't')
				snprintf(file, sizeof(file), "kpktgend_%s", arg);
			else
				snprintf(file, sizeof(file), "%s", unquote(arg));
			{
				/* pg_thread 0 "add_device" v0: the words make one command */
				char cmd[1024] = "";
				char *tok;

				while ((tok = strsep(&rest, " \t\n"))) {
					if (!*tok)
						continue;
					if (cmd[0])
						strncat(cmd, " ", sizeof(cmd) - strlen(cmd) - 1);
					strncat(cmd, tok, sizeof(cmd) - strlen(cmd) - 1);
				}
				proc_cmd(file, unquote(cmd));
			}
		} else {
			fprintf(stderr,
				"uskb-pktgen: %s:%d: unknown line \"%s\": use pg_ctrl, pg_thread N or pg_set DEV\n",
				path, lineno, word);
			return 1;
		}
	}
	if (f != stdin)
		fclose(f);
	if (!ran && !dry_run)
		fprintf(stderr, "uskb-pktgen: %s has no \"pg_ctrl start\": nothing was sent\n", path);
	return 0;
}

/* ---- address and port ranges (parse_addr / parse_ports of functions.sh) ---- */

/* An address or CIDR range of @family -> its first and last address. */
static bool parse_cidr(int family, const char *s, char *min, char *max, bool *range)
{
	int nbytes = family == AF_INET ? 4 : 16;
	long bits = nbytes * 8;
	unsigned char a[16], b[16];
	char buf[128], *slash;

	snprintf(buf, sizeof(buf), "%s", s);
	slash = strchr(buf, '/');
	*range = slash != NULL;
	if (slash) {
		char *end;

		*slash = 0;
		bits = strtol(slash + 1, &end, 10);
		if (!slash[1] || *end || bits < 0 || bits > nbytes * 8)
			return false;
	}
	if (inet_pton(family, buf, a) != 1)
		return false;
	memcpy(b, a, sizeof(b));
	for (int i = 0; i < nbytes; i++) {
		int keep = bits >= (i + 1) * 8 ? 8 : bits > i * 8 ? (int)bits - i * 8 : 0;
		uint8_t m = (uint8_t)(keep ? 0xff << (8 - keep) : 0);

		a[i] &= m;
		b[i] |= (uint8_t)~m;
	}
	inet_ntop(family, a, min, INET6_ADDRSTRLEN);
	inet_ntop(family, b, max, INET6_ADDRSTRLEN);
	return true;
}

/* N or N-M, 1 <= N <= M <= 65535, nothing else */
static bool parse_ports(const char *s, unsigned long *lo, unsigned long *hi)
{
	char *end;

	if (!isdigit((unsigned char)*s))
		return false;
	*lo = strtoul(s, &end, 10);
	*hi = *lo;
	if (*end == '-') {
		if (!isdigit((unsigned char)end[1]))
			return false;
		*hi = strtoul(end + 1, &end, 10);
	}
	return !*end && *lo >= 1 && *lo <= *hi && *hi <= 65535;
}

/* The frame a packet of pkt_size @size really is: pktgen grows it to hold its header. */
static double frame_bytes(double size, bool ip6)
{
	double min = ip6 ? 14 + 40 + 8 + 16 : 14 + 20 + 8 + 16;

	return size < min ? min : size;
}

/* The mean frame of an imix_weights list, or 0 if it does not parse. */
static double imix_mean(const char *s, bool ip6)
{
	double sum = 0, weights = 0;
	unsigned long size, w;
	int n;

	while (sscanf(s, " %lu,%lu%n", &size, &w, &n) == 2) {
		sum += frame_bytes((double)(size < 42 ? 42 : size), ip6) * (double)w;
		weights += (double)w;
		s += n;
	}
	return weights > 0 ? sum / weights : 0;
}

static unsigned long parse_num(const char *opt, const char *s, unsigned long max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (!*s || *end || errno || v > max || s[0] == '-') {
		fprintf(stderr, "uskb-pktgen: %s: \"%s\" is not a number from 0 to %lu\n", opt, s, max);
		exit(1);
	}
	return v;
}

static double parse_real(const char *opt, const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (!*s || *end || !(v > 0)) {
		fprintf(stderr, "uskb-pktgen: %s: \"%s\" is not a positive number\n", opt, s);
		exit(1);
	}
	return v;
}

/* ---- --veth: a private veth pair for the run ---- */

static char veth_ns[2][32], veth_if[2][16];
static bool veth_made;

/* run a program (ip) quietly; its exit status, or -1 */
static int run(char *const argv[])
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		setpgid(0, 0); /* a Ctrl-C is ours to handle, not ip's: let it finish */
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

#define IP(...) run((char *[]){ "ip", __VA_ARGS__, NULL })

static void veth_down(void)
{
	if (!veth_made)
		return;
	veth_made = false;
	IP("netns", "del", veth_ns[0]);
	IP("netns", "del", veth_ns[1]);
}

/* received packets of @ifname in this thread's network namespace, -1 if unknown */
static long long rx_packets(const char *ifname)
{
	FILE *f = fopen("/proc/self/net/dev", "r");
	char line[512], name[64];
	long long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *c = strchr(line, ':');

		if (c && sscanf(line, " %63[^:]", name) == 1 && !strcmp(name, ifname))
			sscanf(c + 1, "%*s %lld", &v); /* bytes, then packets */
	}
	fclose(f);
	return v;
}

/* packets the peer received: step into its namespace, count, step back */
static long long veth_peer_rx(void)
{
	char path[128];
	long long v = -1;
	int peer, self;

	snprintf(path, sizeof(path), "/run/netns/%s", veth_ns[1]);
	peer = open(path, O_RDONLY);
	self = open("/proc/self/ns/net", O_RDONLY);
	if (peer >= 0 && self >= 0 && setns(peer, CLONE_NEWNET) == 0) {
		v = rx_packets(veth_if[1]);
		setns(self, CLONE_NEWNET);
	}
	if (peer >= 0)
		close(peer);
	if (self >= 0)
		close(self);
	return v;
}

static void veth_up(void)
{
	char nspath[64];
	int fd, pid = (int)getpid();

	if (geteuid() != 0) {
		fprintf(stderr, "uskb-pktgen: --veth needs root (CAP_NET_ADMIN) to create network namespaces\n");
		exit(1);
	}
	for (int i = 0; i < 2; i++) {
		snprintf(veth_ns[i], sizeof(veth_ns[i]), "uskb-%d-%c", pid, 'a' + i);
		snprintf(veth_if[i], sizeof(veth_if[i]), "uv%d%c", pid % 10000000, 'a' + i);
	}
	veth_made = true;
	atexit(veth_down);
	if (IP("netns", "add", veth_ns[0]) || IP("netns", "add", veth_ns[1]) ||
	    IP("-n", veth_ns[0], "link", "add", veth_if[0], "address", "02:00:00:00:00:01", "type", "veth",
	       "peer", "name", veth_if[1], "address", "02:00:00:00:00:02", "netns", veth_ns[1]) ||
	    IP("-n", veth_ns[0], "addr", "add", "198.18.0.1/24", "dev", veth_if[0]) ||
	    IP("-n", veth_ns[1], "addr", "add", "198.18.0.2/24", "dev", veth_if[1]) ||
	    IP("-n", veth_ns[0], "addr", "add", "fd00::1/64", "dev", veth_if[0], "nodad") ||
	    IP("-n", veth_ns[1], "addr", "add", "fd00::2/64", "dev", veth_if[1], "nodad") ||
	    IP("-n", veth_ns[0], "link", "set", veth_if[0], "up") ||
	    IP("-n", veth_ns[1], "link", "set", veth_if[1], "up") ||
	    IP("-n", veth_ns[0], "neigh", "replace", "198.18.0.2", "lladdr", "02:00:00:00:00:02", "dev",
	       veth_if[0], "nud", "permanent") ||
	    IP("-n", veth_ns[0], "neigh", "replace", "fd00::2", "lladdr", "02:00:00:00:00:02", "dev",
	       veth_if[0], "nud", "permanent")) {
		fprintf(stderr, "uskb-pktgen: --veth: could not set up the veth pair with ip (iproute2 installed? "
				"network namespaces allowed here?)\n");
		exit(2);
	}
	/* this process (and the generator threads it starts) lives on the first end */
	snprintf(nspath, sizeof(nspath), "/run/netns/%s", veth_ns[0]);
	fd = open(nspath, O_RDONLY);
	if (fd < 0 || setns(fd, CLONE_NEWNET)) {
		fprintf(stderr, "uskb-pktgen: --veth: cannot enter %s: %s\n", veth_ns[0], strerror(errno));
		exit(2);
	}
	close(fd);
}

/* ---- --rx: the receiving side ---- */

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void rx_report(const char *spec, struct uskb_dev *d, struct uskb_pktgen_rx *rx, double secs)
{
	struct uskb_pktgen_rx_stats st;
	struct uskb_dev_stats dst, *ds = &dst;
	double pps;

	uskb_dev_get_stats(d, -1, ds);
	uskb_pktgen_rx_stats(rx, &st);
	pps = secs > 0 ? (double)st.packets / secs : 0;
	if (json) {
		printf("{\"device\": ");
		json_str(spec);
		printf(", \"seconds\": %.6f, \"packets\": %" PRIu64 ", \"bytes\": %" PRIu64
		       ", \"pps\": %.0f, \"other\": %" PRIu64 ", \"streams\": %u, \"lost\": %" PRIu64
		       ", \"reordered\": %" PRIu64 ", \"duplicates\": %" PRIu64
		       ", \"lat_samples\": %" PRIu64 ", \"lat_ns\": {\"min\": %" PRIu64
		       ", \"p50\": %" PRIu64 ", \"p99\": %" PRIu64 ", \"p99.9\": %" PRIu64
		       ", \"max\": %" PRIu64 "}, \"rx_packets\": %" PRIu64 ", \"rx_dropped\": %" PRIu64
		       ", \"rx_copied\": %" PRIu64 ", \"rx_orphaned\": %" PRIu64 "}\n",
		       secs, st.packets, st.bytes, pps, st.other, st.streams, st.lost, st.reordered,
		       st.duplicates, st.lat_samples, st.lat_min, st.lat_p50, st.lat_p99, st.lat_p999,
		       st.lat_max, ds->rx_packets, ds->rx_dropped, ds->rx_copied, ds->rx_orphaned);
		return;
	}
	printf("rx %s: %" PRIu64 " pktgen packets (%" PRIu64 " bytes) in %.3f s, %.0f pps; "
	       "%" PRIu64 " other frames; %u stream%s\n",
	       spec, st.packets, st.bytes, secs, pps, st.other, st.streams, st.streams == 1 ? "" : "s");
	printf("  sequence: lost %" PRIu64 ", reordered %" PRIu64 ", duplicates %" PRIu64 "\n", st.lost,
	       st.reordered, st.duplicates);
	if (st.lat_samples)
		printf("  latency (%" PRIu64 " samples): min %.1f us, p50 %.1f us, p99 %.1f us, "
		       "p99.9 %.1f us, max %.1f us\n",
		       st.lat_samples, (double)st.lat_min / 1e3, (double)st.lat_p50 / 1e3,
		       (double)st.lat_p99 / 1e3, (double)st.lat_p999 / 1e3, (double)st.lat_max / 1e3);
	else
		printf("  latency: no send times (flag NO_TIMESTAMP?)\n");
	printf("  device: %" PRIu64 " frames received, %" PRIu64 " dropped by the kernel, %" PRIu64
	       " copied whole, %" PRIu64 " ring blocks orphaned\n",
	       ds->rx_packets, ds->rx_dropped, ds->rx_copied, ds->rx_orphaned);
}

/* --rx DEV: receive until COUNT pktgen packets, the duration or a signal */
static int rx_main(const char *spec, unsigned long long count)
{
	struct uskb_dev *d = uskb_dev_open(spec);
	struct uskb_pktgen_rx *rx;
	struct uskb *skbs[64];
	double t0, last, end;
	uint64_t last_n = 0;
	bool tty = isatty(2), started = false;

	if (!d) {
		fprintf(stderr, "uskb-pktgen: %s\n", uskb_dev_strerror());
		return 5;
	}
	rx = uskb_pktgen_rx_new();
	if (!rx) {
		perror("uskb-pktgen");
		uskb_dev_close(d);
		return 2;
	}
	t0 = last = mono_s();
	end = duration > 0 ? t0 + duration : 0;
	while (!interrupted) {
		struct uskb_pktgen_rx_stats st;
		int total = 0;
		double m;

		/* every queue in turn; with one, wait in it */
		for (unsigned int q = 0; q < (d->nrxqueues ? d->nrxqueues : 1) && !interrupted; q++) {
			int n = uskb_dev_rx(d, q, skbs, 64, d->nrxqueues > 1 ? 0 : 100);
			uint64_t now = realtime_ns();

			if (n < 0 && n != -EINTR) {
				fprintf(stderr, "uskb-pktgen: %s\n",
					n == -EOPNOTSUPP ? "this device cannot receive (packet:IFNAME and "
							   "xdp:IFNAME can)" :
							   uskb_dev_strerror());
				uskb_pktgen_rx_free(rx);
				uskb_dev_close(d);
				return 5;
			}
			for (int i = 0; i < n; i++) {
				uskb_pktgen_rx_count(rx, skbs[i], now);
				uskb_free(skbs[i]);
			}
			total += n > 0 ? n : 0;
		}
		if (!total && d->nrxqueues > 1)
			usleep(200);
		if (!started) {
			started = true;
			if (!quiet)
				fprintf(stderr, "uskb-pktgen: receiving on %s (Ctrl-C ends)\n", spec);
		}
		uskb_pktgen_rx_stats(rx, &st);
		m = mono_s();
		if (count && st.packets >= count)
			break;
		if (end && m >= end)
			break;
		if (m - last >= 1.0) {
			if (!quiet)
				fprintf(stderr, "%s%6.1fs %12.0f pps  received %" PRIu64 "  lost %" PRIu64
						"  reordered %" PRIu64 "%s",
					tty ? "\r" : "", m - t0, (double)(st.packets - last_n) / (m - last),
					st.packets, st.lost, st.reordered, tty ? "\033[K" : "\n");
			last = m;
			last_n = st.packets;
		}
	}
	if (!quiet && tty && last_n)
		fputc('\n', stderr);
	rx_report(spec, d, rx, mono_s() - t0);
	uskb_pktgen_rx_free(rx);
	uskb_dev_close(d);
	return 0;
}

int main(int argc, char **argv)
{
	enum { O_FRAGS = 256, O_RATE, O_RATEP, O_DURATION, O_SEED, O_IMIX, O_JSON, O_SCRIPT,
	       O_NOPIN, O_VERSION, O_DRYRUN, O_RANGE, O_VETH, O_RX };
	static const struct option longopts[] = {
		{ "frags", required_argument, NULL, O_FRAGS },
		{ "rate", required_argument, NULL, O_RATE },
		{ "ratep", required_argument, NULL, O_RATEP },
		{ "duration", required_argument, NULL, O_DURATION },
		{ "seed", required_argument, NULL, O_SEED },
		{ "imix", required_argument, NULL, O_IMIX },
		{ "json", no_argument, NULL, O_JSON },
		{ "script", required_argument, NULL, O_SCRIPT },
		{ "no-pin", no_argument, NULL, O_NOPIN },
		{ "dry-run", no_argument, NULL, O_DRYRUN },
		{ "veth", no_argument, NULL, O_VETH },
		{ "rx", required_argument, NULL, O_RX },
		{ "print-range", required_argument, NULL, O_RANGE },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, O_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	const char *dev = NULL, *dst = NULL, *dst_mac = "90:e2:ba:ff:ff:ff", *port = NULL,
		   *imix = NULL, *script = NULL, *range_of = NULL, *rx_dev = NULL;
	unsigned long size = 60, threads = 1, first = 0, clone = 0, burst = 1, frags = 0;
	unsigned long long count = 100000, delay = 0;
	bool count_set = false, ip6 = false, csum = false, debug = false, have_frags = false,
	     use_veth = false;
	double rate = 0, ratep = 0;
	struct uskb_pktgen_opts po = { 0 };
	struct sigaction sa;
	long ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	int c;

	/* first of all: a Ctrl-C at any point must still clean up (--veth) */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigint;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	while ((c = getopt_long(argc, argv, "s:i:d:m:p:f:t:c:n:b:w:vxh6akq", longopts, NULL)) != -1) {
		switch (c) {
		case 's': size = parse_num("-s", optarg, 65535); break;
		case 'i': dev = optarg; break;
		case 'd': dst = optarg; break;
		case 'm': dst_mac = optarg; break;
		case 'p': port = optarg; break;
		case 'f': first = parse_num("-f", optarg, 4095); break;
		case 't': threads = parse_num("-t", optarg, 4096); break;
		case 'c': clone = parse_num("-c", optarg, 2147483647); break;
		case 'n': count = parse_num("-n", optarg, ULONG_MAX); count_set = true; break;
		case 'b': burst = parse_num("-b", optarg, 1u << 20); break;
		case 'w': delay = parse_num("-w", optarg, ULONG_MAX); break;
		case 'v': verbose = 1; break;
		case 'x': debug = true; break;
		case '6': ip6 = true; break;
		case 'a': break;
		case 'k': csum = true; break;
		case 'q': quiet = 1; break;
		case 'h': usage(stdout); return 0;
		case O_FRAGS: frags = parse_num("--frags", optarg, 17); have_frags = true; break;
		case O_RATE: rate = parse_real("--rate", optarg); break;
		case O_RATEP: ratep = parse_real("--ratep", optarg); break;
		case O_DURATION: duration = parse_real("--duration", optarg); break;
		case O_SEED:
			po.seed = parse_num("--seed", optarg, ULONG_MAX);
			po.seeded = true;
			break;
		case O_IMIX: imix = optarg; break;
		case O_JSON: json = 1; break;
		case O_SCRIPT: script = optarg; break;
		case O_NOPIN: po.no_pin = true; break;
		case O_DRYRUN: dry_run = 1; break;
		case O_RANGE: range_of = optarg; break;
		case O_VETH: use_veth = true; break;
		case O_RX: rx_dev = optarg; break;
		case O_VERSION: printf("uskb-pktgen %s (pktgen 2.75 command language)\n", VERSION); return 0;
		default: usage(stderr); return 1;
		}
	}
	if (range_of) {
		/* parse_addr / parse_addr6 of the functions.sh shim */
		char lo[INET6_ADDRSTRLEN], hi[INET6_ADDRSTRLEN];
		bool r;

		if (!parse_cidr(ip6 ? AF_INET6 : AF_INET, range_of, lo, hi, &r)) {
			fprintf(stderr, "uskb-pktgen: \"%s\" is not an IPv%c address or CIDR range\n",
				range_of, ip6 ? '6' : '4');
			return 1;
		}
		printf("%s %s\n", lo, hi);
		return 0;
	}
	if (rx_dev) {
		if (dev || script || use_veth)
			die_usage("%s", "--rx receives on its own device: no -i, --script or --veth");
		return rx_main(rx_dev, count_set ? count : 0);
	}
	if (dry_run && !script)
		die_usage("%s", "--dry-run goes with --script");
	if (rate > 0 && ratep > 0)
		die_usage("%s", "--rate and --ratep exclude each other");
	if (use_veth && script)
		die_usage("%s", "--veth makes its own device: no --script");
	if (use_veth && dev && strncmp(dev, "packet", 6) && strncmp(dev, "xdp", 3))
		die_usage("--veth: -i names the kind of device only (packet, packet::mmsg, xdp, "
			  "xdp::copy), not \"%s\"", dev);
	if (use_veth) {
		static char vdev[64];
		const char *kind = dev ? dev : "packet", *opts = strchr(kind, ':');

		veth_up();
		/* packet[:[:]OPTS] or xdp[:[:]OPTS]: the options follow the interface */
		snprintf(vdev, sizeof(vdev), "%.*s:%s%s", (int)(opts ? opts - kind : (long)strlen(kind)),
			 kind, veth_if[0], !opts ? "" : opts[1] == ':' ? opts + 1 : opts);
		dev = vdev;
		if (!dst)
			dst = ip6 ? "fd00::2" : "198.18.0.2";
		if (!strcmp(dst_mac, "90:e2:ba:ff:ff:ff"))
			dst_mac = "02:00:00:00:00:02";
	}
	if (!script && !dev)
		die_usage("%s", "no device: give -i DEV (null, pcap:FILE, packet:IFNAME), --veth or --script FILE");
	if (!threads)
		die_usage("%s", "-t: at least one thread");
	if (first + threads > 4096)
		die_usage("%s", "-f + -t: at most 4096 threads");
	if (duration > 0 && !count_set)
		count = 0;

	if (ncpus < 1)
		ncpus = 1;
	po.nthreads = (int)(first + threads > (unsigned long)ncpus ? first + threads : (unsigned long)ncpus);
	if (script) {
		/* a script may name any kpktgend_N: give it plenty */
		if (po.nthreads < 64)
			po.nthreads = 64;
	}
	g_pg = uskb_pktgen_new(&po);
	if (!g_pg) {
		perror("uskb-pktgen");
		return 2;
	}
	if (interrupted) /* a Ctrl-C during the set-up: the run ends at once */
		uskb_pktgen_stop(g_pg);

	if (script) {
		int rc = run_script(script);

		uskb_pktgen_free(g_pg);
		return rc;
	}

	for (unsigned long t = first; t < first + threads; t++) {
		char thr[32], name[300], dmin[INET6_ADDRSTRLEN], dmax[INET6_ADDRSTRLEN];
		bool range = false;

		snprintf(thr, sizeof(thr), "kpktgend_%lu", t);
		if (threads > 1)
			snprintf(name, sizeof(name), "%s@%lu", dev, t);
		else
			snprintf(name, sizeof(name), "%s", dev);
		proc_cmd(thr, "rem_device_all");
		proc_cmdf(thr, "add_device %s", name);
		if (threads > 1)
			proc_cmd(name, "flag QUEUE_MAP_CPU");
		proc_cmdf(name, "count %llu", count);
		proc_cmdf(name, "clone_skb %lu", clone);
		proc_cmdf(name, "pkt_size %lu", size);
		proc_cmdf(name, "delay %llu", delay);
		if (burst > 1)
			proc_cmdf(name, "burst %lu", burst);
		if (have_frags)
			proc_cmdf(name, "frags %lu", frags);
		proc_cmdf(name, "dst_mac %s", dst_mac);
		if (ip6) {
			if (!parse_cidr(AF_INET6, dst ? dst : "fd00::1", dmin, dmax, &range))
				die_usage("-d: \"%s\" is not an IPv6 address or range", dst);
			if (range) {
				proc_cmdf(name, "dst6_min %s", dmin);
				proc_cmdf(name, "dst6_max %s", dmax);
			} else {
				proc_cmdf(name, "dst6 %s", dmin);
			}
		} else {
			if (!parse_cidr(AF_INET, dst ? dst : "198.18.0.42", dmin, dmax, &range))
				die_usage("-d: \"%s\" is not an IPv4 address or CIDR range", dst);
			proc_cmdf(name, "dst_min %s", dmin);
			proc_cmdf(name, "dst_max %s", dmax);
		}
		if (port) {
			unsigned long lo, hi;

			if (!parse_ports(port, &lo, &hi))
				die_usage("-p: \"%s\" is not a port N or a range N-M of 1-65535", port);
			/* udp_dst_max is exclusive in random mode: as the kernel samples */
			proc_cmdf(name, "udp_dst_min %lu", lo);
			proc_cmdf(name, "udp_dst_max %lu", hi);
		}
		if (csum)
			proc_cmd(name, "flag UDPCSUM");
		if (imix)
			proc_cmdf(name, "imix_weights %s", imix);
		/* the delay is per transmit call, which sends a whole burst */
		if (ratep > 0) {
			double per = ratep / (double)threads;

			proc_cmdf(name, "delay %.0f", 1e9 * (double)burst / per);
		} else if (rate > 0) {
			/* on the wire: the real frame, then preamble 8 + FCS 4 + inter-frame gap 12 */
			double fb = imix ? imix_mean(imix, ip6) : frame_bytes((double)size, ip6);
			double per = rate / (double)threads, bits = (fb + 24) * 8;

			proc_cmdf(name, "delay %.0f", bits * 1000.0 * (double)burst / per);
		}
		if (use_veth) {
			if (ip6) {
				proc_cmd(name, "src6 fd00::1");
			} else {
				proc_cmd(name, "src_min 198.18.0.1");
				proc_cmd(name, "src_max 198.18.0.1");
			}
		}
		for (int a = optind; a < argc; a++)
			proc_cmd(name, argv[a]);
		if (debug) {
			char buf[8192];

			uskb_pktgen_read(g_pg, name, buf, sizeof(buf));
			fprintf(stderr, "%s", buf);
		}
	}
	start_run();
	uskb_pktgen_free(g_pg);
	if (use_veth)
		fprintf(stderr, "uskb-pktgen: %s (in %s) received %lld packets; the pair is removed\n",
			veth_if[1], veth_ns[1], veth_peer_rx());
	return 0;
}
