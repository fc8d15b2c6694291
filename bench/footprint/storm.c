/* SPDX-License-Identifier: MIT */
/*
 * storm.c - thread storms: waves of short-lived threads (default 32 per wave).
 *
 * Each thread builds a small working set, runs a few bursts, frees its objects except
 * a handful it leaves behind, and exits; the next wave frees what the previous wave
 * left behind, so objects outlive the thread (and the cache) that allocated them.
 * An allocator that keeps per-thread state pays for its creation and teardown here;
 * one that keeps per-CPU state must not strand memory in caches of dead threads.
 * Basis "wall": thread creation and exit are part of the work.
 */
#include <stdlib.h>

#include "footprint.h"

enum { LIVE = 32, BURST = 64, BURSTS = 4, LEFT_BEHIND = 16 };

struct storm_thread {
	pthread_t thread;
	uint64_t seed;
	int index;
	void **inherited;   /* objects the previous wave left, freed by this thread */
	void **left_behind; /* objects this thread leaves for the next wave */
	uint64_t ops;
};

static void *storm_main(void *arg)
{
	struct storm_thread *t = arg;
	struct rng r;
	rng_seed(&r, t->seed, (uint64_t)t->index);
	void *slots[LIVE], *scratch[BURST];
	note_cpu();
	for (int i = 0; i < LEFT_BEHIND; i++) {
		object_free(t->inherited[i]);
		t->inherited[i] = NULL;
	}
	t->ops += working_set_fill(&r, slots, LIVE);
	for (int i = 0; i < BURSTS; i++) {
		t->ops += burst(&r, scratch, BURST);
		t->ops += working_set_turn(&r, slots, LIVE, LIVE / 4);
	}
	for (int i = 0; i < LEFT_BEHIND; i++)
		t->left_behind[i] = slots[i];
	working_set_free(slots + LEFT_BEHIND, LIVE - LEFT_BEHIND);
	return NULL;
}

int workload_storm(const struct config *cfg, struct outcome *out)
{
	int per_wave = cfg->threads ? cfg->threads : 32;
	int waves = (int)(30 * cfg->scale + 0.5);
	if (waves < 2)
		waves = 2;
	struct storm_thread *wave = calloc((size_t)per_wave, sizeof(*wave));
	/* two generations of left-behind objects, swapped each wave */
	void **objects = calloc((size_t)per_wave * 2 * LEFT_BEHIND, sizeof(void *));
	if (!wave || !objects)
		return -1;
	uint64_t ops = 0;
	double start = now_seconds();
	for (int w = 0; w < waves; w++) {
		for (int i = 0; i < per_wave; i++) {
			struct storm_thread *t = &wave[i];
			t->seed = cfg->seed + (uint64_t)w * 7919;
			t->index = i;
			t->ops = 0;
			t->inherited =
			    objects + ((size_t)((w + 1) % 2) * per_wave + i) * LEFT_BEHIND;
			t->left_behind = objects + ((size_t)(w % 2) * per_wave + i) * LEFT_BEHIND;
			thread_start(&t->thread, storm_main, t);
		}
		for (int i = 0; i < per_wave; i++) {
			pthread_join(wave[i].thread, NULL);
			ops += wave[i].ops;
		}
	}
	double seconds = now_seconds() - start;
	for (size_t i = 0; i < (size_t)per_wave * 2 * LEFT_BEHIND; i++)
		object_free(objects[i]);
	free(objects);
	free(wave);
	outcome_wall(out, per_wave * waves, ops, seconds);
	return 0;
}
