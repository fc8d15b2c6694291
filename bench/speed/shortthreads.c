/* SPDX-License-Identifier: MIT */
/*
 * shortthreads.c - a thread per task: threads are created 4 at a time and joined;
 * each allocates 300 blocks of 16 B-1 KiB (log-uniform by octave), as a request
 * handler builds its objects, then frees them and exits.  The allocator's per-thread
 * set-up and tear-down (caches created, drained, handed back) weigh as much as its
 * allocation paths.  ops counts allocations; thread creation is part of the time.
 */
#include <stdlib.h>

#include "speed.h"

enum { WAVE = 4, BLOCKS_PER_THREAD = 300, MIN_SIZE = 16, MAX_SIZE = 1024 };

struct task {
	pthread_t thread;
	uint64_t seed;
	uint64_t id;
	uint64_t checksum;
};

static void *task_main(void *arg)
{
	struct task *t = arg;
	struct rng rng;
	rng_seed(&rng, t->seed, t->id);
	void *blocks[BLOCKS_PER_THREAD];
	for (int i = 0; i < BLOCKS_PER_THREAD; i++)
		blocks[i] = block_new(size_octaves(&rng, MIN_SIZE, MAX_SIZE));
	for (int i = 0; i < BLOCKS_PER_THREAD; i++) {
		t->checksum += block_peek(blocks[i]);
		free(blocks[i]);
	}
	return NULL;
}

struct short_run {
	uint64_t waves;
	uint64_t seed;
	uint64_t checksum;
};

static void short_body(void *arg)
{
	struct short_run *run = arg;
	struct task tasks[WAVE];
	for (uint64_t w = 0; w < run->waves; w++) {
		for (int i = 0; i < WAVE; i++) {
			tasks[i] = (struct task){.seed = run->seed, .id = w * WAVE + (uint64_t)i};
			thread_start(&tasks[i].thread, task_main, &tasks[i]);
		}
		for (int i = 0; i < WAVE; i++) {
			thread_join(tasks[i].thread);
			run->checksum += tasks[i].checksum;
		}
	}
}

int workload_shortthreads(const struct config *cfg, struct result *res, long unused)
{
	(void)unused;
	struct short_run run = {.waves = scaled(cfg, 1500, 2), .seed = cfg->seed};
	measured(res, short_body, &run);
	res->ops = run.waves * WAVE * BLOCKS_PER_THREAD;
	res->threads = WAVE;
	res->checksum = run.checksum;
	return 0;
}
