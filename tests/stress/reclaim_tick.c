/* reclaim_tick (white-box, linked with the allocator's test-hook build): the reclaim
 * tick runs once per half period however many threads find it due, and a thread
 * that finds it due never waits for a scan in progress.
 *
 * A vCPU cache is drained at the third scan that finds it unchanged since the
 * first: after two idle half periods. VCMALLOC_RECLAIM_MS is an hour, and the test
 * moves the allocator's clock itself (vc_test_hooks.clock_offset_ms), so no tick
 * comes unless the test makes it due. VCMALLOC_BACKGROUND=0: the maintenance thread
 * (a round every half decay time) would take a tick the test made due before the
 * thread meant to find it (in a 64-vCPU emulated guest the steps below take longer
 * than that: L never reached its hold point and the test hung until its alarm; on
 * the host, a 1.2 s sleep after advance_clock did the same).
 *   1. The main thread fills its cache, then scans once (vcmalloc_reclaim(0)): the
 *      cache's state is recorded.
 *   2. The clock moves on by a half period: the tick is due. Thread L enters the
 *      tick and is held (hook tick_due) right after finding it due; the main thread
 *      then runs the tick: the second scan, one idle half period seen.
 *   3. L is let go. The period is taken: L must not scan again. A second scan right
 *      away would see a second idle half period and drain the cache that has been
 *      idle for one (L stays alive until the end: the exit that leaves one thread
 *      drains every cache, init.c): the test requires vcpu_reclaims and the
 *      populated count to be unchanged.
 *   4. Control: after another half period the next tick drains the cache (so the
 *      check of step 3 can see a drain).
 *   5. Thread S is held inside a scan (hook tick_scan, reclaim lock held) while the
 *      tick is due: the main thread's tick and its malloc slow paths must return (a
 *      wait would hang until the alarm).
 */
#include "internal.h"
#include "hold.h"
#include "vctest.h"

#include <pthread.h>
#include <semaphore.h>
#include <string.h>

static uint64_t half_period;
static sem_t ready, go, ticked, leave;
enum { AT_TICK_DUE = 1, AT_TICK_SCAN = 2 }; /* hold points */

static void at_tick_due(void)
{
	vct_hold_point(AT_TICK_DUE);
}
static void at_tick_scan(void)
{
	vct_hold_point(AT_TICK_SCAN);
}

static void *late_ticker(void *arg)
{
	(void)arg;
	sem_post(&ready);
	vct_sem_wait(&go);
	vct_hold_arm(AT_TICK_DUE);
	vc_maintain();
	/* Alive until the checks are over: a thread exit that leaves the process with
	 * one thread gives every cache back (init.c), which would be a drain the checks
	 * do not expect. */
	sem_post(&ticked);
	vct_sem_wait(&leave);
	return NULL;
}

static void *scanner(void *arg)
{
	(void)arg;
	vct_hold_arm(AT_TICK_SCAN);
	vct_vcmalloc()->reclaim(0);
	return NULL;
}

static void advance_clock(void)
{
	__atomic_add_fetch(&vc_test_hooks.clock_offset_ms, half_period, __ATOMIC_RELAXED);
}

int main(void)
{
	vct_start("reclaim_tick", 60);
	VCT_CHECK(vct_under_vcmalloc(), "needs vcmalloc");
	VCT_CHECK(vc_g.opt.reclaim_ms >= 1000000, "run with VCMALLOC_RECLAIM_MS=3600000");
	half_period = vc_g.opt.reclaim_ms / 2;
	sem_init(&ready, 0, 0);
	sem_init(&go, 0, 0);
	sem_init(&ticked, 0, 0);
	sem_init(&leave, 0, 0);
	vct_hold_init();
	vc_test_hooks.tick_due = at_tick_due;
	vc_test_hooks.tick_scan = at_tick_scan;

	/* Thread creation allocates in this thread, and the new thread frees what
	 * vcmalloc's pthread_create passed it: both before the caches are watched. */
	pthread_t late;
	VCT_CHECK(pthread_create(&late, NULL, late_ticker, NULL) == 0, "pthread_create");
	vct_sem_wait(&ready);

	/* 1. A cache with objects in it, then one scan. */
	enum { N = 64 };
	void *p[N];
	for (int i = 0; i < N; i++)
		VCT_CHECK((p[i] = malloc(48)) != NULL, "malloc");
	for (int i = 0; i < N; i++)
		free(p[i]);
	vct_vcmalloc()->reclaim(0);
	struct vcmalloc_stats s0, s1, s2;
	vct_stats(&s0);
	VCT_CHECK(s0.vcpu_caches_populated >= 1, "no cache populated");

	/* 2. The tick is due; L holds just after seeing so, the main thread ticks. */
	advance_clock();
	sem_post(&go);
	vct_hold_wait();
	vc_maintain();

	/* 3. L goes on and must find the period taken. */
	vct_hold_release();
	vct_sem_wait(&ticked);
	vct_stats(&s1);
	VCT_CHECK(s1.vcpu_reclaims == s0.vcpu_reclaims &&
		      s1.vcpu_caches_populated == s0.vcpu_caches_populated,
		  "a cache idle for one half period was drained: reclaims %llu -> %llu, "
		  "populated %u -> %u (the tick ran twice)",
		  (unsigned long long)s0.vcpu_reclaims, (unsigned long long)s1.vcpu_reclaims,
		  s0.vcpu_caches_populated, s1.vcpu_caches_populated);

	/* 4. Control: the next half period drains it. */
	advance_clock();
	vc_maintain();
	vct_stats(&s2);
	VCT_CHECK(s2.vcpu_reclaims > s1.vcpu_reclaims,
		  "no drain after two idle half periods (reclaims %llu)",
		  (unsigned long long)s2.vcpu_reclaims);

	/* 5. A scan in progress holds the reclaim lock; the tick is due. */
	pthread_t scan;
	VCT_CHECK(pthread_create(&scan, NULL, scanner, NULL) == 0, "pthread_create");
	vct_hold_wait();
	advance_clock();
	vc_maintain();
	/* Slow paths of classes not used yet, each ending with the tick. */
	for (size_t n = 2000; n <= 200000; n += 2000) {
		void *q = malloc(n);
		VCT_CHECK(q != NULL, "malloc(%zu)", n);
		memset(q, 1, n);
		free(q);
	}
	vct_hold_release();
	VCT_CHECK(pthread_join(scan, NULL) == 0, "pthread_join");
	sem_post(&leave);
	VCT_CHECK(pthread_join(late, NULL) == 0, "pthread_join");

	printf("reclaim_tick: ok\n");
	return 0;
}
