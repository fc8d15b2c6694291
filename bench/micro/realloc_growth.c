/* SPDX-License-Identifier: MIT */
/*
 * realloc_growth.c - a buffer grown by realloc from 16 bytes to the argument size,
 * by about 1.5x each step (the pattern of a growing string or vector), then freed.
 *
 * The last byte of each new size is written, so in-place growth and copying growth
 * both touch what they return.  One iteration = one realloc call.
 */
#include <stdlib.h>

#include "cases.h"

static int steps_to(size_t final)
{
	int steps = 0;
	for (size_t size = 16; size < final; size += size / 2 + 16)
		steps++;
	return steps;
}

static void realloc_growth(gb_state *s, void *ctx)
{
	(void)ctx;
	size_t final = (size_t)gb_arg_value(s, 0);
	int steps = steps_to(final);
	while (gb_keep_running_batch(s, steps)) {
		size_t size = 16;
		char *p = malloc(size);
		while (size < final) {
			size += size / 2 + 16;
			char *grown = realloc(p, size);
			if (!grown) {
				free(p);
				gb_skip_with_error(s, "out of memory");
				return;
			}
			p = grown;
			p[size - 1] = 1;
		}
		escape(p);
		free(p);
	}
	gb_set_items_processed(s, gb_iterations(s));
}

void register_realloc_growth(void)
{
	gb_bench *b = gb_register("realloc_growth", realloc_growth, NULL);
	gb_arg(b, 4096);
	gb_arg(b, 64 * 1024);
	gb_arg(b, 1024 * 1024);
	gb_time_unit_ns(b);
}
