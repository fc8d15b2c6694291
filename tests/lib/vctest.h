/* tests/lib/vctest.h - the test harness: helpers shared by the test programs of
 * every folder (api, stress, misuse, compat, races, unit, vm, sanitize).
 *
 * Every test program is an ordinary executable that uses malloc & co. It runs against
 * whatever allocator serves malloc: glibc, vcmalloc linked in, or vcmalloc preloaded.
 * vcmalloc's introspection (vcmalloc_stats and friends) is looked up at run time with
 * dlsym, so the same binary runs under glibc, where the lookup finds nothing.
 *
 * Environment read here:
 *   VCTEST_EXPECT_VCMALLOC=1  fail unless malloc is really served by vcmalloc
 *                             (set by meson for every vcmalloc registration, so a
 *                             preload that silently did not happen cannot pass).
 */
#ifndef VCTEST_H
#define VCTEST_H

#include <semaphore.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "vcmalloc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Report a failed check with its location and end the process with status 1. */
#define VCT_CHECK(cond, ...)                                                                       \
	do {                                                                                       \
		if (!(cond))                                                                       \
			vct_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);                          \
	} while (0)

void vct_fail(const char *file, int line, const char *expr, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 4, 5)));

/* Record a violated expectation with its location and go on, so that one run
 * reports every problem (the white-box and the concurrent tests); main ends with
 * `return vct_exit();`. Safe from several threads at once, not from signal
 * handlers. */
#define VCT_EXPECT(cond, ...)                                                                      \
	do {                                                                                       \
		if (!(cond))                                                                       \
			vct_expect_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);                   \
	} while (0)

void vct_expect_fail(const char *file, int line, const char *expr, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Report a state in which the program cannot go on (it would touch memory out of
 * bounds, a system call it needs failed) on stdout and exit with status 2. */
#define VCT_FATAL(...) vct_fatal(__FILE__, __LINE__, __VA_ARGS__)
void vct_fatal(const char *file, int line, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 3, 4)));

/* Violated expectations so far. */
long vct_failures(void);

/* Prints "RESULT: ok" or "RESULT: <n> failure(s)" and returns the exit status for
 * main: 0 when no expectation was violated, else 1. */
int vct_exit(void);

/* Start of every test: arm vct_alarm(seconds) so a hang fails instead of blocking,
 * and honour VCTEST_EXPECT_VCMALLOC. */
void vct_start(const char *name, unsigned seconds);

/* VCTEST_TIME_SCALE=K (1-1000, default 1) multiplies every hang guard, for machines
 * that run the tests K times slower (tests/vm/checks/suite-in-guest sets it for a
 * TCG guest). It stretches time limits only, never the work a test does. */
unsigned vct_time_scale(void);

/* alarm(seconds * vct_time_scale()): SIGALRM's default action ends the process. */
void vct_alarm(unsigned seconds);

/* A hang guard that says so: after seconds * vct_time_scale(), a SIGALRM handler
 * prints "FATAL: watchdog" and exits with status 3, whatever the threads are doing
 * (the timer survives exec, so a program that execs must set its own). */
void vct_watchdog(unsigned seconds);

/* VCTEST_WORK_DIVISOR=D (1-100, default 1) divides the iteration counts of the
 * long stress programs (tests/stress), for machines too slow to run them in full:
 * a 64-vCPU TCG guest on two host cores runs them about 170 times slower. Threads,
 * sizes, the paths exercised and every check stay the same; only the number of
 * rounds shrinks. vct_work(n, least) is n / D, but never below least. */
unsigned vct_work_divisor(void);
long vct_work(long n, long least);

/* The vcmalloc entry points, or NULL when vcmalloc is not loaded in this process. */
struct vct_vcmalloc {
	int (*stats)(struct vcmalloc_stats *out);
	int (*stats_json)(int fd);
	int (*reclaim)(int force);
	void (*release_free_memory)(void);
};
const struct vct_vcmalloc *vct_vcmalloc(void);

/* True when the process runs with vcmalloc (found by dlsym). */
bool vct_under_vcmalloc(void);

/* vcmalloc_stats() into *out; the test fails when vcmalloc is absent. */
void vct_stats(struct vcmalloc_stats *out);
/* One line of vcmalloc's memory statistics and one per node, on stdout: where the
 * memory is, for a test about giving it back that fails. */
void vct_print_memory_stats(void);

/* Stop the optimiser from reasoning about a pointer or a size (so that deliberate
 * misuse and impossible sizes reach the allocator as written). */
static inline void *vct_launder(void *p)
{
	__asm__ volatile("" : "+r"(p));
	return p;
}
static inline size_t vct_launder_size(size_t n)
{
	__asm__ volatile("" : "+r"(n));
	return n;
}

/* sem_wait, restarted on EINTR; any other failure fails the test. */
void vct_sem_wait(sem_t *s);

/* Sleep for us microseconds (nanosleep, restarted on EINTR); the monotonic clock in
 * microseconds. */
void vct_sleep_us(long us);
long vct_now_us(void);

/* Integer option "--name=value" from argv, or def when absent (a bad value is
 * fatal); string option "--name=value", or def. */
long vct_arg_long(int argc, char **argv, const char *name, long def);
const char *vct_arg_str(int argc, char **argv, const char *name, const char *def);

/* The running kernel's version from uname, e.g. 6.18 -> major 6, minor 18. */
void vct_kernel_version(int *major, int *minor);

/* Deterministic fill and check of a block: byte i is a function of (seed, i). The
 * check returns the index of the first wrong byte, or (size_t)-1 when all are right. */
void vct_fill(void *p, size_t n, uint64_t seed);
size_t vct_verify(const void *p, size_t n, uint64_t seed);

/* splitmix64: a small, good, per-thread random generator. */
static inline uint64_t vct_rand(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A random size spread over every size class: mostly small, some medium, few large.
 * max_large bounds the rare large sizes (0: never above 64 KiB). */
size_t vct_random_size(uint64_t *state, size_t max_large);

/* A value in kibibytes from /proc/self/status ("VmRSS", "VmSize"), -1 on error. */
long vct_proc_status_kib(const char *field);

/* Resident KiB from /proc/self/statm, read with system calls only (no allocation,
 * no stdio): for tests that watch RSS while the program makes no allocator call. */
long vct_rss_kib_syscalls(void);

/* Index mode named by VCMALLOC_INDEX, or -1 when the variable is unset or unknown. */
int vct_env_index_mode(void);

/* The mode vcmalloc must run in for VCMALLOC_INDEX (vcpu when unset), after its
 * documented fallback: vcpu becomes cpu on a kernel without mm_cid
 * (AT_RSEQ_FEATURE_SIZE below 28, e.g. 6.1). */
int vct_expected_index_mode(void);

#ifdef __cplusplus
}
#endif

#endif
