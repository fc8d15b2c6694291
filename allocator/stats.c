/* allocator/stats.c - statistics: vcmalloc_stats(), JSON and text output.
 * Counters are read without stopping other threads: a snapshot, not a cut. Output
 * is formatted into a stack buffer and written with write(2). */
#include "internal.h"
#include "vcpu_cache.h"

#include <errno.h>
#include <string.h>

static const char *mode_name(int m)
{
	return m == VCMALLOC_INDEX_VCPU ? "vcpu" : m == VCMALLOC_INDEX_CPU ? "cpu" : "fallback";
}

/* Bytes of the small objects of node n out of their spans and not in a transfer
 * array: live, or in a vCPU cache or a remote-free buffer. */
static uint64_t small_out_bytes(unsigned n)
{
	uint64_t out = 0;
	for (unsigned c = 1; c < VC_NUM_CLASSES; c++) {
		struct vc_central *ce = vc_central_of(n, c);
		out += (__atomic_load_n(&ce->span_out, __ATOMIC_RELAXED) -
			__atomic_load_n(&ce->transfer_count, __ATOMIC_RELAXED)) *
		       vc_classes[c].size;
	}
	return out;
}

/* Live bytes: small objects out of spans and not cached anywhere (a vCPU cache,
 * a remote-free buffer), plus large and huge blocks (usable sizes). */
static uint64_t live_bytes(uint64_t small_out, uint64_t cached_small)
{
	return (small_out > cached_small ? small_out - cached_small : 0) +
	       __atomic_load_n(&vc_stat_large_bytes, __ATOMIC_RELAXED) +
	       __atomic_load_n(&vc_huge_mapped_bytes, __ATOMIC_RELAXED);
}

uint64_t vc_stats_live_bytes(void)
{
	struct vcmalloc_stats st;
	vc_cache_stats(&st);
	uint64_t small_out = 0;
	for (unsigned n = 0; n < vc_g.nnodes && n < VCMALLOC_MAX_NODES; n++)
		small_out += small_out_bytes(n);
	return live_bytes(small_out, st.vcpu_cache_object_bytes);
}

static void fill(struct vcmalloc_stats *st)
{
	memset(st, 0, sizeof *st);
	st->index = (enum vcmalloc_index)vc_g.mode;
	st->possible_cpus = vc_g.nvcpus;
	vc_cache_stats(st);
	st->vcpu_cache_bytes_peak = __atomic_load_n(&vc_cache_bytes_peak, __ATOMIC_RELAXED);
	st->vcpu_caches_populated = __atomic_load_n(&vc_cache_populated_now, __ATOMIC_RELAXED);
	st->vcpu_caches_populated_peak =
	    __atomic_load_n(&vc_cache_populated_peak, __ATOMIC_RELAXED);
	st->vcpu_reclaims = __atomic_load_n(&vc_cache_reclaims, __ATOMIC_RELAXED);
	st->rseq_fallbacks = __atomic_load_n(&vc_cache_fallback_ops, __ATOMIC_RELAXED);
	st->vcpu_node_moves = __atomic_load_n(&vc_cache_node_moves, __ATOMIC_RELAXED);
	st->vcpu_surplus_drains = __atomic_load_n(&vc_cache_surplus_drains, __ATOMIC_RELAXED);
	st->rseq_fences = __atomic_load_n(&vc_slab_fences, __ATOMIC_RELAXED);
	st->rseq_fence_ns = __atomic_load_n(&vc_slab_fence_ns, __ATOMIC_RELAXED);
	st->os_release_calls = __atomic_load_n(&vc_os_release_calls, __ATOMIC_RELAXED);
	st->os_release_ns = __atomic_load_n(&vc_os_release_ns, __ATOMIC_RELAXED);
	st->os_refault_bytes = __atomic_load_n(&vc_pageheap_refault_bytes, __ATOMIC_RELAXED);
	st->nodes = vc_g.nnodes;
	uint64_t mapped = 0, resident = 0, small_out = 0;
	for (unsigned n = 0; n < vc_g.nnodes && n < VCMALLOC_MAX_NODES; n++) {
		struct vc_pageheap *ph = &vc_pageheaps[n];
		vc_lock(&ph->lock);
		uint64_t m = ph->mapped_bytes, rel = ph->released_bytes;
		/* Cached: resident free pages of the page heap plus free objects of the
		 * central lists (transfer arrays, span free lists, uncarved objects). */
		uint64_t cached = ph->free_bytes > rel ? ph->free_bytes - rel : 0;
		vc_unlock(&ph->lock);
		for (unsigned c = 1; c < VC_NUM_CLASSES; c++)
			cached += __atomic_load_n(&vc_central_of(n, c)->free_objects,
						  __ATOMIC_RELAXED) *
				  vc_classes[c].size;
		small_out += small_out_bytes(n);
		st->node[n].mapped_bytes = m;
		st->node[n].resident_bytes = m > rel ? m - rel : 0;
		st->node[n].cached_bytes = cached;
		mapped += m;
		resident += st->node[n].resident_bytes;
	}
	uint64_t huge = __atomic_load_n(&vc_huge_mapped_bytes, __ATOMIC_RELAXED);
	/* Cached huge mappings stay mapped and resident until unmapped (the slack of a
	 * small block cut from a large entry, given back with MADV_DONTNEED, counts as
	 * resident: an upper bound, like the untouched pages of live huge blocks). */
	uint64_t huge_cached = __atomic_load_n(&vc_huge_cached_bytes, __ATOMIC_RELAXED);
	/* Reserved vCPU regions are not mapped memory until used: count what is. */
	st->mapped_bytes = mapped + huge + huge_cached + st->vcpu_cache_bytes -
			   st->vcpu_cache_object_bytes;
	st->resident_bytes = resident + huge + huge_cached + st->vcpu_cache_bytes -
			     st->vcpu_cache_object_bytes;
	st->allocated_bytes = live_bytes(small_out, st->vcpu_cache_object_bytes);
}

void vc_stats_detail(struct vc_stats_detail *d)
{
	vc_ensure_init();
	fill(&d->st);
	d->segment_bytes = d->header_bytes = d->free_page_bytes = d->released_bytes = 0;
	d->central_free_bytes = d->central_free_objects = 0;
	for (unsigned n = 0; n < vc_g.nnodes && n < VCMALLOC_MAX_NODES; n++) {
		struct vc_pageheap *ph = &vc_pageheaps[n];
		vc_lock(&ph->lock);
		uint64_t m = ph->mapped_bytes, fr = ph->free_bytes, rel = ph->released_bytes;
		vc_unlock(&ph->lock);
		d->segment_bytes += m;
		d->header_bytes += m / VC_UNIT_SIZE * (VC_SEGMENT_HEADER_PAGES * VC_PAGE_SIZE);
		d->free_page_bytes += fr > rel ? fr - rel : 0;
		d->released_bytes += rel;
		for (unsigned c = 1; c < VC_NUM_CLASSES; c++) {
			uint64_t k = __atomic_load_n(&vc_central_of(n, c)->free_objects,
						     __ATOMIC_RELAXED);
			d->central_free_objects += k;
			d->central_free_bytes += k * vc_classes[c].size;
		}
	}
	d->large_bytes = __atomic_load_n(&vc_stat_large_bytes, __ATOMIC_RELAXED);
	d->huge_bytes = __atomic_load_n(&vc_huge_mapped_bytes, __ATOMIC_RELAXED);
	d->huge_count = __atomic_load_n(&vc_huge_count, __ATOMIC_RELAXED);
	d->huge_cached_bytes = __atomic_load_n(&vc_huge_cached_bytes, __ATOMIC_RELAXED);
	uint64_t in_spans = d->segment_bytes - d->released_bytes - d->free_page_bytes;
	d->active_bytes = (in_spans > d->header_bytes ? in_spans - d->header_bytes : 0) +
			  d->huge_bytes;
	d->metadata_bytes = d->header_bytes + d->st.vcpu_cache_bytes -
			    d->st.vcpu_cache_object_bytes;
}

int vcmalloc_stats(struct vcmalloc_stats *out)
{
	vc_ensure_init();
	fill(out);
	return 0;
}

/* JSON output state, on the caller's stack: nothing is shared between callers, so
 * concurrent calls (and a call racing the exit report) each write their own object.
 * The object is written in one write(2) when it fits in buf (up to about ten NUMA
 * nodes), else in several writes of a full buffer each. */
struct out {
	int fd;
	int err; /* errno value of the first failed write, 0 if none */
	size_t n;
	char buf[2048];
};

static void flush(struct out *o)
{
	if (o->n && !o->err)
		o->err = vc_os_write(o->fd, o->buf, o->n);
	o->n = 0;
}

static void put(struct out *o, const char *s)
{
	size_t l = strlen(s);
	while (l > 0) {
		if (o->n == sizeof o->buf)
			flush(o);
		size_t k = sizeof o->buf - o->n;
		if (k > l)
			k = l;
		memcpy(o->buf + o->n, s, k);
		o->n += k;
		s += k;
		l -= k;
	}
}

static void put_u64(struct out *o, const char *key, uint64_t v, bool comma)
{
	char num[24];
	put(o, "\"");
	put(o, key);
	put(o, "\": ");
	vc_os_fmt_u64(num, v);
	put(o, num);
	if (comma)
		put(o, ", ");
}

int vcmalloc_stats_json(int fd)
{
	struct vcmalloc_stats st;
	vcmalloc_stats(&st);
	struct out o = {.fd = fd};
	put(&o, "{\"index\": \"");
	put(&o, mode_name(st.index));
	put(&o, "\", ");
	put_u64(&o, "possible_cpus", st.possible_cpus, true);
	put_u64(&o, "vcpu_caches_populated", st.vcpu_caches_populated, true);
	put_u64(&o, "vcpu_caches_populated_peak", st.vcpu_caches_populated_peak, true);
	put_u64(&o, "vcpu_cache_bytes", st.vcpu_cache_bytes, true);
	put_u64(&o, "vcpu_cache_bytes_peak", st.vcpu_cache_bytes_peak, true);
	put_u64(&o, "vcpu_cache_object_bytes", st.vcpu_cache_object_bytes, true);
	put_u64(&o, "resident_bytes", st.resident_bytes, true);
	put_u64(&o, "mapped_bytes", st.mapped_bytes, true);
	put_u64(&o, "allocated_bytes", st.allocated_bytes, true);
	put_u64(&o, "vcpu_reclaims", st.vcpu_reclaims, true);
	put_u64(&o, "rseq_fallbacks", st.rseq_fallbacks, true);
	put_u64(&o, "vcpu_node_moves", st.vcpu_node_moves, true);
	put_u64(&o, "vcpu_surplus_drains", st.vcpu_surplus_drains, true);
	put_u64(&o, "rseq_fences", st.rseq_fences, true);
	put_u64(&o, "rseq_fence_ns", st.rseq_fence_ns, true);
	put_u64(&o, "os_release_calls", st.os_release_calls, true);
	put_u64(&o, "os_release_ns", st.os_release_ns, true);
	put_u64(&o, "os_refault_bytes", st.os_refault_bytes, true);
	put_u64(&o, "numa_nodes", st.nodes, false);
	put(&o, ", \"nodes\": [");
	for (unsigned n = 0; n < st.nodes; n++) {
		put(&o, n ? ", {" : "{");
		put_u64(&o, "node", n, true);
		put_u64(&o, "mapped_bytes", st.node[n].mapped_bytes, true);
		put_u64(&o, "resident_bytes", st.node[n].resident_bytes, true);
		put_u64(&o, "cached_bytes", st.node[n].cached_bytes, false);
		put(&o, "}");
	}
	put(&o, "]}\n");
	flush(&o);
	if (o.err) {
		errno = o.err;
		return -1;
	}
	return 0;
}

void vc_stats_at_exit(void)
{
	if (vc_g.opt.stats == 2) {
		vcmalloc_stats_json(2);
		return;
	}
	struct vcmalloc_stats st;
	vcmalloc_stats(&st);
	char num[24];
	vc_os_write_str(2, "vcmalloc: index ");
	vc_os_write_str(2, mode_name(st.index));
	vc_os_write_str(2, ", vCPU caches populated ");
	vc_os_write(2, num, vc_os_fmt_u64(num, st.vcpu_caches_populated));
	vc_os_write_str(2, " (peak ");
	vc_os_write(2, num, vc_os_fmt_u64(num, st.vcpu_caches_populated_peak));
	vc_os_write_str(2, "), vCPU cache bytes ");
	vc_os_write(2, num, vc_os_fmt_u64(num, st.vcpu_cache_bytes));
	vc_os_write_str(2, " (peak ");
	vc_os_write(2, num, vc_os_fmt_u64(num, st.vcpu_cache_bytes_peak));
	vc_os_write_str(2, "), resident ");
	vc_os_write(2, num, vc_os_fmt_u64(num, st.resident_bytes));
	vc_os_write_str(2, ", mapped ");
	vc_os_write(2, num, vc_os_fmt_u64(num, st.mapped_bytes));
	vc_os_write_str(2, "\n");
}
