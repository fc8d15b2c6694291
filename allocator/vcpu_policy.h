/* allocator/vcpu_policy.h - the capacity policy of the per-vCPU caches: how much of
 * each class a vCPU may cache, as pure functions over one vCPU's counters and the
 * size-class table (vcpu_policy.c). No locks, no rseq, no memory: vcpu_cache.c
 * applies the decisions to a region (vcpu_slab.h) under the vCPU's lock, and
 * tests/unit/policy_unit.c checks them alone.
 *
 * The rules:
 *   - a class starts with capacity 0 and grows by a step (grow_step: about 16 KiB of
 *     objects, at most a batch) on each miss, up to the class's max_slots, while the
 *     vCPU's byte budget allows;
 *   - past the budget, a miss takes a step from the class that missed least among
 *     the next VC_STEAL_WINDOW classes holding capacity (a rotating window: O(1) per
 *     miss), if that class missed less than the one missing now; at most
 *     VC_STEAL_MAX steals per miss;
 *   - thrashing raises the budget (note_pressure): see VC_BUDGET_PRESSURE; what the
 *     budgets of all vCPUs exceed their option value by together never grows past
 *     the program's live bytes (struct vc_budget_pool); a vCPU whose cache is the
 *     only one populated grows sooner and further (VC_BUDGET_PRESSURE_ALONE);
 *   - miss counts halve (every class at once) when one reaches VC_MISS_HALVING, so
 *     that capacity follows recent misses.
 */
#ifndef VC_VCPU_POLICY_H
#define VC_VCPU_POLICY_H

#include "internal.h"

/* The budget of a vCPU doubles, up to VC_BUDGET_GROWTH times the option, when
 * VC_BUDGET_PRESSURE misses within one reclaim tick were thrashing: the budget was
 * spent and the class that missed had itself lost capacity to a steal since its
 * previous miss. A program cycling through many classes at once (a wide size mix)
 * takes capacity back and forth between the same classes and needs more than the
 * default to stop moving batches; a program whose working set moves to other
 * classes steals from classes it no longer uses, which never miss again, and keeps
 * its starting budget. bench/footprint's `few` (bursts of a wide mix, then a
 * sleep) thrashes too: at a threshold of 256 its caches once grew 7x and its peak
 * RSS 18%, before the pool's bound on the growth (struct vc_budget_pool). With the
 * bound, 512 costs `few` and `roam` 4-6% of peak RSS against 4096 (host, medians of
 * 7 runs), and saves three quarters of the misses of a wide mix's first 0.1 s, in
 * which the caches grow: bench/speed at scale 0.35, misses with half-capacity moves
 * (move_count) at 4096, 1024 and 512: wide1 47 000, 16 000, 11 000; wide4x 166 000,
 * 52 000, 37 000; rptest 145 000, 52 000, 31 000 (tcmalloc's thread caches: about
 * 17 000 in wide4x and 14 000 in rptest). Cost follows the ids in use: only
 * populated ids have a budget, and a drain returns it to the starting one. */
#define VC_BUDGET_GROWTH 8
#define VC_BUDGET_PRESSURE 512

/* The starting budget is the option's plus this room, a batch's worth (sizeclass.c
 * moves about 32 KiB at a time), so that a loop whose working set is the option's
 * size settles. With the budget equal to the set, what a refill left over could
 * never be cached: the last frees of every round overflowed and sent a batch to
 * central, and the next round ran short by it and refilled (bench/speed's
 * `tight1-1024`, 1024 blocks of 1 KiB against the 1 MiB default: a refill and a
 * flush every round, 6 032 of each at scale 2; 34 with this room). */
#define VC_BUDGET_ROOM (32u << 10)

/* The same rule for a vCPU whose cache is the only one populated: its budget doubles
 * after VC_BUDGET_PRESSURE_ALONE thrashing misses, up to VC_BUDGET_GROWTH_ALONE times
 * the option, while the growth stays within VC_POOL_LIVE_FACTOR_ALONE times the live
 * bytes. What makes growth cost memory is the other caches: objects one vCPU's cache
 * holds are no use to a thread running as another id, and a burst freed on several
 * ids fills each cache to its capacity (bench/footprint's `few`: budgets at the cap
 * held 13 MiB at the peak). With one cache populated every thread reuses what it
 * holds; a steady churn keeps about half of each class's capacity filled, the rest
 * of its objects would sit in partly used spans anyway. bench/speed's wide1 (one
 * thread, 9 MiB of live data over 90 classes) at scale 0.35: misses 11 400 with the
 * shared rule, 3 200 with this one (tcmalloc: 3 600), and its peak RSS no higher
 * (15.0 -> 14.5 MiB); python3, sqlite3 and perl of bench/run-speed keep their peak
 * RSS. A budget that grew while its cache was alone keeps its growth when other
 * caches populate, until a drain (vcpu_cache.c's drain_oversized drains when the
 * growth passes twice the pool's bound). */
#define VC_BUDGET_GROWTH_ALONE 16
#define VC_BUDGET_PRESSURE_ALONE 128
#define VC_POOL_LIVE_FACTOR_ALONE 2
#define VC_STEAL_WINDOW 8
#define VC_STEAL_MAX 8
#define VC_MISS_HALVING 4096

/* The budgets' growth beyond the option, shared by every vCPU. A doubling is granted
 * only while `extra` (the sum over vCPUs of budget - option) stays within the live
 * bytes the program holds: the caches' growth follows the data, not the time a
 * program has been thrashing. bench/footprint's `few` (4 threads, bursts of a wide
 * mix between sleeps, live data about 6.5 MiB) thrashes in every burst, and at ten
 * times its usual length, with the budgets of its two vCPUs at the cap (8 MiB
 * each), its caches held 13 MiB at their peak and its peak RSS was 22 MiB; with
 * this bound 5 MiB and 17 MiB. A cache alone is bounded by twice the live bytes
 * (VC_POOL_LIVE_FACTOR_ALONE): bench/speed's wide1 holds about 9 MiB of live data
 * and wants a budget near 16 MiB (with the live bytes as its bound, its budget
 * stopped at 8 MiB; halving that bound made it 18% slower, a quarter 60%). Two
 * vCPUs doubling at once may both pass the check: the bound is approximate by one
 * step. */
struct vc_budget_pool {
	uint64_t extra;                /* relaxed atomic */
	uint64_t (*live_bytes)(void);  /* called at a doubling and by the reclaim scan */
	uint32_t (*caches_populated)(void); /* vCPU caches open now (relaxed read; a
					       stale count picks the other rule once) */
};

/* What the pool's extra may reach: the live bytes, or twice them when one cache is
 * populated (VC_POOL_LIVE_FACTOR_ALONE). */
uint64_t vc_policy_pool_bound(const struct vc_budget_pool *pool) VC_HIDDEN;

/* A decision: set class `cls`'s capacity to `capacity`; cls 0: nothing to do. */
struct vc_policy_step {
	unsigned cls;
	unsigned capacity;
};

/* Capacity granted at once to class c (about 16 KiB of objects, in [1, batch]). */
unsigned vc_policy_grow_step(unsigned c) VC_HIDDEN;

/* Start of a vCPU's life: no capacity, the option's budget. */
void vc_policy_reset(struct vc_capacity *k, uint64_t option_bytes) VC_HIDDEN;

/* Bookkeeping of a capacity change that was applied to the region. */
void vc_policy_set(struct vc_capacity *k, unsigned c, unsigned cap) VC_HIDDEN;

/* One miss of class c (vc_id_counter_add: the thread running as the id counts
 * without the lock). */
void vc_policy_count_miss(uint32_t misses[VC_NUM_CLASSES], unsigned c) VC_HIDDEN;

/* The next step of a miss of class c, the steals-th of this miss (0 first): grow c
 * when the budget allows; else take capacity from a victim (apply it, then
 * vc_policy_note_stolen, then ask again with steals + 1). `pressure` counts
 * thrashing misses (relaxed atomic; the reclaim tick zeroes it). */
struct vc_policy_step vc_policy_next(struct vc_capacity *k, uint32_t *pressure,
				     const uint32_t misses[VC_NUM_CLASSES], unsigned c,
				     unsigned steals, uint64_t option_bytes,
				     struct vc_budget_pool *pool) VC_HIDDEN;

/* The vCPU's cache was emptied (a drain): its budget goes back to the option, and
 * what it had beyond that back to the pool. */
void vc_policy_release_budget(struct vc_capacity *k, uint64_t option_bytes,
			      struct vc_budget_pool *pool) VC_HIDDEN;

/* A steal from victim was applied. */
void vc_policy_note_stolen(struct vc_capacity *k, unsigned victim) VC_HIDDEN;

/* Fallback mode's rule (no steals): class c's capacity after a miss, a step more
 * when the whole step fits the budget; c's capacity unchanged otherwise. */
unsigned vc_policy_locked_grow(const struct vc_capacity *k, unsigned c) VC_HIDDEN;

#endif
