/* reclaim_race: vCPU caches drained continuously while threads come and go.
 *
 * Usage: reclaim_race [ROUNDS]   (default 60)
 *
 * A reclaimer thread calls vcmalloc_reclaim(1) in a loop (every 16th call
 * vcmalloc_reclaim(0), every 64th vcmalloc_release_free_memory()), so caches are
 * stopped (headers set to zero, rseq fence) and emptied under the feet of threads
 * in the middle of pops, pushes, refills and overflows. Meson also sets
 * VCMALLOC_RECLAIM_MS=1, so the allocator's own idle scans run from slow paths and
 * thread exits. Meanwhile ROUNDS rounds each start WORKERS threads, worker i pinned
 * to the i-th allowed CPU (so every vCPU id in use is exercised), each doing
 * OPS random operations on self-checking blocks (races.h) with cross-thread frees
 * through the exchange table; the threads exit (their exit runs the allocator's
 * thread-exit reclaim) and new ones take their place.
 *
 * Checks: every block's header and pattern before each free (a block handed out
 * twice, or an object that stayed in a cache while being handed out, shows as
 * damage), calloc zero, alignment, usable size; at the end, with all blocks freed
 * and the caches drained, vcmalloc_stats().allocated_bytes is back within SLACK of
 * its value before the first round; the reclaimer really drained caches. */
#include "races.h"

#include <pthread.h>
#include <sched.h>
#include <string.h>

enum { WORKERS = 6, OPS = 3000 };
#define SLACK ((uint64_t)64 << 10)

static atomic_bool stop;
static atomic_ulong reclaim_calls, drained_total;

static void *reclaimer(void *arg)
{
	(void)arg;
	const struct vct_vcmalloc *vc = vct_vcmalloc();
	unsigned long n = 0;
	while (!atomic_load(&stop)) {
		int r = vc->reclaim(n % 16 != 15);
		VCT_CHECK(r >= 0, "vcmalloc_reclaim returned %d", r);
		atomic_fetch_add(&drained_total, (unsigned long)r);
		if (n % 64 == 63)
			vc->release_free_memory();
		n++;
	}
	atomic_store(&reclaim_calls, n);
	return NULL;
}

struct worker_arg {
	int cpu;
	uint64_t seed;
};

static void *worker(void *arg)
{
	const struct worker_arg *w = arg;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(w->cpu, &set);
	VCT_CHECK(pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0, "pin to CPU %d",
		  w->cpu);
	rc_work(w->seed, OPS, 256u << 10);
	return NULL;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 60;
	VCT_CHECK(rounds > 0, "ROUNDS must be positive");
	/* hang guard: generous, scaled by the work asked for */
	vct_start("reclaim_race", 120 + 5 * (unsigned)rounds);
	const uint64_t start = rc_allocated_after_reclaim();

	pthread_t rt;
	VCT_CHECK(pthread_create(&rt, NULL, reclaimer, NULL) == 0, "create reclaimer");
	struct worker_arg args[WORKERS];
	for (int round = 0; round < rounds; round++) {
		pthread_t t[WORKERS];
		for (int i = 0; i < WORKERS; i++) {
			args[i] = (struct worker_arg){rc_cpu_at(i), 0x7ec1a1aull * (round + 1) + i};
			VCT_CHECK(pthread_create(&t[i], NULL, worker, &args[i]) == 0, "create");
		}
		for (int i = 0; i < WORKERS; i++)
			VCT_CHECK(pthread_join(t[i], NULL) == 0, "join");
	}
	atomic_store(&stop, true);
	VCT_CHECK(pthread_join(rt, NULL) == 0, "join reclaimer");
	size_t left = rc_drain_table("table at exit");

	const uint64_t end = rc_allocated_after_reclaim();
	struct vcmalloc_stats s;
	vct_stats(&s);
	printf("reclaim_race: %d rounds x %d threads x %d ops, %lu reclaim calls drained %lu "
	       "caches (%llu reclaims counted), %zu table blocks at exit, allocated_bytes "
	       "%llu -> %llu, index %d\n",
	       rounds, WORKERS, OPS, atomic_load(&reclaim_calls), atomic_load(&drained_total),
	       (unsigned long long)s.vcpu_reclaims, left, (unsigned long long)start,
	       (unsigned long long)end, (int)s.index);
	VCT_CHECK(atomic_load(&drained_total) > 0, "the reclaimer never drained a cache");
	VCT_CHECK(end <= start + SLACK && start <= end + SLACK,
		  "allocated_bytes %llu at the end, %llu at the start", (unsigned long long)end,
		  (unsigned long long)start);
	printf("reclaim_race: ok\n");
	return 0;
}
