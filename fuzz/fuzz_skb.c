/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target over the skb operation language of test/model_ops.c:
 * the input bytes choose the operations and their arguments; every step is
 * checked against the byte-array model, and every run must end with all
 * objects freed. Build and run: make fuzz-run FUZZ_TIME=60
 */
#include <stdio.h>
#include <stdlib.h>
#include <uskb/uskb.h>

#include "../test/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct model_src src = { .data = data, .len = size };
	struct model_result res;

	model_run(&src, 100000, 1, &res);
	if (res.failed)
		abort();
	if (!uskb_stats_all_freed())
		abort();
	return 0;
}
