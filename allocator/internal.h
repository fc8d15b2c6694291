/* allocator/internal.h - the map of vcmalloc: global state and every cross-file
 * function, grouped by the file that defines it. Layers, bottom up:
 *   os_linux.c -> segment.c (registry, segments, huge blocks) -> pageheap.c (spans)
 *   -> central.c (transfer arrays, span free lists) -> vcpu_cache.c (per-vCPU caches,
 *   reclaim; over vcpu_slab.c, the regions and their stack words, and vcpu_policy.c,
 *   the capacity policy), remote_free.c (frees from another lane) -> alloc.c
 *   (malloc family) -> override.c / override_new.cc (symbols).
 *   init.c, options.c, stats.c and check.c serve all layers; compat_*.c export
 *   jemalloc's, tcmalloc's and glibc's non-standard entry points over alloc.c and
 *   stats.c.
 */
#ifndef VC_INTERNAL_H
#define VC_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "os.h"
#include "types.h"
#include "vcmalloc.h"

#define VC_HIDDEN __attribute__((visibility("hidden")))
#define VC_EXPORT __attribute__((visibility("default")))
#define VC_LIKELY(x) __builtin_expect(!!(x), 1)
#define VC_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define VC_NOINLINE __attribute__((noinline))

/* Build options as typed constants: both branches always compile. */
static const int vc_config_assert_level = VC_CONFIG_ASSERT_LEVEL;
static const bool vc_config_stats = VC_CONFIG_STATS;

/* ---- test hooks ----
 * Compiled only into the white-box test build of the allocator (-DVC_TEST_HOOKS=1,
 * tests/meson.build), never into the libraries: tests linked with that build set
 * these to reach interleavings and states that timing alone cannot produce. */
#ifndef VC_TEST_HOOKS
#define VC_TEST_HOOKS 0
#endif
#if VC_TEST_HOOKS
/* The vCPU id space is at least this large (as on a machine with that many
 * possible CPUs; ids above the real count are never used). */
#define VC_TEST_MIN_VCPUS 1024
struct vc_test_hooks {
	uint64_t clock_offset_ms;  /* added to vc_os_now_ms() */
	void (*tick_due)(void);    /* reclaim tick found due, before taking its lock */
	void (*tick_scan)(void);   /* reclaim scan, reclaim lock held */
	void (*region_release)(void); /* a drained region's release begun, no lock held */
	void (*region_open)(void);    /* a region's open half done (its id's lock held) */
	void (*region_drain)(void);   /* a drain's objects moved, the region still
					 populated (its id's lock held) */
	void (*fallback_spill)(void); /* a fallback free's spill in central, the stack's
					 header not yet lowered (the lock held) */
};
extern struct vc_test_hooks vc_test_hooks VC_HIDDEN;
#define VC_TEST_HOOK(name) (vc_test_hooks.name ? vc_test_hooks.name() : (void)0)
#else
#define VC_TEST_HOOK(name) ((void)0)
#endif

/* ---- options.c: VCMALLOC_* environment, read once at init (the table: options.def) ---- */
struct vc_options {
	int index;                  /* requested mode, -1: automatic */
	int stats;                  /* 0 none, 1 text, 2 json */
	uint64_t vcpu_cache_bytes;  /* per-vCPU budget of cached object bytes */
	uint64_t reclaim_ms;        /* idle time before a vCPU cache is drained */
	uint64_t decay_ms;          /* free pages kept this long before release */
	int numa;                   /* 0 off, 1 on (default when > 1 node) */
	int huge_pages;             /* 0: segments opt out of transparent huge pages */
	int background;             /* 1: the maintenance thread may start */
};
void vc_options_load(struct vc_options *o) VC_HIDDEN;

/* ---- small helpers ---- */

/* n rounded up to whole OS pages (0 when that overflows). */
static inline size_t vc_page_round(size_t n)
{
	return (n + VC_OS_PAGE - 1) & ~(size_t)(VC_OS_PAGE - 1);
}

/* *p = max(*p, v), atomically (peaks and high-water marks). */
static inline void vc_atomic_raise_u32(uint32_t *p, uint32_t v)
{
	uint32_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
	while (v > cur &&
	       !__atomic_compare_exchange_n(p, &cur, v, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
}

/* counter += n for a counter of a vCPU id, written by the thread running as that id
 * (relaxed, no locked instruction): a writer preempted between the load and the
 * store can lose another's update, which these heuristics tolerate. A locked add
 * here cost 20-40 cycles per slow path, the largest cost of count_slow_event. */
static inline uint32_t vc_id_counter_add(uint32_t *counter, uint32_t n)
{
	uint32_t v = __atomic_load_n(counter, __ATOMIC_RELAXED) + n;
	__atomic_store_n(counter, v, __ATOMIC_RELAXED);
	return v;
}

static inline void vc_atomic_raise_u64(uint64_t *p, uint64_t v)
{
	uint64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
	while (v > cur &&
	       !__atomic_compare_exchange_n(p, &cur, v, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
}

/* field += d for a counter written only under its lock and read unlocked elsewhere
 * (statistics: relaxed atomic loads): a plain read and a relaxed store, what a plain
 * += compiles to, but not a data race. */
#define LOCKED_ADD(field, d) __atomic_store_n(&(field), (field) + (d), __ATOMIC_RELAXED)

/* ---- global state (init.c) ---- */
struct vc_global {
	int fast;                   /* enum vc_fast_path (vcpu_cache.h); 4 until start-up */
	uint32_t mm_cid_limit;      /* nvcpus when fast is VC_FAST_MM_CID, else 0: the
				       hit paths' one test for both the mode and the id */
	int mode;                   /* enum vcmalloc_index */
	bool numa_cache;            /* vCPU caches are node-tagged */
	bool remote_lanes;          /* remote_free.c's lane test is on (mm_cid, no node
				       tags): set once at start-up, before any span */
	int rseq_index;             /* VC_RSEQ_INDEX_MM_CID or _CPU_ID in rseq modes */
	uint32_t nvcpus;            /* possible CPUs: size of the vCPU id space */
	uint32_t nnodes;
	uint64_t secret;
	char *vcpu_regions;         /* nvcpus regions of VC_VCPU_REGION bytes */
	struct vc_vcpu *vcpus;      /* nvcpus states */
	uint8_t *registry;          /* one byte per unit of the address space */
	struct vc_options opt;
};
extern struct vc_global vc_g VC_HIDDEN;
extern int vc_initialised VC_HIDDEN; /* 0 no, 1 in progress, 2 done */
void vc_init_slow(void) VC_HIDDEN;
static inline void vc_ensure_init(void)
{
	if (VC_UNLIKELY(__atomic_load_n(&vc_initialised, __ATOMIC_ACQUIRE) != 2))
		vc_init_slow();
}
void vc_thread_note(void) VC_HIDDEN; /* arms the thread-exit hook once per thread */
/* Threads noted and not yet exited (0 when the exit hook could not be set up). */
uint32_t vc_live_threads(void) VC_HIDDEN;
/* pthread_create through to the C library's, noting the new thread at its start. */
int vc_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
		      void *arg) VC_HIDDEN;

/* ---- maintenance.c: the periodic work (slow paths, background) and release on request ---- */
/* Slow paths and thread exit: what is due of the decays and the reclaim tick. */
void vc_maintain(void) VC_HIDDEN;
/* Start the maintenance thread once, with `create` (the C library's pthread_create).
 * Only from contexts outside every allocator and loader lock (maintenance.c). */
void vc_maintenance_start(int (*create)(pthread_t *, const pthread_attr_t *,
					 void *(*)(void *), void *)) VC_HIDDEN;
void vc_maintenance_after_fork_child(void) VC_HIDDEN;
/* Give back everything free now (maintenance.c): the central lists' objects to their
 * spans, free pages and cached huge mappings to the OS; VC_RELEASE_WITH_CACHES
 * drains every vCPU cache first. Called with no allocator lock held. */
enum vc_release { VC_RELEASE_FREE, VC_RELEASE_WITH_CACHES };
void vc_release_free_memory(enum vc_release what) VC_HIDDEN;
/* The same for one node's page heap: the central lists (shared by the nodes' spans)
 * flushed whole, then that node's free pages to the OS. */
void vc_release_node_free_memory(unsigned node) VC_HIDDEN;

/* ---- sizeclass.c ---- */
extern struct vc_class_info vc_classes[VC_NUM_CLASSES] VC_HIDDEN;
extern const uint8_t vc_small_class[(1024 >> 4) + 1] VC_HIDDEN;
void vc_sizeclass_init(void) VC_HIDDEN;
/* Class of a request 0 < n <= VC_SMALL_MAX (n == 0 counts as 1). */
static inline unsigned vc_class_of(size_t n)
{
	if (VC_LIKELY(n <= 1024))
		return vc_small_class[(n + 15) >> 4];
	unsigned k = 63u - (unsigned)__builtin_clzll((unsigned long long)(n - 1));
	if (n <= VC_FINE_CLASS_MAX) {
		unsigned j = (unsigned)((n - 1 - ((size_t)1 << k)) >> (k - 3)) + 1;
		return 8 + (k - 7) * 8 + j;
	}
	unsigned j = (unsigned)((n - 1 - ((size_t)1 << k)) >> (k - 2)) + 1;
	return VC_FINE_CLASSES + (k - VC_FINE_CLASS_LOG) * 4 + j;
}
/* Index of the object of class c starting `off` bytes into its span, or a value
 * >= vc_classes[c].objects when no object of the span starts there (types.h). */
static inline uint64_t vc_object_index_of(uint64_t inverse, unsigned shift, uint64_t off)
{
	uint64_t x = off * inverse;
	return (x >> shift) | (x << ((64 - shift) & 63));
}
static inline uint64_t vc_object_index(const struct vc_class_info *ci, uint64_t off)
{
	return vc_object_index_of(ci->inverse, ci->shift, off);
}
/* Smallest class whose objects all have alignment align (<= a page), or 0. */
unsigned vc_class_for_aligned(size_t n, size_t align) VC_HIDDEN;

/* ---- segment.c: registry, segments ---- */
#define VC_REGISTRY_BYTES ((size_t)1 << (VC_ADDRESS_BITS - VC_UNIT_SHIFT))
extern uint8_t vc_registry_bytes[VC_REGISTRY_BYTES] VC_HIDDEN; /* vc_g.registry after start-up */
static inline unsigned vc_unit_kind(const void *p)
{
	uintptr_t a = (uintptr_t)p;
	if (VC_UNLIKELY(a >> VC_ADDRESS_BITS))
		return VC_UNIT_FOREIGN;
	return vc_g.registry[a >> VC_UNIT_SHIFT];
}
static inline struct vc_segment *vc_segment_of(const void *p)
{
	return (struct vc_segment *)((uintptr_t)p & ~(uintptr_t)(VC_UNIT_SIZE - 1));
}
static inline struct vc_span *vc_span_of(const struct vc_segment *s, const void *p)
{
	return s->pagemap[((uintptr_t)p - (uintptr_t)s) >> VC_PAGE_SHIFT];
}
static inline const struct vc_page_entry *vc_page_entry_of(const struct vc_segment *s,
							   const void *p)
{
	/* Page index times the entry size, from the address bits alone. */
	uintptr_t off = ((uintptr_t)p >> (VC_PAGE_SHIFT - 5)) &
			((uintptr_t)(VC_PAGES_PER_SEGMENT - 1) << 5);
	_Static_assert(sizeof(struct vc_page_entry) == 32, "page entries are 32 bytes");
	return (const struct vc_page_entry *)((const char *)s->entries + off);
}
static inline char *vc_span_start(const struct vc_span *sp)
{
	return (char *)vc_segment_of(sp) + ((size_t)sp->first_page << VC_PAGE_SHIFT);
}
/* Before vcmalloc writes the OS pages [from, to) of the SMALL or LARGE span sp
 * (counted from its start): populate, in one call, those past its populated mark
 * (types.h), and raise the mark to `to`. Nothing below the mark: a call on resident
 * pages costs more than the faults it would save. Carves (under the central lock)
 * and reallocs into the span's objects (under no lock) call it; the mark never
 * falls while the span is in use, and a lost race costs at most one call on pages
 * already resident, or a fault that one would have saved. */
void vc_span_populate(struct vc_span *sp, size_t from, size_t to) VC_HIDDEN;
void vc_registry_init(void) VC_HIDDEN;
/* Registry bytes of the units of [p, p + size): first for p's unit, rest for the
 * others. Caller holds vc_os_lock and owns those units. */
void vc_registry_set(const void *p, size_t size, unsigned first, unsigned rest) VC_HIDDEN;
struct vc_segment *vc_segment_map(unsigned node) VC_HIDDEN;
void vc_segment_unmap(struct vc_segment *s) VC_HIDDEN;
extern vc_lock_t vc_os_lock VC_HIDDEN;

/* ---- huge.c: huge blocks and the cache of freed huge mappings ---- */
/* A huge block of size bytes aligned to align; errno ENOMEM and NULL on failure. */
void *vc_huge_alloc(size_t size, size_t align) VC_HIDDEN;
/* Header of a huge object p, or NULL when p is not a live huge object's start. */
struct vc_huge_header *vc_huge_lookup(const void *p) VC_HIDDEN;
/* Free a live huge block; its mapping may stay cached for reuse. */
void vc_huge_free(struct vc_huge_header *h) VC_HIDDEN;
/* Resize a huge block where it is; NULL when it has to move (the caller copies). */
void *vc_huge_realloc(struct vc_huge_header *h, size_t size) VC_HIDDEN;
/* calloc of the huge block p just allocated with n bytes: zero what an earlier
 * owner of its mapping may have written (a fresh mapping reads as zero). */
void vc_huge_clear(void *p, size_t n) VC_HIDDEN;
/* Populate the pages of [p, p + n) that the huge block p, just allocated by this
 * thread, has not had written yet (those past its dirty bytes: never touched, or
 * given back to the OS), before the caller writes them all. */
void vc_huge_populate(void *p, size_t n) VC_HIDDEN;
/* Unmap cached mappings idle longer than the decay time at now (ms of vc_os_now_ms);
 * cheap when the last decay is recent (slow paths call it). */
void vc_huge_maybe_decay(uint64_t now) VC_HIDDEN;
/* Unmap every cached mapping now (vcmalloc_release_free_memory, malloc_trim, OOM). */
void vc_huge_release_all(void) VC_HIDDEN;
extern uint64_t vc_huge_mapped_bytes VC_HIDDEN; /* mappings of live huge blocks */
extern uint64_t vc_huge_cached_bytes VC_HIDDEN; /* mappings kept in the cache */
extern uint64_t vc_huge_count VC_HIDDEN;        /* live huge blocks */
extern vc_lock_t vc_huge_lock VC_HIDDEN;        /* the cache (lock order: lock.h) */

/* ---- pageheap.c: FREE spans per node ---- */
extern struct vc_pageheap vc_pageheaps[VC_MAX_NODES] VC_HIDDEN;
void vc_pageheap_init(void) VC_HIDDEN;
/* A span of npages pages in state `state` (SMALL or LARGE) from node's heap; NULL:
 * OOM. lane >= 0 places a SMALL span next to the previous span of that central lane
 * (central.c), -1 anywhere. The page map is set; the page entries of a LARGE span
 * too, a SMALL span's are its maker's to publish (vc_span_publish). */
struct vc_span *vc_pageheap_alloc(unsigned node, size_t npages, unsigned state,
				  int lane) VC_HIDDEN;
bool vc_pageheap_extend(struct vc_span *sp, size_t npages) VC_HIDDEN;
void vc_pageheap_free(struct vc_span *sp) VC_HIDDEN;
/* Write sp's page entries (struct vc_page_entry) from its fields: central.c calls it
 * once a new SMALL span has its class, before any of its objects is handed out. */
void vc_span_publish(struct vc_span *sp) VC_HIDDEN;
/* Release FREE pages idle longer than the decay (all of them when force). */
void vc_pageheap_decay(unsigned node, bool force) VC_HIDDEN;
/* Release free spans idle for the decay time: one batch per node whose last decay
 * is older than the decay time at `now` (ms of vc_os_now_ms; slow paths), or every
 * aged span of every node (every_batch: the maintenance thread). */
void vc_pageheap_maybe_decay(uint64_t now, bool every_batch) VC_HIDDEN;
/* The page heap's deferred work (pageheap.c), then vc_pageheap_maybe_decay. Called
 * with no allocator lock held. */
void vc_pageheap_maintain(uint64_t now, bool every_batch) VC_HIDDEN;
/* Some node holds free pages that are still resident (read without the locks). */
bool vc_pageheap_holds_resident_free(void) VC_HIDDEN;
/* Bytes the page heap's release calls gave back that spans later faulted in again
 * (statistic os_refault_bytes; the release budget charges them). */
extern uint64_t vc_pageheap_refault_bytes VC_HIDDEN;

/* ---- central.c: per (node, class) transfer arrays and span lists ---- */
extern struct vc_central *vc_central_nodes[VC_MAX_NODES] VC_HIDDEN;
static inline struct vc_central *vc_central_of(unsigned node, unsigned c)
{
	return &vc_central_nodes[node][c];
}
void vc_central_init(void) VC_HIDDEN;
/* Up to n objects of (node, class c) into out; returns how many (0: OOM). lane: the
 * caller's vCPU id (any number; taken modulo the lanes). */
unsigned vc_central_remove(unsigned node, unsigned c, unsigned lane, void **out,
			   unsigned n) VC_HIDDEN;
/* The same from the objects the node's lists hold free (transfer array, spans in
 * use), without making a span: 0 when there are none. */
unsigned vc_central_remove_free(unsigned node, unsigned c, unsigned lane, void **out,
				unsigned n) VC_HIDDEN;
/* Give n free objects (all tagged free) of class c back. */
void vc_central_insert(unsigned c, void *const *in, unsigned n) VC_HIDDEN;
/* Empty the transfer arrays into spans and free wholly free spans. */
void vc_central_flush(void) VC_HIDDEN;
void vc_central_trim_idle(void) VC_HIDDEN;
static inline uint64_t vc_tag(const void *p, const struct vc_span *sp)
{
	return (uint64_t)(uintptr_t)p ^ sp->tag_key;
}

/* ---- remote_free.c: frees from another lane of objects that share cache lines ---- */
/* Classes up to one cache line: most of such an object's line is its neighbours'.
 * (Up to 128 B, prodcons ran 14-26% slower than with no remote path at all: each
 * remote object costs a central insert and a refill; at 64 B, 3% of its objects.) */
#define VC_REMOTE_MAX_SIZE 64
/* The page entry's local_lanes of a SMALL span of lane `lane` and class size
 * `size`: every lane for large classes and outside the common mode. */
static inline uint32_t vc_local_lanes(unsigned lane, uint32_t size)
{
	return vc_g.remote_lanes && size <= VC_REMOTE_MAX_SIZE
		       ? VC_LANE_MASK(1u << (lane % VC_CENTRAL_LANES))
		       : VC_ALL_LANES;
}
/* Whether class c's frees from a foreign lane take the remote path (its spans'
 * local_lanes name one lane). */
static inline bool vc_class_has_remote_path(unsigned c)
{
	return vc_local_lanes(0, vc_classes[c].size) != VC_ALL_LANES;
}
void vc_remote_init(void) VC_HIDDEN;
/* p (of class c, node `node`, tagged free) was freed by a thread running as an id of
 * another lane than its span's. */
void vc_remote_free(unsigned c, void *p, unsigned node) VC_HIDDEN;
/* idx's vCPU lock held: its buffered remote frees to central. */
void vc_remote_flush_locked(uint32_t idx) VC_HIDDEN;

/* ---- vcpu_cache.c: per-vCPU caches ---- */
void vc_cache_init(void) VC_HIDDEN;
void *vc_cache_alloc_slow(unsigned c) VC_HIDDEN;
void vc_cache_free_slow(unsigned c, void *p, unsigned node) VC_HIDDEN;
int vc_cache_reclaim(bool force) VC_HIDDEN;
/* The reclaim tick, when half a reclaim period has passed (maintenance.c): true
 * when this call scanned (the period's other periodic work is then due). */
bool vc_cache_tick(void) VC_HIDDEN;
/* Drain the cache of the vCPU id this thread runs as now; 1 if it was drained. */
int vc_cache_drain_current(void) VC_HIDDEN;
void vc_cache_lock_all(void) VC_HIDDEN;
void vc_cache_unlock_all(bool child, bool locks_taken) VC_HIDDEN;
/* Statistics of the per-vCPU layer. */
void vc_cache_stats(struct vcmalloc_stats *st) VC_HIDDEN;
/* vcmalloc_stats()'s allocated_bytes alone (stats.c): walks the central lists and
 * the populated vCPU caches, takes no lock. */
uint64_t vc_stats_live_bytes(void) VC_HIDDEN;
extern uint64_t vc_cache_bytes_peak VC_HIDDEN;
extern uint32_t vc_cache_populated_now VC_HIDDEN;
extern uint32_t vc_cache_populated_peak VC_HIDDEN;
extern uint64_t vc_cache_reclaims VC_HIDDEN;
extern uint64_t vc_cache_node_moves VC_HIDDEN;
extern uint64_t vc_cache_fallback_ops VC_HIDDEN;
extern uint64_t vc_cache_surplus_drains VC_HIDDEN;

/* ---- alloc.c: the malloc family (exported through override.c; vc_malloc and vc_free
 * are defined there, over alloc_fast.h) ---- */
void *vc_malloc(size_t n) VC_HIDDEN;
void vc_free(void *p) VC_HIDDEN;
void *vc_calloc(size_t n, size_t size) VC_HIDDEN;
void *vc_realloc(void *p, size_t n) VC_HIDDEN;
void *vc_memalign(size_t align, size_t n) VC_HIDDEN;
size_t vc_usable_size(const void *p) VC_HIDDEN;
void vc_free_sized(void *p, size_t n, size_t align) VC_HIDDEN;
/* Usable size of the block vc_memalign(align, n) returns (vc_malloc(n) for align
 * <= 16), without allocating; 0 when that fails for its size. For a huge block it
 * is the size of a freshly mapped one, the least it can be: a block served from a
 * cached mapping may be larger (huge.c). */
size_t vc_usable_for(size_t n, size_t align) VC_HIDDEN;
/* Grow the block p where it is to hold at least n bytes, to `most` if it can (a
 * large block over the free pages after it, a huge one over the address space or
 * cached mapping after it; a small block keeps its class). Never moves, never
 * shrinks. Returns the usable size after. p is checked like free's argument. */
size_t vc_grow_in_place(void *p, size_t n, size_t most) VC_HIDDEN;

/* ---- stats.c ---- */
extern uint64_t vc_stat_large_bytes VC_HIDDEN; /* bytes in live LARGE spans */
void vc_stats_at_exit(void) VC_HIDDEN;
/* The figures the compatibility interfaces (compat_*.c) report, beyond struct
 * vcmalloc_stats: one snapshot like vcmalloc_stats(), no allocation. */
struct vc_stats_detail {
	struct vcmalloc_stats st;
	uint64_t segment_bytes;        /* address space of segments, all nodes */
	uint64_t header_bytes;         /* of which: segment headers and guard pages */
	uint64_t free_page_bytes;      /* FREE span pages still resident */
	uint64_t released_bytes;       /* FREE span pages given back to the OS (mapped) */
	uint64_t central_free_bytes;   /* free objects of the central lists (in spans) */
	uint64_t central_free_objects;
	uint64_t large_bytes;          /* live LARGE spans */
	uint64_t huge_bytes;           /* mappings of live huge blocks */
	uint64_t huge_count;           /* live huge blocks */
	uint64_t huge_cached_bytes;    /* cached mappings of freed huge blocks */
	uint64_t active_bytes;         /* pages of spans in use plus live huge mappings */
	uint64_t metadata_bytes;       /* segment headers plus the per-vCPU layer's own
					  pages (headers, slot arrays) */
};
void vc_stats_detail(struct vc_stats_detail *d) VC_HIDDEN;

/* ---- compat_text.c: text of the compatibility reports, without allocating ---- */
struct vc_text {
	void (*sink)(void *arg, const char *s, size_t n); /* s is NUL-terminated */
	void *arg;
	size_t n;
	char buf[1024];
};
void vc_text_to_fd(struct vc_text *t, int fd) VC_HIDDEN; /* sink: write(2) to fd */
void vc_text_put(struct vc_text *t, const char *s) VC_HIDDEN;
void vc_text_u64(struct vc_text *t, uint64_t v) VC_HIDDEN;
void vc_text_u64_width(struct vc_text *t, uint64_t v, unsigned width) VC_HIDDEN;
void vc_text_flush(struct vc_text *t) VC_HIDDEN;

/* ---- compat_mallctl.c: jemalloc's statistics names on vcmalloc's figures ---- */
struct vc_jemalloc_figures {
	uint64_t allocated; /* bytes in live blocks */
	uint64_t active;    /* pages of spans in use and of live huge blocks */
	uint64_t metadata;  /* segment headers and the per-vCPU layer's own pages */
	uint64_t resident;  /* everything vcmalloc holds resident (an upper bound) */
	uint64_t mapped;    /* mapped and not given back to the OS */
	uint64_t retained;  /* mapped but given back to the OS (MADV_DONTNEED) */
};
void vc_jemalloc_figures_of(const struct vc_stats_detail *d,
			    struct vc_jemalloc_figures *f) VC_HIDDEN;
extern const char vc_jemalloc_version[] VC_HIDDEN; /* what mallctl "version" reads */
size_t nallocx(size_t size, int flags); /* compat_jemalloc.c, exported */

/* ---- check.c: misuse reports and asserts (never allocate) ---- */
__attribute__((noreturn)) void vc_report(const char *what, const char *func,
					 const void *p) VC_HIDDEN;
__attribute__((noreturn)) void vc_assert_fail(const char *expr, const char *file,
					      int line) VC_HIDDEN;
#define VC_ASSERT_ALWAYS(e) ((e) ? (void)0 : vc_assert_fail(#e, __FILE__, __LINE__))
#define VC_ASSERT(e) ((vc_config_assert_level < 1 || (e)) ? (void)0 : vc_assert_fail(#e, __FILE__, __LINE__))
#define VC_ASSERT_EXPENSIVE(e) ((vc_config_assert_level < 2 || (e)) ? (void)0 : vc_assert_fail(#e, __FILE__, __LINE__))

#endif
