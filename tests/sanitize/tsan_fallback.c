/* tsan_fallback: vcmalloc's fallback mode under ThreadSanitizer.
 *
 * TSan owns the process's malloc, so vcmalloc is built here as a second heap: its
 * sources compiled with -fsanitize=thread and the exported names renamed
 * (malloc -> tsvc_malloc, ...; see meson.build). Only the fallback mode is
 * meaningful: in the rseq modes objects pass between threads through critical
 * sections in inline assembly, which TSan cannot see (README.md).
 *
 * THREADS threads allocate, fill, check and free blocks of 16 B - 64 KiB, pass
 * blocks to each other through an exchange table (atomic exchange: the hand-off is
 * visible to TSan), realloc some, and one thread in four calls the reclaim entry
 * points now and then, so shards are drained while others use them. Any data race
 * TSan sees inside the allocator fails the test (TSAN_OPTIONS exitcode, set by
 * meson, with the suppressions of tsan.supp: lockless readers of heuristics and
 * statistics, listed and justified there). Contents are checked as in the races
 * suite, so a block handed out twice fails even without TSan. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vcmalloc.h"

void *tsvc_malloc(size_t n);
void *tsvc_calloc(size_t n, size_t size);
void *tsvc_realloc(void *p, size_t n);
void tsvc_free(void *p);
size_t tsvc_malloc_usable_size(void *p);

enum { THREADS = 4, OPS = 20000, SLOTS = 32, TABLE = 256 };

static void *_Atomic table[TABLE];

static uint64_t next_random(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void fail(const char *what, const void *p)
{
	fprintf(stderr, "FAIL tsan_fallback: %s (block %p)\n", what, p);
	exit(1);
}

/* Block layout: 8 bytes of size, then bytes (uint8_t)(size + i). */
static void *make(uint64_t *rng)
{
	size_t n = 16 + (size_t)(next_random(rng) % (1u << (4 + next_random(rng) % 13)));
	unsigned char *p = next_random(rng) % 8 ? tsvc_malloc(n) : tsvc_calloc(1, n);
	if (!p)
		fail("allocation returned NULL", NULL);
	if (tsvc_malloc_usable_size(p) < n)
		fail("usable size below the request", p);
	memcpy(p, &n, sizeof(n));
	for (size_t i = sizeof(n); i < n; i++)
		p[i] = (unsigned char)(n + i);
	return p;
}

static void check(const unsigned char *p)
{
	size_t n;
	memcpy(&n, p, sizeof(n));
	for (size_t i = sizeof(n); i < n; i++)
		if (p[i] != (unsigned char)(n + i))
			fail("block damaged", p);
}

static void release(void *p)
{
	check(p);
	tsvc_free(p);
}

static void *worker(void *arg)
{
	uint64_t rng = 0x75a0ull + (uintptr_t)arg;
	void *mine[SLOTS] = {0};
	for (int op = 0; op < OPS; op++) {
		void **s = &mine[next_random(&rng) % SLOTS];
		unsigned what = (unsigned)(next_random(&rng) % 100);
		if (!*s) {
			*s = make(&rng);
		} else if (what < 30) {
			void *old = atomic_exchange(&table[next_random(&rng) % TABLE], *s);
			*s = NULL;
			if (old)
				release(old);
		} else if (what < 40) {
			check(*s);
			size_t n;
			memcpy(&n, *s, sizeof(n));
			unsigned char *q = tsvc_realloc(*s, n + 1 + next_random(&rng) % 4096);
			if (!q)
				fail("realloc returned NULL", *s);
			check(q); /* the old size and contents are kept */
			*s = q;
		} else {
			release(*s);
			*s = NULL;
		}
		if ((uintptr_t)arg == 0 && op % 2000 == 1999) {
			vcmalloc_reclaim(op % 4000 == 3999);
			vcmalloc_release_free_memory();
		}
	}
	for (int i = 0; i < SLOTS; i++)
		if (mine[i])
			release(mine[i]);
	return NULL;
}

int main(void)
{
	pthread_t t[THREADS];
	for (uintptr_t i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)i) != 0)
			fail("pthread_create", NULL);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	int left = 0;
	for (int i = 0; i < TABLE; i++) {
		void *p = atomic_exchange(&table[i], NULL);
		if (p) {
			release(p);
			left++;
		}
	}
	struct vcmalloc_stats s;
	memset(&s, 0, sizeof(s));
	vcmalloc_stats(&s);
	if (s.index != VCMALLOC_INDEX_FALLBACK)
		fail("vcmalloc is not in fallback mode (set VCMALLOC_INDEX=fallback)", NULL);
	printf("tsan_fallback: ok (%d threads x %d operations, %d table blocks at exit, "
	       "%llu reclaims, allocated_bytes %llu at the end)\n",
	       THREADS, OPS, left, (unsigned long long)s.vcpu_reclaims,
	       (unsigned long long)s.allocated_bytes);
	return 0;
}
