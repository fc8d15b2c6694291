/* SPDX-License-Identifier: MIT */
/*
 * churn.c - single-threaded small-object churn: one thread keeps 4096 live objects of
 * 16-256 bytes and replaces a random one per operation.  Measures the plain
 * malloc/free fast path with a realistic (non-LIFO) free order.  Basis "wall".
 */
#include <stdlib.h>

#include "footprint.h"

enum { LIVE = 4096 };

int workload_churn(const struct config *cfg, struct outcome *out)
{
	struct rng r;
	rng_seed(&r, cfg->seed, 0);
	void **slots = malloc(sizeof(void *) * LIVE);
	if (!slots)
		return -1;
	uint64_t replacements = (uint64_t)(3000000 * cfg->scale);
	if (replacements < 1000)
		replacements = 1000;
	double start = now_seconds();
	note_cpu();
	for (int i = 0; i < LIVE; i++)
		slots[i] = object_new(size_between(&r, 16, 256));
	for (uint64_t i = 0; i < replacements; i++) {
		uint32_t pick = rng_below(&r, LIVE);
		object_free(slots[pick]);
		slots[pick] = object_new(size_between(&r, 16, 256));
	}
	working_set_free(slots, LIVE);
	double seconds = now_seconds() - start;
	free(slots);
	outcome_wall(out, 1, replacements + LIVE, seconds);
	return 0;
}
