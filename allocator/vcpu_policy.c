/* allocator/vcpu_policy.c - the capacity policy of the per-vCPU caches (the rules:
 * vcpu_policy.h). Pure functions over the counters they are given and the size-class
 * table.
 */
#include "vcpu_policy.h"

/* Steps of about 16 KiB (one batch for small objects, a single object above
 * 16 KiB), so that classes used rarely do not take the budget in 32 KiB pieces. */
unsigned vc_policy_grow_step(unsigned c)
{
	const struct vc_class_info *ci = &vc_classes[c];
	unsigned step = (16u << 10) / ci->size;
	return step < 1 ? 1 : step > ci->batch ? ci->batch : step;
}

void vc_policy_reset(struct vc_capacity *k, uint64_t option_bytes)
{
	for (unsigned c = 1; c < VC_NUM_CLASSES; c++)
		k->capacity[c] = 0;
	k->bytes = 0;
	k->budget = option_bytes;
	k->stolen[0] = k->stolen[1] = 0;
}

void vc_policy_set(struct vc_capacity *k, unsigned c, unsigned cap)
{
	k->bytes -= (uint64_t)k->capacity[c] * vc_classes[c].size;
	k->capacity[c] = (uint16_t)cap;
	k->bytes += (uint64_t)cap * vc_classes[c].size;
}

void vc_policy_count_miss(uint32_t misses[VC_NUM_CLASSES], unsigned c)
{
	uint32_t m = vc_id_counter_add(&misses[c], 1);
	if (m < VC_MISS_HALVING)
		return;
	/* Halve every class's history so capacity follows recent misses. */
	for (unsigned d = 1; d < VC_NUM_CLASSES; d++)
		__atomic_store_n(&misses[d], __atomic_load_n(&misses[d], __ATOMIC_RELAXED) >> 1,
				 __ATOMIC_RELAXED);
}

static bool stolen_test_and_clear(struct vc_capacity *k, unsigned c)
{
	uint64_t bit = 1ull << (c % 64);
	bool was = (k->stolen[c / 64] & bit) != 0;
	k->stolen[c / 64] &= ~bit;
	return was;
}

void vc_policy_note_stolen(struct vc_capacity *k, unsigned victim)
{
	k->stolen[victim / 64] |= 1ull << (victim % 64);
}

static bool cache_alone(const struct vc_budget_pool *pool)
{
	return pool->caches_populated() <= 1;
}

/* The pool's bound under the rule `alone` picks. */
static uint64_t pool_bound(const struct vc_budget_pool *pool, bool alone)
{
	uint64_t live = pool->live_bytes();
	return alone ? live * VC_POOL_LIVE_FACTOR_ALONE : live;
}

uint64_t vc_policy_pool_bound(const struct vc_budget_pool *pool)
{
	return pool_bound(pool, cache_alone(pool));
}

/* One more thrashing miss; the budget doubles at the threshold if the pool's bound
 * allows. The populated count is read once: threshold, cap and bound are one rule's. */
static void note_pressure(struct vc_capacity *k, uint32_t *pressure, uint64_t option_bytes,
			  struct vc_budget_pool *pool)
{
	bool alone = cache_alone(pool);
	uint32_t threshold = alone ? VC_BUDGET_PRESSURE_ALONE : VC_BUDGET_PRESSURE;
	if (vc_id_counter_add(pressure, 1) < threshold)
		return;
	__atomic_store_n(pressure, 0, __ATOMIC_RELAXED);
	uint64_t max = option_bytes * (alone ? VC_BUDGET_GROWTH_ALONE : VC_BUDGET_GROWTH);
	if (k->budget >= max)
		return;
	uint64_t grown = k->budget * 2 > max ? max : k->budget * 2;
	uint64_t add = grown - k->budget;
	if (__atomic_load_n(&pool->extra, __ATOMIC_RELAXED) + add > pool_bound(pool, alone))
		return;
	__atomic_add_fetch(&pool->extra, add, __ATOMIC_RELAXED);
	__atomic_store_n(&k->budget, grown, __ATOMIC_RELAXED); /* the reclaim scan reads it */
}

void vc_policy_release_budget(struct vc_capacity *k, uint64_t option_bytes,
			      struct vc_budget_pool *pool)
{
	if (k->budget > option_bytes)
		__atomic_sub_fetch(&pool->extra, k->budget - option_bytes, __ATOMIC_RELAXED);
	__atomic_store_n(&k->budget, option_bytes, __ATOMIC_RELAXED);
}

struct vc_policy_step vc_policy_next(struct vc_capacity *k, uint32_t *pressure,
				     const uint32_t misses[VC_NUM_CLASSES], unsigned c,
				     unsigned steals, uint64_t option_bytes,
				     struct vc_budget_pool *pool)
{
	const struct vc_policy_step none = {0, 0};
	const struct vc_class_info *ci = &vc_classes[c];
	unsigned cap = k->capacity[c];
	if (cap >= ci->max_slots)
		return none;
	unsigned grow = vc_policy_grow_step(c);
	if (cap + grow > ci->max_slots)
		grow = ci->max_slots - cap;
	uint64_t need = (uint64_t)grow * ci->size;
	if (steals == 0 && k->bytes + need > k->budget && stolen_test_and_clear(k, c))
		note_pressure(k, pressure, option_bytes, pool);
	if (k->bytes + need <= k->budget)
		return (struct vc_policy_step){c, cap + grow};
	if (steals >= VC_STEAL_MAX)
		return none;
	unsigned victim = 0;
	uint32_t least = UINT32_MAX;
	for (unsigned i = 0; i < VC_STEAL_WINDOW; i++) {
		unsigned d = 1 + (k->steal_cursor++ % (VC_NUM_CLASSES - 1));
		if (d == c || k->capacity[d] == 0)
			continue;
		uint32_t m = __atomic_load_n(&misses[d], __ATOMIC_RELAXED);
		if (m < least) {
			least = m;
			victim = d;
		}
	}
	if (!victim || least >= __atomic_load_n(&misses[c], __ATOMIC_RELAXED))
		return none;
	unsigned vcap = k->capacity[victim];
	unsigned take = vc_policy_grow_step(victim);
	if (take > vcap)
		take = vcap;
	return (struct vc_policy_step){victim, vcap - take};
}

unsigned vc_policy_locked_grow(const struct vc_capacity *k, unsigned c)
{
	const struct vc_class_info *ci = &vc_classes[c];
	unsigned cap = k->capacity[c];
	unsigned step = vc_policy_grow_step(c);
	if (cap >= ci->max_slots || k->bytes + (uint64_t)step * ci->size > k->budget)
		return cap;
	return cap + step > ci->max_slots ? ci->max_slots : cap + step;
}
