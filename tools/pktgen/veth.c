/* SPDX-License-Identifier: MIT */
/*
 * --veth: a private veth pair for the run. scripts/netns-veth.sh (installed
 * as DATADIR/uskb/netns-veth.sh) makes and removes it, the one definition
 * of the test network; this process and its generator threads then live on
 * its first end.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

static char prefix[16], veth_ns[2][32], veth_if[2][32];
static const char *script;
static bool made;

/* the script of the sources this tool was built from, else the installed one */
static const char *find_script(void)
{
	static const char *const paths[] = { USKB_NETNS_VETH_SRC, USKB_NETNS_VETH };

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		if (access(paths[i], R_OK) == 0)
			return paths[i];
	return NULL;
}

/* the script with @cmd, quietly; its exit status, or -1 */
static int run_script_cmd(const char *cmd)
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		setpgid(0, 0); /* a Ctrl-C is ours to handle, not the script's: let it finish */
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execlp("sh", "sh", script, cmd, "-p", prefix, (char *)NULL);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void veth_down(void)
{
	if (!made)
		return;
	made = false;
	run_script_cmd("down");
}

/* received packets of @ifname in this thread's network namespace, -1 if unknown */
static long long rx_packets(const char *ifname)
{
	FILE *f = fopen("/proc/self/net/dev", "r");
	char line[512], name[64];
	long long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *c = strchr(line, ':');

		if (c && sscanf(line, " %63[^:]", name) == 1 && !strcmp(name, ifname))
			sscanf(c + 1, "%*s %lld", &v); /* bytes, then packets */
	}
	fclose(f);
	return v;
}

/* packets the peer received: step into its namespace, count, step back */
static long long veth_peer_rx(void)
{
	char path[128];
	long long v = -1;
	int peer, self;

	snprintf(path, sizeof(path), "/run/netns/%s", veth_ns[1]);
	peer = open(path, O_RDONLY);
	self = open("/proc/self/ns/net", O_RDONLY);
	if (peer >= 0 && self >= 0 && setns(peer, CLONE_NEWNET) == 0) {
		v = rx_packets(veth_if[1]);
		setns(self, CLONE_NEWNET);
	}
	if (peer >= 0)
		close(peer);
	if (self >= 0)
		close(self);
	return v;
}

/* PREFIX-a holds PREFIX0, PREFIX-b PREFIX1, as netns-veth.sh names them */
static void veth_up(void)
{
	char nspath[64];
	int fd;

	if (geteuid() != 0) {
		fprintf(stderr, "uskb-pktgen: --veth needs root (CAP_NET_ADMIN) to create network namespaces\n");
		exit(1);
	}
	script = find_script();
	if (!script) {
		fprintf(stderr, "uskb-pktgen: --veth: no netns-veth.sh in %s or %s\n",
			USKB_NETNS_VETH_SRC, USKB_NETNS_VETH);
		exit(2);
	}
	snprintf(prefix, sizeof(prefix), "uv%d", (int)getpid() % 10000000);
	for (int i = 0; i < 2; i++) {
		snprintf(veth_ns[i], sizeof(veth_ns[i]), "%s-%c", prefix, 'a' + i);
		snprintf(veth_if[i], sizeof(veth_if[i]), "%s%d", prefix, i);
	}
	made = true;
	atexit(veth_down);
	if (run_script_cmd("up")) {
		fprintf(stderr, "uskb-pktgen: --veth: %s could not set up the veth pair (iproute2 "
				"installed? network namespaces allowed here?)\n", script);
		exit(2);
	}
	snprintf(nspath, sizeof(nspath), "/run/netns/%s", veth_ns[0]);
	fd = open(nspath, O_RDONLY);
	if (fd < 0 || setns(fd, CLONE_NEWNET)) {
		fprintf(stderr, "uskb-pktgen: --veth: cannot enter %s: %s\n", veth_ns[0], strerror(errno));
		exit(2);
	}
	close(fd);
}

void veth_use(struct options *o)
{
	static char vdev[64];
	const char *kind = o->dev ? o->dev : "packet", *opts = strchr(kind, ':');

	veth_up();
	/* packet[:[:]OPTS] or xdp[:[:]OPTS]: the options follow the interface */
	snprintf(vdev, sizeof(vdev), "%.*s:%s%s", (int)(opts ? opts - kind : (long)strlen(kind)), kind,
		 veth_if[0], !opts ? "" : opts[1] == ':' ? opts + 1 : opts);
	o->dev = vdev;
	if (!o->dst)
		o->dst = o->ip6 ? "fd00::2" : "198.18.0.2";
	if (!strcmp(o->dst_mac, "90:e2:ba:ff:ff:ff"))
		o->dst_mac = "02:00:00:00:00:02";
}

void veth_report(void)
{
	fprintf(stderr, "uskb-pktgen: %s (in %s) received %lld packets; the pair is removed\n",
		veth_if[1], veth_ns[1], veth_peer_rx());
}
