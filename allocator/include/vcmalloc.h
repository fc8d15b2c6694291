/* vcmalloc.h - public interface of vcmalloc.
 *
 * vcmalloc replaces malloc: link with -lvcmalloc (or the static libvcmalloc.a), or
 * LD_PRELOAD libvcmalloc.so. The standard functions (malloc, free, calloc, realloc,
 * reallocarray, posix_memalign, aligned_alloc, memalign, valloc, pvalloc,
 * malloc_usable_size, free_sized, free_aligned_sized, C++ new/delete) need no
 * header beyond the usual ones. This header adds introspection.
 */
#ifndef VCMALLOC_H
#define VCMALLOC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VCMALLOC_API __attribute__((visibility("default")))

/* Index modes of the per-vCPU caches (VCMALLOC_INDEX=vcpu|cpu|fallback). */
enum vcmalloc_index {
	VCMALLOC_INDEX_VCPU = 0,     /* rseq mm_cid: the default where the kernel has it */
	VCMALLOC_INDEX_CPU = 1,      /* rseq cpu_id */
	VCMALLOC_INDEX_FALLBACK = 2, /* no rseq: locked shards */
};

#define VCMALLOC_MAX_NODES 64

struct vcmalloc_node_stats {
	uint64_t mapped_bytes;   /* address space of this node's arena mapped from the OS */
	uint64_t resident_bytes; /* mapped minus released to the OS */
	uint64_t cached_bytes;   /* free bytes held in this node's central lists and spans */
};

struct vcmalloc_stats {
	enum vcmalloc_index index;          /* mode in use */
	uint32_t possible_cpus;             /* size of the vCPU id space */
	uint32_t vcpu_caches_populated;     /* vCPU caches initialised now */
	uint32_t vcpu_caches_populated_peak;/* ... at most at once */
	uint64_t vcpu_cache_bytes;          /* resident bytes of the per-vCPU layer:
	                                       headers, slot arrays and cached objects */
	uint64_t vcpu_cache_bytes_peak;
	uint64_t vcpu_cache_object_bytes;   /* of which: bytes of cached free objects */
	uint64_t resident_bytes;            /* all memory the allocator holds resident */
	uint64_t mapped_bytes;              /* all address space mapped (not reserved) */
	uint64_t allocated_bytes;           /* bytes in live allocations (usable sizes) */
	uint64_t vcpu_reclaims;             /* vCPU caches drained and released */
	uint64_t rseq_fallbacks;            /* operations done without rseq */
	uint64_t vcpu_node_moves;           /* vCPU caches emptied because their id
	                                       ran on another NUMA node */
	uint64_t vcpu_surplus_drains;       /* vCPU caches drained because more ids
	                                       were populated than threads live (vcpu
	                                       mode; of vcpu_reclaims) */
	uint64_t rseq_fences;               /* membarrier fences issued to stop other
	                                       CPUs' critical sections (drains, moves) */
	uint64_t rseq_fence_ns;             /* ... and the nanoseconds spent in them */
	uint64_t os_release_calls;          /* munmap and MADV_DONTNEED calls */
	uint64_t os_release_ns;             /* ... and the nanoseconds spent in them */
	uint64_t os_refault_bytes;          /* bytes the page heap had given back to the
	                                       OS and later spans faulted in again */
	uint32_t nodes;                     /* NUMA nodes in use */
	struct vcmalloc_node_stats node[VCMALLOC_MAX_NODES];
};

/* Fill *out with a consistent-enough snapshot (counters are read without stopping
 * other threads). Returns 0. Does not allocate. */
VCMALLOC_API int vcmalloc_stats(struct vcmalloc_stats *out);

/* Write the statistics as one JSON object to file descriptor fd (no allocation);
 * this is what VCMALLOC_STATS=json prints on stderr at exit. Safe to call from
 * several threads at once. Returns 0, or -1 with errno set when a write failed (the
 * object may then be partly written). */
VCMALLOC_API int vcmalloc_stats_json(int fd);

/* Drain every vCPU cache that is populated but idle (or all of them when force is
 * non-zero) back to the central lists and release their pages. Returns the number of
 * caches drained. Safe while other threads allocate. */
VCMALLOC_API int vcmalloc_reclaim(int force);

/* Return free memory held in central lists and page heaps to the OS now. */
VCMALLOC_API void vcmalloc_release_free_memory(void);

#ifdef __cplusplus
}
#endif

#endif
