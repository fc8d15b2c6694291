/* tests/unit/policy_unit.c - the capacity policy of the per-vCPU caches
 * (allocator/vcpu_policy.c) alone, over counters the test sets: no region, no locks,
 * no threads, no rseq. Each case states the rule it checks.
 *
 *   step        a class's step is about 16 KiB of objects: at least 1, at most a
 *               batch, and a step more would pass 16 KiB unless it is a batch;
 *   growth      under the budget, each miss grows the class by its step up to
 *               max_slots, then nothing; the byte count follows;
 *   budget      a miss whose step does not fit grows nothing without a victim;
 *   steal       past the budget, a miss takes a step from the class that missed
 *               least in the window, then grows once the step fits;
 *   no steal    not from a class that missed as often as the missing one, nor from
 *               one outside the window, nor after VC_STEAL_MAX steals;
 *   pressure    VC_BUDGET_PRESSURE thrashing misses (over budget, the class robbed
 *               since its last miss) double the budget, up to VC_BUDGET_GROWTH
 *               times the option; misses that are not thrashing count nothing;
 *   live bound  a doubling that would make the budgets' growth (the pool's extra,
 *               every vCPU together) pass the live bytes is refused, the pool
 *               counts what it granted, a drain's release gives it back;
 *   alone       with one cache populated, VC_BUDGET_PRESSURE_ALONE thrashing misses
 *               double the budget, up to VC_BUDGET_GROWTH_ALONE times the option,
 *               within twice the live bytes; with two, the shared rule again;
 *   halving     when a class reaches VC_MISS_HALVING misses, every class's count
 *               halves;
 *   locked      fallback mode's rule: a whole step within the budget, else nothing.
 */
#include "internal.h"
#include "vctest.h"
#include "vcpu_policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OPTION (1u << 20)

static struct vc_capacity k;
static uint32_t misses[VC_NUM_CLASSES];
static uint32_t pressure;
static uint64_t live; /* what the pool's live_bytes reports */

static uint64_t live_now(void)
{
	return live;
}

/* Caches the pool sees populated: two unless a case sets it, so that the shared
 * rule applies. */
static uint32_t populated;
static uint32_t populated_now(void)
{
	return populated;
}

static struct vc_budget_pool pool = {0, live_now, populated_now};

static void fresh(uint64_t option)
{
	memset(&k, 0, sizeof k);
	memset(misses, 0, sizeof misses);
	pressure = 0;
	live = UINT64_MAX / 2; /* no bound unless a case sets one */
	pool.extra = 0;
	populated = 2;
	vc_policy_reset(&k, option);
}

static uint64_t bytes_of_capacities(void)
{
	uint64_t b = 0;
	for (unsigned c = 1; c < VC_NUM_CLASSES; c++)
		b += (uint64_t)k.capacity[c] * vc_classes[c].size;
	return b;
}

static struct vc_policy_step next(unsigned c, unsigned steals)
{
	return vc_policy_next(&k, &pressure, misses, c, steals, OPTION, &pool);
}

static void case_step(void)
{
	for (unsigned c = 1; c < VC_NUM_CLASSES; c++) {
		const struct vc_class_info *ci = &vc_classes[c];
		unsigned s = vc_policy_grow_step(c);
		VCT_EXPECT(s >= 1 && s <= ci->batch, "class %u (%u B): step %u, batch %u", c,
			   ci->size, s, ci->batch);
		VCT_EXPECT(s == 1 || s * ci->size <= 16384,
			   "class %u: step %u of %u B passes 16 KiB", c, s, ci->size);
		VCT_EXPECT(s == ci->batch || (s + 1) * ci->size > 16384,
			   "class %u: step %u of %u B, one more would still fit 16 KiB", c, s,
			   ci->size);
	}
	VCT_EXPECT(vc_policy_grow_step(1) == vc_classes[1].batch, "16 B: a whole batch");
	VCT_EXPECT(vc_policy_grow_step(VC_NUM_CLASSES - 1) == 1, "256 KiB: one object");
}

static void case_growth(void)
{
	fresh(OPTION);
	unsigned c = vc_class_of(64);
	const struct vc_class_info *ci = &vc_classes[c];
	unsigned step = vc_policy_grow_step(c), expect = 0, rounds = 0;
	for (;;) {
		struct vc_policy_step s = next(c, 0);
		if (expect == ci->max_slots) {
			VCT_EXPECT(s.cls == 0, "at max_slots %u: step to class %u", ci->max_slots,
				   s.cls);
			break;
		}
		expect = expect + step > ci->max_slots ? ci->max_slots : expect + step;
		VCT_EXPECT(s.cls == c && s.capacity == expect,
			   "miss %u: step {%u, %u}, expected {%u, %u}", rounds, s.cls, s.capacity,
			   c, expect);
		if (s.cls != c)
			break;
		vc_policy_set(&k, c, s.capacity);
		VCT_EXPECT(k.bytes == bytes_of_capacities(), "bytes %llu after miss %u",
			   (unsigned long long)k.bytes, rounds);
		rounds++;
	}
	VCT_EXPECT(k.capacity[c] == ci->max_slots && k.budget == OPTION && pressure == 0,
		   "capacity %u of %u, budget %llu", k.capacity[c], ci->max_slots,
		   (unsigned long long)k.budget);
}

/* Classes a and b hold all of a budget that c cannot grow within; the window
 * starts at a (a < b < c, all within VC_STEAL_WINDOW of a). */
static void spent(unsigned a, unsigned b, unsigned c)
{
	fresh(OPTION);
	vc_policy_set(&k, a, 64);
	vc_policy_set(&k, b, 64);
	k.budget = k.bytes + (uint64_t)vc_policy_grow_step(c) * vc_classes[c].size - 1;
	k.steal_cursor = (uint8_t)(a - 1);
}

static void case_steal(void)
{
	unsigned a = vc_class_of(512), b = a + 2, c = a + 4;
	spent(a, b, c);
	misses[a] = 5;
	misses[b] = 2;
	misses[c] = 10;
	struct vc_policy_step s = next(c, 0);
	unsigned expect_b = 64 - vc_policy_grow_step(b);
	VCT_EXPECT(s.cls == b && s.capacity == expect_b, "steal {%u, %u}, expected {%u, %u}", s.cls,
		   s.capacity, b, expect_b);
	vc_policy_set(&k, s.cls, s.capacity);
	vc_policy_note_stolen(&k, s.cls);
	VCT_EXPECT(k.stolen[b / 64] & (1ull << (b % 64)), "class %u marked robbed", b);
	s = next(c, 1);
	VCT_EXPECT(s.cls == c && s.capacity == vc_policy_grow_step(c),
		   "after the steal: step {%u, %u}, expected c grows to %u", s.cls, s.capacity,
		   vc_policy_grow_step(c));
	VCT_EXPECT(pressure == 0 && k.budget != 2 * OPTION, "no thrashing counted");

	/* Budget spent and nobody to take from (only c holds capacity). */
	fresh(OPTION);
	vc_policy_set(&k, c, 64);
	k.budget = k.bytes;
	misses[c] = 10;
	s = next(c, 0);
	VCT_EXPECT(s.cls == 0, "no victim: step {%u, %u}", s.cls, s.capacity);
}

static void case_no_steal(void)
{
	unsigned a = vc_class_of(512), b = a + 2, c = a + 4;
	/* Victims missed as often as c. */
	spent(a, b, c);
	misses[a] = misses[b] = misses[c] = 7;
	struct vc_policy_step s = next(c, 0);
	VCT_EXPECT(s.cls == 0, "equal misses: step {%u, %u}", s.cls, s.capacity);

	/* The least-missing class is outside the window. */
	spent(a, b, c);
	unsigned far = a + VC_STEAL_WINDOW; /* the first class past the window */
	vc_policy_set(&k, far, 64);
	k.budget += (uint64_t)64 * vc_classes[far].size;
	misses[a] = 5;
	misses[b] = 3;
	misses[far] = 0;
	misses[c] = 10;
	s = next(c, 0);
	VCT_EXPECT(s.cls == b, "window: victim %u, expected %u (not %u, outside)", s.cls, b, far);

	/* At most VC_STEAL_MAX steals per miss. */
	spent(a, b, c);
	misses[a] = 1;
	misses[b] = 1;
	misses[c] = 10;
	s = next(c, VC_STEAL_MAX - 1);
	VCT_EXPECT(s.cls == a || s.cls == b, "steal %u: step to class %u", VC_STEAL_MAX - 1, s.cls);
	spent(a, b, c);
	misses[a] = 1;
	misses[b] = 1;
	misses[c] = 10;
	s = next(c, VC_STEAL_MAX);
	VCT_EXPECT(s.cls == 0, "steal %u: step {%u, %u}", VC_STEAL_MAX, s.cls, s.capacity);
}

static void case_pressure(void)
{
	unsigned a = vc_class_of(512), b = a + 2, c = a + 4;
	spent(a, b, c);
	misses[c] = 10;
	misses[a] = misses[b] = 10; /* no victim: the budget alone decides */
	uint64_t spent_budget = k.budget;
	/* Not robbed: not thrashing. */
	next(c, 0);
	VCT_EXPECT(pressure == 0 && k.budget == spent_budget, "pressure %u without a steal",
		   pressure);
	for (unsigned i = 1; i < VC_BUDGET_PRESSURE; i++) {
		vc_policy_note_stolen(&k, c);
		next(c, 0);
	}
	VCT_EXPECT(pressure == VC_BUDGET_PRESSURE - 1 && k.budget == spent_budget,
		   "after %u thrashing misses: pressure %u, budget %llu", VC_BUDGET_PRESSURE - 1,
		   pressure, (unsigned long long)k.budget);
	VCT_EXPECT(!(k.stolen[c / 64] & (1ull << (c % 64))), "the robbed mark is consumed");
	vc_policy_note_stolen(&k, c);
	struct vc_policy_step s = next(c, 0);
	VCT_EXPECT(pressure == 0 && k.budget == 2 * spent_budget, "at %u: pressure %u, budget %llu",
		   VC_BUDGET_PRESSURE, pressure, (unsigned long long)k.budget);
	VCT_EXPECT(s.cls == c, "the doubled budget lets class %u grow (step to %u)", c, s.cls);

	/* Under the budget, a robbed class's miss is no thrashing, and keeps its mark. */
	vc_policy_note_stolen(&k, c);
	next(c, 0);
	VCT_EXPECT(pressure == 0 && (k.stolen[c / 64] & (1ull << (c % 64))),
		   "under budget: pressure %u", pressure);

	/* Doubling stops at VC_BUDGET_GROWTH times the option. */
	fresh(OPTION);
	vc_policy_set(&k, c, 64);
	k.bytes = UINT64_MAX / 4; /* every miss finds the budget spent */
	uint64_t want = OPTION;
	for (int round = 0; round < 6; round++) {
		for (unsigned i = 0; i < VC_BUDGET_PRESSURE; i++) {
			vc_policy_note_stolen(&k, c);
			next(c, 0);
		}
		want = want * 2 > (uint64_t)OPTION * VC_BUDGET_GROWTH ? want : want * 2;
		VCT_EXPECT(k.budget == want, "round %d: budget %llu, expected %llu", round,
			   (unsigned long long)k.budget, (unsigned long long)want);
	}
	VCT_EXPECT(k.budget == (uint64_t)OPTION * VC_BUDGET_GROWTH, "budget %llu, the cap is %llu",
		   (unsigned long long)k.budget, (unsigned long long)OPTION * VC_BUDGET_GROWTH);
}

/* VC_BUDGET_PRESSURE thrashing misses of class c: one doubling's worth. */
static void thrash_round(unsigned c)
{
	for (unsigned i = 0; i < VC_BUDGET_PRESSURE; i++) {
		vc_policy_note_stolen(&k, c);
		next(c, 0);
	}
}

static void case_live_bound(void)
{
	fresh(OPTION);
	unsigned c = vc_class_of(512);
	vc_policy_set(&k, c, 64);
	k.bytes = UINT64_MAX / 4; /* every miss finds the budget spent */
	live = OPTION + OPTION / 2;
	thrash_round(c);
	VCT_EXPECT(k.budget == 2 * (uint64_t)OPTION && pool.extra == OPTION,
		   "first doubling (1 MiB more, live 1.5 MiB): budget %llu, pool %llu",
		   (unsigned long long)k.budget, (unsigned long long)pool.extra);
	thrash_round(c);
	VCT_EXPECT(k.budget == 2 * (uint64_t)OPTION && pool.extra == OPTION,
		   "second doubling (3 MiB in all, live 1.5 MiB) refused: budget %llu, pool %llu",
		   (unsigned long long)k.budget, (unsigned long long)pool.extra);
	VCT_EXPECT(pressure == 0, "a refused doubling starts the count again: %u", pressure);
	/* Other vCPUs' growth counts against the same bound: 2 MiB of theirs and this
	 * one's 1 MiB, plus 2 MiB for this doubling, pass 4 MiB of live data. */
	pool.extra = 3 * (uint64_t)OPTION;
	live = 4 * (uint64_t)OPTION;
	thrash_round(c);
	VCT_EXPECT(k.budget == 2 * (uint64_t)OPTION && pool.extra == 3 * (uint64_t)OPTION,
		   "5 MiB > live 4 MiB: budget %llu, pool %llu", (unsigned long long)k.budget,
		   (unsigned long long)pool.extra);
	live = 5 * (uint64_t)OPTION;
	thrash_round(c);
	VCT_EXPECT(k.budget == 4 * (uint64_t)OPTION && pool.extra == 5 * (uint64_t)OPTION,
		   "live 5 MiB: budget %llu, pool %llu", (unsigned long long)k.budget,
		   (unsigned long long)pool.extra);
	/* A drain's release: the budget is the option's again, the pool keeps only the
	 * other vCPUs' part. */
	vc_policy_release_budget(&k, OPTION, &pool);
	VCT_EXPECT(k.budget == OPTION && pool.extra == 2 * (uint64_t)OPTION,
		   "after the release: budget %llu, pool %llu", (unsigned long long)k.budget,
		   (unsigned long long)pool.extra);
	vc_policy_release_budget(&k, OPTION, &pool);
	VCT_EXPECT(pool.extra == 2 * (uint64_t)OPTION,
		   "a second release gives nothing back: pool %llu", (unsigned long long)pool.extra);
}

/* n thrashing misses of class c. */
static void thrash(unsigned c, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		vc_policy_note_stolen(&k, c);
		next(c, 0);
	}
}

static void case_alone(void)
{
	_Static_assert(VC_BUDGET_PRESSURE_ALONE < VC_BUDGET_PRESSURE &&
			       VC_BUDGET_GROWTH_ALONE > VC_BUDGET_GROWTH,
		       "alone, the budget grows sooner and further");
	fresh(OPTION);
	unsigned c = vc_class_of(512);
	vc_policy_set(&k, c, 64);
	k.bytes = UINT64_MAX / 4; /* every miss finds the budget spent */
	populated = 1;
	live = 5 * (uint64_t)OPTION / 2;
	VCT_EXPECT(vc_policy_pool_bound(&pool) == 5 * (uint64_t)OPTION,
		   "alone, the bound is twice the live bytes: %llu",
		   (unsigned long long)vc_policy_pool_bound(&pool));
	thrash(c, VC_BUDGET_PRESSURE_ALONE - 1);
	VCT_EXPECT(k.budget == OPTION, "after %u thrashing misses: budget %llu",
		   VC_BUDGET_PRESSURE_ALONE - 1, (unsigned long long)k.budget);
	thrash(c, 1);
	VCT_EXPECT(k.budget == 2 * (uint64_t)OPTION && pool.extra == OPTION,
		   "at %u: budget %llu, pool %llu", VC_BUDGET_PRESSURE_ALONE,
		   (unsigned long long)k.budget, (unsigned long long)pool.extra);
	/* 4 MiB -> extra 3 MiB: past the live 2.5 MiB, within twice it. */
	thrash(c, VC_BUDGET_PRESSURE_ALONE);
	VCT_EXPECT(k.budget == 4 * (uint64_t)OPTION && pool.extra == 3 * (uint64_t)OPTION,
		   "second doubling past the live bytes: budget %llu, pool %llu",
		   (unsigned long long)k.budget, (unsigned long long)pool.extra);
	/* 8 MiB -> extra 7 MiB: past twice the live bytes, refused. */
	thrash(c, VC_BUDGET_PRESSURE_ALONE);
	VCT_EXPECT(k.budget == 4 * (uint64_t)OPTION, "third doubling refused: budget %llu",
		   (unsigned long long)k.budget);
	/* A second cache: the shared rule's threshold and bound (the live bytes). */
	populated = 2;
	VCT_EXPECT(vc_policy_pool_bound(&pool) == 5 * (uint64_t)OPTION / 2,
		   "shared, the bound is the live bytes: %llu",
		   (unsigned long long)vc_policy_pool_bound(&pool));
	live = UINT64_MAX / 4;
	thrash(c, VC_BUDGET_PRESSURE_ALONE);
	VCT_EXPECT(k.budget == 4 * (uint64_t)OPTION && pressure == VC_BUDGET_PRESSURE_ALONE,
		   "shared: no doubling at %u (budget %llu, pressure %u)", VC_BUDGET_PRESSURE_ALONE,
		   (unsigned long long)k.budget, pressure);
	thrash(c, VC_BUDGET_PRESSURE - VC_BUDGET_PRESSURE_ALONE);
	VCT_EXPECT(k.budget == 8 * (uint64_t)OPTION, "shared: doubled at %u: budget %llu",
		   VC_BUDGET_PRESSURE, (unsigned long long)k.budget);
	/* At the shared cap (8 times the option) only a cache alone grows on. */
	thrash(c, VC_BUDGET_PRESSURE);
	VCT_EXPECT(k.budget == (uint64_t)OPTION * VC_BUDGET_GROWTH, "shared cap: budget %llu",
		   (unsigned long long)k.budget);
	populated = 1;
	for (int round = 0; round < 4; round++)
		thrash(c, VC_BUDGET_PRESSURE_ALONE);
	VCT_EXPECT(k.budget == (uint64_t)OPTION * VC_BUDGET_GROWTH_ALONE, "alone cap: budget %llu",
		   (unsigned long long)k.budget);
}

static void case_halving(void)
{
	fresh(OPTION);
	unsigned c = 3, d = 40;
	misses[d] = 101;
	for (unsigned i = 1; i < VC_MISS_HALVING; i++)
		vc_policy_count_miss(misses, c);
	VCT_EXPECT(misses[c] == VC_MISS_HALVING - 1 && misses[d] == 101, "before: %u, %u",
		   misses[c], misses[d]);
	vc_policy_count_miss(misses, c);
	VCT_EXPECT(misses[c] == VC_MISS_HALVING / 2 && misses[d] == 50, "after: %u, %u", misses[c],
		   misses[d]);
}

static void case_locked(void)
{
	fresh(OPTION);
	unsigned c = vc_class_of(4096), step = vc_policy_grow_step(c);
	VCT_EXPECT(vc_policy_locked_grow(&k, c) == step, "first miss: %u",
		   vc_policy_locked_grow(&k, c));
	vc_policy_set(&k, c, step);
	k.budget = k.bytes + (uint64_t)step * vc_classes[c].size - 1;
	VCT_EXPECT(vc_policy_locked_grow(&k, c) == step, "a step that does not fit: %u",
		   vc_policy_locked_grow(&k, c));
	k.budget += 1;
	VCT_EXPECT(vc_policy_locked_grow(&k, c) == 2 * step, "a step that fits exactly: %u",
		   vc_policy_locked_grow(&k, c));
	k.budget = UINT64_MAX / 2;
	vc_policy_set(&k, c, vc_classes[c].max_slots - 1);
	VCT_EXPECT(vc_policy_locked_grow(&k, c) == vc_classes[c].max_slots, "clipped at max_slots");
}

int main(void)
{
	vc_sizeclass_init();
	case_step();
	case_growth();
	case_steal();
	case_no_steal();
	case_pressure();
	case_live_bound();
	case_alone();
	case_halving();
	case_locked();
	printf("policy-unit: step, growth, steal, no steal, pressure, live bound, alone, halving, "
	       "locked\n");
	return vct_exit();
}
