/* SPDX-License-Identifier: MIT */
/*
 * big.c - large blocks, as in image, column or buffer processing: 3 live blocks, a
 * random one replaced per step by a block of uniform random size, then one byte
 * written in every 4 KiB page of it.  bigblocks draws 5-25 MiB, bigblocks64 1-64 MiB.
 *
 * What it shows is how the allocator gets and returns big memory: a fresh mapping
 * costs a page fault per page written (and zeroing), a block kept or reused costs
 * none; returning memory to the kernel after every free is expensive here.
 */
#include <stdlib.h>

#include "speed.h"

enum { LIVE = 3, PAGE = 4096 };
#define MIB ((size_t)1 << 20)

struct big_run {
	struct rng rng;
	size_t min_size, max_size;
	uint64_t steps;
	uint64_t checksum;
};

static void *big_block(struct big_run *run)
{
	size_t size = size_uniform(&run->rng, run->min_size, run->max_size);
	unsigned char *p = must(malloc(size), "malloc");
	for (size_t off = 0; off < size; off += PAGE)
		p[off] = (unsigned char)off;
	p[size - 1] = 1;
	return p;
}

static void big_body(void *arg)
{
	struct big_run *run = arg;
	void *live[LIVE];
	for (int i = 0; i < LIVE; i++)
		live[i] = big_block(run);
	for (uint64_t step = 0; step < run->steps; step++) {
		uint64_t pick = rng_below(&run->rng, LIVE);
		run->checksum += block_peek(live[pick]);
		free(live[pick]);
		live[pick] = big_block(run);
	}
	for (int i = 0; i < LIVE; i++)
		free(live[i]);
}

int workload_bigblocks(const struct config *cfg, struct result *res, long max_mib)
{
	struct big_run run = {.steps = scaled(cfg, max_mib > 25 ? 12 : 30, 2)};
	rng_seed(&run.rng, cfg->seed, 0);
	run.min_size = (max_mib > 25 ? 1 : 5) * MIB;
	run.max_size = (size_t)max_mib * MIB;
	measured(res, big_body, &run);
	res->ops = LIVE + run.steps;
	res->threads = 1;
	res->checksum = run.checksum;
	return 0;
}
