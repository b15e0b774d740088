/* SPDX-License-Identifier: MIT */
/*
 * A TCP peer that accepts and never reads: the sender's socket buffer and
 * then its device back up, as behind a stuck receiver.
 *
 *   stall-peer PORT [SECONDS]
 *
 * Listens on 127.0.0.1:PORT with a small receive buffer, prints "ready"
 * once it listens, accepts every connection and keeps it unread until
 * SECONDS (default 120) have passed or a signal ends it.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>

int main(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	long port = argc > 1 ? strtol(argv[1], NULL, 10) : 0;
	long secs = argc > 2 ? strtol(argv[2], NULL, 10) : 120;
	int fd, one = 1, rcvbuf = 4096;
	time_t end;

	if (argc < 2 || port < 1 || port > 65535 || secs < 1) {
		fprintf(stderr, "usage: stall-peer PORT [SECONDS]\n");
		return 2;
	}
	sa.sin_port = htons((uint16_t)port);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* set before listen: accepted sockets inherit it */
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 8)) {
		perror("stall-peer");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	end = time(NULL) + secs;
	while (time(NULL) < end) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		/* accepted and kept open, never read (closed at exit) */
		if (poll(&p, 1, 200) > 0 && accept(fd, NULL, NULL) < 0)
			perror("stall-peer: accept");
	}
	return 0;
}
