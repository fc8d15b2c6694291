/* alignment: every pointer returned is aligned as promised, and the whole usable
 * block can be written.
 *   - malloc, calloc, realloc: 16 bytes (alignof(max_align_t) on x86-64) for every
 *     size from 0 to 4 KiB and for sizes up to 8 MiB;
 *   - posix_memalign, aligned_alloc, memalign: the requested alignment, for every
 *     power of two from sizeof(void *) up to 4 MiB, with sizes around the alignment;
 *   - valloc, pvalloc: the page size (pvalloc's usable size is whole pages).
 * Blocks are kept alive in groups and freed in a scrambled order so that alignment
 * holds for blocks carved next to each other, not just for the first of a span. */
#include "vctest.h"

#include <malloc.h>
#include <stdalign.h>
#include <string.h>
#include <unistd.h>

#define MAX_LIVE 256

static void *live[MAX_LIVE];
static size_t live_count;
static uint64_t rng = 12345;

static void keep(void *p)
{
	if (live_count == MAX_LIVE) {
		/* free in a scrambled order */
		for (size_t i = 0; i < MAX_LIVE; i++) {
			size_t j = i + (size_t)(vct_rand(&rng) % (MAX_LIVE - i));
			void *t = live[i];
			live[i] = live[j];
			live[j] = t;
			free(live[i]);
		}
		live_count = 0;
	}
	live[live_count++] = p;
}

static void check_block(void *p, size_t size, size_t align, const char *what)
{
	VCT_CHECK(p != NULL, "%s(size %zu, align %zu) returned NULL", what, size, align);
	VCT_CHECK(((uintptr_t)p & (align - 1)) == 0, "%s(size %zu) = %p is not %zu-aligned", what,
		  size, p, align);
	size_t usable = malloc_usable_size(p);
	VCT_CHECK(usable >= size, "%s(size %zu): usable size %zu is smaller", what, size, usable);
	memset(p, 0xab, usable);
	if (usable > (256u << 10))
		free(p); /* keeps the resident size of the test small */
	else
		keep(p);
}

static void check_malloc_family(void)
{
	const size_t a = alignof(max_align_t);
	VCT_CHECK(a == 16, "this test assumes 16-byte max_align_t, found %zu", a);
	for (size_t n = 0; n <= 4096; n++)
		check_block(malloc(n), n, a, "malloc");
	for (size_t n = 4096; n <= (8u << 20); n = n * 5 / 4 + 7)
		check_block(malloc(n), n, a, "malloc");
	for (size_t n = 1; n <= (1u << 20); n = n * 3 + 1)
		check_block(calloc(n, 1), n, a, "calloc");
	void *p = NULL;
	for (size_t n = 1; n <= (8u << 20); n = n * 2 + 3) {
		p = realloc(p, n);
		VCT_CHECK(p != NULL, "realloc(%zu) failed", n);
		VCT_CHECK(((uintptr_t)p & (a - 1)) == 0, "realloc(%zu) = %p misaligned", n, p);
		memset(p, 0x5a, n);
	}
	free(p);
}

static void check_aligned_family(void)
{
	for (size_t align = sizeof(void *); align <= (4u << 20); align *= 2) {
		const size_t sizes[] = {1,     align / 2 + 1, align - 1,
					align, align + 1,     3 * align + 5};
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			size_t n = sizes[i];
			void *p = (void *)1; /* overwritten on success */
			int rc = posix_memalign(&p, align, n);
			VCT_CHECK(rc == 0, "posix_memalign(%zu, %zu) = %d", align, n, rc);
			check_block(p, n, align, "posix_memalign");

			check_block(memalign(align, n), n, align, "memalign");

			/* C17: any size is allowed; the result is aligned all the same. */
			check_block(aligned_alloc(align, n), n, align, "aligned_alloc");
		}
	}
	/* Many small over-aligned blocks in a row (they share spans or pages). */
	for (int round = 0; round < 4; round++)
		for (size_t align = 32; align <= 4096; align *= 2)
			for (int k = 0; k < 40; k++)
				check_block(aligned_alloc(align, 24 + (size_t)k * 8),
					    24 + (size_t)k * 8, align, "aligned_alloc");
}

static void check_page_family(void)
{
	const size_t page = (size_t)sysconf(_SC_PAGESIZE);
	for (size_t n = 1; n <= (2u << 20); n = n * 3 + 1) {
		check_block(valloc(n), n, page, "valloc");
		void *p = pvalloc(n);
		size_t rounded = (n + page - 1) / page * page;
		check_block(p, rounded, page, "pvalloc");
	}
	/* pvalloc(0): a page-aligned block that can be freed */
	void *p = pvalloc(vct_launder_size(0));
	check_block(p, 0, page, "pvalloc");
}

int main(void)
{
	vct_start("alignment", 120);
	check_malloc_family();
	check_aligned_family();
	check_page_family();
	while (live_count)
		free(live[--live_count]);
	printf("alignment: ok\n");
	return 0;
}
