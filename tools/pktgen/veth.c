/* SPDX-License-Identifier: MIT */
/*
 * --veth: a private veth pair for the run, made with ip and removed after
 * it; this process and its generator threads live on its first end.
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

static char veth_ns[2][32], veth_if[2][16];
static bool veth_made;

/* run a program (ip) quietly; its exit status, or -1 */
static int run(char *const argv[])
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		setpgid(0, 0); /* a Ctrl-C is ours to handle, not ip's: let it finish */
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

#define IP(...) run((char *[]){ "ip", __VA_ARGS__, NULL })

static void veth_down(void)
{
	if (!veth_made)
		return;
	veth_made = false;
	IP("netns", "del", veth_ns[0]);
	IP("netns", "del", veth_ns[1]);
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

static void veth_up(void)
{
	char nspath[64];
	int fd, pid = (int)getpid();

	if (geteuid() != 0) {
		fprintf(stderr, "uskb-pktgen: --veth needs root (CAP_NET_ADMIN) to create network namespaces\n");
		exit(1);
	}
	for (int i = 0; i < 2; i++) {
		snprintf(veth_ns[i], sizeof(veth_ns[i]), "uskb-%d-%c", pid, 'a' + i);
		snprintf(veth_if[i], sizeof(veth_if[i]), "uv%d%c", pid % 10000000, 'a' + i);
	}
	veth_made = true;
	atexit(veth_down);
	if (IP("netns", "add", veth_ns[0]) || IP("netns", "add", veth_ns[1]) ||
	    IP("-n", veth_ns[0], "link", "add", veth_if[0], "address", "02:00:00:00:00:01", "type", "veth",
	       "peer", "name", veth_if[1], "address", "02:00:00:00:00:02", "netns", veth_ns[1]) ||
	    IP("-n", veth_ns[0], "addr", "add", "198.18.0.1/24", "dev", veth_if[0]) ||
	    IP("-n", veth_ns[1], "addr", "add", "198.18.0.2/24", "dev", veth_if[1]) ||
	    IP("-n", veth_ns[0], "addr", "add", "fd00::1/64", "dev", veth_if[0], "nodad") ||
	    IP("-n", veth_ns[1], "addr", "add", "fd00::2/64", "dev", veth_if[1], "nodad") ||
	    IP("-n", veth_ns[0], "link", "set", veth_if[0], "up") ||
	    IP("-n", veth_ns[1], "link", "set", veth_if[1], "up") ||
	    IP("-n", veth_ns[0], "neigh", "replace", "198.18.0.2", "lladdr", "02:00:00:00:00:02", "dev",
	       veth_if[0], "nud", "permanent") ||
	    IP("-n", veth_ns[0], "neigh", "replace", "fd00::2", "lladdr", "02:00:00:00:00:02", "dev",
	       veth_if[0], "nud", "permanent")) {
		fprintf(stderr, "uskb-pktgen: --veth: could not set up the veth pair with ip (iproute2 installed? "
				"network namespaces allowed here?)\n");
		exit(2);
	}
	/* this process (and the generator threads it starts) lives on the first end */
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
