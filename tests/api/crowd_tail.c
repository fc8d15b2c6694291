/* crowd_tail (vcmalloc only): the last threads of a crowd give back what they used
 * when they exit, after an earlier exit of the same crowd already gave back memory.
 *
 * The exit rule (allocator/init.c, thread_exit): when a crowd of 8 or more threads
 * is down to a quarter, the exit that sees it releases free memory and caches; the
 * exit of the crowd's last thread releases again. Here the quarter is reached by 20
 * light threads (256 KiB each) leaving while 5 heavy ones (4 MiB each) still hold
 * their blocks; the heavy threads then free everything and exit one after another,
 * with the main thread only waiting and reading statistics (vcmalloc_stats does not
 * allocate). Bound, with R the resident bytes while every thread held its blocks:
 * vcmalloc's resident_bytes after the heavy threads' joins at most R / 4.
 *
 * The main thread allocates first, so that it is counted: the crowd's mark is 26 and
 * its quarter 6, reached by the last light exit (1 + 5 threads left), and 5 threads
 * stay. The quarter's exit once lowered the mark to the 6 it saw, below a crowd's,
 * so the heavy threads' exits fell under the rule of small crowds, which waits half
 * a reclaim period after a release: their 20 MiB stayed resident (bench/footprint's
 * `storm` kept 7.4 MiB instead of 2.3 in half its runs). Three rounds, each a new
 * crowd, 0.6 s apart: a quarter's release comes at most once per half reclaim
 * period (500 ms by default), so each round reaches its quarter's release. */
#include "vctest.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>

enum {
	LIGHT = 20,
	HEAVY = 5,
	LIGHT_BYTES = 256 << 10,
	HEAVY_BYTES = 4 << 20,
	MAX_BLOCKS = 8192,
	ROUNDS = 3,
};

struct worker {
	pthread_t thread;
	size_t bytes;
	uint64_t seed;
	pthread_barrier_t *allocated; /* every worker holds its blocks; main measured */
	pthread_barrier_t *release;   /* heavy workers only: main joined the light ones */
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	static __thread void *blocks[MAX_BLOCKS];
	uint64_t rng = w->seed * 0x9e3779b97f4a7c15ull + 1;
	size_t held = 0;
	int n = 0;
	while (held < w->bytes && n < MAX_BLOCKS) {
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		size_t size = 64 + (size_t)(rng >> 33) % 1985; /* 64 .. 2048 */
		blocks[n] = malloc(size);
		VCT_CHECK(blocks[n] != NULL, "malloc(%zu)", size);
		memset(blocks[n], 0x3c, size);
		held += size;
		n++;
	}
	pthread_barrier_wait(w->allocated); /* all hold their blocks */
	pthread_barrier_wait(w->allocated); /* main has read the peak */
	if (w->release)
		pthread_barrier_wait(w->release);
	for (int i = 0; i < n; i++)
		free(blocks[i]);
	return NULL;
}

static void run_round(int round)
{
	struct worker w[LIGHT + HEAVY];
	pthread_barrier_t allocated, release;
	pthread_barrier_init(&allocated, NULL, LIGHT + HEAVY + 1);
	pthread_barrier_init(&release, NULL, HEAVY + 1);
	for (int i = 0; i < LIGHT + HEAVY; i++) {
		bool heavy = i >= LIGHT;
		w[i] = (struct worker){.bytes = heavy ? HEAVY_BYTES : LIGHT_BYTES,
				       .seed = (uint64_t)(round * 100 + i + 1),
				       .allocated = &allocated,
				       .release = heavy ? &release : NULL};
		VCT_CHECK(pthread_create(&w[i].thread, NULL, worker_main, &w[i]) == 0,
			  "pthread_create");
	}
	pthread_barrier_wait(&allocated);
	struct vcmalloc_stats peak;
	vct_stats(&peak);
	pthread_barrier_wait(&allocated);
	for (int i = 0; i < LIGHT; i++)
		VCT_CHECK(pthread_join(w[i].thread, NULL) == 0, "pthread_join");
	struct vcmalloc_stats quarter;
	vct_stats(&quarter);
	pthread_barrier_wait(&release);
	for (int i = LIGHT; i < LIGHT + HEAVY; i++)
		VCT_CHECK(pthread_join(w[i].thread, NULL) == 0, "pthread_join");
	struct vcmalloc_stats after;
	vct_stats(&after);
	pthread_barrier_destroy(&allocated);
	pthread_barrier_destroy(&release);
	fprintf(stderr,
		"crowd_tail: round %d: resident %llu with every block held, %llu after the "
		"light threads, %llu after the heavy ones; caches populated %u\n",
		round, (unsigned long long)peak.resident_bytes,
		(unsigned long long)quarter.resident_bytes,
		(unsigned long long)after.resident_bytes, after.vcpu_caches_populated);
	VCT_CHECK(peak.resident_bytes >= (uint64_t)HEAVY * HEAVY_BYTES,
		  "resident %llu with every block held: the threads did not allocate?",
		  (unsigned long long)peak.resident_bytes);
	VCT_CHECK(after.resident_bytes <= peak.resident_bytes / 4,
		  "round %d: resident_bytes %llu after the crowd's last threads left (%llu "
		  "with every block held): their exits gave nothing back",
		  round, (unsigned long long)after.resident_bytes,
		  (unsigned long long)peak.resident_bytes);
}

int main(void)
{
	vct_start("crowd_tail", 60);
	VCT_CHECK(vct_under_vcmalloc(), "needs vcmalloc");
	void *mine = malloc(32); /* the main thread is counted from here on */
	VCT_CHECK(mine != NULL, "malloc(32)");
	for (int round = 1; round <= ROUNDS; round++) {
		if (round > 1)
			usleep(600 * 1000);
		run_round(round);
	}
	free(mine);
	printf("crowd_tail: ok\n");
	return 0;
}
