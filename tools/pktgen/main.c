/* SPDX-License-Identifier: MIT */
/*
 * uskb-pktgen: the kernel's pktgen in userspace. The options are those of
 * the kernel's samples/pktgen/parameters.sh; extra arguments are raw pktgen
 * device commands; --script runs pg_ctrl / pg_thread / pg_set lines; --rx
 * receives. See man/man8/uskb-pktgen.8.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

struct cli cli;
volatile sig_atomic_t cli_interrupted;

/* an engine with enough threads for the options (a script may name any of 64) */
static struct uskb_pktgen *engine(struct options *o)
{
	long ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned long n;

	if (ncpus < 1)
		ncpus = 1;
	n = o->first + o->threads > (unsigned long)ncpus ? o->first + o->threads : (unsigned long)ncpus;
	if (o->script && n < 64)
		n = 64;
	o->po.nthreads = (int)n;
	return uskb_pktgen_new(&o->po);
}

int main(int argc, char **argv)
{
	struct options o;
	int rc = 0;

	/* first of all: a Ctrl-C at any point must still clean up (--veth) */
	cli_catch_signals();
	cli_parse(argc, argv, &o);
	if (o.range_of)
		return cli_print_range(&o);
	if (o.rx_dev)
		return cli_rx(&o);
	cli_check(&o);
	if (o.use_veth)
		veth_use(&o);
	cli_check_device(&o);
	cli.pg = engine(&o);
	if (!cli.pg) {
		perror("uskb-pktgen");
		return 2;
	}
	if (cli_interrupted) /* a Ctrl-C during the set-up: the run ends at once */
		uskb_pktgen_stop(cli.pg);
	if (o.script) {
		rc = run_script(o.script);
	} else {
		cli_setup_devices(&o);
		start_run();
	}
	cli_free_engine();
	if (o.use_veth)
		veth_report();
	if (!rc && cli.failed)
		rc = 3;
	/* a report nobody could read is a failed run too */
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "uskb-pktgen: writing the report: %s\n", strerror(errno));
		if (!rc)
			rc = 3;
	}
	return rc;
}
