/* SPDX-License-Identifier: MIT */
/*
 * A vhost-user frontend that stalls: it connects to a backend's socket,
 * sends a message header that announces 8 payload bytes, sends 3 of them,
 * and then nothing.
 *
 *   stall-front SOCKET [SECONDS]
 *
 * Waits up to SECONDS (default 10) for the backend to close the
 * connection. It prints "closed after N ms" and exits 0, or prints "still
 * open after N s" and exits 1. Exit 2 means the connect failed.
 */
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

static uint64_t ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	/* request 1 (GET_FEATURES), flags 1 (version 1), size 8; then 3 of the 8 bytes */
	uint32_t hdr[3] = { 1, 1, 8 };
	uint8_t part[3] = { 0 }, buf[64];
	long secs = argc > 2 ? strtol(argv[2], NULL, 10) : 10;
	uint64_t start, end;
	int fd;

	if (argc < 2 || strlen(argv[1]) >= sizeof(sa.sun_path) || secs < 1) {
		fprintf(stderr, "usage: stall-front SOCKET [SECONDS]\n");
		return 2;
	}
	strcpy(sa.sun_path, argv[1]);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		perror("stall-front: connect");
		return 2;
	}
	if (send(fd, hdr, sizeof(hdr), MSG_NOSIGNAL) != sizeof(hdr) ||
	    send(fd, part, sizeof(part), MSG_NOSIGNAL) != sizeof(part)) {
		perror("stall-front: send");
		return 2;
	}
	/* the clock starts at the stall: the backend may not have accepted yet (it serves one at a time) */
	start = ms_now();
	end = start + (uint64_t)secs * 1000u;
	for (uint64_t now = start; now < end; now = ms_now()) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (poll(&p, 1, (int)(end - now)) > 0 && recv(fd, buf, sizeof(buf), 0) <= 0) {
			printf("closed after %llu ms\n", (unsigned long long)(ms_now() - start));
			return 0;
		}
	}
	printf("still open after %ld s\n", secs);
	return 1;
}
