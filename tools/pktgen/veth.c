/* SPDX-License-Identifier: MIT */
/*
 * --veth: a private veth pair for the run. scripts/netns-veth.sh (installed
 * as DATADIR/uskb/netns-veth.sh) makes and removes it, the one definition
 * of the test network; this process and its generator threads then live on
 * its first end.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

static char prefix[16], veth_ns[2][32], veth_if[2][32];
static const char *script;
static long long peer_rx0 = -1;

/*
 * The script, found from where this binary is (never from a path fixed at
 * build time: a root --veth must not run a file of a build tree, maybe
 * under /tmp). Installed: DATADIR/uskb beside BINDIR (USKB_DATA_FROM_BIN,
 * "../share/uskb"). In the build tree, BUILD[/VARIANT]/tools/uskb-pktgen:
 * the sources' scripts/ above BUILD, and only there.
 */
static const char *find_script(void)
{
	static char path[PATH_MAX + 64];
	char exe[PATH_MAX], *dir, *b;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0)
		return NULL;
	exe[n] = 0;
	dir = dirname(exe);
	snprintf(path, sizeof(path), "%s/%s/netns-veth.sh", dir, USKB_DATA_FROM_BIN);
	if (access(path, R_OK) == 0)
		return path;
	/* .../build/tools or .../build/VARIANT/tools */
	if (strcmp(basename(dir), "tools"))
		return NULL;
	*strrchr(dir, '/') = 0;
	b = strrchr(dir, '/');
	if (b && strcmp(b + 1, "build")) {
		*b = 0;
		b = strrchr(dir, '/');
	}
	if (!b || strcmp(b + 1, "build"))
		return NULL;
	*b = 0;
	snprintf(path, sizeof(path), "%s/scripts/netns-veth.sh", dir);
	return access(path, R_OK) == 0 ? path : NULL;
}

/* the script with @cmd for @pfx, quietly, in a process group of its own: its exit status, or -1 */
/* sh netns-veth.sh CMD -p PFX [OPT] */
static int run_script_cmd(const char *cmd, const char *pfx, const char *opt)
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
		execlp("sh", "sh", script, cmd, "-p", pfx, opt, (char *)NULL);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* the pair is gone when neither namespace is listed any more */
static bool pair_gone(const char *pfx)
{
	char path[64];

	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "/run/netns/%s-%c", pfx, 'a' + i);
		if (access(path, F_OK) == 0)
			return false;
	}
	return true;
}

/* true when the pair is gone; otherwise say how to remove it */
static bool check_gone(void)
{
	if (pair_gone(prefix))
		return true;
	fprintf(stderr, "uskb-pktgen: --veth: the pair %s-a/%s-b was not removed: run '%s down -p %s'\n",
		prefix, prefix, script, prefix);
	return false;
}

/*
 * The guardian: a child, in a process group of its own and deaf to Ctrl-C,
 * that waits for its end of a socket pair to close and then removes the
 * pair of interfaces. The socket closes when this process exits for any
 * reason, a second Ctrl-C or kill -9 included, so the pair never outlives
 * the run; an orderly end sends a byte first, so the guardian stays quiet.
 */
static pid_t guardian = -1;
static int guardian_fd = -1;

static void guardian_start(void)
{
	sigset_t all, old;
	int p[2];

	/* a socket pair, not a pipe: the word to the guardian is sent without SIGPIPE */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p))
		return;
	/* no signal between fork and the child's SIG_IGN: block them across the fork */
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	guardian = fork();
	if (guardian == 0) {
		int null = open("/dev/null", O_WRONLY);
		ssize_t n;
		char c;

		close(p[1]);
		if (null >= 0) /* stdout may be a pipe its reader waits on: not ours to hold */
			dup2(null, 1);
		setpgid(0, 0);
		signal(SIGINT, SIG_IGN);
		signal(SIGTERM, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
		sigprocmask(SIG_SETMASK, &old, NULL);
		while ((n = read(p[0], &c, 1)) < 0 && errno == EINTR)
			;
		run_script_cmd("down", prefix, NULL);
		if (n == 1) /* an orderly end: the tool says what became of the pair */
			_exit(pair_gone(prefix) ? 0 : 1);
		/* killed: nobody else will say it */
		if (check_gone())
			fprintf(stderr, "uskb-pktgen: --veth: the run was killed; the pair %s-a/%s-b "
					"is removed\n", prefix, prefix);
		_exit(pair_gone(prefix) ? 0 : 1);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(p[0]);
	if (guardian < 0)
		close(p[1]);
	else
		guardian_fd = p[1];
}

/* remove the pair now (the guardian does it) and say whether it is gone */
static void veth_down(void)
{
	int st;

	if (guardian_fd < 0)
		return;
	if (send(guardian_fd, "q", 1, MSG_NOSIGNAL) != 1) /* an orderly end: the guardian stays quiet */
		fprintf(stderr, "uskb-pktgen: --veth: telling the guardian: %s\n", strerror(errno));
	close(guardian_fd);
	guardian_fd = -1;
	while (waitpid(guardian, &st, 0) < 0 && errno == EINTR)
		;
	check_gone();
}

/*
 * Pairs left by runs that cannot clean up any more (a kill -9 before the
 * guardian existed, a crash of the machine): their names carry the pid of a
 * process that no longer exists.
 */
static void remove_stale_pairs(void)
{
	DIR *d = opendir("/run/netns");
	struct dirent *e;
	char pfx[16];

	if (!d)
		return;
	while ((e = readdir(d))) {
		unsigned long pid;
		char end;
		int n = 0;

		/* uvPID-a or uvPID-b: either may be what is left */
		if (sscanf(e->d_name, "uv%lu-%c%n", &pid, &end, &n) != 2 || (end != 'a' && end != 'b') ||
		    e->d_name[n] || pid == 0 || pid > 9999999)
			continue;
		/* a process that is there is not stale, unless it is this one (a pid used again) */
		if ((pid_t)pid != getpid() && (kill((pid_t)pid, 0) == 0 || errno != ESRCH))
			continue;
		snprintf(pfx, sizeof(pfx), "uv%lu", pid);
		if (pair_gone(pfx)) /* its other end was this pair's, removed a moment ago */
			continue;
		if (run_script_cmd("down", pfx, NULL) == 0 && pair_gone(pfx))
			fprintf(stderr, "uskb-pktgen: --veth: removed the pair %s-a/%s-b left by "
					"process %lu, which no longer exists\n", pfx, pfx, pid);
		else
			fprintf(stderr, "uskb-pktgen: --veth: could not remove the stale pair %s-a/%s-b\n",
				pfx, pfx);
	}
	closedir(d);
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
/* @xdp_pass: the peer runs an XDP pass program, without which a veth drops XDP-sent frames */
static void veth_up(bool xdp_pass, const char *want)
{
	char nspath[64];
	int fd;

	if (geteuid() != 0) {
		fprintf(stderr, "uskb-pktgen: --veth needs root (CAP_NET_ADMIN) to create network namespaces\n");
		exit(1);
	}
	script = find_script();
	if (!script) {
		fprintf(stderr, "uskb-pktgen: --veth: no netns-veth.sh in %s beside this binary's "
				"directory (an installed uskb-pktgen), nor in the scripts/ of its build tree\n",
			USKB_DATA_FROM_BIN);
		exit(2);
	}
	if (want)
		snprintf(prefix, sizeof(prefix), "%s", want);
	else
		snprintf(prefix, sizeof(prefix), "uv%d", (int)getpid() % 10000000);
	for (int i = 0; i < 2; i++) {
		snprintf(veth_ns[i], sizeof(veth_ns[i]), "%s-%c", prefix, 'a' + i);
		snprintf(veth_if[i], sizeof(veth_if[i]), "%s%d", prefix, i);
	}
	remove_stale_pairs();
	/* a prefix of the user's: never someone else's namespaces */
	snprintf(nspath, sizeof(nspath), "/run/netns/%s", veth_ns[0]);
	if (want && access(nspath, F_OK) == 0) {
		fprintf(stderr, "uskb-pktgen: --veth=%s: the namespace %s exists already (another run's? "
				"scripts/netns-veth.sh down -p %s removes it)\n", want, veth_ns[0], want);
		exit(2);
	}
	guardian_start();
	if (guardian < 0) {
		fprintf(stderr, "uskb-pktgen: --veth: cannot start the process that removes the pair: %s\n",
			strerror(errno));
		exit(2);
	}
	atexit(veth_down);
	if (run_script_cmd("up", prefix, xdp_pass ? "-g" : NULL)) {
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
	/* what arrives from now on is the run's (netns-veth.sh keeps the ends quiet) */
	peer_rx0 = veth_peer_rx();
}

void veth_use(struct options *o)
{
	static char vdev[64];
	const char *kind = o->dev ? o->dev : "packet", *opts = strchr(kind, ':');

	veth_up(!strncmp(kind, "xdp-live", 8), o->veth_prefix);
	cli.veth = true;
	/* packet[:[:]OPTS] or xdp[:[:]OPTS]: the options follow the interface */
	snprintf(vdev, sizeof(vdev), "%.*s:%s%s", (int)(opts ? opts - kind : (long)strlen(kind)), kind,
		 veth_if[0], !opts ? "" : opts[1] == ':' ? opts + 1 : opts);
	o->dev = vdev;
	if (!o->dst)
		o->dst = o->ip6 ? "fd00::2" : "198.18.0.2";
	if (!strcmp(o->dst_mac, "90:e2:ba:ff:ff:ff"))
		o->dst_mac = "02:00:00:00:00:02";
}

long long veth_peer_received(void)
{
	long long now = peer_rx0 < 0 ? -1 : veth_peer_rx();

	return now < 0 ? -1 : now - peer_rx0;
}

void veth_report(void)
{
	long long rx = veth_peer_received();

	veth_down();
	fprintf(stderr, "uskb-pktgen: %s (in %s) received %lld packets; the pair is %s\n", veth_if[1],
		veth_ns[1], rx, pair_gone(prefix) ? "removed" : "NOT removed");
}
