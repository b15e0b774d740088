/* SPDX-License-Identifier: MIT */
/*
 * no-live-frames ERRNO CMD [ARG...]: run CMD (and everything it starts) as
 * on a kernel that refuses live-frames BPF_PROG_RUN: a seccomp filter fails
 * every bpf(BPF_PROG_TEST_RUN) with ERRNO. The two refusals there are:
 *   EINVAL  a kernel before 5.18, which does not know the live-frames flag;
 *   EPERM   a kernel whose policy (a lockdown, a BPF LSM) refuses the run,
 *           even to root with every capability.
 * (seccomp cannot read the command's attributes, so test runs without the
 * flag fail too; the only test runs uskb-pktgen makes are live ones.) For
 * test/net-xdp-live, which checks the tool's line and its own skip on a
 * kernel that has live frames.
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
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#endif

int main(int argc, char **argv)
{
	int err;

	if (argc < 3) {
		fprintf(stderr, "usage: no-live-frames EINVAL|EPERM CMD [ARG...]\n");
		return 2;
	}
	if (!strcmp(argv[1], "EINVAL")) {
		err = EINVAL;
	} else if (!strcmp(argv[1], "EPERM")) {
		err = EPERM;
	} else {
		fprintf(stderr, "no-live-frames: %s: give EINVAL or EPERM\n", argv[1]);
		return 2;
	}
#ifdef ARCH
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_bpf, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, BPF_PROG_TEST_RUN, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (unsigned int)err),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		fprintf(stderr, "no-live-frames: seccomp: %s\n", strerror(errno));
		return 77;
	}
	execvp(argv[2], argv + 2);
	fprintf(stderr, "no-live-frames: %s: %s\n", argv[2], strerror(errno));
	return 127;
#else
	(void)err;
	fprintf(stderr, "no-live-frames: no seccomp filter for this architecture\n");
	return 77;
#endif
}
