/* tests/stress/central_count.h - for the white-box tests that count what reaches a
 * class's central lists (linked with the allocator's test-hook build, so internal.h
 * is theirs to include): the count, and the start they share. */
#ifndef VCTEST_CENTRAL_COUNT_H
#define VCTEST_CENTRAL_COUNT_H

#include "internal.h"
#include "cpus.h"
#include "vctest.h"

/* Removes and inserts that class c's central lists have seen, every node's. */
static inline uint64_t central_ops(unsigned c)
{
	uint64_t ops = 0;
	for (unsigned n = 0; n < vc_g.nnodes; n++)
		ops += __atomic_load_n(&vc_central_of(n, c)->ops, __ATOMIC_RELAXED);
	return ops;
}

/* vct_start, then: vcmalloc is the allocator, its reclaim tick is held off (a drain
 * would refill from central), and the thread is pinned to its first allowed CPU (the
 * modes indexed by CPU, cpu and the fallback's shards, move a migrating thread's
 * blocks between caches through central). */
static inline void central_count_start(const char *name)
{
	vct_start(name, 60);
	VCT_CHECK(vct_under_vcmalloc(), "needs vcmalloc");
	VCT_CHECK(vc_g.opt.reclaim_ms >= 1000000,
		  "run with VCMALLOC_RECLAIM_MS=3600000 (a drain would refill from central)");
	struct cpu_list allowed;
	cpu_list_allowed(&allowed);
	pin_self(allowed.cpu[0]);
}

#endif
