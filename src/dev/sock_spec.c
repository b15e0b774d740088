/* SPDX-License-Identifier: MIT */
/*
 * The socket devices' specs: TYPE:ADDRESS[,OPTION...] (docs/devices.md,
 * uskb_dev_open(3)), parsed into struct sk_opts with a message for every
 * mistake.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "dev/sock.h"

/* default bound on bytes in flight */
#define INFLIGHT_DEFAULT (8u << 20)
/*
 * Default copy break for zc and uring: below it the pinning and the
 * notification cost more than the copy they save: zc and copy tie at 7000
 * bytes and zc wins by a third at 8000 (bench/sock, docs/benchmarks.md).
 */
#define COPYBREAK_DEFAULT 7168u

static const char *const kind_name[] = { "udp", "tcp", "unix" };

static int parse_size(const char *v, uint64_t *out)
{
	char *end;
	unsigned long long n;

	errno = 0;
	n = strtoull(v, &end, 10);
	if (errno || end == v)
		return -1;
	if (*end == 'k' || *end == 'K')
		n <<= 10, end++;
	else if (*end == 'm' || *end == 'M')
		n <<= 20, end++;
	if (*end)
		return -1;
	*out = n;
	return 0;
}

/* HOST:PORT, [V6]:PORT; 0 or -errno with the reason said */
static int parse_inet(const struct sk_opts *o, const char *what, const char *text,
		      struct sockaddr_storage *ss, socklen_t *len)
{
	char host[128];
	const char *port;
	struct addrinfo hints = { 0 }, *ai;
	int err;

	if (text[0] == '[') {
		const char *close = strchr(text, ']');

		if (!close || close[1] != ':')
			return __uskb_dev_fail(EINVAL, "%s: %s \"%s\": an IPv6 address is written "
					       "[ADDR]:PORT", o->text, what, text);
		if ((size_t)(close - text - 1) >= sizeof(host))
			return __uskb_dev_fail(EINVAL, "%s: %s is too long", o->text, what);
		memcpy(host, text + 1, (size_t)(close - text - 1));
		host[close - text - 1] = 0;
		port = close + 2;
	} else {
		const char *colon = strrchr(text, ':');

		if (!colon)
			return __uskb_dev_fail(EINVAL, "%s: %s \"%s\" has no port: write HOST:PORT",
					       o->text, what, text);
		if (strchr(text, ':') != colon)
			return __uskb_dev_fail(EINVAL, "%s: %s \"%s\": put an IPv6 address in "
					       "brackets, as in [fd00::2]:9000", o->text, what, text);
		if ((size_t)(colon - text) >= sizeof(host))
			return __uskb_dev_fail(EINVAL, "%s: %s is too long", o->text, what);
		memcpy(host, text, (size_t)(colon - text));
		host[colon - text] = 0;
		port = colon + 1;
	}
	if (!*host || !*port || strspn(port, "0123456789") != strlen(port) || atol(port) > 65535)
		return __uskb_dev_fail(EINVAL, "%s: %s \"%s\": give a host and a port (0-65535)",
				       o->text, what, text);
	hints.ai_socktype = o->kind == SK_UDP ? SOCK_DGRAM : SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	err = getaddrinfo(host, port, &hints, &ai);
	if (err)
		return __uskb_dev_fail(err == EAI_SYSTEM ? errno : ENOENT, "%s: %s \"%s\": %s",
				       o->text, what, host, gai_strerror(err));
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*len = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

/* PATH, or @NAME for the abstract namespace */
static int parse_unix(const struct sk_opts *o, const char *text, struct sockaddr_storage *ss,
		      socklen_t *len)
{
	struct sockaddr_un *un = (struct sockaddr_un *)ss;
	size_t n = strlen(text);

	if (!n)
		return __uskb_dev_fail(EINVAL, "%s: give a socket path, as in unix:/run/x.sock",
				       o->text);
	if (n >= sizeof(un->sun_path))
		return __uskb_dev_fail(ENAMETOOLONG, "%s: the path is longer than %zu bytes",
				       o->text, sizeof(un->sun_path) - 1);
	memset(un, 0, sizeof(*un));
	un->sun_family = AF_UNIX;
	memcpy(un->sun_path, text, n);
	if (text[0] == '@')
		un->sun_path[0] = 0;
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (text[0] != '@'));
	return 0;
}

int __uskb_sk_parse_spec(struct sk_opts *o, enum sk_kind kind, const char *arg)
{
	char buf[256], *opt, *save = NULL, *addr;
	int err;

	memset(o, 0, sizeof(*o));
	o->kind = kind;
	o->copybreak = COPYBREAK_DEFAULT;
	o->inflight = INFLIGHT_DEFAULT;
	snprintf(o->text, sizeof(o->text), "%s:%s", kind_name[kind], arg ? arg : "");
	if (!arg || !*arg)
		return __uskb_dev_fail(EINVAL, "%s: give an address, as in %s", o->text,
				       kind == SK_UNIX ? "unix:/run/x.sock" :
				       kind == SK_UDP ? "udp:198.18.0.2:9000" : "tcp:198.18.0.2:9000");
	if (strlen(arg) >= sizeof(buf))
		return __uskb_dev_fail(EINVAL, "%s: the spec is too long", kind_name[kind]);
	strcpy(buf, arg);
	addr = strtok_r(buf, ",", &save);
	if (!addr)
		return __uskb_dev_fail(EINVAL, "%s: give an address first", o->text);
	while ((opt = strtok_r(NULL, ",", &save))) {
		if (!strcmp(opt, "copy")) {
			o->mode = SK_COPY;
		} else if (!strcmp(opt, "zc")) {
			o->mode = SK_ZC;
		} else if (!strcmp(opt, "uring")) {
			o->mode = SK_URING;
		} else if (!strcmp(opt, "gso")) {
			o->gso = true;
		} else if (!strcmp(opt, "nofixed")) {
			o->nofixed = true;
		} else if (!strcmp(opt, "listen")) {
			o->listen = true;
		} else if (!strncmp(opt, "local=", 6)) {
			if (kind != SK_UDP)
				return __uskb_dev_fail(EINVAL, "%s: local= is for udp: (a stream "
						       "connects, or listens on its address)", o->text);
			err = parse_inet(o, "local", opt + 6, &o->local, &o->llen);
			if (err)
				return err;
			o->has_local = true;
		} else if (!strncmp(opt, "copybreak=", 10)) {
			uint64_t v;

			if (parse_size(opt + 10, &v) || v > SK_STREAM_FRAME_MAX)
				return __uskb_dev_fail(EINVAL, "%s: copybreak=%s: give bytes, 0 to %u",
						       o->text, opt + 10, SK_STREAM_FRAME_MAX);
			o->copybreak = (unsigned int)v;
		} else if (!strncmp(opt, "inflight=", 9)) {
			if (parse_size(opt + 9, &o->inflight) || o->inflight < 65536 ||
			    o->inflight > (1ull << 32))
				return __uskb_dev_fail(EINVAL, "%s: inflight=%s: give bytes, 64k to 4096m",
						       o->text, opt + 9);
		} else {
			return __uskb_dev_fail(EINVAL, "%s: unknown option \"%s\" (copy, zc, uring, "
					       "nofixed, gso, listen, local=HOST:PORT, "
					       "copybreak=BYTES, inflight=BYTES)", o->text, opt);
		}
	}
	if (o->nofixed && o->mode != SK_URING)
		return __uskb_dev_fail(EINVAL, "%s: nofixed is for uring (registered buffers)",
				       o->text);
	if (o->gso && kind != SK_UDP)
		return __uskb_dev_fail(EINVAL, "%s: gso is for udp: (UDP_SEGMENT)", o->text);
	if (o->has_local && o->listen)
		return __uskb_dev_fail(EINVAL, "%s: listen receives on the address itself; drop "
				       "local=", o->text);
	if (kind == SK_UNIX && o->mode != SK_COPY)
		return __uskb_dev_fail(EOPNOTSUPP, "%s: a unix socket cannot send without copying "
				       "(the kernel refuses SO_ZEROCOPY and send_zc on AF_UNIX): "
				       "use copy, or tcp: / udp: for zero copy", o->text);
	if (kind == SK_UNIX)
		return parse_unix(o, addr, &o->addr, &o->alen);
	return parse_inet(o, "address", addr, &o->addr, &o->alen);
}
