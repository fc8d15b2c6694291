/* rseq/fence.c - membarrier private-expedited-rseq across all CPUs.
 * membarrier cannot target an mm_cid, only real CPUs, so the fence covers every CPU
 * the process runs on. Registration happens once, in vc_rseq_init(). */
#include "rseq.h"

#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

int vc_rseq_fence(void)
{
	if (!vc_rseq_info_.fence)
		return -1;
	int saved = errno;
	long r;
	do
		r = syscall(SYS_membarrier, 1 << 7 /* PRIVATE_EXPEDITED_RSEQ */, 0, 0);
	while (r != 0 && errno == EINTR);
	errno = saved;
	return r == 0 ? 0 : -1;
}

void vc_rseq_fence_after_fork(void)
{
	/* Registration belongs to the memory space: make sure the child's has it. */
	if (!vc_rseq_info_.fence)
		return;
	int saved = errno;
	if (syscall(SYS_membarrier, 1 << 8 /* REGISTER_PRIVATE_EXPEDITED_RSEQ */, 0, 0) != 0)
		vc_rseq_info_.fence = false;
	errno = saved;
}
