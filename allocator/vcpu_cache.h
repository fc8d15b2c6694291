/* allocator/vcpu_cache.h - fast paths of the per-vCPU caches (inlined into alloc.c).
 *
 * The vCPU index is the rseq field chosen at start-up (mm_cid or cpu_id). A pop or
 * push is one rseq critical section on the region of that index: no lock, no atomic
 * read-modify-write. Both return "miss" (false) when the index is unusable
 * (thread without rseq, fallback mode, id out of range), when the cache of the index
 * is not populated or stopped (zero header), or when the stack is empty / full; the
 * slow paths in vcpu_cache.c handle every such case.
 */
#ifndef VC_VCPU_CACHE_H
#define VC_VCPU_CACHE_H

#include "internal.h"
#include "rseq.h"
#include "vcpu_slab.h"

static inline struct vc_rseq_abi *vc_fast_area(void)
{
	return vc_rseq_area_unchecked();
}

/* The NUMA node the calling thread runs on, as the heap numbers nodes: 0 with one
 * node or VCMALLOC_NUMA=0, and where rseq gives no valid node. */
static inline unsigned vc_current_node(void)
{
	if (vc_g.nnodes <= 1 || !vc_g.opt.numa)
		return 0;
	unsigned n = (unsigned)vc_rseq_current_node();
	return n < vc_g.nnodes ? n : 0;
}

/* vc_g.fast selects the fast path: index field, and whether the caches are
 * node-tagged (several NUMA nodes and rseq node_id available). */
enum vc_fast_path {
	VC_FAST_MM_CID = 0,
	VC_FAST_CPU_ID = 1,
	VC_FAST_MM_CID_NUMA = 2,
	VC_FAST_CPU_ID_NUMA = 3,
	VC_FAST_NONE = 4, /* fallback mode, or before start-up */
};

/* What a push did. */
enum vc_push {
	VC_PUSHED = 0,
	VC_PUSH_MISS = 1,   /* the slow path's to handle */
	VC_PUSH_REMOTE = 2, /* the id is of a lane the span does not count as local */
};

#if !VC_RSEQ_NO_CRITICAL_SECTIONS
_Static_assert(VC_VCPU_STRIDE_SHIFT == VC_RSEQ_SLAB_SHIFT &&
		       (VC_RSEQ_SLAB_LANES_MASK + 1) % VC_CENTRAL_LANES == 0,
	       "the vCPU regions are the rseq layer's slab; lane masks repeat (VC_LANE_MASK)");

/* limit bounds the ids used (vc_g.nvcpus, or vc_g.mm_cid_limit, see vc_cache_pop).
 * Without node tags, a pop or push is one slab section (rseq.h): the section reads
 * the id, bounds it, finds the region and, for a push, tests the lane; nothing is
 * computed before it (before start-up, it fails at once: rseq.h). mm_cid_limit is 0
 * in every mode but the common one, so there the first attempt fails its bound. The
 * lane test is one bit test whatever the mask, no branch on its value (with many
 * classes in use, a branch on "all lanes local" was mispredicted often enough to
 * cost wide1 5%). The node-tagged forms read the id first and give it to a section
 * that compares it. */
#define VC_DEFINE_FAST(name, ix)                                                        \
	static inline bool vc_cache_pop_##name(unsigned c, bool numa,                   \
					       const uint32_t *limit, void **out)       \
	{                                                                               \
		for (;;) {                                                              \
			int r;                                                          \
			if (!numa) {                                                    \
				r = vc_rseq_slab_pop_##name(&vc_g.vcpu_regions, limit, c, out); \
			} else {                                                        \
				struct vc_rseq_abi *rs = vc_fast_area();                \
				uint32_t idx = vc_rseq_read_index(rs, ix);              \
				if (VC_UNLIKELY(idx >= *limit))                         \
					return false;                                   \
				char *region = vc_vcpu_region(idx);                     \
				r = vc_rseq_pop_local_##name(rs, idx,                   \
							     vc_vcpu_header(region, c), \
							     region,                    \
							     vc_vcpu_node_tag(region), out); \
			}                                                               \
			if (VC_LIKELY(r == 0))                                          \
				return true;                                            \
			if (r > 0)                                                      \
				return false;                                           \
		}                                                                       \
	}                                                                               \
	static inline enum vc_push vc_cache_push_##name(unsigned c, void *p,           \
							unsigned node, unsigned lanes,  \
							bool numa,                      \
							const uint32_t *limit)          \
	{                                                                               \
		for (;;) {                                                              \
			int r;                                                          \
			if (!numa) {                                                    \
				r = vc_rseq_slab_push_##name(&vc_g.vcpu_regions, limit, c, \
							     lanes, p);                 \
				if (VC_UNLIKELY(r == 2))                                \
					return VC_PUSH_REMOTE;                          \
			} else {                                                        \
				struct vc_rseq_abi *rs = vc_fast_area();                \
				uint32_t idx = vc_rseq_read_index(rs, ix);              \
				if (VC_UNLIKELY(idx >= *limit))                         \
					return VC_PUSH_MISS;                            \
				char *region = vc_vcpu_region(idx);                     \
				r = vc_rseq_push_tagged_##name(                         \
				    rs, idx, vc_vcpu_header(region, c), region,         \
				    vc_vcpu_node_tag(region), node, p);                 \
			}                                                               \
			if (VC_LIKELY(r == 0))                                          \
				return VC_PUSHED;                                       \
			if (r > 0)                                                      \
				return VC_PUSH_MISS;                                    \
		}                                                                       \
	}

VC_DEFINE_FAST(mm_cid, VC_RSEQ_INDEX_MM_CID)
VC_DEFINE_FAST(cpu_id, VC_RSEQ_INDEX_CPU_ID)

/* Pop an object of class c into *out; false on a miss (*out untouched). The
 * common mode (mm_cid, no node tags) is tested together with the id's range: ids
 * are bounded by vc_g.mm_cid_limit, which is 0 in every other mode, so those fail
 * the first attempt at once and take the switch. A miss in the common mode is final
 * (the switch has nothing more for it). */
static inline bool vc_cache_pop(unsigned c, void **out)
{
	if (VC_LIKELY(vc_cache_pop_mm_cid(c, false, &vc_g.mm_cid_limit, out)))
		return true;
	switch (vc_g.fast) {
	case VC_FAST_CPU_ID:
		return vc_cache_pop_cpu_id(c, false, &vc_g.nvcpus, out);
	case VC_FAST_MM_CID_NUMA:
		return vc_cache_pop_mm_cid(c, true, &vc_g.nvcpus, out);
	case VC_FAST_CPU_ID_NUMA:
		return vc_cache_pop_cpu_id(c, true, &vc_g.nvcpus, out);
	default:
		return false;
	}
}

/* Push p, an object whose span counts the lanes of the bit mask `lanes` as local
 * (a page entry's local_lanes), in the common mode (mm_cid, no node tags):
 * VC_PUSH_REMOTE when the id read is of another lane (remote_free.c); a miss in
 * every other mode (vc_cache_push_other_modes then). */
static inline enum vc_push vc_cache_push_common(unsigned c, void *p, unsigned lanes)
{
	return vc_cache_push_mm_cid(c, p, 0, lanes, false, &vc_g.mm_cid_limit);
}

/* The other modes' push of p, an object of node `node`: a miss when the cache
 * holds another node's objects. The lane test is the common mode's alone
 * (vc_local_lanes). */
static inline enum vc_push vc_cache_push_other_modes(unsigned c, void *p, unsigned node)
{
	switch (vc_g.fast) {
	case VC_FAST_CPU_ID:
		return vc_cache_push_cpu_id(c, p, node, VC_ALL_LANES, false, &vc_g.nvcpus);
	case VC_FAST_MM_CID_NUMA:
		return vc_cache_push_mm_cid(c, p, node, VC_ALL_LANES, true, &vc_g.nvcpus);
	case VC_FAST_CPU_ID_NUMA:
		return vc_cache_push_cpu_id(c, p, node, VC_ALL_LANES, true, &vc_g.nvcpus);
	default:
		return VC_PUSH_MISS;
	}
}

/* Push p, an object of node `node`, whatever its lane: the common mode's push, then
 * the other modes' (the dispatch of vc_cache_pop). */
static inline bool vc_cache_push(unsigned c, void *p, unsigned node)
{
	enum vc_push r = vc_cache_push_common(c, p, VC_ALL_LANES);
	if (r == VC_PUSH_MISS)
		r = vc_cache_push_other_modes(c, p, node);
	return r == VC_PUSHED;
}

/* Push p whatever its node and the region's tag: into the region of a roaming
 * thread (vcpu_cache.c), which exists in node-tagged vcpu mode only. */
static inline bool vc_cache_push_any_node(unsigned c, void *p)
{
	return vc_g.fast == VC_FAST_MM_CID_NUMA &&
	       vc_cache_push_mm_cid(c, p, 0, VC_ALL_LANES, false, &vc_g.nvcpus) == VC_PUSHED;
}

#else
/* No critical sections on this architecture (rseq/rseq.h): the allocator runs its
 * fallback mode only (init.c), where the per-vCPU caches are never used. */
static inline bool vc_cache_pop(unsigned c, void **out)
{
	(void)c;
	(void)out;
	return false;
}
static inline enum vc_push vc_cache_push_common(unsigned c, void *p, unsigned lanes)
{
	(void)c;
	(void)p;
	(void)lanes;
	return VC_PUSH_MISS;
}
static inline enum vc_push vc_cache_push_other_modes(unsigned c, void *p, unsigned node)
{
	(void)c;
	(void)p;
	(void)node;
	return VC_PUSH_MISS;
}
static inline bool vc_cache_push(unsigned c, void *p, unsigned node)
{
	(void)c;
	(void)p;
	(void)node;
	return false;
}
static inline bool vc_cache_push_any_node(unsigned c, void *p)
{
	(void)c;
	(void)p;
	return false;
}
#endif

#endif
