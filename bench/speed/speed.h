/* SPDX-License-Identifier: MIT */
/*
 * speed.h - the speed benchmark: one allocation pattern per subcommand, run against
 * whatever malloc is loaded (LD_PRELOAD), timed on the wall clock.
 *
 * Every workload splits into an untimed setup, a timed body and an untimed teardown.
 * The body runs inside measured() (main.c), the only function whose duration is
 * reported; valgrind's callgrind collects instructions inside it alone
 * (--toggle-collect=measured) and `perf stat --control` counts it alone.
 *
 * Files: main.c (command line, measured(), JSON), common.c (random numbers, sizes,
 * threads, mailboxes), one file per family of workloads.
 */
#ifndef VC_BENCH_SPEED_H
#define VC_BENCH_SPEED_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* What the command line asks for. */
struct config {
	const char *workload;
	double scale;  /* multiplies the amount of work; never the live set */
	uint64_t seed; /* every random choice derives from it */
	int threads;   /* 0: the workload's default */
	/* 0, or the time after which a workload that supports it (tight) stops at the end
	 * of a round: a run planned for an allocator many times slower than the others
	 * then reports the part it did (ops < planned_ops). */
	double max_seconds;
};

/* What a workload reports.  ops counts allocations (malloc, or realloc calls for
 * the realloc workload), each of which is freed before the program ends. */
struct result {
	uint64_t ops;
	int threads;	   /* threads that did allocation work (at once) */
	uint64_t checksum; /* folds bytes read back, so no work can be optimised away */
	double seconds;	   /* set by measured() */
	uint64_t planned_ops; /* the ops of a complete run; 0: the same as ops */
};

/*
 * Runs body(arg) and sets res->seconds to its wall time.  Around the body it also
 * enables and disables `perf stat` counters when perf's control descriptors were
 * given (--perf-ctl-fd / --perf-ack-fd).  Call it exactly once per workload.
 */
void measured(struct result *res, void (*body)(void *arg), void *arg);

/* One entry per subcommand; `param` tells variants of one function apart. */
struct workload {
	const char *name;
	int (*run)(const struct config *cfg, struct result *res, long param);
	long param;
	const char *what;
};

int workload_wide1(const struct config *cfg, struct result *res, long unused);
int workload_wide4x(const struct config *cfg, struct result *res, long unused);
int workload_bigblocks(const struct config *cfg, struct result *res, long max_mib);
int workload_tight(const struct config *cfg, struct result *res, long size_and_threads);
int workload_larson(const struct config *cfg, struct result *res, long unused);
int workload_xmalloc(const struct config *cfg, struct result *res, long unused);
int workload_prodcons(const struct config *cfg, struct result *res, long unused);
int workload_rptest(const struct config *cfg, struct result *res, long unused);
int workload_realloc(const struct config *cfg, struct result *res, long unused);
int workload_shortthreads(const struct config *cfg, struct result *res, long unused);
int workload_falseshare(const struct config *cfg, struct result *res, long unused);

/* tight's parameter: size in bytes + TIGHT_ALL_CPUS for the threaded variant. */
#define TIGHT_ALL_CPUS (1L << 30)

/* ---- common.c ---- */

/* splitmix64: a 64-bit state stepped by a constant, output scrambled.  Any seed is
 * fine (0 included); `stream` separates threads drawing from one seed. */
struct rng {
	uint64_t state;
};

void rng_seed(struct rng *r, uint64_t seed, uint64_t stream);
uint64_t rng_next(struct rng *r);
/* Uniform in [0, bound) for bound >= 1 (multiply-shift; the bias is below 2^-32). */
uint64_t rng_below(struct rng *r, uint64_t bound);
/* Uniform in [low, high]. */
size_t size_uniform(struct rng *r, size_t low, size_t high);
/*
 * Log-uniform by octave in [low, high): an octave [2^e, 2^(e+1)) is picked uniformly
 * among those between low and high (both powers of two), then a size uniformly
 * inside it.  Each octave gets the same number of objects, so small sizes dominate
 * by count and large ones by bytes.
 */
size_t size_octaves(struct rng *r, size_t low, size_t high);

double now_seconds(void);

/* Work amounts: base * scale, at least `minimum`. */
uint64_t scaled(const struct config *cfg, uint64_t base, uint64_t minimum);

/* malloc with the first and last byte written; exits the process on failure. */
void *block_new(size_t size);
/* The block's first byte, read before it is freed (feeds the checksum). */
static inline uint64_t block_peek(const void *block)
{
	return *(const volatile unsigned char *)block;
}
/* Exits with a message when an allocation failed. */
void *must(void *p, const char *what);
/* n zeroed elements of `size` bytes (a multiple of 64), 64-byte aligned: per-thread
 * records each on cache lines of their own, so that where the allocator under test
 * places a small array cannot make the benchmark's own threads share a line. */
void *calloc_lines(size_t n, size_t size);

int online_cpus(void);
/* pthread_create that exits the process on failure. */
void thread_start(pthread_t *thread, void *(*fn)(void *), void *arg);
void thread_join(pthread_t thread);

/*
 * A multi-producer single-consumer mailbox of blocks: a lock-free LIFO whose links
 * live in the blocks' first word (every block is at least 8 bytes).  Any thread may
 * post; only the owner takes, and it takes the whole list at once, so a node is never
 * popped while another thread reads its link (no ABA).
 */
struct mailbox {
	_Atomic(void *) head;
	char pad[64 - sizeof(void *)]; /* one cache line per mailbox */
};

void mailbox_post(struct mailbox *box, void *block);
/* Posts a chain first..last (linked through their first words) in one exchange. */
void mailbox_post_chain(struct mailbox *box, void *first, void *last);
/* Takes every block posted so far; returns the first (NULL if none). */
void *mailbox_take_all(struct mailbox *box);
static inline void *block_next(void *block)
{
	return *(void **)block;
}
static inline void block_link(void *block, void *next)
{
	*(void **)block = next;
}
/* Frees every block of a chain; returns how many. */
uint64_t free_chain(void *first, uint64_t *checksum);

#endif
