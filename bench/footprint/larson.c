/* SPDX-License-Identifier: MIT */
/*
 * larson.c - a larson-like server simulation (after Larson and Krishnan's benchmark).
 *
 * Each of the threads (default 4) owns an array of 1000 slots holding objects of
 * 16-512 bytes and replaces random slots.  After a fixed number of replacements the
 * thread exits and a successor thread takes over its array: the successor frees
 * objects another (now dead) thread allocated.  All lineages change generation
 * together; this repeats for a number of generations.  Basis "wall".
 */
#include <stdlib.h>

#include "footprint.h"

enum { SLOTS = 1000, GENERATIONS = 8 };

struct lineage {
	pthread_t thread;
	int index;
	int generation;
	uint64_t seed;
	uint64_t per_generation;
	void **slots;
	uint64_t ops; /* summed over the generations of this lineage */
};

static void *larson_main(void *arg)
{
	struct lineage *l = arg;
	struct rng r;
	rng_seed(&r, l->seed + (uint64_t)l->generation * 104729, (uint64_t)l->index);
	note_cpu();
	for (uint64_t i = 0; i < l->per_generation; i++) {
		uint32_t pick = rng_below(&r, SLOTS);
		object_free(l->slots[pick]);
		l->slots[pick] = object_new(size_between(&r, 16, 512));
	}
	l->ops += l->per_generation;
	return NULL;
}

int workload_larson(const struct config *cfg, struct outcome *out)
{
	int threads = cfg->threads ? cfg->threads : 4;
	uint64_t per_generation = (uint64_t)(150000 * cfg->scale);
	if (per_generation < 1000)
		per_generation = 1000;
	struct lineage *lines = calloc((size_t)threads, sizeof(*lines));
	if (!lines)
		return -1;
	struct rng r;
	rng_seed(&r, cfg->seed, 99);
	uint64_t ops = 0;
	double start = now_seconds();
	for (int i = 0; i < threads; i++) {
		struct lineage *l = &lines[i];
		l->index = i;
		l->seed = cfg->seed;
		l->per_generation = per_generation;
		l->slots = malloc(sizeof(void *) * SLOTS);
		if (!l->slots)
			return -1;
		for (int s = 0; s < SLOTS; s++)
			l->slots[s] = object_new(size_between(&r, 16, 512));
		ops += SLOTS;
	}
	for (int g = 0; g < GENERATIONS; g++) {
		for (int i = 0; i < threads; i++) {
			lines[i].generation = g;
			thread_start(&lines[i].thread, larson_main, &lines[i]);
		}
		for (int i = 0; i < threads; i++)
			pthread_join(lines[i].thread, NULL);
	}
	double seconds = now_seconds() - start;
	for (int i = 0; i < threads; i++) {
		ops += lines[i].ops;
		working_set_free(lines[i].slots, SLOTS);
		free(lines[i].slots);
	}
	free(lines);
	outcome_wall(out, threads, ops, seconds);
	return 0;
}
