/* region_release (white-box, linked with the allocator's test-hook build): a drained
 * vCPU region's pages go back to the OS with no allocator lock held, and nothing
 * opens the region before they are gone.
 *
 *   1. The main thread fills its vCPU cache.
 *   2. Thread R forces a reclaim: every cache is drained and, once R has dropped
 *      every lock, each region released in turn. R is held (hook region_release)
 *      at its first release, the region marked RUNNING and its pages not released.
 *   3. Meanwhile the main thread allocates and frees 2000 blocks of 13 sizes: its
 *      slow paths must work without the region (the central lists serve them), and
 *      a RUNNING region must stay unpopulated (opening it would let the release
 *      wipe live headers). It forks: fork takes every allocator lock, so a lock
 *      held by R would hang it (the alarm fails the test). In the child, whose R
 *      is gone, the release must be due again (not RUNNING), and done after its
 *      allocations and a reclaim; its blocks must hold what it wrote.
 *   4. R goes on; after it, no release is pending, and the main thread's next slow
 *      paths open its region again.
 */
#include "internal.h"
#include "hold.h"
#include "vctest.h"

#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void at_region_release(void)
{
	vct_hold_point(1);
}

static void *reclaimer(void *arg)
{
	(void)arg;
	vct_hold_arm(1);
	vct_vcmalloc()->reclaim(1);
	return NULL;
}

/* Ids whose release is in the state `state`; *open_among gets how many of them
 * are populated. */
static unsigned count_state(uint8_t state, unsigned *open_among)
{
	unsigned n = 0;
	*open_among = 0;
	for (uint32_t idx = 0; idx < vc_g.nvcpus; idx++) {
		const struct vc_vcpu *v = &vc_g.vcpus[idx];
		if (__atomic_load_n(&v->releasing, __ATOMIC_RELAXED) != state)
			continue;
		n++;
		*open_among += __atomic_load_n(&v->populated, __ATOMIC_ACQUIRE);
	}
	return n;
}

/* 2000 blocks of 13 sizes from 16 B to 64 KiB, written, checked and freed. */
static void churn(unsigned seed)
{
	enum { N = 2000 };
	static unsigned char *blocks[N];
	for (unsigned i = 0; i < N; i++) {
		size_t n = (size_t)16 << (i % 25 / 2);
		VCT_CHECK((blocks[i] = malloc(n)) != NULL, "malloc(%zu)", n);
		memset(blocks[i], (int)(seed + i), n);
	}
	for (unsigned i = 0; i < N; i++) {
		size_t n = (size_t)16 << (i % 25 / 2);
		VCT_CHECK(blocks[i][0] == (unsigned char)(seed + i) &&
			      blocks[i][n - 1] == (unsigned char)(seed + i),
			  "block %u (%zu bytes) lost what was written in it", i, n);
		free(blocks[i]);
	}
}

int main(void)
{
	vct_start("region_release", 60);
	VCT_CHECK(vct_under_vcmalloc(), "needs vcmalloc");
	vct_hold_init();
	vc_test_hooks.region_release = at_region_release;

	/* 1. */
	churn(1);

	/* 2. */
	pthread_t r;
	VCT_CHECK(pthread_create(&r, NULL, reclaimer, NULL) == 0, "pthread_create");
	vct_hold_wait();
	unsigned open;
	VCT_CHECK(count_state(VC_RELEASE_RUNNING, &open) == 1 && open == 0,
		  "R is held inside a release: one region RUNNING and closed expected");

	/* 3. */
	churn(2);
	unsigned running = count_state(VC_RELEASE_RUNNING, &open);
	VCT_CHECK(running == 1 && open == 0,
		  "a region was opened while its release ran (%u RUNNING, %u of them open)",
		  running, open);
	pid_t pid = fork();
	VCT_CHECK(pid >= 0, "fork");
	if (pid == 0) {
		/* The held release is due again here; the child's slow paths finish it
		 * when they run as its id, a reclaim in any case. */
		unsigned o1, o2;
		if (count_state(VC_RELEASE_RUNNING, &o1) != 0) {
			fprintf(stderr, "region_release: child: a release still RUNNING\n");
			_exit(1);
		}
		churn(3);
		vct_vcmalloc()->reclaim(0);
		unsigned left = count_state(VC_RELEASE_DUE, &o2);
		if (left != 0) {
			fprintf(stderr, "region_release: child: %u releases left due\n", left);
			_exit(1);
		}
		churn(5);
		_exit(0);
	}
	int status;
	VCT_CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
	VCT_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "the child failed (status %#x)", status);

	/* 4. */
	vct_hold_release();
	VCT_CHECK(pthread_join(r, NULL) == 0, "pthread_join");
	unsigned o1, o2;
	VCT_CHECK(count_state(VC_RELEASE_RUNNING, &o1) + count_state(VC_RELEASE_DUE, &o2) == 0,
		  "releases left pending after the reclaim returned");
	churn(4);
	struct vcmalloc_stats st;
	vct_stats(&st);
	VCT_CHECK(st.vcpu_caches_populated >= 1, "no cache open again after the release");
	printf("region_release: ok\n");
	return 0;
}
