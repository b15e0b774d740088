/* SPDX-License-Identifier: MIT */
#ifndef USKB_UBUF_PRIV_H
#define USKB_UBUF_PRIV_H

/* The ubuf layer stands on the skb layer's ubuf reference counting. */
#include "skb/priv.h"

#endif
