/* SPDX-License-Identifier: MIT */
/*
 * footprint.h - the footprint benchmark: workloads that stress where an allocator's
 * caches live (threads spread over many CPUs, crowded on few, roaming, created and
 * destroyed in storms, passing objects between threads), and the measures taken
 * around them (RSS peak and final, the workload's own peak of live bytes, allocator
 * cache bytes, throughput).
 *
 * Files: main.c (options, run, JSON), workers.c (few/many/roam), storm.c, server.c,
 * churn.c, larson.c, objects.c (sizes, random numbers, bursts), proc.c (/proc and
 * /sys readers that never allocate), probe.c (what the loaded allocator reports).
 */
#ifndef VC_BENCH_FOOTPRINT_H
#define VC_BENCH_FOOTPRINT_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What the command line asks for. */
struct config {
	const char *workload;
	int threads;  /* 0: the workload's default */
	double scale; /* multiplies the amount of work (rounds, messages) */
	uint64_t seed;
	int sample_ms; /* period of the RSS / cache sampler */
};

/* What a workload reports back; every field is filled by the workload. */
struct outcome {
	int threads;	    /* threads that ran (at once; in total for storms) */
	uint64_t ops;	    /* allocations performed (each one is later freed) */
	double seconds;	    /* time the throughput is computed over */
	double ops_per_sec; /* see throughput_basis */
	/* "wall": ops / wall time; "busy": sum over threads of ops / time spent outside
	 * deliberate sleeps */
	const char *throughput_basis;
};

typedef int (*workload_fn)(const struct config *cfg, struct outcome *out);

int workload_few(const struct config *cfg, struct outcome *out);
int workload_many(const struct config *cfg, struct outcome *out);
int workload_roam(const struct config *cfg, struct outcome *out);
int workload_storm(const struct config *cfg, struct outcome *out);
int workload_server(const struct config *cfg, struct outcome *out);
int workload_churn(const struct config *cfg, struct outcome *out);
int workload_larson(const struct config *cfg, struct outcome *out);

/* ---- objects.c: random numbers, object sizes, bursts ---- */

struct rng {
	uint64_t state; /* never 0 */
};

void rng_seed(struct rng *r, uint64_t seed, uint64_t stream);
uint64_t rng_next(struct rng *r);
uint32_t rng_below(struct rng *r, uint32_t bound);

/* A size drawn from the mix every workload uses (mostly small, some pages). */
size_t object_size(struct rng *r);
/* A size drawn uniformly from [low, high]. */
size_t size_between(struct rng *r, size_t low, size_t high);

/*
 * malloc(size) (size >= 8) with its size in its first 8 bytes, one byte in every 4 KiB
 * page and its last byte written, so that all of it is resident; counted in the live
 * bytes.  Exits the process on failure.
 */
void *object_new(size_t size);
/* Frees an object of object_new (NULL: nothing) and takes its size off the live bytes. */
void object_free(void *object);
/* The sum of the sizes of the objects alive now, and the highest that sum has been. */
int64_t live_bytes_now(void);
int64_t live_bytes_peak(void);

/*
 * Allocates `count` objects of mixed sizes into scratch[], then frees them in a
 * shuffled order: a burst that fills whatever cache the allocator keeps for the
 * current thread or CPU.  Returns count.
 */
uint64_t burst(struct rng *r, void **scratch, int count);

/*
 * A working set of `count` live objects; working_set_turn() replaces `replace` of
 * them chosen at random.  Both return the allocations performed.
 */
uint64_t working_set_fill(struct rng *r, void **slots, int count);
uint64_t working_set_turn(struct rng *r, void **slots, int count, int replace);
void working_set_free(void **slots, int count);

/* ---- time and threads ---- */

double now_seconds(void);
/* Fills out for a workload measured on the wall clock: threads, ops, seconds and
 * ops per second. */
void outcome_wall(struct outcome *out, int threads, uint64_t ops, double seconds);
/* Sleeps without touching the allocator. */
void sleep_us(long microseconds);
/* pthread_create with a small stack; exits the process on failure. */
void thread_start(pthread_t *thread, void *(*fn)(void *), void *arg);

/* Records that the caller runs on its current CPU (for the cpus_visited figure). */
void note_cpu(void);
int cpus_visited(void);

/* ---- proc.c ---- */

/* A field of /proc/self/status in bytes ("VmHWM", "VmRSS"), or -1. */
int64_t status_bytes(const char *field);
/* Writes the CPU list of /sys/devices/system/cpu/<name> ("possible", "online") to buf;
 * returns how many CPUs it names, or -1. */
int sys_cpu_list(const char *name, char *buf, size_t size);
/* Formats a CPU set as "0-3,8" into buf; returns the number of CPUs. */
int cpu_set_format(const cpu_set_t *set, char *buf, size_t size);
/* The CPUs of set, in increasing order, into cpus[] (at most max); returns the count. */
int cpu_set_list(const cpu_set_t *set, int *cpus, int max);

/* ---- probe.c: what the loaded allocator tells about itself ---- */

/* "vcmalloc", "jemalloc", "mimalloc", "tcmalloc" or "glibc" (by exported symbols). */
const char *allocator_name(void);
/* Where cache bytes come from, or NULL if the loaded allocator does not report them. */
const char *cache_bytes_source(void);
/* Current cache bytes of the loaded allocator, or -1. */
int64_t cache_bytes_now(void);

/* vcmalloc's own figures at one moment (vcmalloc_stats), -1 elsewhere: where the
 * resident bytes are, to split the overhead over the live data. */
struct vc_breakdown {
	int64_t resident;     /* all the allocator holds resident */
	int64_t allocated;    /* in live blocks (usable sizes) */
	int64_t vcpu_layer;   /* per-vCPU headers, slot arrays and cached objects */
	int64_t central_free; /* free bytes in central lists and spans, every node */
};

/* A thread that samples RSS and cache bytes every period until sampler_stop(). */
struct sampler {
	pthread_t thread;
	int period_ms;
	atomic_int stop;
	int64_t rss_peak;
	int64_t cache_peak;
	struct vc_breakdown at_rss_peak; /* taken by the sample that set rss_peak */
	uint64_t samples;
};

/* vcmalloc's breakdown now; false (all -1) under any other allocator. */
bool vc_breakdown_now(struct vc_breakdown *out);

void sampler_start(struct sampler *s, int period_ms);
void sampler_stop(struct sampler *s);

#endif
