/* huge_decay (vcmalloc only, run with VCMALLOC_DECAY_MS=50): cached huge mappings
 * go back to the OS once idle for the decay time, without vcmalloc_release_free_memory.
 *   1. 8 MiB and 24 MiB blocks are freed: their 32 MiB stay mapped (cached);
 *      after a sleep of several decay periods, a later 2 MiB allocation finds them
 *      idle and unmaps them: the cached bytes fall by at least 24 MiB;
 *   2. a 12 MiB block is freed, then after the sleep vcmalloc_reclaim(0) alone
 *      unmaps it;
 *   3. a block kept busy (freed and allocated again every millisecond) stays
 *      cached across many decay periods: its address does not change.
 * "Cached" is mapped_bytes - allocated_bytes above its baseline (taken after
 * vcmalloc_release_free_memory), which leaves the segments out. */
#include "vctest.h"

#include <string.h>
#include <time.h>
#include <unistd.h>

#define MIB ((size_t)1 << 20)

static uint64_t baseline_gap;

static uint64_t cached_bytes(void)
{
	struct vcmalloc_stats s;
	vct_stats(&s);
	uint64_t gap = s.mapped_bytes - s.allocated_bytes;
	return gap > baseline_gap ? gap - baseline_gap : 0;
}

static void take_baseline(void)
{
	vct_vcmalloc()->release_free_memory();
	struct vcmalloc_stats s;
	vct_stats(&s);
	baseline_gap = s.mapped_bytes - s.allocated_bytes;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0)
		;
}

static char *dirty_block(size_t n)
{
	char *p = malloc(n);
	VCT_CHECK(p != NULL, "malloc(%zu)", n);
	memset(p, 0x3c, n);
	return p;
}

int main(void)
{
	vct_start("huge_decay", 60);
	VCT_CHECK(vct_under_vcmalloc(), "huge_decay needs vcmalloc");
	char decay[32];
	const char *env = getenv("VCMALLOC_DECAY_MS");
	VCT_CHECK(env && atoi(env) > 0 && atoi(env) <= 200,
		  "run with VCMALLOC_DECAY_MS between 1 and 200 (it is %s)", env ? env : "unset");
	snprintf(decay, sizeof decay, "%s", env);
	unsigned wait_ms = 6 * (unsigned)atoi(decay) + 100;

	/* 1: a later allocation unmaps what has been idle. */
	take_baseline();
	char *a = dirty_block(8 * MIB), *b = dirty_block(24 * MIB);
	free(a);
	free(b);
	uint64_t before = cached_bytes();
	VCT_CHECK(before >= 32 * MIB, "only %llu bytes cached after freeing 32 MiB",
		  (unsigned long long)before);
	sleep_ms(wait_ms);
	char *c = malloc(2 * MIB);
	VCT_CHECK(c != NULL, "malloc(2 MiB)");
	uint64_t after = cached_bytes();
	fprintf(stderr, "huge_decay: cached %llu KiB before the sleep, %llu KiB after it and a "
		"2 MiB malloc\n", (unsigned long long)(before >> 10),
		(unsigned long long)(after >> 10));
	VCT_CHECK(after + 24 * MIB <= before,
		  "idle cached mappings were not unmapped by a later allocation: %llu -> %llu",
		  (unsigned long long)before, (unsigned long long)after);
	free(c);

	/* 2: vcmalloc_reclaim(0) alone. */
	take_baseline();
	free(dirty_block(12 * MIB));
	before = cached_bytes();
	VCT_CHECK(before >= 12 * MIB, "only %llu bytes cached after freeing 12 MiB",
		  (unsigned long long)before);
	sleep_ms(wait_ms);
	vct_vcmalloc()->reclaim(0);
	after = cached_bytes();
	VCT_CHECK(after + 12 * MIB <= before,
		  "vcmalloc_reclaim(0) did not unmap an idle cached mapping: %llu -> %llu",
		  (unsigned long long)before, (unsigned long long)after);

	/* 3: a mapping in use is not decayed. */
	take_baseline();
	char *first = dirty_block(8 * MIB);
	free(first);
	for (unsigned ms = 0; ms < wait_ms; ms++) {
		char *p = malloc(8 * MIB);
		VCT_CHECK(p == first, "a busy cached mapping was unmapped after %u ms (block at "
			  "%p, was %p)", ms, (void *)p, (void *)first);
		p[ms * 4096] = 1;
		free(p);
		sleep_ms(1);
	}
	printf("huge_decay: ok\n");
	return 0;
}
