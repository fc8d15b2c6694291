/* SPDX-License-Identifier: MIT */
/*
 * cases.h - the microbenchmark cases and the helpers they share.
 *
 * Each file registers one family of cases with gbench (see ../gbench/gbench.h).
 * Every case calls malloc/free/realloc directly, so the binary measures whichever
 * allocator is loaded: glibc by default, any other by LD_PRELOAD.
 */
#ifndef VC_BENCH_MICRO_CASES_H
#define VC_BENCH_MICRO_CASES_H

#include <stddef.h>

#include "gbench.h"

void register_size_pairs(void);
void register_batch(void);
void register_realloc_growth(void);
void register_remote_free(void);
void register_crowded_threads(void);

/* Makes the compiler believe p is used, so no malloc/free pair is optimised away. */
static inline void escape(void *p)
{
	__asm__ volatile("" : : "g"(p) : "memory");
}

/* Writes one byte per page of [p, p + size) so the memory is really backed. */
static inline void touch(void *p, size_t size)
{
	char *c = p;
	for (size_t i = 0; i < size; i += 4096)
		c[i] = (char)i;
	if (size)
		c[size - 1] = 1;
}

#endif
