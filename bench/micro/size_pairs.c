/* SPDX-License-Identifier: MIT */
/*
 * size_pairs.c - malloc immediately followed by free, one size class at a time.
 *
 * The fastest path of any allocator: the object comes from and returns to the
 * calling thread's (or CPU's) cache.  One iteration = one malloc + one free.
 * The first byte is written so that allocators which hand out fresh pages pay for
 * them as a real program would.
 */
#include <stdlib.h>

#include "cases.h"

static const int64_t sizes[] = {16, 64, 256, 1024, 4096, 32 * 1024, 256 * 1024};

static void size_pair(gb_state *s, void *ctx)
{
	(void)ctx;
	size_t size = (size_t)gb_arg_value(s, 0);
	while (gb_keep_running_batch(s, 16)) {
		for (int i = 0; i < 16; i++) {
			char *p = malloc(size);
			p[0] = (char)i;
			escape(p);
			free(p);
		}
	}
	gb_set_items_processed(s, gb_iterations(s));
}

void register_size_pairs(void)
{
	gb_bench *single = gb_register("malloc_free_pair", size_pair, NULL);
	gb_bench *pair = gb_register("malloc_free_pair_2threads", size_pair, NULL);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		gb_arg(single, sizes[i]);
		gb_arg(pair, sizes[i]);
	}
	gb_time_unit_ns(single);
	gb_threads(pair, 2);
	gb_use_real_time(pair);
	gb_time_unit_ns(pair);
}
