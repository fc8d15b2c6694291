/* SPDX-License-Identifier: MIT */
/*
 * handoff.c - blocks allocated on one thread and freed on another.
 *
 * xmalloc (after the xmalloc-test pattern): 2 producer threads allocate batches of
 * 128 blocks of 16 B-1 KiB (log-uniform by octave) and queue them; 2 consumer threads
 * take whole batches and free every block.  At most 16 batches wait in the queue
 * (a mutex and two condition variables), so producers cannot run away with memory.
 * Every free is remote, in bulk.
 *
 * prodcons: a producer sends messages of 32 B-1 KiB (uniform) one by one through a
 * single-producer single-consumer ring of 1024 slots; the consumer reads each message
 * (its length and last byte) and frees it.  Remote frees, one at a time, while the
 * producer keeps allocating: a work queue or message-passing program.  --threads sets
 * the number of producer/consumer pairs (default 1).
 */
#include <sched.h>
#include <stdlib.h>

#include "speed.h"

/* ---- xmalloc ---- */

enum { XM_PRODUCERS = 2, XM_CONSUMERS = 2, XM_BATCH = 128, XM_QUEUE = 16 };

struct xm_run {
	pthread_mutex_t lock;
	pthread_cond_t not_full, not_empty;
	void *queue[XM_QUEUE]; /* chains of XM_BATCH blocks; ring under lock */
	unsigned head, count;
	int producers_left; /* under lock; consumers stop when 0 and the queue is empty */
	uint64_t batches_per_producer;
	uint64_t seed;
	atomic_uint_fast64_t checksum;
	int producer_index; /* under lock: hands out rng streams */
};

static void *xm_producer(void *arg)
{
	struct xm_run *run = arg;
	struct rng rng;
	pthread_mutex_lock(&run->lock);
	rng_seed(&rng, run->seed, (uint64_t)run->producer_index++);
	pthread_mutex_unlock(&run->lock);
	for (uint64_t b = 0; b < run->batches_per_producer; b++) {
		void *first = NULL;
		for (int i = 0; i < XM_BATCH; i++) {
			void *block = block_new(size_octaves(&rng, 16, 1024));
			block_link(block, first);
			first = block;
		}
		pthread_mutex_lock(&run->lock);
		while (run->count == XM_QUEUE)
			pthread_cond_wait(&run->not_full, &run->lock);
		run->queue[(run->head + run->count++) % XM_QUEUE] = first;
		pthread_cond_signal(&run->not_empty);
		pthread_mutex_unlock(&run->lock);
	}
	pthread_mutex_lock(&run->lock);
	if (--run->producers_left == 0)
		pthread_cond_broadcast(&run->not_empty);
	pthread_mutex_unlock(&run->lock);
	return NULL;
}

static void *xm_consumer(void *arg)
{
	struct xm_run *run = arg;
	uint64_t checksum = 0;
	for (;;) {
		pthread_mutex_lock(&run->lock);
		while (run->count == 0 && run->producers_left > 0)
			pthread_cond_wait(&run->not_empty, &run->lock);
		if (run->count == 0) {
			pthread_mutex_unlock(&run->lock);
			break;
		}
		void *first = run->queue[run->head];
		run->head = (run->head + 1) % XM_QUEUE;
		run->count--;
		pthread_cond_signal(&run->not_full);
		pthread_mutex_unlock(&run->lock);
		free_chain(first, &checksum);
	}
	atomic_fetch_add(&run->checksum, checksum);
	return NULL;
}

static void xm_body(void *arg)
{
	struct xm_run *run = arg;
	pthread_t producers[XM_PRODUCERS], consumers[XM_CONSUMERS];
	for (int i = 0; i < XM_CONSUMERS; i++)
		thread_start(&consumers[i], xm_consumer, run);
	for (int i = 0; i < XM_PRODUCERS; i++)
		thread_start(&producers[i], xm_producer, run);
	for (int i = 0; i < XM_PRODUCERS; i++)
		thread_join(producers[i]);
	for (int i = 0; i < XM_CONSUMERS; i++)
		thread_join(consumers[i]);
}

int workload_xmalloc(const struct config *cfg, struct result *res, long unused)
{
	(void)unused;
	struct xm_run run = {.producers_left = XM_PRODUCERS, .seed = cfg->seed};
	pthread_mutex_init(&run.lock, NULL);
	pthread_cond_init(&run.not_full, NULL);
	pthread_cond_init(&run.not_empty, NULL);
	atomic_init(&run.checksum, 0);
	run.batches_per_producer = scaled(cfg, 8000, 4);
	measured(res, xm_body, &run);
	res->ops = run.batches_per_producer * XM_BATCH * XM_PRODUCERS;
	res->threads = XM_PRODUCERS + XM_CONSUMERS;
	res->checksum = atomic_load(&run.checksum);
	pthread_cond_destroy(&run.not_empty);
	pthread_cond_destroy(&run.not_full);
	pthread_mutex_destroy(&run.lock);
	return 0;
}

/* ---- prodcons ---- */

enum { RING = 1024, SPINS_BEFORE_YIELD = 64 };

/* A message: its length up front, the payload after, the last byte written. */
struct message {
	uint32_t length;
	uint32_t sequence;
};

/* Single producer, single consumer.  `tail` is written by the producer only, `head`
 * by the consumer only; slot i is full when head <= i < tail. */
struct ring {
	_Alignas(64) atomic_uint_fast64_t tail;
	_Alignas(64) atomic_uint_fast64_t head;
	_Alignas(64) struct message *slots[RING];
};

struct pair {
	pthread_t producer, consumer;
	struct ring *ring;
	uint64_t messages;
	uint64_t seed;
	int index;
	uint64_t checksum;
};

/* One spin step: x86 `pause`, aarch64 `yield`, elsewhere a compiler barrier. */
static inline void spin_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield" ::: "memory");
#else
	__asm__ volatile("" ::: "memory");
#endif
}

static void wait_a_little(int *spins)
{
	if (++*spins < SPINS_BEFORE_YIELD)
		spin_pause();
	else
		sched_yield();
}

static void *pc_producer(void *arg)
{
	struct pair *p = arg;
	struct ring *ring = p->ring;
	struct rng rng;
	rng_seed(&rng, p->seed, (uint64_t)p->index);
	for (uint64_t n = 0; n < p->messages; n++) {
		size_t size = size_uniform(&rng, 32, 1024);
		struct message *m = must(malloc(size), "malloc");
		m->length = (uint32_t)size;
		m->sequence = (uint32_t)n;
		((unsigned char *)m)[size - 1] = (unsigned char)n;
		int spins = 0;
		while (n - atomic_load_explicit(&ring->head, memory_order_acquire) >= RING)
			wait_a_little(&spins);
		ring->slots[n % RING] = m;
		atomic_store_explicit(&ring->tail, n + 1, memory_order_release);
	}
	return NULL;
}

static void *pc_consumer(void *arg)
{
	struct pair *p = arg;
	struct ring *ring = p->ring;
	for (uint64_t n = 0; n < p->messages; n++) {
		int spins = 0;
		while (atomic_load_explicit(&ring->tail, memory_order_acquire) <= n)
			wait_a_little(&spins);
		struct message *m = ring->slots[n % RING];
		atomic_store_explicit(&ring->head, n + 1, memory_order_release);
		p->checksum += m->sequence + ((unsigned char *)m)[m->length - 1];
		free(m);
	}
	return NULL;
}

struct pc_run {
	struct pair *pairs;
	int count;
};

static void pc_body(void *arg)
{
	struct pc_run *run = arg;
	for (int i = 0; i < run->count; i++) {
		thread_start(&run->pairs[i].consumer, pc_consumer, &run->pairs[i]);
		thread_start(&run->pairs[i].producer, pc_producer, &run->pairs[i]);
	}
	for (int i = 0; i < run->count; i++) {
		thread_join(run->pairs[i].producer);
		thread_join(run->pairs[i].consumer);
	}
}

int workload_prodcons(const struct config *cfg, struct result *res, long unused)
{
	(void)unused;
	struct pc_run run = {.count = cfg->threads ? cfg->threads : 1};
	run.pairs = must(calloc((size_t)run.count, sizeof(*run.pairs)), "setup");
	for (int i = 0; i < run.count; i++) {
		struct pair *p = &run.pairs[i];
		p->ring = must(aligned_alloc(64, sizeof(struct ring)), "setup");
		atomic_init(&p->ring->tail, 0);
		atomic_init(&p->ring->head, 0);
		p->messages = scaled(cfg, 3000000, 100);
		p->seed = cfg->seed;
		p->index = i;
	}
	measured(res, pc_body, &run);
	res->threads = 2 * run.count;
	for (int i = 0; i < run.count; i++) {
		res->ops += run.pairs[i].messages;
		res->checksum += run.pairs[i].checksum;
		free(run.pairs[i].ring);
	}
	free(run.pairs);
	return 0;
}
