/* tests/rseq/counters_test.c - per-index counters under contention: the sums are exact.
 *
 * Usage: counters-test [--threads=48] [--ms=1000]
 *
 * Many more threads than CPUs (pinned, free and hopping ones, see crowd.h) add 1 to a
 * per-index counter with vc_rseq_addv, once indexed by cpu_id and once by mm_cid, in a
 * loop for about `ms` milliseconds, retrying after every abort. Each thread counts its
 * own completed iterations in private memory. A signalling thread interrupts them with
 * SIGUSR1; the handler itself adds 1 inside a critical section (a nested section on a
 * thread whose own section the signal has just aborted). At the end:
 *   sum of cpu_id counters == sum of iterations of all threads
 *   sum of mm_cid counters == that sum + handler adds
 * A lost update (two threads committing on one index at once, or a commit after an
 * abort) makes a sum too small; a double commit makes it too large.
 *
 * Built twice. With the rseq layer's injection points (rseq_inject_dep, which defines
 * VC_RSEQ_INJECT=1) the main thread cycles the knobs every 2 ms through
 *   short delay / long spin inside / long delay + long spin / no injection,
 * which widens every critical section so that preemption, migration and signals hit
 * it (and the window between reading the index and entering the section, see
 * index_window.h). Injection is switched off before the workers stop, so that their
 * last operations complete. Then also: vc_rseq_inject_aborts (entries into the abort handlers) must
 * be > 0 and equal the number of -1 returns seen by all callers, handlers included.
 */
#include "crowd.h"
#include "cpus.h"
#include "vctest.h"
#include "index_window.h"
#include "rseq.h"

#include "inject_knobs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

struct padded_counter {
	intptr_t v;
	char pad[64 - sizeof(intptr_t)];
};

struct tally {
	long iterations;
	long aborts;	     /* -1 returns in the body */
	long handler_adds;   /* adds done by signal handlers on this thread */
	long handler_aborts; /* -1 returns in those handlers */
	unsigned max_cpu_id, max_mm_cid;
	char pad[64];
};

static const struct vc_rseq_info *info;
static struct padded_counter *by_cpu, *by_cid;
/* The second index: mm_cid, or cpu_id again on a kernel without mm_cid (6.1 and
 * older: the layer's fallback index, tested twice over rather than not at all). */
static enum vc_rseq_index second_ix = VC_RSEQ_INDEX_MM_CID;
static const char *second_name = "mm_cid";
static struct tally *tallies;

static __thread long tls_handler_adds, tls_handler_aborts;

/* One add of 1 on the counter of the current index; returns the -1 returns seen. */
static inline long add_one(enum vc_rseq_index ix, struct padded_counter *c, unsigned *max_seen)
{
	struct vc_rseq_abi *rs = vc_rseq_area();
	long aborts = 0;
	if (!rs)
		VCT_FATAL("no rseq area");
	for (;;) {
		uint32_t idx = vc_rseq_read_index(rs, ix);
		if (idx >= info->possible_cpus)
			VCT_FATAL("%s %u not below possible cpus %u",
				  ix == VC_RSEQ_INDEX_MM_CID ? "mm_cid" : "cpu_id", idx,
				  info->possible_cpus);
		if (max_seen && idx > *max_seen)
			*max_seen = idx;
		index_window_delay();
		int r = ix == VC_RSEQ_INDEX_MM_CID
			    ? vc_rseq_addv(VC_RSEQ_INDEX_MM_CID, rs, idx, &c[idx].v, 1)
			    : vc_rseq_addv(VC_RSEQ_INDEX_CPU_ID, rs, idx, &c[idx].v, 1);
		if (r == 0)
			return aborts;
		if (r != -1)
			VCT_FATAL("addv returned %d", r);
		aborts++;
	}
}

static void on_signal(void)
{
	int saved = errno;
	tls_handler_aborts += add_one(second_ix, by_cid, NULL);
	tls_handler_adds++;
	errno = saved;
}

static void prepare(int i, void *ctx)
{
	(void)i;
	(void)ctx;
	if (!vc_rseq_area()) /* registers this thread when the area is ours */
		VCT_FATAL("thread without an rseq area");
}

static void body(int i, void *ctx)
{
	(void)ctx;
	struct tally *t = &tallies[i];
	unsigned max_cpu = 0, max_cid = 0;
	long aborts = 0;
	long k;
	for (k = 0; crowd_running(); k++) {
		aborts += add_one(VC_RSEQ_INDEX_CPU_ID, by_cpu, &max_cpu);
		aborts += add_one(second_ix, by_cid, &max_cid);
	}
	crowd_quiesce();
	t->iterations = k;
	t->aborts = aborts;
	t->handler_adds = tls_handler_adds;
	t->handler_aborts = tls_handler_aborts;
	t->max_cpu_id = max_cpu;
	t->max_mm_cid = max_cid;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	int threads = (int)vct_arg_long(argc, argv, "threads", 48);
	long ms = vct_arg_long(argc, argv, "ms", 1000);
	if (threads < 1 || threads > 1024 || ms < 1 || ms > 20000)
		VCT_FATAL("bad arguments");
	vct_watchdog((unsigned)(ms / 1000) + 40);
	info = vc_rseq_init();
	if (!info->has_cpu_id)
		VCT_FATAL("rseq is not available (owner none): critical sections cannot run");
	if (!info->has_mm_cid) {
		second_ix = VC_RSEQ_INDEX_CPU_ID;
		second_name = "cpu_id (second)";
		printf("the kernel does not provide mm_cid (feature size %u): the second "
		       "counter set is indexed by cpu_id too\n",
		       info->kernel_feature_size);
	}
	by_cpu = calloc(info->possible_cpus, sizeof *by_cpu);
	by_cid = calloc(info->possible_cpus, sizeof *by_cid);
	tallies = calloc((size_t)threads, sizeof *tallies);
	if (!by_cpu || !by_cid || !tallies)
		VCT_FATAL("out of memory");

	struct crowd_config cfg = {
	    .threads = threads,
	    .prepare = prepare,
	    .body = body,
	    .signals = true,
	    .on_signal = on_signal,
	    .tick = knobs_tick,
	    .before_stop = knobs_off,
	    .run_ms = (int)ms,
	    .tick_us = KNOBS_TICK_US,
	};
	struct crowd_report rep;
	crowd_run(&cfg, &rep);
	knobs_finish(rep.ticks);

	long iterations = 0, least = -1, most = 0;
	long aborts = 0, handler_adds = 0, handler_aborts = 0;
	unsigned max_cpu = 0, max_cid = 0;
	for (int i = 0; i < threads; i++) {
		long it = tallies[i].iterations;
		iterations += it;
		least = least < 0 || it < least ? it : least;
		most = it > most ? it : most;
		aborts += tallies[i].aborts;
		handler_adds += tallies[i].handler_adds;
		handler_aborts += tallies[i].handler_aborts;
		if (tallies[i].max_cpu_id > max_cpu)
			max_cpu = tallies[i].max_cpu_id;
		if (tallies[i].max_mm_cid > max_cid)
			max_cid = tallies[i].max_mm_cid;
	}
	intptr_t sum_cpu = 0, sum_cid = 0;
	for (unsigned i = 0; i < info->possible_cpus; i++) {
		sum_cpu += by_cpu[i].v;
		sum_cid += by_cid[i].v;
	}
	long want = iterations;
	printf("%s, owner %s: %d threads, %.2f s, %ld iterations (per thread %ld..%ld), "
	       "%ld signals sent, %ld handler adds, %ld affinity moves\n",
	       INJECT ? "injection build" : "plain build",
	       info->owner == VC_RSEQ_OWNER_GLIBC ? "glibc" : "self", threads, rep.seconds,
	       iterations, least, most, rep.signals_sent, handler_adds, rep.affinity_moves);
	printf("cpu_id counters: sum %ld (expected %ld), highest cpu_id %u\n", (long)sum_cpu, want,
	       max_cpu);
	printf("%s counters: sum %ld (expected %ld), highest index %u\n", second_name,
	       (long)sum_cid, want + handler_adds, max_cid);
	printf("aborts (-1 returns): %ld in workers, %ld in handlers\n", aborts, handler_aborts);
	VCT_EXPECT(sum_cpu == want, "cpu_id sum %ld != %ld", (long)sum_cpu, want);
	VCT_EXPECT(sum_cid == want + handler_adds, "%s sum %ld != %ld", second_name, (long)sum_cid,
		   want + handler_adds);
	VCT_EXPECT(rep.signals_sent > 0 && handler_adds > 0, "no signal reached a handler");
#if INJECT
	long entered = vc_rseq_inject_aborts;
	VCT_EXPECT(entered > 0, "no abort happened under injection");
	VCT_EXPECT(entered == aborts + handler_aborts,
		   "abort handler entered %ld times but callers saw %ld aborts", entered,
		   aborts + handler_aborts);
#endif
	free(by_cpu);
	free(by_cid);
	free(tallies);
	return vct_exit();
}
