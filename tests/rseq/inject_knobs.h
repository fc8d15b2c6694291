/* tests/rseq/inject_knobs.h - the schedule of the rseq layer's injection knobs, shared
 * by the tests that are built twice (plain and with rseq_inject_dep).
 *
 * Include after rseq.h. In an injection build (VC_RSEQ_INJECT=1), knobs_tick(k) is the
 * crowd's tick and knobs_off its before_stop: each 2 ms period applies the next entry of the
 * schedule to vc_rseq_inject_delay / vc_rseq_inject_yield and attributes the aborts counted since
 * the previous tick (vc_rseq_inject_aborts) to the entry that was active. Yield is
 * never left on for long: with many more threads than CPUs, a long spin inside every
 * critical section aborts nearly every one, so progress happens in the other periods.
 * In a plain build the knobs do not exist and knobs_tick / knobs_off are NULL.
 */
#ifndef VC_TESTS_RSEQ_INJECT_KNOBS_H
#define VC_TESTS_RSEQ_INJECT_KNOBS_H

#include <stdio.h>

#if defined(VC_RSEQ_INJECT) && VC_RSEQ_INJECT
#define INJECT 1
#define KNOBS_TICK_US 2000

enum { KNOB_PHASES = 4 };
/* {delay loop iterations, long spin inside} */
static const int knob_schedule[KNOB_PHASES][2] = {{300, 0}, {0, 1}, {3000, 1}, {0, 0}};
static long knob_aborts[KNOB_PHASES];
static long knob_aborts_seen;

static void knobs_account(long k)
{
	long now = vc_rseq_inject_aborts;
	knob_aborts[k % KNOB_PHASES] += now - knob_aborts_seen;
	knob_aborts_seen = now;
}

static void knobs_tick(long k)
{
	if (k > 0)
		knobs_account(k - 1);
	vc_rseq_inject_delay = knob_schedule[k % KNOB_PHASES][0];
	vc_rseq_inject_yield = knob_schedule[k % KNOB_PHASES][1];
}

/* The crowd's before_stop: injection off before the bodies are told to stop, so that
 * their last operations (and the signal handlers still running until every body has
 * returned) complete instead of aborting again and again in a yield period. */
static void knobs_off(void)
{
	vc_rseq_inject_delay = 0;
	vc_rseq_inject_yield = 0;
}

/* After the run: account the last period (its aborts include the few that happened
 * after knobs_off) and print the split. */
static void knobs_finish(long ticks)
{
	if (ticks > 0)
		knobs_account(ticks - 1);
	knobs_off();
	printf("vc_rseq_inject_aborts: %ld over %ld knob periods; by {delay, yield}:",
	       (long)vc_rseq_inject_aborts, ticks);
	for (int p = 0; p < KNOB_PHASES; p++)
		printf(" {%d,%d}: %ld", knob_schedule[p][0], knob_schedule[p][1], knob_aborts[p]);
	printf("\n");
}
#else
#define INJECT 0
#define KNOBS_TICK_US 10000
#define knobs_tick NULL
#define knobs_off NULL
static inline void knobs_finish(long ticks)
{
	(void)ticks;
}
#endif

#endif
