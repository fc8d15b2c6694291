/* SPDX-License-Identifier: MIT */
/*
 * gbench.h - a C interface to Google Benchmark.
 *
 * The microbenchmarks are plain C; this header is all they see of the C++ library.
 * A benchmark is a function that loops on gb_keep_running_batch() and does its work
 * inside the loop; it is registered once, before gb_main(), with its arguments,
 * thread counts and time unit.  Everything not listed here (filters, output format,
 * repetitions) is controlled by Google Benchmark's own --benchmark_* flags.
 *
 * Threading: with gb_threads(b, n), the function runs on n threads at once; each
 * thread executes the same number of iterations, and every thread enters and leaves
 * the timed loop together (the library places barriers there).
 */
#ifndef VC_BENCH_GBENCH_H
#define VC_BENCH_GBENCH_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Opaque views of benchmark::State and benchmark::internal::Benchmark. */
typedef struct gb_state gb_state;
typedef struct gb_bench gb_bench;

/* A benchmark body; ctx is the pointer given at registration. */
typedef void (*gb_fn)(gb_state *state, void *ctx);

enum gb_counter_kind {
	GB_COUNTER_PLAIN,	/* value reported as is (summed over threads) */
	GB_COUNTER_RATE,	/* value divided by the elapsed time */
	GB_COUNTER_AVG_THREADS, /* value averaged over the threads */
};

/* Registration, before gb_main().  The name is copied. */
gb_bench *gb_register(const char *name, gb_fn fn, void *ctx);
void gb_arg(gb_bench *b, int64_t arg);
void gb_threads(gb_bench *b, int threads);
void gb_use_real_time(gb_bench *b);
void gb_time_unit_ns(gb_bench *b);

/*
 * Runs the registered benchmarks selected by argv (--benchmark_filter and the
 * other Google Benchmark flags); returns the process exit status.
 */
int gb_main(int argc, char **argv);

/*
 * Inside a benchmark body.  gb_keep_running_batch() returns nonzero while more
 * iterations are wanted and counts n iterations per call (it may overshoot by n).
 */
int gb_keep_running_batch(gb_state *s, int64_t n);
int64_t gb_arg_value(const gb_state *s, int index);
int gb_thread_index(const gb_state *s);
int gb_thread_count(const gb_state *s);
int64_t gb_iterations(const gb_state *s);
void gb_pause_timing(gb_state *s);
void gb_resume_timing(gb_state *s);
void gb_set_items_processed(gb_state *s, int64_t items);
void gb_set_counter(gb_state *s, const char *name, double value, enum gb_counter_kind kind);
void gb_skip_with_error(gb_state *s, const char *message);

#ifdef __cplusplus
}
#endif

#endif
