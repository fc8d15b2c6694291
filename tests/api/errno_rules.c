/* errno_rules: failure is reported the way POSIX and glibc report it.
 *   - impossible sizes (beyond PTRDIFF_MAX, SIZE_MAX) fail with NULL and errno ENOMEM
 *     in every allocating function, and never abort;
 *   - calloc and reallocarray detect multiplication overflow (NULL, ENOMEM);
 *   - posix_memalign returns EINVAL for an alignment that is not a power of two or
 *     not a multiple of sizeof(void *) (errno untouched), returns ENOMEM for
 *     impossible sizes, and in both cases leaves the out-pointer untouched;
 *   - aligned_alloc rejects a non-power-of-two alignment with NULL and EINVAL
 *     (vcmalloc, and glibc from 2.38; older glibc rounds the alignment up);
 *   - malloc(0) and calloc(0, n) return distinct pointers that can be freed;
 *   - free(NULL) does nothing; free never changes errno (small, large, huge blocks);
 *   - malloc_usable_size(NULL) is 0. */
#include "vctest.h"

#include <errno.h>
#include <gnu/libc-version.h>
#include <malloc.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

static const size_t impossible_sizes[] = {
    (size_t)PTRDIFF_MAX + 1, (size_t)PTRDIFF_MAX + 4096, SIZE_MAX - 4096, SIZE_MAX - 15, SIZE_MAX,
};
#define N_IMPOSSIBLE (sizeof(impossible_sizes) / sizeof(impossible_sizes[0]))

static void expect_enomem(void *p, const char *what, size_t n)
{
	int e = errno;
	VCT_CHECK(p == NULL, "%s(%zu) succeeded with %p", what, n, p);
	VCT_CHECK(e == ENOMEM, "%s(%zu): errno %d (%s), expected ENOMEM", what, n, e, strerror(e));
}

static void check_impossible_sizes(void)
{
	for (size_t i = 0; i < N_IMPOSSIBLE; i++) {
		size_t n = vct_launder_size(impossible_sizes[i]);
		errno = 0;
		expect_enomem(malloc(n), "malloc", n);
		errno = 0;
		expect_enomem(calloc(n, 1), "calloc", n);
		errno = 0;
		expect_enomem(calloc(1, n), "calloc", n);
		errno = 0;
		expect_enomem(realloc(NULL, n), "realloc(NULL)", n);
		errno = 0;
		expect_enomem(aligned_alloc(64, n), "aligned_alloc(64)", n);
		errno = 0;
		expect_enomem(memalign(4096, n), "memalign(4096)", n);
		errno = 0;
		expect_enomem(valloc(n), "valloc", n);
		errno = 0;
		expect_enomem(pvalloc(n), "pvalloc", n);
		errno = 0;
		expect_enomem(reallocarray(NULL, n, 1), "reallocarray(NULL)", n);

		void *out = &out; /* a recognisable value that must survive */
		int rc = posix_memalign(&out, 64, n);
		VCT_CHECK(rc == ENOMEM, "posix_memalign(64, %zu) = %d, expected ENOMEM", n, rc);
		VCT_CHECK(out == &out, "posix_memalign changed the out-pointer on failure");
	}
}

static void check_overflow(void)
{
	const size_t half = vct_launder_size(SIZE_MAX / 2 + 1);
	const size_t big = vct_launder_size((size_t)1 << 33);
	errno = 0;
	expect_enomem(calloc(half, 2), "calloc(SIZE_MAX/2+1, 2)", half);
	errno = 0;
	expect_enomem(calloc(big, big), "calloc(2^33, 2^33)", big);
	errno = 0;
	expect_enomem(calloc(vct_launder_size(3), SIZE_MAX / 2), "calloc(3, SIZE_MAX/2)", 3);
	errno = 0;
	expect_enomem(reallocarray(NULL, big, big), "reallocarray(NULL, 2^33, 2^33)", big);

	char *p = malloc(100);
	VCT_CHECK(p != NULL, "malloc(100)");
	vct_fill(p, 100, 7);
	errno = 0;
	expect_enomem(reallocarray(vct_launder(p), half, 2), "reallocarray(p, SIZE_MAX/2+1, 2)",
		      half);
	VCT_CHECK(vct_verify(p, 100, 7) == (size_t)-1, "reallocarray failure changed the block");
	char *q = reallocarray(p, 25, 8);
	VCT_CHECK(q != NULL, "reallocarray(p, 25, 8) failed");
	VCT_CHECK(vct_verify(q, 100, 7) == (size_t)-1, "reallocarray lost the contents");
	free(q);
}

static void check_posix_memalign_einval(void)
{
	const size_t bad[] = {0, 1, 2, 4, 3, 12, 24, 48, 96, 1000, 4097, (size_t)1 << 63 | 8};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (sizeof(void *) == 4 && bad[i] == 4)
			continue;
		void *out = &out;
		errno = 4321;
		int rc = posix_memalign(&out, vct_launder_size(bad[i]), 64);
		VCT_CHECK(rc == EINVAL, "posix_memalign(align %zu) = %d, expected EINVAL", bad[i],
			  rc);
		VCT_CHECK(out == &out, "posix_memalign(align %zu) changed the out-pointer", bad[i]);
		VCT_CHECK(errno == 4321, "posix_memalign changed errno to %d", errno);
	}
	/* Valid alignment and size 0: success with a freeable pointer or NULL. */
	void *out = &out;
	int rc = posix_memalign(&out, 64, vct_launder_size(0));
	VCT_CHECK(rc == 0, "posix_memalign(64, 0) = %d", rc);
	VCT_CHECK(out != &out, "posix_memalign(64, 0) left the out-pointer as it was");
	free(out);
}

static bool glibc_at_least(int major, int minor)
{
	int ma = 0, mi = 0;
	sscanf(gnu_get_libc_version(), "%d.%d", &ma, &mi);
	return ma > major || (ma == major && mi >= minor);
}

static void check_aligned_alloc_einval(void)
{
	if (!vct_under_vcmalloc() && !glibc_at_least(2, 38)) {
		fprintf(stderr,
			"aligned_alloc(non power of two): not checked, glibc %s rounds "
			"the alignment up\n",
			gnu_get_libc_version());
		return;
	}
	const size_t bad[] = {3, 24, 48, 96, 1000, 4097, 3u << 20};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		void *p = aligned_alloc(vct_launder_size(bad[i]), 256);
		int e = errno;
		VCT_CHECK(p == NULL, "aligned_alloc(%zu, 256) succeeded", bad[i]);
		VCT_CHECK(e == EINVAL, "aligned_alloc(%zu, 256): errno %d, expected EINVAL", bad[i],
			  e);
	}
}

static void check_zero_sizes(void)
{
	enum { N = 1000 };
	static void *zero[N];
	for (int i = 0; i < N; i++) {
		zero[i] = (i & 1) ? malloc(vct_launder_size(0)) : calloc(vct_launder_size(0), 16);
		VCT_CHECK(zero[i] != NULL, "malloc(0)/calloc(0, 16) returned NULL (call %d)", i);
		VCT_CHECK(((uintptr_t)zero[i] & 15) == 0, "malloc(0) = %p is not 16-aligned",
			  zero[i]);
	}
	/* all distinct: sort-free check through a small open-addressing set */
	enum { SLOTS = 4096 };
	static uintptr_t set[SLOTS];
	for (int i = 0; i < N; i++) {
		uintptr_t v = (uintptr_t)zero[i];
		size_t h = (size_t)((v >> 4) * 0x9e3779b97f4a7c15ull) % SLOTS;
		while (set[h]) {
			VCT_CHECK(set[h] != v, "malloc(0) returned %p twice while both were live",
				  zero[i]);
			h = (h + 1) % SLOTS;
		}
		set[h] = v;
	}
	for (int i = 0; i < N; i++)
		free(zero[i]);
}

static void check_free_keeps_errno(void)
{
	const size_t sizes[] = {0, 1, 16, 100, 1000, 5000, 70000, 300000, 2u << 20, 9u << 20};
	for (int round = 0; round < 3; round++) {
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			void *p = malloc(sizes[i]);
			VCT_CHECK(p != NULL, "malloc(%zu)", sizes[i]);
			memset(p, 3, sizes[i]);
			errno = 9876;
			free(p);
			VCT_CHECK(errno == 9876, "free of a %zu-byte block changed errno to %d",
				  sizes[i], errno);
		}
	}
	errno = 5555;
	free(NULL);
	VCT_CHECK(errno == 5555, "free(NULL) changed errno to %d", errno);
	VCT_CHECK(malloc_usable_size(NULL) == 0, "malloc_usable_size(NULL) != 0");
}

int main(void)
{
	vct_start("errno_rules", 60);
	check_impossible_sizes();
	check_overflow();
	check_posix_memalign_einval();
	check_aligned_alloc_einval();
	check_zero_sizes();
	check_free_keeps_errno();
	printf("errno_rules: ok\n");
	return 0;
}
