/* SPDX-License-Identifier: MIT */
/*
 * --upcall-pcap FILE: every upcall message, as a Linux netlink capture
 * (LINKTYPE_NETLINK, 253, what tcpdump writes on an nlmon interface):
 * each record is a 16-byte cooked header (packet type, ARPHRD_NETLINK,
 * address length 0, 8 address bytes, the netlink protocol: NETLINK_GENERIC)
 * and the message, so that tshark's netlink and genetlink dissectors read
 * it. Datapath threads write it under a lock: it is for debugging.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <linux/netlink.h>

#include "dp.h"

#define LINKTYPE_NETLINK 253
#define ARPHRD_NETLINK 824
#define SNAPLEN 262144

static FILE *pf;
static pthread_mutex_t plock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *pbuf;

int pcap_open(const char *path)
{
	struct {
		uint32_t magic;
		uint16_t major, minor;
		int32_t zone;
		uint32_t sigfigs, snaplen, linktype;
	} hdr = { 0xa1b2c3d4, 2, 4, 0, 0, SNAPLEN, LINKTYPE_NETLINK };

	pf = fopen(path, "wb");
	pbuf = malloc(SNAPLEN);
	if (!pf || !pbuf || fwrite(&hdr, sizeof(hdr), 1, pf) != 1) {
		fprintf(stderr, "uskb-dp: --upcall-pcap %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

void pcap_write(const struct uskb *msg)
{
	struct {
		uint32_t sec, usec, caplen, len;
		uint16_t pkttype, hatype, halen;
		uint8_t addr[8];
		uint16_t proto;
	} __attribute__((packed)) rec = { 0 };
	struct timeval tv;
	unsigned int len = msg->len < SNAPLEN - 16 ? msg->len : SNAPLEN - 16;

	gettimeofday(&tv, NULL);
	rec.sec = (uint32_t)tv.tv_sec;
	rec.usec = (uint32_t)tv.tv_usec;
	rec.caplen = 16 + len;
	rec.len = 16 + msg->len;
	rec.pkttype = htons(4); /* PACKET_OUTGOING: from the kernel's side, as nlmon says */
	rec.hatype = htons(ARPHRD_NETLINK);
	rec.proto = htons(NETLINK_GENERIC);
	pthread_mutex_lock(&plock);
	if (pf && !uskb_copy_bits(msg, 0, pbuf, (int)len)) {
		fwrite(&rec, sizeof(rec), 1, pf);
		fwrite(pbuf, len, 1, pf);
	}
	pthread_mutex_unlock(&plock);
}

void pcap_close(void)
{
	if (pf)
		fclose(pf);
	pf = NULL;
	free(pbuf);
	pbuf = NULL;
}
