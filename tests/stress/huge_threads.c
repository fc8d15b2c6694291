/* huge_threads: threads allocate, fill, check and free huge blocks (1-24 MiB) while
 * others do the same, half the frees in another thread (blocks pass through a
 * shared table), with calloc, aligned_alloc and realloc mixed in. Every block
 * carries a pattern of (owner seed, page) in three words of each 4 KiB page, checked
 * before it is freed; every calloc block must read zero at those words, which is
 * where earlier owners of a reused mapping wrote. Fails when a block is damaged
 * (a mapping handed out twice, or cached while live) or a calloc block is not zero.
 * Under vcmalloc the final allocated_bytes must be back at its start. */
#include "vctest.h"

#include <pthread.h>
#include <string.h>

#define MIB ((size_t)1 << 20)
enum { THREADS = 4, ROUNDS = 150, TABLE = 8 };

struct block {
	uint64_t *p;
	size_t n;
	uint64_t seed;
};

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct block table[TABLE];

static uint64_t word_of(uint64_t seed, size_t page, unsigned k)
{
	return (seed * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)page << 2) ^ k ^ 0x5555;
}

/* The words of page i: at its start, middle and end (8-byte units). */
static size_t at(size_t page, unsigned k)
{
	return page * 512 + (k == 0 ? 0 : k == 1 ? 256 : 511);
}

static void fill(struct block *b)
{
	size_t pages = b->n / 4096;
	for (size_t i = 0; i < pages; i++)
		for (unsigned k = 0; k < 3; k++)
			b->p[at(i, k)] = word_of(b->seed, i, k);
}

static void check(const struct block *b, const char *what)
{
	size_t pages = b->n / 4096;
	for (size_t i = 0; i < pages; i++)
		for (unsigned k = 0; k < 3; k++)
			VCT_CHECK(b->p[at(i, k)] == word_of(b->seed, i, k),
				  "%s block %p (%zu bytes): page %zu word %u damaged", what,
				  (void *)b->p, b->n, i, k);
}

static void check_zero(const struct block *b)
{
	size_t pages = b->n / 4096;
	for (size_t i = 0; i < pages; i++)
		for (unsigned k = 0; k < 3; k++)
			VCT_CHECK(b->p[at(i, k)] == 0, "calloc block %p (%zu bytes): page %zu "
				  "word %u is 0x%llx", (void *)b->p, b->n, i, k,
				  (unsigned long long)b->p[at(i, k)]);
}

static void *worker(void *arg)
{
	uint64_t rng = 1000 + (uintptr_t)arg;
	for (int r = 0; r < ROUNDS; r++) {
		struct block b;
		b.n = (1 + (size_t)(vct_rand(&rng) % 24)) * MIB + 4096 * (vct_rand(&rng) % 8);
		b.seed = vct_rand(&rng);
		unsigned kind = (unsigned)(vct_rand(&rng) % 4);
		if (kind == 0) {
			b.p = calloc(1, b.n);
			VCT_CHECK(b.p != NULL, "calloc(%zu)", b.n);
			check_zero(&b);
		} else if (kind == 1) {
			b.p = aligned_alloc(2 * MIB, b.n);
			VCT_CHECK(b.p != NULL && ((uintptr_t)b.p & (2 * MIB - 1)) == 0,
				  "aligned_alloc(2 MiB, %zu)", b.n);
		} else {
			b.p = malloc(b.n);
			VCT_CHECK(b.p != NULL, "malloc(%zu)", b.n);
		}
		fill(&b);
		if (kind == 3) {
			size_t m = (1 + (size_t)(vct_rand(&rng) % 24)) * MIB;
			uint64_t *q = realloc(b.p, m);
			VCT_CHECK(q != NULL, "realloc(%zu)", m);
			b.p = q;
			if (m < b.n)
				b.n = m;
			check(&b, "realloced");
			b.n = m;
			fill(&b);
		}
		/* Swap with the table: free someone else's block (or our own). */
		pthread_mutex_lock(&table_lock);
		unsigned slot = (unsigned)(vct_rand(&rng) % TABLE);
		struct block old = table[slot];
		table[slot] = b;
		pthread_mutex_unlock(&table_lock);
		if (old.p) {
			check(&old, "exchanged");
			free(old.p);
		}
	}
	return NULL;
}

int main(void)
{
	vct_start("huge_threads", 240);
	struct vcmalloc_stats s0, s1;
	if (vct_under_vcmalloc())
		vct_stats(&s0);
	pthread_t t[THREADS];
	for (uintptr_t i = 0; i < THREADS; i++)
		VCT_CHECK(pthread_create(&t[i], NULL, worker, (void *)i) == 0, "pthread_create");
	for (int i = 0; i < THREADS; i++)
		VCT_CHECK(pthread_join(t[i], NULL) == 0, "pthread_join");
	for (int i = 0; i < TABLE; i++) {
		if (table[i].p) {
			check(&table[i], "left");
			free(table[i].p);
		}
	}
	if (vct_under_vcmalloc()) {
		vct_stats(&s1);
		VCT_CHECK(s1.allocated_bytes <= s0.allocated_bytes + MIB,
			  "allocated_bytes %llu at the end, %llu at the start",
			  (unsigned long long)s1.allocated_bytes,
			  (unsigned long long)s0.allocated_bytes);
	}
	printf("huge_threads: ok\n");
	return 0;
}
