/* SPDX-License-Identifier: MIT */
/*
 * Model-based checking of the skb operations: a small operation language
 * interpreted over a handful of skb slots, each mirrored by a plain byte
 * array. Driven by a PRNG (test/skb-model) or by fuzzer input (fuzz/).
 */
#ifndef USKB_TEST_MODEL_H
#define USKB_TEST_MODEL_H

#include <stddef.h>
#include <stdint.h>

struct model_src {
	const uint8_t *data; /* fuzzer bytes, or NULL for the PRNG */
	size_t len, pos;
	uint64_t rng;
};

struct model_result {
	long ops;		/* operations executed */
	long counts[64];	/* per operation */
	long skipped[64];	/* of which a precondition did not hold */
	int failed;		/* 1 on the first mismatch (details on stderr) */
};

/* Run up to @max_ops operations (or until the fuzzer bytes run out). */
void model_run(struct model_src *src, long max_ops, int verify_every,
	       struct model_result *res);
const char *model_op_name(int op);
int model_nops(void);

#endif
