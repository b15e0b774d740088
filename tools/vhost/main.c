/* SPDX-License-Identifier: MIT */
/*
 * uskb-vhost: a vhost-user net backend on a uskb device. The guest's
 * transmit goes to the device in place (libuskb-vhost); counters every
 * --stats seconds, text or JSON.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "lib/compiler.h"
#include "uskb/dev.h"
#include "uskb/stats.h"
#include "uskb/vhost.h"

static const char usage[] =
	"Usage: uskb-vhost --socket PATH --dev DEVICE [OPTION]...\n"
	"A vhost-user net backend: a frontend (QEMU, DPDK's virtio-user) connects to\n"
	"PATH; what the guest sends goes to DEVICE (any uskb device: null, pcap:FILE,\n"
	"packet:IF, xdp:IF, tap:IF, udp:..., tcp:..., unix:...) without a copy when the device\n"
	"sends in place (USKB_DEV_F_ZEROCOPY), each buffer going back to the guest, in\n"
	"order, once the device is done with it. What DEVICE receives is copied into the\n"
	"guest's receive buffers.\n"
	"\n"
	"  -s, --socket PATH     the vhost-user socket to create and listen on (a live\n"
	"                        process's is refused; a dead one's replaced)\n"
	"  -d, --dev DEVICE      the lower device (see uskb-pktgen(8) for the specs)\n"
	"  -z, --zcopy on|off    send guest buffers in place (default on)\n"
	"      --copybreak N     frames shorter than N bytes are copied (default 256)\n"
	"      --max-pend N      at most N zero-copy buffers out per queue (default 128)\n"
	"      --busy-poll USEC  after work, poll the rings for USEC microseconds before\n"
	"                        sleeping until kicked (default 0: sleep at once)\n"
	"  -t, --duration SECS   stop after SECS seconds, more than 0 (default: at\n"
	"                        SIGINT/SIGTERM)\n"
	"  -n, --count N         stop once N frames were taken from the guest and are back\n"
	"      --stats SECS      print the counters every SECS seconds (0: only at the end)\n"
	"  -j, --json            counters as one JSON object per line\n"
	"  -q, --quiet           no counters but the final ones\n"
	"  -h, --help            this text\n"
	"  -V, --version         the version\n"
	"\n"
	"Counters of the guest's transmit (queue 1): packets, bytes, zero-copied, copied\n"
	"by reason (off, small, pend, nozc, err, sg), dropped, pending (chains out), the\n"
	"device's completions and how many of them it copied after all; of its receive\n"
	"(queue 0, when DEVICE receives: frames copied into the guest's buffers):\n"
	"packets, bytes, dropped; and the process's CPU time so far. JSON adds the\n"
	"device's own counters (\"dev\": tx_packets, tx_dropped, tx_zc, tx_zc_copied,\n"
	"tx_zc_fallback).\n"
	"Exit status: 0, 1 for a failure while running (a device that went down, frames\n"
	"a frontend never got back, objects left live), 2 for bad usage or a socket path\n"
	"it may not take, 5 for a device that cannot be opened.\n";

static struct uskb_vhost *vh;
static struct uskb_vhost *volatile stop_vh; /* what a signal stops: cleared before it is freed */
static struct uskb_dev *dev;
static volatile sig_atomic_t stopped;

/* the tool has one thread: the handler runs between two of main's steps */
static void on_signal(int sig)
{
	struct uskb_vhost *v = stop_vh;
	int saved = errno;

	(void)sig;
	stopped = 1;
	if (v)
		uskb_vhost_stop(v);
	errno = saved;
}

static const char *const why[USKB_VHOST_COPY_NR] = { "off", "small", "pend", "nozc", "err", "sg" };

static void print(double t, bool final, bool json)
{
	struct uskb_vhost_qstats s, r;
	struct uskb_dev_stats d;
	struct rusage ru;
	double cpu = 0;

	if (!uskb_vhost_get_stats(vh, 1, &s) || !uskb_vhost_get_stats(vh, 0, &r))
		return;
	/* the process's CPU time (user + system), all threads: per GB moved, what the backend costs */
	uskb_dev_get_stats(dev, -1, &d);
	if (!getrusage(RUSAGE_SELF, &ru))
		cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
		      (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
	if (json) {
		printf("{\"time\": %.3f, \"final\": %s, \"connected\": %s, \"queue\": 1, \"packets\": %" PRIu64
		       ", \"bytes\": %" PRIu64 ", \"zcopied\": %" PRIu64 ", \"copied\": {",
		       t, final ? "true" : "false", uskb_vhost_connected(vh) ? "true" : "false", s.packets, s.bytes,
		       s.zcopied);
		for (int i = 0; i < USKB_VHOST_COPY_NR; i++)
			printf("%s\"%s\": %" PRIu64, i ? ", " : "", why[i], s.copied[i]);
		printf("}, \"dropped\": %" PRIu64 ", \"pending\": %u, \"completions\": %" PRIu64
		       ", \"zcopy_err\": %" PRIu64 ", \"errors\": %u, \"rx_packets\": %" PRIu64
		       ", \"rx_bytes\": %" PRIu64 ", \"rx_dropped\": %" PRIu64 ", \"rx_errors\": %u, \"abandoned\": %" PRIu64
		       ", \"cpu\": %.3f, \"dev\": {\"tx_packets\": %" PRIu64
		       ", \"tx_dropped\": %" PRIu64 ", \"tx_zc\": %" PRIu64 ", \"tx_zc_copied\": %" PRIu64
		       ", \"tx_zc_fallback\": %" PRIu64 "}}\n",
		       s.dropped, s.pending, s.completions, s.zcopy_err, s.errors, r.packets, r.bytes, r.dropped,
		       r.errors, uskb_vhost_abandoned(vh), cpu, d.tx_packets, d.tx_dropped, d.tx_zc, d.tx_zc_copied, d.tx_zc_fallback);
	} else {
		printf("%8.3f txq 1: %" PRIu64 " packets %" PRIu64 " bytes, zcopied %" PRIu64 ", copied", t, s.packets,
		       s.bytes, s.zcopied);
		for (int i = 0; i < USKB_VHOST_COPY_NR; i++)
			printf(" %s %" PRIu64, why[i], s.copied[i]);
		printf(", dropped %" PRIu64 ", pending %u, completions %" PRIu64 " (copied %" PRIu64 ")%s;"
		       " rxq 0: %" PRIu64 " packets %" PRIu64 " bytes, dropped %" PRIu64 "%s; ",
		       s.dropped, s.pending, s.completions, s.zcopy_err, s.errors ? ", STOPPED" : "", r.packets,
		       r.bytes, r.dropped, r.errors ? ", STOPPED" : "");
		if (uskb_vhost_abandoned(vh))
			printf("abandoned %" PRIu64 "; ", uskb_vhost_abandoned(vh));
		printf("cpu %.2f s%s\n", cpu, final ? " (final)" : "");
	}
	fflush(stdout);
}

/* a bound as a reader writes it: 10000000, 0.001 (never 1e+07) */
static const char *bound(char *buf, size_t len, double v)
{
	snprintf(buf, len, v == (double)(uint64_t)v ? "%.0f" : "%g", v);
	return buf;
}

/*
 * @arg as a number from @min to @max (@whole: an integer); else one line
 * naming the option, the value and the range (and @hint), and false
 */
static bool number(const char *opt, const char *arg, double min, double max, bool whole, const char *hint,
		   double *v)
{
	char *end, lo[32], hi[32];

	errno = 0;
	*v = strtod(arg, &end);
	if (errno || end == arg || *end || !(*v >= min && *v <= max) || (whole && *v != (double)(uint64_t)*v) ||
	    strpbrk(arg, "xXnNiI ")) {
		fprintf(stderr, "uskb-vhost: %s: \"%s\" is not a %s from %s to %s%s\n", opt, arg,
			whole ? "whole number" : "number", bound(lo, sizeof(lo), min), bound(hi, sizeof(hi), max),
			hint ? hint : "");
		return false;
	}
	return true;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },  { "dev", required_argument, NULL, 'd' },
		{ "zcopy", required_argument, NULL, 'z' },   { "copybreak", required_argument, NULL, 'C' },
		{ "max-pend", required_argument, NULL, 'P' }, { "duration", required_argument, NULL, 't' },
		{ "stats", required_argument, NULL, 'S' },   { "json", no_argument, NULL, 'j' },
		{ "count", required_argument, NULL, 'n' },   { "busy-poll", required_argument, NULL, 'B' },
		{ "quiet", no_argument, NULL, 'q' },	     { "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },	     { 0 }
	};
	struct uskb_vhost_config cfg = { 0 };
	const char *devspec = NULL;
	double duration = 0, stats = 1, v;
	bool json = false, quiet = false;
	struct sigaction sa = { .sa_handler = on_signal };
	uint64_t start, next, end;
	int c, status = 0;

	while ((c = getopt_long(argc, argv, "s:d:z:t:n:jqhV", opts, NULL)) != -1) {
		switch (c) {
		case 's': cfg.socket = optarg; break;
		case 'd': devspec = optarg; break;
		case 'z':
			if (strcmp(optarg, "on") && strcmp(optarg, "off")) {
				fprintf(stderr, "uskb-vhost: --zcopy %s: give on or off\n", optarg);
				return 2;
			}
			cfg.no_zcopy = !strcmp(optarg, "off");
			break;
		case 'C':
			if (!number("--copybreak", optarg, 0, 65536, true, NULL, &v))
				return 2;
			cfg.copybreak = v ? (unsigned int)v : 1;
			break;
		case 'P':
			if (!number("--max-pend", optarg, 1, 32768, true, NULL, &v))
				return 2;
			cfg.max_pend = (unsigned int)v;
			break;
		case 'B':
			if (!number("--busy-poll", optarg, 0, 1e9, true, NULL, &v))
				return 2;
			cfg.busy_poll_us = (unsigned int)v;
			break;
		case 't':
			/* 0 would read as "no limit": leave the option out for that */
			if (!number("--duration", optarg, 0.001, 1e7, false, " seconds (without -t, it runs until SIGINT)",
				    &duration))
				return 2;
			break;
		case 'n':
			if (!number("--count", optarg, 1, 1e15, true, " (without -n, it runs until SIGINT)", &v))
				return 2;
			cfg.tx_limit = (uint64_t)v;
			break;
		case 'S':
			if (!number("--stats", optarg, 0, 1e6, false, " seconds", &stats))
				return 2;
			break;
		case 'j': json = true; break;
		case 'q': quiet = true; break;
		case 'h': fputs(usage, stdout); return 0;
		case 'V': printf("uskb-vhost %s\n", USKB_VERSION_STRING); return 0;
		default: fprintf(stderr, "Try 'uskb-vhost --help'.\n"); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "uskb-vhost: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (!cfg.socket || !devspec) {
		fprintf(stderr, "uskb-vhost: --socket and --dev are needed (try --help)\n");
		return 2;
	}
	dev = uskb_dev_open(devspec);
	if (!dev) {
		/* the device's reason names it (as uskb-pktgen and uskb-dp say it), exit 5 as theirs */
		fprintf(stderr, "uskb-vhost: %s\n", uskb_dev_strerror());
		return 5;
	}
	cfg.dev = dev;
	vh = uskb_vhost_new(&cfg);
	if (!vh) {
		/* a socket path another process serves, or a file there: the command line's fault */
		int rc = errno == EADDRINUSE || errno == ENOTSOCK || errno == ENAMETOOLONG ? 2 : 1;

		fprintf(stderr, "uskb-vhost: %s\n", uskb_vhost_strerror(NULL));
		uskb_dev_close(dev);
		return rc;
	}
	stop_vh = vh;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (!quiet && !json)
		fprintf(stderr, "uskb-vhost: listening on %s, sending to %s (%s)\n", cfg.socket, devspec,
			cfg.no_zcopy ? "copying" : dev->features & USKB_DEV_F_ZEROCOPY ? "zero copy" :
											 "the device copies");
	start = uskb_mono_ns();
	end = duration > 0 ? start + (uint64_t)(duration * 1e9) : UINT64_MAX;
	next = stats > 0 ? start + (uint64_t)(stats * 1e9) : UINT64_MAX;
	while (!stopped) {
		uint64_t now = uskb_mono_ns(), until = next < end ? next : end;
		uint64_t ms = until > now ? (until - now) / 1000000 : 0;
		int r = uskb_vhost_run(vh, until == UINT64_MAX ? -1 : ms > 3600000 ? 3600000 : (int)ms);

		if (r < 0) {
			fprintf(stderr, "uskb-vhost: %s\n", strerror(-r));
			status = 1;
			break;
		}
		now = uskb_mono_ns();
		if (now >= end)
			break;
		if (cfg.tx_limit) {
			struct uskb_vhost_qstats s;

			if (uskb_vhost_get_stats(vh, 1, &s) && s.packets >= cfg.tx_limit && !s.pending)
				break;
		}
		if (now >= next) {
			if (!quiet)
				print((double)(now - start) / 1e9, false, json);
			next += (uint64_t)(stats * 1e9);
		}
	}
	print((double)(uskb_mono_ns() - start) / 1e9, true, json);
	if (uskb_vhost_abandoned(vh)) {
		/* the frontend cannot know what became of them: no success */
		fprintf(stderr, "uskb-vhost: %" PRIu64 " frames never went back to their frontend: it went while "
				"the device still held them\n", uskb_vhost_abandoned(vh));
		status = 1;
	}
	stop_vh = NULL; /* a signal from now on stops nothing: the stop eventfd goes */
	uskb_vhost_free(vh); /* waits for the device's completions */
	vh = NULL;
	{
		/* a device that went down and dropped frames for it: said, and no success */
		struct uskb_dev_stats d;
		char e[160] = "it went down";

		uskb_dev_get_stats(dev, -1, &d);
		if (d.tx_dropped && !uskb_dev_running(dev)) {
			uskb_dev_last_error(dev, e, sizeof(e));
			fprintf(stderr, "uskb-vhost: the device failed during the run (%" PRIu64
					" frames dropped): %s\n", d.tx_dropped, e);
			status = 1;
		}
	}
	uskb_dev_close(dev);
	if (!uskb_stats_all_freed()) {
		fprintf(stderr, "uskb-vhost: live objects remain at the end (a leak)\n");
		status = 1;
	}
	return status;
}
