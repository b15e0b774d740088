/* SPDX-License-Identifier: MIT */
/*
 * The options of the kernel's samples/pktgen/parameters.sh (and more), and
 * the device commands they make, as functions.sh would write them.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: uskb-pktgen -i DEV [OPTION]... [\"COMMAND VALUE\"]...\n"
		"       uskb-pktgen --script FILE [--json] [-q] [--dry-run]\n"
		"       uskb-pktgen --rx DEV [-n COUNT] [--duration S] [--json] [-q]\n"
		"The kernel's packet generator in userspace: its command language, its packets\n"
		"and its result lines. Each extra argument is a raw pktgen device command\n"
		"applied after the options (e.g. \"flag IPSRC_RND\" \"src_min 198.18.0.1\").\n"
		"\n"
		"Options of the kernel's samples/pktgen/parameters.sh:\n"
		"  -i DEV        output device: null, null:nocsum, pcap:FILE, packet:IFNAME\n"
		"                [:mmsg], xdp:IFNAME[:QUEUE][:copy|:zc], tap:IFNAME[,queues=N],\n"
		"                xdp-live:IFNAME (the kernel replays the packet: BPF_PROG_RUN),\n"
		"                an interface name,\n"
		"                or a socket: udp:HOST:PORT, tcp:HOST:PORT, unix:PATH with\n"
		"                options after commas (,zc ,uring ,gso ,listen ...; QEMU's\n"
		"                -netdev dgram/stream framing) (required unless --veth)\n"
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
		"      --veth[=PREFIX] (root) send through a private veth pair made for the run\n"
		"                     (198.18.0.1 -> 198.18.0.2) and removed after it, in\n"
		"                     namespaces PREFIX-a and PREFIX-b (default uvPID; PREFIX:\n"
		"                     1 to 10 of a-z 0-9, not uvNUMBER); -i may then name\n"
		"                     the kind: packet (default), packet::mmsg, xdp, xdp-live\n"
		"      --no-pin       do not pin thread N to CPU N\n"
		"      --rx DEV       receive instead (packet:IFNAME, xdp:IFNAME[:QUEUE], an\n"
		"                     interface name, tap:IFNAME, or udp:/tcp:/unix: with\n"
		"                     ,listen to wait for the sender; all the device's queues):\n"
		"                     count pktgen packets, lost / reordered / duplicate\n"
		"                     sequence numbers, latency p50/p99/p99.9 from the send\n"
		"                     times (same clock: same machine); ends after -n COUNT\n"
		"                     pktgen packets (default: none), --duration or Ctrl-C\n"
		"  -q, --quiet        no progress line on stderr\n"
		"  -h, --help         this text\n"
		"  -V, --version      print the version\n"
		"\n"
		"While running, a progress line per second goes to stderr; Ctrl-C stops\n"
		"cleanly and reports. Exit status: 0 ok (an interrupted run too), 1 bad usage,\n"
		"2 the engine could not be set up, 3 the run failed (a device counted errors\n"
		"or lost frames; --json says \"ok\": false), 5 a command was refused (a device\n"
		"that cannot be opened too).\n");
}

void die_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "uskb-pktgen: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'uskb-pktgen --help'.\n");
	exit(1);
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

static unsigned long parse_num(const char *opt, const char *s, unsigned long min, unsigned long max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	/* digits only: strtoul would skip spaces and take "-1" as its largest value */
	if (!isdigit((unsigned char)s[0]) || *end || errno || v < min || v > max) {
		fprintf(stderr, "uskb-pktgen: %s: \"%s\" is not a number from %lu to %lu\n", opt, s, min, max);
		exit(1);
	}
	return v;
}

static double parse_real(const char *opt, const char *s)
{
	char *end;
	double v;

	/* decimal only: strtod would also take spaces, hex, "inf" and "nan" */
	if (strspn(s, "0123456789.eE+-") != strlen(s) ||
	    (!isdigit((unsigned char)s[0]) && s[0] != '.')) {
		fprintf(stderr, "uskb-pktgen: %s: \"%s\" is not a positive number\n", opt, s);
		exit(1);
	}
	v = strtod(s, &end);
	if (!*s || *end || !(v > 0) || v > 1e15) {
		fprintf(stderr, "uskb-pktgen: %s: \"%s\" is not a positive number\n", opt, s);
		exit(1);
	}
	return v;
}

void cli_parse(int argc, char **argv, struct options *o)
{
	enum { O_FRAGS = 256, O_RATE, O_RATEP, O_DURATION, O_SEED, O_IMIX, O_JSON, O_SCRIPT,
	       O_NOPIN, O_DRYRUN, O_RANGE, O_VETH, O_RX };
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
		{ "veth", optional_argument, NULL, O_VETH },
		{ "rx", required_argument, NULL, O_RX },
		{ "print-range", required_argument, NULL, O_RANGE },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->dst_mac = "90:e2:ba:ff:ff:ff";
	o->size = 60;
	o->threads = 1;
	o->burst = 1;
	o->count = 100000;
	while ((c = getopt_long(argc, argv, "s:i:d:m:p:f:t:c:n:b:w:vxh6akqV", longopts, NULL)) != -1) {
		switch (c) {
		case 's': o->size = parse_num("-s", optarg, 0, 65535); break;
		case 'i': o->dev = optarg; break;
		case 'd': o->dst = optarg; break;
		case 'm': o->dst_mac = optarg; break;
		case 'p': o->port = optarg; break;
		case 'f': o->first = parse_num("-f", optarg, 0, 4095); break;
		case 't': o->threads = parse_num("-t", optarg, 1, 4096); break;
		case 'c': o->clone = parse_num("-c", optarg, 0, 2147483647); break;
		case 'n': o->count = parse_num("-n", optarg, 0, ULONG_MAX); o->count_set = true; break;
		case 'b': o->burst = parse_num("-b", optarg, 0, 1u << 20); break;
		case 'w': o->delay = parse_num("-w", optarg, 0, ULONG_MAX); break;
		case 'v': cli.verbose = 1; break;
		case 'x': o->debug = true; break;
		case '6': o->ip6 = true; break;
		case 'a': break;
		case 'k': o->csum = true; break;
		case 'q': cli.quiet = 1; break;
		case 'h': usage(stdout); exit(0);
		case O_FRAGS: o->frags = parse_num("--frags", optarg, 0, 17); o->have_frags = true; break;
		case O_RATE: o->rate = parse_real("--rate", optarg); break;
		case O_RATEP: o->ratep = parse_real("--ratep", optarg); break;
		case O_DURATION: cli.duration = parse_real("--duration", optarg); break;
		case O_SEED:
			o->po.seed = parse_num("--seed", optarg, 0, ULONG_MAX);
			o->po.seeded = true;
			break;
		case O_IMIX: o->imix = optarg; break;
		case O_JSON: cli.json = 1; break;
		case O_SCRIPT: o->script = optarg; break;
		case O_NOPIN: o->po.no_pin = true; break;
		case O_DRYRUN: cli.dry_run = 1; break;
		case O_RANGE: o->range_of = optarg; break;
		case O_VETH:
			o->use_veth = true;
			o->veth_prefix = optarg;
			/* uvNUMBER is the default's (a run's pid): another run would take it for a dead one's */
			if (optarg && (!*optarg || strlen(optarg) > 10 ||
				       strspn(optarg, "abcdefghijklmnopqrstuvwxyz0123456789") != strlen(optarg) ||
				       (!strncmp(optarg, "uv", 2) && optarg[2] &&
					strspn(optarg + 2, "0123456789") == strlen(optarg + 2))))
				die_usage("--veth=%s: a prefix is 1 to 10 of a-z and 0-9, not uvNUMBER (the "
					  "namespaces are PREFIX-a and PREFIX-b)", optarg);
			break;
		case O_RX: o->rx_dev = optarg; break;
		case 'V': printf("uskb-pktgen %s (pktgen 2.75 command language)\n", USKB_VERSION_STRING); exit(0);
		default: fprintf(stderr, "Try 'uskb-pktgen --help'.\n"); exit(1);
		}
	}
	o->cmds = argv + optind;
	o->ncmds = argc - optind;
}

/* --print-range ADDR: parse_addr / parse_addr6 of the functions.sh shim */
int cli_print_range(const struct options *o)
{
	char lo[INET6_ADDRSTRLEN], hi[INET6_ADDRSTRLEN];
	bool r;

	if (!parse_cidr(o->ip6 ? AF_INET6 : AF_INET, o->range_of, lo, hi, &r)) {
		fprintf(stderr, "uskb-pktgen: \"%s\" is not an IPv%c address or CIDR range\n",
			o->range_of, o->ip6 ? '6' : '4');
		return 1;
	}
	printf("%s %s\n", lo, hi);
	return 0;
}


/* what must hold before a device is made */
void cli_check(const struct options *o)
{
	if (cli.dry_run && !o->script)
		die_usage("%s", "--dry-run goes with --script");
	if (o->rate > 0 && o->ratep > 0)
		die_usage("%s", "--rate and --ratep exclude each other");
	if (o->use_veth && o->script)
		die_usage("%s", "--veth makes its own device: no --script");
	if (o->use_veth && o->dev && strncmp(o->dev, "packet", 6) && strncmp(o->dev, "xdp", 3))
		die_usage("--veth: -i names the kind of device only (packet, packet::mmsg, xdp, "
			  "xdp::copy, xdp-live), not \"%s\"", o->dev);
}

/* what must hold once the device is known; a duration without -n runs until it ends */
void cli_check_device(struct options *o)
{
	if (!o->script && !o->dev)
		die_usage("%s", "no device: give -i DEV (null, pcap:FILE, packet:IFNAME, xdp:IFNAME), "
				"--veth or --script FILE");
	if (o->first + o->threads > 4096)
		die_usage("%s", "-f + -t: at most 4096 threads");
	if (o->dev) {
		/* the engine's names have at most 127 characters, "@THREAD" included */
		char last[32];
		size_t max = 127;

		if (o->threads > 1)
			max -= (size_t)snprintf(last, sizeof(last), "@%lu", o->first + o->threads - 1);
		if (strpbrk(o->dev, "\" \t\r\n")) {
			fprintf(stderr, "uskb-pktgen: -i: a device name cannot hold a space, tab, newline "
					"or '\"': pktgen's commands end a name there\n");
			exit(1);
		}
		if (strlen(o->dev) > max) {
			fprintf(stderr, "uskb-pktgen: -i: the device name has %zu characters; at most %zu "
					"can be used%s\n", strlen(o->dev), max,
				o->threads > 1 ? " (127 with the @THREAD of each thread)" : "");
			exit(1);
		}
	}
	if (cli.duration > 0 && !o->count_set)
		o->count = 0;
}

/* rem_device_all, add_device and the device commands, thread by thread */
void cli_setup_devices(const struct options *o)
{
	for (unsigned long t = o->first; t < o->first + o->threads; t++) {
		char thr[32], name[300], dmin[INET6_ADDRSTRLEN], dmax[INET6_ADDRSTRLEN];
		bool range = false;

		snprintf(thr, sizeof(thr), "kpktgend_%lu", t);
		if (o->threads > 1)
			snprintf(name, sizeof(name), "%s@%lu", o->dev, t);
		else
			snprintf(name, sizeof(name), "%s", o->dev);
		proc_cmd(thr, "rem_device_all");
		proc_cmdf(thr, "add_device %s", name);
		if (o->threads > 1) {
			proc_cmd(name, "flag QUEUE_MAP_CPU");
			/* one stream per thread, as sample05's flow per thread: its own UDP source port */
			proc_cmdf(name, "udp_src_min %lu", 9 + (t - o->first));
			proc_cmdf(name, "udp_src_max %lu", 9 + (t - o->first));
		}
		proc_cmdf(name, "count %llu", o->count);
		cli.count = o->count;
		proc_cmdf(name, "clone_skb %lu", o->clone);
		proc_cmdf(name, "pkt_size %lu", o->size);
		proc_cmdf(name, "delay %llu", o->delay);
		if (o->burst > 1)
			proc_cmdf(name, "burst %lu", o->burst);
		if (o->have_frags)
			proc_cmdf(name, "frags %lu", o->frags);
		proc_cmdf(name, "dst_mac %s", o->dst_mac);
		if (o->ip6) {
			if (!parse_cidr(AF_INET6, o->dst ? o->dst : "fd00::1", dmin, dmax, &range))
				die_usage("-d: \"%s\" is not an IPv6 address or range", o->dst);
			if (range) {
				proc_cmdf(name, "dst6_min %s", dmin);
				proc_cmdf(name, "dst6_max %s", dmax);
			} else {
				proc_cmdf(name, "dst6 %s", dmin);
			}
		} else {
			if (!parse_cidr(AF_INET, o->dst ? o->dst : "198.18.0.42", dmin, dmax, &range))
				die_usage("-d: \"%s\" is not an IPv4 address or CIDR range", o->dst);
			/* as the kernel samples: one address is "dst" alone, so a raw
			 * "dst ..." later on the line means just that address */
			if (range) {
				proc_cmdf(name, "dst_min %s", dmin);
				proc_cmdf(name, "dst_max %s", dmax);
			} else {
				proc_cmdf(name, "dst %s", dmin);
			}
		}
		if (o->port) {
			unsigned long lo, hi;

			if (!parse_ports(o->port, &lo, &hi))
				die_usage("-p: \"%s\" is not a port N or a range N-M of 1-65535", o->port);
			/* udp_dst_max is exclusive in random mode: as the kernel samples */
			proc_cmdf(name, "udp_dst_min %lu", lo);
			proc_cmdf(name, "udp_dst_max %lu", hi);
		}
		if (o->csum)
			proc_cmd(name, "flag UDPCSUM");
		if (o->imix)
			proc_cmdf(name, "imix_weights %s", o->imix);
		/* the delay is per transmit call, which sends a whole burst */
		if (o->ratep > 0) {
			double per = o->ratep / (double)o->threads;

			proc_cmdf(name, "delay %.0f", 1e9 * (double)o->burst / per);
		} else if (o->rate > 0) {
			/* on the wire: the real frame, then preamble 8 + FCS 4 + inter-frame gap 12 */
			double fb = o->imix ? imix_mean(o->imix, o->ip6) : frame_bytes((double)o->size, o->ip6);
			double per = o->rate / (double)o->threads, bits = (fb + 24) * 8;

			proc_cmdf(name, "delay %.0f", bits * 1000.0 * (double)o->burst / per);
		}
		for (int a = 0; a < o->ncmds; a++)
			proc_cmd(name, o->cmds[a]);
		if (o->debug) {
			char buf[8192];

			uskb_pktgen_read(cli.pg, name, buf, sizeof(buf));
			fprintf(stderr, "%s", buf);
		}
	}
}
