/* SPDX-License-Identifier: MIT */
/*
 * What each per-packet field costs uskb-pktgen's live program
 * (bpf/pktgen_live.c), in ns per packet: the program run by BPF_PROG_RUN
 * without live frames (nothing is sent), the call timed from user space,
 * once per configuration, alternating, medians of 7. The first row is a
 * program that only returns XDP_TX: the runs' own cost, to subtract.
 *   bench_live PATH/pktgen_live.o   (needs root: CAP_BPF)
 * Prints "live.<row> ns_per_packet".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <arpa/inet.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bench.h"
#include "../bpf/pktgen_live.h"

struct variant {
	const char *name;
	uint32_t flags;
	uint32_t ts_batch; /* the time read as in a live run's batches of this many; 0: NO_TIMESTAMP */
	bool ranges;	   /* source and port ranges, stepped in order */
};

static const struct variant variants[] = {
	{ "xdp_tx_only", 0, 0, false }, /* the raw XDP_TX program */
	{ "seq_id_csum", 0, 0, false }, /* sequence, IPv4 id and checksum (ports, addresses fixed) */
	{ "ts_every_packet", 0, 1, false }, /* (batches of one: the clock read every run) */
	{ "ts_batch_64", 0, 64, false },
	{ "ranges_seq", 0, 64, true },
	{ "ipsrc_rnd", PGL_IPSRC_RND, 64, true },
	{ "udpcsum", PGL_UDPCSUM, 64, false },
	{ "ipv6_udpcsum", PGL_IPV6 | PGL_UDPCSUM, 64, false },
};
#define NV (sizeof(variants) / sizeof(variants[0]))

static int xdp_tx_prog(void)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = XDP_TX },
		{ .code = BPF_JMP | BPF_EXIT },
	};

	return bpf_prog_load(BPF_PROG_TYPE_XDP, "bench_tx", "Dual MIT/GPL", insns, 2, NULL);
}

/* ns per run of @fd on a 64-byte frame (@v's: 96 bytes) */
static double run(int fd, struct pgl_shared *sh, const struct variant *v, long n)
{
	unsigned char frame[96] = { 2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1 };
	bool v6 = v->flags & PGL_IPV6;
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = sizeof(frame),
		    .repeat = (unsigned int)n);

	frame[12] = v6 ? 0x86 : 0x08;
	frame[13] = v6 ? 0xdd : 0x00;
	frame[14] = v6 ? 0x60 : 0x45;
	if (sh) {
		struct pgl_cfg *c = &sh->cfg;

		memset(sh, 0, sizeof(*sh));
		c->flags = v->flags | (v->ts_batch ? 0 : PGL_NO_TIMESTAMP) | (v->ranges ? PGL_STEP : 0);
		c->len = sizeof(frame);
		c->nh = 14;
		c->th = v6 ? 54 : 34;
		/* (NO_TIMESTAMP: the engine's batches of 64, whose first frame reads the stop word) */
		c->batch_mask = (v->ts_batch ? v->ts_batch : 64) - 1;
		sh->st.ts_every = 1;
		c->src_min = c->src_max = c->dst_min = c->dst_max = 0xc6120001;
		if (v->ranges) {
			c->src_max = c->src_min + 100;
			c->udp_src_min = 9;
			c->udp_src_max = 100;
			c->udp_dst_min = 9;
			c->udp_dst_max = 20;
		}
		sh->st.seq_base = 1;
	}
	double t0 = bench_now_ns(), t1;

	if (bpf_prog_test_run_opts(fd, &o)) {
		fprintf(stderr, "bench_live: BPF_PROG_RUN: %s\n", strerror(errno));
		exit(1);
	}
	t1 = bench_now_ns();
	/*
	 * The call's wall time per run: the kernel's own mean (o.duration) is
	 * in whole ns, too coarse for fields of a nanosecond or two; the
	 * call's entry and exit are a few microseconds in n runs.
	 */
	return (t1 - t0) / (double)n;
}

int main(int argc, char **argv)
{
	double r[NV][BENCH_MAX_RUNS];
	struct bpf_object *obj;
	struct pgl_shared *sh = NULL;
	struct bpf_program *prog;
	struct bpf_map *m;
	int fd, fixfd, txfd, runs = bench_runs();
	long n = bench_n(20000000);

	if (argc != 2) {
		fprintf(stderr, "usage: bench_live PATH/pktgen_live.o\n");
		return 2;
	}
	libbpf_set_print(NULL);
	obj = bpf_object__open_file(argv[1], NULL);
	if (libbpf_get_error(obj) || bpf_object__load(obj)) {
		fprintf(stderr, "bench_live: cannot load %s (root? clang build?)\n", argv[1]);
		return 77;
	}
	/* the program that steps headers (ranges), and the one the other rows' engine loads */
	prog = bpf_object__find_program_by_name(obj, "pktgen_live");
	fd = prog ? bpf_program__fd(prog) : -1;
	prog = bpf_object__find_program_by_name(obj, "pktgen_live_fixed");
	fixfd = prog ? bpf_program__fd(prog) : -1;
	txfd = xdp_tx_prog();
	bpf_object__for_each_map(m, obj) {
		const char *name = bpf_map__name(m);
		size_t l = strlen(name);

		if (bpf_map__is_internal(m) && l >= 4 && !strcmp(name + l - 4, ".bss"))
			sh = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(m), 0);
	}
	if (fd < 0 || fixfd < 0 || txfd < 0 || !sh || sh == MAP_FAILED) {
		fprintf(stderr, "bench_live: no program or state in %s\n", argv[1]);
		return 1;
	}
	bench_pin(0);
	/* warm-up, then the configurations in turn, runs times */
	run(fixfd, sh, &variants[1], n / 10);
	for (int k = 0; k < runs; k++)
		for (unsigned int i = 0; i < NV; i++)
			r[i][k] = !i ? run(txfd, NULL, &variants[i], n) :
					 run(variants[i].ranges ? fd : fixfd, sh, &variants[i], n);
	for (unsigned int i = 0; i < NV; i++)
		printf("live.%s %.2f\n", variants[i].name, bench_median(r[i], runs));
	bpf_object__close(obj);
	return 0;
}
