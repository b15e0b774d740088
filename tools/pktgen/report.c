/* SPDX-License-Identifier: MIT */
/*
 * Running and reporting: Ctrl-C, the progress line, the duration, the
 * result of every device as the kernel's files show it or as JSON.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>

#include "cli.h"

static void on_sigint(int sig)
{
	static struct timespec first; /* the first SIGINT's */
	struct timespec now;
	int saved = errno;

	/*
	 * A second Ctrl-C means "now": die at once (--veth's guardian still
	 * removes the pair). Not a repeated SIGTERM, nor a second SIGINT within
	 * 250 ms of the first: timeout(1) sends its signal to the command and
	 * again to its process group (timeout -s INT), and a run stopped so
	 * must still report. (clock_gettime is async-signal-safe.)
	 */
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (cli_interrupted == SIGINT && sig == SIGINT &&
	    (now.tv_sec - first.tv_sec) * 1000000000L + (now.tv_nsec - first.tv_nsec) >= 250000000L) {
		signal(SIGINT, SIG_DFL);
		raise(SIGINT);
	}
	if (sig == SIGINT && cli_interrupted != SIGINT)
		first = now;
	cli_interrupted = sig;
	if (cli.pg)
		uskb_pktgen_stop(cli.pg);
	errno = saved;
}

void cli_free_engine(void)
{
	struct uskb_pktgen *pg = cli.pg;

	cli.pg = NULL; /* a Ctrl-C from now on stops nothing */
	uskb_pktgen_free(pg);
}

void cli_catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigint;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

void cli_live(char *buf, size_t len)
{
	struct uskb_stats st = { .sz = sizeof(st) };

	buf[0] = 0;
	if (cli.verbose && uskb_stats_get(&st) == 0)
		snprintf(buf, len, "  live: skbs %" PRId64 " heads %" PRId64 " pages %" PRId64 " cached %" PRId64,
			 st.skbs, st.heads, st.pages, st.skbs_cached);
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
		if (cli.duration > 0 && cli.duration < (double)(next.tv_sec - start.tv_sec)) {
			/* the deadline falls before this tick: wake for it */
			double end = (double)start.tv_sec + (double)start.tv_nsec / 1e9 + cli.duration;

			wake.tv_sec = (time_t)end;
			wake.tv_nsec = (long)((end - (double)wake.tv_sec) * 1e9);
		}
		while (!p->done && pthread_cond_timedwait(&p->cv, &p->mu, &wake) != ETIMEDOUT)
			;
		if (p->done)
			break;
		clock_gettime(CLOCK_MONOTONIC, &now);
		t = (double)(now.tv_sec - start.tv_sec) + (double)(now.tv_nsec - start.tv_nsec) / 1e9;
		if (cli.duration > 0 && t >= cli.duration) {
			uskb_pktgen_stop(cli.pg);
			break;
		}
		for (int i = 0; uskb_pktgen_dev_stats(cli.pg, i, NULL, 0, &st) == 0; i++) {
			sent += st.sofar;
			bytes += st.tx_bytes;
			errors += st.errors;
		}
		if (!cli.quiet) {
			char live[128];

			cli_live(live, sizeof(live));
			fprintf(stderr, "%s%6.1fs %12" PRIu64 " pps %8" PRIu64 " Mb/s  errors %" PRIu64
					"  sent %" PRIu64 "%s%s",
				tty ? "\r" : "", t, sent - last_sent, (bytes - last_bytes) * 8 / 1000000,
				errors, sent, live, tty ? "\033[K" : "\n");
		}
		last_sent = sent;
		last_bytes = bytes;
		(void)tick;
	}
	pthread_mutex_unlock(&p->mu);
	if (!cli.quiet && tty && last_sent)
		fputc('\n', stderr);
	return NULL;
}

/* length of the well-formed UTF-8 sequence at @s (RFC 3629), 0 if there is none */
static int utf8_len(const unsigned char *s)
{
	int n = s[0] < 0x80 ? 1 : s[0] >= 0xc2 && s[0] <= 0xdf ? 2 : s[0] >= 0xe0 && s[0] <= 0xef ? 3 :
		s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : 0;

	for (int i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	/* no overlong forms, no surrogates, nothing past U+10FFFF */
	if ((n == 3 && s[0] == 0xe0 && s[1] < 0xa0) || (n == 3 && s[0] == 0xed && s[1] > 0x9f) ||
	    (n == 4 && s[0] == 0xf0 && s[1] < 0x90) || (n == 4 && s[0] == 0xf4 && s[1] > 0x8f))
		return 0;
	return n;
}

/* @s as a JSON string: escaped, and valid UTF-8 whatever the bytes (U+FFFD for a bad one) */
void json_str(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	putchar('"');
	while (*p) {
		int n = utf8_len(p);

		if (!n) {
			fputs("\\ufffd", stdout);
			p++;
		} else if (*p == '"' || *p == '\\') {
			printf("\\%c", *p++);
		} else if (*p == '\n') {
			fputs("\\n", stdout);
			p++;
		} else if (*p < 0x20 || *p == 0x7f) {
			printf("\\u%04x", *p++);
		} else {
			fwrite(p, 1, (size_t)n, stdout);
			p += n;
		}
	}
	putchar('"');
}

/* the process's CPU time when the run started */
static struct rusage ru_start;

static double tv_s(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

/* the CPU the run took: user and system seconds since it started */
static void run_cpu(double *user, double *sys)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	*user = tv_s(ru.ru_utime) - tv_s(ru_start.ru_utime);
	*sys = tv_s(ru.ru_stime) - tv_s(ru_start.ru_stime);
}

/*
 * CPU-seconds per GB of @bytes, or -1 when the run is too short to give
 * one: under 0.1 s of CPU (the clock ticks by 4 ms) or under 1 MB sent
 */
#define CPU_MIN_S 0.1
static double per_gb(double cpu, uint64_t bytes)
{
	return cpu >= CPU_MIN_S && bytes >= 1000000 ? cpu / ((double)bytes / 1e9) : -1;
}

/* the device files, or with --json one object per device */
static void report(void)
{
	char name[256], *buf = malloc(65536);
	struct uskb_pktgen_stats st;
	uint64_t all_bytes = 0;
	double user, sys;

	if (!buf)
		return;
	run_cpu(&user, &sys);
	for (int i = 0; uskb_pktgen_dev_stats(cli.pg, i, name, sizeof(name), &st) == 0; i++)
		all_bytes += st.tx_bytes;
	for (int i = 0; uskb_pktgen_dev_stats(cli.pg, i, name, sizeof(name), &st) == 0; i++) {
		const char *res = uskb_pktgen_result(cli.pg, name);
		char err[256];
		int nerr = uskb_pktgen_dev_error(cli.pg, name, err, sizeof(err));
		bool res_ok = res && !strncmp(res, "OK:", 3);
		/* it stopped short of its count, unasked (no Ctrl-C, no --duration) */
		bool short_run = res_ok && cli.count && st.sofar < cli.count && !cli_interrupted &&
				 !(cli.duration > 0);
		/* a run is good when it ran, sent all it was told, counted no error and its device did not fail */
		bool ok = res_ok && !st.errors && nerr <= 0 && !short_run;
		unsigned long long us = 0, busy = 0, idle = 0, sofar = 0, pps = 0, mb = 0, bps = 0,
				   errs = 0;
		unsigned int size = 0;
		int frags = 0;

		/* why a device failed, or a run did not start, goes to stderr whatever the format */
		if (nerr > 0)
			fprintf(stderr, "uskb-pktgen: %s: %s\n", name, err);
		if (res && !res_ok)
			fprintf(stderr, "uskb-pktgen: %s: %s\n", name, res);
		if (short_run && nerr <= 0)
			fprintf(stderr, "uskb-pktgen: %s: sent %" PRIu64 " of %llu packets\n", name, st.sofar,
				cli.count);
		if (!ok)
			cli.failed = true;

		if (!cli.json) {
			uskb_pktgen_read(cli.pg, name, buf, 65536);
			printf("%s%s", i ? "\n" : "", buf);
			/* lines of our own after the kernel's */
			if (st.zerocopy && (st.zc_sent || st.zc_copied))
				printf("Zero copy: %" PRIu64 " sends completed without a copy, %" PRIu64
				       " copied by the kernel, %" PRIu64 " fallbacks to copy, %" PRIu64
				       " frames from registered buffers\n",
				       st.zc_sent, st.zc_copied, st.zc_fallback, st.zc_fixed);
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
		printf(", \"ok\": %s, \"usec\": %llu, \"busy_usec\": %llu, \"idle_usec\": %llu, "
		       "\"packets\": %llu, \"pkt_size\": %u, \"frags\": %d, \"pps\": %llu, "
		       "\"mbps\": %llu, \"bps\": %llu, \"errors\": %llu, \"lost\": %" PRIu64
		       ", \"tx_bytes\": %" PRIu64 ", \"result\": ",
		       ok ? "true" : "false", us, busy, idle, sofar, size, frags, pps, mb,
		       bps, errs, st.lost, st.tx_bytes);
		json_str(res);
		if (nerr > 0) {
			printf(", \"device_error\": ");
			json_str(err);
		}
		if (cli.veth)
			printf(", \"peer_received\": %lld", veth_peer_received());
		if (st.zerocopy)
			printf(", \"zc_sent\": %" PRIu64 ", \"zc_copied\": %" PRIu64
			       ", \"zc_fallback\": %" PRIu64 ", \"zc_fixed\": %" PRIu64, st.zc_sent,
			       st.zc_copied, st.zc_fallback, st.zc_fixed);
		/* the process's, the same in every object */
		printf(", \"cpu_user_s\": %.3f, \"cpu_sys_s\": %.3f, \"cpu_s_per_gb\": ", user, sys);
		/* null: too short a run to tell */
		printf(per_gb(user + sys, all_bytes) < 0 ? "null}\n" : "%.4f}\n", per_gb(user + sys, all_bytes));
	}
	if (!cli.json && per_gb(user + sys, all_bytes) < 0)
		printf("CPU: %.2f s user + %.2f s system (%.3f GB sent: too short a run for a figure per GB)\n",
		       user, sys, (double)all_bytes / 1e9);
	else if (!cli.json)
		printf("CPU: %.2f s user + %.2f s system: %.3f CPU-seconds per GB sent (%.3f GB)\n",
		       user, sys, per_gb(user + sys, all_bytes), (double)all_bytes / 1e9);
	fflush(stdout);
	free(buf);
}

/* pgctrl start, with a progress line per second, then the report */
void start_run(void)
{
	struct progress p = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };
	pthread_condattr_t ca;
	bool prog;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p.cv, &ca);
	prog = pthread_create(&p.th, NULL, progress_main, &p) == 0;
	getrusage(RUSAGE_SELF, &ru_start);
	proc_cmd("pgctrl", "start");
	if (prog) {
		pthread_mutex_lock(&p.mu);
		p.done = true;
		pthread_cond_signal(&p.cv);
		pthread_mutex_unlock(&p.mu);
		pthread_join(p.th, NULL);
	}
	if (cli_interrupted)
		fprintf(stderr, "uskb-pktgen: interrupted, stopped\n");
	report();
}
