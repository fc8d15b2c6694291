/* SPDX-License-Identifier: MIT */
/*
 * realloc.c - string builders that grow by realloc at every append, as naive code
 * (and many parsers) do.  4 strings grow side by side, so the neighbour of a growing
 * block is often another live string; each append adds 8-128 bytes (uniform) and
 * writes them.  A string that reaches its target length - log-uniform by octave from
 * 1 KiB to 1 MiB - is freed and a new empty one begun.  ops counts realloc calls.
 */
#include <stdlib.h>
#include <string.h>

#include "speed.h"

enum { STRINGS = 4, MIN_STEP = 8, MAX_STEP = 128 };
#define MIN_TARGET ((size_t)1 << 10)
#define MAX_TARGET ((size_t)1 << 20)

struct growing {
	char *data;
	size_t length;
	size_t target;
};

struct realloc_run {
	struct rng rng;
	uint64_t appends;
	uint64_t checksum;
};

static void realloc_body(void *arg)
{
	struct realloc_run *run = arg;
	struct growing strings[STRINGS] = {{0}};
	for (int i = 0; i < STRINGS; i++)
		strings[i].target = size_octaves(&run->rng, MIN_TARGET, MAX_TARGET);
	for (uint64_t n = 0; n < run->appends; n++) {
		struct growing *s = &strings[n % STRINGS];
		size_t step = size_uniform(&run->rng, MIN_STEP, MAX_STEP);
		s->data = must(realloc(s->data, s->length + step), "realloc");
		memset(s->data + s->length, 'a' + (int)(n % 26), step);
		s->length += step;
		if (s->length >= s->target) {
			run->checksum += (unsigned char)s->data[s->length / 2];
			free(s->data);
			s->data = NULL;
			s->length = 0;
			s->target = size_octaves(&run->rng, MIN_TARGET, MAX_TARGET);
		}
	}
	for (int i = 0; i < STRINGS; i++)
		free(strings[i].data);
}

int workload_realloc(const struct config *cfg, struct result *res, long unused)
{
	(void)unused;
	struct realloc_run run = {.appends = scaled(cfg, 3000000, 100)};
	rng_seed(&run.rng, cfg->seed, 0);
	measured(res, realloc_body, &run);
	res->ops = run.appends;
	res->threads = 1;
	res->checksum = run.checksum;
	return 0;
}
