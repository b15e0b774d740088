/* SPDX-License-Identifier: MIT */
/*
 * refuse WHAT[,WHAT...] ERRNO CMD [ARG...]: run CMD, and everything it
 * starts, as on a kernel that refuses WHAT: a seccomp filter fails those
 * system calls with ERRNO (EPERM, EINVAL, EACCES or EOPNOTSUPP). WHAT:
 *   live-frames  bpf(BPF_PROG_TEST_RUN): a kernel before 5.18 refuses live
 *                frames with EINVAL; one whose policy (a lockdown, a BPF
 *                LSM) refuses the run says EPERM, even to root. (seccomp
 *                cannot read the command's attributes, so test runs without
 *                the live flag fail too; uskb-pktgen makes only live ones.)
 *   io_uring     io_uring_setup(): sysctl kernel.io_uring_disabled=2 says
 *                EPERM;
 *   af_xdp       socket(AF_XDP): a kernel without XDP sockets says
 *                EAFNOSUPPORT (give EPERM for a policy).
 * For the tests that show a refused precondition gives one line and a skip
 * in seconds, on a kernel that has what they need.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/bpf.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef AF_XDP
#define AF_XDP 44
#endif

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#endif

struct rule {
	const char *what;
	unsigned int nr;
	int has_arg0;
	unsigned int arg0;
};

static const struct rule rules[] = {
	{ "live-frames", __NR_bpf, 1, BPF_PROG_TEST_RUN },
	{ "io_uring", __NR_io_uring_setup, 0, 0 },
	{ "af_xdp", __NR_socket, 1, AF_XDP },
};

static const struct {
	const char *name;
	int err;
} errnos[] = { { "EPERM", EPERM },
	       { "EINVAL", EINVAL },
	       { "EACCES", EACCES },
	       { "EOPNOTSUPP", EOPNOTSUPP },
	       { "EAFNOSUPPORT", EAFNOSUPPORT } };

#define NRULES (sizeof(rules) / sizeof(rules[0]))

static int usage(void)
{
	fprintf(stderr, "usage: refuse live-frames|io_uring|af_xdp[,...] "
			"EPERM|EINVAL|EACCES|EOPNOTSUPP|EAFNOSUPPORT CMD [ARG...]\n");
	return 2;
}

int main(int argc, char **argv)
{
	int picked[NRULES] = { 0 }, err = 0;
	char list[256], *tok, *save;

	if (argc < 4 || strlen(argv[1]) >= sizeof(list))
		return usage();
	snprintf(list, sizeof(list), "%s", argv[1]);
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		size_t i;

		for (i = 0; i < NRULES && strcmp(tok, rules[i].what); i++)
			;
		if (i == NRULES) {
			fprintf(stderr, "refuse: %s: not one of live-frames, io_uring, af_xdp\n", tok);
			return 2;
		}
		picked[i] = 1;
	}
	for (size_t i = 0; i < sizeof(errnos) / sizeof(errnos[0]); i++)
		if (!strcmp(argv[2], errnos[i].name))
			err = errnos[i].err;
	if (!err)
		return usage();
#ifdef ARCH
	/* at most 3 + 4 per rule + 1 instructions */
	struct sock_filter f[3 + 4 * NRULES + 1];
	unsigned int n = 0;

	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	for (size_t i = 0; i < NRULES; i++) {
		if (!picked[i])
			continue;
		/* load nr; not this call: jump past the rule's return */
		f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
		if (rules[i].has_arg0) {
			f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, rules[i].nr, 0, 3);
			f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
							      offsetof(struct seccomp_data, args[0]));
			f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, rules[i].arg0, 0, 1);
		} else {
			f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, rules[i].nr, 0, 1);
		}
		f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (unsigned int)err);
	}
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);

	struct sock_fprog prog = { .len = (unsigned short)n, .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		fprintf(stderr, "refuse: seccomp: %s\n", strerror(errno));
		return 77;
	}
	execvp(argv[3], argv + 3);
	fprintf(stderr, "refuse: %s: %s\n", argv[3], strerror(errno));
	return 127;
#else
	fprintf(stderr, "refuse: no seccomp filter for this architecture\n");
	return 77;
#endif
}
