/* tests/rseq/index_window.h - widen the window between reading an index and entering
 * the critical section that uses it.
 *
 * A thread reads mm_cid (or cpu_id), computes addresses from it and only then starts
 * the critical section, whose first step compares the index field with the value read.
 * A preemption or migration in between is outside the section, so it does not abort
 * it: only that compare stops the thread from working on an index that is now another
 * thread's. In injection builds, index_window_delay() spins vc_rseq_inject_delay
 * iterations at that point, so that such stale indexes happen often and a layer whose
 * compare were missing or wrong would lose updates visibly. Plain builds: nothing.
 */
#ifndef VC_TESTS_RSEQ_INDEX_WINDOW_H
#define VC_TESTS_RSEQ_INDEX_WINDOW_H

#include "rseq.h"

static inline void index_window_delay(void)
{
#if defined(VC_RSEQ_INJECT) && VC_RSEQ_INJECT
	for (int n = vc_rseq_inject_delay; n > 0; n--)
		__asm__ volatile("" ::: "memory");
#endif
}

#endif
