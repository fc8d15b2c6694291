/* tests/races/races.h - blocks that check themselves, shared by the race programs.
 *
 * A block starts with a header {size, seed, check} and continues with the pattern
 * vct_fill(seed) over the rest of its size; check = size ^ seed ^ CONSTANT catches
 * a header overwritten as a whole. A block is made by one of malloc, calloc
 * (checked zero first), aligned_alloc, posix_memalign or realloc (prefix checked),
 * and checked completely (blocks up to 64 KiB) or in windows before it is freed.
 * Two live blocks that overlap, a block handed out twice, an object written by the
 * allocator while it is live (a free-list link, a free tag) all show as a damaged
 * header or pattern, reported with the block's address and the first bad byte.
 *
 * The exchange table moves blocks between threads: rc_swap puts a block in a random
 * entry and checks and frees what was there, so most frees happen on another thread
 * (and another vCPU) than the allocation.
 */
#ifndef RACES_H
#define RACES_H

#include "vctest.h"

#include <stdatomic.h>

enum { RC_TABLE = 512 };

struct rc_header {
	uint64_t size;
	uint64_t seed;
	uint64_t check;
};

extern void *_Atomic rc_table[RC_TABLE];

/* A new checked block of a random size up to max_size (at least a header). */
void *rc_make(uint64_t *rng, size_t max_size);
/* Check block p (fails the test, naming `where`, when damaged). */
void rc_check(const void *p, const char *where);
/* Check and free. */
void rc_release(void *p, const char *where);
/* Grow or shrink p with realloc; the kept prefix is checked, the rest refilled. */
void *rc_resize(void *p, uint64_t *rng, size_t max_size);
/* Put p into a random table entry; check and free the block it replaces. */
void rc_swap(uint64_t *rng, void *p);
/* Check and free every block in the table. Returns how many there were. */
size_t rc_drain_table(const char *where);

/* One thread's share of work: `ops` random operations over `nslots` private slots
 * (allocate, check, free, resize, swap through the table); frees what is left. */
void rc_work(uint64_t seed, unsigned ops, size_t max_size);

/* Number of CPUs this process may run on, and the i-th of them. */
int rc_cpu_count(void);
int rc_cpu_at(int i);

/* allocated_bytes of vcmalloc now (after a forced reclaim, so nothing is cached
 * in vCPU caches when it is read). Also checks the index mode against
 * RACES_EXPECT_INDEX when that is set. */
uint64_t rc_allocated_after_reclaim(void);

#endif
