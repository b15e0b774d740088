/* SPDX-License-Identifier: MIT */
#ifndef USKB_UMBRELLA_H
#define USKB_UMBRELLA_H

/**
 * @file uskb.h
 * Umbrella header of libuskb: sk_buff-style packet buffers in userspace.
 */

#define USKB_VERSION_MAJOR 0
#define USKB_VERSION_MINOR 1

#include "common.h"
#include "page.h"
#include "skb.h"
#include "csum.h"
#include "stats.h"
#include "cache.h"
#include "ubuf.h"
#include "netlink.h"
#include "ovs.h"

/* Devices (uskb/dev.h, libuskb-netdev) and pktgen (uskb/pktgen.h,
 * libuskb-pktgen) have headers and libraries of their own. */

#endif
