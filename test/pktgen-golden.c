/* SPDX-License-Identifier: MIT */
/*
 * The engine against the kernel: each golden configuration's commands
 * (test/golden/<config>/commands.txt) are written to the engine in the same
 * order, on a device "v0" that looks like the kernel's veth (MAC
 * 02:00:00:00:00:01, checksum offload on unless the configuration turned it
 * off). Checked:
 *   - every "Result:" reply equals the kernel's (results.txt);
 *   - the device file before start equals device-before-start.txt exactly;
 *   - after the run, the device file equals device.txt and the thread file
 *     equals thread.txt, except the figures that are times;
 *   - the frames written (through a pcap device) equal the kernel's capture
 *     byte for byte, except the timestamp in the pktgen header.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <unistd.h>
#include "t.h"

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = calloc(1, (size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

/* Times vary from run to run: digits in "started:" and the two result lines become '#'. */
static void mask_times(char *s)
{
	char *line = s;

	while (line && *line) {
		char *nl = strchr(line, '\n');
		bool timed = !strncmp(line, "     started:", 13) || !strncmp(line, "Result: OK: ", 12) ||
			     (!strncmp(line, "  ", 2) && strstr(line, "pps "));

		if (timed)
			for (char *p = line; *p && p != nl; p++)
				if (isdigit((unsigned char)*p)) {
					char *q = p;

					while (isdigit((unsigned char)*q))
						q++;
					*p = '#';
					memmove(p + 1, q, strlen(q) + 1);
					if (nl)
						nl = strchr(p, '\n');
				}
		line = nl ? nl + 1 : NULL;
	}
}

static void same_text(const char *cfg, const char *what, const char *want, const char *got)
{
	if (strcmp(want, got)) {
		fprintf(stderr, "%s: %s differs\n--- kernel\n%s--- uskb\n%s---\n", cfg, what, want, got);
		t_failures++;
	}
}

/* The next "Result: " line of results.txt after the block for this command. */
static const char *expected_result(const char **cursor, char *out, size_t len)
{
	const char *blk = strstr(*cursor, "### ");
	const char *next, *r;

	out[0] = 0;
	if (!blk)
		return NULL;
	next = strstr(blk + 4, "### ");
	r = strstr(blk, "\nResult: ");
	if (r && (!next || r < next)) {
		const char *e = strchr(r + 9, '\n');

		snprintf(out, len, "%.*s", (int)(e ? e - (r + 9) : (long)strlen(r + 9)), r + 9);
	}
	*cursor = next ? next : blk + strlen(blk);
	return out;
}

/* An IPv4/UDP frame (no tags): does its UDP checksum verify? */
static bool udp4_csum_ok(const unsigned char *f, unsigned int len)
{
	const unsigned char *ip = f + 14, *udp = ip + 20;
	unsigned int ulen = (unsigned int)(udp[4] << 8 | udp[5]);
	uint32_t sum = 17 + ulen;

	if (ulen + 34 > len)
		return false;
	for (int i = 12; i < 20; i += 2)
		sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
	for (unsigned int i = 0; i < ulen; i += 2)
		sum += (uint32_t)(udp[i] << 8 | (i + 1 < ulen ? udp[i + 1] : 0));
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum == 0xffff;
}

static int compare_frames(const char *cfg, const char *ours, const char *theirs)
{
	FILE *a = fopen(ours, "rb"), *b = fopen(theirs, "rb");
	unsigned char fa[2048], fb[2048], h[24];
	uint32_t ra[4], rb[4];
	bool soft_csum = strstr(cfg, "txcsum_off") != NULL;
	int n = 0;

	CHECK(a && b);
	if (!a || !b)
		goto out;
	CHECK(fread(h, 24, 1, a) == 1 && fread(h, 24, 1, b) == 1);
	while (fread(rb, sizeof(rb), 1, b) == 1 && rb[2] <= sizeof(fb) && fread(fb, rb[2], 1, b) == 1) {
		unsigned int pgh;

		if (fread(ra, sizeof(ra), 1, a) != 1 || ra[2] > sizeof(fa) || fread(fa, ra[2], 1, a) != 1) {
			fprintf(stderr, "%s: uskb wrote %d frames, the kernel more\n", cfg, n);
			t_failures++;
			break;
		}
		/* the pktgen header: find the magic, blank the timestamp in both */
		for (pgh = 14; pgh + 16 <= rb[2]; pgh++)
			if (!memcmp(fb + pgh, "\xbe\x9b\xe9\x55", 4))
				break;
		if (ra[2] != rb[2] || pgh + 16 > rb[2]) {
			fprintf(stderr, "%s frame %d: length %u vs kernel %u\n", cfg, n, ra[2], rb[2]);
			t_failures++;
		} else {
			if (soft_csum) {
				/* the software sum covers the timestamp: check ours, then blank it */
				if (!udp4_csum_ok(fa, ra[2])) {
					fprintf(stderr, "%s frame %d: bad UDP checksum\n", cfg, n);
					t_failures++;
				}
				memset(fa + 40, 0, 2);
				memset(fb + 40, 0, 2);
			}
			memset(fa + pgh + 8, 0, 8);
			memset(fb + pgh + 8, 0, 8);
			if (memcmp(fa, fb, rb[2])) {
				fprintf(stderr, "%s frame %d differs from the kernel's\n", cfg, n);
				t_failures++;
			}
		}
		n++;
	}
	CHECK(fread(ra, sizeof(ra), 1, a) != 1); /* and nothing more */
out:
	if (a)
		fclose(a);
	if (b)
		fclose(b);
	return n;
}

static const char *const configs[] = {
	"a_pkt_size60",
	"b_pkt_size100_frags1",
	"c_pkt_size1000_frags4_udpcsum",
	"c2_pkt_size1000_frags4_udpcsum_txcsum_off",
	"d_ipv6_pkt_size100",
	"d2_ipv6_pkt_size100_udpcsum",
	"e_vlan5_p3_svlan7",
	"f_mpls_2labels",
};

static void run_config(const char *cfg)
{
	char path[512], pcap[256], spec[300], got[8192], want_res[600];
	char *cmds, *results, *before, *after, *thread, *line, *save = NULL;
	const char *rcur;
	struct uskb_pktgen_opts o = { .nthreads = 1, .seeded = true, .seed = 1 };
	struct uskb_pktgen *pg;
	struct uskb_dev *dev;
	int frames, failures_before = t_failures;

#define LOAD(var, file)                                                    \
	snprintf(path, sizeof(path), "test/golden/%s/%s", cfg, file);     \
	var = slurp(path);                                                 \
	CHECK(var != NULL);                                                \
	if (!var)                                                          \
		return
	LOAD(cmds, "commands.txt");
	LOAD(results, "results.txt");
	LOAD(before, "device-before-start.txt");
	LOAD(after, "device.txt");
	LOAD(thread, "thread.txt");
	rcur = results;

	snprintf(pcap, sizeof(pcap), "/tmp/uskb-golden-%d-%s.pcap", (int)getpid(), cfg);
	snprintf(spec, sizeof(spec), "pcap:%s", pcap);
	dev = uskb_dev_open(spec);
	CHECK(dev != NULL);
	if (!dev)
		return;
	/* veth: scatter-gather, shared skbs; checksum offload unless "tx off" */
	dev->features = USKB_DEV_F_SG | USKB_DEV_F_TX_SKB_SHARING;
	if (!strstr(cfg, "txcsum_off"))
		dev->features |= USKB_DEV_F_IP_CSUM | USKB_DEV_F_IPV6_CSUM;
	memcpy(dev->mac, "\x02\x00\x00\x00\x00\x01", 6);
	pg = uskb_pktgen_new(&o);
	CHECK(pg != NULL);
	CHECK_EQ(uskb_pktgen_register_dev(pg, "v0", dev), 0);

	for (line = strtok_r(cmds, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char cmd[256], file[64];
		const char *res;

		if (line[0] == '#')
			continue;
		if (sscanf(line, "echo \"%255[^\"]\" > /proc/net/pktgen/%63s", cmd, file) != 2) {
			fprintf(stderr, "%s: cannot read command line: %s\n", cfg, line);
			t_failures++;
			continue;
		}
		expected_result(&rcur, want_res, sizeof(want_res));
		if (!strcmp(file, "pgctrl") && !strcmp(cmd, "start")) {
			uskb_pktgen_read(pg, "v0", got, sizeof(got));
			same_text(cfg, "device file before start", before, got);
		}
		strcat(cmd, "\n"); /* echo writes the newline too */
		CHECK_EQ(uskb_pktgen_write(pg, file, cmd), 0);
		if (!strcmp(file, "pgctrl"))
			continue;
		res = uskb_pktgen_result(pg, file);
		CHECK(res != NULL);
		if (res && strcmp(res, want_res)) {
			fprintf(stderr, "%s: \"%s\" > %s replied \"%s\", the kernel \"%s\"\n", cfg,
				line + 6, file, res, want_res);
			t_failures++;
		}
	}
	uskb_pktgen_read(pg, "v0", got, sizeof(got));
	mask_times(got);
	mask_times(after);
	same_text(cfg, "device file after the run", after, got);
	uskb_pktgen_read(pg, "kpktgend_0", got, sizeof(got));
	same_text(cfg, "thread file", thread, got);

	uskb_pktgen_free(pg);
	uskb_dev_close(dev); /* flushes the pcap */
	snprintf(path, sizeof(path), "test/golden/%s.pcap", cfg);
	frames = compare_frames(cfg, pcap, path);
	CHECK_EQ(frames, 20);
	printf("%-45s replies, device and thread files, %d frames: %s\n", cfg, frames,
	       t_failures > failures_before ? "DIFFER" : "as the kernel");
	unlink(pcap);
	free(cmds);
	free(results);
	free(before);
	free(after);
	free(thread);
}

int main(void)
{
	for (size_t i = 0; i < sizeof(configs) / sizeof(configs[0]); i++)
		run_config(configs[i]);
	uskb_thread_flush();
	return t_end("pktgen-golden");
}
