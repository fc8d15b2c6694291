/* allocator/alloc_fast.h - the hit paths of malloc and free, inline.
 *
 * They are compiled where the exported names are defined (override.c, and the C++
 * operators of override_new.c), so that a program's call lands on the fast path
 * itself, without a jump through a wrapper; alloc.c uses them too (vc_free_sized
 * for the compatibility interfaces, the checked free of a small object). What is
 * not a hit is out of line in alloc.c (the functions declared below).
 *
 * free() of a small object: registry byte of the pointer's unit, the segment's page
 * entry (struct vc_page_entry: class, node, span start, tag key), word 1 of the
 * object (its free tag), then the vCPU cache. The entry proves that the pointer is
 * the start of a carved object (a whole multiple of the class size from the span
 * start, below the span's carved count) and the tag that the object is not free;
 * anything else goes to vc_free_checked, which reports misuse and aborts.
 */
#ifndef VC_ALLOC_FAST_H
#define VC_ALLOC_FAST_H

#include "vcpu_cache.h"

/* alloc.c: the paths that are not hits. */
void *vc_malloc_slow(size_t n) VC_HIDDEN; /* after vc_malloc_hit's miss */
void vc_free_small_missed(unsigned c, void *p, enum vc_push r) VC_HIDDEN;
void vc_free_checked(void *p, const char *func) VC_HIDDEN;
void vc_free_sized_checked(void *p, size_t n) VC_HIDDEN;

static inline void *vc_finish_small(void *p)
{
	((uint64_t *)p)[1] = 0; /* clear the free tag */
	return p;
}

/* A small object of n bytes from the vCPU cache into *out; false when n is not
 * small or the cache misses. */
static inline bool vc_malloc_hit(size_t n, void **out)
{
	/* Sizes up to 1 KiB first: one table lookup, one compare on the way. */
	unsigned c;
	if (VC_LIKELY(n <= 1024))
		c = vc_small_class[(n + 15) >> 4];
	else if (VC_LIKELY(n <= VC_SMALL_MAX))
		c = vc_class_of(n);
	else
		return false;
	if (VC_UNLIKELY(!vc_cache_pop(c, out)))
		return false;
	vc_finish_small(*out);
	return true;
}

static inline void *vc_malloc_inline(size_t n)
{
	void *p;
	if (VC_LIKELY(vc_malloc_hit(n, &p)))
		return p;
	return vc_malloc_slow(n);
}

/* p is the start of an object of class c in a span whose tag key is tag_key and
 * whose page entry's local_lanes is `local_lanes`: check its free tag, tag it,
 * cache it in the common mode; anything else (the other modes, a full cache, a
 * remote lane) is vc_free_small_missed's. Only p and c are live across the push:
 * with the node and the other modes' sections inline, free's hit path saved and
 * restored two registers. */
static inline void vc_free_small(unsigned c, uint64_t tag_key, unsigned local_lanes, void *p,
				 const char *func)
{
	uint64_t tag = (uint64_t)(uintptr_t)p ^ tag_key;
	uint64_t *w = p;
	if (VC_UNLIKELY(w[1] == tag))
		vc_report("double free", func, p);
	w[1] = tag;
	enum vc_push r = vc_cache_push_common(c, p, local_lanes);
	if (VC_LIKELY(r == VC_PUSHED))
		return;
	vc_free_small_missed(c, p, r);
}

/* The page entry of p when p is the start of a carved object of a SMALL span
 * whose class is no smaller than `size`, else NULL (anything else, misuse
 * included, takes the checked path). */
static inline const struct vc_page_entry *vc_small_entry(const void *p, size_t size)
{
	uintptr_t a = (uintptr_t)p, unit = a >> VC_UNIT_SHIFT;
	if (VC_UNLIKELY(unit >= VC_REGISTRY_BYTES || vc_registry_bytes[unit] != VC_UNIT_SEGMENT))
		return NULL;
	const struct vc_segment *s = vc_segment_of(p);
	const struct vc_page_entry *e = vc_page_entry_of(s, p);
	/* Entries of other spans have no objects: the check below fails for them. */
	uint32_t off = (uint32_t)a - e->span_low;
	/* objects rises while the span is carved (central.c, relaxed stores): any value
	 * read covers the objects handed out before this one reached the caller. */
	if (VC_LIKELY(vc_object_index_of(e->inverse, e->shift, off) <
			      __atomic_load_n(&e->objects, __ATOMIC_RELAXED) &&
		      size <= vc_classes[e->sizeclass].size))
		return e;
	return NULL;
}

static inline void vc_free_inline(void *p, const char *func)
{
	/* The common case inline: a small object in a segment, at an object start. */
	const struct vc_page_entry *e = vc_small_entry(p, 0);
	if (VC_LIKELY(e != NULL)) {
		vc_free_small(e->sizeclass, e->tag_key, e->local_lanes, p, func);
		return;
	}
	if (p == NULL)
		return;
	vc_free_checked(p, func);
}

/* free_sized(p, n) and C++'s sized delete: inline like free() when n fits the
 * block; a size larger than the block is reported by the checked path. */
static inline void vc_free_sized_inline(void *p, size_t n)
{
	const struct vc_page_entry *e = vc_small_entry(p, n);
	if (VC_LIKELY(e != NULL)) {
		vc_free_small(e->sizeclass, e->tag_key, e->local_lanes, p, "free_sized");
		return;
	}
	vc_free_sized_checked(p, n);
}

#endif
