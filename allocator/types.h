/* allocator/types.h - the objects of vcmalloc, their sizes and their invariants.
 *
 * Glossary
 *   unit      4 MiB of address space, aligned. The registry keeps one byte per unit
 *             saying what vcmalloc has there (nothing, a segment, a huge block).
 *   segment   a 4 MiB unit mapped for small and large objects. Its first pages hold
 *             the segment header: a page map (page -> span) and the span
 *             descriptors, then a guard page; the rest is cut into spans.
 *   page      8 KiB, the granule of spans inside a segment.
 *   span      a run of pages of one segment. FREE (in the page heap), SMALL (cut into
 *             objects of one size class) or LARGE (one object of 256 KiB - 1 MiB).
 *   huge      a request above 1 MiB (or aligned above a page): its own mapping,
 *             starting on a unit; header at the mapping's start, or one page
 *             before an object aligned to a unit or more.
 *   class     a size class of small objects (16 B - 256 KiB); class 0 means "none".
 *   vCPU      an index of the per-vCPU caches: rseq mm_cid (index mode vcpu), rseq
 *             cpu_id (mode cpu), or a shard number (mode fallback).
 *   vCPU cache one region per vCPU id: a header word per class then slot arrays of
 *             free object pointers (see struct vc_rseq_stack).
 *   central   per node and class: a transfer array of free objects plus the SMALL
 *             spans that still have free objects.
 *   page heap per node: the FREE spans, coalesced, and the segments they live in.
 *
 * Object accounting of a SMALL span (under the central lock of its class and node):
 *   capacity = carved + uncarved;  carved = allocated + on free_list
 *   where "allocated" counts objects handed to vCPU caches, transfer arrays or users.
 *
 * Free-object tag: word 1 (bytes 8-15) of an object that is free anywhere in
 * vcmalloc (carved objects not yet handed out included: carving writes it) holds
 * vc_tag(p, span) = p ^ span->tag_key, where tag_key mixes the process secret with a
 * generation that changes on every reuse of the span; malloc clears it. Uncarved
 * objects hold no tag: free() tells them by the page entries' `objects` limits.
 * free() of an object whose word 1 already holds its tag is a double free (a live
 * object holding exactly that 64-bit value by chance: probability 2^-64).
 */
#ifndef VC_TYPES_H
#define VC_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lock.h"
#include "vc_config.h"

#define VC_UNIT_SHIFT 22
#define VC_UNIT_SIZE ((size_t)1 << VC_UNIT_SHIFT)
#define VC_PAGE_SHIFT 13
#define VC_PAGE_SIZE ((size_t)1 << VC_PAGE_SHIFT)
#define VC_OS_PAGE 4096
#define VC_PAGES_PER_SEGMENT (VC_UNIT_SIZE / VC_PAGE_SIZE) /* 512 */
/* Bits of a user address: 47 on x86-64 (4-level paging); 48 on aarch64, where Linux
 * places mappings just below 2^48 (a 52-bit VA kernel goes higher only for mmap
 * hints above 2^48, which vcmalloc never gives). The registry has one byte per unit
 * of this space (32 MiB of .bss on x86-64, 64 MiB on aarch64). */
#if defined(__aarch64__)
#define VC_ADDRESS_BITS 48
#else
#define VC_ADDRESS_BITS 47
#endif

/* Classes 1..VC_FINE_CLASSES go up to VC_FINE_CLASS_MAX with eight per doubling
 * above 128 bytes, the rest up to VC_SMALL_MAX (2^18) with four (sizeclass.c). */
#define VC_FINE_CLASS_LOG 13
#define VC_FINE_CLASS_MAX ((size_t)1 << VC_FINE_CLASS_LOG)
#define VC_FINE_CLASSES (8 + (VC_FINE_CLASS_LOG - 7) * 8) /* 56: 8 KiB */
#define VC_NUM_CLASSES (VC_FINE_CLASSES + (18 - VC_FINE_CLASS_LOG) * 4 + 1) /* 1..76; 0: none */
#define VC_SMALL_MAX ((size_t)256 << 10)
#define VC_LARGE_MAX ((size_t)1 << 20)
#define VC_MAX_NODES 64

/* Per-vCPU region: 2^19 bytes = 65536 slots of 8 bytes (stack positions are 16-bit,
 * and begin 0xffff marks a stopped stack, so no more); slots [0, 128) are headers.
 * Regions start 2^21 bytes apart (VC_VCPU_STRIDE_SHIFT): each gets page-table pages
 * of its own, so page faults of different vCPUs never share a page-table lock (they
 * did, 8 regions per 2 MiB, and contended on it in many-CPU guests). The gaps are
 * address space only. */
#define VC_VCPU_SHIFT 19
#define VC_VCPU_STRIDE_SHIFT 21
#define VC_VCPU_REGION ((size_t)1 << VC_VCPU_SHIFT)
#define VC_VCPU_SLOTS (VC_VCPU_REGION / 8)
#define VC_VCPU_HEADER_SLOTS 128 /* one 1 KiB block of headers, then slot arrays */
/* A region starts this many bytes into its stride, not at a page boundary. Its
 * header block is the hottest memory of the allocator (every malloc and free loads
 * and stores a word of it); at a page's start it would share L1 set 0 with every
 * page-aligned structure of the program. Where the L1 picks a way by a hash of the
 * virtual address (AMD's way predictor), two such lines whose pages hash alike evict
 * each other on every access, and whether they do depends on the address layout of
 * the run: bench/speed's tight1-16 took 1.3-1.9x its usual time in about one run in
 * four, the loop's own page-aligned counters against the header line. Lines 39-51
 * of a page are no one's favourite. */
#define VC_VCPU_REGION_COLOUR 0x9c0
#define VC_BATCH_MAX 32

/* Registry byte per unit. */
enum vc_unit_kind {
	VC_UNIT_FOREIGN = 0,
	VC_UNIT_SEGMENT = 1,    /* header at the unit base */
	VC_UNIT_HUGE_START = 2, /* a huge object starts in this unit, past its first
				   page; the unit's first page is its header */
	VC_UNIT_HUGE_BODY = 3,  /* inside a huge mapping, no object starts here */
	VC_UNIT_HUGE_FREED = 4, /* a huge block here was freed (for double-free reports) */
	VC_UNIT_HUGE_ALIGNED = 5, /* a huge object starts at this unit's base; its
				     header is the last page of the unit before */
	VC_UNIT_SEGMENT_FREED = 6, /* a segment here was unmapped (for double-free
				      reports); reads like foreign otherwise */
};

/* DECAYING: a FREE span taken off the free lists while its pages go back to the OS
 * without the page-heap lock held; nothing merges with it, allocates it or unmaps
 * its segment until it is a FREE span again. */
enum vc_span_state { VC_SPAN_FREE = 0, VC_SPAN_SMALL = 1, VC_SPAN_LARGE = 2, VC_SPAN_DECAYING = 3 };

/* Span descriptor: one cache line (64 bytes, aligned: asserted below), so that the
 * central lists' work on a span touches one line. free() does not read it (page
 * entries, below, hold what free() needs); the checked path (alloc.c's classify:
 * realloc, malloc_usable_size, misuse reports) reads its first 8 bytes. */
struct vc_span {
	/* Immutable while the span is in use. */
	uint16_t first_page;   /* page index in the segment */
	uint16_t npages;
	uint8_t state;         /* enum vc_span_state */
	uint8_t sizeclass;     /* SMALL: class; else 0 */
	uint8_t node;
	uint8_t in_list;       /* on a central or page-heap list */
	uint64_t tag_key;      /* secret ^ generation, new on every (re)use of the span:
				  stale tags never match */
	/* SMALL: capacity, carved, allocated under the central lock of (node, class). */
	union {
		uint32_t capacity;
		uint32_t returned_pages; /* FREE: of released_pages, those a release call
					    gave back (the others were never used) */
	};
	uint32_t carved;
	uint32_t allocated;
	union {
		uint16_t released_pages; /* FREE: pages given back to the OS (not resident) */
		uint16_t populated;      /* SMALL, LARGE: OS pages from the span's start
					    known resident (a hint: raised by central.c's
					    carve and by realloc's copies, which populate
					    what they will write beyond it) */
	};
	uint8_t lane;            /* SMALL: lane of its central list (central.c) */
	void *free_list;
	struct vc_span *next, *prev;
	union {
		uint64_t free_since_ms; /* FREE: when it became free (decay) */
		size_t large_size;      /* LARGE: requested bytes rounded to pages */
	};
} __attribute__((aligned(64)));

/* What free() needs of a page, in one 32-byte entry (two per cache line), so that
 * the fast path reads the registry byte, this entry and the object, and never the
 * span descriptor or the class table. Mirrors the span's fields and its class's
 * (pageheap.c writes the entries of every page of a span whenever the span changes
 * state, and central.c publishes the class of a new SMALL span before any of its
 * objects leaves the central lock). sizeclass 0 and objects 0: not a SMALL span
 * (FREE, LARGE, DECAYING, header): no offset passes the object check.
 * objects, of a SMALL span: an object of the span starting on this page has been
 * carved iff its index is below it. Published as 0; central.c raises it, under the
 * central lock, on the pages where a carve's objects start, before they leave it. */
struct vc_page_entry {
	uint64_t tag_key;      /* the span's tag_key */
	uint64_t inverse;      /* SMALL: the class's inverse (vc_object_index_of) */
	uint32_t span_low;     /* the low 32 bits of the span's address: for p in the
				  segment (a unit is far below 4 GiB), p's offset in the
				  span is (uint32_t)p - span_low, one subtraction */
	uint32_t local_lanes;  /* SMALL: bit l set when a free from lane l keeps the object
				  in its cache; others take remote_free.c's path (a lane
				  mask: VC_LANE_MASK) */
	uint32_t objects;      /* SMALL: carved objects, as seen by this page; else 0 */
	uint8_t shift;         /* SMALL: the class's shift */
	uint8_t sizeclass;     /* SMALL: the class; else 0 */
	uint8_t node;
};
_Static_assert(sizeof(struct vc_page_entry) == 32, "page entries are 32 bytes, two per line");

struct vc_segment {
	uint64_t magic;        /* vc_secret ^ address: sanity check */
	uint8_t node;
	uint16_t used_pages;   /* pages in SMALL/LARGE spans (page-heap lock) */
	uint16_t decaying_pages; /* pages in DECAYING spans (page-heap lock) */
	uint64_t span_uses;    /* spans handed out so far: feeds span generations */
	struct vc_segment *next, *prev; /* page heap's segment list */
	struct vc_page_entry entries[VC_PAGES_PER_SEGMENT] __attribute__((aligned(64)));
	struct vc_span *pagemap[VC_PAGES_PER_SEGMENT];
	struct vc_span spans[VC_PAGES_PER_SEGMENT]; /* descriptor of a span at its first page */
};
/* The header pages hold the header, then at least one whole OS page that nothing
 * uses, [VC_SEGMENT_GUARD_START, first span): segment.c makes it PROT_NONE, so that
 * a linear underflow from the first object of a segment faults there before it
 * reaches the header. */
#define VC_SEGMENT_GUARD_START                                                          \
	((sizeof(struct vc_segment) + VC_OS_PAGE - 1) / VC_OS_PAGE * VC_OS_PAGE)
#define VC_SEGMENT_HEADER_PAGES                                                         \
	((VC_SEGMENT_GUARD_START + VC_OS_PAGE + VC_PAGE_SIZE - 1) / VC_PAGE_SIZE)

struct vc_huge_header {
	uint64_t magic;        /* vc_secret ^ object address */
	void *map_base;
	size_t map_size;
	size_t size;           /* usable bytes */
	uint64_t state;        /* 1 live, 0 freed */
};

/* Size class table (sizeclass.c): read-only after init. One cache line per class.
 * free()'s fast path reads copies in the page entry; the checked path (alloc.c's
 * classify) reads inverse and shift, in the first 24 bytes.
 *
 * Object index by exact division: size = odd << shift, inverse * odd = 1 (mod 2^64).
 * For an offset off from the span start, rotr64(off * inverse, shift) is off / size
 * when size divides off, and above 2^64 / size (so above `objects`) otherwise: one
 * compare, index < objects, says "the start of one of the span's objects". */
struct vc_class_info {
	uint64_t inverse;      /* of size >> shift, modulo 2^64 */
	uint32_t objects;      /* per span */
	uint32_t size;
	uint8_t shift;         /* trailing zero bits of size */
	uint32_t span_pages;
	uint32_t batch;        /* objects moved between vCPU cache and central at once */
	uint32_t max_slots;    /* per-vCPU capacity limit */
	uint32_t slot_base;    /* first slot of this class in a vCPU region */
	uint32_t transfer_cap; /* objects a central transfer array may hold */
} __attribute__((aligned(64)));

/* Central free lists of one (node, class). The transfer array holds at most the
 * class's transfer_cap objects (<= VC_TRANSFER_CAP, about 256 KiB of objects; none
 * above VC_TRANSFER_MAX_SIZE, see sizeclass.c).
 * The headers of a node's classes are packed together, each starting a cache line
 * (no two classes' locks share a line), apart from the transfer arrays (see
 * central.c). */
#define VC_TRANSFER_CAP 128
#define VC_TRANSFER_MAX_SIZE ((uint32_t)64 << 10) /* larger classes have no transfer array */
/* Lanes of a central list: vCPU id modulo this picks the lane whose spans it
 * carves (central.c). */
#define VC_CENTRAL_LANES 8
/* A lane mask (a page entry's local_lanes) has bit l set for each local lane l,
 * repeated in each of its 4 bytes, so that bit (id % 32) of it is bit
 * (id % VC_CENTRAL_LANES): the push tests the id's bit with one instruction
 * (vc_local_lanes). This one: every lane is local. */
#define VC_ALL_LANES 0xffffffffu
#define VC_LANE_MASK(bits8) ((uint32_t)(bits8) * 0x01010101u)
struct vc_central {
	vc_lock_t lock;
	uint32_t transfer_count;
	uint32_t ops;             /* removes and inserts, to find idle transfer arrays */
	uint32_t carve_streak;    /* takes in a row that carved, no insert between (at
				     most VC_CARVE_STREAK_MAX, central.c) */
	uint32_t ops_at_scan;     /* ops at the previous idle scan */
	uint32_t transfer_low;    /* lowest transfer_count since the previous idle scan
				     (<= transfer_count): the objects below it sat
				     unused all that time */
	uint64_t free_objects;    /* on span free lists + uncarved + in transfer */
	uint64_t span_out;        /* objects taken out of spans (incl. in transfer) */
	void **transfer;          /* [VC_TRANSFER_CAP], slots [0, transfer_count) used */
	/* SMALL spans with free or uncarved objects, one list per lane (see central.c):
	 * a span is on the list of its `lane` when it is on one. */
	struct vc_span *nonempty[VC_CENTRAL_LANES];
} __attribute__((aligned(64)));

/* Page heap of one node. */
#define VC_FREE_LISTS 129 /* exact page counts 1..128, [0] for anything larger */
struct vc_pageheap {
	vc_lock_t lock;
	struct vc_span *free[VC_FREE_LISTS];
	struct vc_segment *segments;
	uint64_t mapped_bytes;
	uint64_t released_bytes;   /* of FREE spans, not resident */
	uint64_t free_bytes;       /* in FREE spans */
	uint64_t last_decay_ms;    /* last timed decay pass, claimed by compare-and-swap */
	uint64_t last_quiet_ms;    /* last quiet-node pass, claimed the same way */
	uint64_t last_use_ms;      /* last span taken or given back (relaxed reads) */
	/* Where each central lane's next SMALL span goes (pageheap.c): the page after
	 * the lane's last one; seg NULL when unknown. Never points into a segment
	 * that is no longer on `segments`. */
	struct {
		struct vc_segment *seg;
		uint32_t page;
	} lane_next[VC_CENTRAL_LANES];
};

/* What the capacity policy of a vCPU decides with (vcpu_policy.h has the rules). */
struct vc_capacity {
	uint64_t bytes;             /* sum over classes of capacity * size */
	uint64_t budget;            /* limit of bytes: starts at the option
				       VCMALLOC_VCPU_CACHE_BYTES, doubles under pressure
				       up to VC_BUDGET_GROWTH times it */
	uint64_t stolen[2];         /* bit c: class c lost capacity to a steal since its
				       last miss under a spent budget */
	uint8_t steal_cursor;       /* next class the victim search looks at */
	uint16_t capacity[VC_NUM_CLASSES]; /* objects class c may hold: end - begin of
					      its header (rseq modes: once a resize
					      succeeded; fallback: always) */
};

/* struct vc_vcpu's releasing: where the release of a drained region stands
 * (vcpu_cache.c's release_region). */
enum vc_release_state {
	VC_RELEASE_NONE = 0,
	VC_RELEASE_DUE = 1,     /* drained; nobody has begun the release */
	VC_RELEASE_RUNNING = 2, /* a thread is releasing the pages, unlocked */
};

/* State of one vCPU cache (array indexed by vCPU id, vcpu_cache.c), in groups by
 * who writes them; each group's rule is stated on it, exceptions on the field. */
struct vc_vcpu {
	vc_lock_t lock;
	uint8_t populated;          /* the region is open (vcpu_slab.h): changed under
				       `lock` with release stores, read with acquire
				       loads everywhere, the lock held or not */
	uint8_t releasing;          /* enum vc_release_state (vcpu_cache.c): the
				       drained region's pages are due to go, or going,
				       back to the OS with no lock held; it is not
				       opened before that is over. Under `lock` */
	/* Written under `lock` (populate, drain, node move, resizes, fallback mode). */
	struct {
		uint8_t node;       /* node of the cached objects (a roaming thread's
				       region also holds other nodes', vcpu_cache.c);
				       slow paths read it unlocked (relaxed) to notice
				       a node move */
		struct vc_capacity cap;
		uint16_t high_water[VC_NUM_CLASSES]; /* highest capacity since the region
							was last released (pages touched);
							relaxed stores: the statistics read
							it unlocked */
		uint64_t touched[2]; /* bit p: page p of the region's stride
					holds a slot below some class's
					high_water (relaxed, as high_water) */
		uint32_t remote_bytes; /* bytes of the objects waiting in this id's
					  remote-free buffer (remote_free.c; relaxed,
					  as high_water) */
	} locked;
	/* Written under the reclaim lock (vcpu_cache.c's reclaim_lock): the scan's
	 * memory of this id. */
	struct {
		uint32_t seen_events; /* slow_events at the previous scan */
		uint32_t idle_scans;  /* consecutive scans without activity */
		uint64_t header_sum;  /* hash of the header words at the previous scan */
	} scan;
	/* Relaxed atomics, taken without a lock: counted by the thread running as the
	 * id on its slow paths, with a relaxed load and store (vc_id_counter_add: no
	 * locked instruction, an update may be lost); zeroed by populate and drain
	 * (lock held). */
	struct {
		uint32_t slow_events;     /* misses and overflows */
		uint32_t pressure;        /* thrashing misses (vcpu_policy.c) since the
					     last reclaim scan, which zeroes it */
		uint64_t sampled_bytes;   /* this id's part of the sampled total
					     (note_peak, vcpu_cache.c); the drain
					     takes it back */
		uint64_t last_use;        /* the populate count (vcpu_cache.c's
					     use_epoch) when the id was last seen in
					     use: slow paths, populate, reclaim scans */
		uint32_t misses[VC_NUM_CLASSES]; /* per class; halved by the counting
						    thread (vcpu_policy.c) */
	} counters;
} __attribute__((aligned(64)));

/* The layout claims of the comments above. */
_Static_assert(VC_PAGES_PER_SEGMENT == 512, "512 pages of 8 KiB per 4 MiB segment");
_Static_assert(VC_PAGES_PER_SEGMENT <= UINT16_MAX && VC_UNIT_SIZE <= UINT32_MAX,
	       "page indexes and counts fit 16 bits, span offsets 32 bits");
_Static_assert(VC_VCPU_SLOTS == 65536, "a region is 65536 slots of 8 bytes: 16-bit positions");
_Static_assert(VC_SMALL_MAX == (size_t)1 << 18 && VC_FINE_CLASS_LOG > 10,
	       "VC_NUM_CLASSES counts the coarse classes' doublings up to 2^18, the fine "
	       "classes' above the 1 KiB table");
_Static_assert(VC_NUM_CLASSES <= VC_VCPU_HEADER_SLOTS &&
		   VC_VCPU_HEADER_SLOTS * sizeof(uint64_t) == 1024,
	       "one header word per class (slot 0: the node tag), in one 1 KiB block");
_Static_assert(VC_VCPU_REGION_COLOUR % 64 == 0 &&
		   VC_VCPU_REGION_COLOUR + VC_VCPU_HEADER_SLOTS * sizeof(uint64_t) <= VC_OS_PAGE,
	       "a region's headers are whole cache lines on its first page");
_Static_assert(VC_VCPU_STRIDE_SHIFT >= 21 && VC_VCPU_STRIDE_SHIFT >= VC_VCPU_SHIFT,
	       "regions 2 MiB apart: page-table pages of their own");
_Static_assert(offsetof(struct vc_segment, entries) % 64 == 0 && 64 % sizeof(struct vc_page_entry) == 0,
	       "page entries: whole entries to a cache line, none straddles one");
_Static_assert(sizeof(struct vc_span) == 64 && _Alignof(struct vc_span) == 64,
	       "one cache line per span descriptor");
_Static_assert(sizeof(struct vc_class_info) == 64 && _Alignof(struct vc_class_info) == 64,
	       "one cache line per class");
_Static_assert(offsetof(struct vc_class_info, inverse) + 8 <= 24 &&
		   offsetof(struct vc_class_info, shift) + 1 <= 24,
	       "classify reads the first 24 bytes of a class");
_Static_assert(sizeof(struct vc_central) % 64 == 0 && _Alignof(struct vc_central) == 64,
	       "central headers start cache lines of their own");
_Static_assert(VC_PAGES_PER_SEGMENT <= UINT16_MAX && VC_CENTRAL_LANES <= UINT8_MAX,
	       "released_pages fits 16 bits, a lane 8 bits");

#endif
