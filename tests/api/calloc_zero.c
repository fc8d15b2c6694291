/* calloc_zero: calloc returns zeroed memory, also when the block is recycled.
 * For every size (1 byte to 4 MiB), blocks are allocated, dirtied over their whole
 * usable size, freed, then the same sizes are calloc'ed again (so they come back from
 * the caches that just received the dirty blocks) and the n requested bytes are
 * checked to be zero (C promises those; the bytes between n and malloc_usable_size
 * are the program's to use, but calloc need not clear them). The same is done with
 * realloc'ed and aligned blocks as the dirty source, in the main thread and in a second thread
 * (whose caches are separate), and with blocks dirtied by one thread and recycled by calloc in
 * another. */
#include "vctest.h"

#include <malloc.h>
#include <pthread.h>
#include <string.h>

enum { PER_SIZE = 64 };

static size_t first_nonzero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return i;
	return (size_t)-1;
}

static void *blocks[PER_SIZE];
static int n_blocks; /* blocks[0 .. n_blocks) are in use */

/* Fewer blocks for large sizes: the point is recycling, not volume. */
static int blocks_for(size_t n)
{
	return n > (64u << 10) ? 4 : PER_SIZE;
}

static void dirty_blocks(size_t n, int how)
{
	n_blocks = blocks_for(n);
	for (int i = 0; i < n_blocks; i++) {
		void *p;
		switch (how) {
		case 0:
			p = malloc(n);
			break;
		case 1: /* grown by realloc: the dirty block comes from a resize */
			p = realloc(malloc(n / 2 + 1), n);
			break;
		default:
			p = aligned_alloc(64, n);
			break;
		}
		VCT_CHECK(p != NULL, "allocation of %zu failed", n);
		memset(p, 0xa5, malloc_usable_size(p));
		blocks[i] = p;
	}
}

static void free_blocks(void)
{
	for (int i = 0; i < n_blocks; i++)
		free(blocks[i]);
}

static void calloc_and_check(size_t n)
{
	n_blocks = blocks_for(n);
	for (int i = 0; i < n_blocks; i++) {
		/* split n into count x size in two ways */
		unsigned char *p = (i & 1) ? calloc(n, 1) : calloc(1, n);
		VCT_CHECK(p != NULL, "calloc(%zu) failed", n);
		VCT_CHECK(malloc_usable_size(p) >= n, "calloc(%zu): usable size %zu", n,
			  malloc_usable_size(p));
		size_t bad = first_nonzero(p, n);
		VCT_CHECK(bad == (size_t)-1, "calloc(%zu) byte %zu is 0x%02x", n, bad, p[bad]);
		blocks[i] = p;
	}
}

static size_t next_size(size_t n)
{
	return n < 64 ? n + 1 : n < 4096 ? n + n / 8 + 1 : n * 2 + 1;
}

static void *one_thread_cycle(void *arg)
{
	(void)arg;
	for (int how = 0; how < 3; how++) {
		for (size_t n = 1; n <= (4u << 20); n = next_size(n)) {
			dirty_blocks(n, how);
			free_blocks();
			calloc_and_check(n);
			free_blocks();
		}
	}
	return NULL;
}

/* Dirty in one thread, free there, calloc in the main thread (and back). */
static size_t handoff_size;
static void *dirty_then_free_thread(void *arg)
{
	(void)arg;
	dirty_blocks(handoff_size, 0);
	free_blocks();
	return NULL;
}

int main(void)
{
	vct_start("calloc_zero", 120);
	one_thread_cycle(NULL);

	pthread_t t;
	VCT_CHECK(pthread_create(&t, NULL, one_thread_cycle, NULL) == 0, "pthread_create");
	VCT_CHECK(pthread_join(t, NULL) == 0, "pthread_join");

	for (size_t n = 1; n <= (1u << 20); n = next_size(n)) {
		handoff_size = n;
		VCT_CHECK(pthread_create(&t, NULL, dirty_then_free_thread, NULL) == 0, "create");
		VCT_CHECK(pthread_join(t, NULL) == 0, "join");
		calloc_and_check(n);
		free_blocks();
	}
	printf("calloc_zero: ok\n");
	return 0;
}
