/* tcmalloc_api: gperftools tcmalloc's C entry points served by vcmalloc. Built
 * against <gperftools/tcmalloc.h> and <gperftools/malloc_extension_c.h>; run
 * linked with libvcmalloc, and linked with libtcmalloc_minimal with vcmalloc
 * preloaded, where every call must reach vcmalloc:
 *   - tc_malloc / tc_calloc / tc_realloc / tc_memalign / tc_posix_memalign /
 *     tc_valloc / tc_new blocks are vcmalloc's (free and tc_free take either) and
 *     tc_malloc_size, MallocExtension_GetAllocatedSize and malloc_usable_size agree;
 *   - GetEstimatedAllocatedSize(n) is the real size of malloc(n);
 *   - the numeric properties are vcmalloc's figures: current_allocated_bytes rises
 *     with a 32 MiB block and equals vcmalloc_stats' allocated bytes when nothing
 *     runs in between; unknown names answer 0; no property can be set;
 *   - ReleaseFreeMemory after freeing 64 MiB of small blocks lowers
 *     generic.total_physical_bytes by most of it, and raises
 *     tcmalloc.pageheap_unmapped_bytes or lowers heap_size;
 *   - GetOwnership tells vcmalloc's blocks from a stack address;
 *   - GetStats writes a NUL-terminated text within the buffer. */
#include <errno.h>
#include <gperftools/malloc_extension_c.h>
#include <gperftools/tcmalloc.h>
#include <stdint.h>
#include <string.h>

#include "vctest.h"

/* C++-only in <gperftools/tcmalloc.h>, C symbols in the library. */
void *tc_new(size_t size);
void tc_delete(void *p);

static size_t prop(const char *name)
{
	size_t v = 0;
	VCT_CHECK(MallocExtension_GetNumericProperty(name, &v) == 1, "property %s", name);
	return v;
}

static void check_aliases(void)
{
	void *p = tc_malloc(100);
	VCT_CHECK(p && tc_malloc_size(p) == malloc_usable_size(p), "tc_malloc");
	VCT_CHECK(MallocExtension_GetAllocatedSize(p) == malloc_usable_size(p), "allocated size");
	p = tc_realloc(p, 5000);
	VCT_CHECK(p && malloc_usable_size(p) >= 5000, "tc_realloc");
	free(p);
	unsigned char *c = tc_calloc(1000, 3);
	for (int i = 0; i < 3000; i++)
		VCT_CHECK(c[i] == 0, "tc_calloc");
	tc_free(c);
	void *a = tc_memalign(4096, 100);
	VCT_CHECK(a && (uintptr_t)a % 4096 == 0, "tc_memalign");
	tc_free(a);
	void *b = NULL;
	VCT_CHECK(tc_posix_memalign(&b, 256, 10) == 0 && (uintptr_t)b % 256 == 0, "posix");
	free(b);
	VCT_CHECK(tc_posix_memalign(&b, 3, 10) == EINVAL, "tc_posix_memalign EINVAL");
	void *v = tc_valloc(10);
	VCT_CHECK(v && (uintptr_t)v % 4096 == 0, "tc_valloc");
	tc_free_sized(v, 10);
	void *n = tc_new(64);
	VCT_CHECK(n && malloc_usable_size(n) >= 64, "tc_new");
	tc_delete(n);
	for (size_t s = 1; s < ((size_t)3 << 20); s = s * 2 + 3) {
		void *q = malloc(s);
		VCT_CHECK(MallocExtension_GetEstimatedAllocatedSize(s) <= malloc_usable_size(q),
			  "estimated %zu", s);
		if (s <= (1 << 20))
			VCT_CHECK(MallocExtension_GetEstimatedAllocatedSize(s) ==
					  malloc_usable_size(q),
				  "estimated size of %zu", s);
		free(q);
	}
	int major = -1, minor = -1;
	const char *patch = NULL;
	const char *ver = tc_version(&major, &minor, &patch);
	VCT_CHECK(ver && strstr(ver, "vcmalloc") && major >= 0 && minor >= 0 && patch, "version");
}

static void check_properties(void)
{
	size_t v = 7;
	VCT_CHECK(MallocExtension_GetNumericProperty("no.such.property", &v) == 0, "unknown");
	VCT_CHECK(MallocExtension_SetNumericProperty("tcmalloc.max_total_thread_cache_bytes",
						     1 << 20) == 0,
		  "set");
	struct vcmalloc_stats st;
	size_t before = prop("generic.current_allocated_bytes");
	vct_stats(&st);
	VCT_CHECK(before == st.allocated_bytes, "current_allocated_bytes %zu vs %llu", before,
		  (unsigned long long)st.allocated_bytes);
	void *big = malloc(32 << 20);
	memset(big, 1, 32 << 20);
	VCT_CHECK(prop("generic.current_allocated_bytes") >= before + (32 << 20), "rises");
	VCT_CHECK(prop("generic.heap_size") >= prop("generic.current_allocated_bytes"), "heap");
	free(big);

	enum { N = 400000 };
	void **objs = malloc(N * sizeof *objs);
	for (int i = 0; i < N; i++) {
		objs[i] = malloc(160);
		memset(objs[i], 3, 160);
	}
	size_t physical = prop("generic.total_physical_bytes");
	size_t unmapped = prop("tcmalloc.pageheap_unmapped_bytes");
	size_t heap = prop("generic.heap_size");
	for (int i = 0; i < N; i++)
		free(objs[i]);
	free(objs);
	vct_vcmalloc()->reclaim(1);
	MallocExtension_ReleaseFreeMemory();
	size_t after = prop("generic.total_physical_bytes");
	VCT_CHECK(after + (size_t)N * 160 * 3 / 4 <= physical,
		  "ReleaseFreeMemory: physical %zu -> %zu", physical, after);
	VCT_CHECK(prop("tcmalloc.pageheap_unmapped_bytes") > unmapped ||
			  prop("generic.heap_size") < heap,
		  "released pages are unmapped or gone");
	(void)prop("tcmalloc.pageheap_free_bytes");
	(void)prop("tcmalloc.central_cache_free_bytes");
	(void)prop("tcmalloc.thread_cache_free_bytes");
	(void)prop("tcmalloc.slack_bytes");
}

static void check_misc(void)
{
	void *p = malloc(40);
	int local = 0;
	VCT_CHECK(MallocExtension_GetOwnership(p) == MallocExtension_kOwned, "owned");
	VCT_CHECK(MallocExtension_GetOwnership(&local) == MallocExtension_kNotOwned, "stack");
	free(p);
	char buf[4096];
	memset(buf, 'x', sizeof buf);
	MallocExtension_GetStats(buf, 64);
	VCT_CHECK(strlen(buf) == 63, "GetStats truncates within the buffer: %zu", strlen(buf));
	MallocExtension_GetStats(buf, sizeof buf);
	VCT_CHECK(strstr(buf, "generic.current_allocated_bytes") != NULL, "GetStats text");
	MallocExtension_MarkThreadIdle();
	MallocExtension_MarkThreadBusy();
	MallocExtension_ReleaseToSystem(1 << 20);
}

int main(void)
{
	vct_start("tcmalloc_api", 120);
	VCT_CHECK(vct_under_vcmalloc(), "vcmalloc must serve this process");
	check_aliases();
	check_properties();
	check_misc();
	printf("tcmalloc_api: ok\n");
	return 0;
}
