/* SPDX-License-Identifier: MIT */
/*
 * uskb-dp against a handler that this test plays, over --handler-socket,
 * with udp: ports on loopback (no root needed): the datapath announces its
 * ports (OVS_VPORT_CMD_NEW), sends a MISS upcall whose packet is the frame
 * sent in (checked with libmnl), refuses and counts every malformed reply —
 * lengths that lie, truncated and unknown attributes, a duplicate, a key
 * not in its encoding, a port that does not exist, a packet shorter than
 * Ethernet, a packet claiming bytes past the message, a thread that does
 * not exist, garbage — and applies the one
 * good FLOW_CMD_NEW and EXECUTE: the frame comes out of port 2 and the
 * flow's next frames hit. An empty message is a bad reply, not the
 * handler's end. A second datapath on the live socket is refused (exit 2);
 * the socket file goes with the datapath. Without a handler: a dead run's
 * socket is replaced, the wait ends with -d, and a file that is no socket
 * is left alone; --rules of a directory is refused. It ends with no leak
 * (exit 0). A handler that dies mid-run costs the upcalls it held (counted
 * as lost, exit 1), and the next one takes over.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <uskb/uskb.h>
#include "t.h"

#ifdef USKB_HAVE_MNL
#include <libmnl/libmnl.h>

#define FAM_PACKET 0x1e
#define FAM_FLOW 0x1f
#define FAM_VPORT 0x20

static uint8_t frame[200];
static const unsigned int FLEN = 120;

static int udp_sock(uint16_t *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	getsockname(fd, (struct sockaddr *)&sa, &len);
	*port = ntohs(sa.sin_port);
	return fd;
}

/* a free UDP port on loopback (bound and closed: the datapath takes it next) */
static uint16_t free_port(void)
{
	uint16_t port;

	close(udp_sock(&port));
	return port;
}

static void send_to(int fd, uint16_t port, const void *buf, size_t len)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

	sendto(fd, buf, len, 0, (struct sockaddr *)&sa, sizeof(sa));
}

static ssize_t recv_wait(int fd, void *buf, size_t len, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (poll(&p, 1, ms) <= 0)
		return -1;
	return recv(fd, buf, len, 0);
}

/*
 * run CMD (a program and its arguments, for the shell) with its stderr into
 * @err, for 20 s at most; its exit status (124: it ran out of time; -1: a
 * signal); @secs: how long it took, when given
 */
static int run(const char *cmd, char *err, size_t len, double *secs)
{
	char line[PATH_MAX * 3 + 64], path[] = "/tmp/uskb-dph-err.XXXXXX";
	struct timespec a, b;
	int fd = mkstemp(path), st;
	ssize_t n;

	snprintf(line, sizeof(line), "timeout -k 5 20 %s 2>%s >/dev/null", cmd, path);
	clock_gettime(CLOCK_MONOTONIC, &a);
	st = system(line);
	clock_gettime(CLOCK_MONOTONIC, &b);
	if (secs)
		*secs = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	n = fd >= 0 ? read(fd, err, len - 1) : -1;
	err[n > 0 ? n : 0] = 0;
	if (fd >= 0)
		close(fd);
	unlink(path);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int handler_connect(const char *sock)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	strcpy(sa.sun_path, sock);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* the handler's end of the datapath's socket, once the datapath listens (5 s at most); -1 */
static int handler_wait(const char *sock)
{
	int fd = -1;

	for (int i = 0; i < 100 && fd < 0; i++)
		if ((fd = handler_connect(sock)) < 0)
			usleep(50000);
	return fd;
}

/* ---- messages ---- */

static struct uskb *msg_start(uint16_t family, uint8_t cmd, uint32_t pid)
{
	struct uskb *m = uskb_alloc(4096);
	struct ovs_header *oh = uskb_genlmsg_put(m, pid, 0, family, sizeof(*oh), NLM_F_REQUEST, cmd, 1);

	oh->dp_ifindex = 0;
	return m;
}

static void msg_send(int fd, struct uskb *m)
{
	uskb_nlmsg_end(m, (struct nlmsghdr *)m->data);
	send(fd, m->data, m->len, MSG_NOSIGNAL);
	uskb_free(m);
}

static void put_actions(struct uskb *m, int type, uint32_t port)
{
	struct nlattr *n = uskb_nla_nest_start_noflag(m, type);

	uskb_nla_put_u32(m, OVS_ACTION_ATTR_OUTPUT, port);
	uskb_nla_nest_end(m, n);
}

static struct uskb *flow_new(const struct nlattr *key, uint32_t port, uint32_t pid)
{
	struct uskb *m = msg_start(FAM_FLOW, OVS_FLOW_CMD_NEW, pid);

	uskb_nla_put(m, OVS_FLOW_ATTR_KEY, mnl_attr_get_payload_len(key), mnl_attr_get_payload(key));
	put_actions(m, OVS_FLOW_ATTR_ACTIONS, port);
	return m;
}

static struct uskb *execute(const struct nlattr *key, const void *pkt, int plen, uint32_t pid)
{
	struct uskb *m = msg_start(FAM_PACKET, OVS_PACKET_CMD_EXECUTE, pid);

	uskb_nla_put(m, OVS_PACKET_ATTR_KEY, mnl_attr_get_payload_len(key), mnl_attr_get_payload(key));
	put_actions(m, OVS_PACKET_ATTR_ACTIONS, 2);
	uskb_nla_put(m, OVS_PACKET_ATTR_PACKET, plen, pkt);
	return m;
}

struct upcall {
	const struct nlattr *key, *packet, *hash;
	int n;
};

static int upcall_attr(const struct nlattr *a, void *data)
{
	struct upcall *u = data;

	if (mnl_attr_validate(a, MNL_TYPE_UNSPEC) < 0)
		return MNL_CB_ERROR;
	u->n++;
	switch (mnl_attr_get_type(a)) {
	case OVS_PACKET_ATTR_KEY: u->key = a; break;
	case OVS_PACKET_ATTR_PACKET: u->packet = a; break;
	case OVS_PACKET_ATTR_HASH: u->hash = a; break;
	}
	return MNL_CB_OK;
}

static void test_handler(const char *dp_path)
{
	char dir[] = "/tmp/uskb-dph.XXXXXX", sock[PATH_MAX], out[PATH_MAX], spec1[64], spec2[64];
	static uint8_t buf[1 << 17], upbuf[1 << 17];
	uint16_t p1 = free_port(), p2 = free_port(), myport;
	int tx = udp_sock(&myport), rx2 = -1, hs = -1, status, nbad = 0;
	const struct nlmsghdr *up;
	struct upcall u = { 0 };
	ssize_t n, uplen;
	pid_t pid;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(sock, sizeof(sock), "%s/h.sock", dir);
	snprintf(out, sizeof(out), "%s/dp.json", dir);
	snprintf(spec1, sizeof(spec1), "udp:127.0.0.1:%u,listen", p1);
	snprintf(spec2, sizeof(spec2), "udp:127.0.0.1:%u,listen", p2);
	pid = fork();
	if (!pid) {
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		dup2(fd, 1);
		execl(dp_path, "uskb-dp", "-p", spec1, "-p", spec2, "--handler-socket", sock, "--json",
		      "--quiet", "--duration", "20", "-v", (char *)NULL);
		_exit(127);
	}
	hs = handler_wait(sock);
	CHECK(hs >= 0);
	if (hs < 0)
		goto out;

	/* the ports, announced */
	for (int i = 1; i <= 2; i++) {
		n = recv_wait(hs, buf, sizeof(buf), 5000);
		CHECK(n > 0 && ((struct nlmsghdr *)buf)->nlmsg_type == FAM_VPORT);
	}

	/* a frame into port 1: one MISS upcall carrying it */
	memcpy(frame, (uint8_t[]){ 2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0, 0x45, 0, 0, 106, 0, 0, 0,
				   0, 64, 17, 0, 0, 198, 18, 0, 1, 198, 18, 0, 2, 0x30, 0x39, 0, 9, 0, 86 },
	       40);
	t_fill(frame + 42, FLEN - 42, 9);
	/* port 2 replies to its last sender: make this test its peer */
	rx2 = udp_sock(&myport);
	send_to(rx2, p2, frame, 10); /* a runt: counted, not a key */
	send_to(tx, p1, frame, FLEN);
	uplen = recv_wait(hs, upbuf, sizeof(upbuf), 5000);
	up = (const struct nlmsghdr *)upbuf;
	CHECK(uplen > 0 && mnl_nlmsg_ok(up, (int)uplen));
	if (uplen <= 0)
		goto stop;
	CHECK_EQ(up->nlmsg_type, FAM_PACKET);
	CHECK_EQ(((const struct genlmsghdr *)mnl_nlmsg_get_payload(up))->cmd, OVS_PACKET_CMD_MISS);
	CHECK_EQ(mnl_attr_parse(up, GENL_HDRLEN + sizeof(struct ovs_header), upcall_attr, &u), MNL_CB_OK);
	CHECK(u.key && u.packet && u.hash && u.n == 3);
	if (!u.key || !u.packet)
		goto stop;
	CHECK_EQ(mnl_attr_get_payload_len(u.packet), FLEN);
	CHECK(!memcmp(mnl_attr_get_payload(u.packet), frame, FLEN));

	/* malformed replies: each refused and counted */
	{
		struct uskb *m;
		struct nlmsghdr *h;
		uint8_t junk[64];

		/* nlmsg_len longer than the message */
		m = flow_new(u.key, 2, up->nlmsg_pid);
		uskb_nlmsg_end(m, (struct nlmsghdr *)m->data);
		((struct nlmsghdr *)m->data)->nlmsg_len += 8;
		send(hs, m->data, m->len, MSG_NOSIGNAL);
		uskb_free(m);
		nbad++;
		/* nlmsg_len shorter than the headers */
		m = flow_new(u.key, 2, up->nlmsg_pid);
		uskb_nlmsg_end(m, (struct nlmsghdr *)m->data);
		((struct nlmsghdr *)m->data)->nlmsg_len = 12;
		send(hs, m->data, m->len, MSG_NOSIGNAL);
		uskb_free(m);
		nbad++;
		/* an attribute whose nla_len runs past the end */
		m = flow_new(u.key, 2, up->nlmsg_pid);
		((struct nlattr *)(m->data + m->len - 12))->nla_len = 200;
		msg_send(hs, m);
		nbad++;
		/* an unknown attribute */
		m = flow_new(u.key, 2, up->nlmsg_pid);
		uskb_nla_put_u32(m, 77, 1);
		msg_send(hs, m);
		nbad++;
		/* the key twice */
		m = flow_new(u.key, 2, up->nlmsg_pid);
		uskb_nla_put(m, OVS_FLOW_ATTR_KEY, mnl_attr_get_payload_len(u.key), mnl_attr_get_payload(u.key));
		msg_send(hs, m);
		nbad++;
		/* a key not in the datapath's encoding: its first attribute left out */
		m = msg_start(FAM_FLOW, OVS_FLOW_CMD_NEW, up->nlmsg_pid);
		uskb_nla_put(m, OVS_FLOW_ATTR_KEY, mnl_attr_get_payload_len(u.key) - 8,
			     (const uint8_t *)mnl_attr_get_payload(u.key) + 8);
		put_actions(m, OVS_FLOW_ATTR_ACTIONS, 2);
		msg_send(hs, m);
		nbad++;
		/* an output to a port that does not exist */
		msg_send(hs, flow_new(u.key, 9, up->nlmsg_pid));
		nbad++;
		/* a packet shorter than Ethernet */
		msg_send(hs, execute(u.key, frame, 10, up->nlmsg_pid));
		nbad++;
		/* an unaligned message whose packet claims two bytes past its end
		 * (within the length rounded up, which is all libmnl checks) */
		m = execute(u.key, frame, 61, up->nlmsg_pid);
		uskb_nlmsg_end(m, (struct nlmsghdr *)m->data);
		((struct nlmsghdr *)m->data)->nlmsg_len = m->len - 3;
		((struct nlattr *)(m->data + m->len - 68))->nla_len = 4 + 61 + 2;
		send(hs, m->data, m->len - 3, MSG_NOSIGNAL);
		uskb_free(m);
		nbad++;
		/* a thread that does not exist */
		msg_send(hs, flow_new(u.key, 2, 99));
		nbad++;
		/* a command the datapath does not take */
		m = msg_start(FAM_FLOW, OVS_FLOW_CMD_DEL, up->nlmsg_pid);
		uskb_nla_put(m, OVS_FLOW_ATTR_KEY, mnl_attr_get_payload_len(u.key), mnl_attr_get_payload(u.key));
		msg_send(hs, m);
		nbad++;
		/* an empty message: a bad reply, not the handler's end (the good answer below still counts) */
		send(hs, junk, 0, MSG_NOSIGNAL);
		nbad++;
		/* garbage */
		t_fill(junk, sizeof(junk), 5);
		send(hs, junk, sizeof(junk), MSG_NOSIGNAL);
		nbad++;
		h = (struct nlmsghdr *)junk;
		h->nlmsg_len = sizeof(junk);
		h->nlmsg_type = FAM_PACKET;
		h->nlmsg_pid = up->nlmsg_pid;
		send(hs, junk, sizeof(junk), MSG_NOSIGNAL);
		nbad++;
	}

	/* the good answer: the flow, and the packet out of port 2 */
	msg_send(hs, flow_new(u.key, 2, up->nlmsg_pid));
	msg_send(hs, execute(u.key, mnl_attr_get_payload(u.packet),
			     mnl_attr_get_payload_len(u.packet), up->nlmsg_pid));
	n = recv_wait(rx2, buf, sizeof(buf), 5000);
	CHECK_EQ(n, FLEN);
	CHECK(n == FLEN && !memcmp(buf, frame, FLEN));
	/* the next frames of the flow hit: out of port 2, no upcall */
	for (int i = 0; i < 3; i++) {
		send_to(tx, p1, frame, FLEN);
		n = recv_wait(rx2, buf, sizeof(buf), 5000);
		CHECK_EQ(n, FLEN);
	}
	CHECK_EQ(recv_wait(hs, buf, sizeof(buf), 300), -1);
	/* a second datapath on the live socket: refused, the first one untouched */
	{
		char cmd[PATH_MAX * 3], err[512];
		int rc;

		snprintf(cmd, sizeof(cmd), "%s -p udp:127.0.0.1:%u,listen --handler-socket %s --quiet -d 1",
			 dp_path, free_port(), sock);
		rc = run(cmd, err, sizeof(err), NULL);
		CHECK_EQ(rc, 2);
		CHECK(strstr(err, "a live process serves this socket") != NULL);
		CHECK(access(sock, F_OK) == 0);
		send_to(tx, p1, frame, FLEN);
		CHECK_EQ(recv_wait(rx2, buf, sizeof(buf), 5000), FLEN);
	}
stop:
	kill(pid, SIGINT);
out:
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0); /* 1: a leak, or a failure */
	{
		FILE *f = fopen(out, "r");
		char line[4096] = "";
		unsigned long long bad = 0, hit = 0, missed = 0, executed = 0, flows = 0, frames = 0;

		while (f && fgets(line, sizeof(line), f))
			if (strstr(line, "\"final\": true"))
				break;
		if (f)
			fclose(f);
		sscanf(strstr(line, "\"hit\"") ?: "", "\"hit\": %llu, \"missed\": %llu", &hit, &missed);
		sscanf(strstr(line, "\"executed\"") ?: "", "\"executed\": %llu", &executed);
		sscanf(strstr(line, "\"flows\"") ?: "", "\"flows\": %llu", &flows);
		sscanf(strstr(line, "\"bad_replies\"") ?: "", "\"bad_replies\": %llu, \"bad_frames\": %llu",
		       &bad, &frames);
		CHECK_EQ(bad, nbad);
		CHECK_EQ(hit, 4); /* 3, and one after the second datapath was refused */
		CHECK_EQ(missed, 1);
		CHECK_EQ(executed, 1);
		CHECK_EQ(flows, 1);
		CHECK_EQ(frames, 1); /* the runt */
		if (t_failures)
			fprintf(stderr, "dp-handler: uskb-dp said: %s", line);
	}
	/* the socket file went with the datapath */
	CHECK(access(sock, F_OK) != 0);
	close(tx);
	if (rx2 >= 0)
		close(rx2);
	if (hs >= 0)
		close(hs);
	unlink(out);
	unlink(sock);
	rmdir(dir);
}

/* wait up to @ms for @needle in the file at @path; true when it came */
static bool file_has(const char *path, const char *needle, int ms)
{
	static char text[1 << 16];

	for (int waited = 0;; waited += 20) {
		FILE *f = fopen(path, "r");
		size_t n = f ? fread(text, 1, sizeof(text) - 1, f) : 0;

		if (f)
			fclose(f);
		text[n] = 0;
		if (strstr(text, needle))
			return true;
		if (waited >= ms)
			return false;
		usleep(20000);
	}
}

/* the value of "@key" in the last line of @path that has it */
static unsigned long long json_last(const char *path, const char *key)
{
	char line[4096], pat[64];
	unsigned long long v = 0;
	FILE *f = fopen(path, "r");

	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	while (f && fgets(line, sizeof(line), f)) {
		const char *at = strstr(line, pat);

		if (at)
			v = strtoull(at + strlen(pat), NULL, 10);
	}
	if (f)
		fclose(f);
	return v;
}

/* this test's frame from UDP source port @sport (a flow of its own) */
static void send_flow(int tx, uint16_t port, uint16_t sport)
{
	frame[34] = (uint8_t)(sport >> 8);
	frame[35] = (uint8_t)sport;
	send_to(tx, port, frame, FLEN);
}

/*
 * The handler dies with upcalls in flight: they count as lost (with a
 * line), misses while there is none are lost, a second handler while one
 * serves is refused, and the next handler is told the ports and takes
 * over. missed = executed + lost at the end; the exit is 1.
 */
static void test_handler_dies(const char *dp_path)
{
	char dir[] = "/tmp/uskb-dph.XXXXXX", sock[PATH_MAX], out[PATH_MAX], errf[PATH_MAX], spec1[64],
		spec2[64];
	static uint8_t buf[1 << 17];
	uint16_t p1 = free_port(), p2 = free_port(), myport;
	int tx = udp_sock(&myport), rx2 = udp_sock(&myport), hs = -1, status, f0 = t_failures;
	struct upcall u[5];
	uint32_t pid_of[5];
	ssize_t n;
	pid_t pid;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(sock, sizeof(sock), "%s/h.sock", dir);
	snprintf(out, sizeof(out), "%s/dp.json", dir);
	snprintf(errf, sizeof(errf), "%s/dp.err", dir);
	snprintf(spec1, sizeof(spec1), "udp:127.0.0.1:%u,listen", p1);
	snprintf(spec2, sizeof(spec2), "udp:127.0.0.1:%u,listen", p2);
	pid = fork();
	if (!pid) {
		int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644),
		    e = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		dup2(o, 1);
		dup2(e, 2);
		execl(dp_path, "uskb-dp", "-p", spec1, "-p", spec2, "--handler-socket", sock, "--json",
		      "--stats", "0.05", "--quiet", "--duration", "30", (char *)NULL);
		_exit(127);
	}
	hs = handler_wait(sock);
	CHECK(hs >= 0);
	if (hs < 0)
		goto stop;
	for (int i = 1; i <= 2; i++)
		CHECK(recv_wait(hs, buf, sizeof(buf), 5000) > 0);
	/* port 2 sends to its last sender: this test */
	send_to(rx2, p2, frame, 10);
	CHECK(file_has(out, "\"bad_frames\": 1", 5000));

	/* five flows miss; two are answered, three stay in flight */
	memcpy(frame, (uint8_t[]){ 2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0, 0x45, 0, 0, 106, 0, 0, 0,
				   0, 64, 17, 0, 0, 198, 18, 0, 1, 198, 18, 0, 2, 0x30, 0x39, 0, 9, 0, 86 },
	       40);
	t_fill(frame + 42, FLEN - 42, 9);
	for (uint16_t i = 0; i < 5; i++)
		send_flow(tx, p1, (uint16_t)(1000 + i));
	for (int i = 0; i < 5; i++) {
		static uint8_t up[5][1 << 12];
		const struct nlmsghdr *h = (const struct nlmsghdr *)up[i];

		memset(&u[i], 0, sizeof(u[i]));
		n = recv_wait(hs, up[i], sizeof(up[i]), 5000);
		CHECK(n > 0 && mnl_nlmsg_ok(h, (int)n));
		if (n <= 0 || mnl_attr_parse(h, GENL_HDRLEN + sizeof(struct ovs_header), upcall_attr, &u[i]) !=
				      MNL_CB_OK || !u[i].key || !u[i].packet)
			goto stop;
		pid_of[i] = h->nlmsg_pid;
	}
	for (int i = 0; i < 2; i++) {
		msg_send(hs, execute(u[i].key, mnl_attr_get_payload(u[i].packet),
				     mnl_attr_get_payload_len(u[i].packet), pid_of[i]));
		CHECK_EQ(recv_wait(rx2, buf, sizeof(buf), 5000), FLEN);
	}

	/* a second handler while this one serves: refused, it reads the end */
	{
		int second = handler_connect(sock);

		CHECK(second >= 0);
		CHECK_EQ(recv_wait(second, buf, sizeof(buf), 5000), 0);
		if (second >= 0)
			close(second);
	}

	/* the handler dies */
	close(hs);
	hs = -1;
	CHECK(file_has(errf, "the external handler went away; 3 upcalls in flight to it counted as lost",
		       5000));
	/* two misses with no handler: lost */
	send_flow(tx, p1, 2000);
	send_flow(tx, p1, 2001);
	CHECK(file_has(out, "\"missed\": 7, \"lost\": 5", 5000));

	/* the next handler: told the ports, and it serves */
	hs = handler_connect(sock);
	CHECK(hs >= 0);
	for (int i = 1; i <= 2; i++) {
		n = recv_wait(hs, buf, sizeof(buf), 5000);
		CHECK(n > 0 && ((struct nlmsghdr *)buf)->nlmsg_type == FAM_VPORT);
	}
	send_flow(tx, p1, 3000);
	{
		static uint8_t up[1 << 12];
		struct upcall v = { 0 };

		n = recv_wait(hs, up, sizeof(up), 5000);
		CHECK(n > 0);
		if (n > 0 && mnl_attr_parse((struct nlmsghdr *)up, GENL_HDRLEN + sizeof(struct ovs_header),
					    upcall_attr, &v) == MNL_CB_OK && v.key && v.packet) {
			msg_send(hs, execute(v.key, mnl_attr_get_payload(v.packet),
					     mnl_attr_get_payload_len(v.packet),
					     ((struct nlmsghdr *)up)->nlmsg_pid));
			CHECK_EQ(recv_wait(rx2, buf, sizeof(buf), 5000), FLEN);
		}
	}
stop:
	kill(pid, SIGINT);
	waitpid(pid, &status, 0);
	/* 1: a handler died during the run */
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 1);
	CHECK(file_has(errf, "1 external handler died during the run; 3 upcalls in flight to it counted as lost", 0));
	CHECK(file_has(out, "\"final\": true", 0));
	CHECK_EQ(json_last(out, "missed"), 8);
	CHECK_EQ(json_last(out, "executed"), 3);
	CHECK_EQ(json_last(out, "lost"), 5);
	CHECK_EQ(json_last(out, "handler_deaths"), 1);
	CHECK_EQ(json_last(out, "lost_in_flight"), 3);
	CHECK_EQ(json_last(out, "missed"), json_last(out, "executed") + json_last(out, "lost"));
	CHECK(access(sock, F_OK) != 0);
	if (t_failures > f0) {
		char cmd[PATH_MAX * 2 + 32];

		snprintf(cmd, sizeof(cmd), "tail -n 3 %s >&2; cat %s >&2", out, errf);
		if (system(cmd)) {
		}
	}
	close(tx);
	close(rx2);
	if (hs >= 0)
		close(hs);
	unlink(out);
	unlink(errf);
	unlink(sock);
	rmdir(dir);
}

/*
 * Without a handler: a socket file a dead run left is replaced, the wait for
 * the handler ends with the run's -d (with a line, exit 1), and the file
 * goes; a path that is no socket is left alone (exit 2); --rules of a
 * directory is refused (exit 2)
 */
static void test_no_handler(const char *dp_path)
{
	char dir[] = "/tmp/uskb-dph.XXXXXX", sock[PATH_MAX], cmd[PATH_MAX * 3], err[512];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	double secs = 0;
	int fd, rc, f0 = t_failures;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(sock, sizeof(sock), "%s/h.sock", dir);
	/* a stale socket: bound, never listened on, its process gone */
	strcpy(sa.sun_path, sock);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	CHECK_EQ(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
	snprintf(cmd, sizeof(cmd), "%s -p udp:127.0.0.1:%u,listen --handler-socket %s --quiet -d 1", dp_path,
		 free_port(), sock);
	rc = run(cmd, err, sizeof(err), &secs);
	CHECK_EQ(rc, 1);
	CHECK(strstr(err, "no handler came within the run's 1 s") != NULL);
	CHECK(secs > 0.9 && secs < 5);
	CHECK(access(sock, F_OK) != 0);
	if (t_failures > f0)
		fprintf(stderr, "no handler: exit %d after %.1f s: %s\n", rc, secs, err);
	/* a file that is not a socket: left alone */
	fd = open(sock, O_WRONLY | O_CREAT, 0600);
	close(fd);
	rc = run(cmd, err, sizeof(err), NULL);
	CHECK_EQ(rc, 2);
	CHECK(strstr(err, "something other than a socket is there") != NULL);
	CHECK(access(sock, F_OK) == 0);
	unlink(sock);
	/* rules from a directory */
	snprintf(cmd, sizeof(cmd), "%s -p udp:127.0.0.1:%u,listen --rules %s --quiet -d 1", dp_path, free_port(),
		 dir);
	rc = run(cmd, err, sizeof(err), NULL);
	CHECK_EQ(rc, 2);
	CHECK(strstr(err, "Is a directory") != NULL);
	/* the start line counts the handlers */
	snprintf(cmd, sizeof(cmd), "%s -p udp:127.0.0.1:%u,listen -H 3 -d 0.2", dp_path, free_port());
	rc = run(cmd, err, sizeof(err), NULL);
	CHECK_EQ(rc, 0);
	CHECK(strstr(err, "1 datapath thread, 3 handlers, zero-copy upcalls") != NULL);
	rmdir(dir);
}

int main(int argc, char **argv)
{
	char self[PATH_MAX], path[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	(void)argc;
	(void)argv;
	if (n <= 0)
		return 1;
	self[n] = 0;
	snprintf(path, sizeof(path), "%s/../tools/uskb-dp", dirname(self));
	if (access(path, X_OK)) {
		fprintf(stderr, "dp-handler: skipped: no %s\n", path);
		return 77;
	}
	signal(SIGPIPE, SIG_IGN);
	test_handler(path);
	test_handler_dies(path);
	test_no_handler(path);
	return t_end("dp-handler");
}

#else

int main(void)
{
	fprintf(stderr, "dp-handler: skipped: built without libmnl-dev (scripts/deps.sh)\n");
	return 77;
}

#endif
