/* reclaim (vcmalloc only): memory cached by vCPU caches during a burst of threads is
 * given back once the burst is over.
 *
 * Burst: BURST_THREADS threads (more than this 2-CPU machine's mm_cid range, so every
 * vCPU cache is hit by several threads) each run WAVES waves of allocating
 * OBJECTS_PER_WAVE blocks spread over the small and medium classes, then freeing them
 * (half their own, half another thread's), so the caches fill up to their limits.
 * Then, with every burst thread gone and the main thread not allocating:
 *   1. idle reclaim: vcmalloc_reclaim(0) is called (up to IDLE_TRIES times, 100 ms
 *      apart, for allocators whose idleness needs an epoch to pass). It must drain at
 *      least one cache and vcpu_cache_bytes must fall below what it was before;
 *   2. forced reclaim: vcmalloc_reclaim(1). vcpu_cache_bytes must fall to at most a
 *      quarter of the burst's peak, cached object bytes to at most an eighth, and
 *      vcpu_reclaims must have grown;
 *   3. a second, smaller burst works normally on the drained caches (patterns
 *      checked) and repopulates them.
 * The only precondition checked: the burst really grew the caches (peak >= 64 KiB);
 * a failure of it is reported as such.
 *
 * With argument "auto" (run with VCMALLOC_RECLAIM_MS set, e.g. 100), nothing calls
 * vcmalloc_reclaim: after the burst the main thread pins itself to one CPU and, in
 * rounds, sleeps for a fraction of the idle period and then allocates and frees
 * enough blocks to go through the allocator's slow paths (where vcmalloc checks for
 * idle caches). Within AUTO_ROUNDS rounds (many idle periods) vcpu_reclaims must have
 * grown since before the burst (reclaims at the burst's thread exits count too), fewer
 * caches must be populated than at the peak, and vcpu_cache_bytes must be below its
 * peak. Precondition: the burst populated at least two caches at once (the main
 * thread keeps one of them busy); burst threads alternate between two CPUs so that
 * it holds in every index mode on a loaded machine. */
#include "vctest.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

enum { BURST_THREADS = 8, WAVES = 6, OBJECTS_PER_WAVE = 6000, IDLE_TRIES = 20, AUTO_ROUNDS = 200 };

static pthread_barrier_t wave_barrier;
static void **handoff[BURST_THREADS];
static size_t *handoff_sizes[BURST_THREADS];
static int objects_per_wave = OBJECTS_PER_WAVE;

static size_t burst_size(uint64_t *rng)
{
	/* many classes: 8 B .. 32 KiB, log-uniform */
	unsigned shift = 3 + (unsigned)(vct_rand(rng) % 13);
	size_t base = (size_t)1 << shift;
	return base + (size_t)(vct_rand(rng) % base);
}

/* The first two CPUs the process may run on (-1 when it has only one). Burst threads
 * alternate between them so that a cache index taken from the CPU number (cpu and
 * fallback modes) sees two values even when a loaded machine would otherwise run
 * every burst thread on the same CPU. */
static int burst_cpus[2] = {-1, -1};

static void find_burst_cpus(void)
{
	cpu_set_t allowed;
	if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
		return;
	int found = 0;
	for (int cpu = 0; cpu < CPU_SETSIZE && found < 2; cpu++)
		if (CPU_ISSET(cpu, &allowed))
			burst_cpus[found++] = cpu;
	if (found < 2)
		burst_cpus[0] = burst_cpus[1] = -1;
}

static void *burst_thread(void *arg)
{
	const unsigned me = (unsigned)(uintptr_t)arg;
	if (burst_cpus[0] >= 0) {
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(burst_cpus[me % 2], &one);
		VCT_CHECK(pthread_setaffinity_np(pthread_self(), sizeof(one), &one) == 0,
			  "pin burst thread %u", me);
	}
	uint64_t rng = 0xb0b0ull + me;
	void **mine = handoff[me];
	size_t *sizes = handoff_sizes[me];
	for (int wave = 0; wave < WAVES; wave++) {
		for (int i = 0; i < objects_per_wave; i++) {
			sizes[i] = burst_size(&rng);
			mine[i] = malloc(sizes[i]);
			VCT_CHECK(mine[i] != NULL, "malloc(%zu)", sizes[i]);
			vct_fill(mine[i], sizes[i] < 256 ? sizes[i] : 256,
				 (uint64_t)(uintptr_t)mine[i]);
		}
		pthread_barrier_wait(&wave_barrier);
		/* free the first half of my blocks and the second half of my neighbour's */
		const unsigned other = (me + 1) % BURST_THREADS;
		for (int i = 0; i < objects_per_wave; i++) {
			void **owner = i < objects_per_wave / 2 ? mine : handoff[other];
			size_t *owner_sizes =
			    i < objects_per_wave / 2 ? sizes : handoff_sizes[other];
			size_t n = owner_sizes[i] < 256 ? owner_sizes[i] : 256;
			size_t bad = vct_verify(owner[i], n, (uint64_t)(uintptr_t)owner[i]);
			VCT_CHECK(bad == (size_t)-1, "burst block damaged at %zu", bad);
			free(owner[i]);
		}
		pthread_barrier_wait(&wave_barrier);
	}
	return NULL;
}

static void run_burst(void)
{
	pthread_t t[BURST_THREADS];
	find_burst_cpus();
	VCT_CHECK(pthread_barrier_init(&wave_barrier, NULL, BURST_THREADS) == 0, "barrier");
	for (uintptr_t i = 0; i < BURST_THREADS; i++)
		VCT_CHECK(pthread_create(&t[i], NULL, burst_thread, (void *)i) == 0, "create");
	for (int i = 0; i < BURST_THREADS; i++)
		VCT_CHECK(pthread_join(t[i], NULL) == 0, "join");
	pthread_barrier_destroy(&wave_barrier);
}

static void print_stats(const char *when, const struct vcmalloc_stats *s)
{
	fprintf(stderr,
		"reclaim: %-14s cache bytes %9llu (peak %9llu, objects %9llu), populated %u "
		"(peak %u), reclaims %llu, resident %llu\n",
		when, (unsigned long long)s->vcpu_cache_bytes,
		(unsigned long long)s->vcpu_cache_bytes_peak,
		(unsigned long long)s->vcpu_cache_object_bytes, s->vcpu_caches_populated,
		s->vcpu_caches_populated_peak, (unsigned long long)s->vcpu_reclaims,
		(unsigned long long)s->resident_bytes);
}

/* Allocations that miss the main thread's cache: more 2 KiB blocks than it holds. */
static void slow_path_work(void)
{
	static void *held[4000];
	for (int i = 0; i < 4000; i++) {
		held[i] = malloc(2048);
		VCT_CHECK(held[i] != NULL, "malloc(2048)");
		memset(held[i], 3, 64);
	}
	for (int i = 0; i < 4000; i++)
		free(held[i]);
}

static int automatic_reclaim(const struct vcmalloc_stats *before,
			     const struct vcmalloc_stats *after_burst)
{
	const char *ms_text = getenv("VCMALLOC_RECLAIM_MS");
	VCT_CHECK(ms_text != NULL && atoi(ms_text) > 0,
		  "reclaim auto needs VCMALLOC_RECLAIM_MS > 0 in the environment");
	const unsigned period_ms = (unsigned)atoi(ms_text);
	VCT_CHECK(after_burst->vcpu_caches_populated_peak >= 2,
		  "precondition: the burst populated only %u caches",
		  after_burst->vcpu_caches_populated_peak);
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	VCT_CHECK(sched_setaffinity(0, sizeof(one), &one) == 0, "pin the main thread");
	struct vcmalloc_stats now = *after_burst;
	int round;
	for (round = 1; round <= AUTO_ROUNDS; round++) {
		usleep(period_ms * 1000 / 3);
		slow_path_work();
		vct_stats(&now);
		if (now.vcpu_reclaims > before->vcpu_reclaims &&
		    now.vcpu_caches_populated < now.vcpu_caches_populated_peak)
			break;
	}
	print_stats("automatic", &now);
	VCT_CHECK(now.vcpu_reclaims > before->vcpu_reclaims,
		  "no cache was reclaimed automatically in %d rounds of %u ms idle period / 3",
		  AUTO_ROUNDS, period_ms);
	VCT_CHECK(now.vcpu_caches_populated < now.vcpu_caches_populated_peak,
		  "all %u caches the burst populated are still populated after %d rounds",
		  now.vcpu_caches_populated, AUTO_ROUNDS);
	VCT_CHECK(now.vcpu_cache_bytes < now.vcpu_cache_bytes_peak,
		  "automatic reclaim left vcpu_cache_bytes at its peak %llu",
		  (unsigned long long)now.vcpu_cache_bytes);
	printf("reclaim auto: ok (%llu caches reclaimed, %u of %u left populated after %d "
	       "rounds, cache bytes %llu, peak %llu)\n",
	       (unsigned long long)(now.vcpu_reclaims - before->vcpu_reclaims),
	       now.vcpu_caches_populated, now.vcpu_caches_populated_peak, round,
	       (unsigned long long)now.vcpu_cache_bytes,
	       (unsigned long long)now.vcpu_cache_bytes_peak);
	return 0;
}

int main(int argc, char **argv)
{
	const bool automatic = argc > 1 && strcmp(argv[1], "auto") == 0;
	vct_start("reclaim", 240);
	const struct vct_vcmalloc *vc = vct_vcmalloc();
	VCT_CHECK(vc != NULL && vc->reclaim != NULL, "reclaim needs vcmalloc");
	for (int i = 0; i < BURST_THREADS; i++) {
		handoff[i] = malloc(OBJECTS_PER_WAVE * sizeof(void *));
		handoff_sizes[i] = malloc(OBJECTS_PER_WAVE * sizeof(size_t));
		VCT_CHECK(handoff[i] && handoff_sizes[i], "malloc");
	}

	struct vcmalloc_stats before, after_burst, after_idle, after_force, again;
	vct_stats(&before);
	run_burst();
	vct_stats(&after_burst);
	print_stats("after burst", &after_burst);
	const uint64_t peak = after_burst.vcpu_cache_bytes_peak;
	VCT_CHECK(peak >= (64u << 10),
		  "precondition: the burst grew the vCPU caches to only %llu bytes",
		  (unsigned long long)peak);
	if (automatic)
		return automatic_reclaim(&before, &after_burst);

	int drained = 0;
	after_idle = after_burst;
	for (int i = 0;
	     i < IDLE_TRIES && after_idle.vcpu_cache_bytes >= after_burst.vcpu_cache_bytes; i++) {
		int r = vc->reclaim(0);
		VCT_CHECK(r >= 0, "vcmalloc_reclaim(0) = %d", r);
		drained += r;
		vct_stats(&after_idle);
		if (after_idle.vcpu_cache_bytes < after_burst.vcpu_cache_bytes)
			break;
		usleep(100 * 1000);
	}
	print_stats("after idle", &after_idle);
	VCT_CHECK(drained >= 1, "vcmalloc_reclaim(0) drained no cache after the burst ended");
	VCT_CHECK(after_idle.vcpu_cache_bytes < after_burst.vcpu_cache_bytes,
		  "idle reclaim left vcpu_cache_bytes at %llu",
		  (unsigned long long)after_idle.vcpu_cache_bytes);

	int forced = vc->reclaim(1);
	vct_stats(&after_force);
	print_stats("after force", &after_force);
	VCT_CHECK(forced >= 0, "vcmalloc_reclaim(1) = %d", forced);
	VCT_CHECK(after_force.vcpu_cache_bytes * 4 <= peak,
		  "after a forced reclaim vcpu_cache_bytes is %llu, peak was %llu",
		  (unsigned long long)after_force.vcpu_cache_bytes, (unsigned long long)peak);
	VCT_CHECK(after_force.vcpu_cache_object_bytes * 8 <= peak,
		  "after a forced reclaim %llu bytes of objects are still cached",
		  (unsigned long long)after_force.vcpu_cache_object_bytes);
	VCT_CHECK(after_force.vcpu_reclaims > after_burst.vcpu_reclaims,
		  "vcpu_reclaims did not grow (%llu)",
		  (unsigned long long)after_force.vcpu_reclaims);

	objects_per_wave = OBJECTS_PER_WAVE / 4;
	run_burst();
	vct_stats(&again);
	print_stats("second burst", &again);
	VCT_CHECK(again.vcpu_caches_populated >= 1, "caches did not repopulate after reclaim");
	VCT_CHECK(again.vcpu_cache_bytes > after_force.vcpu_cache_bytes,
		  "second burst did not use the vCPU caches");
	printf("reclaim: ok (peak %llu bytes, %d idle caches drained, forced left %llu)\n",
	       (unsigned long long)peak, drained, (unsigned long long)after_force.vcpu_cache_bytes);
	return 0;
}
