/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target over the pktgen device commands, through the parser
 * itself (no engine, no threads): each input line is a command to one
 * device's parameters; a line "@N" flips whether the device takes shared
 * skbs (clone_skb and burst depend on it). A delay drawn from the input
 * follows. Then the device file is rendered and three packets are built
 * from what the commands made, as a run's first packets would be. Nothing
 * may crash, leak or trip a sanitizer, and every skb and page must be back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pktgen/pg.h"

static struct uskb_pktgen engine = { .lock = PTHREAD_MUTEX_INITIALIZER };
static struct pg_thread thread = { .pg = &engine };
static struct uskb_dev dev = { .name = "fuzz", .features = USKB_DEV_F_SG | USKB_DEV_F_IP_CSUM,
			       .nqueues = 4, .mac = { 2, 0, 0, 0, 0, 1 } };
static struct pg_netdev netdev = { .name = "fuzz", .dev = &dev, .users = 1 };
static struct pg_dev d;

/* a delay for the input: the special "never" value, small ones, anything */
static unsigned long long pick_delay(const unsigned char *data, size_t size)
{
	unsigned long long h = 1469598103934665603ull;

	for (size_t i = 0; i < size; i++)
		h = (h ^ data[i]) * 1099511628211ull;
	switch (h & 3) {
	case 0:
		return 0x7FFFFFFF;
	case 1:
		return (h >> 2) % 100000;
	default:
		return h >> (h & 63);
	}
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	char line[512], buf[8192];
	size_t i = 0;

	memset(&d, 0, sizeof(d));
	d.t = &thread;
	d.nd = &netdev;
	d.rng = 1;
	strcpy(d.odevname, "fuzz");
	__uskb_pg_defaults(&d.p);
	d.p.shared_skbs = true;
	while (i < size) {
		size_t n = 0;

		while (i < size && data[i] != '\n' && n < sizeof(line) - 1)
			line[n++] = (char)data[i++];
		i++;
		line[n] = 0;
		if (!strcmp(line, "@N")) {
			d.p.shared_skbs = !d.p.shared_skbs;
			continue;
		}
		__uskb_pg_parse(&d.p, line, d.result, sizeof(d.result));
	}
	snprintf(line, sizeof(line), "delay %llu", pick_delay(data, size));
	__uskb_pg_parse(&d.p, line, d.result, sizeof(d.result));
	__uskb_pg_show_dev(&d, buf, sizeof(buf));

	/* the first packets of a run */
	__uskb_pg_setup_inject(&d);
	d.flows = calloc(d.p.cflows ? d.p.cflows : 1, sizeof(*d.flows));
	d.zero = uskb_zero_page();
	for (int k = 0; d.flows && k < 3; k++) {
		struct uskb *skb = __uskb_pg_fill_packet(&d);

		if (skb)
			uskb_free(skb);
	}
	free(d.flows);
	free(d.tmpl); /* the frame template the engine keeps (dev_remove frees it there) */
	__uskb_pg_show_dev(&d, buf, sizeof(buf));
	uskb_thread_flush();
	if (!uskb_stats_all_freed()) {
		uskb_stats_print(stderr);
		abort();
	}
	return 0;
}
