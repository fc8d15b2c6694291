/* SPDX-License-Identifier: MIT */
/*
 * wide.c - churn over a wide range of sizes.
 *
 * wide1 models a long-running program's heap: 4096 live blocks of 8 B to 16 KiB
 * (log-uniform by octave, see size_octaves()), a random one replaced per step; the
 * first byte of the old block is read, the first and last byte of the new one written.
 * Sizes cross every small size class and the small/medium boundary of most allocators.
 *
 * wide4x runs the same churn on 4 threads; 1 replaced block in 8 is posted to the
 * next thread's mailbox instead of being freed, and that thread frees it (a remote
 * free).  Threads drain their mailbox every 32 steps.
 */
#include <sched.h>
#include <stdlib.h>

#include "speed.h"

enum {
	SLOTS = 4096,
	MIN_SIZE = 8,
	MAX_SIZE = 16384,
	WIDE4X_THREADS = 4,
	REMOTE_ONE_IN = 8,
	DRAIN_EVERY = 32,
};

struct churner {
	pthread_t thread;
	int index;
	int threads;
	uint64_t steps;
	struct rng rng;
	void **slots;
	struct mailbox *boxes; /* boxes[threads]: boxes[i] is thread i's, NULL in wide1 */
	atomic_int *finished;  /* threads whose churn loop is over */
	uint64_t ops;
	uint64_t checksum;
} __attribute__((aligned(64)));

static void churn(struct churner *c)
{
	for (int i = 0; i < SLOTS; i++)
		c->slots[i] = block_new(size_octaves(&c->rng, MIN_SIZE, MAX_SIZE));
	struct mailbox *next_box = c->boxes ? &c->boxes[(c->index + 1) % c->threads] : NULL;
	for (uint64_t step = 0; step < c->steps; step++) {
		uint64_t pick = rng_below(&c->rng, SLOTS);
		void *old = c->slots[pick];
		c->checksum += block_peek(old);
		if (next_box && rng_below(&c->rng, REMOTE_ONE_IN) == 0)
			mailbox_post(next_box, old);
		else
			free(old);
		c->slots[pick] = block_new(size_octaves(&c->rng, MIN_SIZE, MAX_SIZE));
		if (next_box && step % DRAIN_EVERY == 0)
			free_chain(mailbox_take_all(&c->boxes[c->index]), &c->checksum);
	}
	c->ops = SLOTS + c->steps;
	if (next_box) {
		/* Blocks can arrive until every thread has left its loop. */
		atomic_fetch_add(c->finished, 1);
		/* Yield while waiting: under a real-time policy (chrt -f) with more threads
		 * than CPUs, a spinning thread would keep the unfinished ones off the CPU. */
		while (atomic_load(c->finished) < c->threads) {
			free_chain(mailbox_take_all(&c->boxes[c->index]), &c->checksum);
			sched_yield();
		}
		free_chain(mailbox_take_all(&c->boxes[c->index]), &c->checksum);
	}
	for (int i = 0; i < SLOTS; i++) {
		c->checksum += block_peek(c->slots[i]);
		free(c->slots[i]);
	}
}

static void *churner_main(void *arg)
{
	churn(arg);
	return NULL;
}

struct wide_run {
	struct churner *churners;
	int threads;
};

static void wide_body(void *arg)
{
	struct wide_run *run = arg;
	if (run->threads == 1) {
		churn(&run->churners[0]);
		return;
	}
	for (int i = 0; i < run->threads; i++)
		thread_start(&run->churners[i].thread, churner_main, &run->churners[i]);
	for (int i = 0; i < run->threads; i++)
		thread_join(run->churners[i].thread);
}

static int wide(const struct config *cfg, struct result *res, int threads, uint64_t steps)
{
	struct churner *churners = calloc_lines((size_t)threads, sizeof(*churners));
	struct mailbox *boxes = NULL;
	atomic_int finished = 0;
	if (threads > 1)
		boxes = must(aligned_alloc(64, sizeof(*boxes) * (size_t)threads), "setup");
	for (int i = 0; i < threads; i++) {
		struct churner *c = &churners[i];
		c->index = i;
		c->threads = threads;
		c->steps = steps;
		rng_seed(&c->rng, cfg->seed, (uint64_t)i);
		c->slots = must(malloc(sizeof(void *) * SLOTS), "setup");
		c->boxes = boxes;
		c->finished = &finished;
		if (boxes)
			atomic_init(&boxes[i].head, NULL);
	}
	struct wide_run run = {churners, threads};
	measured(res, wide_body, &run);
	res->threads = threads;
	for (int i = 0; i < threads; i++) {
		res->ops += churners[i].ops;
		res->checksum += churners[i].checksum;
		free(churners[i].slots);
	}
	free(boxes);
	free(churners);
	return 0;
}

int workload_wide1(const struct config *cfg, struct result *res, long unused)
{
	(void)unused;
	return wide(cfg, res, 1, scaled(cfg, 6000000, 1000));
}

int workload_wide4x(const struct config *cfg, struct result *res, long unused)
{
	(void)unused;
	int threads = cfg->threads ? cfg->threads : WIDE4X_THREADS;
	return wide(cfg, res, threads, scaled(cfg, 1000000, 1000));
}
