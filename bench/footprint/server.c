/* SPDX-License-Identifier: MIT */
/*
 * server.c - a server-like producer/consumer workload.
 *
 * Producers (half the threads, default 8 threads in all) allocate request messages of
 * mixed sizes and queue them in batches; consumers take a batch, build and drop a
 * response for each request, and free the request: every request is freed by a
 * thread other than the one that allocated it (remote free).  The queue is a bounded
 * ring under one mutex, moved in batches so that the lock is not what is measured.
 * Basis "wall".
 */
#include <stdbool.h>
#include <stdlib.h>

#include "footprint.h"

enum { QUEUE_SLOTS = 4096, BATCH = 16 };

struct queue {
	pthread_mutex_t lock;
	pthread_cond_t not_empty, not_full;
	void *slots[QUEUE_SLOTS];
	uint64_t head, tail; /* under lock; head - tail = queued */
	uint64_t total;	     /* messages that will ever be queued */
	uint64_t taken;	     /* messages taken by consumers, under lock */
};

struct role {
	pthread_t thread;
	struct queue *q;
	int index;
	uint64_t seed;
	uint64_t messages; /* producers: how many to send */
	uint64_t ops;
};

static void *producer_main(void *arg)
{
	struct role *p = arg;
	struct queue *q = p->q;
	struct rng r;
	rng_seed(&r, p->seed, (uint64_t)p->index);
	void *batch[BATCH];
	note_cpu();
	for (uint64_t sent = 0; sent < p->messages;) {
		int n = p->messages - sent < BATCH ? (int)(p->messages - sent) : BATCH;
		for (int i = 0; i < n; i++)
			batch[i] = object_new(object_size(&r));
		pthread_mutex_lock(&q->lock);
		while (q->head - q->tail + (uint64_t)n > QUEUE_SLOTS)
			pthread_cond_wait(&q->not_full, &q->lock);
		for (int i = 0; i < n; i++)
			q->slots[q->head++ % QUEUE_SLOTS] = batch[i];
		pthread_cond_signal(&q->not_empty);
		pthread_mutex_unlock(&q->lock);
		sent += (uint64_t)n;
		p->ops += (uint64_t)n;
		note_cpu();
	}
	return NULL;
}

static void *consumer_main(void *arg)
{
	struct role *c = arg;
	struct queue *q = c->q;
	struct rng r;
	rng_seed(&r, c->seed, 1000 + (uint64_t)c->index);
	void *batch[BATCH];
	note_cpu();
	for (;;) {
		pthread_mutex_lock(&q->lock);
		while (q->head == q->tail && q->taken < q->total)
			pthread_cond_wait(&q->not_empty, &q->lock);
		if (q->taken == q->total) {
			pthread_cond_broadcast(&q->not_empty);
			pthread_mutex_unlock(&q->lock);
			return NULL;
		}
		int n = 0;
		while (n < BATCH && q->head != q->tail)
			batch[n++] = q->slots[q->tail++ % QUEUE_SLOTS];
		q->taken += (uint64_t)n;
		pthread_cond_broadcast(&q->not_full);
		if (q->taken == q->total)
			pthread_cond_broadcast(&q->not_empty);
		pthread_mutex_unlock(&q->lock);
		for (int i = 0; i < n; i++) {
			size_t size = object_size(&r);
			char *response = object_new(size);
			response[size - 1] ^= ((char *)batch[i])[0];
			object_free(response);
			object_free(batch[i]);
		}
		c->ops += (uint64_t)n; /* responses; requests are counted by producers */
		note_cpu();
	}
}

int workload_server(const struct config *cfg, struct outcome *out)
{
	int threads = cfg->threads ? cfg->threads : 8;
	if (threads < 2)
		threads = 2;
	int producers = threads / 2; /* the other threads consume */
	uint64_t total = (uint64_t)(200000 * cfg->scale);
	if (total < (uint64_t)producers * BATCH)
		total = (uint64_t)producers * BATCH;

	struct queue *q = calloc(1, sizeof(*q));
	struct role *roles = calloc((size_t)threads, sizeof(*roles));
	if (!q || !roles)
		return -1;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->not_empty, NULL);
	pthread_cond_init(&q->not_full, NULL);
	q->total = total;

	double start = now_seconds();
	for (int i = 0; i < threads; i++) {
		struct role *role = &roles[i];
		role->q = q;
		role->index = i;
		role->seed = cfg->seed;
		bool producer = i < producers;
		if (producer)
			role->messages = total / (uint64_t)producers +
					 ((uint64_t)i < total % (uint64_t)producers ? 1 : 0);
		thread_start(&role->thread, producer ? producer_main : consumer_main, role);
	}
	uint64_t ops = 0;
	for (int i = 0; i < threads; i++) {
		pthread_join(roles[i].thread, NULL);
		ops += roles[i].ops;
	}
	double seconds = now_seconds() - start;
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->not_empty);
	pthread_cond_destroy(&q->not_full);
	free(roles);
	free(q);
	outcome_wall(out, threads, ops, seconds);
	return 0;
}
