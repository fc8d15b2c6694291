/* fork_mid_open (white-box, linked with the allocator's test-hook build): a
 * single-threaded process forks while its own thread is half way through changing a
 * vCPU region (opening it, draining it), as it does when a signal handler that
 * interrupted that change forks (tests/races fork_signal), and the child allocates
 * at once.
 *
 *   1. The process is pinned to the CPU it runs on (so that parent and child run as
 *      the same id in every index mode), fills its cache, and a forced reclaim
 *      drains and releases it.
 *   2. The next malloc opens the region again; the hook region_open (half the
 *      class headers written, the id's lock held) forks. In the child, the open is
 *      not populated and its headers are half written: the child's first populate
 *      must find a region that is either open or all zero. It allocates, writes,
 *      checks and frees blocks of 13 sizes twice, then checks that its region is
 *      open and that the populated count is the number of populated ids.
 *   3. The parent's open then completes; the child's status is checked, and the
 *      parent's cache works as before.
 *   4. The parent fills its cache again, and a forced reclaim drains it; the hook
 *      region_drain (the cached objects moved to the central lists, the region still
 *      populated, its headers stopped, the lock held) forks. The child allocates
 *      blocks of the cached classes, more than were cached, all live at once: no
 *      block may be handed out twice (each holds its own number at the end).
 *   5. Fallback mode: the parent allocates F blocks of 64 B and frees them, until
 *      its cache's class is full and a free spills; the hook fallback_spill (the
 *      spilled objects in central, the stack's header not yet lowered, the lock
 *      held) forks. The child allocates F + 1000 blocks of 64 B, all live at once:
 *      none may be handed out twice.
 * Without the child's repair (vcpu_cache.c's repair_in_child) the child of part 2
 * aborts on vc_slab_open's assertion that a region not open is all zero, and in
 * fallback mode the child of part 5 pops the spilled objects the central lists have
 * too. Part 4's child passes without the drop as well (the drain stopped the headers
 * before moving any object): it checks that the drop hands nothing out twice. */
#include "internal.h"
#include "vctest.h"

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

enum { N = 500 };

/* N blocks of 13 sizes from 16 B to 64 KiB, filled, verified whole and freed; false
 * when one lost what was written in it (or malloc failed). */
static bool churn(unsigned seed)
{
	static unsigned char *blocks[N];
	for (unsigned i = 0; i < N; i++) {
		size_t n = (size_t)16 << (i % 25 / 2);
		if (!(blocks[i] = malloc(n)))
			return false;
		vct_fill(blocks[i], n, (uint64_t)seed * N + i);
	}
	bool ok = true;
	for (unsigned i = 0; i < N; i++) {
		size_t n = (size_t)16 << (i % 25 / 2);
		ok &= vct_verify(blocks[i], n, (uint64_t)seed * N + i) == (size_t)-1;
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

/* M blocks of each of 13 sizes (16 B - 64 KiB) live at once, each holding its own
 * number in every word it was given: a block handed out twice loses one number. */
enum { M = 300, SIZES = 13 };
static void child_unique(void)
{
	static uint64_t *blocks[M * SIZES];
	for (unsigned i = 0; i < M * SIZES; i++) {
		size_t n = (size_t)16 << (i % SIZES);
		if (!(blocks[i] = malloc(n)))
			_exit(3);
		for (size_t w = 0; w < n / 8; w++)
			blocks[i][w] = i;
	}
	for (unsigned i = 0; i < M * SIZES; i++) {
		size_t n = (size_t)16 << (i % SIZES);
		if (blocks[i][0] != i || blocks[i][n / 8 - 1] != i) {
			fprintf(stderr, "fork_mid_open: child: block %u (%zu bytes) was also "
				"given to block %llu\n", i, n,
				(unsigned long long)(blocks[i][0] != i ? blocks[i][0]
								      : blocks[i][n / 8 - 1]));
			_exit(1);
		}
	}
	_exit(0);
}

/* Part 5's F blocks of 64 B, and the child's F + 1000. */
enum { F = 20000, F_CHILD = F + 1000 };
static uint64_t *many[F_CHILD];

static void child_many_64(void)
{
	for (unsigned i = 0; i < F_CHILD; i++) {
		if (!(many[i] = malloc(64)))
			_exit(3);
		for (unsigned w = 0; w < 8; w++)
			many[i][w] = i;
	}
	for (unsigned i = 0; i < F_CHILD; i++)
		if (many[i][0] != i || many[i][7] != i) {
			fprintf(stderr, "fork_mid_open: child: 64-byte block %u was also given "
				"to block %llu\n", i,
				(unsigned long long)(many[i][0] != i ? many[i][0] : many[i][7]));
			_exit(1);
		}
	_exit(0);
}

/* volatile: set from inside malloc and free, which the compiler assumes change no
 * memory of ours */
static volatile int forks, child_status = -1;
static void (*child_work)(void);

static void fork_here(void)
{
	if (forks++ > 0)
		return;
	pid_t pid = fork();
	if (pid == 0)
		child_work();
	int status;
	child_status = pid >= 0 && waitpid(pid, &status, 0) == pid ? status : -2;
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
	child_work = child;
	vc_test_hooks.region_open = fork_here;
	void *p = malloc(64);
	VCT_CHECK(p != NULL, "malloc(64)");
	vc_test_hooks.region_open = NULL;
	VCT_CHECK(forks >= 1, "the malloc after the reclaim opened no region (%d opens)", forks);

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

	/* 4. */
	VCT_CHECK(churn(5), "a block lost its contents");
	forks = 0;
	child_status = -1;
	child_work = child_unique;
	vc_test_hooks.region_drain = fork_here;
	vct_vcmalloc()->reclaim(1);
	vc_test_hooks.region_drain = NULL;
	VCT_CHECK(forks >= 1, "the forced reclaim drained no region (%d drains)", forks);
	VCT_CHECK(child_status >= 0, "fork or waitpid failed");
	VCT_CHECK(WIFEXITED(child_status) && WEXITSTATUS(child_status) == 0,
		  "the child of the drain failed (status %#x)", child_status);
	VCT_CHECK(churn(6), "a block lost its contents after the drain");

	/* 5. */
	if (vc_g.mode == VCMALLOC_INDEX_FALLBACK) {
		forks = 0;
		child_status = -1;
		child_work = child_many_64;
		for (unsigned i = 0; i < F; i++)
			VCT_CHECK((many[i] = malloc(64)) != NULL, "malloc(64)");
		vc_test_hooks.fallback_spill = fork_here;
		for (unsigned i = 0; i < F; i++)
			free(many[i]);
		vc_test_hooks.fallback_spill = NULL;
		VCT_CHECK(forks >= 1, "%u frees of 64 B spilled nothing", (unsigned)F);
		VCT_CHECK(child_status >= 0, "fork or waitpid failed");
		VCT_CHECK(WIFEXITED(child_status) && WEXITSTATUS(child_status) == 0,
			  "the child of the spill failed (status %#x)", child_status);
	}
	printf("fork_mid_open: ok\n");
	return 0;
}
