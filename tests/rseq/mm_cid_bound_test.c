/* tests/rseq/mm_cid_bound_test.c - how high mm_cid goes.
 *
 * Usage: mm-cid-bound-test [--ms=150]
 *        (internally re-executes itself as mm-cid-bound-test --one-cpu=C)
 *
 * For N = 1, 2, 4, 16, 64 threads (the main thread is one of them, so the process
 * has exactly N threads), all busy reading mm_cid and yielding now and then for `ms`
 * milliseconds, every mm_cid read must satisfy
 *     mm_cid < possible CPUs                                   (any kernel)
 *     mm_cid < ceil(1.25 * min(N, allowed CPUs))               (the slack allowed)
 * Kernels 6.3 to 6.18 keep the ids compact, below min(N, allowed CPUs); the 6.19
 * rewrite of mm_cid may use up to 1.25 times that before it switches to per-CPU
 * ownership, so the 1.25 factor is what the allocator may rely on. The compact bound
 * is printed for every run; it is asserted only where it holds by construction on
 * 6.3-6.18: in a process started on a single CPU (the kernel records the CPUs a memory
 * space may use when exec creates it, so there every thread gets mm_cid 0).
 *
 * Three rounds:
 *   all      the CPUs the test was started with;
 *   narrowed every thread's affinity restricted to one CPU inside this process (the
 *            process ran on all CPUs before, so ids may stay spread: only the 1.25
 *            bound, which is 2 here, applies);
 *   one-cpu  a child exec'd with its affinity already restricted to one CPU (the
 *            compact bound, mm_cid == 0, is asserted on 6.3-6.18).
 */
#include "cpus.h"
#include "vctest.h"
#include "rseq.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { MAX_THREADS = 64 };
static const int thread_counts[] = {1, 2, 4, 16, 64};

static const struct vc_rseq_info *info;
static int kmajor, kminor;

struct reader {
	unsigned max_cid;
	long reads;
	int cpu; /* -1: any allowed CPU */
	char pad[64];
};

static struct reader readers[MAX_THREADS];
static unsigned char *cid_seen; /* possible_cpus flags */
static pthread_barrier_t start;
static int stop; /* atomic */
static long deadline_us;

static void read_loop(struct reader *r, bool keeps_time)
{
	struct vc_rseq_abi *rs = vc_rseq_area();
	if (!rs)
		VCT_FATAL("thread without an rseq area");
	pthread_barrier_wait(&start);
	for (long k = 0;; k++) {
		unsigned cid = (unsigned)vc_rseq_current_mm_cid();
		unsigned raw = vc_rseq_read_index(rs, VC_RSEQ_INDEX_MM_CID);
		if (cid >= info->possible_cpus || raw >= info->possible_cpus) {
			VCT_EXPECT(0, "mm_cid %u (raw %u) not below possible cpus %u", cid, raw,
				   info->possible_cpus);
			__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
			break;
		}
		if (cid > r->max_cid)
			r->max_cid = cid;
		if (!cid_seen[cid])
			__atomic_store_n(&cid_seen[cid], 1, __ATOMIC_RELAXED);
		r->reads++;
		if ((k & 4095) == 4095) {
			sched_yield(); /* switches threads, so that ids get reassigned */
			if (keeps_time && vct_now_us() >= deadline_us)
				__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
			if (__atomic_load_n(&stop, __ATOMIC_RELAXED))
				break;
		}
	}
}

static void *reader_main(void *p)
{
	read_loop(p, false);
	return NULL;
}

static unsigned min_u(unsigned a, unsigned b)
{
	return a < b ? a : b;
}

/* Runs n threads (the caller is one of them) for ms milliseconds; when cpu >= 0 every
 * one of them is restricted to that CPU. Returns the highest mm_cid read. */
static unsigned run(int n, int cpu, long ms, int *distinct)
{
	pthread_t t[MAX_THREADS];
	memset(readers, 0, sizeof readers);
	memset(cid_seen, 0, info->possible_cpus);
	stop = 0;
	pthread_barrier_init(&start, NULL, (unsigned)n);
	for (int i = 1; i < n; i++) {
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		if (cpu >= 0) {
			cpu_set_t s;
			CPU_ZERO(&s);
			CPU_SET(cpu, &s);
			pthread_attr_setaffinity_np(&attr, sizeof s, &s);
		}
		if (pthread_create(&t[i], &attr, reader_main, &readers[i]) != 0)
			VCT_FATAL("pthread_create");
		pthread_attr_destroy(&attr);
	}
	deadline_us = vct_now_us() + ms * 1000;
	read_loop(&readers[0], true);
	for (int i = 1; i < n; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&start);
	unsigned max = 0;
	for (int i = 0; i < n; i++)
		max = readers[i].max_cid > max ? readers[i].max_cid : max;
	*distinct = 0;
	for (unsigned c = 0; c < info->possible_cpus; c++)
		*distinct += cid_seen[c];
	return max;
}

static bool kernel_is_compact(void)
{
	bool at_least_6_3 = kmajor > 6 || (kmajor == 6 && kminor >= 3);
	bool before_6_19 = kmajor < 6 || (kmajor == 6 && kminor < 19);
	return at_least_6_3 && before_6_19;
}

/* One round over every thread count. allowed: the CPUs the threads may use.
 * assert_compact: also require mm_cid < min(N, allowed). */
static void round_of_runs(const char *name, int cpu, int allowed, long ms, bool assert_compact)
{
	unsigned possible = info->possible_cpus;
	for (size_t k = 0; k < sizeof thread_counts / sizeof thread_counts[0]; k++) {
		int n = thread_counts[k];
		unsigned m = min_u((unsigned)n, (unsigned)allowed);
		/* ceil(1.25 m), at most the possible count */
		unsigned slack = min_u(possible, (5 * m + 3) / 4);
		int distinct;
		unsigned max = run(n, cpu, ms, &distinct);
		printf("%-8s N=%2d allowed=%d: highest mm_cid %u, %d distinct ids; bound %u = "
		       "min(possible %u, ceil(1.25*%u) = %u); compact bound %u %s\n",
		       name, n, allowed, max, distinct, slack, possible, m, (5 * m + 3) / 4, m,
		       max < m ? "held" : "exceeded");
		VCT_EXPECT(max < slack,
			   "%s, %d threads: mm_cid %u not below ceil(1.25*min(%d, %d))=%u", name, n,
			   max, n, allowed, slack);
		if (assert_compact)
			VCT_EXPECT(max < m,
				   "%s, %d threads, kernel %d.%d: mm_cid %u not below the compact "
				   "bound min(%d, %d)",
				   name, n, kmajor, kminor, max, n, allowed);
	}
}

static void discover(void)
{
	info = vc_rseq_init();
	vct_kernel_version(&kmajor, &kminor);
	if (!info->has_mm_cid) {
		/* Nothing to bound: a skip (77 for meson and suite-in-guest), not a pass. */
		printf("SKIP: the kernel does not provide mm_cid (feature size %u, owner %d)\n",
		       info->kernel_feature_size, info->owner);
		exit(77);
	}
	cid_seen = calloc(info->possible_cpus, 1);
	if (!cid_seen)
		VCT_FATAL("out of memory");
}

/* The child: exec'd with its affinity restricted to one CPU. */
static int one_cpu_child(int cpu, long ms)
{
	discover();
	struct cpu_list allowed;
	cpu_list_allowed(&allowed);
	VCT_EXPECT(allowed.n == 1 && allowed.cpu[0] == cpu, "child allowed %d cpus, first %d",
		   allowed.n, allowed.cpu[0]);
	VCT_EXPECT(vc_rseq_current_cpu() == cpu, "child runs on cpu %d, not %d",
		   vc_rseq_current_cpu(), cpu);
	round_of_runs("one-cpu", -1, 1, ms, kernel_is_compact());
	return vct_exit();
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	long ms = vct_arg_long(argc, argv, "ms", 150);
	long one_cpu = vct_arg_long(argc, argv, "one-cpu", -1);
	if (ms < 1 || ms > 5000)
		VCT_FATAL("bad --ms");
	vct_watchdog(45);
	if (one_cpu >= 0)
		return one_cpu_child((int)one_cpu, ms);

	discover();
	struct cpu_list allowed;
	cpu_list_allowed(&allowed);
	printf("kernel %d.%d, owner %s, possible cpus %u, allowed cpus %d; %ld ms per run; "
	       "compact kernel (6.3-6.18): %s\n",
	       kmajor, kminor, info->owner == VC_RSEQ_OWNER_GLIBC ? "glibc" : "self",
	       info->possible_cpus, allowed.n, ms, kernel_is_compact() ? "yes" : "no");

	round_of_runs("all", -1, allowed.n, ms, false);

	int cpu = allowed.cpu[allowed.n - 1];
	pin_self(cpu);
	round_of_runs("narrowed", cpu, 1, ms, false);
	set_self_mask(&allowed.mask);

	/* The child gets the one-CPU mask before exec creates its memory space. */
	pid_t pid = fork();
	if (pid < 0)
		VCT_FATAL("fork: %s", strerror(errno));
	if (pid == 0) {
		cpu_set_t s;
		CPU_ZERO(&s);
		CPU_SET(cpu, &s);
		if (sched_setaffinity(0, sizeof s, &s) != 0)
			_exit(4);
		char a1[32], a2[32];
		snprintf(a1, sizeof a1, "--one-cpu=%d", cpu);
		snprintf(a2, sizeof a2, "--ms=%ld", ms);
		execl("/proc/self/exe", argv[0], a1, a2, (char *)NULL);
		_exit(5);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			VCT_FATAL("waitpid: %s", strerror(errno));
	VCT_EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		   "the one-cpu child failed (status %#x)", status);
	return vct_exit();
}
