/* tests/rseq/no_rseq_exec.c - run a program in a world without rseq.
 *
 * Usage: no-rseq-exec PROGRAM [ARGS...]
 *
 * Installs a seccomp filter that makes the rseq system call fail with ENOSYS (as on
 * a kernel built without CONFIG_RSEQ), checks that it does, then execs PROGRAM. The
 * filter survives exec and is inherited by every thread, so glibc's own registration
 * at start-up fails too and the rseq layer must find no owner at all.
 *
 * The filter is a classic BPF program over struct seccomp_data:
 *   arch != this architecture         -> kill (a foreign ABI could bypass the check)
 *   nr == __NR_rseq                   -> errno ENOSYS
 *   anything else                     -> allow
 * PR_SET_NO_NEW_PRIVS first, so that an unprivileged user may install it.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define THIS_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define THIS_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#error "no-rseq-exec: add this architecture's AUDIT_ARCH value"
#endif

static int deny_rseq(void)
{
	struct sock_filter prog[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, THIS_AUDIT_ARCH, 1, 0),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_rseq, 0, 1),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog fprog = {
	    .len = (unsigned short)(sizeof prog / sizeof prog[0]),
	    .filter = prog,
	};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
		fprintf(stderr, "no-rseq-exec: PR_SET_NO_NEW_PRIVS: %s\n", strerror(errno));
		return -1;
	}
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog, 0, 0) != 0) {
		fprintf(stderr, "no-rseq-exec: PR_SET_SECCOMP: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: no-rseq-exec PROGRAM [ARGS...]\n");
		return 2;
	}
	if (deny_rseq() != 0)
		return 2;
	/* Without the filter these arguments give EINVAL (or EBUSY for this thread,
	 * registered by glibc); with it, ENOSYS before the kernel looks at them. */
	long r = syscall(__NR_rseq, NULL, 0, 0, 0);
	if (r != -1 || errno != ENOSYS) {
		fprintf(stderr, "no-rseq-exec: filter not effective (rseq returned %ld, %s)\n", r,
			strerror(errno));
		return 2;
	}
	printf("no-rseq-exec: rseq now fails with ENOSYS; exec %s\n", argv[1]);
	fflush(stdout);
	execv(argv[1], argv + 1);
	fprintf(stderr, "no-rseq-exec: exec %s: %s\n", argv[1], strerror(errno));
	return 2;
}
