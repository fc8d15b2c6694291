/* tests/rseq/crowd.h - a crowd of worker threads, more than there are CPUs, run while
 * other threads disturb them.
 *
 * Worker i has role role_of(i) (below): pinned to allowed CPU i % n, free, or a
 * hopper that the shuffler thread moves to a random CPU (or back to the whole allowed
 * set) every few hundred microseconds, so that migrations land at arbitrary points,
 * inside critical sections too. With `signals`, a signalling thread sends SIGUSR1 to
 * the workers round robin with pthread_kill; the handler calls on_signal.
 *
 * Lifetime: every worker runs prepare(i), waits until all have, then body(i). Only then
 * do the disturbers start, so prepare may do per-thread set-up a signal must not
 * interrupt (such as a first registration). Bodies loop while crowd_running(): the
 * main thread lets them run until `run_ms` milliseconds of wall-clock time have passed
 * (a deadline, so that slow wake-ups on a loaded machine cannot stretch the run),
 * calling tick(k) at the start of each period of about `tick_us` microseconds (the
 * inject tests cycle their delay and yield knobs there). Then it calls before_stop()
 * (the inject tests switch injection off there, so that the bodies' last operations
 * cannot keep aborting) and stops the bodies. The run length is not a pass/fail
 * criterion: bodies count what they did and the tests check the shared state against
 * those counts.
 * A worker whose body returned stays alive (but idle) until the disturbers have
 * stopped: pthread_kill and pthread_setaffinity_np only ever target live threads.
 * Before a body publishes its tallies it must call crowd_quiesce(), which blocks
 * SIGUSR1 in that thread, so that no handler adds to the shared data behind its back
 * afterwards.
 * Workers run at nice +10 (a per-thread setting), so that the main thread and the
 * disturbers, at the process's own priority, keep their pace on a busy machine.
 */
#ifndef VC_TESTS_RSEQ_CROWD_H
#define VC_TESTS_RSEQ_CROWD_H

#include <stdbool.h>

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

struct crowd_config {
	int threads;
	void (*prepare)(int index, void *ctx); /* may be NULL */
	void (*body)(int index, void *ctx);
	void *ctx;
	bool signals;
	void (*on_signal)(void);   /* async-signal-safe; saves errno itself if needed */
	void (*tick)(long k);	   /* may be NULL */
	void (*before_stop)(void); /* may be NULL */
	int run_ms;		   /* run length */
	int tick_us;		   /* period length */
};

struct crowd_report {
	long signals_sent;
	long affinity_moves;
	long ticks;
	double seconds; /* measured run length */
};

void crowd_run(const struct crowd_config *cfg, struct crowd_report *report);
void crowd_quiesce(void);
bool crowd_running(void);

#endif
