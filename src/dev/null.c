/* SPDX-License-Identifier: MIT */
/* null: a device that consumes everything (pktgen to a dummy device). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dev/priv.h"
#include "uskb/cache.h"

/* "null" or "null:nocsum" (no checksum offload: senders compute UDP sums) */
static int null_open(struct uskb_dev *dev, const char *arg)
{
	dev->features = USKB_DEV_F_SG | USKB_DEV_F_IP_CSUM | USKB_DEV_F_IPV6_CSUM |
			USKB_DEV_F_ZEROCOPY | USKB_DEV_F_TX_SKB_SHARING;
	if (arg && !strcmp(arg, "nocsum")) {
		dev->features &= ~(uint32_t)(USKB_DEV_F_IP_CSUM | USKB_DEV_F_IPV6_CSUM);
	} else if (arg && *arg) {
		return __uskb_dev_fail(EINVAL, "null: the only option is nocsum (got \"%s\")", arg);
	}
	return 0;
}

static void null_xmit(struct uskb_dev *dev, unsigned int queue, struct uskb **skbs, int n,
		      int *res)
{
	int i;

	(void)dev;
	(void)queue;
	/* a single send (pktgen's burst 1): no burst's loop, which gcc makes a memset call */
	if (n == 1) {
		res[0] = USKB_XMIT_OK;
		uskb_free(skbs[0]);
		return;
	}
	for (i = 0; i < n; i++)
		res[i] = USKB_XMIT_OK;
	uskb_free_bulk(skbs, (unsigned int)n); /* consumed, as DPDK's null PMD frees its burst */
}

const struct uskb_dev_ops __uskb_dev_null_ops = { .type = "null", .open = null_open, .xmit = null_xmit };
