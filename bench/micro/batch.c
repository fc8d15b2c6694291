/* SPDX-License-Identifier: MIT */
/*
 * batch.c - allocate a batch of objects, then free them all (in allocation order).
 *
 * Unlike a malloc/free pair, a batch larger than the thread/CPU cache forces the
 * allocator through its refill and flush paths.  One iteration = one object
 * allocated and freed; the argument is the object size, the batch is fixed.
 */
#include <stdlib.h>

#include "cases.h"

enum { BATCH_OBJECTS = 4096 };

static void batch_alloc_free(gb_state *s, void *ctx)
{
	(void)ctx;
	size_t size = (size_t)gb_arg_value(s, 0);
	void **objects = malloc(BATCH_OBJECTS * sizeof(*objects));
	if (!objects) {
		gb_skip_with_error(s, "out of memory");
		return;
	}
	while (gb_keep_running_batch(s, BATCH_OBJECTS)) {
		for (int i = 0; i < BATCH_OBJECTS; i++) {
			char *p = malloc(size);
			p[0] = (char)i;
			objects[i] = p;
		}
		escape(objects);
		for (int i = 0; i < BATCH_OBJECTS; i++)
			free(objects[i]);
	}
	free(objects);
	gb_set_items_processed(s, gb_iterations(s));
}

void register_batch(void)
{
	gb_bench *b = gb_register("batch_alloc_then_free", batch_alloc_free, NULL);
	gb_arg(b, 16);
	gb_arg(b, 64);
	gb_arg(b, 256);
	gb_arg(b, 1024);
	gb_arg(b, 4096);
	gb_time_unit_ns(b);
}
