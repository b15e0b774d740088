/* SPDX-License-Identifier: MIT */
#ifndef USKB_LIB_UNIXPATH_H
#define USKB_LIB_UNIXPATH_H

/*
 * A Unix socket path a server is about to bind: free it only when nobody
 * serves it. Header-only (no symbols): libuskb-vhost's listener and
 * uskb-dp's --handler-socket share it.
 */

#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

/*
 * Before bind(@path) of a socket of @type: 0 when the path is free, or was
 * a socket nobody listens on any more (a crashed run's; removed here);
 * -EADDRINUSE when a live process accepts on it (a connect() succeeds, or
 * its backlog is full), which a second server must not take over; -ENOTSOCK
 * when something other than a socket is there (left alone); -ENAMETOOLONG.
 * The probe connects once: the live server sees a peer that closes at once.
 */
static inline int uskb_unix_path_claim(const char *path, int type)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int fd, err;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	if (lstat(path, &st))
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -ENOTSOCK;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	err = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ? errno : 0;
	close(fd);
	/* refused: nobody listens (ENOENT: it went meanwhile) */
	if (err == ECONNREFUSED || err == ENOENT)
		return unlink(path) && errno != ENOENT ? -errno : 0;
	/* accepted, or a listener whose queue is full, or one of another type: in use */
	return -EADDRINUSE;
}

#endif
