/* SPDX-License-Identifier: MIT */
/*
 * objects.c - the building blocks every workload is made of: a small random number
 * generator, the object size mix, objects and the count of their live bytes, bursts
 * and working sets, timing and thread start.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "footprint.h"

void rng_seed(struct rng *r, uint64_t seed, uint64_t stream)
{
	/* splitmix-style scrambling so that nearby seeds give unrelated streams */
	uint64_t z = seed + 0x9e3779b97f4a7c15ull * (stream + 1);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	r->state = z ? z : 1;
}

uint64_t rng_next(struct rng *r)
{
	/* xorshift64* */
	uint64_t x = r->state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	r->state = x;
	return x * 0x2545f4914f6cdd1dull;
}

uint32_t rng_below(struct rng *r, uint32_t bound)
{
	return (uint32_t)(((rng_next(r) >> 32) * bound) >> 32);
}

size_t size_between(struct rng *r, size_t low, size_t high)
{
	return low + rng_below(r, (uint32_t)(high - low + 1));
}

size_t object_size(struct rng *r)
{
	/* 60% 16-128 B, 25% 129 B-1 KiB, 13% 1-4 KiB, 2% 4-32 KiB */
	uint32_t pick = rng_below(r, 100);
	if (pick < 60)
		return size_between(r, 16, 128);
	if (pick < 85)
		return size_between(r, 129, 1024);
	if (pick < 98)
		return size_between(r, 1025, 4096);
	return size_between(r, 4097, 32768);
}

/*
 * Live bytes: the sum of the requested sizes of the objects the workload holds,
 * counted by the workload itself (object_new adds, object_free subtracts), so that the
 * figure does not depend on what the allocator reports.  One counter for every thread:
 * its peak is the true maximum of the sum at any instant, which per-thread counts
 * could not give (a remote free lowers the sum, not the freeing thread's own count).
 * The peak lives on the counter's cache line, so updating it costs no further miss;
 * it is raised only when the sum passes it, which is rare once the peak is reached.
 */
static struct {
	_Alignas(64) atomic_int_fast64_t bytes;
	atomic_int_fast64_t peak;
} live;

static void live_add(int64_t bytes)
{
	int_fast64_t now =
	    atomic_fetch_add_explicit(&live.bytes, bytes, memory_order_relaxed) + bytes;
	int_fast64_t peak = atomic_load_explicit(&live.peak, memory_order_relaxed);
	while (now > peak && !atomic_compare_exchange_weak_explicit(
				 &live.peak, &peak, now, memory_order_relaxed, memory_order_relaxed))
		;
}

int64_t live_bytes_now(void)
{
	return atomic_load_explicit(&live.bytes, memory_order_relaxed);
}

int64_t live_bytes_peak(void)
{
	return atomic_load_explicit(&live.peak, memory_order_relaxed);
}

enum { PAGE = 4096 };

void *object_new(size_t size)
{
	if (size < sizeof(uint64_t)) {
		fprintf(stderr, "footprint: object of %zu bytes cannot hold its size\n", size);
		exit(2);
	}
	char *p = malloc(size);
	if (!p) {
		fprintf(stderr, "footprint: out of memory (%zu bytes)\n", size);
		exit(2);
	}
	uint64_t header = size;
	memcpy(p, &header, sizeof(header));
	/* One byte in every page and the last byte: all of the object is resident, so
	 * that RSS can be compared with the live bytes. */
	for (size_t at = PAGE; at < size; at += PAGE)
		p[at] = (char)size;
	p[size - 1] = (char)size;
	live_add((int64_t)size);
	return p;
}

void object_free(void *object)
{
	if (!object)
		return;
	uint64_t size;
	memcpy(&size, object, sizeof(size));
	live_add(-(int64_t)size);
	free(object);
}

uint64_t burst(struct rng *r, void **scratch, int count)
{
	for (int i = 0; i < count; i++)
		scratch[i] = object_new(object_size(r));
	/* free in a shuffled order: Fisher-Yates over the remaining objects */
	for (int left = count; left > 0; left--) {
		int pick = (int)rng_below(r, (uint32_t)left);
		object_free(scratch[pick]);
		scratch[pick] = scratch[left - 1];
	}
	return (uint64_t)count;
}

uint64_t working_set_fill(struct rng *r, void **slots, int count)
{
	for (int i = 0; i < count; i++)
		slots[i] = object_new(object_size(r));
	return (uint64_t)count;
}

uint64_t working_set_turn(struct rng *r, void **slots, int count, int replace)
{
	for (int i = 0; i < replace; i++) {
		int pick = (int)rng_below(r, (uint32_t)count);
		object_free(slots[pick]);
		slots[pick] = object_new(object_size(r));
	}
	return (uint64_t)replace;
}

void working_set_free(void **slots, int count)
{
	for (int i = 0; i < count; i++) {
		object_free(slots[i]);
		slots[i] = NULL;
	}
}

void outcome_wall(struct outcome *out, int threads, uint64_t ops, double seconds)
{
	out->threads = threads;
	out->ops = ops;
	out->seconds = seconds;
	out->ops_per_sec = seconds > 0 ? (double)ops / seconds : 0;
	out->throughput_basis = "wall";
}

double now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void sleep_us(long microseconds)
{
	struct timespec ts = {microseconds / 1000000, (microseconds % 1000000) * 1000};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

void thread_start(pthread_t *thread, void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	/* Small stacks: hundreds of threads must not dwarf the heap in RSS. */
	pthread_attr_setstacksize(&attr, 256 * 1024);
	int err = pthread_create(thread, &attr, fn, arg);
	pthread_attr_destroy(&attr);
	if (err) {
		fprintf(stderr, "footprint: pthread_create: %s\n", strerror(err));
		exit(2);
	}
}

/* One bit per CPU id the workload threads were seen on. */
enum { CPU_BITS = 4096 };
static atomic_uint_fast64_t cpu_seen[CPU_BITS / 64];

void note_cpu(void)
{
	int cpu = sched_getcpu();
	if (cpu >= 0 && cpu < CPU_BITS)
		atomic_fetch_or_explicit(&cpu_seen[cpu / 64], (uint_fast64_t)1 << (cpu % 64),
					 memory_order_relaxed);
}

int cpus_visited(void)
{
	int count = 0;
	for (int i = 0; i < CPU_BITS / 64; i++)
		count += __builtin_popcountll(atomic_load(&cpu_seen[i]));
	return count;
}
