/* fork_mid_open (white-box, linked with the allocator's test-hook build): a
 * single-threaded process forks while its own thread is half way through opening a
 * vCPU region, as it does when a signal handler that interrupted that open forks
 * (tests/races fork_signal), and the child allocates at once.
 *
 *   1. The process is pinned to the CPU it runs on (so that parent and child run as
 *      the same id in every index mode), fills its cache, and a forced reclaim
 *      drains and releases it.
 *   2. The next malloc opens the region again; the hook region_open (half the
 *      class headers written, the id's lock held) forks. In the child, the open is
 *      not populated and its headers are half written: the child's first populate
 *      must find a region that is either open or all zero. It allocates, writes,
 *      checks and frees blocks of 25 sizes twice, then checks that its region is
 *      open and that the populated count is the number of populated ids.
 *   3. The parent's open then completes; the child's status is checked, and the
 *      parent's cache works as before.
 * Without the child's repair (vcpu_cache.c's repair_in_child) the child aborts on
 * vc_slab_open's assertion that a region not open is all zero. */
#include "internal.h"
#include "vctest.h"

#include <sched.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { N = 500 };

/* N blocks of 25 sizes from 16 B to 48 KiB, written, checked and freed; false when
 * one lost what was written in it (or malloc failed). */
static bool churn(unsigned seed)
{
	static unsigned char *blocks[N];
	for (unsigned i = 0; i < N; i++) {
		size_t n = (size_t)16 << (i % 25 / 2);
		if (!(blocks[i] = malloc(n)))
			return false;
		memset(blocks[i], (int)(seed + i), n);
	}
	bool ok = true;
	for (unsigned i = 0; i < N; i++) {
		size_t n = (size_t)16 << (i % 25 / 2);
		ok &= blocks[i][0] == (unsigned char)(seed + i) &&
		      blocks[i][n - 1] == (unsigned char)(seed + i);
		free(blocks[i]);
	}
	return ok;
}

static unsigned populated_ids(void)
{
	unsigned n = 0;
	for (uint32_t idx = 0; idx < vc_g.nvcpus; idx++)
		n += __atomic_load_n(&vc_g.vcpus[idx].populated, __ATOMIC_ACQUIRE);
	return n;
}

static void child(void)
{
	if (!churn(3) || !churn(4)) {
		fprintf(stderr, "fork_mid_open: child: a block lost its contents\n");
		_exit(1);
	}
	unsigned populated = populated_ids();
	if (populated == 0) {
		fprintf(stderr, "fork_mid_open: child: no region open after its churn\n");
		_exit(1);
	}
	struct vcmalloc_stats st;
	vct_stats(&st);
	if (st.vcpu_caches_populated != populated) {
		fprintf(stderr, "fork_mid_open: child: %u caches counted populated, %u are\n",
			(unsigned)st.vcpu_caches_populated, populated);
		_exit(1);
	}
	_exit(0);
}

static int forks, child_status = -1;

static void at_region_open(void)
{
	if (forks++ > 0)
		return;
	pid_t pid = fork();
	if (pid == 0)
		child();
	if (pid < 0 || waitpid(pid, &child_status, 0) != pid)
		child_status = -2;
}

int main(void)
{
	vct_start("fork_mid_open", 60);
	VCT_CHECK(vct_under_vcmalloc(), "needs vcmalloc");
	cpu_set_t one;
	CPU_ZERO(&one);
	int cpu = sched_getcpu();
	VCT_CHECK(cpu >= 0, "sched_getcpu");
	CPU_SET(cpu, &one);
	VCT_CHECK(sched_setaffinity(0, sizeof one, &one) == 0, "pin to CPU %d", cpu);

	/* 1. */
	VCT_CHECK(churn(1), "a block lost its contents");
	VCT_CHECK(populated_ids() >= 1, "no region open after the first churn");
	vct_vcmalloc()->reclaim(1);
	VCT_CHECK(populated_ids() == 0, "%u regions still open after a forced reclaim",
		  populated_ids());

	/* 2. */
	vc_test_hooks.region_open = at_region_open;
	void *p = malloc(64);
	VCT_CHECK(p != NULL, "malloc(64)");
	vc_test_hooks.region_open = NULL;
	VCT_CHECK(forks == 1, "the malloc after the reclaim opened no region (%d opens)", forks);

	/* 3. */
	VCT_CHECK(child_status >= 0, "fork or waitpid failed");
	VCT_CHECK(WIFEXITED(child_status) && WEXITSTATUS(child_status) == 0,
		  "the child failed (status %#x)", child_status);
	free(p);
	VCT_CHECK(churn(2), "a block lost its contents after the open");
	struct vcmalloc_stats st;
	vct_stats(&st);
	VCT_CHECK(st.vcpu_caches_populated == populated_ids(),
		  "%u caches counted populated, %u are", (unsigned)st.vcpu_caches_populated,
		  populated_ids());
	printf("fork_mid_open: ok\n");
	return 0;
}
