/* SPDX-License-Identifier: MIT */
/*
 * larson.c - a server whose worker threads come and go (after Larson and Krishnan's
 * benchmark).  4 lanes run at once; a lane owns an array of 1000 blocks of 16-1024 B
 * (uniform).  The lane's thread replaces random blocks for a while, then starts its
 * successor and exits; the successor inherits the array, so it frees blocks that a
 * thread now gone allocated.  Lanes change generation independently of each other.
 */
#include <stdlib.h>

#include "speed.h"

enum { LANES = 4, SLOTS = 1000, GENERATIONS = 40, MIN_SIZE = 16, MAX_SIZE = 1024 };

struct lane {
	int index;
	int generation; /* of the thread running the lane now */
	int generations;
	uint64_t steps_per_generation;
	uint64_t seed;
	void **slots;
	uint64_t ops;
	uint64_t checksum;
	struct larson_run *run;
} __attribute__((aligned(64)));

struct larson_run {
	struct lane *lanes;
	int count;
	pthread_mutex_t lock;
	pthread_cond_t all_done;
	int done; /* lanes whose last generation finished; under lock */
};

static void *lane_main(void *arg)
{
	struct lane *lane = arg;
	struct rng rng;
	rng_seed(&rng, lane->seed, (uint64_t)lane->index << 20 | (uint64_t)lane->generation);
	for (uint64_t i = 0; i < lane->steps_per_generation; i++) {
		uint64_t pick = rng_below(&rng, SLOTS);
		lane->checksum += block_peek(lane->slots[pick]);
		free(lane->slots[pick]);
		lane->slots[pick] = block_new(size_uniform(&rng, MIN_SIZE, MAX_SIZE));
	}
	lane->ops += lane->steps_per_generation;
	if (++lane->generation < lane->generations) {
		/* The successor owns `lane` from here on: this thread touches it no more. */
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		pthread_t successor;
		if (pthread_create(&successor, &attr, lane_main, lane) != 0)
			must(NULL, "pthread_create");
		pthread_attr_destroy(&attr);
		return NULL;
	}
	struct larson_run *run = lane->run;
	pthread_mutex_lock(&run->lock);
	if (++run->done == run->count)
		pthread_cond_signal(&run->all_done);
	pthread_mutex_unlock(&run->lock);
	return NULL;
}

static void larson_body(void *arg)
{
	struct larson_run *run = arg;
	for (int i = 0; i < run->count; i++) {
		struct lane *lane = &run->lanes[i];
		struct rng rng;
		rng_seed(&rng, lane->seed, 1000 + (uint64_t)i);
		for (int s = 0; s < SLOTS; s++)
			lane->slots[s] = block_new(size_uniform(&rng, MIN_SIZE, MAX_SIZE));
		lane->ops += SLOTS;
	}
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	for (int i = 0; i < run->count; i++) {
		pthread_t first;
		if (pthread_create(&first, &attr, lane_main, &run->lanes[i]) != 0)
			must(NULL, "pthread_create");
	}
	pthread_attr_destroy(&attr);
	pthread_mutex_lock(&run->lock);
	while (run->done < run->count)
		pthread_cond_wait(&run->all_done, &run->lock);
	pthread_mutex_unlock(&run->lock);
	for (int i = 0; i < run->count; i++)
		for (int s = 0; s < SLOTS; s++) {
			run->lanes[i].checksum += block_peek(run->lanes[i].slots[s]);
			free(run->lanes[i].slots[s]);
		}
}

int workload_larson(const struct config *cfg, struct result *res, long unused)
{
	(void)unused;
	struct larson_run run = {.count = cfg->threads ? cfg->threads : LANES};
	pthread_mutex_init(&run.lock, NULL);
	pthread_cond_init(&run.all_done, NULL);
	run.lanes = calloc_lines((size_t)run.count, sizeof(*run.lanes));
	for (int i = 0; i < run.count; i++) {
		struct lane *lane = &run.lanes[i];
		lane->index = i;
		lane->generations = GENERATIONS;
		lane->steps_per_generation = scaled(cfg, 60000, 100);
		lane->seed = cfg->seed;
		lane->slots = must(malloc(sizeof(void *) * SLOTS), "setup");
		lane->run = &run;
	}
	measured(res, larson_body, &run);
	res->threads = run.count;
	for (int i = 0; i < run.count; i++) {
		res->ops += run.lanes[i].ops;
		res->checksum += run.lanes[i].checksum;
		free(run.lanes[i].slots);
	}
	free(run.lanes);
	pthread_cond_destroy(&run.all_done);
	pthread_mutex_destroy(&run.lock);
	return 0;
}
