/* allocator/vcpu_slab.c - the lifecycle of a per-vCPU region: open, resize, stop,
 * fence, take, release, clear (the states and who moves them: vcpu_slab.h). Knows
 * the layout and the stack word; knows nothing of capacity policy, budgets or
 * where spilled objects go.
 */
#include "vcpu_slab.h"

void vc_slab_open(uint32_t idx, unsigned node)
{
	char *region = vc_vcpu_region(idx);
	/* A region that is not open is all zero: never touched, released after its
	 * fence, or cleared. A non-zero header here is a critical section that
	 * committed into a drained region (see VC_RSEQ_ASM_LOAD_HEADER in
	 * rseq/arch/x86_64.h). */
	for (unsigned c = 1; c < VC_NUM_CLASSES; c++)
		VC_ASSERT(__atomic_load_n(vc_slab_word(idx, c), __ATOMIC_RELAXED) == 0);
	__atomic_store_n(vc_vcpu_node_tag(region), node, __ATOMIC_RELAXED);
	for (unsigned c = 1; c < VC_NUM_CLASSES; c++) {
		uint16_t b = (uint16_t)vc_classes[c].slot_base;
		__atomic_store_n(vc_slab_word(idx, c), vc_rseq_stack_word(b, b, b),
				 __ATOMIC_RELEASE);
		if (c == VC_NUM_CLASSES / 2)
			VC_TEST_HOOK(region_open);
	}
}

void vc_slab_retag(uint32_t idx, unsigned node)
{
	/* The sections read the tag inside the critical section. One of the thread
	 * that ran as idx before, which read the old tag and commits after this store,
	 * leaves an object of the old node: a roaming region may hold those anyway. */
	__atomic_store_n(vc_vcpu_node_tag(vc_vcpu_region(idx)), node, __ATOMIC_RELAXED);
}

bool vc_slab_stop(uint32_t idx)
{
	/* No resize can be in flight: resizes hold this vCPU's lock. */
	bool stopped_now = false;
	for (unsigned c = 1; c < VC_NUM_CLASSES; c++)
		stopped_now |= vc_rseq_stack_stop(vc_slab_word(idx, c));
	return stopped_now;
}

uint64_t vc_slab_fences;
uint64_t vc_slab_fence_ns;

/* A single-object commit landing between the stop and the fence makes its header
 * live again (rseq.h): stop those again and fence again, until a fence passes with
 * every header still stopped. */
void vc_slab_fence(const uint32_t *ids, unsigned n)
{
	if (vc_g.mode == VCMALLOC_INDEX_FALLBACK)
		return;
	for (;;) {
		uint64_t start = vc_os_now_ns();
		vc_rseq_fence();
		__atomic_add_fetch(&vc_slab_fences, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&vc_slab_fence_ns, vc_os_now_ns() - start, __ATOMIC_RELAXED);
		bool again = false;
		for (unsigned i = 0; i < n; i++)
			again |= vc_slab_stop(ids[i]);
		if (!again)
			return;
	}
}

/* While a critical section on idx commits, no other thread runs as idx (mm_cid and
 * cpu_id are unique among running threads), and a section that another thread began
 * as idx before losing the index was preempted, so it aborts when it resumes: once
 * the stop word is committed this way, no section that saw the live header can
 * commit, and none can start. This is the fence's guarantee without the fence (a
 * membarrier interrupts every CPU running the process; in a 64-vCPU emulated guest
 * one takes a large fraction of a second). Returns false when the thread stopped
 * running as idx first. */
static bool stop_from_own_sections(struct vc_rseq_abi *rs, uint32_t idx)
{
#if VC_RSEQ_NO_CRITICAL_SECTIONS
	(void)rs, (void)idx;
	return false;
#else
	const int ix = vc_g.rseq_index;
	for (unsigned c = 1; c < VC_NUM_CLASSES; c++) {
		uint64_t *hw = vc_slab_word(idx, c);
		for (;;) {
			uint64_t h = __atomic_load_n(hw, __ATOMIC_ACQUIRE);
			if (vc_rseq_stack_is_stopped(h))
				break; /* stopped already: nothing live can commit */
			int r = vc_rseq_cmpeq_store(ix, rs, idx, hw, h, vc_rseq_stack_stop_word(h));
			if (r == 0)
				break;
			/* r > 0: a section changed the header since the load; r < 0:
			 * aborted (preempted, or the thread runs as another index). */
			if (r < 0 && vc_rseq_read_index(rs, ix) != idx)
				return false;
		}
	}
	return true;
#endif
}

uint64_t vc_slab_own_stops;

void vc_slab_stop_own(struct vc_rseq_abi *rs, uint32_t idx)
{
	if (stop_from_own_sections(rs, idx)) {
		__atomic_add_fetch(&vc_slab_own_stops, 1, __ATOMIC_RELAXED);
		return;
	}
	/* Moved to another index midway: the stops so far hold; stop the rest and
	 * fence as for any other index. */
	vc_slab_stop(idx);
	vc_slab_fence(&idx, 1);
}

/* After the fence, the low 16 bits of each stopped word are the final `current`,
 * and a class's slots begin at its slot_base. */
void vc_slab_take(uint32_t idx, vc_slab_spill_fn spill)
{
	void **slots = (void **)vc_vcpu_region(idx);
	for (unsigned c = 1; c < VC_NUM_CLASSES; c++) {
		uint64_t h = __atomic_load_n(vc_slab_word(idx, c), __ATOMIC_ACQUIRE);
		VC_ASSERT_ALWAYS(vc_rseq_stack_is_stopped(h));
		uint32_t begin = vc_classes[c].slot_base, current = vc_rseq_stack_current(h);
		VC_ASSERT(current >= begin && current <= begin + vc_classes[c].max_slots);
		if (current > begin)
			spill(c, &slots[begin], current - begin);
	}
}

void vc_slab_release(uint32_t idx)
{
	/* Its pages: from the stride's start, past the region's end (the colour). */
	vc_os_release(vc_vcpu_region(idx) - VC_VCPU_REGION_COLOUR, VC_VCPU_REGION + VC_OS_PAGE);
}

/* Stopped -> zero -> open: every section reads its header in one load, so it sees
 * one of the three, and only the last lets it in. */
void vc_slab_clear(uint32_t idx)
{
	for (unsigned c = 1; c < VC_NUM_CLASSES; c++)
		__atomic_store_n(vc_slab_word(idx, c), 0, __ATOMIC_RELEASE);
}

bool vc_slab_resize(struct vc_rseq_abi *rs, uint32_t idx, unsigned c, unsigned cap,
		    vc_slab_spill_fn spill)
{
#if VC_RSEQ_NO_CRITICAL_SECTIONS
	/* Never reached: without critical sections only fallback mode runs. */
	(void)rs, (void)idx, (void)c, (void)cap, (void)spill;
	return false;
#else
	const int ix = vc_g.rseq_index;
	uint64_t *hw = vc_slab_word(idx, c);
	char *region = vc_vcpu_region(idx);
	struct vc_rseq_stack *hdr = vc_vcpu_header(region, c);
	for (int tries = 0; tries < 4; tries++) {
		uint64_t h = __atomic_load_n(hw, __ATOMIC_ACQUIRE);
		if (h == 0)
			return false;
		uint16_t b = vc_rseq_stack_begin(h), cur = vc_rseq_stack_current(h);
		uint16_t end = (uint16_t)(b + cap);
		if (cur > end) {
			/* Shrinking below the objects held: take the excess out first. */
			void *buf[VC_BATCH_MAX];
			uint32_t want = cur - end, got = 0;
			if (want > VC_BATCH_MAX)
				want = VC_BATCH_MAX;
			int r = vc_rseq_pop_batch(ix, rs, idx, hdr, region, buf, want, &got);
			if (r < 0)
				return false;
			if (r == 0)
				spill(c, buf, got);
			continue;
		}
		int r = vc_rseq_cmpeq_store(ix, rs, idx, hw, h, vc_rseq_stack_word(cur, b, end));
		if (r == 0)
			return true;
		if (r < 0)
			return false;
	}
	return false;
#endif
}
