/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target over the pktgen command parser: each input line is a
 * command to the device file (or, after a line "@T", to kpktgend_0, after
 * "@C" to pgctrl except start). Then the configuration the commands made is
 * run for a few packets on the null device, so what the parser accepted is
 * also built and sent. Nothing may crash, leak or trip a sanitizer, and the
 * live counters must be back to zero.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uskb/uskb.h>
#include <uskb/dev.h>
#include <uskb/pktgen.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct uskb_pktgen_opts o = { .nthreads = 1, .seeded = true, .seed = 1, .no_pin = true };
	struct uskb_pktgen *pg = uskb_pktgen_new(&o);
	const char *file = "null";
	char line[512], buf[8192];
	size_t i = 0;

	if (!pg)
		return 0;
	uskb_pktgen_write(pg, "kpktgend_0", "add_device null");
	while (i < size) {
		size_t n = 0;

		while (i < size && data[i] != '\n' && n < sizeof(line) - 1)
			line[n++] = (char)data[i++];
		i++;
		line[n] = 0;
		if (!strcmp(line, "@T")) {
			file = "kpktgend_0";
			continue;
		}
		if (!strcmp(line, "@C")) {
			file = "pgctrl";
			continue;
		}
		if (!strcmp(file, "pgctrl") && strstr(line, "start"))
			continue;
		uskb_pktgen_write(pg, file, line);
		file = "null";
	}
	uskb_pktgen_read(pg, "null", buf, sizeof(buf));
	uskb_pktgen_read(pg, "kpktgend_0", buf, sizeof(buf));
	/* send what was configured, briefly, if the device is still there */
	if (uskb_pktgen_result(pg, "null")) {
		uskb_pktgen_write(pg, "null", "count 3");
		uskb_pktgen_write(pg, "null", "delay 0");
		uskb_pktgen_write(pg, "null", "burst 1");
		uskb_pktgen_write(pg, "pgctrl", "start");
		uskb_pktgen_read(pg, "null", buf, sizeof(buf));
	}
	uskb_pktgen_free(pg);
	uskb_thread_flush();
	if (!uskb_stats_all_freed()) {
		uskb_stats_print(stderr);
		abort();
	}
	return 0;
}
