/* allocator/vcpu_slab.h - the per-vCPU regions and their stack words: layout, and
 * every operation that changes a header (vcpu_slab.c). Nothing outside this unit
 * does arithmetic on a header word; the word's format is rseq/rseq.h's (struct
 * vc_rseq_stack, vc_rseq_stack_word and friends).
 *
 * Layout: vc_g.vcpu_regions reserves VC_VCPU_REGION bytes of address space every
 * 2^VC_VCPU_STRIDE_SHIFT bytes for each possible vCPU id, VC_VCPU_REGION_COLOUR bytes
 * into each stride (types.h: the header lines off L1 set 0). A region is 65536 slots of
 * 8 bytes: slot 0 is the node tag (the node of the region's objects; a roaming
 * region, vcpu_cache.c, also holds objects of the nodes it came from), slots 1..96
 * the header words of classes 1..96, then each class's slot array from
 * vc_classes[c].slot_base; a class's live objects are slots [begin, current), its
 * capacity end - begin, begin always its slot_base while the stack is live.
 *
 * States of a region, and who moves it (the vCPU's lock is vc_g.vcpus[idx].lock):
 *
 *        open (lock)              stop (lock) + fence
 *   zero ----------------> open --------------------> stopped
 *    ^                    |  ^                         |   |
 *    |                    |  | resize: the thread      |   | take (lock, after the
 *    |                    +--+ running as the id,      |   | fence): objects out,
 *    |                         lock held               |   v headers stay stopped
 *    |        release: pages to the OS, no lock held   | stopped, empty
 *    +-------------------------------------------------+---+
 *             or clear (lock): headers to zero, pages kept (a node move)
 *
 *   zero     every header word 0 ("never used"): pops see it empty, pushes full;
 *            no critical section can be in flight against it.
 *   open     live headers: critical sections of the thread running as the id
 *            move `current` (rseq modes); lock holders do, with plain stores, in
 *            fallback mode. begin / end change only by resize (vc_rseq_cmpeq_store
 *            on the owning id, lock held) or by a lock holder in fallback mode.
 *   stopped  every header holds its stop word (rseq.h); after a fence that passes
 *            with every stop word in place, no section that saw a live header can
 *            commit, and each `current` is final.
 * A region goes from stopped to zero only after a fence: a section that read a
 * stopped word fails whatever comes next, as every section reads its header with
 * one load. Only a zero region is opened. A release runs with no lock held, the
 * region marked as releasing under the lock (vcpu_cache.c's release_region), so
 * that nothing opens it before its pages are gone. In fallback mode the lock alone stands
 * for the fence: no critical section runs there.
 */
#ifndef VC_VCPU_SLAB_H
#define VC_VCPU_SLAB_H

#include "internal.h"
#include "rseq.h"

static inline char *vc_vcpu_region(uint32_t idx)
{
	return vc_g.vcpu_regions + ((size_t)idx << VC_VCPU_STRIDE_SHIFT);
}

static inline struct vc_rseq_stack *vc_vcpu_header(char *region, unsigned c)
{
	return (struct vc_rseq_stack *)region + c;
}

/* The page of a region's stride that holds slot `slot` (the region starts
 * VC_VCPU_REGION_COLOUR bytes into its stride). */
static inline size_t vc_vcpu_slot_page(size_t slot)
{
	return (VC_VCPU_REGION_COLOUR + slot * 8) / VC_OS_PAGE;
}

/* The node tag of a vCPU region: slot 0 (class 0 has no header). */
static inline uint32_t *vc_vcpu_node_tag(char *region)
{
	return (uint32_t *)region;
}

/* Header word of class c of idx's region. */
static inline uint64_t *vc_slab_word(uint32_t idx, unsigned c)
{
	return vc_rseq_stack_word_of(vc_vcpu_header(vc_vcpu_region(idx), c));
}

/* Objects of class c held by idx's region, read without the lock (statistics,
 * reclaim): 0 when the header is zero or stopped. */
static inline unsigned vc_slab_count(uint32_t idx, unsigned c)
{
	uint64_t h = __atomic_load_n(vc_slab_word(idx, c), __ATOMIC_RELAXED);
	uint16_t cur = vc_rseq_stack_current(h), begin = vc_rseq_stack_begin(h);
	return cur > begin ? (unsigned)(cur - begin) : 0u;
}

/* Where the objects a region gives up go (the central lists, in the allocator). */
typedef void (*vc_slab_spill_fn)(unsigned c, void *const *objs, unsigned n);

/* ---- lifecycle (vcpu_slab.c); idx's lock held for all of them ---- */

/* zero -> open: every class empty with capacity 0, the node tag `node`. */
void vc_slab_open(uint32_t idx, unsigned node) VC_HIDDEN;
/* Open region, lock held: the region serves node `node` from now on and keeps its
 * objects (a roaming region's node move). */
void vc_slab_retag(uint32_t idx, unsigned node) VC_HIDDEN;
/* open/stopped -> stopped: compare-and-swap every header to its stop word. Returns
 * true when some header was live (a late single-object commit made it live again
 * after an earlier stop). */
bool vc_slab_stop(uint32_t idx) VC_HIDDEN;
/* After vc_slab_stop of ids[0..n) (their locks held): fence until a fence passes
 * with every header still stopped. Nothing to do in fallback mode. */
void vc_slab_fence(const uint32_t *ids, unsigned n) VC_HIDDEN;
/* Fences made so far and the nanoseconds spent in them (statistics rseq_fences,
 * rseq_fence_ns): a fence waits for every CPU running the process. */
extern uint64_t vc_slab_fences VC_HIDDEN;
extern uint64_t vc_slab_fence_ns VC_HIDDEN;
/* open -> stopped (as vc_slab_stop then vc_slab_fence), from a thread running as idx
 * (lock held, rseq modes): every header is stopped by a critical section on idx, with
 * no fence; only when the thread stops running as idx midway does it stop the rest
 * and fence. */
void vc_slab_stop_own(struct vc_rseq_abi *rs, uint32_t idx) VC_HIDDEN;
/* How many vc_slab_stop_own calls needed no fence (tests read it). */
extern uint64_t vc_slab_own_stops VC_HIDDEN;
/* stopped (fenced) -> stopped, empty: each class's objects to spill. */
void vc_slab_take(uint32_t idx, vc_slab_spill_fn spill) VC_HIDDEN;
/* stopped, empty -> zero, with the pages given back to the OS. The one lifecycle
 * step without idx's lock: the caller keeps the region from being opened meanwhile. */
void vc_slab_release(uint32_t idx) VC_HIDDEN;
/* stopped, empty -> zero, the pages kept (to be opened again at once). */
void vc_slab_clear(uint32_t idx) VC_HIDDEN;
/* open -> open: class c's capacity becomes cap, on the id the calling thread runs as
 * (rs its rseq area); objects above the new end go to spill first. Returns false
 * when the thread moved to another id or the header changed under it. */
bool vc_slab_resize(struct vc_rseq_abi *rs, uint32_t idx, unsigned c, unsigned cap,
		    vc_slab_spill_fn spill) VC_HIDDEN;

/* ---- refill and overflow in the rseq modes, on the id the thread runs as ---- */

/* Push objs[0..n) of class c into the cache of the id the thread runs as (batch
 * critical sections, the id re-read after each abort); returns how many went in.
 * Stops early when the stack is full or the thread has no usable id. */
static inline unsigned vc_slab_fill(struct vc_rseq_abi *rs, unsigned c, void *const *objs,
				    unsigned n)
{
#if VC_RSEQ_NO_CRITICAL_SECTIONS
	(void)rs, (void)c, (void)objs, (void)n;
	return 0;
#else
	const int ix = vc_g.rseq_index;
	unsigned done = 0;
	while (done < n) {
		uint32_t idx = vc_rseq_read_index(rs, ix);
		if (idx >= vc_g.nvcpus)
			break;
		char *region = vc_vcpu_region(idx);
		uint32_t pushed = 0;
		int r = vc_rseq_push_batch(ix, rs, idx, vc_vcpu_header(region, c), region,
					   objs + done, n - done, &pushed);
		if (r > 0)
			break;
		if (r == 0)
			done += pushed;
	}
	return done;
#endif
}

/* Take up to n objects off the top of class c's stack on the id the thread runs as,
 * to spill (one batch critical section). Returns false when the thread has no
 * usable id, true otherwise (whether or not the section committed). */
static inline bool vc_slab_spill_top(struct vc_rseq_abi *rs, unsigned c, unsigned n,
				     vc_slab_spill_fn spill)
{
#if VC_RSEQ_NO_CRITICAL_SECTIONS
	(void)rs, (void)c, (void)n, (void)spill;
	return false;
#else
	const int ix = vc_g.rseq_index;
	uint32_t idx = vc_rseq_read_index(rs, ix);
	if (idx >= vc_g.nvcpus)
		return false;
	char *region = vc_vcpu_region(idx);
	void *buf[VC_BATCH_MAX];
	uint32_t got = 0;
	if (n > VC_BATCH_MAX)
		n = VC_BATCH_MAX;
	if (vc_rseq_pop_batch(ix, rs, idx, vc_vcpu_header(region, c), region, buf, n, &got) == 0)
		spill(c, buf, got);
	return true;
#endif
}

/* ---- fallback mode: the same headers under the lock, plain loads and stores ---- */

/* Pop class c's top object into *out; false when empty. */
static inline bool vc_slab_locked_pop(uint32_t idx, unsigned c, void **out)
{
	uint64_t *hw = vc_slab_word(idx, c);
	uint64_t h = *hw;
	uint16_t cur = vc_rseq_stack_current(h), begin = vc_rseq_stack_begin(h);
	if (cur <= begin)
		return false;
	*out = ((void **)vc_vcpu_region(idx))[cur - 1];
	*hw = vc_rseq_stack_moved(h, -1);
	return true;
}

/* Push p on class c's stack; false when full. */
static inline bool vc_slab_locked_push_one(uint32_t idx, unsigned c, void *p)
{
	uint64_t *hw = vc_slab_word(idx, c);
	uint64_t h = *hw;
	uint16_t cur = vc_rseq_stack_current(h);
	if (cur >= vc_rseq_stack_end(h))
		return false;
	((void **)vc_vcpu_region(idx))[cur] = p;
	*hw = vc_rseq_stack_moved(h, 1);
	return true;
}

/* Class c's stack is full (or never opened). */
static inline bool vc_slab_locked_full(uint32_t idx, unsigned c)
{
	uint64_t h = *vc_slab_word(idx, c);
	return vc_rseq_stack_current(h) >= vc_rseq_stack_end(h);
}

/* Push up to n objects of class c from objs; returns how many fit. */
static inline unsigned vc_slab_locked_push(uint32_t idx, unsigned c, void *const *objs,
					   unsigned n)
{
	uint64_t *hw = vc_slab_word(idx, c);
	uint64_t h = *hw;
	void **slots = (void **)vc_vcpu_region(idx);
	uint16_t cur = vc_rseq_stack_current(h), end = vc_rseq_stack_end(h);
	unsigned i = 0;
	while (i < n && cur < end)
		slots[cur++] = objs[i++];
	*hw = vc_rseq_stack_word(cur, vc_rseq_stack_begin(h), end);
	return i;
}

/* Take up to n objects off the top of class c's stack to spill; returns how many. */
static inline unsigned vc_slab_locked_spill_top(uint32_t idx, unsigned c, unsigned n,
						vc_slab_spill_fn spill)
{
	uint64_t *hw = vc_slab_word(idx, c);
	uint64_t h = *hw;
	uint16_t cur = vc_rseq_stack_current(h), begin = vc_rseq_stack_begin(h);
	if (n > (unsigned)(cur - begin))
		n = cur - begin;
	cur = (uint16_t)(cur - n);
	if (n)
		spill(c, &((void **)vc_vcpu_region(idx))[cur], n);
	*hw = vc_rseq_stack_word(cur, begin, vc_rseq_stack_end(h));
	return n;
}

/* Capacity of class c becomes cap (>= its objects held). */
static inline void vc_slab_locked_set_capacity(uint32_t idx, unsigned c, unsigned cap)
{
	uint64_t *hw = vc_slab_word(idx, c);
	uint64_t h = *hw;
	*hw = vc_rseq_stack_word(vc_rseq_stack_current(h), vc_rseq_stack_begin(h),
				 (uint16_t)(vc_rseq_stack_begin(h) + cap));
}

#endif
