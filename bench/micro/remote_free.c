/* SPDX-License-Identifier: MIT */
/*
 * remote_free.c - producer/consumer: objects allocated on one thread are freed on
 * another (a "remote" free for any allocator with thread or CPU caches).
 *
 * Threads pair up: even thread index = producer, odd = its consumer.  They share a
 * single-producer single-consumer ring.  Google Benchmark gives every thread the same
 * iteration count, so each consumer pops exactly what its producer pushed and the ring
 * is empty whenever the timed loop ends; the ring counters only ever grow, so no reset
 * is needed between runs.  One iteration = one object passed (malloc on one side,
 * free on the other).
 */
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "cases.h"

enum { RING_SLOTS = 256, MAX_PAIRS = 8, CACHE_LINE = 64 };

/* head is written only by the producer, tail only by the consumer. */
struct ring {
	_Alignas(CACHE_LINE) _Atomic uint64_t head;
	_Alignas(CACHE_LINE) _Atomic uint64_t tail;
	_Alignas(CACHE_LINE) void *slots[RING_SLOTS];
};

static struct ring rings[MAX_PAIRS];

/* Waiting side: spin briefly (the other thread is usually running), then give up the
 * CPU (it may share ours). */
static void wait_a_little(unsigned *spins)
{
	if (++*spins < 128) {
		__builtin_ia32_pause();
	} else {
		*spins = 0;
		sched_yield();
	}
}

static void produce(struct ring *r, size_t size)
{
	char *p = malloc(size);
	p[0] = 1;
	uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
	unsigned spins = 0;
	while (head - atomic_load_explicit(&r->tail, memory_order_acquire) == RING_SLOTS)
		wait_a_little(&spins);
	r->slots[head % RING_SLOTS] = p;
	atomic_store_explicit(&r->head, head + 1, memory_order_release);
}

static void consume(struct ring *r)
{
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	unsigned spins = 0;
	while (atomic_load_explicit(&r->head, memory_order_acquire) == tail)
		wait_a_little(&spins);
	void *p = r->slots[tail % RING_SLOTS];
	atomic_store_explicit(&r->tail, tail + 1, memory_order_release);
	free(p);
}

static void remote_free(gb_state *s, void *ctx)
{
	(void)ctx;
	size_t size = (size_t)gb_arg_value(s, 0);
	int index = gb_thread_index(s);
	struct ring *r = &rings[(index / 2) % MAX_PAIRS];
	int producer = index % 2 == 0;
	while (gb_keep_running_batch(s, 32)) {
		for (int i = 0; i < 32; i++) {
			if (producer)
				produce(r, size);
			else
				consume(r);
		}
	}
	/* Counted once per pair: the consumer's iterations are the objects passed. */
	gb_set_items_processed(s, producer ? 0 : gb_iterations(s));
	gb_set_counter(s, "pairs", producer ? 1 : 0, GB_COUNTER_PLAIN);
}

void register_remote_free(void)
{
	gb_bench *b = gb_register("remote_free", remote_free, NULL);
	gb_arg(b, 64);
	gb_arg(b, 1024);
	gb_arg(b, 16 * 1024);
	gb_threads(b, 2);
	gb_threads(b, 4);
	gb_use_real_time(b);
	gb_time_unit_ns(b);
}
