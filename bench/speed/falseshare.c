/* SPDX-License-Identifier: MIT */
/*
 * falseshare.c - false sharing the allocator causes (after Hoard's cache-scratch and
 * cache-thrash tests).
 *
 * Each round the main thread allocates one small block (8-64 B, one size per round)
 * per worker, back to back - so they share cache lines under any allocator - and
 * hands block i to worker i (2 workers).  A worker reads its block and frees it: a
 * free of memory that a neighbour's block shares a line with.  Then it allocates 4
 * blocks of the same size and writes them over and over, and frees them.
 *
 * If the allocator gives a worker back the block it just freed (passive) or carves
 * the workers' blocks out of the same cache line (active), the two workers' writes
 * contend for lines and the round slows down many times; an allocator that keeps each
 * thread's blocks apart runs at the speed of private memory.
 */
#include <stdlib.h>

#include "speed.h"

enum { WORKERS = 2, OWN_BLOCKS = 4, WRITES = 20000, MIN_SIZE = 8, MAX_SIZE = 64 };

struct fs_run {
	pthread_barrier_t round_start, round_end;
	uint64_t rounds;
	int workers;
	size_t size;		   /* of this round's blocks; set by main before round_start */
	unsigned char **handed;	   /* handed[i] is worker i's; set before round_start */
	atomic_uint_fast64_t checksum;
	struct rng rng;
	pthread_t *threads;
	int worker_index; /* hands out indexes; only before the first round */
	pthread_mutex_t lock;
};

static void *fs_worker(void *arg)
{
	struct fs_run *run = arg;
	pthread_mutex_lock(&run->lock);
	int me = run->worker_index++;
	pthread_mutex_unlock(&run->lock);
	uint64_t checksum = 0;
	for (uint64_t r = 0; r < run->rounds; r++) {
		pthread_barrier_wait(&run->round_start);
		size_t size = run->size;
		checksum += run->handed[me][0];
		free(run->handed[me]);
		volatile unsigned char *own[OWN_BLOCKS];
		for (int b = 0; b < OWN_BLOCKS; b++)
			own[b] = must(malloc(size), "malloc");
		for (int w = 0; w < WRITES; w++)
			for (int b = 0; b < OWN_BLOCKS; b++)
				own[b][(size_t)w % size]++;
		for (int b = 0; b < OWN_BLOCKS; b++) {
			checksum += own[b][0];
			free((void *)own[b]);
		}
		pthread_barrier_wait(&run->round_end);
	}
	atomic_fetch_add(&run->checksum, checksum);
	return NULL;
}

static void fs_body(void *arg)
{
	struct fs_run *run = arg;
	for (int i = 0; i < run->workers; i++)
		thread_start(&run->threads[i], fs_worker, run);
	for (uint64_t r = 0; r < run->rounds; r++) {
		run->size = size_uniform(&run->rng, MIN_SIZE, MAX_SIZE);
		for (int i = 0; i < run->workers; i++) {
			run->handed[i] = must(malloc(run->size), "malloc");
			run->handed[i][0] = (unsigned char)i;
		}
		pthread_barrier_wait(&run->round_start);
		pthread_barrier_wait(&run->round_end);
	}
	for (int i = 0; i < run->workers; i++)
		thread_join(run->threads[i]);
}

int workload_falseshare(const struct config *cfg, struct result *res, long unused)
{
	(void)unused;
	struct fs_run run = {.workers = cfg->threads ? cfg->threads : WORKERS};
	run.rounds = scaled(cfg, 2000, 2);
	rng_seed(&run.rng, cfg->seed, 0);
	run.handed = must(calloc((size_t)run.workers, sizeof(*run.handed)), "setup");
	run.threads = must(calloc((size_t)run.workers, sizeof(*run.threads)), "setup");
	pthread_barrier_init(&run.round_start, NULL, (unsigned)run.workers + 1);
	pthread_barrier_init(&run.round_end, NULL, (unsigned)run.workers + 1);
	pthread_mutex_init(&run.lock, NULL);
	atomic_init(&run.checksum, 0);
	measured(res, fs_body, &run);
	res->ops = run.rounds * (uint64_t)run.workers * (1 + OWN_BLOCKS);
	res->threads = run.workers + 1;
	res->checksum = atomic_load(&run.checksum);
	pthread_mutex_destroy(&run.lock);
	pthread_barrier_destroy(&run.round_end);
	pthread_barrier_destroy(&run.round_start);
	free(run.threads);
	free(run.handed);
	return 0;
}
