/* SPDX-License-Identifier: MIT */
#ifndef USKB_TOOLS_PKTGEN_CLI_H
#define USKB_TOOLS_PKTGEN_CLI_H

/*
 * uskb-pktgen, the command line tool: what its files share. main.c runs
 * the modes, options.c reads the options of the kernel's parameters.sh
 * and turns them into device commands, script.c writes commands (one by
 * one or from a --script file), report.c runs and reports, rx.c is --rx,
 * veth.c is --veth.
 */

#include <signal.h>
#include <stdio.h>
#include <uskb/uskb.h>
#include <uskb/dev.h>
#include <uskb/pktgen.h>

#include "lib/compiler.h"

#ifndef USKB_VERSION_STRING
#error "build with -DUSKB_VERSION_STRING=\"x.y.z\" (the Makefile's VERSION)"
#endif

/* the state of the run */
struct cli {
	struct uskb_pktgen *pg;
	int verbose, quiet, json, dry_run;
	double duration;
	bool failed; /* a device counted errors or failed: the exit status says so */
	bool veth;   /* --veth: the JSON gives what the peer received */
	unsigned long long count; /* packets each device was told to send (0: no limit, or a script's) */
};
extern struct cli cli;
extern volatile sig_atomic_t cli_interrupted;

/* the options */
struct options {
	const char *dev, *dst, *dst_mac, *port, *imix, *script, *range_of, *rx_dev;
	unsigned long size, threads, first, clone, burst, frags;
	unsigned long long count, delay;
	bool count_set, ip6, csum, debug, have_frags, use_veth;
	const char *veth_prefix; /* --veth=PREFIX, or NULL: uvPID */
	double rate, ratep;
	struct uskb_pktgen_opts po;
	char **cmds; /* the raw device commands after the options */
	int ncmds;
};

/* options.c */
void cli_parse(int argc, char **argv, struct options *o);
void cli_check(const struct options *o);
void cli_check_device(struct options *o);
int cli_print_range(const struct options *o);
void cli_setup_devices(const struct options *o);
void die_usage(const char *fmt, const char *arg) __attribute__((noreturn));

/* script.c */
void proc_cmd(const char *file, const char *cmd);
void proc_cmdf(const char *file, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int run_script(const char *path);

/* report.c */
void cli_catch_signals(void);
/* the engine freed, out of the Ctrl-C handler's reach first */
void cli_free_engine(void);
void start_run(void);
void json_str(const char *s);
/* with -v, the library's live objects for a progress line ("" otherwise) */
void cli_live(char *buf, size_t len);

/* rx.c */
int cli_rx(const struct options *o);

/* veth.c: make the pair, enter its first end, and point the options at it */
void veth_use(struct options *o);
/* packets the peer's end received since the pair was made, -1 if unknown */
long long veth_peer_received(void);
/* remove the pair and say what the peer received and whether the pair is gone */
void veth_report(void);

#endif
