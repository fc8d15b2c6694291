/* allocator/compat_tcmalloc.c - gperftools tcmalloc's C entry points: the
 * MallocExtension_* functions and the tc_* names of the malloc family, on
 * vcmalloc's blocks and figures. A program linked with tcmalloc and run with
 * vcmalloc preloaded resolves these here, so what it allocates through tc_malloc
 * and what it frees through free are the same allocator's blocks.
 *
 * Numeric properties (MallocExtension_GetNumericProperty; 1 when known, else 0):
 *   generic.current_allocated_bytes   bytes in live blocks
 *   generic.heap_size                 address space mapped (released pages too)
 *   generic.total_physical_bytes      resident bytes
 *   tcmalloc.pageheap_free_bytes      free pages still resident
 *   tcmalloc.pageheap_unmapped_bytes  free pages given back to the OS
 *   tcmalloc.central_cache_free_bytes free objects of the central lists
 *   tcmalloc.thread_cache_free_bytes  free objects in the per-vCPU caches (the
 *   tcmalloc.current_total_thread_cache_bytes  layer tcmalloc's thread caches are)
 *   tcmalloc.slack_bytes              free pages, resident or not, and cached huge
 *                                     mappings
 * No property can be set (SetNumericProperty returns 0).
 */
#include "internal.h"

#include <malloc.h>
#include <stdlib.h>
#include <string.h>

static bool property(const char *name, const struct vc_stats_detail *d, size_t *v)
{
	uint64_t r;
	if (strcmp(name, "generic.current_allocated_bytes") == 0)
		r = d->st.allocated_bytes;
	else if (strcmp(name, "generic.heap_size") == 0)
		r = d->st.mapped_bytes;
	else if (strcmp(name, "generic.total_physical_bytes") == 0)
		r = d->st.resident_bytes;
	else if (strcmp(name, "tcmalloc.pageheap_free_bytes") == 0)
		r = d->free_page_bytes + d->huge_cached_bytes;
	else if (strcmp(name, "tcmalloc.pageheap_unmapped_bytes") == 0)
		r = d->released_bytes;
	else if (strcmp(name, "tcmalloc.central_cache_free_bytes") == 0)
		r = d->central_free_bytes;
	else if (strcmp(name, "tcmalloc.thread_cache_free_bytes") == 0 ||
		 strcmp(name, "tcmalloc.current_total_thread_cache_bytes") == 0)
		r = d->st.vcpu_cache_object_bytes;
	else if (strcmp(name, "tcmalloc.slack_bytes") == 0)
		r = d->free_page_bytes + d->released_bytes + d->huge_cached_bytes;
	else
		return false;
	*v = (size_t)r;
	return true;
}

VC_EXPORT int MallocExtension_GetNumericProperty(const char *name, size_t *value)
{
	if (!name || !value)
		return 0;
	struct vc_stats_detail d;
	vc_stats_detail(&d);
	return property(name, &d, value) ? 1 : 0;
}

VC_EXPORT int MallocExtension_SetNumericProperty(const char *name, size_t value)
{
	(void)name;
	(void)value;
	return 0;
}

VC_EXPORT void MallocExtension_ReleaseFreeMemory(void)
{
	vc_release_free_memory(VC_RELEASE_FREE);
}

/* vcmalloc releases all free pages at once: at least num_bytes when there are. */
VC_EXPORT void MallocExtension_ReleaseToSystem(size_t num_bytes)
{
	(void)num_bytes;
	vc_release_free_memory(VC_RELEASE_FREE);
}

/* The caches are per vCPU, not per thread: an idle thread's is the cache of the
 * id it ran as last, which other threads may be using; it is drained all the same
 * (its objects go to the central lists, where every thread finds them). */
VC_EXPORT void MallocExtension_MarkThreadIdle(void)
{
	vc_cache_drain_current();
}

/* Nothing to prepare: a thread's first allocation finds its vCPU's cache. */
VC_EXPORT void MallocExtension_MarkThreadBusy(void)
{
}

VC_EXPORT size_t MallocExtension_GetAllocatedSize(const void *p)
{
	return vc_usable_size(p);
}

VC_EXPORT size_t MallocExtension_GetEstimatedAllocatedSize(size_t size)
{
	return vc_usable_for(size, 16);
}

/* tcmalloc's enum Ownership: unknown 0, owned 1, not owned 2. A pointer is owned
 * when it lies in a span in use or in a live huge block's units. */
VC_EXPORT int MallocExtension_GetOwnership(const void *p)
{
	if (!p || vc_g.registry == NULL)
		return 2;
	switch (vc_unit_kind(p)) {
	case VC_UNIT_SEGMENT: {
		const struct vc_span *sp = vc_span_of(vc_segment_of(p), p);
		return sp && (sp->state == VC_SPAN_SMALL || sp->state == VC_SPAN_LARGE) ? 1 : 2;
	}
	case VC_UNIT_HUGE_START:
	case VC_UNIT_HUGE_ALIGNED:
	case VC_UNIT_HUGE_BODY:
		return 1;
	default:
		return 2;
	}
}

static void buffer_sink(void *arg, const char *s, size_t n)
{
	struct {
		char *buf;
		size_t room, used;
	} *b = arg;
	if (b->used + 1 >= b->room)
		return;
	size_t k = n < b->room - 1 - b->used ? n : b->room - 1 - b->used;
	memcpy(b->buf + b->used, s, k);
	b->used += k;
	b->buf[b->used] = '\0';
}

/* Human-readable statistics into buffer (at most length bytes, NUL included). */
VC_EXPORT void MallocExtension_GetStats(char *buffer, int length)
{
	if (!buffer || length <= 0)
		return;
	struct {
		char *buf;
		size_t room, used;
	} b = {buffer, (size_t)length, 0};
	buffer[0] = '\0';
	struct vc_stats_detail d;
	vc_stats_detail(&d);
	struct vc_text t = {.sink = buffer_sink, .arg = &b};
	static const char *const names[] = {
		"generic.current_allocated_bytes",  "generic.heap_size",
		"generic.total_physical_bytes",     "tcmalloc.pageheap_free_bytes",
		"tcmalloc.pageheap_unmapped_bytes", "tcmalloc.central_cache_free_bytes",
		"tcmalloc.thread_cache_free_bytes", "tcmalloc.slack_bytes",
	};
	vc_text_put(&t, "------------------------------------------------\n"
			"vcmalloc (tcmalloc interface)\n");
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		size_t v = 0;
		property(names[i], &d, &v);
		vc_text_put(&t, "MALLOC: ");
		vc_text_u64_width(&t, v, 15);
		vc_text_put(&t, " ");
		vc_text_put(&t, names[i]);
		vc_text_put(&t, "\n");
	}
	vc_text_flush(&t);
}

/* ---- tc_* names of the malloc family ---- */

VC_EXPORT const char *tc_version(int *major, int *minor, const char **patch)
{
	/* VC_VERSION is "major.minor.patch". */
	const char *v = VC_VERSION;
	if (major)
		*major = atoi(v);
	const char *dot = strchr(v, '.');
	if (minor)
		*minor = dot ? atoi(dot + 1) : 0;
	if (patch)
		*patch = "";
	return "vcmalloc " VC_VERSION;
}

VC_EXPORT void *tc_malloc(size_t n) { return vc_malloc(n); }
VC_EXPORT void *tc_malloc_skip_new_handler(size_t n) { return vc_malloc(n); }
VC_EXPORT void tc_free(void *p) { vc_free(p); }
VC_EXPORT void tc_free_sized(void *p, size_t n) { vc_free_sized(p, n, 0); }
VC_EXPORT void *tc_realloc(void *p, size_t n) { return vc_realloc(p, n); }
VC_EXPORT void *tc_calloc(size_t n, size_t size) { return vc_calloc(n, size); }
VC_EXPORT void tc_cfree(void *p) { vc_free(p); }
VC_EXPORT void *tc_memalign(size_t align, size_t n) { return memalign(align, n); }
VC_EXPORT int tc_posix_memalign(void **out, size_t align, size_t n)
{
	return posix_memalign(out, align, n);
}
VC_EXPORT void *tc_valloc(size_t n) { return valloc(n); }
VC_EXPORT void *tc_pvalloc(size_t n) { return pvalloc(n); }
VC_EXPORT size_t tc_malloc_size(void *p) { return vc_usable_size(p); }
VC_EXPORT void tc_malloc_stats(void) { malloc_stats(); }
VC_EXPORT int tc_mallopt(int param, int value) { return mallopt(param, value); }
/* glibc marks mallinfo deprecated (its int fields overflow); tcmalloc's name for
 * it stays for the programs that call it. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
VC_EXPORT struct mallinfo tc_mallinfo(void) { return mallinfo(); }
#pragma GCC diagnostic pop

/* The C++ operators under tcmalloc's C names: the same code as new and delete
 * (override_new.c), so a failed tc_new runs the new handler and throws. */
void *_Znwm(size_t n);
void *_Znam(size_t n);
void *_ZnwmRKSt9nothrow_t(size_t n, const void *nt);
void *_ZnamRKSt9nothrow_t(size_t n, const void *nt);

VC_EXPORT void *tc_new(size_t n) { return _Znwm(n); }
VC_EXPORT void *tc_newarray(size_t n) { return _Znam(n); }
VC_EXPORT void *tc_new_nothrow(size_t n, const void *nt) { return _ZnwmRKSt9nothrow_t(n, nt); }
VC_EXPORT void *tc_newarray_nothrow(size_t n, const void *nt)
{
	return _ZnamRKSt9nothrow_t(n, nt);
}
VC_EXPORT void tc_delete(void *p) { vc_free(p); }
VC_EXPORT void tc_deletearray(void *p) { vc_free(p); }
VC_EXPORT void tc_delete_sized(void *p, size_t n) { vc_free_sized(p, n, 0); }
VC_EXPORT void tc_deletearray_sized(void *p, size_t n) { vc_free_sized(p, n, 0); }
VC_EXPORT void tc_delete_nothrow(void *p, const void *nt)
{
	(void)nt;
	vc_free(p);
}
VC_EXPORT void tc_deletearray_nothrow(void *p, const void *nt)
{
	(void)nt;
	vc_free(p);
}

/* gperftools' names for jemalloc's nallocx (its <gperftools/nallocx.h>). */
VC_EXPORT size_t tc_nallocx(size_t size, int flags) { return nallocx(size, flags); }

VC_EXPORT size_t MallocExtension_GetThreadCacheSize(void)
{
	struct vcmalloc_stats st;
	vcmalloc_stats(&st);
	return (size_t)st.vcpu_cache_object_bytes;
}

VC_EXPORT void MallocExtension_MarkThreadTemporarilyIdle(void)
{
	vc_cache_drain_current();
}
