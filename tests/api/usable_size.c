/* usable_size: malloc_usable_size(p) is at least the requested size, and all of it
 * belongs to p alone. Thousands of live blocks of every size class (and aligned ones)
 * are filled over their whole usable size, each with its own pattern; then every
 * block is checked. A usable size that reaches into a neighbour (or into allocator
 * metadata that is then read back) shows up as a damaged pattern or a crash. The
 * usable size must also stay the same for the life of the block. */
#include "vctest.h"

#include <malloc.h>
#include <string.h>

enum { BLOCKS = 6000, ROUNDS = 3 };

struct block {
	char *p;
	size_t requested;
	size_t usable;
};

static struct block blocks[BLOCKS];

int main(void)
{
	vct_start("usable_size", 60);
	uint64_t rng = 4242;
	for (int round = 0; round < ROUNDS; round++) {
		for (int i = 0; i < BLOCKS; i++) {
			size_t n = vct_random_size(&rng, 1u << 20);
			char *p;
			if (i % 7 == 0) {
				size_t align = (size_t)64 << (vct_rand(&rng) % 7);
				p = aligned_alloc(align, n);
			} else {
				p = malloc(n);
			}
			VCT_CHECK(p != NULL, "allocation of %zu bytes failed", n);
			size_t u = malloc_usable_size(p);
			VCT_CHECK(u >= n, "malloc_usable_size %zu < requested %zu", u, n);
			blocks[i] = (struct block){p, n, u};
			vct_fill(p, u, (uint64_t)(uintptr_t)p);
		}
		for (int i = 0; i < BLOCKS; i++) {
			struct block *b = &blocks[i];
			size_t bad = vct_verify(b->p, b->usable, (uint64_t)(uintptr_t)b->p);
			VCT_CHECK(bad == (size_t)-1,
				  "block %p (requested %zu, usable %zu): byte %zu overwritten by a "
				  "neighbour",
				  (void *)b->p, b->requested, b->usable, bad);
			VCT_CHECK(malloc_usable_size(b->p) == b->usable,
				  "usable size of %p changed from %zu to %zu", (void *)b->p,
				  b->usable, malloc_usable_size(b->p));
		}
		/* free them all: the next round runs on recycled memory */
		for (int i = 0; i < BLOCKS; i++)
			free(blocks[i].p);
	}
	printf("usable_size: ok\n");
	return 0;
}
