/* allocator/compat_glibc.c - glibc's malloc introspection (mallinfo, mallinfo2,
 * malloc_stats, malloc_info) reporting vcmalloc's state; malloc_trim is in
 * override.c. Prototypes are <malloc.h>'s, included here so that they match.
 *
 * glibc's fields on vcmalloc's figures:
 *   arena     resident pages of the segments (small and large blocks' memory)
 *   ordblks   free objects in the central lists
 *   smblks    0 (no fastbins)
 *   hblks     live huge blocks (each a mapping of its own, like glibc's mmapped
 *   hblkhd    their mapped bytes                          chunks)
 *   usmblks   0 (glibc too)
 *   fsmblks   bytes of free objects in the per-vCPU caches (the layer that, like
 *             glibc's fastbins and tcache, holds freed blocks for quick reuse)
 *   uordblks  bytes in live small and large blocks (with hblkhd: all live bytes)
 *   fordblks  arena - uordblks: free objects, free resident pages and segment
 *             headers
 *   keepcost  what malloc_trim would give back now: free resident pages and
 *             cached huge mappings
 * mallinfo's int fields are clamped to INT_MAX.
 */
#include "internal.h"

#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>

static void figures(struct mallinfo2 *m, struct vc_stats_detail *d)
{
	vc_stats_detail(d);
	uint64_t arena = d->segment_bytes - d->released_bytes;
	uint64_t used = d->st.allocated_bytes > d->huge_bytes
				? d->st.allocated_bytes - d->huge_bytes
				: 0;
	*m = (struct mallinfo2){0};
	m->arena = arena;
	m->ordblks = d->central_free_objects;
	m->hblks = d->huge_count;
	m->hblkhd = d->huge_bytes;
	m->fsmblks = d->st.vcpu_cache_object_bytes;
	m->uordblks = used;
	m->fordblks = arena > used ? arena - used : 0;
	m->keepcost = d->free_page_bytes + d->huge_cached_bytes;
}

VC_EXPORT struct mallinfo2 mallinfo2(void)
{
	struct mallinfo2 m;
	struct vc_stats_detail d;
	figures(&m, &d);
	return m;
}

static int clamp(size_t v)
{
	return v > INT_MAX ? INT_MAX : (int)v;
}

VC_EXPORT struct mallinfo mallinfo(void)
{
	struct mallinfo2 m = mallinfo2();
	struct mallinfo r = {
		.arena = clamp(m.arena),
		.ordblks = clamp(m.ordblks),
		.smblks = clamp(m.smblks),
		.hblks = clamp(m.hblks),
		.hblkhd = clamp(m.hblkhd),
		.usmblks = clamp(m.usmblks),
		.fsmblks = clamp(m.fsmblks),
		.uordblks = clamp(m.uordblks),
		.fordblks = clamp(m.fordblks),
		.keepcost = clamp(m.keepcost),
	};
	return r;
}

static void stat_line(struct vc_text *t, const char *label, uint64_t v)
{
	vc_text_put(t, label);
	vc_text_u64_width(t, v, 10);
	vc_text_put(t, "\n");
}

/* glibc's layout on stderr: one block per arena (here: per NUMA node), then the
 * totals. Written with write(2), without stdio. */
VC_EXPORT void malloc_stats(void)
{
	struct mallinfo2 m;
	struct vc_stats_detail d;
	figures(&m, &d);
	struct vc_text t;
	vc_text_to_fd(&t, 2);
	for (unsigned n = 0; n < d.st.nodes && n < VCMALLOC_MAX_NODES; n++) {
		vc_text_put(&t, "Arena ");
		vc_text_u64(&t, n);
		vc_text_put(&t, ":\n");
		stat_line(&t, "system bytes     = ", d.st.node[n].resident_bytes);
		stat_line(&t, "free bytes       = ", d.st.node[n].cached_bytes);
	}
	vc_text_put(&t, "Total (incl. mmap):\n");
	stat_line(&t, "system bytes     = ", d.st.resident_bytes);
	stat_line(&t, "in use bytes     = ", d.st.allocated_bytes);
	stat_line(&t, "mmap regions     = ", m.hblks);
	stat_line(&t, "mmap bytes       = ", m.hblkhd);
	vc_text_flush(&t);
}

static void file_sink(void *arg, const char *s, size_t n)
{
	fwrite(s, 1, n, (FILE *)arg);
}

static void xml_total(struct vc_text *t, const char *type, uint64_t count, uint64_t size)
{
	vc_text_put(t, "<total type=\"");
	vc_text_put(t, type);
	vc_text_put(t, "\" count=\"");
	vc_text_u64(t, count);
	vc_text_put(t, "\" size=\"");
	vc_text_u64(t, size);
	vc_text_put(t, "\"/>\n");
}

static void xml_sized(struct vc_text *t, const char *tag, const char *type, uint64_t size)
{
	vc_text_put(t, "<");
	vc_text_put(t, tag);
	vc_text_put(t, " type=\"");
	vc_text_put(t, type);
	vc_text_put(t, "\" size=\"");
	vc_text_u64(t, size);
	vc_text_put(t, "\"/>\n");
}

/* glibc's XML shape: <malloc version="1">, one <heap> per arena (here: per NUMA
 * node) with its free blocks by size (<sizes>: per size class, the central lists'
 * free objects), then the totals. The figures are read first; the stream is
 * written afterwards with no vcmalloc lock held (stdio may allocate). */
VC_EXPORT int malloc_info(int options, FILE *fp)
{
	if (options != 0) {
		errno = EINVAL;
		return -1;
	}
	if (!fp) {
		errno = EINVAL;
		return -1;
	}
	struct mallinfo2 m;
	struct vc_stats_detail d;
	figures(&m, &d);
	struct vc_text t = {.sink = file_sink, .arg = fp};
	vc_text_put(&t, "<malloc version=\"1\">\n");
	for (unsigned n = 0; n < d.st.nodes && n < VCMALLOC_MAX_NODES; n++) {
		vc_text_put(&t, "<heap nr=\"");
		vc_text_u64(&t, n);
		vc_text_put(&t, "\">\n<sizes>\n");
		uint64_t count = 0, bytes = 0;
		for (unsigned c = 1; c < VC_NUM_CLASSES; c++) {
			uint64_t k = __atomic_load_n(&vc_central_of(n, c)->free_objects,
						     __ATOMIC_RELAXED);
			if (k == 0)
				continue;
			uint64_t size = vc_classes[c].size;
			vc_text_put(&t, "  <size from=\"");
			vc_text_u64(&t, c > 1 ? vc_classes[c - 1].size + 1 : 1);
			vc_text_put(&t, "\" to=\"");
			vc_text_u64(&t, size);
			vc_text_put(&t, "\" total=\"");
			vc_text_u64(&t, k * size);
			vc_text_put(&t, "\" count=\"");
			vc_text_u64(&t, k);
			vc_text_put(&t, "\"/>\n");
			count += k;
			bytes += k * size;
		}
		vc_text_put(&t, "</sizes>\n");
		xml_total(&t, "rest", count, bytes);
		xml_sized(&t, "system", "current", d.st.node[n].resident_bytes);
		xml_sized(&t, "aspace", "total", d.st.node[n].mapped_bytes);
		vc_text_put(&t, "</heap>\n");
	}
	/* fast: the per-vCPU caches' objects (bytes only: they are counted per class
	 * nowhere); rest: the central lists' objects and the free resident pages. */
	xml_total(&t, "fast", 0, d.st.vcpu_cache_object_bytes);
	xml_total(&t, "rest", d.central_free_objects, d.central_free_bytes + d.free_page_bytes);
	xml_total(&t, "mmap", d.huge_count, d.huge_bytes);
	xml_sized(&t, "system", "current", d.st.resident_bytes);
	xml_sized(&t, "aspace", "total", d.st.mapped_bytes);
	vc_text_put(&t, "</malloc>\n");
	vc_text_flush(&t);
	return ferror(fp) ? -1 : 0;
}
