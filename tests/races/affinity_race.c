/* affinity_race: threads moved between CPUs while they allocate.
 *
 * Usage: affinity_race [MOVES]   (default 20000)
 *
 * WORKERS threads run rc_work (self-checking blocks, cross-thread frees through the
 * exchange table; races.h) in a loop; the main thread meanwhile re-pins random
 * workers MOVES times, each time to a random non-empty subset of the allowed CPUs
 * (often a single CPU, so a thread is migrated in the middle of a critical section,
 * a refill or an overflow, and its cpu_id / mm_cid changes under it). Workers also
 * re-pin themselves now and then. Every block is checked before it is freed; at the
 * end allocated_bytes is back near its start value (as in reclaim_race). */
#include "races.h"

#include <pthread.h>
#include <sched.h>
#include <string.h>

enum { WORKERS = 8, OPS = 400 };
#define SLACK ((uint64_t)64 << 10)

static atomic_bool stop;
static atomic_ulong work_rounds;

static void random_mask(uint64_t *rng, cpu_set_t *set)
{
	int n = rc_cpu_count();
	CPU_ZERO(set);
	if (vct_rand(rng) % 2) {
		CPU_SET(rc_cpu_at((int)(vct_rand(rng) % (uint64_t)n)), set);
		return;
	}
	for (int i = 0; i < n; i++)
		if (vct_rand(rng) % 2)
			CPU_SET(rc_cpu_at(i), set);
	if (CPU_COUNT(set) == 0)
		CPU_SET(rc_cpu_at(0), set);
}

static void *worker(void *arg)
{
	uint64_t rng = 0xaff1ull + (uintptr_t)arg;
	while (!atomic_load(&stop)) {
		rc_work(vct_rand(&rng), OPS, 128u << 10);
		atomic_fetch_add(&work_rounds, 1);
		if (vct_rand(&rng) % 4 == 0) {
			cpu_set_t set;
			random_mask(&rng, &set);
			VCT_CHECK(pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0,
				  "self re-pin");
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long moves = argc > 1 ? atol(argv[1]) : 20000;
	VCT_CHECK(moves > 0, "MOVES must be positive");
	/* hang guard: generous, scaled by the work asked for */
	vct_start("affinity_race", 120 + (unsigned)(moves / 100));
	cpu_set_t all;
	VCT_CHECK(sched_getaffinity(0, sizeof(all), &all) == 0, "sched_getaffinity");
	const uint64_t start = rc_allocated_after_reclaim();

	pthread_t t[WORKERS];
	for (uintptr_t i = 0; i < WORKERS; i++)
		VCT_CHECK(pthread_create(&t[i], NULL, worker, (void *)i) == 0, "create");
	uint64_t rng = 0x5e7a;
	for (long m = 0; m < moves; m++) {
		cpu_set_t set;
		random_mask(&rng, &set);
		VCT_CHECK(pthread_setaffinity_np(t[vct_rand(&rng) % WORKERS], sizeof(set), &set) ==
			      0,
			  "re-pin a worker");
		if (m % 16 == 0)
			sched_yield();
	}
	atomic_store(&stop, true);
	for (int i = 0; i < WORKERS; i++)
		VCT_CHECK(pthread_join(t[i], NULL) == 0, "join");
	size_t left = rc_drain_table("table at exit");
	const uint64_t end = rc_allocated_after_reclaim();
	struct vcmalloc_stats s;
	vct_stats(&s);
	printf("affinity_race: %ld re-pins over %d threads on %d CPUs, %lu work rounds of %d "
	       "ops, %zu table blocks at exit, allocated_bytes %llu -> %llu, index %d, "
	       "populated peak %u\n",
	       moves, WORKERS, rc_cpu_count(), atomic_load(&work_rounds), OPS, left,
	       (unsigned long long)start, (unsigned long long)end, (int)s.index,
	       s.vcpu_caches_populated_peak);
	VCT_CHECK(atomic_load(&work_rounds) >= WORKERS, "workers did not run");
	VCT_CHECK(end <= start + SLACK && start <= end + SLACK,
		  "allocated_bytes %llu at the end, %llu at the start", (unsigned long long)end,
		  (unsigned long long)start);
	printf("affinity_race: ok\n");
	return 0;
}
