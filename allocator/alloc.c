/* allocator/alloc.c - the malloc family, on top of the per-vCPU caches.
 *
 *   small (<= 256 KiB):  size class -> vCPU cache pop (rseq) -> slow path refill
 *   large (<= 1 MiB):    a LARGE span from the page heap of the current node
 *   huge (> 1 MiB, or aligned above a page): a mapping of its own
 *
 * free() finds an object's kind in O(1) (alloc_fast.h has the hit paths of malloc and
 * free): registry byte of its unit, then the segment's page entry. Every path checks
 * that the pointer is the start of an object vcmalloc handed out and that the object
 * is not already free; misuse is reported (check.c) and aborts. errno is preserved
 * by free.
 */
#include "alloc_fast.h"

#include <errno.h>
#include <string.h>

uint64_t vc_stat_large_bytes;

/* Out of memory (the OS refused a mapping): give back everything vcmalloc holds
 * free (vCPU caches, central lists, free pages, whole segments) so that the retry
 * can map again, e.g. under RLIMIT_AS. */
static VC_NOINLINE void recover_from_oom(void)
{
	vc_release_free_memory(VC_RELEASE_WITH_CACHES);
}

static VC_NOINLINE void *malloc_small_slow(unsigned c)
{
	void *p = vc_cache_alloc_slow(c);
	if (!p) {
		recover_from_oom();
		p = vc_cache_alloc_slow(c);
	}
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	return vc_finish_small(p);
}

/* Bytes of the LARGE span that holds n bytes: whole span pages. */
static inline size_t span_bytes_for(size_t n)
{
	return ((n + VC_PAGE_SIZE - 1) >> VC_PAGE_SHIFT) << VC_PAGE_SHIFT;
}

static void *malloc_large(size_t n)
{
	vc_ensure_init();
	size_t pages = (n + VC_PAGE_SIZE - 1) >> VC_PAGE_SHIFT;
	unsigned node = vc_current_node();
	struct vc_span *sp = vc_pageheap_alloc(node, pages, VC_SPAN_LARGE, -1);
	if (!sp) {
		recover_from_oom();
		sp = vc_pageheap_alloc(node, pages, VC_SPAN_LARGE, -1);
	}
	if (!sp) {
		errno = ENOMEM;
		return NULL;
	}
	sp->large_size = pages << VC_PAGE_SHIFT;
	__atomic_fetch_add(&vc_stat_large_bytes, sp->large_size, __ATOMIC_RELAXED);
	vc_maintain(); /* no lock held: the page heap's deferred work, if due */
	return vc_span_start(sp);
}

static VC_NOINLINE void *huge_alloc(size_t n, size_t align)
{
	vc_ensure_init();
	void *p = vc_huge_alloc(n, align);
	if (!p) {
		recover_from_oom();
		p = vc_huge_alloc(n, align);
	}
	return p; /* errno is ENOMEM when NULL */
}

/* Above VC_SMALL_MAX: large, huge, or too large. */
static void *malloc_big(size_t n)
{
	if (n > PTRDIFF_MAX) {
		errno = ENOMEM;
		return NULL;
	}
	if (n <= VC_LARGE_MAX)
		return malloc_large(n);
	return huge_alloc(n, VC_PAGE_SIZE);
}

/* malloc after vc_malloc_hit missed: a small size's cache was empty (or unusable
 * for this thread), or n is not small. */
VC_NOINLINE void *vc_malloc_slow(size_t n)
{
	if (n <= VC_SMALL_MAX)
		return malloc_small_slow(vc_class_of(n));
	return malloc_big(n);
}

/* What p is, checked. Sets *span for small and large objects, *huge for huge. */
enum vc_kind { VC_KIND_SMALL, VC_KIND_LARGE, VC_KIND_HUGE };

static VC_NOINLINE __attribute__((noreturn)) void bad_pointer(const void *p, const char *func)
{
	unsigned kind = vc_unit_kind(p);
	/* A huge object starts at its unit's base or at a power-of-two offset of a
	 * page or more (huge.c); anything else in the unit of a freed block, e.g. in a
	 * mapping the kernel placed past that block's end, is an invalid pointer. */
	uintptr_t off = (uintptr_t)p & (VC_UNIT_SIZE - 1);
	if (kind == VC_UNIT_HUGE_FREED && (off & (off - 1)) == 0 &&
	    (off == 0 || off >= VC_PAGE_SIZE))
		vc_report("double free", func, p);
	if (kind == VC_UNIT_SEGMENT_FREED)
		vc_report("double free (or invalid pointer: its segment was returned to the OS)",
			  func, p);
	if (kind == VC_UNIT_SEGMENT) {
		struct vc_span *sp = vc_span_of(vc_segment_of(p), p);
		if (sp && (sp->state == VC_SPAN_FREE || sp->state == VC_SPAN_DECAYING))
			vc_report("double free (or invalid pointer: its pages are free)", func, p);
	}
	vc_report("invalid pointer (not allocated by vcmalloc, or not the start of a block)", func,
		  p);
}

static inline enum vc_kind classify(const void *p, const char *func, struct vc_span **span,
				    struct vc_huge_header **huge)
{
	unsigned kind = vc_unit_kind(p);
	if (VC_LIKELY(kind == VC_UNIT_SEGMENT)) {
		struct vc_segment *s = vc_segment_of(p);
		struct vc_span *sp = vc_span_of(s, p);
		if (VC_UNLIKELY(sp == NULL))
			bad_pointer(p, func);
		*span = sp;
		size_t off = (size_t)((const char *)p - vc_span_start(sp));
		if (VC_LIKELY(sp->state == VC_SPAN_SMALL)) {
			if (VC_UNLIKELY(vc_object_index(&vc_classes[sp->sizeclass], off) >=
					__atomic_load_n(&vc_page_entry_of(s, p)->objects,
							__ATOMIC_RELAXED)))
				bad_pointer(p, func);
			return VC_KIND_SMALL;
		}
		if (sp->state == VC_SPAN_LARGE && off == 0)
			return VC_KIND_LARGE;
		bad_pointer(p, func);
	}
	if (kind == VC_UNIT_HUGE_START || kind == VC_UNIT_HUGE_ALIGNED) {
		struct vc_huge_header *h = vc_huge_lookup(p);
		if (h) {
			*huge = h;
			return VC_KIND_HUGE;
		}
	}
	bad_pointer(p, func);
}

/* After the common mode's push of a small object returned r (not VC_PUSHED): the
 * other modes' push, the remote lane, or the slow path. */
VC_NOINLINE void vc_free_small_missed(unsigned c, void *p, enum vc_push r)
{
	unsigned node = vc_page_entry_of(vc_segment_of(p), p)->node;
	if (r == VC_PUSH_MISS) {
		r = vc_cache_push_other_modes(c, p, node);
		if (VC_LIKELY(r == VC_PUSHED))
			return;
	}
	int saved = errno;
	if (r == VC_PUSH_REMOTE)
		vc_remote_free(c, p, node);
	else
		vc_cache_free_slow(c, p, node);
	errno = saved;
}

static void free_large(struct vc_span *sp)
{
	int saved = errno;
	__atomic_fetch_sub(&vc_stat_large_bytes, sp->large_size, __ATOMIC_RELAXED);
	vc_pageheap_free(sp);
	vc_maintain(); /* no lock held: the page heap's deferred work, if due */
	errno = saved;
}

/* Every free that is not of a small object, and every misuse. */
VC_NOINLINE void vc_free_checked(void *p, const char *func)
{
	struct vc_span *sp = NULL;
	struct vc_huge_header *h = NULL;
	if (VC_UNLIKELY(vc_g.registry == NULL))
		vc_report("invalid pointer (freed before any allocation)", func, p);
	switch (classify(p, func, &sp, &h)) {
	case VC_KIND_SMALL:
		vc_free_small(sp->sizeclass, sp->tag_key,
			      vc_local_lanes(sp->lane, vc_classes[sp->sizeclass].size), p, func);
		return;
	case VC_KIND_LARGE:
		free_large(sp);
		return;
	case VC_KIND_HUGE: {
		int saved = errno;
		vc_huge_free(h);
		errno = saved;
		return;
	}
	}
}

/* Usable size of p; a small object that is already free is reported as
 * `freed_what` (what using a freed pointer means for the caller). */
static size_t usable_of(const void *p, const char *func, const char *freed_what)
{
	struct vc_span *sp = NULL;
	struct vc_huge_header *h = NULL;
	switch (classify(p, func, &sp, &h)) {
	case VC_KIND_SMALL:
		if (((const uint64_t *)p)[1] == vc_tag(p, sp))
			vc_report(freed_what, func, p);
		return vc_classes[sp->sizeclass].size;
	case VC_KIND_LARGE:
		return sp->large_size;
	case VC_KIND_HUGE:
		return h->size;
	}
	return 0;
}

size_t vc_usable_size(const void *p)
{
	if (!p || vc_g.registry == NULL)
		return 0;
	return usable_of(p, "malloc_usable_size", "use of a freed pointer");
}

VC_NOINLINE void vc_free_sized_checked(void *p, size_t n)
{
	if (!p)
		return;
	if (VC_UNLIKELY(vc_g.registry == NULL))
		vc_report("invalid pointer (freed before any allocation)", "free_sized", p);
	size_t usable = usable_of(p, "free_sized", "double free");
	if (VC_UNLIKELY(n > usable))
		vc_report("size mismatch (size larger than the block)", "free_sized", p);
	vc_free_checked(p, "free_sized");
}

void vc_free_sized(void *p, size_t n, size_t align)
{
	(void)align; /* the block's own alignment is what free needs */
	vc_free_sized_inline(p, n);
}

void *vc_calloc(size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	void *p = vc_malloc(total);
	if (!p)
		return NULL;
	if (total > VC_LARGE_MAX) {
		vc_huge_clear(p, total); /* only what a cached mapping's last owner wrote */
		return p;
	}
	memset(p, 0, total);
	return p;
}

void *vc_memalign(size_t align, size_t n)
{
	if (align <= 16)
		return vc_malloc(n);
	if (n > PTRDIFF_MAX) {
		errno = ENOMEM;
		return NULL;
	}
	vc_ensure_init(); /* the class search reads the size table */
	unsigned c = vc_class_for_aligned(n, align);
	if (c) {
		void *p;
		if (VC_LIKELY(vc_cache_pop(c, &p)))
			return vc_finish_small(p);
		return malloc_small_slow(c);
	}
	if (align <= VC_PAGE_SIZE && n <= VC_LARGE_MAX)
		return malloc_large(n < VC_SMALL_MAX + 1 ? VC_SMALL_MAX + 1 : n);
	return huge_alloc(n, align);
}

static void *realloc_move(void *p, size_t old, size_t n);

/* What a block of `old` usable bytes grown to n asks for first: a quarter more than
 * the old block, so that a block grown by small appends moves O(log n) times, not
 * once per size class or page (a string grown to 1 MiB by 8-128 byte appends copied
 * about 60 MiB across the 8 KiB steps of large blocks). n itself when that is more. */
static size_t realloc_grown(size_t old, size_t n)
{
	return old + old / 4 > n ? old + old / 4 : n;
}

/* Grow a large block over the free pages that follow it: to realloc_grown's size
 * when those pages are there, else to n. A string grown by appends to 1 MiB then
 * moves a few times below the large sizes and rarely after. */
static bool realloc_large_in_place(struct vc_span *sp, size_t old, size_t n)
{
	size_t want = realloc_grown(old, n);
	if (want > VC_LARGE_MAX)
		want = VC_LARGE_MAX;
	size_t want_pages = (want + VC_PAGE_SIZE - 1) >> VC_PAGE_SHIFT;
	size_t n_pages = (n + VC_PAGE_SIZE - 1) >> VC_PAGE_SHIFT;
	if (!vc_pageheap_extend(sp, want_pages) && !vc_pageheap_extend(sp, n_pages))
		return false;
	size_t grown = ((size_t)sp->npages << VC_PAGE_SHIFT) - old;
	sp->large_size += grown;
	__atomic_fetch_add(&vc_stat_large_bytes, grown, __ATOMIC_RELAXED);
	return true;
}

/* realloc of p, the start of an object of class c in a span whose tag key is
 * tag_key. */
static void *realloc_small(void *p, unsigned c, uint64_t tag_key, size_t n)
{
	if (((const uint64_t *)p)[1] == ((uintptr_t)p ^ tag_key))
		vc_report("realloc of a freed pointer (double free)", "realloc", p);
	size_t old = vc_classes[c].size;
	/* Same class, or shrinking by less than half: keep the block. */
	if (n <= old && (n >= old / 2 || vc_class_of(n) == c))
		return p;
	return realloc_move(p, old, n);
}

void *vc_realloc(void *p, size_t n)
{
	if (!p)
		return vc_malloc(n);
	if (n == 0) {
		vc_free(p);
		return NULL;
	}
	if (VC_UNLIKELY(vc_g.registry == NULL))
		vc_report("invalid pointer (realloc before any allocation)", "realloc", p);
	if (n > PTRDIFF_MAX) {
		usable_of(p, "realloc", "realloc of a freed pointer (double free)");
		errno = ENOMEM;
		return NULL;
	}
	/* A small block is read through its page entry, as free() reads it. */
	const struct vc_page_entry *e = vc_small_entry(p, 0);
	if (VC_LIKELY(e != NULL))
		return realloc_small(p, e->sizeclass, e->tag_key, n);
	struct vc_span *sp = NULL;
	struct vc_huge_header *h = NULL;
	size_t old;
	switch (classify(p, "realloc", &sp, &h)) {
	case VC_KIND_SMALL:
		return realloc_small(p, sp->sizeclass, sp->tag_key, n);
	case VC_KIND_LARGE:
		old = sp->large_size;
		if (n <= old && n > old / 2)
			return p;
		if (n > old && n <= VC_LARGE_MAX && realloc_large_in_place(sp, old, n))
			return p;
		break;
	case VC_KIND_HUGE:
		old = h->size;
		if (n <= old && n > old / 2)
			return p; /* like a large block: shrinking by less than half */
		if (n > VC_LARGE_MAX) {
			void *q = vc_huge_realloc(h, n);
			if (q)
				return q;
		}
		break;
	default:
		return NULL;
	}
	return realloc_move(p, old, n);
}

/* Before realloc copies `bytes` into q, a block it has just allocated: populate, in
 * one call, the pages the copy will write beyond its span's populated mark
 * (vc_span_populate) or, for a huge block, beyond what an earlier owner of its
 * mapping wrote, instead of a page fault on each (bench/speed's realloc took 63% of
 * its faults in this copy). The copy writes those pages anyway. Objects leave a
 * fresh span in address order (vcpu_cache.c), so the mark follows them. */
static void populate_for_copy(char *q, size_t bytes)
{
	if (vc_unit_kind(q) != VC_UNIT_SEGMENT) {
		vc_huge_populate(q, bytes);
		return;
	}
	struct vc_span *sp = vc_span_of(vc_segment_of(q), q);
	const size_t off = (size_t)(q - vc_span_start(sp));
	vc_span_populate(sp, off / VC_OS_PAGE, vc_page_round(off + bytes) / VC_OS_PAGE);
}

/* realloc by a move: p's block has `old` usable bytes. Growing asks for
 * realloc_grown's size first, the exact size if that fails. */
static void *realloc_move(void *p, size_t old, size_t n)
{
	void *q = NULL;
	if (n > old && realloc_grown(old, n) > n)
		q = vc_malloc(realloc_grown(old, n));
	if (!q)
		q = vc_malloc(n);
	if (!q)
		return NULL;
	populate_for_copy(q, old < n ? old : n);
	memcpy(q, p, old < n ? old : n);
	vc_free(p);
	return q;
}

size_t vc_usable_for(size_t n, size_t align)
{
	if (n > PTRDIFF_MAX)
		return 0;
	vc_ensure_init(); /* the class sizes are filled in at start-up */
	if (align <= 16) {
		if (n <= VC_SMALL_MAX)
			return vc_classes[vc_class_of(n)].size;
		if (n <= VC_LARGE_MAX)
			return span_bytes_for(n);
	} else {
		unsigned c = vc_class_for_aligned(n, align);
		if (c)
			return vc_classes[c].size;
		if (align <= VC_PAGE_SIZE && n <= VC_LARGE_MAX)
			return span_bytes_for(n < VC_SMALL_MAX + 1 ? VC_SMALL_MAX + 1 : n);
	}
	/* A huge block: its object starts a whole number of pages into the mapping,
	 * which ends on a page. */
	size_t rounded = vc_page_round(n);
	return rounded < n ? 0 : rounded;
}

size_t vc_grow_in_place(void *p, size_t n, size_t most)
{
	if (VC_UNLIKELY(vc_g.registry == NULL))
		vc_report("invalid pointer (resize before any allocation)", "xallocx", p);
	if (most < n)
		most = n;
	struct vc_span *sp = NULL;
	struct vc_huge_header *h = NULL;
	switch (classify(p, "xallocx", &sp, &h)) {
	case VC_KIND_SMALL:
		if (((const uint64_t *)p)[1] == vc_tag(p, sp))
			vc_report("use of a freed pointer", "xallocx", p);
		return vc_classes[sp->sizeclass].size;
	case VC_KIND_LARGE: {
		size_t old = sp->large_size;
		if (n <= old || n > VC_LARGE_MAX)
			return old;
		size_t top = most < VC_LARGE_MAX ? most : VC_LARGE_MAX;
		if (vc_pageheap_extend(sp, span_bytes_for(top) >> VC_PAGE_SHIFT) ||
		    vc_pageheap_extend(sp, span_bytes_for(n) >> VC_PAGE_SHIFT)) {
			size_t grown = ((size_t)sp->npages << VC_PAGE_SHIFT) - old;
			sp->large_size += grown;
			__atomic_fetch_add(&vc_stat_large_bytes, grown, __ATOMIC_RELAXED);
		}
		return sp->large_size;
	}
	case VC_KIND_HUGE:
		if (n > h->size && n <= PTRDIFF_MAX) {
			size_t top = most <= PTRDIFF_MAX ? most : n;
			if (vc_huge_realloc(h, top) == NULL && top > n)
				vc_huge_realloc(h, n);
		}
		return h->size;
	}
	return 0;
}
