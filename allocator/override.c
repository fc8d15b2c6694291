/* allocator/override.c - the exported malloc API. Every entry point is a thin
 * wrapper over alloc.c (malloc and free are aliases of the hit paths, below), so
 * shared, static and preloaded builds are one implementation. Argument rules follow
 * C17/POSIX and glibc where they differ. */
#include "alloc_fast.h"

#include <errno.h>

#define VC_ALIAS_ATTR VC_EXPORT __attribute__((used))

/* malloc and free are aliases of vc_malloc and vc_free, which carry the hit paths
 * themselves (alloc_fast.h): a program's call lands there without a jump through a
 * wrapper. */
void *vc_malloc(size_t n)
{
	return vc_malloc_inline(n);
}
VC_ALIAS_ATTR void *malloc(size_t n) __attribute__((alias("vc_malloc")));

void vc_free(void *p)
{
	vc_free_inline(p, "free");
}
VC_ALIAS_ATTR void free(void *p) __attribute__((alias("vc_free")));

VC_ALIAS_ATTR void cfree(void *p)
{
	vc_free(p);
}

VC_ALIAS_ATTR void *calloc(size_t n, size_t size)
{
	return vc_calloc(n, size);
}

VC_ALIAS_ATTR void *realloc(void *p, size_t n)
{
	return vc_realloc(p, n);
}

VC_ALIAS_ATTR void *reallocarray(void *p, size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return vc_realloc(p, total);
}

static inline bool power_of_two(size_t a)
{
	return a && !(a & (a - 1));
}

VC_ALIAS_ATTR int posix_memalign(void **out, size_t align, size_t n)
{
	if (!power_of_two(align) || align % sizeof(void *) != 0)
		return EINVAL;
	int saved = errno;
	void *p = vc_memalign(align, n);
	if (!p) {
		errno = saved;
		return ENOMEM;
	}
	*out = p;
	return 0;
}

VC_ALIAS_ATTR void *aligned_alloc(size_t align, size_t n)
{
	if (!power_of_two(align)) {
		errno = EINVAL;
		return NULL;
	}
	return vc_memalign(align, n);
}

VC_ALIAS_ATTR void *memalign(size_t align, size_t n)
{
	/* glibc rounds a non-power-of-two alignment up to the next power of two. */
	if (!power_of_two(align)) {
		if (align > ((size_t)1 << 62)) {
			errno = EINVAL;
			return NULL;
		}
		size_t a = 1;
		while (a < align)
			a <<= 1;
		align = a;
	}
	return vc_memalign(align, n);
}

VC_ALIAS_ATTR void *valloc(size_t n)
{
	return vc_memalign(VC_OS_PAGE, n);
}

VC_ALIAS_ATTR void *pvalloc(size_t n)
{
	size_t rounded = vc_page_round(n);
	if (rounded < n) {
		errno = ENOMEM;
		return NULL;
	}
	return vc_memalign(VC_OS_PAGE, rounded ? rounded : VC_OS_PAGE);
}

VC_ALIAS_ATTR size_t malloc_usable_size(void *p)
{
	return vc_usable_size(p);
}

VC_ALIAS_ATTR void free_sized(void *p, size_t n)
{
	vc_free_sized_inline(p, n);
}

VC_ALIAS_ATTR void free_aligned_sized(void *p, size_t align, size_t n)
{
	(void)align; /* the block's own alignment is what free needs */
	vc_free_sized_inline(p, n);
}

VC_ALIAS_ATTR int malloc_trim(size_t pad)
{
	(void)pad;
	vc_release_free_memory(VC_RELEASE_FREE);
	return 1;
}

VC_ALIAS_ATTR int mallopt(int param, int value)
{
	(void)param;
	(void)value;
	return 0; /* no glibc tunables here */
}
