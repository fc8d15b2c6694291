/* SPDX-License-Identifier: MIT */
/*
 * common.c - what the workloads share: random numbers and size distributions,
 * blocks, threads and the lock-free mailbox.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "speed.h"

#define GOLDEN_GAMMA 0x9e3779b97f4a7c15ULL

void rng_seed(struct rng *r, uint64_t seed, uint64_t stream)
{
	r->state = seed * GOLDEN_GAMMA ^ (stream + 1) * 0xbf58476d1ce4e5b9ULL;
}

uint64_t rng_next(struct rng *r)
{
	uint64_t z = (r->state += GOLDEN_GAMMA);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

uint64_t rng_below(struct rng *r, uint64_t bound)
{
	return (uint64_t)(((unsigned __int128)rng_next(r) * bound) >> 64);
}

size_t size_uniform(struct rng *r, size_t low, size_t high)
{
	return low + (size_t)rng_below(r, high - low + 1);
}

size_t size_octaves(struct rng *r, size_t low, size_t high)
{
	int first = __builtin_ctzll(low), last = __builtin_ctzll(high); /* powers of two */
	int octave = first + (int)rng_below(r, (uint64_t)(last - first));
	size_t base = (size_t)1 << octave;
	return base + (size_t)rng_below(r, base);
}

double now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

uint64_t scaled(const struct config *cfg, uint64_t base, uint64_t minimum)
{
	double n = (double)base * cfg->scale;
	return n < (double)minimum ? minimum : (uint64_t)n;
}

void *calloc_lines(size_t n, size_t size)
{
	void *p = must(aligned_alloc(64, n * size), "setup");
	memset(p, 0, n * size);
	return p;
}

void *must(void *p, const char *what)
{
	if (!p) {
		fprintf(stderr, "speed: %s: out of memory\n", what);
		exit(2);
	}
	return p;
}

void *block_new(size_t size)
{
	unsigned char *p = must(malloc(size), "malloc");
	p[0] = (unsigned char)size;
	p[size - 1] = (unsigned char)(size >> 8);
	return p;
}

int online_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}

void thread_start(pthread_t *thread, void *(*fn)(void *), void *arg)
{
	int err = pthread_create(thread, NULL, fn, arg);
	if (err) {
		fprintf(stderr, "speed: pthread_create: %s\n", strerror(err));
		exit(2);
	}
}

void thread_join(pthread_t thread)
{
	int err = pthread_join(thread, NULL);
	if (err) {
		fprintf(stderr, "speed: pthread_join: %s\n", strerror(err));
		exit(2);
	}
}

void mailbox_post_chain(struct mailbox *box, void *first, void *last)
{
	void *head = atomic_load_explicit(&box->head, memory_order_relaxed);
	do
		block_link(last, head);
	while (!atomic_compare_exchange_weak_explicit(&box->head, &head, first,
						      memory_order_release,
						      memory_order_relaxed));
}

void mailbox_post(struct mailbox *box, void *block)
{
	mailbox_post_chain(box, block, block);
}

void *mailbox_take_all(struct mailbox *box)
{
	if (!atomic_load_explicit(&box->head, memory_order_relaxed))
		return NULL;
	return atomic_exchange_explicit(&box->head, NULL, memory_order_acquire);
}

uint64_t free_chain(void *first, uint64_t *checksum)
{
	uint64_t n = 0;
	while (first) {
		void *next = block_next(first);
		/* The first word holds the link: read the last byte of the word instead. */
		*checksum += ((const volatile unsigned char *)first)[sizeof(void *) - 1];
		free(first);
		first = next;
		n++;
	}
	return n;
}
