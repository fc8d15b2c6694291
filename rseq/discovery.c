/* rseq/discovery.c - who registered rseq, which fields the kernel fills, and this
 * thread's area.
 *
 * Runs before main (from malloc), so it must not allocate: the only calls are
 * getauxval, raw system calls and reads of small /sys files into stack buffers.
 * vc_rseq_info_ is written once, by the first vc_rseq_init(); concurrent first
 * calls compute the same values, so the benign race needs no lock.
 */
#include "rseq.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef AT_RSEQ_FEATURE_SIZE
#define AT_RSEQ_FEATURE_SIZE 27
#endif
#ifndef AT_RSEQ_ALIGN
#define AT_RSEQ_ALIGN 28
#endif

/* glibc >= 2.35 exports these; weak so that an older libc links too. */
extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));

struct vc_rseq_info vc_rseq_info_;

/* Our own area, used only when glibc did not register. 256 bytes leave room for
 * fields future kernels add; cpu_id and mm_cid start out of range so that the
 * critical-section helpers' callers see "no index" until registration. */
#define VC_RSEQ_OWN_AREA_SIZE 256
static __thread union {
	struct vc_rseq_abi abi;
	char bytes[VC_RSEQ_OWN_AREA_SIZE];
} vc_rseq_own_area __attribute__((tls_model("initial-exec"), aligned(256))) = {
    .abi = {.cpu_id_start = 0,
	    .cpu_id = VC_RSEQ_CPU_ID_UNINITIALIZED,
	    .node_id = VC_RSEQ_CPU_ID_UNINITIALIZED,
	    .mm_cid = VC_RSEQ_CPU_ID_UNINITIALIZED},
};

static unsigned parse_possible_cpus(void)
{
	char buf[256];
	int fd = open("/sys/devices/system/cpu/possible", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	/* A list of ranges, e.g. "0-63" or "0,2-5": the count is the highest id + 1. */
	unsigned highest = 0, cur = 0;
	int have = 0;
	for (ssize_t i = 0; i <= n; i++) {
		char c = buf[i];
		if (c >= '0' && c <= '9') {
			cur = cur * 10 + (unsigned)(c - '0');
			have = 1;
		} else {
			if (have && cur > highest)
				highest = cur;
			cur = 0;
			have = 0;
		}
	}
	return highest + 1;
}

unsigned vc_rseq_possible_cpus(void)
{
	static unsigned cached;
	if (cached)
		return cached;
	unsigned n = parse_possible_cpus();
	if (n == 0) {
		long c = sysconf(_SC_NPROCESSORS_CONF);
		n = c > 0 ? (unsigned)c : 1;
	}
	cached = n;
	return n;
}

static int register_own_area(void)
{
	struct vc_rseq_abi *a = &vc_rseq_own_area.abi;
	unsigned fs = vc_rseq_info_.kernel_feature_size;
	unsigned len = fs > VC_RSEQ_ORIG_SIZE ? fs : VC_RSEQ_ORIG_SIZE;
	if (len > VC_RSEQ_OWN_AREA_SIZE || vc_rseq_info_.kernel_align > 256)
		return -EINVAL;
	long r = syscall(SYS_rseq, a, len, 0, VC_RSEQ_SIG);
	return r == 0 ? 0 : -errno;
}

struct vc_rseq_abi *vc_rseq_area_slow(void)
{
	switch (vc_rseq_info_.owner) {
	case VC_RSEQ_OWNER_GLIBC:
		return (struct vc_rseq_abi *)(vc_rseq_thread_pointer() + vc_rseq_info_.area_offset);
	case VC_RSEQ_OWNER_SELF: {
		struct vc_rseq_abi *a = &vc_rseq_own_area.abi;
		uint32_t cpu = *(volatile uint32_t *)&a->cpu_id;
		if (cpu < VC_RSEQ_CPU_ID_REGISTRATION_FAILED)
			return a;
		if (cpu == VC_RSEQ_CPU_ID_REGISTRATION_FAILED)
			return NULL;
		int saved = errno;
		int r = register_own_area();
		errno = saved;
		if (r == 0)
			return a;
		/* Not registered, so the area is ours to write: remember the failure. */
		a->cpu_id = VC_RSEQ_CPU_ID_REGISTRATION_FAILED;
		return NULL;
	}
	default:
		return NULL;
	}
}

static void discover_fence(void)
{
	/* membarrier commands (linux/membarrier.h), spelled out to avoid the header. */
	enum { QUERY = 0, PRIVATE_EXPEDITED_RSEQ = 1 << 7, REGISTER_PRIVATE_EXPEDITED_RSEQ = 1 << 8 };
	long cmds = syscall(SYS_membarrier, QUERY, 0, 0);
	if (cmds < 0 || !(cmds & PRIVATE_EXPEDITED_RSEQ))
		return;
	if (syscall(SYS_membarrier, REGISTER_PRIVATE_EXPEDITED_RSEQ, 0, 0) == 0)
		vc_rseq_info_.fence = true;
}

const struct vc_rseq_info *vc_rseq_init(void)
{
	if (__atomic_load_n(&vc_rseq_info_.initialised, __ATOMIC_ACQUIRE))
		return &vc_rseq_info_;
	int saved_errno = errno;
	struct vc_rseq_info *in = &vc_rseq_info_;
	in->kernel_feature_size = (unsigned)getauxval(AT_RSEQ_FEATURE_SIZE);
	in->kernel_align = (unsigned)getauxval(AT_RSEQ_ALIGN);
	in->possible_cpus = vc_rseq_possible_cpus();
	in->glibc_size = &__rseq_size ? __rseq_size : 0;
	unsigned kfs = in->kernel_feature_size ? in->kernel_feature_size : 20;

	if (in->glibc_size > 0 && &__rseq_offset) {
		in->owner = VC_RSEQ_OWNER_GLIBC;
		in->area_offset = __rseq_offset;
		/* glibc 2.35-2.39 report 20 or 32 whatever the kernel fills. */
		if (in->glibc_size == 20 || in->glibc_size == VC_RSEQ_ORIG_SIZE)
			in->usable_size = kfs < VC_RSEQ_ORIG_SIZE ? kfs : VC_RSEQ_ORIG_SIZE;
		else
			in->usable_size = in->glibc_size;
	} else {
		in->area_offset = (char *)&vc_rseq_own_area - vc_rseq_thread_pointer();
		int saved = errno;
		int r = register_own_area();
		errno = saved;
		if (r == 0) {
			in->owner = VC_RSEQ_OWNER_SELF;
			in->usable_size = kfs < VC_RSEQ_OWN_AREA_SIZE ? kfs : VC_RSEQ_OWN_AREA_SIZE;
		} else {
			in->owner = VC_RSEQ_OWNER_NONE;
			vc_rseq_own_area.abi.cpu_id = VC_RSEQ_CPU_ID_REGISTRATION_FAILED;
			in->usable_size = 0;
		}
	}
	in->has_cpu_id = in->owner != VC_RSEQ_OWNER_NONE;
	in->has_node_id = in->has_cpu_id && in->usable_size >= VC_RSEQ_FEATURE_NODE_ID;
	in->has_mm_cid = in->has_cpu_id && in->usable_size >= VC_RSEQ_FEATURE_MM_CID;
	if (in->has_cpu_id)
		discover_fence();
	errno = saved_errno;
	__atomic_store_n(&in->initialised, true, __ATOMIC_RELEASE);
	return in;
}
