/* misuse: one deliberate misuse of the malloc API per run, named by argv[1].
 *
 * Each case first does some ordinary work (so the allocator is initialised and its
 * caches are warm), prints "misuse: committing <case>" on stderr, commits the misuse,
 * and, if it survives, says so and exits with status 0. It is run through
 * expect_abort, which requires vcmalloc to report the misuse on stderr and abort().
 *
 * Double frees:
 *   double-free-small      free(p); free(p) at once (64 B block)
 *   double-free-large      the same with a 64 KiB block
 *   double-free-huge       the same with an 8 MiB block (its own mapping)
 *   double-free-huge-reused
 *                          an 8 MiB block freed, allocated again (its mapping comes
 *                          back from the cache of freed huge blocks), freed, freed
 *   double-free-delayed    free(p), then 20000 allocations and frees of other size
 *                          classes (p's class is left alone so p cannot be reused),
 *                          then free(p)
 *   double-free-thread     free(p) in a second thread, joined, then free(p) in main
 *   double-free-sized      free(p); free_sized(p, n)
 *   realloc-freed          free(p); realloc(p, 100)
 * Invalid pointers:
 *   invalid-stack          free of a local variable's address
 *   invalid-static         free of a static variable's address
 *   invalid-interior       free(malloc(64) + 8)
 *   invalid-interior-large free(malloc(256 KiB) + 4096)
 *   invalid-unaligned      free(malloc(64) + 3)
 *   invalid-past-end       free(&a[n]) where a is the last 48 B object of its span:
 *                          a whole number of objects from the span start, but past
 *                          its last object (vcmalloc's spans of 48 B objects are one
 *                          8 KiB page holding 170 objects and a 32-byte tail)
 * Sizes:
 *   size-mismatch          free_sized(malloc(64), 4096): a size larger than the block
 */
#include "vctest.h"

#include <pthread.h>
#include <string.h>

void free_sized(void *p, size_t size) __attribute__((weak));

static long static_variable = 42;

/* Ordinary work: blocks of many sizes allocated, written and freed. */
static void warm_up(void)
{
	uint64_t rng = 11;
	void *keep[256];
	for (int i = 0; i < 256; i++) {
		size_t n = vct_random_size(&rng, 1u << 20);
		keep[i] = malloc(n);
		VCT_CHECK(keep[i] != NULL, "malloc(%zu)", n);
		memset(keep[i], i, n);
	}
	for (int i = 0; i < 256; i++)
		free(keep[i]);
}

static void committing(const char *name)
{
	fprintf(stderr, "misuse: committing %s\n", name);
	fflush(stderr);
}

static void double_free(size_t n, const char *name)
{
	char *p = malloc(n);
	VCT_CHECK(p != NULL, "malloc(%zu)", n);
	memset(p, 7, n);
	free(p);
	committing(name);
	free(vct_launder(p));
}

/* Churn in classes far from p's (p is 48 bytes; the churn uses 1 KiB .. 32 KiB). */
static void double_free_delayed(void)
{
	char *p = malloc(48);
	VCT_CHECK(p != NULL, "malloc(48)");
	free(p);
	uint64_t rng = 3;
	void *live[64] = {0};
	for (int i = 0; i < 20000; i++) {
		unsigned slot = (unsigned)(vct_rand(&rng) % 64);
		free(live[slot]);
		size_t n = 1024 + (size_t)(vct_rand(&rng) % (31u << 10));
		live[slot] = malloc(n);
		VCT_CHECK(live[slot] != NULL, "malloc(%zu)", n);
		memset(live[slot], 1, 64);
	}
	for (int i = 0; i < 64; i++)
		free(live[i]);
	committing("double-free-delayed");
	free(vct_launder(p));
}

static void *free_in_thread(void *p)
{
	free(p);
	return NULL;
}

/* The second block must really be the first one's cached mapping, else this is
 * double-free-huge again. */
static void double_free_huge_reused(void)
{
	const size_t n = 8u << 20;
	char *p = malloc(n);
	VCT_CHECK(p != NULL, "malloc(8 MiB)");
	memset(p, 7, n);
	free(p);
	char *q = malloc(n);
	VCT_CHECK(q == p, "the second 8 MiB block (%p) is not the first one's (%p)", (void *)q,
		  (void *)p);
	memset(q, 8, n);
	free(q);
	committing("double-free-huge-reused");
	free(vct_launder(q));
}

static void double_free_thread(void)
{
	char *p = malloc(200);
	VCT_CHECK(p != NULL, "malloc(200)");
	memset(p, 3, 200);
	pthread_t t;
	VCT_CHECK(pthread_create(&t, NULL, free_in_thread, p) == 0, "pthread_create");
	VCT_CHECK(pthread_join(t, NULL) == 0, "pthread_join");
	committing("double-free-thread");
	free(vct_launder(p));
}

static void need_free_sized(void)
{
	VCT_CHECK(free_sized != NULL, "the allocator in use has no free_sized");
}

static void double_free_sized(void)
{
	need_free_sized();
	char *p = malloc(100);
	VCT_CHECK(p != NULL, "malloc(100)");
	free(p);
	committing("double-free-sized");
	free_sized(vct_launder(p), 100);
}

static void realloc_freed(void)
{
	char *p = malloc(40);
	VCT_CHECK(p != NULL, "malloc(40)");
	free(p);
	committing("realloc-freed");
	char *q = realloc(vct_launder(p), 100);
	fprintf(stderr, "misuse: realloc of a freed pointer returned %p\n", (void *)q);
}

static void invalid_stack(void)
{
	long local = 5;
	committing("invalid-stack");
	free(vct_launder(&local));
}

static void invalid_static(void)
{
	committing("invalid-static");
	free(vct_launder(&static_variable));
}

static void invalid_interior(size_t n, size_t offset, const char *name)
{
	char *p = malloc(n);
	VCT_CHECK(p != NULL, "malloc(%zu)", n);
	memset(p, 9, n);
	committing(name);
	free(vct_launder(p + offset));
}

/* One past the last 48 B object of a span: at page offset 170 * 48 = 8160. */
static void invalid_past_end(void)
{
	enum { N = 1024, SIZE = 48, PAGE = 8192, LAST = (PAGE / SIZE - 1) * SIZE };
	static char *blocks[N];
	char *last = NULL;
	for (int i = 0; i < N && !last; i++) {
		blocks[i] = malloc(SIZE);
		VCT_CHECK(blocks[i] != NULL, "malloc(%d)", SIZE);
		if (((uintptr_t)blocks[i] & (PAGE - 1)) == LAST)
			last = blocks[i];
	}
	VCT_CHECK(last != NULL, "no 48-byte block at page offset %d among %d", LAST, N);
	committing("invalid-past-end");
	free(vct_launder(last + SIZE));
}

static void size_mismatch(void)
{
	need_free_sized();
	char *p = malloc(64);
	VCT_CHECK(p != NULL, "malloc(64)");
	memset(p, 1, 64);
	committing("size-mismatch");
	free_sized(vct_launder(p), 4096);
}

int main(int argc, char **argv)
{
	VCT_CHECK(argc == 2, "usage: misuse <case>");
	const char *c = argv[1];
	vct_start("misuse", 60);
	warm_up();
	if (!strcmp(c, "double-free-small"))
		double_free(64, c);
	else if (!strcmp(c, "double-free-large"))
		double_free(64u << 10, c);
	else if (!strcmp(c, "double-free-huge"))
		double_free(8u << 20, c);
	else if (!strcmp(c, "double-free-huge-reused"))
		double_free_huge_reused();
	else if (!strcmp(c, "double-free-delayed"))
		double_free_delayed();
	else if (!strcmp(c, "double-free-thread"))
		double_free_thread();
	else if (!strcmp(c, "double-free-sized"))
		double_free_sized();
	else if (!strcmp(c, "realloc-freed"))
		realloc_freed();
	else if (!strcmp(c, "invalid-stack"))
		invalid_stack();
	else if (!strcmp(c, "invalid-static"))
		invalid_static();
	else if (!strcmp(c, "invalid-interior"))
		invalid_interior(64, 8, c);
	else if (!strcmp(c, "invalid-interior-large"))
		invalid_interior(256u << 10, 4096, c);
	else if (!strcmp(c, "invalid-unaligned"))
		invalid_interior(64, 3, c);
	else if (!strcmp(c, "invalid-past-end"))
		invalid_past_end();
	else if (!strcmp(c, "size-mismatch"))
		size_mismatch();
	else
		VCT_CHECK(0, "unknown case %s", c);
	fprintf(stderr, "misuse: survived %s: the misuse went unnoticed\n", c);
	return 0;
}
