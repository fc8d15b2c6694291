/* allocator/huge.c - huge blocks (above 1 MiB, or aligned above a page) and the
 * cache of freed huge mappings.
 *
 * A huge block is a mapping [map_base, map_base + map_size) of its own: map_base is
 * unit aligned, the object starts max(align, page) into it. Every block and every
 * cache entry starts on a unit boundary, so no two of them share a unit: at most one
 * huge object starts in any unit. Its header (struct huge_block, which begins with
 * the struct vc_huge_header alloc.c reads) is the mapping's first page when the
 * object starts inside that unit (align below a unit; registry byte
 * VC_UNIT_HUGE_START), else the page before the object, which then starts on a
 * unit (VC_UNIT_HUGE_ALIGNED); the block's other units read VC_UNIT_HUGE_BODY.
 * The mapping may end before its last unit does, and the kernel may place other
 * mappings in the rest of that unit; the lookup of a pointer therefore reads only
 * the header its registry byte names, which lies in the block's own pages: the
 * first page of a VC_UNIT_HUGE_START unit, the page before a VC_UNIT_HUGE_ALIGNED
 * unit (the mapping runs from map_base up to the object and beyond).
 *
 * The cache. Mapping, first touch and unmapping of huge blocks cost page faults
 * and TLB shootdowns on every malloc/free cycle, so a freed block's mapping is kept
 * (resident) as a cache entry and handed to later huge allocations:
 *   - reuse: best fit, the smallest entry at least as large as the mapping asked
 *     for. A larger entry is split at the unit boundary above the request: the
 *     block gets the head (it ends on a unit boundary, so less than one unit more
 *     than asked), the tail stays cached. When that slack is more than the request
 *     itself (requests under 2 MiB), its pages go back to the OS (MADV_DONTNEED),
 *     so a block never holds more than twice its request resident.
 *   - a freed block merges with the cached entries right below and above it, so a
 *     split entry is whole again when its head comes back.
 *   - bounded: the cached bytes never exceed max(64 MiB, peak live huge bytes of
 *     the current and the previous decay period); the least recently freed entries
 *     are unmapped first; at most HUGE_CACHE_SLOTS entries.
 *   - decay: an entry idle for the decay time (VCMALLOC_DECAY_MS) is unmapped at
 *     the next check (huge malloc / free, the slow paths' vc_maintain and the maintenance thread,
 *     vcmalloc_reclaim); VCMALLOC_DECAY_MS=0 caches nothing.
 *     vcmalloc_release_free_memory (also malloc_trim and the OOM retry) unmaps all.
 *   - misuse: a cached entry's units read VC_UNIT_FOREIGN in the registry, except
 *     VC_UNIT_HUGE_FREED where a freed object started, so a second free of a
 *     freed block is reported as a double free and any other pointer into an entry
 *     as invalid; the freed header says state 0. A block's units are set back to
 *     HUGE_START / HUGE_BODY only when it is handed out again.
 *   - calloc: an entry records how much of it (a prefix) an owner may have
 *     written; vc_huge_clear zeroes that part of a reused block only.
 *
 * Locks: vc_huge_lock guards the entry table, cache_n, vc_huge_cached_bytes
 * (written under it, read atomically by the statistics), peak_before and
 * last_decay_ms (written under it); registry bytes change under vc_os_lock, which
 * every segment map and unmap takes too. This file never holds both (fork takes
 * them in lock.h's order).
 *
 * Invariant: the locks cover bookkeeping only; no system call (mmap, munmap,
 * madvise, mremap) runs while this file holds either lock. A huge munmap or mremap
 * costs a TLB shootdown on every CPU the process ran on; under vc_os_lock it would
 * stall every segment map of every node, under vc_huge_lock every huge malloc and
 * free. What makes it safe unlocked: memory leaves the bookkeeping before a system
 * call gives it back, and joins it only after a system call has made it. An entry
 * is taken out of the table before it is unmapped, moved or grown; a block's
 * registry bytes (and, for a shrink, its header) are given up before its pages
 * are; a new or grown block's are set after its mapping exists. So at every
 * instant the table, the headers and the registry claim only pages that are
 * mapped for them: a pointer into memory being given back is invalid already (a
 * free of it is reported, not honoured), two threads never release the same
 * range, and a fork child, in which the thread making the call does not exist,
 * at worst keeps that one range mapped and unused (nothing it knows of points
 * into a range that may be unmapped). tests/unit/huge_unit.c checks the first
 * half against the fake OS: every release-type call is made with both locks free.
 *
 * vc_huge_mapped_bytes, vc_huge_count and peak_now are atomic; the header of a
 * live block is written by the thread that allocates it (or reallocates it),
 * state by the one that frees it (an atomic exchange, so that of two racing frees
 * one is reported).
 */
#include "internal.h"

#include <errno.h>
#include <string.h>

#define HUGE_CACHE_SLOTS 64
#define HUGE_CACHE_MIN_BUDGET ((uint64_t)64 << 20)

/* The header page of a live block. */
struct huge_block {
	struct vc_huge_header h; /* what alloc.c reads (types.h) */
	size_t dirty;            /* bytes from the object's start that an earlier owner of
				    the mapping may have written (the rest reads as zero);
				    written by the allocating thread before it returns the
				    block, read by vc_huge_clear (calloc) and
				    vc_huge_populate (realloc's copy) in the same thread */
};
_Static_assert(sizeof(struct huge_block) <= VC_PAGE_SIZE, "a huge header fits its page");

static bool unit_aligned(const void *p)
{
	return ((uintptr_t)p & (VC_UNIT_SIZE - 1)) == 0;
}

/* The header of a huge object obj (see the top of this file). */
static struct huge_block *header_of(const void *obj)
{
	uintptr_t a = (uintptr_t)obj;
	if (unit_aligned(obj))
		return (struct huge_block *)(a - VC_PAGE_SIZE);
	return (struct huge_block *)(a & ~(uintptr_t)(VC_UNIT_SIZE - 1));
}

/* The object of a live block's header: size is map_size minus the object's offset. */
static char *object_of(const struct vc_huge_header *h)
{
	return (char *)h->map_base + h->map_size - h->size;
}

/* A cached mapping (under vc_huge_lock). */
struct huge_entry {
	char *base;        /* unit aligned */
	size_t size;       /* whole OS pages */
	size_t dirty;      /* [base, base + dirty) may hold old data; the rest is zero */
	uint64_t since_ms; /* when a block was last freed into it (decay, eviction) */
};

vc_lock_t vc_huge_lock = VC_LOCK_INIT;
uint64_t vc_huge_mapped_bytes;
uint64_t vc_huge_cached_bytes;
uint64_t vc_huge_count;

static struct huge_entry cache[HUGE_CACHE_SLOTS]; /* [0, cache_n) in use */
static unsigned cache_n;
/* Live huge bytes at most, in this decay period (raised atomically by allocations,
 * reset under the lock by the decay) and in the previous one (under the lock). */
static uint64_t peak_now, peak_before;
static uint64_t last_decay_ms;         /* start of this period (atomic reads) */

static size_t unit_round(size_t n)
{
	return (n + VC_UNIT_SIZE - 1) & ~(VC_UNIT_SIZE - 1);
}

static size_t min_size(size_t a, size_t b)
{
	return a < b ? a : b;
}

/* Bytes of the mapping for size usable bytes at offset `pre` (header page and
 * alignment), in whole pages; 0 when that overflows. */
static size_t huge_map_size(size_t size, size_t pre)
{
	size_t total = pre + size;
	if (total < size)
		return 0;
	total = vc_page_round(total);
	return total < pre ? 0 : total;
}

static uint64_t budget_locked(void)
{
	uint64_t b = HUGE_CACHE_MIN_BUDGET;
	uint64_t now = __atomic_load_n(&peak_now, __ATOMIC_RELAXED);
	if (now > b)
		b = now;
	if (peak_before > b)
		b = peak_before;
	return b;
}

static void set_cached_locked(uint64_t v)
{
	__atomic_store_n(&vc_huge_cached_bytes, v, __ATOMIC_RELAXED);
}

static void remove_locked(unsigned i)
{
	set_cached_locked(vc_huge_cached_bytes - cache[i].size);
	cache[i] = cache[--cache_n];
}

/* Index of the least recently freed entry (cache_n > 0). */
static unsigned oldest_locked(void)
{
	unsigned v = 0;
	for (unsigned i = 1; i < cache_n; i++)
		if (cache[i].since_ms < cache[v].since_ms)
			v = i;
	return v;
}

enum take { TAKE_NONE, TAKE_FIT, TAKE_SMALLER };

/* Take a mapping out of the cache into *out (base, size, dirty): the smallest entry
 * of at least need bytes, split at the unit boundary above need (TAKE_FIT); else
 * the largest entry, whole, for the caller to grow (TAKE_SMALLER). */
static enum take cache_take(size_t need, struct huge_entry *out)
{
	vc_lock(&vc_huge_lock);
	unsigned best = cache_n, largest = cache_n;
	for (unsigned i = 0; i < cache_n; i++) {
		size_t sz = cache[i].size;
		if (sz >= need && (best == cache_n || sz < cache[best].size))
			best = i;
		if (largest == cache_n || sz > cache[largest].size)
			largest = i;
	}
	if (best == cache_n) {
		enum take t = TAKE_NONE;
		if (largest != cache_n) {
			*out = cache[largest];
			remove_locked(largest);
			t = TAKE_SMALLER;
		}
		vc_unlock(&vc_huge_lock);
		return t;
	}
	struct huge_entry *e = &cache[best];
	size_t head = unit_round(need);
	if (head >= e->size) {
		*out = *e;
		remove_locked(best);
	} else {
		out->base = e->base;
		out->size = head;
		out->dirty = min_size(e->dirty, head);
		e->base += head;
		e->size -= head;
		e->dirty = e->dirty > head ? e->dirty - head : 0;
		set_cached_locked(vc_huge_cached_bytes - head);
	}
	vc_unlock(&vc_huge_lock);
	return TAKE_FIT;
}

/* Take the cached entry starting exactly at `at`, if there is one with at least
 * need bytes: its first unit-rounded need bytes (or all of it). Returns the bytes
 * taken, 0 if none. */
static size_t cache_take_at(char *at, size_t need)
{
	size_t got = 0;
	vc_lock(&vc_huge_lock);
	for (unsigned i = 0; i < cache_n; i++) {
		struct huge_entry *e = &cache[i];
		if (e->base != at)
			continue;
		if (e->size < need)
			break;
		got = unit_round(need);
		if (got >= e->size) {
			got = e->size;
			remove_locked(i);
		} else {
			e->base += got;
			e->size -= got;
			e->dirty = e->dirty > got ? e->dirty - got : 0;
			set_cached_locked(vc_huge_cached_bytes - got);
		}
		break;
	}
	vc_unlock(&vc_huge_lock);
	return got;
}

/* Unmap entries, least recently freed first, while the cache is over its budget
 * (or all of them when all is set), one at a time with the lock dropped. */
static void cache_shrink(bool all)
{
	for (;;) {
		struct huge_entry v;
		vc_lock(&vc_huge_lock);
		bool over = cache_n > 0 && (all || vc_huge_cached_bytes > budget_locked());
		if (over) {
			unsigned i = oldest_locked();
			v = cache[i];
			remove_locked(i);
		}
		vc_unlock(&vc_huge_lock);
		if (!over)
			return;
		vc_os_unmap(v.base, v.size);
	}
}

/* Cache the mapping n (n.dirty, n.since_ms set by the caller), merged with its
 * cached neighbours. When the table is full the least recently freed entry makes
 * room and is returned in *victim (size 0: none) for the caller to unmap. */
static void cache_put(struct huge_entry n, struct huge_entry *victim)
{
	victim->size = 0;
	vc_lock(&vc_huge_lock);
	set_cached_locked(vc_huge_cached_bytes + n.size);
	/* Entries are never adjacent (each insertion merges), so there is at most one
	 * neighbour on each side. */
	for (unsigned i = 0; i < cache_n;) {
		struct huge_entry *e = &cache[i];
		if (e->base + e->size == n.base) { /* below: n extends it */
			n.base = e->base;
			n.dirty = n.dirty ? e->size + n.dirty : e->dirty;
		} else if (n.base + n.size == e->base) { /* above */
			if (e->dirty)
				n.dirty = n.size + e->dirty;
		} else {
			i++;
			continue;
		}
		n.size += e->size;
		cache[i] = cache[--cache_n]; /* bytes stay counted: they are in n now */
	}
	if (cache_n == HUGE_CACHE_SLOTS) {
		unsigned v = oldest_locked();
		*victim = cache[v];
		remove_locked(v);
	}
	cache[cache_n++] = n;
	vc_unlock(&vc_huge_lock);
}

/* cache_put, then unmap what no longer fits. */
static void cache_put_bounded(struct huge_entry n)
{
	struct huge_entry victim;
	cache_put(n, &victim);
	if (victim.size)
		vc_os_unmap(victim.base, victim.size);
	cache_shrink(false);
}

void vc_huge_maybe_decay(uint64_t now)
{
	uint64_t decay = vc_g.opt.decay_ms;
	if (decay == 0 || now - __atomic_load_n(&last_decay_ms, __ATOMIC_RELAXED) < decay ||
	    now < __atomic_load_n(&last_decay_ms, __ATOMIC_RELAXED))
		return;
	vc_lock(&vc_huge_lock);
	if (now < last_decay_ms || now - last_decay_ms < decay) {
		vc_unlock(&vc_huge_lock);
		return; /* another thread ran this period's decay */
	}
	__atomic_store_n(&last_decay_ms, now, __ATOMIC_RELAXED);
	peak_before = __atomic_load_n(&peak_now, __ATOMIC_RELAXED);
	__atomic_store_n(&peak_now, __atomic_load_n(&vc_huge_mapped_bytes, __ATOMIC_RELAXED),
			 __ATOMIC_RELAXED);
	vc_unlock(&vc_huge_lock);
	for (;;) {
		struct huge_entry v;
		bool found = false;
		vc_lock(&vc_huge_lock);
		for (unsigned i = 0; i < cache_n; i++) {
			if (cache[i].since_ms + decay <= now) {
				v = cache[i];
				remove_locked(i);
				found = true;
				break;
			}
		}
		vc_unlock(&vc_huge_lock);
		if (!found)
			break;
		vc_os_unmap(v.base, v.size);
	}
	cache_shrink(false); /* the budget may have shrunk with the peaks */
}

void vc_huge_release_all(void)
{
	cache_shrink(true);
}

static void note_live(size_t map)
{
	uint64_t live = __atomic_add_fetch(&vc_huge_mapped_bytes, map, __ATOMIC_RELAXED);
	vc_atomic_raise_u64(&peak_now, live);
	__atomic_add_fetch(&vc_huge_count, 1, __ATOMIC_RELAXED);
}

/* Registry of a live block [base, base + map) whose object is obj. */
static void set_block_units(char *base, size_t map, char *obj)
{
	unsigned start = unit_aligned(obj) ? VC_UNIT_HUGE_ALIGNED : VC_UNIT_HUGE_START;
	vc_registry_set(base, map, VC_UNIT_HUGE_BODY, VC_UNIT_HUGE_BODY);
	vc_registry_set(obj, 1, start, start);
}

void *vc_huge_alloc(size_t size, size_t align)
{
	if (align < VC_PAGE_SIZE)
		align = VC_PAGE_SIZE;
	/* The object is the first aligned address at least one page into the mapping:
	 * its header (the mapping's first page, or the page before a unit-aligned
	 * object) is inside the mapping. */
	size_t offset = align;
	size_t map = huge_map_size(size, offset);
	if (map == 0 || map > PTRDIFF_MAX) {
		errno = ENOMEM;
		return NULL;
	}
	uint64_t now = vc_os_now_ms();
	vc_huge_maybe_decay(now);
	struct huge_entry got;
	char *base = NULL;
	size_t dirty = 0;
	/* Cached mappings start on a unit: good for any alignment up to a unit. */
	enum take t = align <= VC_UNIT_SIZE ? cache_take(map, &got) : TAKE_NONE;
	if (t == TAKE_FIT) {
		base = got.base;
		dirty = got.dirty;
		if (got.size - map > map) {
			/* More slack than request: its pages go back to the OS, so that
			 * the block holds at most twice its request resident. */
			vc_os_release(base + map, got.size - map);
			dirty = min_size(dirty, map);
		}
		map = got.size;
	} else if (t == TAKE_SMALLER) {
		/* Grow the largest cached mapping: only the new part faults. Where it
		 * is if the address space after it is free, else it moves (its page
		 * tables do) to an aligned range reserved by a new mapping and grows
		 * there. */
		if (vc_os_resize_in_place(got.base, got.size, map)) {
			base = got.base;
			dirty = got.dirty;
		} else {
			base = vc_os_map_aligned(map, VC_UNIT_SIZE);
			if (base && vc_os_move(got.base, got.size, map, base))
				dirty = got.dirty;
			else /* keep it; the new mapping, if any, serves as it is */
				cache_put_bounded(got);
		}
	} else {
		base = vc_os_map_aligned(map, align > VC_UNIT_SIZE ? align : VC_UNIT_SIZE);
	}
	if (!base) {
		errno = ENOMEM;
		return NULL;
	}
	char *obj = base + offset;
	struct huge_block *b = header_of(obj);
	b->h.map_base = base;
	b->h.map_size = map;
	b->h.size = map - offset;
	b->h.magic = vc_g.secret ^ (uintptr_t)obj;
	b->dirty = dirty > offset ? dirty - offset : 0;
	__atomic_store_n(&b->h.state, 1, __ATOMIC_RELAXED);
	vc_lock(&vc_os_lock);
	set_block_units(base, map, obj);
	vc_unlock(&vc_os_lock);
	note_live(map);
	return obj;
}

void vc_huge_clear(void *p, size_t n)
{
	const struct huge_block *b = header_of(p);
	memset(p, 0, min_size(n, b->dirty));
}

void vc_huge_populate(void *p, size_t n)
{
	const struct huge_block *b = header_of(p);
	size_t from = b->dirty / VC_OS_PAGE * VC_OS_PAGE;
	size_t to = vc_page_round(n); /* <= b->h.size */
	if (to > from)
		vc_os_populate((char *)p + from, to - from);
}

struct vc_huge_header *vc_huge_lookup(const void *p)
{
	if (((uintptr_t)p & (VC_PAGE_SIZE - 1)) != 0)
		return NULL;
	/* Read only the header the registry byte names: the pages after the block's
	 * end in its last unit may be unmapped, or another mapping's. */
	unsigned k = vc_unit_kind(p);
	if (k != (unit_aligned(p) ? VC_UNIT_HUGE_ALIGNED : VC_UNIT_HUGE_START))
		return NULL;
	struct vc_huge_header *h = &header_of(p)->h;
	/* A live block's header; p may still be an interior pointer: the magic tells. */
	if (h->magic != (vc_g.secret ^ (uintptr_t)p) ||
	    __atomic_load_n(&h->state, __ATOMIC_RELAXED) != 1)
		return NULL;
	return h;
}

void vc_huge_free(struct vc_huge_header *h)
{
	char *obj = object_of(h);
	/* Two frees of one block racing: only one finds it live. */
	if (__atomic_exchange_n(&h->state, 0, __ATOMIC_ACQ_REL) != 1)
		vc_report("double free", "free", obj);
	char *base = h->map_base;
	size_t map = h->map_size;
	vc_lock(&vc_os_lock);
	vc_registry_set(base, map, VC_UNIT_FOREIGN, VC_UNIT_FOREIGN);
	vc_registry_set(obj, 1, VC_UNIT_HUGE_FREED, VC_UNIT_HUGE_FREED);
	vc_unlock(&vc_os_lock);
	__atomic_sub_fetch(&vc_huge_mapped_bytes, map, __ATOMIC_RELAXED);
	__atomic_sub_fetch(&vc_huge_count, 1, __ATOMIC_RELAXED);
	if (vc_g.opt.decay_ms == 0) {
		vc_os_unmap(base, map);
		return;
	}
	uint64_t now = vc_os_now_ms();
	struct huge_entry n = {base, map, map, now};
	cache_put_bounded(n);
	vc_huge_maybe_decay(now);
}

void *vc_huge_realloc(struct vc_huge_header *h, size_t size)
{
	char *obj = object_of(h);
	char *base = h->map_base;
	size_t offset = (size_t)(obj - base);
	size_t map = huge_map_size(size, offset);
	if (map == 0)
		return NULL;
	size_t old_map = h->map_size;
	if (map <= old_map && map * 2 > old_map)
		return obj; /* shrinking by less than half: keep it */
	/* Resize in place only: a moved mapping would leave its unit boundary. The
	 * caller copies into a new block when this fails. */
	if (map < old_map) {
		/* The units past the new end, and the header's claim on them, are given
		 * up before the OS takes the pages back (see the top of this file): a
		 * mapping another thread makes there next sets its units itself. */
		vc_lock(&vc_os_lock);
		vc_registry_set(base + map, old_map - map, VC_UNIT_FOREIGN, VC_UNIT_FOREIGN);
		set_block_units(base, map, obj); /* the unit of the new end stays ours */
		vc_unlock(&vc_os_lock);
		h->map_size = map;
		h->size = map - offset;
		if (!vc_os_resize_in_place(base, old_map, map)) {
			h->map_size = old_map;
			h->size = old_map - offset;
			vc_lock(&vc_os_lock);
			set_block_units(base, old_map, obj);
			vc_unlock(&vc_os_lock);
			return NULL;
		}
		__atomic_sub_fetch(&vc_huge_mapped_bytes, old_map - map, __ATOMIC_RELAXED);
		return obj;
	}
	/* Growing takes the cached entry that starts where the block ends, if there
	 * is one, else asks the OS for the address space after it; the registry and
	 * the header claim the new pages once they are the block's. */
	size_t grown = cache_take_at(base + old_map, map - old_map);
	if (grown)
		map = old_map + grown;
	else if (!vc_os_resize_in_place(base, old_map, map))
		return NULL;
	vc_lock(&vc_os_lock);
	set_block_units(base, map, obj);
	vc_unlock(&vc_os_lock);
	uint64_t live = __atomic_add_fetch(&vc_huge_mapped_bytes, map - old_map, __ATOMIC_RELAXED);
	vc_atomic_raise_u64(&peak_now, live);
	h->map_size = map;
	h->size = map - offset;
	return obj;
}
