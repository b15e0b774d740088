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
	long ops = 1800000; /* about 1.04 million execute (others fail a precondition) */
	uint64_t seed = (uint64_t)time(NULL) ^ ((uint64_t)clock() << 20);
	struct model_src src = { 0 };
	struct model_result res;
	const char *e;
	long skipped = 0;
	int i;

	if ((e = getenv("USKB_MODEL_OPS")))
		ops = atol(e);
	if ((e = getenv("USKB_SEED")))
		seed = strtoull(e, NULL, 0);
	if (argc > 1)
		seed = strtoull(argv[1], NULL, 0);
	setvbuf(stdout, NULL, _IOLBF, 0);
	src.rng = seed ? seed : 1;
	printf("skb-model: seed %#llx, %ld operations (rerun: USKB_SEED=%#llx)\n",
	       (unsigned long long)seed, ops, (unsigned long long)seed);
	model_run(&src, ops, 1, &res);
	printf("skb-model: %ld operations ran%s\n", res.ops, res.failed ? " — FAILED" : " clean");
	printf("  %-15s %9s %9s\n", "operation", "executed", "skipped");
	for (i = 0; i < model_nops(); i++) {
		printf("  %-15s %9ld %9ld\n", model_op_name(i), res.counts[i] - res.skipped[i],
		       res.skipped[i]);
		skipped += res.skipped[i];
	}
	printf("skb-model: %ld executed, %ld skipped (precondition not met)\n", res.ops - skipped,
	       skipped);
	CHECK(!res.failed);
	CHECK_EQ(res.ops, ops);
	if (!getenv("USKB_MODEL_OPS"))
		CHECK(res.ops - skipped >= 1000000);
	return t_end("skb-model");
}
