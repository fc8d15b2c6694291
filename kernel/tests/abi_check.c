/* kernel/tests/abi_check.c - the extensible rseq ABI as a guest kernel offers it.
 *
 * usage: abi_check FEATURE_SIZE            (glibc registered the area)
 *        abi_check FEATURE_SIZE --own-area (run with GLIBC_TUNABLES=glibc.pthread.rseq=0)
 *
 * Asserts that AT_RSEQ_FEATURE_SIZE equals FEATURE_SIZE (0 for a kernel without the
 * extensible ABI) and, when it is not 0, that AT_RSEQ_ALIGN is 32. Then, pinned in turn
 * to every CPU it may use, that cpu_id equals getcpu()'s CPU and, with a feature size
 * of at least 24, that node_id equals getcpu()'s node. With --own-area it registers
 * areas itself and checks which registration lengths and alignments the kernel takes:
 * 32 bytes (any kernel), 64 bytes (only with the extensible ABI), never fewer than 32
 * bytes nor a misaligned area; unregistration must name the registered length.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rseq_abi.h"

static long sys_rseq(void *area, uint32_t len, int flags, uint32_t sig)
{
	return syscall(SYS_rseq, area, len, flags, sig);
}

/* Each CPU in turn: the kernel-written cpu_id and node_id agree with getcpu(). */
static void check_every_cpu(volatile struct vc_rseq_abi *rs, unsigned long feature_size)
{
	cpu_set_t allowed, one;
	int checked = 0;

	CHECK(sched_getaffinity(0, sizeof allowed, &allowed) == 0, "sched_getaffinity");
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		unsigned int got_cpu, got_node;

		if (!CPU_ISSET(cpu, &allowed))
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		CHECK(sched_setaffinity(0, sizeof one, &one) == 0, "pin to CPU %d", cpu);
		CHECK(getcpu(&got_cpu, &got_node) == 0, "getcpu");
		CHECK(got_cpu == (unsigned int)cpu, "pinned to %d, getcpu says %u", cpu, got_cpu);
		CHECK(rs->cpu_id == got_cpu, "CPU %u: rseq cpu_id %u", got_cpu, rs->cpu_id);
		if (feature_size >= 24)
			CHECK(rs->node_id == got_node, "CPU %u: rseq node_id %u, getcpu node %u",
			      got_cpu, rs->node_id, got_node);
		if (feature_size >= 28)
			CHECK(rs->mm_cid == 0, "CPU %u: single thread has mm_cid %u", got_cpu,
			      rs->mm_cid);
		checked++;
	}
	CHECK(sched_setaffinity(0, sizeof allowed, &allowed) == 0, "restore affinity");
	printf("abi_check: cpu_id%s agree with getcpu on %d CPUs\n",
	       feature_size >= 24 ? " and node_id" : "", checked);
}

static void check_own_registrations(unsigned long feature_size)
{
	static struct {
		struct vc_rseq_abi area;
		char room[96];
	} buf __attribute__((aligned(64)));
	void *area = &buf;

	CHECK(!glibc_registered_rseq(), "--own-area needs GLIBC_TUNABLES=glibc.pthread.rseq=0");

	/* Too short, or misaligned: refused by every kernel. */
	CHECK(sys_rseq(area, 28, 0, VC_RSEQ_SIG) == -1 && errno == EINVAL, "length 28");
	CHECK(sys_rseq((char *)area + 16, 32, 0, VC_RSEQ_SIG) == -1 && errno == EINVAL,
	      "misaligned area");

	/* The original length. */
	memset(&buf, 0xff, sizeof buf);
	CHECK(sys_rseq(area, 32, 0, VC_RSEQ_SIG) == 0, "length 32: %s", strerror(errno));
	sched_yield();
	CHECK(buf.area.cpu_id < CPU_SETSIZE, "cpu_id %u after registration", buf.area.cpu_id);
	if (feature_size >= 28)
		CHECK(buf.area.mm_cid == 0, "mm_cid %u in a 32-byte area", buf.area.mm_cid);
	CHECK(sys_rseq(area, 64, 1, VC_RSEQ_SIG) == -1 && errno == EINVAL,
	      "unregistration with another length");
	CHECK(sys_rseq(area, 32, 1, VC_RSEQ_SIG) == 0, "unregister 32: %s", strerror(errno));

	/* A longer area: the extensible ABI. */
	long ret = sys_rseq(area, 64, 0, VC_RSEQ_SIG);
	if (feature_size == 0) {
		CHECK(ret == -1 && errno == EINVAL, "length 64 accepted without the extensible ABI");
		printf("abi_check: registrations 32 ok, 28/64/misaligned refused\n");
		return;
	}
	CHECK(ret == 0, "length 64: %s", strerror(errno));
	sched_yield();
	CHECK(buf.area.mm_cid == 0, "mm_cid %u in a 64-byte area", buf.area.mm_cid);
	CHECK(sys_rseq(area, 64, 0, VC_RSEQ_SIG) == -1 && errno == EBUSY,
	      "same registration again");
	CHECK(sys_rseq(area, 32, 0, VC_RSEQ_SIG) == -1 && errno == EINVAL,
	      "re-registration with another length");
	check_every_cpu(&buf.area, feature_size);
	CHECK(sys_rseq(area, 64, 1, VC_RSEQ_SIG) == 0, "unregister 64: %s", strerror(errno));
	CHECK(buf.area.cpu_id == (uint32_t)-1, "cpu_id %u after unregistration (want -1)",
	      buf.area.cpu_id);
	printf("abi_check: registrations 32 and 64 ok, 28/misaligned refused\n");
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	CHECK(argc >= 2, "usage: abi_check FEATURE_SIZE [--own-area]");
	unsigned long want = strtoul(argv[1], NULL, 0);
	unsigned long feature_size = getauxval(AT_RSEQ_FEATURE_SIZE);
	unsigned long align = getauxval(AT_RSEQ_ALIGN);

	printf("abi_check: AT_RSEQ_FEATURE_SIZE %lu AT_RSEQ_ALIGN %lu\n", feature_size, align);
	CHECK(feature_size == want, "feature size %lu, expected %lu", feature_size, want);
	if (feature_size)
		CHECK(align == 32, "AT_RSEQ_ALIGN %lu, expected 32", align);

	if (argc >= 3 && strcmp(argv[2], "--own-area") == 0) {
		check_own_registrations(feature_size);
	} else {
		CHECK(glibc_registered_rseq(), "glibc registered no rseq area");
		check_every_cpu(glibc_rseq_area(), feature_size);
	}
	printf("abi_check: ok\n");
	return 0;
}
