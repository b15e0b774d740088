/* SPDX-License-Identifier: MIT */
/*
 * Randomized model test: long random sequences of skb operations checked
 * after every step against plain byte arrays. USKB_MODEL_OPS overrides the
 * operation count, USKB_SEED the seed (printed either way).
 */
#include <time.h>
#include "t.h"
#include "model.h"

int main(int argc, char **argv)
{
	long ops = 1000000;
	uint64_t seed = (uint64_t)time(NULL) ^ ((uint64_t)clock() << 20);
	struct model_src src = { 0 };
	struct model_result res;
	const char *e;
	int i;

	if ((e = getenv("USKB_MODEL_OPS")))
		ops = atol(e);
	if ((e = getenv("USKB_SEED")))
		seed = strtoull(e, NULL, 0);
	if (argc > 1)
		seed = strtoull(argv[1], NULL, 0);
	src.rng = seed ? seed : 1;
	printf("skb-model: seed %#llx, %ld operations (rerun: USKB_SEED=%#llx)\n",
	       (unsigned long long)seed, ops, (unsigned long long)seed);
	model_run(&src, ops, 1, &res);
	printf("skb-model: %ld operations ran%s\n", res.ops, res.failed ? " — FAILED" : " clean");
	for (i = 0; i < model_nops(); i++)
		printf("  %-15s %ld\n", model_op_name(i), res.counts[i]);
	CHECK(!res.failed);
	CHECK_EQ(res.ops, ops);
	return t_end("skb-model");
}
