/* tests/unit/huge_unit.c - huge blocks and their cache (allocator/huge.c, with the
 * registry of segment.c) alone, against the fake OS layer (fake_os.c): no malloc
 * replacement, no threads, no rseq, a clock the test moves. Each case states the
 * rule it checks.
 *
 *   unlocked   every munmap, madvise and mremap that huge.c makes runs with both of
 *              its locks free (vc_huge_lock, and vc_os_lock, which every segment
 *              map takes), over every path that makes one: a free with and without
 *              the cache, a reuse whose slack goes back, a cached mapping grown in
 *              place or moved (and kept when neither works), a realloc that shrinks
 *              or grows, the decay, a full table, the budget, a release of all;
 *   shrink     a realloc that shrinks gives up the block's registry bytes and its
 *              header's claim on the pages before the mremap returns them, and
 *              takes both back when the mremap fails;
 *   registry   a live block's units read HUGE_START / HUGE_BODY (HUGE_ALIGNED for a
 *              unit-aligned object), a freed one's FOREIGN with HUGE_FREED where
 *              its object started; a second free is reported; the figures
 *              (mapped, cached, count) follow;
 *   reuse      a freed mapping serves the next huge block (no new mapping), split at
 *              the unit boundary above the request, and merges back whole when the
 *              block comes back;
 *   decay      a cached mapping is unmapped once idle for the decay time, not
 *              before; with a decay time of 0 nothing is cached.
 */
#include "fake_os.h"
#include "internal.h"
#include "layer_env.h"
#include "vctest.h"

#include <stdio.h>
#include <string.h>

#define DECAY_MS 1000u
#define MIB ((size_t)1 << 20)
/* One more than the cache's table holds (huge.c: 64 entries). */
#define HUGE_TEST_BLOCKS 65

/* ---- what the fake OS sees at each call ---- */

static size_t release_calls[FAKE_MOVE + 1]; /* release-type calls seen, by kind */
static size_t calls_under_lock;

/* A block whose header every resize of its mapping is compared with. */
static struct vc_huge_header *watched;
static size_t watched_resizes;

static bool lock_held(vc_lock_t *l)
{
	return __atomic_load_n(&l->state, __ATOMIC_RELAXED) != 0;
}

static void before_call(enum fake_call kind, void *p, size_t size)
{
	if (!fake_call_releases(kind))
		return;
	release_calls[kind]++;
	if (lock_held(&vc_huge_lock) || lock_held(&vc_os_lock)) {
		calls_under_lock++;
		VCT_EXPECT(0, "call %d on [%p, +%zu) with huge lock %u, OS lock %u", (int)kind, p,
			   size, vc_huge_lock.state, vc_os_lock.state);
	}
	if (kind == FAKE_RESIZE && watched && p == watched->map_base) {
		watched_resizes++;
		/* The header never claims pages the mapping may not have: at a shrink it
		 * already names the new size, and the units past it are given up. */
		VCT_EXPECT(watched->map_size <= size, "header claims %zu bytes at a resize to %zu",
			   watched->map_size, size);
		char *end_unit = (char *)(((uintptr_t)p + size + VC_UNIT_SIZE - 1) &
					  ~(uintptr_t)(VC_UNIT_SIZE - 1));
		VCT_EXPECT(vc_unit_kind(end_unit) == VC_UNIT_FOREIGN ||
			       end_unit >= (char *)p + watched->map_size,
			   "unit past the new end reads %u at the resize", vc_unit_kind(end_unit));
	}
}

/* Give back every cached mapping and forget the calls: each case starts with an
 * empty cache, the clock moved on. */
static void fresh_cache(void)
{
	vc_huge_release_all();
	fake_os.ncalls = 0;
	fake_os.fail_maps = fake_os.fail_resizes = fake_os.fail_moves = 0;
	fake_os.now_ms += 10 * DECAY_MS;
	vc_g.opt.decay_ms = DECAY_MS;
	vc_huge_maybe_decay(fake_os.now_ms); /* a new decay period starts now */
}

static size_t maps_since(size_t mark)
{
	size_t n = 0;
	for (size_t i = mark; i < fake_os.ncalls; i++)
		n += fake_os.calls[i].kind == FAKE_MAP;
	return n;
}

static struct vc_huge_header *header(void *obj)
{
	struct vc_huge_header *h = vc_huge_lookup(obj);
	VCT_EXPECT(h != NULL, "no live huge block at %p", obj);
	return h;
}

static void *huge(size_t size)
{
	void *p = vc_huge_alloc(size, 0);
	VCT_EXPECT(p != NULL, "huge alloc of %zu", size);
	if (p)
		memset(p, 0x3c, 64); /* an owner writes its block */
	return p;
}

static void release(void *p)
{
	struct vc_huge_header *h = p ? header(p) : NULL;
	if (h)
		vc_huge_free(h);
}

/* ---- cases ---- */

static void case_unlocked(void)
{
	fresh_cache();
	memset(release_calls, 0, sizeof release_calls);
	calls_under_lock = 0;

	/* Free into the cache, reuse with slack returned (request under 2 MiB from a
	 * 12 MiB entry: the head is one unit, more than twice the request). */
	release(huge(12 * MIB));
	void *small = huge(MIB + MIB / 8);
	release(small);

	/* The only cached mapping is too small: grown in place; moved when the
	 * address space after it is taken; kept, and a new mapping made, when the
	 * move fails too. */
	fresh_cache();
	release(huge(3 * MIB));
	release(huge(9 * MIB));
	fake_os.fail_resizes = 1;
	release(huge(15 * MIB));
	fake_os.fail_resizes = 1;
	fake_os.fail_moves = 1;
	release(huge(21 * MIB));

	/* realloc: shrink by more than half, grow over the address space after it. */
	fresh_cache();
	void *r = huge(16 * MIB);
	struct vc_huge_header *h = r ? header(r) : NULL;
	if (h) {
		VCT_EXPECT(vc_huge_realloc(h, 5 * MIB) == r, "shrink in place");
		void *g = vc_huge_realloc(h, 7 * MIB); /* NULL: the caller would move it */
		VCT_EXPECT(g == r || g == NULL, "a huge realloc moved the block to %p", g);
		vc_huge_free(h);
	}

	/* The decay, the budget, a full table, a release of all. */
	fresh_cache();
	void *blocks[HUGE_TEST_BLOCKS];
	for (unsigned i = 0; i < HUGE_TEST_BLOCKS; i++)
		blocks[i] = huge(MIB + MIB / 8);
	for (unsigned i = 0; i < HUGE_TEST_BLOCKS; i++)
		release(blocks[i]); /* table full at 64: the oldest goes */
	fake_os.now_ms += 2 * DECAY_MS;
	vc_huge_maybe_decay(fake_os.now_ms);
	void *big[6];
	for (unsigned i = 0; i < 6; i++)
		big[i] = huge(16 * MIB);
	for (unsigned i = 0; i < 6; i++)
		release(big[i]); /* 96 MiB: over the 64 MiB budget once the peak decays */
	fake_os.now_ms += 2 * DECAY_MS;
	vc_huge_maybe_decay(fake_os.now_ms);
	fake_os.now_ms += 2 * DECAY_MS;
	vc_huge_maybe_decay(fake_os.now_ms);
	release(huge(2 * MIB));
	vc_huge_release_all();

	/* Without the cache: a free unmaps at once. */
	fresh_cache();
	vc_g.opt.decay_ms = 0;
	release(huge(2 * MIB));
	vc_g.opt.decay_ms = DECAY_MS;

	VCT_EXPECT(calls_under_lock == 0, "%zu release calls with a lock held", calls_under_lock);
	/* The paths above were all taken: each kind of call was seen. */
	VCT_EXPECT(release_calls[FAKE_UNMAP] >= HUGE_TEST_BLOCKS, "%zu unmaps",
		   release_calls[FAKE_UNMAP]);
	VCT_EXPECT(release_calls[FAKE_RELEASE] >= 1, "%zu releases", release_calls[FAKE_RELEASE]);
	VCT_EXPECT(release_calls[FAKE_RESIZE] >= 4, "%zu resizes", release_calls[FAKE_RESIZE]);
	VCT_EXPECT(release_calls[FAKE_MOVE] >= 2, "%zu moves", release_calls[FAKE_MOVE]);
}

static void case_shrink(void)
{
	fresh_cache();
	char *p = huge(24 * MIB);
	watched = p ? header(p) : NULL;
	if (!watched)
		return;
	watched_resizes = 0;
	char *base = watched->map_base;
	size_t old_map = watched->map_size;
	VCT_EXPECT(vc_huge_realloc(watched, 6 * MIB) == p, "shrink in place");
	VCT_EXPECT(watched_resizes == 1, "%zu resizes seen", watched_resizes);
	VCT_EXPECT(watched->map_size < 8 * MIB && watched->size >= 6 * MIB,
		   "after the shrink: mapping %zu, usable %zu", watched->map_size, watched->size);
	VCT_EXPECT(vc_unit_kind(base + 12 * MIB) == VC_UNIT_FOREIGN, "a unit past the end reads %u",
		   vc_unit_kind(base + 12 * MIB));
	VCT_EXPECT(vc_huge_mapped_bytes == watched->map_size, "mapped %llu for a block of %zu",
		   (unsigned long long)vc_huge_mapped_bytes, watched->map_size);
	(void)old_map;

	/* A shrink the OS refuses: everything as before the call. */
	size_t map = watched->map_size, size = watched->size;
	fake_os.fail_resizes = 1;
	VCT_EXPECT(vc_huge_realloc(watched, 2 * MIB) == NULL, "a refused shrink reports failure");
	VCT_EXPECT(watched->map_size == map && watched->size == size,
		   "header after a refused shrink: %zu / %zu, was %zu / %zu", watched->map_size,
		   watched->size, map, size);
	VCT_EXPECT(vc_unit_kind(base + 4 * MIB) == VC_UNIT_HUGE_BODY,
		   "the block's second unit reads %u after a refused shrink",
		   vc_unit_kind(base + 4 * MIB));
	vc_huge_free(watched);
	watched = NULL;
}

static void case_registry(void)
{
	fresh_cache();
	char *p = huge(9 * MIB);
	struct vc_huge_header *h = p ? header(p) : NULL;
	if (!h)
		return;
	char *base = h->map_base;
	VCT_EXPECT(vc_unit_kind(p) == VC_UNIT_HUGE_START, "object's unit reads %u",
		   vc_unit_kind(p));
	VCT_EXPECT(vc_unit_kind(base + VC_UNIT_SIZE) == VC_UNIT_HUGE_BODY &&
		       vc_unit_kind(base + 2 * VC_UNIT_SIZE) == VC_UNIT_HUGE_BODY,
		   "body units read %u, %u", vc_unit_kind(base + VC_UNIT_SIZE),
		   vc_unit_kind(base + 2 * VC_UNIT_SIZE));
	VCT_EXPECT(vc_huge_lookup(p + VC_PAGE_SIZE) == NULL, "an interior pointer is not a block");
	VCT_EXPECT(vc_huge_count == 1 && vc_huge_mapped_bytes == h->map_size,
		   "count %llu, mapped %llu", (unsigned long long)vc_huge_count,
		   (unsigned long long)vc_huge_mapped_bytes);
	size_t map = h->map_size;
	vc_huge_free(h);
	VCT_EXPECT(vc_unit_kind(p) == VC_UNIT_HUGE_FREED, "freed object's unit reads %u",
		   vc_unit_kind(p));
	VCT_EXPECT(vc_unit_kind(base + VC_UNIT_SIZE) == VC_UNIT_FOREIGN, "freed body unit reads %u",
		   vc_unit_kind(base + VC_UNIT_SIZE));
	VCT_EXPECT(vc_huge_lookup(p) == NULL, "a freed block is found live");
	VCT_EXPECT(vc_huge_count == 0 && vc_huge_mapped_bytes == 0 && vc_huge_cached_bytes == map,
		   "count %llu, mapped %llu, cached %llu", (unsigned long long)vc_huge_count,
		   (unsigned long long)vc_huge_mapped_bytes,
		   (unsigned long long)vc_huge_cached_bytes);

	/* A second free through the stale header (two racing frees): reported. */
	jmp_buf caught;
	layer_env_report = NULL;
	if (setjmp(caught) == 0) {
		layer_env_catch_report = &caught;
		vc_huge_free(h);
		layer_env_catch_report = NULL;
	}
	VCT_EXPECT(layer_env_report && strstr(layer_env_report, "double free"),
		   "second free reported as: %s", layer_env_report ? layer_env_report : "nothing");

	/* Aligned to a unit: the object starts on a unit, its header the page before. */
	char *q = vc_huge_alloc(2 * MIB, VC_UNIT_SIZE);
	VCT_EXPECT(q && ((uintptr_t)q & (VC_UNIT_SIZE - 1)) == 0, "unit-aligned block at %p",
		   (void *)q);
	if (q) {
		VCT_EXPECT(vc_unit_kind(q) == VC_UNIT_HUGE_ALIGNED,
			   "aligned object's unit reads %u", vc_unit_kind(q));
		release(q);
	}
}

static void case_reuse(void)
{
	fresh_cache();
	char *p = huge(12 * MIB);
	if (!p)
		return;
	char *base = header(p)->map_base;
	size_t map = header(p)->map_size;
	release(p);
	size_t mark = fake_os.ncalls;
	char *q = huge(MIB + MIB / 8);
	struct vc_huge_header *h = q ? header(q) : NULL;
	if (!h)
		return;
	VCT_EXPECT(maps_since(mark) == 0, "a new mapping with a cached one that fits");
	VCT_EXPECT(h->map_base == base && h->map_size == VC_UNIT_SIZE,
		   "head of the cached mapping, one unit: base %p (cached %p), %zu bytes",
		   h->map_base, (void *)base, h->map_size);
	VCT_EXPECT(vc_huge_cached_bytes == map - VC_UNIT_SIZE, "cached %llu, want %zu",
		   (unsigned long long)vc_huge_cached_bytes, map - VC_UNIT_SIZE);
	VCT_EXPECT(fake_os_bytes(FAKE_RELEASE, mark) ==
		       VC_UNIT_SIZE - vc_page_round(MIB + MIB / 8 + VC_PAGE_SIZE),
		   "slack released: %zu bytes", fake_os_bytes(FAKE_RELEASE, mark));
	vc_huge_free(h);
	VCT_EXPECT(vc_huge_cached_bytes == map, "merged back: cached %llu, want %zu",
		   (unsigned long long)vc_huge_cached_bytes, map);
	/* Whole again: a block as large as the first fits without a new mapping. */
	mark = fake_os.ncalls;
	release(huge(12 * MIB));
	VCT_EXPECT(maps_since(mark) == 0, "the merged mapping did not serve a 12 MiB block");
}

static void case_decay(void)
{
	fresh_cache();
	uint64_t t0 = fake_os.now_ms;
	release(huge(5 * MIB));
	size_t mark = fake_os.ncalls;
	fake_os.now_ms = t0 + DECAY_MS - 1;
	vc_huge_maybe_decay(fake_os.now_ms);
	VCT_EXPECT(fake_os_bytes(FAKE_UNMAP, mark) == 0, "unmapped %zu bytes before the decay time",
		   fake_os_bytes(FAKE_UNMAP, mark));
	/* Checks run once per decay period: by two periods it is gone. */
	for (unsigned k = 0; k <= 2 * DECAY_MS && vc_huge_cached_bytes; k += DECAY_MS / 4) {
		fake_os.now_ms = t0 + DECAY_MS + k;
		vc_huge_maybe_decay(fake_os.now_ms);
	}
	VCT_EXPECT(vc_huge_cached_bytes == 0 && fake_os_bytes(FAKE_UNMAP, mark) >= 5 * MIB,
		   "after the decay: cached %llu, unmapped %zu",
		   (unsigned long long)vc_huge_cached_bytes, fake_os_bytes(FAKE_UNMAP, mark));

	vc_g.opt.decay_ms = 0;
	mark = fake_os.ncalls;
	release(huge(3 * MIB));
	VCT_EXPECT(vc_huge_cached_bytes == 0 && fake_os_bytes(FAKE_UNMAP, mark) >= 3 * MIB,
		   "decay 0: cached %llu, unmapped %zu", (unsigned long long)vc_huge_cached_bytes,
		   fake_os_bytes(FAKE_UNMAP, mark));
	vc_g.opt.decay_ms = DECAY_MS;
}

int main(void)
{
	vc_g.secret = 0x1234567;
	vc_g.nnodes = 1;
	vc_registry_init();
	fake_os.now_ms = 100000;
	fake_os.before_call = before_call;
	case_unlocked();
	case_shrink();
	case_registry();
	case_reuse();
	case_decay();
	vc_huge_release_all();
	VCT_EXPECT(calls_under_lock == 0, "%zu release calls with a lock held", calls_under_lock);
	printf("huge_unit: unlocked, shrink, registry, reuse, decay\n");
	return vct_exit();
}
