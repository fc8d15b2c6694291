/* sized_free: the C23 sized deallocation functions.
 *   free_sized(p, n)               for p from malloc/calloc/realloc(n)
 *   free_aligned_sized(p, a, n)    for p from aligned_alloc(a, n)
 * are accepted for every size class, release the block (allocated_bytes falls by at
 * least n), accept NULL, and leave errno alone. glibc 2.36 has neither function, so
 * they are declared weak here and the test needs an allocator that defines them (it
 * is registered for vcmalloc only). */
#include "vctest.h"

#include <errno.h>
#include <string.h>

void free_sized(void *p, size_t size) __attribute__((weak));
void free_aligned_sized(void *p, size_t alignment, size_t size) __attribute__((weak));

static void check_released(const struct vcmalloc_stats *before, size_t n, const char *what)
{
	struct vcmalloc_stats after;
	vct_stats(&after);
	VCT_CHECK(after.allocated_bytes + n <= before->allocated_bytes,
		  "%s(%zu) did not release the block: allocated %llu -> %llu", what, n,
		  (unsigned long long)before->allocated_bytes,
		  (unsigned long long)after.allocated_bytes);
}

int main(void)
{
	vct_start("sized_free", 60);
	VCT_CHECK(free_sized != NULL && free_aligned_sized != NULL,
		  "free_sized / free_aligned_sized are not provided by the allocator in use");
	const bool stats = vct_under_vcmalloc();
	struct vcmalloc_stats before;

	for (size_t n = 1; n <= (9u << 20); n = n < 512 ? n + 7 : n * 3 / 2) {
		for (int how = 0; how < 3; how++) {
			char *p = how == 0   ? malloc(n)
				  : how == 1 ? calloc(n, 1)
					     : realloc(malloc(n / 3 + 1), n);
			VCT_CHECK(p != NULL, "allocation of %zu failed", n);
			memset(p, 0x11, n);
			if (stats)
				vct_stats(&before);
			errno = 777;
			free_sized(p, n);
			VCT_CHECK(errno == 777, "free_sized changed errno to %d", errno);
			if (stats)
				check_released(&before, n, "free_sized");
		}
		for (size_t align = 16; align <= (1u << 20); align *= 4) {
			char *p = aligned_alloc(align, n);
			VCT_CHECK(p != NULL, "aligned_alloc(%zu, %zu) failed", align, n);
			memset(p, 0x22, n);
			if (stats)
				vct_stats(&before);
			errno = 778;
			free_aligned_sized(p, align, n);
			VCT_CHECK(errno == 778, "free_aligned_sized changed errno to %d", errno);
			if (stats)
				check_released(&before, n, "free_aligned_sized");
		}
	}
	free_sized(NULL, 0);
	free_sized(NULL, 100);
	free_aligned_sized(NULL, 64, 0);
	printf("sized_free: ok\n");
	return 0;
}
