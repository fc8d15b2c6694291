/* rseq/current.c - the current cpu, node and mm_cid, with fallbacks.
 * Fallbacks, for a field the kernel does not fill or a thread without rseq:
 * cpu -> sched_getcpu(), node -> getcpu(), mm_cid -> the cpu id. */
#include "rseq.h"

#include <errno.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

int vc_rseq_current_cpu(void)
{
	struct vc_rseq_abi *a = vc_rseq_info_.has_cpu_id ? vc_rseq_area() : NULL;
	if (a)
		return (int)vc_rseq_read_index(a, VC_RSEQ_INDEX_CPU_ID);
	int saved = errno, c = sched_getcpu();
	errno = saved;
	return c < 0 ? 0 : c;
}

int vc_rseq_current_node(void)
{
	struct vc_rseq_abi *a = vc_rseq_info_.has_node_id ? vc_rseq_area() : NULL;
	if (a)
		return (int)*(volatile uint32_t *)&a->node_id;
	unsigned cpu = 0, node = 0;
	int saved = errno;
	long r = syscall(SYS_getcpu, &cpu, &node, NULL);
	errno = saved;
	return r == 0 ? (int)node : 0;
}

int vc_rseq_current_mm_cid(void)
{
	struct vc_rseq_abi *a = vc_rseq_info_.has_mm_cid ? vc_rseq_area() : NULL;
	if (a)
		return (int)vc_rseq_read_index(a, VC_RSEQ_INDEX_MM_CID);
	return vc_rseq_current_cpu();
}
