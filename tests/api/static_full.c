/* static_full: libvcmalloc.a in a fully static executable (-static).
 *   - malloc is vcmalloc's (vcmalloc_stats answers, and counts a live block);
 *   - 8 threads are created, allocate, free each other's blocks and are joined: the
 *     archive must not replace pthread_create with one that needs a dynamic linker.
 * Self-contained (no vctest: that library uses dlsym). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vcmalloc.h"

enum { THREADS = 8, BLOCKS = 1000 };

static void *blocks[THREADS][BLOCKS];

static void fail(const char *what, long v)
{
	fprintf(stderr, "static_full: FAIL %s (%ld)\n", what, v);
	exit(1);
}

static void *worker(void *arg)
{
	long me = (long)arg;
	for (int i = 0; i < BLOCKS; i++) {
		size_t n = 16 + (size_t)((i * 37 + me) % 2000);
		blocks[me][i] = malloc(n);
		if (!blocks[me][i])
			fail("malloc in a thread", (long)n);
		memset(blocks[me][i], (int)me, n);
	}
	return (void *)(me + 100);
}

int main(void)
{
	struct vcmalloc_stats before, after;
	if (vcmalloc_stats(&before) != 0)
		fail("vcmalloc_stats", -1);
	void *live = malloc(100000);
	if (!live || vcmalloc_stats(&after) != 0)
		fail("malloc", 0);
	if (after.allocated_bytes < before.allocated_bytes + 100000)
		fail("allocated_bytes did not count the block", (long)after.allocated_bytes);
	free(live);
	pthread_t t[THREADS];
	for (long i = 0; i < THREADS; i++) {
		int r = pthread_create(&t[i], NULL, worker, (void *)i);
		if (r != 0)
			fail("pthread_create", r);
	}
	for (long i = 0; i < THREADS; i++) {
		void *ret;
		int r = pthread_join(t[i], &ret);
		if (r != 0 || ret != (void *)(i + 100))
			fail("pthread_join", r);
	}
	/* free every block from the main thread: remote frees for all of them */
	for (int i = 0; i < THREADS; i++)
		for (int k = 0; k < BLOCKS; k++)
			free(blocks[i][k]);
	printf("static_full: ok (%d threads, %d blocks each)\n", THREADS, BLOCKS);
	return 0;
}
