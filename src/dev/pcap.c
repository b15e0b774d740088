/* SPDX-License-Identifier: MIT */
/* pcap:FILE: every frame to a classic pcap file. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "dev/priv.h"

struct pcap_priv {
	FILE *f;
	char path[128];
	unsigned char buf[65536];
};

static int pcap_open(struct uskb_dev *dev, const char *arg)
{
	/* classic pcap: magic, v2.4, GMT offset 0, sigfigs 0, snaplen, LINKTYPE_ETHERNET */
	static const uint32_t hdr[6] = { 0xa1b2c3d4, 0x00040002, 0, 0, 65535, 1 };
	struct pcap_priv *p;

	if (!arg || !*arg)
		return __uskb_dev_fail(EINVAL, "pcap: give a file, as in pcap:out.pcap");
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->f = fopen(arg, "wb");
	if (!p->f) {
		int err = errno;

		free(p);
		return __uskb_dev_fail(err, "pcap: cannot create %s: %s", arg, strerror(err));
	}
	if (fwrite(hdr, sizeof(hdr), 1, p->f) != 1) {
		fclose(p->f);
		free(p);
		return __uskb_dev_fail(EIO, "pcap: cannot write %s", arg);
	}
	snprintf(p->path, sizeof(p->path), "%s", arg);
	dev->priv = p;
	/* a capture file takes anything, as the NIC would: SG, no offloads */
	dev->features = USKB_DEV_F_SG | USKB_DEV_F_ZEROCOPY | USKB_DEV_F_TX_SKB_SHARING;
	return 0;
}

static void pcap_close(struct uskb_dev *dev)
{
	struct pcap_priv *p = dev->priv;

	fclose(p->f);
	free(p);
}

static void pcap_xmit(struct uskb_dev *dev, unsigned int queue, struct uskb **skbs, int n,
		      int *res)
{
	struct pcap_priv *p = dev->priv;
	struct timeval tv;
	int i;

	(void)queue;
	gettimeofday(&tv, NULL);
	for (i = 0; i < n; i++) {
		struct uskb *skb = skbs[i];
		unsigned int caplen = skb->len < sizeof(p->buf) ? skb->len : sizeof(p->buf);
		uint32_t rec[4] = { (uint32_t)tv.tv_sec, (uint32_t)tv.tv_usec, caplen, skb->len };

		/* head, frags and frag_list, in order */
		if (uskb_copy_bits(skb, 0, p->buf, (int)caplen) ||
		    fwrite(rec, sizeof(rec), 1, p->f) != 1 || fwrite(p->buf, caplen, 1, p->f) != 1) {
			res[i] = USKB_XMIT_DROP;
			__uskb_dev_error(dev, "pcap: writing %s: %s", p->path,
					 ferror(p->f) ? strerror(errno) : "the frame cannot be read");
		} else {
			res[i] = USKB_XMIT_OK;
		}
		uskb_consume(skb);
	}
}

/* Frames written so far reach the file, or the device says why not. */
static void pcap_flush(struct uskb_dev *dev, unsigned int queue)
{
	struct pcap_priv *p = dev->priv;

	(void)queue;
	if (fflush(p->f) || ferror(p->f))
		__uskb_dev_error(dev, "pcap: writing %s: %s", p->path, strerror(errno));
}

const struct uskb_dev_ops __uskb_dev_pcap_ops = {
	.type = "pcap", .open = pcap_open, .close = pcap_close, .xmit = pcap_xmit,
	.flush = pcap_flush
};
