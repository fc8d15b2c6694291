/* crowd_hits (vcmalloc only): threads whose mallocs and frees all hit caches that
 * other threads filled count for the crowd-exit rule.
 *
 * The process is confined to (at most) two CPUs, so that its threads run as two
 * vCPU ids (mm_cid, or the two CPUs' ids). Two warm-up threads, one pinned to each
 * CPU, fill the caches of both ids with 64-byte objects and block until the end
 * (their exits would leave one thread, which gives the caches back by itself:
 * allocator/init.c). Then a crowd of CROWD threads does malloc(64) / free pairs only
 * (hits in the warm caches: no slow path), waits until all are done, and exits. The
 * rule must see a crowd of CROWD + 3 threads of which three are left, and give the
 * caches back: cached object bytes after the joins at most a quarter of what they
 * were. When the crowd's threads are not counted, nothing happens and the caches
 * keep everything. In fallback mode, or where a
 * thread's first operation misses anyway (vcmalloc's own rseq registration), every
 * thread takes slow paths and the check holds either way. */
#include "vctest.h"

#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <string.h>

enum { CROWD = 16, WARM_BLOCKS = 2000, PAIRS = 200 };

static cpu_set_t pinned[2];
static int ncpus;
static sem_t warmed_up, leave;

static void *warm(void *arg)
{
	int i = (int)(uintptr_t)arg;
	VCT_CHECK(pthread_setaffinity_np(pthread_self(), sizeof pinned[i], &pinned[i]) == 0,
		  "pthread_setaffinity_np");
	static __thread void *blocks[WARM_BLOCKS];
	for (int k = 0; k < WARM_BLOCKS; k++)
		VCT_CHECK((blocks[k] = malloc(64)) != NULL, "malloc");
	for (int k = 0; k < WARM_BLOCKS; k++)
		free(blocks[k]);
	sem_post(&warmed_up);
	vct_sem_wait(&leave);
	return NULL;
}

static pthread_barrier_t done;

static void *crowd(void *arg)
{
	(void)arg;
	for (int k = 0; k < PAIRS; k++) {
		void *p = malloc(64);
		VCT_CHECK(p != NULL, "malloc");
		memset(p, k, 64);
		free(p);
	}
	pthread_barrier_wait(&done);
	return NULL;
}

int main(void)
{
	vct_start("crowd_hits", 60);
	VCT_CHECK(vct_under_vcmalloc(), "needs vcmalloc");
	cpu_set_t all;
	VCT_CHECK(sched_getaffinity(0, sizeof all, &all) == 0, "sched_getaffinity");
	cpu_set_t two;
	CPU_ZERO(&two);
	for (int c = 0; c < CPU_SETSIZE && ncpus < 2; c++)
		if (CPU_ISSET(c, &all)) {
			CPU_ZERO(&pinned[ncpus]);
			CPU_SET(c, &pinned[ncpus]);
			CPU_SET(c, &two);
			ncpus++;
		}
	VCT_CHECK(sched_setaffinity(0, sizeof two, &two) == 0, "sched_setaffinity");

	pthread_t t[CROWD], w[2];
	sem_init(&warmed_up, 0, 0);
	sem_init(&leave, 0, 0);
	for (int i = 0; i < ncpus; i++)
		VCT_CHECK(pthread_create(&w[i], NULL, warm, (void *)(uintptr_t)i) == 0,
			  "pthread_create");
	for (int i = 0; i < ncpus; i++)
		vct_sem_wait(&warmed_up);
	struct vcmalloc_stats warmed, after;
	vct_stats(&warmed);
	VCT_CHECK(warmed.vcpu_cache_object_bytes >= 64u * 256,
		  "the warm-up left %llu bytes in the caches",
		  (unsigned long long)warmed.vcpu_cache_object_bytes);

	pthread_barrier_init(&done, NULL, CROWD);
	for (int i = 0; i < CROWD; i++)
		VCT_CHECK(pthread_create(&t[i], NULL, crowd, NULL) == 0, "pthread_create");
	for (int i = 0; i < CROWD; i++)
		VCT_CHECK(pthread_join(t[i], NULL) == 0, "pthread_join");
	vct_stats(&after);
	fprintf(stderr,
		"crowd_hits: cached object bytes %llu after the warm-up, %llu after the crowd; "
		"caches populated %u, reclaims %llu\n",
		(unsigned long long)warmed.vcpu_cache_object_bytes,
		(unsigned long long)after.vcpu_cache_object_bytes, after.vcpu_caches_populated,
		(unsigned long long)after.vcpu_reclaims);
	VCT_CHECK(after.vcpu_cache_object_bytes <= warmed.vcpu_cache_object_bytes / 4,
		  "the crowd of %d threads left and the caches kept %llu of %llu bytes", CROWD,
		  (unsigned long long)after.vcpu_cache_object_bytes,
		  (unsigned long long)warmed.vcpu_cache_object_bytes);
	for (int i = 0; i < ncpus; i++)
		sem_post(&leave);
	for (int i = 0; i < ncpus; i++)
		VCT_CHECK(pthread_join(w[i], NULL) == 0, "pthread_join");
	printf("crowd_hits: ok\n");
	return 0;
}
