/* allocator/vcpu_cache.c - slow paths of the per-vCPU caches: lazy population,
 * refill and overflow, capacity budgeting, drain and reclaim, and the locked
 * fallback mode.
 *
 * Memory: the regions and their header words belong to vcpu_slab.c (layout, states
 * and who moves them: vcpu_slab.h); vc_g.vcpus holds one state per id. Nothing of a
 * region is resident until its id is first used ("populated": the region is open).
 * Draining a vCPU returns its objects to the central layer and its pages to the OS,
 * so cost follows the ids in use.
 *
 * Who writes what: the header words, vcpu_slab.c's operations (vcpu_slab.h); the
 * fields of struct vc_vcpu, the owner of their group (types.h).
 */
#include "vcpu_cache.h"
#include "vcpu_policy.h"

#include <pthread.h>
#include <string.h>

uint64_t vc_cache_bytes_peak;
uint32_t vc_cache_populated_now;
uint32_t vc_cache_populated_peak;
uint64_t vc_cache_reclaims;
uint64_t vc_cache_node_moves;
uint64_t vc_cache_fallback_ops;
uint64_t vc_cache_surplus_drains;

static vc_lock_t reclaim_lock = VC_LOCK_INIT;
/* 1 + the highest id ever populated: the reclaim scan reads no vc_vcpu beyond it
 * (a read of a never-written page of vc_g.vcpus maps the zero page, and the first
 * write after it costs a copy and a TLB flush on every CPU of the process). */
static uint32_t populated_bound;
static uint64_t last_reclaim_ms; /* start of the last scan (written under reclaim_lock) */
/* Ids ever populated: one bit each (nvcpus bits of reserved address space), set
 * under ids_lock before the id's lock is first taken and never cleared. Fork takes
 * and re-initialises the locks of these ids only (vc_cache_lock_all): no other id's
 * lock can be held, and the states of ids never used stay untouched (a fork used
 * to write every possible CPU's state: 224 KiB at 256 possible CPUs, in the parent
 * and in the child). */
static uint64_t *ids_used;
static vc_lock_t ids_lock = VC_LOCK_INIT;

void vc_cache_init(void)
{
	size_t n = vc_g.nvcpus;
	char *strides = vc_os_reserve(n << VC_VCPU_STRIDE_SHIFT);
	vc_g.vcpu_regions = strides ? strides + VC_VCPU_REGION_COLOUR : NULL;
	vc_g.vcpus = vc_os_reserve(vc_page_round(n * sizeof(struct vc_vcpu)));
	ids_used = vc_os_reserve(vc_page_round((n + 63) / 64 * 8));
	VC_ASSERT_ALWAYS(vc_g.vcpu_regions && vc_g.vcpus && ids_used);
	/* A region is 512 KiB in a 2 MiB stride: a huge page would make all of it
	 * resident at the first touch. */
	vc_os_no_huge_pages(strides, n << VC_VCPU_STRIDE_SHIFT);
	__atomic_store_n(&last_reclaim_ms, vc_os_now_ms(), __ATOMIC_RELAXED);
}

static void note_peak(uint32_t idx);
/* A thread whose slow paths saw it change node twice within VC_ROAM_MS is roaming:
 * the region it runs as keeps its objects when it changes node (retagged, not
 * emptied), its frees of other nodes' objects stay there, and its refills take
 * free objects of any node before its node makes a span. Such a thread cannot have
 * local memory anyway; emptying its region into the old node's lists at every move
 * left each node's lists full of what the threads that passed by brought there:
 * memory times the node count (allocator/README.md, NUMA). A thread that stays on
 * its node, or was moved once (numa_local's migration), never roams. It is the
 * thread that is judged, not the id: an id handed between threads of different
 * nodes changes node without any thread moving. */
#define VC_ROAM_MS 1000

struct thread_nodes {
	uint8_t node_plus_1;   /* the node its last slow path saw, plus 1; 0: none */
	uint8_t older;         /* which of changed_ms is the older */
	uint32_t changed_ms[2]; /* vc_os_now_ms() (low 32 bits, never 0) of its last two
				   node changes; 0: not yet */
};
static __thread struct thread_nodes thread_nodes __attribute__((tls_model("initial-exec")));

/* The calling thread runs on `node` (a slow path's view); whether it is roaming.
 * Only in vcpu mode with node tags: a cpu-mode region serves whichever threads run
 * on its CPU, so it never changes node, and other nodes' objects a roaming thread
 * left there would go to threads that stay. */
static bool thread_roaming(unsigned node)
{
	if (!vc_g.numa_cache || vc_g.mode != VCMALLOC_INDEX_VCPU)
		return false;
	struct thread_nodes *t = &thread_nodes;
	uint64_t now = 0;
	if (t->node_plus_1 != node + 1) {
		if (t->node_plus_1 != 0) {
			now = vc_os_now_ms();
			uint32_t ms = (uint32_t)now;
			t->changed_ms[t->older] = ms ? ms : 1;
			t->older ^= 1;
		}
		t->node_plus_1 = (uint8_t)(node + 1);
	}
	uint32_t oldest = t->changed_ms[t->older];
	if (oldest == 0)
		return false;
	if (now == 0)
		now = vc_os_now_ms();
	return (uint32_t)now - oldest < VC_ROAM_MS;
}

/* A batch for a roaming thread: the free objects of its node's lists, else of
 * another node's (those were brought there by threads that passed by), before the
 * node makes a span. */
static unsigned take_free_any_node(unsigned node, unsigned c, uint32_t idx, void **buf)
{
	for (unsigned k = 0; k < vc_g.nnodes; k++) {
		unsigned n = vc_central_remove_free((node + k) % vc_g.nnodes, c, idx, buf,
						    vc_classes[c].batch);
		if (n)
			return n;
	}
	return 0;
}

static void move_to_node(struct vc_rseq_abi *rs, uint32_t idx, unsigned node, bool roam);
static void drain_surplus(uint32_t idx);

/* Populates so far: the clock of last_use (struct vc_vcpu's counters), which orders
 * the ids by their last sign of use without reading a clock. */
static uint64_t use_epoch;

static inline void note_use(struct vc_vcpu *v)
{
	__atomic_store_n(&v->counters.last_use, __atomic_load_n(&use_epoch, __ATOMIC_RELAXED),
			 __ATOMIC_RELAXED);
}

/* Call before taking idx's lock: records idx among the ids ever used. */
static inline void claim_id(uint32_t idx)
{
	uint64_t bit = 1ull << (idx % 64);
	if (VC_LIKELY(__atomic_load_n(&ids_used[idx / 64], __ATOMIC_RELAXED) & bit))
		return;
	vc_lock(&ids_lock);
	__atomic_fetch_or(&ids_used[idx / 64], bit, __ATOMIC_RELAXED);
	vc_unlock(&ids_lock);
}

/* The byte budget a vCPU starts with, and gets back at a drain: the option's, plus
 * VC_BUDGET_ROOM (vcpu_policy.h). */
static uint64_t budget_base(void)
{
	return vc_g.opt.vcpu_cache_bytes + VC_BUDGET_ROOM;
}

/* Lock held, idx not populated: its region opens (headers from zero to "empty,
 * capacity 0") for objects of node `node`. */
static VC_NOINLINE void open_locked(uint32_t idx, unsigned node)
{
	struct vc_vcpu *v = &vc_g.vcpus[idx];
	vc_slab_open(idx, node);
	__atomic_store_n(&v->locked.node, (uint8_t)node, __ATOMIC_RELAXED);
	for (unsigned c = 1; c < VC_NUM_CLASSES; c++)
		__atomic_store_n(&v->counters.misses[c], 0, __ATOMIC_RELAXED);
	vc_policy_reset(&v->locked.cap, budget_base());
	__atomic_store_n(&v->counters.pressure, 0, __ATOMIC_RELAXED);
	__atomic_add_fetch(&use_epoch, 1, __ATOMIC_RELAXED);
	note_use(v);
	__atomic_store_n(&v->populated, 1, __ATOMIC_RELEASE);
	vc_atomic_raise_u32(&populated_bound, idx + 1);
	vc_atomic_raise_u32(&vc_cache_populated_peak,
			    __atomic_add_fetch(&vc_cache_populated_now, 1, __ATOMIC_RELAXED));
}

/* A drained region's pages go back to the OS after its locks are dropped (no
 * release system call is made under an allocator lock): drain_finish marks the
 * region DUE, and release_region, called with no lock held, moves it DUE -> RUNNING
 * under the lock, releases the pages unlocked, and ends it under the lock. The region
 * stays stopped (its stop words, or zero once released) and unpopulated meanwhile:
 * nothing opens it, so the release cannot wipe the headers of an open region. Slow
 * paths that find their id's region not open work with the central lists directly.
 *
 * releases_due: regions marked DUE and not yet taken by a releaser, so that
 * release_due_regions returns at once when there are none. */
static uint32_t releases_due;

static uint8_t release_state(const struct vc_vcpu *v)
{
	return __atomic_load_n(&v->releasing, __ATOMIC_RELAXED);
}

/* No lock held: give idx's region back to the OS if it is DUE. */
static void release_region(uint32_t idx)
{
	struct vc_vcpu *v = &vc_g.vcpus[idx];
	vc_lock(&v->lock);
	if (release_state(v) != VC_RELEASE_DUE) {
		vc_unlock(&v->lock);
		return;
	}
	__atomic_store_n(&v->releasing, VC_RELEASE_RUNNING, __ATOMIC_RELAXED);
	__atomic_sub_fetch(&releases_due, 1, __ATOMIC_RELAXED);
	vc_unlock(&v->lock);
	VC_TEST_HOOK(region_release);
	vc_slab_release(idx);
	vc_lock(&v->lock);
	__atomic_store_n(&v->releasing, VC_RELEASE_NONE, __ATOMIC_RELAXED);
	vc_unlock(&v->lock);
}

/* No lock held: release every DUE region (after a reclaim scan or a drain). */
static void release_due_regions(void)
{
	if (__atomic_load_n(&releases_due, __ATOMIC_RELAXED) == 0)
		return;
	uint32_t bound = __atomic_load_n(&populated_bound, __ATOMIC_ACQUIRE);
	for (uint32_t idx = 0; idx < bound; idx++)
		if (release_state(&vc_g.vcpus[idx]) == VC_RELEASE_DUE)
			release_region(idx);
}

/* Lock held: open idx's region unless it is open or its release is not over (every
 * fallback operation asks). Returns whether the region is open. */
static inline bool populate_locked(uint32_t idx, unsigned node)
{
	struct vc_vcpu *v = &vc_g.vcpus[idx];
	/* Relaxed: the lock orders it against the stores of other lock holders. */
	if (VC_LIKELY(__atomic_load_n(&v->populated, __ATOMIC_RELAXED)))
		return true;
	if (release_state(v) != VC_RELEASE_NONE)
		return false;
	open_locked(idx, node);
	return true;
}

/* No lock held: lock idx, finishing a release its last drain left due, and open its
 * region. True with the lock held and the region open; false with the lock free
 * when another thread is still releasing the region. */
static bool lock_populated(uint32_t idx, unsigned node)
{
	struct vc_vcpu *v = &vc_g.vcpus[idx];
	claim_id(idx);
	if (VC_UNLIKELY(release_state(v) == VC_RELEASE_DUE))
		release_region(idx);
	vc_lock(&v->lock);
	if (VC_LIKELY(populate_locked(idx, node)))
		return true;
	vc_unlock(&v->lock);
	return false;
}

static void populate(uint32_t idx, unsigned node)
{
	if (!lock_populated(idx, node))
		return;
	vc_unlock(&vc_g.vcpus[idx].lock);
	drain_surplus(idx);
	note_peak(idx);
}

/* Pages of the region touched so far: the header page and the pages of every
 * class's slots below its high-water mark (kept in locked.touched as the marks rise:
 * no scan of the classes). */
#define VC_REGION_PAGES (VC_VCPU_REGION / VC_OS_PAGE)
_Static_assert(VC_REGION_PAGES == 64 * 2, "locked.touched has a bit per page of a region");
static unsigned touched_pages(const struct vc_vcpu *v)
{
	/* Read without the vCPU lock (statistics): relaxed, as it is written. */
	uint64_t low = __atomic_load_n(&v->locked.touched[0], __ATOMIC_RELAXED) | 1;
	uint64_t high = __atomic_load_n(&v->locked.touched[1], __ATOMIC_RELAXED);
	return (unsigned)(__builtin_popcountll(low) + __builtin_popcountll(high));
}

/* Bytes of idx's cache: its pages touched and its objects, those of its remote-free
 * buffer included (0 when not populated). */
static uint64_t cache_bytes(uint32_t idx, uint64_t *objects)
{
	const struct vc_vcpu *v = &vc_g.vcpus[idx];
	*objects = 0;
	if (!__atomic_load_n(&v->populated, __ATOMIC_ACQUIRE))
		return 0;
	*objects = __atomic_load_n(&v->locked.remote_bytes, __ATOMIC_RELAXED);
	for (unsigned c = 1; c < VC_NUM_CLASSES; c++)
		*objects += (uint64_t)vc_slab_count(idx, c) * vc_classes[c].size;
	return (uint64_t)touched_pages(v) * VC_OS_PAGE + *objects;
}

void vc_cache_stats(struct vcmalloc_stats *st)
{
	uint64_t total = 0, objects = 0;
	uint32_t bound = __atomic_load_n(&populated_bound, __ATOMIC_ACQUIRE);
	for (uint32_t idx = 0; idx < bound; idx++) {
		uint64_t o;
		total += cache_bytes(idx, &o);
		objects += o;
	}
	if (st) {
		st->vcpu_cache_bytes = total;
		st->vcpu_cache_object_bytes = objects;
	}
	vc_atomic_raise_u64(&vc_cache_bytes_peak, total);
}

/* The peak between statistics calls, sampled on slow paths one id at a time: each
 * id keeps its part of the total as of its last sample (counters.sampled_bytes),
 * a sample of idx replaces its part, and a drain takes it out. The sum is each
 * id's latest sample, so the cost of a sample does not grow with the ids in use;
 * vc_cache_stats raises the peak with the exact figure as well. */
static uint64_t sampled_total;

static void note_peak(uint32_t idx)
{
	uint64_t objects;
	uint64_t now = cache_bytes(idx, &objects);
	uint64_t was = __atomic_exchange_n(&vc_g.vcpus[idx].counters.sampled_bytes, now,
					   __ATOMIC_RELAXED);
	vc_atomic_raise_u64(&vc_cache_bytes_peak,
			    __atomic_add_fetch(&sampled_total, now - was, __ATOMIC_RELAXED));
}

static void forget_peak_sample(struct vc_vcpu *v)
{
	uint64_t was = __atomic_exchange_n(&v->counters.sampled_bytes, 0, __ATOMIC_RELAXED);
	__atomic_sub_fetch(&sampled_total, was, __ATOMIC_RELAXED);
}

/* Bookkeeping of a capacity change; vcpu lock held. */
static void set_capacity(struct vc_vcpu *v, unsigned c, unsigned cap)
{
	vc_policy_set(&v->locked.cap, c, cap);
	if (cap <= v->locked.high_water[c])
		return;
	__atomic_store_n(&v->locked.high_water[c], (uint16_t)cap, __ATOMIC_RELAXED);
	const size_t base = vc_classes[c].slot_base; /* cap > high_water >= 0 */
	for (size_t pg = vc_vcpu_slot_page(base); pg <= vc_vcpu_slot_page(base + cap - 1); pg++) {
		uint64_t *w = &v->locked.touched[pg / 64];
		__atomic_store_n(w, *w | 1ull << (pg % 64), __ATOMIC_RELAXED);
	}
}

/* Change the capacity of class c on the vCPU this thread runs as, idx.
 * Lock of idx held. Returns false when the thread moved or the header changed. */
static bool resize(struct vc_rseq_abi *rs, uint32_t idx, unsigned c, unsigned cap)
{
	if (!vc_slab_resize(rs, idx, c, cap, vc_central_insert))
		return false;
	set_capacity(&vc_g.vcpus[idx], c, cap);
	return true;
}

/* The budgets' growth beyond the starting budget, all vCPUs together (vcpu_policy.h). */
static uint32_t caches_populated(void)
{
	return __atomic_load_n(&vc_cache_populated_now, __ATOMIC_RELAXED);
}
static struct vc_budget_pool budget_pool = {0, vc_stats_live_bytes, caches_populated};

/* On a miss of class c: apply the policy's steps (vcpu_policy.h) until it grows c,
 * has nothing more to do, or a resize fails. Lock of idx held. */
static void adapt_capacity(struct vc_rseq_abi *rs, uint32_t idx, unsigned c)
{
	struct vc_vcpu *v = &vc_g.vcpus[idx];
	for (unsigned steals = 0;; steals++) {
		struct vc_policy_step step =
		    vc_policy_next(&v->locked.cap, &v->counters.pressure, v->counters.misses, c,
				   steals, budget_base(), &budget_pool);
		if (step.cls == 0 || !resize(rs, idx, step.cls, step.capacity) || step.cls == c)
			return;
		vc_policy_note_stolen(&v->locked.cap, step.cls);
	}
}

static void count_slow_event(struct vc_vcpu *v, unsigned c)
{
	note_use(v);
	uint32_t events = vc_id_counter_add(&v->counters.slow_events, 1);
	vc_policy_count_miss(v->counters.misses, c);
	if (vc_config_stats && (events & 1023) == 0)
		note_peak((uint32_t)(v - vc_g.vcpus));
}

/* A refill's objects leave the cache in the order central gave them (objects it
 * carved come in ascending addresses): the stack hands out its last push first, so
 * the batch is pushed back to front. Handed out in descending order, the objects a
 * program allocates one after another were walked backwards when it later went
 * through them in that order, which hardware prefetchers follow less well: python3
 * building and dropping a dict of 500 000 entries (PYTHONMALLOC=malloc) spent 15%
 * more time in its own code than in ascending order. */
static void reverse(void **objs, unsigned n)
{
	for (unsigned i = 0, j = n ? n - 1 : 0; i < j; i++, j--) {
		void *t = objs[i];
		objs[i] = objs[j];
		objs[j] = t;
	}
}

/* Put objects of node `node` just taken from central into this vCPU's cache, so
 * that they pop in the order of objs; what does not fit (the front of objs, as the
 * back is pushed first) goes back to central. */
static void stash(unsigned c, void **objs, unsigned n, unsigned node)
{
	reverse(objs, n);
	if (vc_g.numa_cache) {
		/* One tagged push each: the thread may change node between pushes. */
		while (n > 0 && vc_cache_push(c, objs[0], node)) {
			objs++;
			n--;
		}
	} else if (vc_g.mode != VCMALLOC_INDEX_FALLBACK) {
		unsigned done = vc_slab_fill(vc_fast_area(), c, objs, n);
		objs += done;
		n -= done;
	}
	if (n > 0)
		vc_central_insert(c, objs, n);
}

/* One object from central, or to it, past every vCPU cache, counted as a fallback
 * operation: for a thread with no usable index, and in fallback mode for a shard
 * whose region is being released. lane: as vc_central_remove's. */
static void *uncached_alloc(unsigned c, unsigned lane)
{
	void *p;
	__atomic_fetch_add(&vc_cache_fallback_ops, 1, __ATOMIC_RELAXED);
	return vc_central_remove(vc_current_node(), c, lane, &p, 1) ? p : NULL;
}

static void uncached_free(unsigned c, void *p)
{
	__atomic_fetch_add(&vc_cache_fallback_ops, 1, __ATOMIC_RELAXED);
	vc_central_insert(c, &p, 1);
}

/* Objects a miss of class c moves between the cache and central when the class
 * may keep `cap`: half of cap, at least a batch and at most VC_BATCH_MAX. A refill
 * or a flush of one batch leaves the cache a batch from the end it just met, and a
 * program whose allocations and frees of a class come in wandering runs (a random
 * one of many live blocks replaced, blocks handed to other threads and freed there)
 * meets that end again after about batch * cap operations; from halfway it takes
 * about (cap / 2)^2. Classes of 11 KiB and more have a batch of 2: bench/speed's
 * wide4x on two threads made 232 000 misses with batch moves and 95 000 with
 * these (tests/stress/wander_moves.c). */
static unsigned move_count(unsigned c, unsigned cap)
{
	unsigned half = cap / 2 < VC_BATCH_MAX ? cap / 2 : VC_BATCH_MAX;
	return half > vc_classes[c].batch ? half : vc_classes[c].batch;
}

/* Objects a refill of class c asks central for, when the cache can keep `cap` of
 * them besides the one returned: move_count's, but no more (and at least two, so that
 * a fresh block's neighbour is carved with it). The rest of a batch went straight
 * back to central, carved for nothing: a carve writes each object's tag, the first
 * touch of a page for objects of 4 KiB and more, so a program passing through many
 * large classes once each (a string grown by realloc) faulted in pages it never
 * used. */
static unsigned refill_count(unsigned c, unsigned cap)
{
	unsigned n = cap ? cap + 1 : 2;
	unsigned m = move_count(c, cap);
	return n < m ? n : m;
}

/* ---- fallback mode: the same regions as locked shards ---- */

static uint32_t fallback_shard(void)
{
	int cpu = vc_rseq_current_cpu();
	return (uint32_t)(cpu < 0 ? 0 : cpu) % vc_g.nvcpus;
}

/* Grow class c's capacity by a step within the budget; false when it cannot grow.
 * Lock held. */
static bool fallback_grow(uint32_t idx, unsigned c)
{
	struct vc_vcpu *v = &vc_g.vcpus[idx];
	unsigned cap = vc_policy_locked_grow(&v->locked.cap, c);
	if (cap == v->locked.cap.capacity[c])
		return false;
	set_capacity(v, c, cap);
	vc_slab_locked_set_capacity(idx, c, cap);
	return true;
}

static void *fallback_alloc(unsigned c)
{
	uint32_t idx = fallback_shard();
	struct vc_vcpu *v = &vc_g.vcpus[idx];
	void *p;
	if (!lock_populated(idx, vc_current_node()))
		return uncached_alloc(c, idx); /* the shard's region is being released */
	bool missed = false;
	if (!vc_slab_locked_pop(idx, c, &p)) {
		missed = true;
		count_slow_event(v, c);
		fallback_grow(idx, c);
		void *buf[VC_BATCH_MAX];
		unsigned n = vc_central_remove(v->locked.node, c, idx, buf,
					       refill_count(c, v->locked.cap.capacity[c]));
		if (n == 0) {
			vc_unlock(&v->lock);
			return NULL;
		}
		p = buf[0];
		reverse(buf + 1, n - 1); /* popped in central's order, as stash does */
		unsigned kept = 1 + vc_slab_locked_push(idx, c, buf + 1, n - 1);
		if (kept < n)
			vc_central_insert(c, buf + kept, n - kept);
	}
	vc_unlock(&v->lock);
	__atomic_fetch_add(&vc_cache_fallback_ops, 1, __ATOMIC_RELAXED);
	if (missed)
		vc_maintain();
	return p;
}

/* A fallback spill's objects go to central while they are still below the stack's
 * `current` (vc_slab_locked_spill_top writes the header after): the lock makes that
 * invisible, except to a fork child of an interrupted single-threaded process
 * (repair_in_child). */
static void fallback_spill(unsigned c, void *const *objs, unsigned n)
{
	vc_central_insert(c, objs, n);
	VC_TEST_HOOK(fallback_spill);
}

static void fallback_free(unsigned c, void *p, unsigned node)
{
	uint32_t idx = fallback_shard();
	struct vc_vcpu *v = &vc_g.vcpus[idx];
	if (!lock_populated(idx, vc_current_node())) {
		uncached_free(c, p); /* the shard's region is being released */
		return;
	}
	if (v->locked.node != node) {
		/* Another node's object goes home. */
		vc_unlock(&v->lock);
		vc_central_insert(c, &p, 1);
		return;
	}
	bool missed = vc_slab_locked_full(idx, c);
	if (missed) {
		count_slow_event(v, c);
		/* Full: grow, or hand the top objects to central (move_count). */
		if (!fallback_grow(idx, c))
			vc_slab_locked_spill_top(idx, c, move_count(c, v->locked.cap.capacity[c]),
						 fallback_spill);
	}
	bool kept = vc_slab_locked_push_one(idx, c, p);
	vc_unlock(&v->lock);
	if (!kept)
		vc_central_insert(c, &p, 1);
	__atomic_fetch_add(&vc_cache_fallback_ops, 1, __ATOMIC_RELAXED);
	if (missed)
		vc_maintain();
}

/* ---- rseq modes ---- */

void *vc_cache_alloc_slow(unsigned c)
{
	vc_ensure_init();
	vc_thread_note();
	if (vc_g.mode == VCMALLOC_INDEX_FALLBACK)
		return fallback_alloc(c);
	struct vc_rseq_abi *rs = vc_rseq_area();
	uint32_t idx = rs ? vc_rseq_read_index(rs, vc_g.rseq_index) : UINT32_MAX;
	if (idx >= vc_g.nvcpus)
		return uncached_alloc(c, 0); /* no usable index in this thread */
	void *buf[VC_BATCH_MAX];
	/* The index may already be populated by a thread that ran as it before. */
	void *p;
	if (vc_cache_pop(c, &p))
		return p;
	unsigned node = vc_current_node();
	const bool roam = thread_roaming(node);
	struct vc_vcpu *v = &vc_g.vcpus[idx];
	if (!__atomic_load_n(&v->populated, __ATOMIC_ACQUIRE)) {
		populate(idx, node);
	} else if (vc_g.numa_cache && __atomic_load_n(&v->locked.node, __ATOMIC_RELAXED) != node) {
		/* This vCPU id now runs on another node: flush its cache (objects go
		 * home to their node) and start again with local objects; for a roaming
		 * thread it keeps its objects, which may serve this miss. */
		move_to_node(rs, idx, node, roam);
		if (vc_cache_pop(c, &p))
			return p;
	}
	count_slow_event(v, c);
	/* Without the lock the capacity is unknown: a whole batch. */
	unsigned want = vc_classes[c].batch;
	if (vc_lock_try(&v->lock)) {
		adapt_capacity(rs, idx, c);
		want = refill_count(c, v->locked.cap.capacity[c]);
		vc_unlock(&v->lock);
	}
	unsigned n = 0;
	if (roam)
		n = take_free_any_node(node, c, idx, buf);
	if (n == 0)
		n = vc_central_remove(node, c, idx, buf, want);
	if (n == 0)
		return NULL;
	if (n > 1)
		stash(c, buf + 1, n - 1, node);
	vc_maintain();
	return buf[0];
}

void vc_cache_free_slow(unsigned c, void *p, unsigned node)
{
	vc_ensure_init();
	if (vc_g.mode == VCMALLOC_INDEX_FALLBACK) {
		fallback_free(c, p, node);
		return;
	}
	struct vc_rseq_abi *rs = vc_rseq_area();
	uint32_t idx = rs ? vc_rseq_read_index(rs, vc_g.rseq_index) : UINT32_MAX;
	if (idx >= vc_g.nvcpus) {
		uncached_free(c, p); /* no usable index in this thread */
		return;
	}
	if (vc_cache_push(c, p, node))
		return;
	struct vc_vcpu *v = &vc_g.vcpus[idx];
	if (!__atomic_load_n(&v->populated, __ATOMIC_ACQUIRE)) {
		populate(idx, vc_current_node());
	}
	/* Any node's object, freed by a roaming thread. */
	bool any_node = false;
	if (vc_g.numa_cache && __atomic_load_n(&v->locked.node, __ATOMIC_RELAXED) != node) {
		if (!thread_roaming(vc_current_node())) {
			/* A remote object goes home to its node's central list. */
			vc_central_insert(c, &p, 1);
			return;
		}
		any_node = true;
		if (vc_cache_push_any_node(c, p))
			return;
	}
	count_slow_event(v, c);
	/* Without the lock the capacity is unknown: a batch. */
	unsigned spill = vc_classes[c].batch;
	if (vc_lock_try(&v->lock)) {
		adapt_capacity(rs, idx, c);
		spill = move_count(c, v->locked.cap.capacity[c]);
		vc_unlock(&v->lock);
	}
	if (any_node ? vc_cache_push_any_node(c, p) : vc_cache_push(c, p, node))
		return;
	/* Still full: move the top objects to central, then push. */
	for (int tries = 0; tries < 3; tries++) {
		if (!vc_slab_spill_top(rs, c, spill, vc_central_insert))
			break;
		if (any_node ? vc_cache_push_any_node(c, p) : vc_cache_push(c, p, node)) {
			vc_maintain();
			return;
		}
	}
	vc_central_insert(c, &p, 1);
	vc_maintain();
}

/* ---- drain and reclaim ---- */

/* Draining stops a vCPU's stacks, waits out critical sections in flight with the
 * rseq fence, moves the objects to central and gives the region's pages back. The
 * reclaim tick drains idle vCPUs in groups sharing one fence (a fence interrupts
 * every CPU running the process: one per group, not one per vCPU). */
#define VC_DRAIN_GROUP 16

/* Lock idx if it is populated: false (lock released) when it is not. */
static bool lock_if_populated(uint32_t idx)
{
	struct vc_vcpu *v = &vc_g.vcpus[idx];
	vc_lock(&v->lock);
	if (!__atomic_load_n(&v->populated, __ATOMIC_ACQUIRE)) {
		vc_unlock(&v->lock);
		return false;
	}
	return true;
}

/* Phase 1: lock idx and stop it. Returns false (lock released) when idx is not
 * populated; otherwise the lock stays held. */
static bool drain_stop(uint32_t idx)
{
	if (!lock_if_populated(idx))
		return false;
	vc_slab_stop(idx);
	return true;
}

/* Phase 2, after the fence: the objects go home (each to its node's central list),
 * the headers stay stopped, the capacities are zero, the budget is the starting one
 * (budget_base). */
static void drain_move_objects(uint32_t idx)
{
	struct vc_vcpu *v = &vc_g.vcpus[idx];
	vc_remote_flush_locked(idx);
	vc_slab_take(idx, vc_central_insert);
	for (unsigned c = 1; c < VC_NUM_CLASSES; c++) {
		v->locked.cap.capacity[c] = 0;
		__atomic_store_n(&v->counters.misses[c], 0, __ATOMIC_RELAXED);
	}
	v->locked.cap.bytes = 0;
	vc_policy_release_budget(&v->locked.cap, budget_base(), &budget_pool);
}

/* Phase 2 of a reclaim: objects out, the region's release due (release_region does
 * it once every lock is dropped), unlocks. */
static void drain_finish(uint32_t idx)
{
	struct vc_vcpu *v = &vc_g.vcpus[idx];
	drain_move_objects(idx);
	VC_TEST_HOOK(region_drain);
	for (unsigned c = 1; c < VC_NUM_CLASSES; c++)
		__atomic_store_n(&v->locked.high_water[c], 0, __ATOMIC_RELAXED);
	__atomic_store_n(&v->locked.touched[0], 0, __ATOMIC_RELAXED);
	__atomic_store_n(&v->locked.touched[1], 0, __ATOMIC_RELAXED);
	__atomic_store_n(&v->releasing, VC_RELEASE_DUE, __ATOMIC_RELAXED);
	__atomic_add_fetch(&releases_due, 1, __ATOMIC_RELAXED);
	forget_peak_sample(v);
	__atomic_store_n(&v->populated, 0, __ATOMIC_RELEASE);
	__atomic_sub_fetch(&vc_cache_populated_now, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&vc_cache_reclaims, 1, __ATOMIC_RELAXED);
	v->scan.idle_scans = 0; /* drains run under the reclaim lock */
	vc_unlock(&v->lock);
}

/* Another index's cache can be stopped: in fallback mode its lock is enough, in the
 * rseq modes only with the fence. */
static bool can_stop_others(void)
{
	return vc_g.mode == VCMALLOC_INDEX_FALLBACK || vc_rseq_has_fence();
}

/* Drain the vCPUs of idx[0..n) (n <= VC_DRAIN_GROUP, increasing: the locks are
 * taken in that order) with one fence. Returns how many were populated and drained. */
static int drain_group(const uint32_t *idx, unsigned n)
{
	if (!can_stop_others())
		return 0; /* cannot stop critical sections of another CPU safely */
	uint32_t stopped[VC_DRAIN_GROUP];
	unsigned k = 0;
	for (unsigned i = 0; i < n; i++)
		if (drain_stop(idx[i]))
			stopped[k++] = idx[i];
	if (k == 0)
		return 0;
	vc_slab_fence(stopped, k);
	for (unsigned i = 0; i < k; i++)
		drain_finish(stopped[i]);
	return (int)k;
}

/* drain_group of the caller's own index (rseq modes): while the thread still runs as
 * idx, its stacks stop without a fence (vc_slab_stop_own). */
static int drain_own(struct vc_rseq_abi *rs, uint32_t idx)
{
	if (!can_stop_others())
		return 0; /* a move to another index midway would need the fence */
	if (!lock_if_populated(idx))
		return 0;
	vc_slab_stop_own(rs, idx);
	drain_finish(idx);
	return 1;
}

/* mm_cid is unique among the threads running and kept below their number, but
 * kernels before 6.19 take a CPU's id back from the process only lazily: a thread
 * that moves to another CPU often gets an id of its own there while its old one
 * stays with the CPU it left. bench/footprint's roam (4 threads walking over the 16
 * vCPUs of a guest on 6.12) populated 15 ids, 13 MiB of caches in 20 MiB of peak
 * RSS. The allocator keeps the bound itself: when a populate makes the populated ids
 * outnumber the live threads, the id least recently seen in use (last_use) other
 * than the new one is drained. A wrong guess costs the thread still running as it a
 * refill. vcpu mode only: in cpu mode an id per CPU visited is what the mode is
 * (and what bench/run-footprint compares with). And only with two threads or more
 * (a single thread holds at most a stale id or two; the reclaim tick takes those): a
 * single-threaded process forks without the allocator's locks (init.c), from a
 * signal handler too, and its children should inherit a drain half done as rarely
 * as before. With single-threaded processes included, tests/races fork_signal-vcpu
 * failed once in a full suite run (every child of one run found a region that was
 * not open with non-zero headers at its first populate); not reproduced since. */
static void drain_surplus(uint32_t idx)
{
	if (vc_g.mode != VCMALLOC_INDEX_VCPU)
		return;
	uint32_t threads = vc_live_threads();
	if (threads < 2 || __atomic_load_n(&vc_cache_populated_now, __ATOMIC_RELAXED) <= threads)
		return;
	/* Like the tick, a slow path never waits for the reclaim lock: its holder is
	 * draining already, and the next populate looks again. */
	if (!vc_lock_try(&reclaim_lock))
		return;
	while (__atomic_load_n(&vc_cache_populated_now, __ATOMIC_RELAXED) > threads) {
		uint32_t victim = UINT32_MAX;
		uint64_t oldest = UINT64_MAX;
		uint32_t bound = __atomic_load_n(&populated_bound, __ATOMIC_ACQUIRE);
		for (uint32_t i = 0; i < bound; i++) {
			const struct vc_vcpu *v = &vc_g.vcpus[i];
			if (i == idx || !__atomic_load_n(&v->populated, __ATOMIC_ACQUIRE))
				continue;
			uint64_t used = __atomic_load_n(&v->counters.last_use, __ATOMIC_RELAXED);
			if (used < oldest) {
				oldest = used;
				victim = i;
			}
		}
		if (victim == UINT32_MAX || !drain_group(&victim, 1))
			break;
		__atomic_add_fetch(&vc_cache_surplus_drains, 1, __ATOMIC_RELAXED);
	}
	vc_unlock(&reclaim_lock);
	release_due_regions();
}

/* idx's id now runs on `node`, not on the node its cache holds objects of: empty
 * the cache (the objects go home) and reopen it for `node`; for a roaming thread
 * (thread_roaming), only retag it. Like a drain (stop, fence, move) but the
 * region's pages stay: the id is in use, and releasing them would only make the
 * next operations fault them back in (each release and each first write after it
 * flushes the TLB of every CPU the process ran on). The slot pages touched so far
 * stay resident and stay counted (high_water is kept). */
static void move_to_node(struct vc_rseq_abi *rs, uint32_t idx, unsigned node, bool roam)
{
	if (!roam && !can_stop_others())
		return; /* cannot stop the sections of another CPU: the cache stays as is */
	struct vc_vcpu *v = &vc_g.vcpus[idx];
	claim_id(idx);
	vc_lock(&v->lock);
	if (!__atomic_load_n(&v->populated, __ATOMIC_ACQUIRE) || v->locked.node == node) {
		/* Drained by a reclaim, or moved by the thread that ran as idx before. */
		populate_locked(idx, node);
		vc_unlock(&v->lock);
		note_peak(idx);
		return;
	}
	if (roam) {
		vc_slab_retag(idx, node);
		__atomic_store_n(&v->locked.node, (uint8_t)node, __ATOMIC_RELAXED);
		__atomic_add_fetch(&vc_cache_node_moves, 1, __ATOMIC_RELAXED);
		vc_unlock(&v->lock);
		return;
	}
	vc_slab_stop_own(rs, idx); /* the thread runs as idx */
	drain_move_objects(idx);
	vc_slab_clear(idx);
	__atomic_store_n(&v->populated, 0, __ATOMIC_RELEASE);
	__atomic_sub_fetch(&vc_cache_populated_now, 1, __ATOMIC_RELAXED);
	populate_locked(idx, node);
	__atomic_add_fetch(&vc_cache_node_moves, 1, __ATOMIC_RELAXED);
	vc_unlock(&v->lock);
	note_peak(idx);
}

/* Ids to drain, collected in increasing order and drained VC_DRAIN_GROUP at a time
 * (one fence per group). */
struct drain_batch {
	uint32_t ids[VC_DRAIN_GROUP];
	unsigned n;
	int drained;
};

static void drain_batch_add(struct drain_batch *b, uint32_t idx)
{
	b->ids[b->n++] = idx;
	if (b->n == VC_DRAIN_GROUP) {
		b->drained += drain_group(b->ids, b->n);
		b->n = 0;
	}
}

/* The rest drained; returns how many were drained in all. */
static int drain_batch_end(struct drain_batch *b)
{
	if (b->n)
		b->drained += drain_group(b->ids, b->n);
	b->n = 0;
	return b->drained;
}

static uint64_t header_sum(uint32_t idx)
{
	uint64_t s = 0;
	for (unsigned c = 1; c < VC_NUM_CLASSES; c++)
		s = s * 31 + __atomic_load_n(vc_slab_word(idx, c), __ATOMIC_RELAXED);
	return s;
}

/* Caches whose budgets grew for data the program no longer holds: when the pool's
 * extra is more than twice its bound (the live bytes, or twice them with one cache
 * populated: vc_policy_pool_bound), every populated vCPU
 * whose budget grew and that the scan did not drain already is drained, which gives
 * its objects to the central lists (where whole spans can go back to the page heap
 * and to the OS) and its growth back to the pool. A vCPU in use refills from the
 * starting budget. Twice: between two bursts a program holds less than at their
 * peak, and its caches should not be emptied at every tick for that. A program that
 * allocated 100 MiB on 4 threads, then kept 1 MiB and went on with a light load
 * still cached 14 MiB in its two vCPUs three seconds later. Returns how many were
 * drained. reclaim_lock held. */
static int drain_oversized(void)
{
	uint64_t extra = __atomic_load_n(&budget_pool.extra, __ATOMIC_RELAXED);
	if (extra == 0 || extra / 2 <= vc_policy_pool_bound(&budget_pool))
		return 0;
	struct drain_batch b = {.n = 0, .drained = 0};
	uint32_t bound = __atomic_load_n(&populated_bound, __ATOMIC_ACQUIRE);
	for (uint32_t idx = 0; idx < bound; idx++) {
		const struct vc_vcpu *v = &vc_g.vcpus[idx];
		/* The budget is read without the lock: a stale value costs a drain or
		 * saves one, and drain_stop looks again at whether idx is populated. */
		if (__atomic_load_n(&v->populated, __ATOMIC_ACQUIRE) &&
		    __atomic_load_n(&v->locked.cap.budget, __ATOMIC_RELAXED) > budget_base())
			drain_batch_add(&b, idx);
	}
	return drain_batch_end(&b);
}

/* One reclaim scan; reclaim_lock held. */
static int reclaim_scan(bool force)
{
	__atomic_store_n(&last_reclaim_ms, vc_os_now_ms(), __ATOMIC_RELAXED);
	VC_TEST_HOOK(tick_scan);
	struct drain_batch b = {.n = 0, .drained = 0};
	uint32_t bound = __atomic_load_n(&populated_bound, __ATOMIC_ACQUIRE);
	for (uint32_t idx = 0; idx < bound; idx++) {
		struct vc_vcpu *v = &vc_g.vcpus[idx];
		if (!__atomic_load_n(&v->populated, __ATOMIC_ACQUIRE))
			continue;
		uint64_t sum = header_sum(idx);
		uint32_t events = __atomic_load_n(&v->counters.slow_events, __ATOMIC_RELAXED);
		if (sum == v->scan.header_sum && events == v->scan.seen_events) {
			v->scan.idle_scans++;
		} else {
			v->scan.idle_scans = 0;
			note_use(v);
		}
		v->scan.header_sum = sum;
		v->scan.seen_events = events;
		__atomic_store_n(&v->counters.pressure, 0, __ATOMIC_RELAXED);
		if (force || v->scan.idle_scans >= 2)
			drain_batch_add(&b, idx);
	}
	return drain_batch_end(&b) + drain_oversized();
}

int vc_cache_reclaim(bool force)
{
	vc_ensure_init();
	vc_lock(&reclaim_lock);
	int drained = reclaim_scan(force);
	vc_unlock(&reclaim_lock);
	release_due_regions();
	return drained;
}

int vc_cache_drain_current(void)
{
	vc_ensure_init();
	uint32_t idx;
	if (vc_g.mode == VCMALLOC_INDEX_FALLBACK) {
		idx = fallback_shard();
	} else {
		struct vc_rseq_abi *rs = vc_rseq_area();
		idx = rs ? vc_rseq_read_index(rs, vc_g.rseq_index) : UINT32_MAX;
	}
	if (idx >= vc_g.nvcpus)
		return 0; /* no id in this thread: it uses the central lists directly */
	/* The thread may run as another id by now: that id's cache is drained like
	 * any other's, safely against its critical sections (drain_own falls back to
	 * the fence). */
	vc_lock(&reclaim_lock);
	int drained = vc_g.mode == VCMALLOC_INDEX_FALLBACK ? drain_group(&idx, 1)
							   : drain_own(vc_rseq_area(), idx);
	vc_unlock(&reclaim_lock);
	release_due_regions();
	return drained;
}

/* Half a reclaim period has passed since the last scan began. */
static bool tick_due(uint64_t now)
{
	return vc_g.opt.reclaim_ms != 0 &&
	       now - __atomic_load_n(&last_reclaim_ms, __ATOMIC_RELAXED) >= vc_g.opt.reclaim_ms / 2;
}

/* The periodic tick (slow paths and thread exit). It never waits: when the lock is
 * busy, the scan holding it is this period's. And it claims the period under the
 * lock, reading the clock again: a thread that found the tick due before another
 * one scanned finds it not due any more, so a vCPU is drained only after two whole
 * idle half-periods, never after two scans back to back. */
bool vc_cache_tick(void)
{
	if (!tick_due(vc_os_now_ms()))
		return false;
	VC_TEST_HOOK(tick_due);
	if (!vc_lock_try(&reclaim_lock))
		return false;
	bool scanned = tick_due(vc_os_now_ms());
	if (scanned)
		reclaim_scan(false);
	vc_unlock(&reclaim_lock);
	release_due_regions();
	return scanned;
}

/* The first id ever used (claim_id) at or above `from`, or vc_g.nvcpus: fork's
 * walks visit those ids only, so that the states of the other possible CPUs are
 * never touched. */
static uint32_t next_used_id(uint32_t from)
{
	for (uint32_t w = from / 64; w < (vc_g.nvcpus + 63) / 64; w++) {
		uint64_t bits = ids_used[w];
		if (w == from / 64)
			bits &= ~0ull << (from % 64);
		if (bits)
			return w * 64 + (uint32_t)__builtin_ctzll(bits);
	}
	return vc_g.nvcpus;
}

/* Fork: the reclaim lock, ids_lock (no id can be claimed until the fork is over)
 * and the lock of every id ever used, in increasing order. Every other id's lock is
 * free: it is only ever taken after claim_id. */
void vc_cache_lock_all(void)
{
	vc_lock(&reclaim_lock);
	vc_lock(&ids_lock);
	for (uint32_t idx = next_used_id(0); idx < vc_g.nvcpus; idx = next_used_id(idx + 1))
		vc_lock(&vc_g.vcpus[idx].lock);
}

/* Fork child, before its locks are re-initialised: the states other threads left
 * half changed, and the counts derived from them, made whole again. The child's
 * only thread is the one that forked.
 *   - A release another thread had begun (RUNNING) is the child's to do again.
 *   - A single-threaded process forks without taking the locks (init.c), possibly
 *     from a signal handler that interrupted one of our operations on its own
 *     stack, and the child may allocate before that handler returns. A per-vCPU
 *     lock still held (`interrupted`) was held by that operation: an open, a
 *     drain, a resize or a fallback operation half done. Such a region is dropped:
 *     not populated, its release due, so that the child's first use of the id
 *     releases it (headers to zero, what vc_slab_open expects of a region that is
 *     not open) and opens it whole. The objects it cached are the child's loss,
 *     never handed out twice: a drain stopped the headers before moving any.
 *   - The populated and due counts are counted again: an open or a drain updates
 *     them one store apart from the states.
 * The central lists and page heaps have no such repair: an operation interrupted
 * inside one of them leaves it to the code that resumes when the handler returns. */
static void repair_in_child(bool interrupted)
{
	uint32_t populated = 0, due = 0, bound = 0;
	for (uint32_t idx = next_used_id(0); idx < vc_g.nvcpus; idx = next_used_id(idx + 1)) {
		struct vc_vcpu *v = &vc_g.vcpus[idx];
		if (release_state(v) == VC_RELEASE_RUNNING)
			v->releasing = VC_RELEASE_DUE;
		if (interrupted && __atomic_load_n(&v->lock.state, __ATOMIC_RELAXED)) {
			v->populated = 0;
			if (release_state(v) == VC_RELEASE_NONE)
				v->releasing = VC_RELEASE_DUE;
		}
		populated += v->populated;
		due += release_state(v) == VC_RELEASE_DUE;
		bound = v->populated ? idx + 1 : bound;
	}
	vc_cache_populated_now = populated;
	releases_due = due;
	vc_atomic_raise_u32(&populated_bound, bound);
}

/* After fork: unlock what vc_cache_lock_all took (locks_taken: the prepare handler
 * took them, the process having other threads). The child, whose only thread is the
 * one that forked, repairs what was half done and re-initialises the same locks
 * instead (when the fork took none, any of them may have been held by the code a
 * signal handler interrupted). */
void vc_cache_unlock_all(bool child, bool locks_taken)
{
	void (*release)(vc_lock_t *) = child ? vc_lock_init : vc_unlock;
	if (child)
		repair_in_child(!locks_taken);
	for (uint32_t idx = next_used_id(0); idx < vc_g.nvcpus; idx = next_used_id(idx + 1))
		release(&vc_g.vcpus[idx].lock);
	release(&ids_lock);
	release(&reclaim_lock);
}
