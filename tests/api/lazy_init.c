/* lazy_init (vcmalloc only): vCPU caches are populated lazily, one per index value the
 * process really used, never one per possible CPU or per thread.
 *
 * The test reads the ids itself through the project's rseq layer (rseq/rseq.h:
 * vc_rseq_area + vc_rseq_read_index, i.e. the kernel-maintained cpu_id or mm_cid
 * field of this thread's registered area) before and after every allocator call,
 * collects the set of values seen, and compares it with
 * vcmalloc_stats().vcpu_caches_populated{,_peak}. Which field counts follows
 * VCMALLOC_INDEX: mm_cid for "vcpu" (the default), cpu_id for "cpu".
 *
 * Cases (argv[1]); each first pins the whole process and re-executes itself, so that
 * even allocations made before main (loader, libc) happen under the pinning:
 *   single-highest  one thread pinned to the highest allowed CPU. Exactly one id is
 *                   seen, populated == peak == 1; in vcpu mode that id is mm_cid 0,
 *                   whatever CPU the thread runs on.
 *   threads-one-cpu 8 threads with cross-thread frees, all pinned to the highest
 *                   allowed CPU: in cpu mode exactly that one cpu id is seen and
 *                   exactly one cache exists; in vcpu mode peak <= ids seen.
 *   threads-free    8 unpinned threads: peak <= number of ids seen (<= CPUs).
 */
#include "vctest.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "rseq.h"

enum { MAX_IDS = 1024, THREADS = 8, OPS = 40000 };

static enum vc_rseq_index id_field; /* VC_RSEQ_INDEX_MM_CID or VC_RSEQ_INDEX_CPU_ID */
static atomic_uint seen[MAX_IDS];

static inline unsigned read_id(void)
{
	const struct vc_rseq_abi *area = vc_rseq_area();
	VCT_CHECK(area != NULL, "this thread has no rseq area");
	return vc_rseq_read_index(area, id_field);
}

static inline void note_id(void)
{
	unsigned id = read_id();
	VCT_CHECK(id < MAX_IDS, "rseq id %u out of range (not registered?)", id);
	atomic_store_explicit(&seen[id], 1, memory_order_relaxed);
}

static unsigned count_seen(unsigned *only)
{
	unsigned n = 0;
	for (unsigned i = 0; i < MAX_IDS; i++)
		if (atomic_load(&seen[i])) {
			n++;
			*only = i;
		}
	return n;
}

/* A pool shared by the threads so that blocks are freed by other threads. */
static void *_Atomic pool[256];

static void *workload(void *arg)
{
	uint64_t rng = (uint64_t)(uintptr_t)arg * 7919 + 1;
	for (int i = 0; i < OPS; i++) {
		size_t n = vct_random_size(&rng, 256u << 10);
		note_id();
		void *p = malloc(n);
		note_id();
		VCT_CHECK(p != NULL, "malloc(%zu)", n);
		memset(p, 1, n < 64 ? n : 64);
		void *old = atomic_exchange(&pool[vct_rand(&rng) % 256], p);
		note_id();
		free(old);
		note_id();
	}
	return NULL;
}

static int highest_allowed_cpu(void)
{
	cpu_set_t set;
	VCT_CHECK(sched_getaffinity(0, sizeof(set), &set) == 0, "sched_getaffinity");
	for (int c = CPU_SETSIZE - 1; c >= 0; c--)
		if (CPU_ISSET(c, &set))
			return c;
	VCT_CHECK(0, "empty affinity mask");
}

/* Pin and re-execute, once. */
static void pin_and_reexec(char **argv, int cpu)
{
	if (getenv("VCTEST_LAZY_PINNED"))
		return;
	if (cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		VCT_CHECK(sched_setaffinity(0, sizeof(set), &set) == 0, "pin to CPU %d", cpu);
	}
	setenv("VCTEST_LAZY_PINNED", "1", 1);
	execv("/proc/self/exe", argv);
	VCT_CHECK(0, "execv /proc/self/exe failed");
}

int main(int argc, char **argv)
{
	VCT_CHECK(argc == 2, "usage: lazy_init single-highest|threads-one-cpu|threads-free");
	const char *which = argv[1];
	const bool single = strcmp(which, "single-highest") == 0;
	const bool one_cpu = strcmp(which, "threads-one-cpu") == 0;
	VCT_CHECK(single || one_cpu || strcmp(which, "threads-free") == 0, "unknown case %s",
		  which);
	pin_and_reexec(argv, single || one_cpu ? highest_allowed_cpu() : -1);

	vct_start("lazy_init", 120);
	VCT_CHECK(vct_under_vcmalloc(), "lazy_init needs vcmalloc");
	const struct vc_rseq_info *info = vc_rseq_init();
	VCT_CHECK(info->has_cpu_id, "rseq is not registered: ids cannot be observed");
	/* vcpu asked on a kernel without mm_cid: the allocator (and this test) use cpu_id. */
	const int mode = vct_expected_index_mode();
	VCT_CHECK(mode != VCMALLOC_INDEX_FALLBACK, "fallback mode has no rseq ids to compare");
	if (mode == VCMALLOC_INDEX_VCPU) {
		VCT_CHECK(info->has_mm_cid, "the kernel has no mm_cid (rseq feature size %u)",
			  info->kernel_feature_size);
		id_field = VC_RSEQ_INDEX_MM_CID;
	} else {
		id_field = VC_RSEQ_INDEX_CPU_ID;
	}
	struct vcmalloc_stats s;
	vct_stats(&s);
	VCT_CHECK((int)s.index == mode, "vcmalloc runs index mode %d, VCMALLOC_INDEX asks %d",
		  (int)s.index, mode);

	if (single) {
		workload((void *)1);
	} else {
		pthread_t t[THREADS];
		for (uintptr_t i = 0; i < THREADS; i++)
			VCT_CHECK(pthread_create(&t[i], NULL, workload, (void *)(i + 1)) == 0,
				  "pthread_create");
		for (int i = 0; i < THREADS; i++)
			VCT_CHECK(pthread_join(t[i], NULL) == 0, "pthread_join");
	}
	for (int i = 0; i < 256; i++) {
		note_id();
		free(atomic_exchange(&pool[i], NULL));
		note_id();
	}

	vct_stats(&s);
	unsigned only = 0, n_seen = count_seen(&only);
	fprintf(stderr,
		"lazy_init %s: mode %s, ids seen %u (last %u), populated %u, peak %u, "
		"possible cpus %u\n",
		which, mode == VCMALLOC_INDEX_VCPU ? "vcpu" : "cpu", n_seen, only,
		s.vcpu_caches_populated, s.vcpu_caches_populated_peak, s.possible_cpus);

	VCT_CHECK(s.vcpu_caches_populated_peak >= 1, "no vCPU cache was ever populated");
	VCT_CHECK(s.vcpu_caches_populated <= s.vcpu_caches_populated_peak, "populated > peak");
	VCT_CHECK(s.vcpu_caches_populated_peak <= n_seen,
		  "%u caches populated but only %u ids were used", s.vcpu_caches_populated_peak,
		  n_seen);
	if (single) {
		VCT_CHECK(n_seen == 1, "one pinned thread saw %u ids", n_seen);
		VCT_CHECK(s.vcpu_caches_populated == 1 && s.vcpu_caches_populated_peak == 1,
			  "single pinned thread: populated %u, peak %u, expected 1 and 1",
			  s.vcpu_caches_populated, s.vcpu_caches_populated_peak);
		if (mode == VCMALLOC_INDEX_VCPU)
			VCT_CHECK(only == 0, "single-threaded process saw mm_cid %u, not 0", only);
		else
			VCT_CHECK((int)only == highest_allowed_cpu(), "cpu id %u, pinned to %d",
				  only, highest_allowed_cpu());
	}
	if (one_cpu && mode == VCMALLOC_INDEX_CPU) {
		VCT_CHECK(n_seen == 1 && (int)only == highest_allowed_cpu(),
			  "threads pinned to CPU %d saw %u cpu ids", highest_allowed_cpu(), n_seen);
		VCT_CHECK(s.vcpu_caches_populated_peak == 1,
			  "threads pinned to one CPU populated %u cpu caches",
			  s.vcpu_caches_populated_peak);
	}
	printf("lazy_init %s: ok\n", which);
	return 0;
}
