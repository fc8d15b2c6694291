/* SPDX-License-Identifier: MIT */
/*
 * tight.c - the allocator's fast paths and nothing else: a thread allocates 1024
 * blocks of one size in a row (writing the first byte of each), then frees them in
 * the same order, and repeats.  Each round empties and refills whatever cache the
 * allocator keeps, so the batch refill and flush paths count as much as the pops.
 *
 * tight1-<size> runs one thread; tightN-<size> one thread per online CPU, each doing
 * the same work as the single thread (throughput: perfect scaling keeps the time).
 *
 * With --max-seconds a thread stops after the round that crosses the limit; ops then
 * counts the rounds done and planned_ops the rounds asked for.
 */
#include <stdlib.h>

#include "speed.h"

enum { BATCH = 1024, CLOCK_EVERY = 16 };

struct tight_thread {
	pthread_t thread;
	size_t size;
	uint64_t rounds;
	double deadline; /* 0: none */
	uint64_t rounds_done;
	uint64_t checksum;
} __attribute__((aligned(64)));

static void *tight_main(void *arg)
{
	struct tight_thread *t = arg;
	unsigned char *blocks[BATCH];
	uint64_t round;
	for (round = 0; round < t->rounds; round++) {
		if (t->deadline > 0 && round % CLOCK_EVERY == 0 && round > 0 &&
		    now_seconds() > t->deadline)
			break;
		for (int i = 0; i < BATCH; i++) {
			blocks[i] = must(malloc(t->size), "malloc");
			blocks[i][0] = (unsigned char)i;
		}
		for (int i = 0; i < BATCH; i++) {
			t->checksum += blocks[i][0];
			free(blocks[i]);
		}
	}
	t->rounds_done = round;
	return NULL;
}

struct tight_run {
	struct tight_thread *threads;
	int count;
};

static void tight_body(void *arg)
{
	struct tight_run *run = arg;
	if (run->count == 1) {
		tight_main(&run->threads[0]);
		return;
	}
	for (int i = 0; i < run->count; i++)
		thread_start(&run->threads[i].thread, tight_main, &run->threads[i]);
	for (int i = 0; i < run->count; i++)
		thread_join(run->threads[i].thread);
}

int workload_tight(const struct config *cfg, struct result *res, long size_and_threads)
{
	size_t size = (size_t)(size_and_threads & (TIGHT_ALL_CPUS - 1));
	int count = 1;
	if (size_and_threads & TIGHT_ALL_CPUS)
		count = cfg->threads ? cfg->threads : (online_cpus() < 2 ? 2 : online_cpus());
	/*
	 * Rounds are sized on the fast thread-caching allocators (about 0.1 s each).
	 * glibc takes many times longer at 256 B and 1 KiB: a round frees 256 KiB or
	 * 1 MiB at the top of its heap, which it trims and faults back in each round.
	 */
	uint64_t base_rounds = size <= 64 ? 16000 : size <= 256 ? 6000 : 3000;
	uint64_t rounds = scaled(cfg, base_rounds, 1);
	struct tight_thread *threads = calloc_lines((size_t)count, sizeof(*threads));
	for (int i = 0; i < count; i++) {
		threads[i].size = size;
		threads[i].rounds = rounds;
	}
	double deadline = cfg->max_seconds > 0 ? now_seconds() + cfg->max_seconds : 0;
	for (int i = 0; i < count; i++)
		threads[i].deadline = deadline;
	struct tight_run run = {threads, count};
	measured(res, tight_body, &run);
	res->threads = count;
	for (int i = 0; i < count; i++) {
		res->ops += threads[i].rounds_done * BATCH;
		res->planned_ops += rounds * BATCH;
		res->checksum += threads[i].checksum;
	}
	free(threads);
	return 0;
}
