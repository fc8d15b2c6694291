/* SPDX-License-Identifier: MIT */
/*
 * rptest.c - mixed sizes in bursts, some freed elsewhere (after the pattern of
 * rpmalloc's benchmark).  Each of 4 threads keeps a ring of 16 batches of 64 blocks,
 * 16 B to 8 KiB (log-uniform by octave), the first and last 8 bytes written.  Every
 * step allocates a new batch in place of the oldest, which is freed - unless it is
 * the 8th batch in a row, which is posted whole to the next thread's mailbox and
 * freed by that thread: 1/8 of all frees are remote, in batch-sized runs.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "speed.h"

enum {
	RP_THREADS = 4,
	RING_BATCHES = 16,
	BATCH = 64,
	REMOTE_EVERY = 8,
	MIN_SIZE = 16,
	MAX_SIZE = 8192,
};

struct rp_thread {
	pthread_t thread;
	int index;
	int threads;
	uint64_t steps;
	struct rng rng;
	struct mailbox *boxes;
	atomic_int *finished;
	uint64_t ops;
	uint64_t checksum;
	void *ring[RING_BATCHES][BATCH];
} __attribute__((aligned(64)));

static void *rp_block(struct rng *rng)
{
	size_t size = size_octaves(rng, MIN_SIZE, MAX_SIZE);
	unsigned char *p = must(malloc(size), "malloc");
	memset(p, (int)size, 8);
	memset(p + size - 8, 1, 8);
	return p;
}

static void rp_release(struct rp_thread *t, void **batch, int remote)
{
	if (!remote) {
		for (int i = 0; i < BATCH; i++) {
			t->checksum += ((const volatile unsigned char *)batch[i])[8];
			free(batch[i]);
		}
		return;
	}
	for (int i = 0; i + 1 < BATCH; i++)
		block_link(batch[i], batch[i + 1]);
	mailbox_post_chain(&t->boxes[(t->index + 1) % t->threads], batch[0], batch[BATCH - 1]);
}

static void *rp_main(void *arg)
{
	struct rp_thread *t = arg;
	for (int b = 0; b < RING_BATCHES; b++)
		for (int i = 0; i < BATCH; i++)
			t->ring[b][i] = rp_block(&t->rng);
	for (uint64_t step = 0; step < t->steps; step++) {
		void **batch = t->ring[step % RING_BATCHES];
		rp_release(t, batch, step % REMOTE_EVERY == REMOTE_EVERY - 1);
		for (int i = 0; i < BATCH; i++)
			batch[i] = rp_block(&t->rng);
		free_chain(mailbox_take_all(&t->boxes[t->index]), &t->checksum);
	}
	t->ops = (RING_BATCHES + t->steps) * BATCH;
	atomic_fetch_add(t->finished, 1);
	/* Yield while waiting: under a real-time policy (chrt -f) with more threads
	 * than CPUs, a spinning thread would keep the unfinished ones off the CPU. */
	while (atomic_load(t->finished) < t->threads) {
		free_chain(mailbox_take_all(&t->boxes[t->index]), &t->checksum);
		sched_yield();
	}
	free_chain(mailbox_take_all(&t->boxes[t->index]), &t->checksum);
	for (int b = 0; b < RING_BATCHES; b++)
		rp_release(t, t->ring[b], 0);
	return NULL;
}

struct rp_run {
	struct rp_thread *threads;
	int count;
};

static void rp_body(void *arg)
{
	struct rp_run *run = arg;
	for (int i = 0; i < run->count; i++)
		thread_start(&run->threads[i].thread, rp_main, &run->threads[i]);
	for (int i = 0; i < run->count; i++)
		thread_join(run->threads[i].thread);
}

int workload_rptest(const struct config *cfg, struct result *res, long unused)
{
	(void)unused;
	struct rp_run run = {.count = cfg->threads ? cfg->threads : RP_THREADS};
	run.threads = calloc_lines((size_t)run.count, sizeof(*run.threads));
	struct mailbox *boxes = must(aligned_alloc(64, sizeof(*boxes) * (size_t)run.count), "setup");
	atomic_int finished = 0;
	for (int i = 0; i < run.count; i++) {
		struct rp_thread *t = &run.threads[i];
		t->index = i;
		t->threads = run.count;
		t->steps = scaled(cfg, 15000, 16);
		rng_seed(&t->rng, cfg->seed, (uint64_t)i);
		t->boxes = boxes;
		t->finished = &finished;
		atomic_init(&boxes[i].head, NULL);
	}
	measured(res, rp_body, &run);
	res->threads = run.count;
	for (int i = 0; i < run.count; i++) {
		res->ops += run.threads[i].ops;
		res->checksum += run.threads[i].checksum;
	}
	free(boxes);
	free(run.threads);
	return 0;
}
