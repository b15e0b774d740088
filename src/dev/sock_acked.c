/* SPDX-License-Identifier: MIT */
/*
 * How many bytes of a TCP connection its peer has acknowledged, from the
 * kernel's own struct tcp_info (linux/tcp.h: glibc's copy stops before
 * tcpi_bytes_acked, and the two headers cannot be included together, so
 * this reads it in a file of its own).
 */
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <linux/tcp.h>

#include "dev/sock.h"

int __uskb_sk_bytes_acked(int fd, uint64_t *acked)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	/* tcpi_bytes_acked: Linux 4.1 and later (RFC 4898 tcpEStatsAppHCThruOctetsAcked) */
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) ||
	    len < offsetof(struct tcp_info, tcpi_bytes_acked) + sizeof(ti.tcpi_bytes_acked))
		return -1;
	*acked = ti.tcpi_bytes_acked;
	return 0;
}
