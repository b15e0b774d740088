/* SPDX-License-Identifier: MIT */
/*
 * pcap:FILE: every frame to a classic pcap file, gathered into 256 KiB
 * writes. A write that fails (a full disk) loses only the records it did
 * not write, counted as lost; the file stays a valid capture.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "dev/priv.h"

#define WBUF (256 * 1024)	   /* records gathered before a write(2) */
#define WRECS (WBUF / 16)	   /* at most that many records in it */

struct pcap_priv {
	int fd;
	char path[128];
	bool broken;		   /* a write failed: later frames are dropped */
	off_t off;		   /* bytes of whole records in the file */
	size_t wlen;		   /* bytes gathered in wbuf */
	unsigned int nrec;	   /* records gathered */
	uint32_t rec_end[WRECS];   /* where each gathered record ends in wbuf */
	unsigned char wbuf[WBUF];
};

/* write @len bytes at @buf; how many reached the file (errno set when short) */
static size_t write_all(int fd, const unsigned char *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = write(fd, buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (!n)
				errno = ENOSPC;
			break;
		}
		done += (size_t)n;
	}
	return done;
}

static int pcap_open(struct uskb_dev *dev, const char *arg)
{
	/* classic pcap: magic, v2.4, GMT offset 0, sigfigs 0, snaplen, LINKTYPE_ETHERNET */
	static const uint32_t hdr[6] = { 0xa1b2c3d4, 0x00040002, 0, 0, 65535, 1 };
	struct pcap_priv *p;
	int err;

	if (!arg || !*arg)
		return __uskb_dev_fail(EINVAL, "pcap: give a file, as in pcap:out.pcap");
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->fd = open(arg, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (p->fd < 0) {
		err = errno;
		free(p);
		return __uskb_dev_fail(err, "pcap: cannot create %s: %s", arg, strerror(err));
	}
	/* the header at once: a file that cannot be written fails the open */
	if (write_all(p->fd, (const unsigned char *)hdr, sizeof(hdr)) != sizeof(hdr)) {
		err = errno;
		close(p->fd);
		free(p);
		return __uskb_dev_fail(err, "pcap: cannot write %s: %s", arg, strerror(err));
	}
	p->off = sizeof(hdr);
	snprintf(p->path, sizeof(p->path), "%s", arg);
	dev->priv = p;
	/* a capture file takes anything, as the NIC would: SG, no offloads */
	/* it copies every frame into its write buffer: done with user frags at once */
	dev->features = USKB_DEV_F_SG | USKB_DEV_F_TX_SKB_SHARING;
	return 0;
}

/*
 * The gathered records to the file. A short write (a full disk) keeps the
 * whole records that made it, cuts the file back to the last of them so
 * that it stays a valid capture, and counts the others as lost: they were
 * reported sent when they were gathered.
 */
static void pcap_write_out(struct uskb_dev *dev)
{
	struct pcap_priv *p = dev->priv;
	size_t done;
	unsigned int whole = 0;
	uint64_t lost_bytes = 0;
	int err;

	if (!p->wlen)
		return;
	done = write_all(p->fd, p->wbuf, p->wlen);
	if (done == p->wlen) {
		p->off += (off_t)done;
		p->wlen = 0;
		p->nrec = 0;
		return;
	}
	err = errno;
	while (whole < p->nrec && p->rec_end[whole] <= done)
		whole++;
	p->off += whole ? p->rec_end[whole - 1] : 0;
	if (ftruncate(p->fd, p->off) == 0)
		lseek(p->fd, p->off, SEEK_SET);
	for (unsigned int i = whole; i < p->nrec; i++) {
		uint32_t len; /* the record's original length, as tx_bytes counted it */

		memcpy(&len, p->wbuf + (i ? p->rec_end[i - 1] : 0) + 12, 4);
		lost_bytes += len;
	}
	p->broken = true;
	__uskb_dev_tx_lost(dev, 0, p->nrec - whole, lost_bytes, strerror(err));
	__uskb_dev_error(dev, "pcap: writing %s: %s (%u frames lost; the file ends with the last whole one)",
			 p->path, strerror(err), p->nrec - whole);
	p->wlen = 0;
	p->nrec = 0;
}

static void pcap_close(struct uskb_dev *dev)
{
	struct pcap_priv *p = dev->priv;

	pcap_write_out(dev);
	close(p->fd);
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
		unsigned int caplen = skb->len < 65535 ? skb->len : 65535;
		uint32_t rec[4] = { (uint32_t)tv.tv_sec, (uint32_t)tv.tv_usec, caplen, skb->len };

		if (p->wlen + sizeof(rec) + caplen > WBUF || p->nrec == WRECS)
			pcap_write_out(dev);
		/* head, frags and frag_list, in order */
		if (p->broken || uskb_copy_bits(skb, 0, p->wbuf + p->wlen + sizeof(rec), (int)caplen)) {
			res[i] = USKB_XMIT_DROP;
			if (!p->broken)
				__uskb_dev_error(dev, "pcap: writing %s: the frame cannot be read", p->path);
		} else {
			memcpy(p->wbuf + p->wlen, rec, sizeof(rec));
			p->wlen += sizeof(rec) + caplen;
			p->rec_end[p->nrec++] = (uint32_t)p->wlen;
			res[i] = USKB_XMIT_OK;
		}
		uskb_consume(skb);
	}
}

/* Frames gathered so far reach the file, or the device says why not. */
static void pcap_flush(struct uskb_dev *dev, unsigned int queue)
{
	(void)queue;
	pcap_write_out(dev);
}

const struct uskb_dev_ops __uskb_dev_pcap_ops = {
	.type = "pcap", .open = pcap_open, .close = pcap_close, .xmit = pcap_xmit,
	.flush = pcap_flush
};
