/* SPDX-License-Identifier: MIT */
/*
 * crowded_threads.c - many threads squeezed onto few CPUs.
 *
 * Each thread pins itself to one of the first CROWD_CPUS CPUs it is allowed on (so
 * dozens of threads share one or two CPUs, as in an oversubscribed container), then
 * churns a small private working set of mixed sizes: replace one live object per
 * iteration.  The thread's affinity is restored afterwards, because Google Benchmark
 * runs thread 0 on the main thread.  One iteration = one free + one malloc.
 */
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>

#include "cases.h"

enum { CROWD_CPUS = 2, LIVE_OBJECTS = 64 };

/* Pins the caller to the (index % crowd)-th CPU of its current mask; returns crowd, the
 * number of CPUs the threads share. */
static int pin_into_crowd(int index, const cpu_set_t *allowed)
{
	int count = CPU_COUNT(allowed);
	int crowd = count < CROWD_CPUS ? count : CROWD_CPUS;
	int wanted = index % crowd;
	for (int cpu = 0, seen = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, allowed))
			continue;
		if (seen++ == wanted) {
			cpu_set_t one;
			CPU_ZERO(&one);
			CPU_SET(cpu, &one);
			sched_setaffinity(0, sizeof(one), &one);
			break;
		}
	}
	return crowd;
}

static size_t size_for(uint32_t random)
{
	/* Mostly small objects, some medium, a few pages: 16 B .. 8 KiB. */
	static const size_t sizes[] = {16, 32, 48, 64, 96, 128, 256, 512, 1024, 8192};
	return sizes[random % (sizeof(sizes) / sizeof(sizes[0]))];
}

static void crowded_threads(gb_state *s, void *ctx)
{
	(void)ctx;
	cpu_set_t allowed;
	sched_getaffinity(0, sizeof(allowed), &allowed);
	int crowd = pin_into_crowd(gb_thread_index(s), &allowed);

	void *live[LIVE_OBJECTS];
	uint32_t random = 2463534242u + (uint32_t)gb_thread_index(s);
	for (int i = 0; i < LIVE_OBJECTS; i++)
		live[i] = malloc(size_for((uint32_t)i));
	while (gb_keep_running_batch(s, LIVE_OBJECTS)) {
		for (int i = 0; i < LIVE_OBJECTS; i++) {
			random ^= random << 13;
			random ^= random >> 17;
			random ^= random << 5;
			free(live[i]);
			char *p = malloc(size_for(random));
			p[0] = 1;
			live[i] = p;
		}
	}
	for (int i = 0; i < LIVE_OBJECTS; i++)
		free(live[i]);
	gb_set_items_processed(s, gb_iterations(s));
	gb_set_counter(s, "cpus", crowd, GB_COUNTER_AVG_THREADS);
	sched_setaffinity(0, sizeof(allowed), &allowed);
}

void register_crowded_threads(void)
{
	gb_bench *b = gb_register("crowded_threads", crowded_threads, NULL);
	gb_threads(b, 16);
	gb_threads(b, 64);
	gb_threads(b, 256);
	gb_use_real_time(b);
	gb_time_unit_ns(b);
}
