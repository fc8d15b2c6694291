/* allocator/sizeclass.c - size classes of small objects and their span shapes.
 *
 * Classes 1-8: 16..128 bytes in steps of 16. Then eight classes per doubling up
 * to 8 KiB: (2^k, 2^(k+1)] in steps of 2^(k-3), k = 7..12, a gap of at most 12.5%
 * between neighbours; above 8 KiB four per doubling, steps of 2^(k-2) for
 * k = 13..17 up to 256 KiB, a gap of at most 25%. Every class is a multiple of 16.
 * The table is computed once at start-up and read-only afterwards.
 *
 * Why fewer large classes: a class keeps the memory of its highest count of live
 * objects (its spans return to the page heap only when all their objects are
 * free, which the caches make rare), so a program's spans hold about the sum over
 * classes of each one's high, more than the high of the sum when its sizes vary,
 * and most with classes of a few large objects each. bench/footprint's `few
 * --threads 1` (sizes 16 B - 32 KiB, 2.3 MiB live at most; the highs counted in a
 * replica of its rounds): the classes' highs summed to 4.1 MiB with eight classes
 * per doubling everywhere, 2.2 MiB of it above 8 KiB, and to 3.7 MiB with these;
 * its peak RSS fell from 7.3 to 6.6-6.7 MiB (glibc 4.0, mimalloc 6.0, jemalloc 7.7,
 * tcmalloc 11.6). Four per doubling is jemalloc's and mimalloc's spacing. From
 * 4 KiB on it saved 0.35 MiB more there, but sqlite3's page cache (bench/run-speed's
 * `sqlite`: 33 000 blocks of 4.0-4.3 KiB) then went from the 4.5 KiB class to the
 * 5 KiB one: peak RSS 28.0 -> 30.5 MiB.
 */
#include "internal.h"

struct vc_class_info vc_classes[VC_NUM_CLASSES];
/* Class of sizes up to 1 KiB, indexed by (size + 15) / 16. Constant data, so that a
 * malloc reaching vcmalloc before its start-up (another library's constructor, say)
 * still finds the right class; vc_sizeclass_init checks it against the table. */
const uint8_t vc_small_class[(1024 >> 4) + 1] = {
	1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
	16, 17, 17, 18, 18, 19, 19, 20, 20, 21, 21, 22, 22, 23, 23, 24,
	24, 25, 25, 25, 25, 26, 26, 26, 26, 27, 27, 27, 27, 28, 28, 28,
	28, 29, 29, 29, 29, 30, 30, 30, 30, 31, 31, 31, 31, 32, 32, 32,
	32,
};

/* Span pages: the fewest pages that hold min_objects objects with at most 1/8 of the
 * span left over. */
static uint32_t span_pages_for(uint32_t size)
{
	uint32_t min_objects = size <= 1024 ? 16 : size <= 8192 ? 8 : size <= 65536 ? 2 : 1;
	uint64_t pages = ((uint64_t)size * min_objects + VC_PAGE_SIZE - 1) / VC_PAGE_SIZE;
	for (;; pages++) {
		uint64_t bytes = pages * VC_PAGE_SIZE;
		if ((bytes % size) * 8 <= bytes)
			return (uint32_t)pages;
	}
}

/* vc_object_index at offset off agrees with plain division. */
static void check_object_index_at(const struct vc_class_info *ci, uint64_t off)
{
	uint64_t q = vc_object_index(ci, off);
	bool start = off % ci->size == 0 && off / ci->size < ci->objects;
	VC_ASSERT_ALWAYS(start ? q == off / ci->size : q >= ci->objects);
}

/* vc_object_index against plain division: at the edges always, at every 16-byte
 * offset of the span in builds with expensive asserts. */
static void check_object_index(const struct vc_class_info *ci)
{
	uint64_t span = (uint64_t)ci->span_pages * VC_PAGE_SIZE;
	const uint64_t edges[] = {0, 1, 8, 16, ci->size - 16, ci->size, ci->size + 16,
				  (uint64_t)ci->size * (ci->objects - 1),
				  (uint64_t)ci->size * ci->objects, span - 16, span};
	for (unsigned i = 0; i < sizeof edges / sizeof edges[0]; i++)
		check_object_index_at(ci, edges[i]);
	for (uint64_t off = 0; vc_config_assert_level >= 2 && off <= span; off += 16)
		check_object_index_at(ci, off);
}

/* Slots left unused after each class's array, one cache line, so that the arrays
 * begin at different cache sets. Most arrays are 1024 slots (8 KiB) long: without
 * the gap, slot k of every such class fell in one set of an 8-way, 4 KiB-period L1
 * cache, and a program using many classes at once (bench/speed's wide1: about 80)
 * evicted its own stack tops. Under cachegrind, wide1's misses on the slot arrays
 * fell from 480 000 to 150 000 per 1.2 million malloc/free pairs. */
#define VC_SLOT_COLOUR 8

void vc_sizeclass_init(void)
{
	unsigned c = 1;
	for (uint32_t s = 16; s <= 128; s += 16)
		vc_classes[c++].size = s;
	for (unsigned k = 7; k < VC_FINE_CLASS_LOG; k++)
		for (unsigned j = 1; j <= 8; j++)
			vc_classes[c++].size = (1u << k) + j * (1u << (k - 3));
	VC_ASSERT_ALWAYS(c - 1 == VC_FINE_CLASSES &&
			 vc_classes[VC_FINE_CLASSES].size == VC_FINE_CLASS_MAX);
	for (unsigned k = VC_FINE_CLASS_LOG; k <= 17; k++)
		for (unsigned j = 1; j <= 4; j++)
			vc_classes[c++].size = (1u << k) + j * (1u << (k - 2));
	VC_ASSERT_ALWAYS(c == VC_NUM_CLASSES);
	VC_ASSERT_ALWAYS(vc_classes[VC_NUM_CLASSES - 1].size == VC_SMALL_MAX);
	/* vc_class_of (internal.h) computes the class without the table. */
	for (c = 1; c < VC_NUM_CLASSES; c++)
		VC_ASSERT_ALWAYS(vc_class_of(vc_classes[c].size) == c &&
				 vc_class_of(vc_classes[c - 1].size + 1) == c);

	uint32_t slot = VC_VCPU_HEADER_SLOTS;
	for (c = 1; c < VC_NUM_CLASSES; c++) {
		struct vc_class_info *ci = &vc_classes[c];
		ci->span_pages = span_pages_for(ci->size);
		ci->objects = (uint32_t)(ci->span_pages * VC_PAGE_SIZE / ci->size);
		/* Move about 32 KiB per batch between a vCPU cache and central. */
		uint32_t batch = (32u << 10) / ci->size;
		ci->batch = batch < 2 ? 2 : batch > VC_BATCH_MAX ? VC_BATCH_MAX : batch;
		/* Central transfer array: about 256 KiB of objects, at least one batch;
		 * none above 64 KiB. Objects that large go straight back to their spans,
		 * so a span whose objects all came back returns to the page heap, where
		 * any class or large block reuses its (resident) pages. With a batch of
		 * them held per class, a string grown by realloc through the classes up
		 * to 256 KiB left one or two blocks of each in the arrays: 3.4 MiB
		 * resident that nothing reused, 3215 page faults in bench/speed's realloc
		 * (quick scale; tcmalloc 2066), 2455 without them above 64 KiB. A lower
		 * limit (16 KiB: 2288) raised footprint's `few` peak from 15 to 18 MiB:
		 * its 16-64 KiB blocks then went through the page heap, which placed
		 * their new spans on fresh pages. */
		uint32_t tcap = (256u << 10) / ci->size;
		if (tcap < ci->batch)
			tcap = ci->batch;
		if (tcap > VC_TRANSFER_CAP)
			tcap = VC_TRANSFER_CAP;
		ci->transfer_cap = ci->size > VC_TRANSFER_MAX_SIZE ? 0 : tcap;
		/* Per-vCPU slots: up to 1024 objects or 2 MiB of them (2048 objects for
		 * classes of 128 B and less), at least 4, and one batch more. A cache
		 * whose limit equals a loop's working set never settles once a refill
		 * has left it a few objects over: the last frees of each round overflow
		 * and send a batch to central, the next round runs short and refills a
		 * batch, which leaves as many over again. bench/speed's tight loops
		 * cycle 1024 blocks: `tight1-1024` made a refill and a flush every
		 * round (6 032 of each at scale 2), and `tightN-256` (2 threads, quick
		 * scale) fell into the cycle in 4 of 6 runs (3 200-4 100 of each, where
		 * the other runs made 68 refills and 1 flush). With a batch of room
		 * above the working set, a refill's leftover (less than a batch) fits
		 * (tests/stress/steady_loop.c starts the cycle on purpose). Slot
		 * positions are 16 bits: the arrays use about 62 000 of the region's
		 * 65 536 slots (asserted below). The byte budget, not these limits,
		 * bounds what is actually held: capacity grows with misses. */
		uint32_t fit = (2u << 20) / ci->size;
		uint32_t most = ci->size <= 128 ? 2048 : 1024;
		uint32_t limit = fit > most ? most : fit < 4 ? 4 : fit;
		ci->max_slots = limit + ci->batch;
		ci->slot_base = slot;
		slot += ci->max_slots + VC_SLOT_COLOUR;
		ci->shift = (uint8_t)__builtin_ctz(ci->size);
		uint64_t odd = ci->size >> ci->shift, inv = odd; /* correct to 3 bits */
		for (int i = 0; i < 5; i++)
			inv *= 2 - odd * inv; /* Newton: doubles the correct bits */
		VC_ASSERT_ALWAYS(inv * odd == 1);
		ci->inverse = inv;
		check_object_index(ci);
	}
	VC_ASSERT_ALWAYS(slot <= VC_VCPU_SLOTS && slot < 0xffff); /* 0xffff: stopped */
	/* The slots in use lie on the region's pages counted by locked.touched. */
	VC_ASSERT_ALWAYS(VC_VCPU_REGION_COLOUR + (size_t)slot * 8 <= VC_VCPU_REGION);
	for (size_t n = 0; n <= 1024; n += 16) {
		unsigned cls = 1;
		while (vc_classes[cls].size < (n ? n : 1))
			cls++;
		VC_ASSERT_ALWAYS(vc_small_class[n >> 4] == cls);
	}
}

unsigned vc_class_for_aligned(size_t n, size_t align)
{
	if (align > VC_PAGE_SIZE || n > VC_SMALL_MAX)
		return 0;
	size_t want = n < align ? align : n;
	if (want > VC_SMALL_MAX)
		return 0;
	/* Span starts are page aligned, so a class whose size is a multiple of align
	 * gives every object that alignment. */
	for (unsigned c = vc_class_of(want); c < VC_NUM_CLASSES; c++)
		if (vc_classes[c].size % align == 0)
			return c;
	return 0;
}
