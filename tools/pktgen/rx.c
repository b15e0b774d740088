/* SPDX-License-Identifier: MIT */
/* --rx DEV: count pktgen packets, their sequence numbers and latency. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <unistd.h>

#include "cli.h"

static double mono_s(void)
{
	return (double)uskb_mono_ns() / 1e9;
}

static void rx_report(const char *spec, struct uskb_dev *d, struct uskb_pktgen_rx *rx, double secs)
{
	struct uskb_pktgen_rx_stats st;
	struct uskb_dev_stats dst, *ds = &dst;
	double pps;

	uskb_dev_get_stats(d, -1, ds);
	uskb_pktgen_rx_stats(rx, &st);
	pps = secs > 0 ? (double)st.packets / secs : 0;
	if (cli.json) {
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

/* the devices that receive, for the errors */
#define RX_DEVICES                                                                    \
	"these receive: packet:IFNAME, xdp:IFNAME[:QUEUE], an interface name, tap:IFNAME, " \
	"udp:HOST:PORT, tcp:HOST:PORT or unix:PATH (with ,listen to wait for the sender)"

/* --rx DEV: receive until COUNT pktgen packets, the cli.duration or a signal */
static int rx_main(const char *spec, unsigned long long count)
{
	struct uskb_dev *d;
	struct uskb_pktgen_rx *rx;
	struct uskb *skbs[64];
	double t0, last, end;
	uint64_t last_n = 0;
	bool tty = isatty(2), started = false, received_once = false;
	int rc = 0;

	/* asked before opening: opening pcap:FILE would truncate the file */
	if (!uskb_dev_spec_receives(spec)) {
		if (errno == ENODEV)
			fprintf(stderr, "uskb-pktgen: --rx %s: no such interface (ip link shows the "
					"ones there are); " RX_DEVICES "\n", spec);
		else if (errno)
			fprintf(stderr, "uskb-pktgen: --rx %s: unknown device; " RX_DEVICES "\n", spec);
		else
			fprintf(stderr, "uskb-pktgen: --rx %s: this device cannot receive; " RX_DEVICES
					"; nothing was opened\n", spec);
		return 5;
	}
	d = uskb_dev_open(spec);
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
	end = cli.duration > 0 ? t0 + cli.duration : 0;
	while (!cli_interrupted && !rc) {
		struct uskb_pktgen_rx_stats st;
		int total = 0;
		double m;

		/* every queue in turn; with one, wait in it */
		for (unsigned int q = 0; q < (d->nrxqueues ? d->nrxqueues : 1) && !cli_interrupted; q++) {
			int n = uskb_dev_rx(d, q, skbs, 64, d->nrxqueues > 1 ? 0 : 100);
			uint64_t now = uskb_clock_ns(CLOCK_REALTIME);

			if (n == -EOPNOTSUPP) {
				fprintf(stderr, "uskb-pktgen: this device cannot receive; " RX_DEVICES
						"\n");
				uskb_pktgen_rx_free(rx);
				uskb_dev_close(d);
				return 5;
			}
			if (n < 0 && n != -EINTR) {
				/*
				 * Failed: setting up the receive (the first call) is part of
				 * opening it (5); later (the interface went away) the run
				 * failed (3), and what came is reported.
				 */
				fprintf(stderr, "uskb-pktgen: %s\n", uskb_dev_strerror());
				rc = received_once ? 3 : 5;
				break;
			}
			received_once = true;
			for (int i = 0; i < n; i++) {
				uskb_pktgen_rx_count(rx, skbs[i], now);
				uskb_free(skbs[i]);
			}
			total += n > 0 ? n : 0;
		}
		if (rc)
			break;
		if (!total && d->nrxqueues > 1)
			usleep(200);
		if (!started) {
			started = true;
			if (!cli.quiet)
				fprintf(stderr, "uskb-pktgen: receiving on %s (Ctrl-C ends)\n", spec);
		}
		uskb_pktgen_rx_stats(rx, &st);
		m = mono_s();
		if (count && st.packets >= count)
			break;
		if (end && m >= end)
			break;
		if (m - last >= 1.0) {
			if (!cli.quiet) {
				char live[128];

				cli_live(live, sizeof(live));
				fprintf(stderr, "%s%6.1fs %12.0f pps  received %" PRIu64 "  lost %" PRIu64
						"  reordered %" PRIu64 "%s%s",
					tty ? "\r" : "", m - t0, (double)(st.packets - last_n) / (m - last),
					st.packets, st.lost, st.reordered, live, tty ? "\033[K" : "\n");
			}
			last = m;
			last_n = st.packets;
		}
	}
	if (!cli.quiet && tty && last_n)
		fputc('\n', stderr);
	if (rc != 5) /* a receive that never started has nothing to report */
		rx_report(spec, d, rx, mono_s() - t0);
	uskb_pktgen_rx_free(rx);
	uskb_dev_close(d);
	return rc;
}

int cli_rx(const struct options *o)
{
	if (o->dev || o->script || o->use_veth)
		die_usage("%s", "--rx receives on its own device: no -i, --script or --veth");
	return rx_main(o->rx_dev, o->count_set ? o->count : 0);
}
