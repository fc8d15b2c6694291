/* realloc_content: realloc keeps the contents, whatever classes it moves between.
 *   - grow one block from 1 byte through every size around each power of two and its
 *     quarter steps up to 8 MiB + 1 (small classes, large classes, huge mappings),
 *     checking the kept prefix after every step; then shrink it back the same way;
 *   - a random walk over the same sizes with several live blocks;
 *   - realloc(NULL, n) is malloc(n); realloc(p, 0) frees p and returns NULL (glibc's
 *     behaviour, which vcmalloc matches; with vcmalloc the freeing is seen in
 *     allocated_bytes);
 *   - a failed realloc (impossible size) returns NULL with ENOMEM and leaves the old
 *     block valid and unchanged, for small, large and huge blocks;
 *   - with vcmalloc, a large block (256 KiB - 1 MiB) just allocated grows in place
 *     over the free pages after it, and allocated_bytes follows the growth: 8 such
 *     blocks keep their address within 16 tries. A block that best fit placed in a
 *     free run too short for the growth cannot; that run is then filled, so each
 *     such run costs one try. (Counting 6 of 8 fixed tries without that failed in a
 *     2-node arm64 guest, with 0-5 kept: best fit chose the same short run again and
 *     again, as its block moved out and left it free.) */
#include "vctest.h"

#include <errno.h>
#include <malloc.h>
#include <string.h>

#define MAX_SIZES 200

static size_t sizes[MAX_SIZES];
static size_t n_sizes;

/* Sizes just around the boundaries any size-class scheme is likely to have. */
static void build_sizes(void)
{
	n_sizes = 0;
	for (size_t p = 1; p <= (8u << 20); p *= 2) {
		const size_t cand[] = {p - 1, p, p + 1, p + p / 4, p + p / 2, p + 3 * p / 4};
		for (size_t i = 0; i < sizeof(cand) / sizeof(cand[0]); i++) {
			size_t s = cand[i];
			if (s == 0 || s > (8u << 20) + 1)
				continue;
			if (n_sizes && sizes[n_sizes - 1] >= s)
				continue; /* keep the list strictly increasing */
			VCT_CHECK(n_sizes < MAX_SIZES, "size table too small");
			sizes[n_sizes++] = s;
		}
	}
	sizes[n_sizes++] = (8u << 20) + 1;
}

/* Content convention: byte i of a block is pattern(seed, i), for i < valid. */
static char *resize_checked(char *p, size_t valid, size_t new_size, uint64_t seed)
{
	char *q = realloc(p, new_size);
	VCT_CHECK(q != NULL, "realloc(%zu -> %zu) failed", valid, new_size);
	size_t keep = valid < new_size ? valid : new_size;
	size_t bad = vct_verify(q, keep, seed);
	VCT_CHECK(bad == (size_t)-1, "realloc(%zu -> %zu) lost byte %zu", valid, new_size, bad);
	VCT_CHECK(((uintptr_t)q & 15) == 0, "realloc result %p misaligned", (void *)q);
	VCT_CHECK(malloc_usable_size(q) >= new_size, "usable size below %zu", new_size);
	vct_fill(q, new_size, seed); /* the whole new block now carries the pattern */
	return q;
}

static void grow_and_shrink(void)
{
	const uint64_t seed = 0x1234;
	char *p = realloc(NULL, 1);
	VCT_CHECK(p != NULL, "realloc(NULL, 1) failed");
	vct_fill(p, 1, seed);
	size_t cur = 1;
	for (size_t i = 0; i < n_sizes; i++) {
		p = resize_checked(p, cur, sizes[i], seed);
		cur = sizes[i];
	}
	for (size_t i = n_sizes; i-- > 0;) {
		p = resize_checked(p, cur, sizes[i], seed);
		cur = sizes[i];
	}
	free(p);
}

static void random_walk(void)
{
	enum { BLOCKS = 8, STEPS = 3000 };
	char *block[BLOCKS] = {0};
	size_t len[BLOCKS] = {0};
	uint64_t rng = 99;
	for (int step = 0; step < STEPS; step++) {
		int b = (int)(vct_rand(&rng) % BLOCKS);
		/* mostly small sizes, sometimes the top of the table */
		size_t limit = (vct_rand(&rng) % 8 == 0) ? n_sizes : n_sizes * 2 / 3;
		size_t s = sizes[vct_rand(&rng) % limit];
		block[b] = resize_checked(block[b], len[b], s, 1000 + (uint64_t)b);
		len[b] = s;
	}
	for (int b = 0; b < BLOCKS; b++) {
		VCT_CHECK(vct_verify(block[b], len[b], 1000 + (uint64_t)b) == (size_t)-1,
			  "block %d damaged", b);
		free(block[b]);
	}
}

static void realloc_to_zero_frees(void)
{
	for (size_t i = 0; i < n_sizes; i += 3) {
		char *p = malloc(sizes[i]);
		VCT_CHECK(p != NULL, "malloc(%zu)", sizes[i]);
		memset(p, 1, sizes[i]);
		struct vcmalloc_stats before, after;
		if (vct_under_vcmalloc())
			vct_stats(&before);
		void *r = realloc(p, vct_launder_size(0));
		VCT_CHECK(r == NULL, "realloc(p of %zu, 0) returned %p, glibc returns NULL",
			  sizes[i], r);
		if (vct_under_vcmalloc()) {
			vct_stats(&after);
			VCT_CHECK(after.allocated_bytes + sizes[i] <= before.allocated_bytes,
				  "realloc(p of %zu, 0) did not free p: allocated %llu -> %llu",
				  sizes[i], (unsigned long long)before.allocated_bytes,
				  (unsigned long long)after.allocated_bytes);
		}
	}
}

static void failed_realloc_keeps_block(void)
{
	const size_t initial[] = {24, 3000, 200000, 8u << 20};
	const size_t impossible[] = {(size_t)PTRDIFF_MAX + 1, SIZE_MAX - 8192, SIZE_MAX};
	for (size_t i = 0; i < sizeof(initial) / sizeof(initial[0]); i++) {
		char *p = malloc(initial[i]);
		VCT_CHECK(p != NULL, "malloc(%zu)", initial[i]);
		vct_fill(p, initial[i], 77 + i);
		for (size_t k = 0; k < sizeof(impossible) / sizeof(impossible[0]); k++) {
			errno = 0;
			void *q = realloc(vct_launder(p), vct_launder_size(impossible[k]));
			int e = errno;
			VCT_CHECK(q == NULL, "realloc(%zu -> %zu) succeeded", initial[i],
				  impossible[k]);
			VCT_CHECK(e == ENOMEM, "failed realloc set errno %d, not ENOMEM", e);
			VCT_CHECK(vct_verify(p, initial[i], 77 + i) == (size_t)-1,
				  "failed realloc changed the %zu-byte block", initial[i]);
		}
		/* still a valid block: it can grow and be freed */
		p = resize_checked(p, initial[i], initial[i] * 2, 77 + i);
		free(p);
	}
}

static void large_grows_in_place(void)
{
	enum { WANTED = 8, TRIES = 16 };
	/* Earlier phases left blocks in the vCPU caches and central lists, and the
	 * background maintenance returns their spans to the page heap at times of its
	 * own: give them all back now, so that the free runs do not change under the
	 * tries. */
	const struct vct_vcmalloc *vc = vct_vcmalloc();
	vc->reclaim(1);
	vc->release_free_memory();
	char *plug[TRIES];
	int kept = 0, tries = 0, plugged = 0;
	while (kept < WANTED && tries < TRIES) {
		const size_t size = (260u << 10) + (size_t)tries * 4096, grown = size + (64u << 10);
		char *p = malloc(size);
		VCT_CHECK(p != NULL, "malloc(%zu)", size);
		vct_fill(p, size, 500 + (uint64_t)tries);
		struct vcmalloc_stats before, after;
		vct_stats(&before);
		char *q = realloc(p, grown);
		VCT_CHECK(q != NULL, "realloc(%zu -> %zu)", size, grown);
		vct_stats(&after);
		VCT_CHECK(vct_verify(q, size, 500 + (uint64_t)tries) == (size_t)-1,
			  "large realloc lost content");
		VCT_CHECK(malloc_usable_size(q) >= grown, "usable size below %zu", grown);
		if (q == p) {
			kept++;
			VCT_CHECK(after.allocated_bytes >= before.allocated_bytes + (grown - size),
				  "in-place growth by %zu not in allocated_bytes (%llu -> %llu)",
				  grown - size, (unsigned long long)before.allocated_bytes,
				  (unsigned long long)after.allocated_bytes);
		} else {
			/* p sat in a free run too short for the growth (best fit placed it
			 * there). That run is free again and would be the best fit of the
			 * next try too: fill it with a block of p's size, kept until the
			 * end, so that each such run costs one try only. */
			plug[plugged] = malloc(size);
			VCT_CHECK(plug[plugged] != NULL, "malloc(%zu)", size);
			plugged++;
		}
		free(q);
		tries++;
	}
	for (int i = 0; i < plugged; i++)
		free(plug[i]);
	VCT_CHECK(kept == WANTED, "only %d of %d large blocks grew in place", kept, tries);
}

int main(void)
{
	vct_start("realloc_content", 120);
	build_sizes();
	grow_and_shrink();
	random_walk();
	realloc_to_zero_frees();
	failed_realloc_keeps_block();
	if (vct_under_vcmalloc())
		large_grows_in_place();
	printf("realloc_content: ok (%zu sizes from 1 to %zu bytes)\n", n_sizes,
	       sizes[n_sizes - 1]);
	return 0;
}
