/* tests/rseq/harness.h - what the rseq test programs share: failure accounting,
 * the allowed CPU list, pinning, getcpu, a small random generator, thread roles.
 *
 * A test program records every violated expectation with CHECK (it keeps going, so
 * that one run reports all problems) and ends with `return harness_exit();`, which
 * prints the number of failures and turns it into the exit status. FATAL is for
 * states in which continuing would touch memory out of bounds.
 * Nothing here is called from a signal handler.
 */
#ifndef VC_TESTS_RSEQ_HARNESS_H
#define VC_TESTS_RSEQ_HARNESS_H

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>

extern long harness_failures;

void harness_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void harness_fatal(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));
int harness_exit(void);

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond))                                                                       \
			harness_fail(__FILE__, __LINE__, __VA_ARGS__);                             \
	} while (0)
#define FATAL(...) harness_fatal(__FILE__, __LINE__, __VA_ARGS__)

/* The CPUs this process may run on, in increasing order, captured at start. */
struct cpu_list {
	int n;
	int cpu[CPU_SETSIZE];
	cpu_set_t mask;
};
void cpu_list_allowed(struct cpu_list *out);

/* Restrict the calling thread to one CPU, or to a mask; the move happens before the
 * call returns (the kernel migrates a thread that leaves its allowed set). */
void pin_self(int cpu);
void set_self_mask(const cpu_set_t *mask);
void pin_thread(pthread_t thread, int cpu);

/* Current CPU and NUMA node as the getcpu system call reports them. */
void getcpu_now(unsigned *cpu, unsigned *node);

/* The possible CPU count, parsed here independently of the rseq layer. */
unsigned possible_cpus_from_sysfs(void);

/* xorshift64*: a fast per-thread generator; the seed must not be zero. */
static inline uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

/* How a worker thread relates to CPUs in the concurrent tests:
 *   PINNED  stays on one CPU for its whole life;
 *   FREE    may run anywhere allowed;
 *   HOPPER  is moved from CPU to CPU by another thread while it runs. */
enum thread_role { ROLE_PINNED, ROLE_FREE, ROLE_HOPPER };
static inline enum thread_role role_of(int thread_index)
{
	return (enum thread_role)(thread_index % 3);
}
static inline const char *role_name(enum thread_role r)
{
	return r == ROLE_PINNED ? "pinned" : r == ROLE_FREE ? "free" : "hopper";
}

/* Sleep for the given number of microseconds (nanosleep, restarted on EINTR). */
void sleep_us(long us);

/* Monotonic clock in microseconds. */
long now_us(void);

/* Bounds the run time of a test program by construction: after `seconds` a SIGALRM
 * handler prints a message and exits with status 3, whatever the threads are doing
 * (the timer survives exec, so a program that execs must set its own). */
/* VCTEST_TIME_SCALE multiplies `seconds` (tests/lib/test_env.h). */
void harness_watchdog(unsigned seconds);

/* Running kernel's version from uname, e.g. 6.18 -> major 6, minor 18. */
void kernel_version(int *major, int *minor);

/* Integer option "--name=value" from argv, or def when absent. */
long arg_long(int argc, char **argv, const char *name, long def);
/* String option "--name=value", or def. */
const char *arg_str(int argc, char **argv, const char *name, const char *def);

#endif
