/* SPDX-License-Identifier: MIT */
/*
 * workers.c - three workloads made of the same worker, placed differently:
 *
 *   few   a few threads (default 4) on however many CPUs the process may use.  Each
 *         round is a burst plus a working-set turn, then a short sleep, like a mostly
 *         idle service.  Every 8th round the thread is moved to a random allowed CPU
 *         and then allowed everywhere again: on a quiet machine the scheduler keeps a
 *         waking thread where it was, so this stands in for the migrations that other
 *         load and the load balancer cause over a long run.  CPU-indexed caches get
 *         populated on every CPU visited.  Throughput basis "busy": sleeps are not
 *         counted.
 *   many  hundreds of threads (default 256) alive at once, all churning; with a
 *         taskset or cpuset of few CPUs they crowd those CPUs.  Basis "wall".
 *   roam  a few threads (default 4) that walk their affinity over every allowed CPU
 *         in turn (sched_setaffinity to one CPU, work, move on), lap after lap.
 *         Basis "wall".
 *
 * A round: allocate a burst of mixed-size objects and free them shuffled (fills the
 * local cache), then replace part of a private working set (keeps live data around).
 * All threads start together on a barrier and wait for each other before exiting,
 * so the peak RSS is taken with every thread alive.
 */
#include <stdbool.h>
#include <stdlib.h>

#include "footprint.h"

struct plan {
	int threads;
	int rounds;	   /* rounds per thread (roam: visits per thread) */
	int burst;	   /* objects per burst */
	int live;	   /* working-set objects per thread */
	int replace;	   /* working-set objects replaced per round */
	long pause_us;	   /* sleep after each round, 0 for none */
	bool yield;	   /* sched_yield after each round */
	bool roam;	   /* move to the next allowed CPU before each round */
	int migrate_every; /* every n rounds: move to a random allowed CPU, then free again */
	cpu_set_t allowed;
	int *cpus; /* allowed CPUs, for roam and migrations */
	int ncpus;
	uint64_t seed;
	pthread_barrier_t start, finish;
};

struct worker {
	pthread_t thread;
	int index;
	struct plan *plan;
	uint64_t ops;
	double busy; /* seconds outside deliberate sleeps */
	double end;  /* when this worker's last round finished */
};

static void move_to(int cpu)
{
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	sched_setaffinity(0, sizeof(one), &one);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct plan *p = w->plan;
	struct rng r;
	rng_seed(&r, p->seed, (uint64_t)w->index);
	void **scratch = malloc(sizeof(void *) * (size_t)p->burst);
	void **slots = malloc(sizeof(void *) * (size_t)p->live);
	if (!scratch || !slots)
		abort();

	pthread_barrier_wait(&p->start);
	double segment = now_seconds();
	w->ops += working_set_fill(&r, slots, p->live);
	/* Roamers start at different CPUs so they do not march in lock step. */
	int stride = p->ncpus > 0 ? (w->index * p->ncpus) / p->threads : 0;
	for (int round = 0; round < p->rounds; round++) {
		if (p->roam)
			move_to(p->cpus[(stride + round) % p->ncpus]);
		if (p->migrate_every && round % p->migrate_every == p->migrate_every - 1) {
			move_to(p->cpus[rng_below(&r, (uint32_t)p->ncpus)]);
			sched_setaffinity(0, sizeof(p->allowed), &p->allowed);
		}
		note_cpu();
		w->ops += burst(&r, scratch, p->burst);
		w->ops += working_set_turn(&r, slots, p->live, p->replace);
		if (p->pause_us) {
			double now = now_seconds();
			w->busy += now - segment;
			sleep_us(p->pause_us);
			segment = now_seconds();
		} else if (p->yield) {
			sched_yield();
		}
	}
	working_set_free(slots, p->live);
	w->end = now_seconds();
	w->busy += w->end - segment;
	free(slots);
	free(scratch);
	pthread_barrier_wait(&p->finish);
	return NULL;
}

static int run_plan(struct plan *p, const char *basis, struct outcome *out)
{
	struct worker *workers = calloc((size_t)p->threads, sizeof(*workers));
	if (!workers)
		return -1;
	pthread_barrier_init(&p->start, NULL, (unsigned)p->threads + 1);
	pthread_barrier_init(&p->finish, NULL, (unsigned)p->threads);
	for (int i = 0; i < p->threads; i++) {
		workers[i].index = i;
		workers[i].plan = p;
		thread_start(&workers[i].thread, worker_main, &workers[i]);
	}
	pthread_barrier_wait(&p->start);
	double start = now_seconds();
	for (int i = 0; i < p->threads; i++)
		pthread_join(workers[i].thread, NULL);

	double end = start, rate_sum = 0;
	uint64_t ops = 0;
	for (int i = 0; i < p->threads; i++) {
		ops += workers[i].ops;
		if (workers[i].end > end)
			end = workers[i].end;
		if (workers[i].busy > 0)
			rate_sum += (double)workers[i].ops / workers[i].busy;
	}
	out->threads = p->threads;
	out->ops = ops;
	out->throughput_basis = basis;
	if (basis[0] == 'b') {
		out->ops_per_sec = rate_sum;
		out->seconds = rate_sum > 0 ? (double)ops / rate_sum : 0;
	} else {
		out->seconds = end - start;
		out->ops_per_sec = out->seconds > 0 ? (double)ops / out->seconds : 0;
	}
	pthread_barrier_destroy(&p->start);
	pthread_barrier_destroy(&p->finish);
	free(workers);
	return 0;
}

static int scaled(double base, double scale, int minimum)
{
	int n = (int)(base * scale + 0.5);
	return n < minimum ? minimum : n;
}

/* Fills p->allowed and p->cpus with the CPUs the process may use. */
static int allowed_cpus(struct plan *p)
{
	static int cpus[CPU_SETSIZE];
	if (sched_getaffinity(0, sizeof(p->allowed), &p->allowed) != 0)
		return -1;
	p->cpus = cpus;
	p->ncpus = cpu_set_list(&p->allowed, cpus, CPU_SETSIZE);
	return p->ncpus > 0 ? 0 : -1;
}

int workload_few(const struct config *cfg, struct outcome *out)
{
	struct plan p = {
	    .threads = cfg->threads ? cfg->threads : 4,
	    .rounds = scaled(300, cfg->scale, 4),
	    .burst = 1024,
	    .live = 1024,
	    .replace = 256,
	    .pause_us = 500,
	    .migrate_every = 8,
	    .seed = cfg->seed,
	};
	if (allowed_cpus(&p) != 0)
		return -1;
	return run_plan(&p, "busy", out);
}

int workload_many(const struct config *cfg, struct outcome *out)
{
	struct plan p = {
	    .threads = cfg->threads ? cfg->threads : 256,
	    .rounds = scaled(40, cfg->scale, 2),
	    .burst = 128,
	    .live = 128,
	    .replace = 32,
	    .yield = true,
	    .seed = cfg->seed,
	};
	return run_plan(&p, "wall", out);
}

int workload_roam(const struct config *cfg, struct outcome *out)
{
	struct plan p = {
	    .threads = cfg->threads ? cfg->threads : 4,
	    .burst = 256,
	    .live = 256,
	    .replace = 64,
	    .roam = true,
	    .seed = cfg->seed,
	};
	if (allowed_cpus(&p) != 0)
		return -1;
	/* At least two laps, and at least ~128 visits per thread on small machines. */
	double base_laps = 128.0 / p.ncpus > 2 ? 128.0 / p.ncpus : 2;
	p.rounds = scaled(base_laps, cfg->scale, 1) * p.ncpus;
	return run_plan(&p, "wall", out);
}
