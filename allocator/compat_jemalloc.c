/* allocator/compat_jemalloc.c - jemalloc's non-standard allocation API (mallocx,
 * rallocx, xallocx, sallocx, dallocx, sdallocx, nallocx) and malloc_stats_print,
 * on vcmalloc's own blocks. A program linked with jemalloc and run with vcmalloc
 * preloaded resolves these here, so every block it gets or gives back is
 * vcmalloc's; mallctl is in compat_mallctl.c.
 *
 * Flags (jemalloc's encoding): the low 6 bits are the base-2 logarithm of the
 * alignment (0: none beyond the default 16 bytes), 0x40 asks for zeroed memory;
 * the thread-cache bits (8-19) and the arena bits (20 and up) are accepted and
 * ignored: every block comes from the vCPU caches and the calling thread's NUMA
 * node, and any block may be freed by any call.
 */
#include "internal.h"

#include <string.h>

#define MALLOCX_LG_ALIGN_MASK 0x3f
#define MALLOCX_ZERO_FLAG 0x40

/* Alignment asked for by flags; 16 (the default) when none. */
static size_t flags_align(int flags)
{
	unsigned lg = (unsigned)flags & MALLOCX_LG_ALIGN_MASK;
	return lg > 4 ? (size_t)1 << lg : 16;
}

/* Zero bytes [from, to) of the block p (to: its usable size). A huge block's
 * pages read as zero except what an earlier owner of its mapping wrote, which
 * vc_huge_clear knows when the whole block is asked for. */
static void zero_tail(void *p, size_t from, size_t to)
{
	if (from >= to)
		return;
	if (from == 0 && vc_unit_kind(p) != VC_UNIT_SEGMENT) {
		vc_huge_clear(p, to);
		return;
	}
	memset((char *)p + from, 0, to - from);
}

static void *alloc_aligned(size_t size, size_t align)
{
	return align > 16 ? vc_memalign(align, size) : vc_malloc(size);
}

VC_EXPORT void *mallocx(size_t size, int flags)
{
	size_t align = flags_align(flags);
	if (align > PTRDIFF_MAX)
		return NULL;
	void *p = alloc_aligned(size, align);
	if (p && (flags & MALLOCX_ZERO_FLAG))
		zero_tail(p, 0, vc_usable_size(p));
	return p;
}

VC_EXPORT void *rallocx(void *ptr, size_t size, int flags)
{
	size_t align = flags_align(flags);
	if (align > PTRDIFF_MAX)
		return NULL;
	size_t old = vc_usable_size(ptr); /* checks ptr (misuse is reported) */
	if (size == 0)
		size = 1; /* rallocx never frees: the smallest block */
	void *q;
	if (align <= 16) {
		q = vc_realloc(ptr, size);
	} else if (((uintptr_t)ptr & (align - 1)) == 0 && size <= old && size > old / 2) {
		q = ptr; /* aligned already, and shrinking by less than half */
	} else {
		q = vc_memalign(align, size);
		if (q) {
			memcpy(q, ptr, old < size ? old : size);
			vc_free(ptr);
		}
	}
	/* jemalloc's rule: the old block's real size is the boundary between kept and
	 * zeroed bytes. */
	if (q && (flags & MALLOCX_ZERO_FLAG))
		zero_tail(q, old, vc_usable_size(q));
	return q;
}

VC_EXPORT size_t xallocx(void *ptr, size_t size, size_t extra, int flags)
{
	size_t old = vc_usable_size(ptr);
	size_t most = size + extra < size ? SIZE_MAX : size + extra;
	size_t now = vc_grow_in_place(ptr, size, most);
	if (flags & MALLOCX_ZERO_FLAG)
		zero_tail(ptr, old, now);
	return now;
}

VC_EXPORT size_t sallocx(const void *ptr, int flags)
{
	(void)flags;
	return vc_usable_size(ptr);
}

VC_EXPORT void dallocx(void *ptr, int flags)
{
	(void)flags;
	vc_free(ptr);
}

/* size: between the size asked for and the real size, as jemalloc requires; a
 * larger one is reported (alloc.c). */
VC_EXPORT void sdallocx(void *ptr, size_t size, int flags)
{
	vc_free_sized(ptr, size, flags_align(flags));
}

VC_EXPORT size_t nallocx(size_t size, int flags)
{
	size_t align = flags_align(flags);
	if (align > PTRDIFF_MAX)
		return 0;
	return vc_usable_for(size, align);
}

/* ---- malloc_stats_print ---- */

struct cb_sink {
	void (*write_cb)(void *, const char *);
	void *opaque;
};

static void cb_write(void *arg, const char *s, size_t n)
{
	(void)n;
	struct cb_sink *c = arg;
	c->write_cb(c->opaque, s);
}

static void line(struct vc_text *t, const char *label, uint64_t v)
{
	vc_text_put(t, label);
	vc_text_u64(t, v);
	vc_text_put(t, "\n");
}

static void json_field(struct vc_text *t, const char *key, uint64_t v, bool comma)
{
	vc_text_put(t, "\"");
	vc_text_put(t, key);
	vc_text_put(t, "\": ");
	vc_text_u64(t, v);
	if (comma)
		vc_text_put(t, ", ");
}

static const char *mode_name(int m)
{
	return m == VCMALLOC_INDEX_VCPU ? "vcpu" : m == VCMALLOC_INDEX_CPU ? "cpu" : "fallback";
}

static void print_json(struct vc_text *t, const struct vc_jemalloc_figures *f,
		       const struct vc_stats_detail *d)
{
	vc_text_put(t, "{\"jemalloc\": {\"version\": \"");
	vc_text_put(t, vc_jemalloc_version);
	vc_text_put(t, "\", \"stats\": {");
	json_field(t, "allocated", f->allocated, true);
	json_field(t, "active", f->active, true);
	json_field(t, "metadata", f->metadata, true);
	json_field(t, "resident", f->resident, true);
	json_field(t, "mapped", f->mapped, true);
	json_field(t, "retained", f->retained, false);
	vc_text_put(t, "}}, \"vcmalloc\": {\"index\": \"");
	vc_text_put(t, mode_name(d->st.index));
	vc_text_put(t, "\", ");
	json_field(t, "vcpu_caches_populated", d->st.vcpu_caches_populated, true);
	json_field(t, "vcpu_cache_bytes", d->st.vcpu_cache_bytes, true);
	json_field(t, "central_free_bytes", d->central_free_bytes, true);
	json_field(t, "free_page_bytes", d->free_page_bytes, true);
	json_field(t, "huge_blocks", d->huge_count, true);
	json_field(t, "huge_bytes", d->huge_bytes, true);
	json_field(t, "huge_cached_bytes", d->huge_cached_bytes, true);
	json_field(t, "numa_nodes", d->st.nodes, false);
	vc_text_put(t, "}}\n");
}

static void print_text(struct vc_text *t, const struct vc_jemalloc_figures *f,
		       const struct vc_stats_detail *d)
{
	vc_text_put(t, "___ Begin vcmalloc statistics (jemalloc interface) ___\nVersion: \"");
	vc_text_put(t, vc_jemalloc_version);
	vc_text_put(t, "\"\nIndex mode: ");
	vc_text_put(t, mode_name(d->st.index));
	vc_text_put(t, "\n");
	line(t, "Arenas (NUMA nodes): ", d->st.nodes);
	line(t, "Decay time (ms): ", vc_g.opt.decay_ms);
	line(t, "vCPU cache budget (bytes): ", vc_g.opt.vcpu_cache_bytes);
	vc_text_put(t, "Allocated: ");
	vc_text_u64(t, f->allocated);
	vc_text_put(t, ", active: ");
	vc_text_u64(t, f->active);
	vc_text_put(t, ", metadata: ");
	vc_text_u64(t, f->metadata);
	vc_text_put(t, ", resident: ");
	vc_text_u64(t, f->resident);
	vc_text_put(t, ", mapped: ");
	vc_text_u64(t, f->mapped);
	vc_text_put(t, ", retained: ");
	vc_text_u64(t, f->retained);
	vc_text_put(t, "\n");
	line(t, "vCPU caches populated: ", d->st.vcpu_caches_populated);
	line(t, "vCPU cache bytes: ", d->st.vcpu_cache_bytes);
	line(t, "Free objects in central lists (bytes): ", d->central_free_bytes);
	line(t, "Free resident pages (bytes): ", d->free_page_bytes);
	line(t, "Huge blocks: ", d->huge_count);
	line(t, "Huge block bytes: ", d->huge_bytes);
	line(t, "Cached huge mappings (bytes): ", d->huge_cached_bytes);
	for (unsigned n = 0; n < d->st.nodes && n < VCMALLOC_MAX_NODES; n++) {
		vc_text_put(t, "Node ");
		vc_text_u64(t, n);
		vc_text_put(t, ": mapped ");
		vc_text_u64(t, d->st.node[n].mapped_bytes);
		vc_text_put(t, ", resident ");
		vc_text_u64(t, d->st.node[n].resident_bytes);
		vc_text_put(t, ", cached ");
		vc_text_u64(t, d->st.node[n].cached_bytes);
		vc_text_put(t, "\n");
	}
	vc_text_put(t, "--- End vcmalloc statistics ---\n");
}

/* opts: "J" gives one JSON object; the letters that leave out sections of
 * jemalloc's report have nothing to leave out here. */
VC_EXPORT void malloc_stats_print(void (*write_cb)(void *, const char *), void *cbopaque,
				  const char *opts)
{
	struct vc_stats_detail d;
	vc_stats_detail(&d);
	struct vc_jemalloc_figures f;
	vc_jemalloc_figures_of(&d, &f);
	struct vc_text t;
	struct cb_sink c = {write_cb, cbopaque};
	if (write_cb) {
		t.sink = cb_write;
		t.arg = &c;
		t.n = 0;
	} else {
		vc_text_to_fd(&t, 2);
	}
	if (opts && strchr(opts, 'J'))
		print_json(&t, &f, &d);
	else
		print_text(&t, &f, &d);
	vc_text_flush(&t);
}
