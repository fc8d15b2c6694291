/* tests/rseq/stacks_test.c - per-index stacks of pointers under contention: every
 * object is accounted for exactly once.
 *
 * Usage: stacks-test [--threads=48] [--ms=1000]
 *
 * The objects are the integers 1..M, stored as pointers. There are four sets of
 * per-index stacks (stack_set.h): one indexed by mm_cid and one by cpu_id in the array
 * layout, and the same two in the slab layout, where push one and pop one are the slab
 * sections (vc_rseq_slab_push / vc_rseq_slab_pop, which read the index themselves)
 * while the batches and resizes are the forms given an index read before, on the
 * same headers. Each worker of the crowd (crowd.h: pinned, free and hopping threads,
 * many more than CPUs) holds a private bag of objects and, in a loop, picks one of the
 * four sets uniformly at random and does one of
 *   push one, pop one, push_batch or pop_batch of 1..BATCH_MAX objects,
 *   resize: vc_rseq_cmpeq_store of the whole header word with a new `end`,
 * on the stack of its current index, retrying after every abort (-1). SIGUSR1 handlers
 * move one object between a per-thread pocket and the current mm_cid stack, of the
 * array set and of the slab set in turn (a critical section nested in a thread whose
 * own section the signal has just aborted).
 *
 * Checked at the end, when every thread has stopped:
 *   - each object 1..M is in exactly one place: the live slots [begin, current) of a
 *     stack, a bag or a pocket. Two threads committing on one index at once, or a
 *     commit after an abort, lose or duplicate objects;
 *   - every header, in all four sets, has begin <= current <= end <= STACK_END_MAX
 *     and reserved 0, and the guard slots outside [STACK_BEGIN, STACK_END_MAX) (the
 *     header's excepted) are intact;
 *   - objects in stacks == objects pushed - objects popped, summed over all threads;
 *   - every kind of operation completed, the slab pushes and pops included.
 *
 * Built twice, like counters-test: with rseq_inject_dep the knobs of inject_knobs.h
 * widen every critical section (and the index window, index_window.h), and vc_rseq_inject_aborts
 * must be > 0 and equal the number of -1 returns seen by the callers.
 */
#include "crowd.h"
#include "cpus.h"
#include "vctest.h"
#include "rseq.h"
#include "stack_set.h"

#include "inject_knobs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	END_INIT = 36,
	BAG_INIT = 24, /* objects each worker starts with */
	BAG_MAX = 64,
	BATCH_MAX = 8,
	POCKET_MAX = 8,
};

struct worker {
	void *bag[BAG_MAX];
	int count;
	uint64_t rng;
	struct stack_counts n;
	/* Published at the end, from the thread-local pocket of the signal handler. */
	void *pocket[POCKET_MAX];
	int pocket_n;
	struct stack_counts handler;
} __attribute__((aligned(64)));

static const struct vc_rseq_info *info;
/* [0] by mm_cid, [1] by cpu_id, in the array layout; [2] and [3] the same indexes in
 * the slab layout. */
enum { SETS = 4 };
_Static_assert((SETS & (SETS - 1)) == 0, "a set is picked by the low bits of a random word");
static struct stack_set sets[SETS];
static struct worker *workers;

static __thread void *tls_pocket[POCKET_MAX];
static __thread int tls_pocket_n;
static __thread uint64_t tls_handler_rng = 0x2545F4914F6CDD1DULL;
static __thread struct stack_counts tls_handler;
static __thread unsigned tls_handler_turn; /* even: the array set, odd: the slab set */

static void on_signal(void)
{
	int saved = errno;
	uint64_t r = vct_rand(&tls_handler_rng);
	const struct stack_set *s = &sets[tls_handler_turn++ & 1 ? 2 : 0];
	if (tls_pocket_n == POCKET_MAX || (tls_pocket_n > 0 && (r & 1))) {
		if (stack_push_one(s, tls_pocket[tls_pocket_n - 1], &tls_handler) == 0)
			tls_pocket_n--;
	} else {
		void *p;
		if (stack_pop_one(s, &p, &tls_handler) == 0)
			tls_pocket[tls_pocket_n++] = p;
	}
	errno = saved;
}

static void prepare(int i, void *ctx)
{
	(void)ctx;
	if (!vc_rseq_area()) /* registers this thread when the area is ours */
		VCT_FATAL("thread without an rseq area");
	struct worker *w = &workers[i];
	w->rng = 0x9E3779B97F4A7C15ULL * (uint64_t)(i + 1);
	for (int k = 0; k < BAG_INIT; k++)
		w->bag[w->count++] = (void *)(uintptr_t)(i * BAG_INIT + k + 1);
}

static void body(int i, void *ctx)
{
	(void)ctx;
	struct worker *w = &workers[i];
	while (crowd_running()) {
		uint64_t r = vct_rand(&w->rng);
		const struct stack_set *s = &sets[r & (SETS - 1)];
		uint32_t k = 1 + (uint32_t)((r >> 8) % BATCH_MAX);
		unsigned op = (unsigned)((r >> 16) % 5);
		if (w->count == 0 && (op == 0 || op == 2))
			op = 1 + 2 * (unsigned)((r >> 24) & 1); /* nothing to push: pop */
		if (w->count == BAG_MAX && (op == 1 || op == 3))
			op = 2 * (unsigned)((r >> 24) & 1); /* bag full: push */
		switch (op) {
		case 0:
			if (stack_push_one(s, w->bag[w->count - 1], &w->n) == 0)
				w->count--;
			break;
		case 1:
			if (stack_pop_one(s, &w->bag[w->count], &w->n) == 0)
				w->count++;
			break;
		case 2: {
			/* Push the top k of the bag; the pushed ones are the first of those k. */
			if (k > (uint32_t)w->count)
				k = (uint32_t)w->count;
			void **top = &w->bag[w->count - (int)k];
			uint32_t pushed = stack_push_batch(s, top, k, &w->n);
			memmove(top, top + pushed, (k - pushed) * sizeof *top);
			w->count -= (int)pushed;
			break;
		}
		case 3:
			if (k > (uint32_t)(BAG_MAX - w->count))
				k = (uint32_t)(BAG_MAX - w->count);
			w->count += (int)stack_pop_batch(s, &w->bag[w->count], k, &w->n);
			break;
		default:
			stack_resize(s, &w->rng, &w->n);
			break;
		}
	}
	crowd_quiesce();
	memcpy(w->pocket, tls_pocket, sizeof w->pocket);
	w->pocket_n = tls_pocket_n;
	w->handler = tls_handler;
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
	/* Without mm_cid (kernels before 6.3) every set is indexed by cpu_id. */
	if (!info->has_mm_cid)
		printf("the kernel does not provide mm_cid (feature size %u): every stack set "
		       "is indexed by cpu_id\n",
		       info->kernel_feature_size);
	enum vc_rseq_index first = info->has_mm_cid ? VC_RSEQ_INDEX_MM_CID : VC_RSEQ_INDEX_CPU_ID;
	stack_set_init(&sets[0], first, STACK_LAYOUT_ARRAY, info->possible_cpus, END_INIT);
	stack_set_init(&sets[1], VC_RSEQ_INDEX_CPU_ID, STACK_LAYOUT_ARRAY, info->possible_cpus,
		       END_INIT);
	stack_set_init(&sets[2], first, STACK_LAYOUT_SLAB, info->possible_cpus, END_INIT);
	stack_set_init(&sets[3], VC_RSEQ_INDEX_CPU_ID, STACK_LAYOUT_SLAB, info->possible_cpus,
		       END_INIT);
	long objects = (long)threads * BAG_INIT;
	workers = aligned_alloc(64, (size_t)threads * sizeof *workers);
	unsigned *seen = calloc((size_t)objects + 1, sizeof *seen);
	if (!workers || !seen)
		VCT_FATAL("out of memory");
	memset(workers, 0, (size_t)threads * sizeof *workers);

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

	/* Where every object is now. */
	struct stack_counts all = {0}, handlers = {0};
	long in_bags = 0, in_pockets = 0, in_stacks = 0;
	for (int i = 0; i < threads; i++) {
		struct worker *w = &workers[i];
		stack_counts_add(&all, &w->n);
		stack_counts_add(&handlers, &w->handler);
		VCT_EXPECT(w->count >= 0 && w->count <= BAG_MAX, "thread %d: bag count %d", i,
			   w->count);
		VCT_EXPECT(w->pocket_n >= 0 && w->pocket_n <= POCKET_MAX, "thread %d: pocket %d", i,
			   w->pocket_n);
		for (int k = 0; k < w->count && k < BAG_MAX; k++)
			object_seen(seen, objects, w->bag[k], "a bag");
		for (int k = 0; k < w->pocket_n && k < POCKET_MAX; k++)
			object_seen(seen, objects, w->pocket[k], "a pocket");
		in_bags += w->count;
		in_pockets += w->pocket_n;
	}
	for (int s = 0; s < SETS; s++) {
		long live = stack_set_audit(&sets[s], seen, objects);
		printf("%s stacks: %ld objects left in %u stacks\n", sets[s].name, live,
		       sets[s].count);
		in_stacks += live;
	}
	long missing, duplicated;
	objects_audit(seen, objects, &missing, &duplicated);

	printf("%s, owner %s: %d threads, %.2f s, %ld signals sent, %ld affinity moves\n",
	       INJECT ? "injection build" : "plain build",
	       info->owner == VC_RSEQ_OWNER_GLIBC ? "glibc" : "self", threads, rep.seconds,
	       rep.signals_sent, rep.affinity_moves);
	printf("workers: push %ld, pop %ld, push_batch %ld, pop_batch %ld operations; "
	       "%ld objects pushed, %ld popped; %ld full, %ld empty; %ld resizes (%ld stale); "
	       "%ld aborts\n",
	       all.push_ops, all.pop_ops, all.push_batch_ops, all.pop_batch_ops, all.objects_pushed,
	       all.objects_popped, all.full, all.empty, all.resizes, all.resize_stale, all.aborts);
	printf("slab sections: %ld objects pushed, %ld popped (workers); %ld, %ld (handlers)\n",
	       all.slab_pushed, all.slab_popped, handlers.slab_pushed, handlers.slab_popped);
	printf("signal handlers: %ld pushes, %ld pops, %ld aborts\n", handlers.objects_pushed,
	       handlers.objects_popped, handlers.aborts);
	printf("objects: %ld in all: %ld in stacks, %ld in bags, %ld in pockets; "
	       "%ld missing, %ld duplicated\n",
	       objects, in_stacks, in_bags, in_pockets, missing, duplicated);

	VCT_EXPECT(missing == 0 && duplicated == 0, "%ld objects missing, %ld duplicated", missing,
		   duplicated);
	long net = all.objects_pushed + handlers.objects_pushed - all.objects_popped -
		   handlers.objects_popped;
	VCT_EXPECT(in_stacks == net, "stacks hold %ld objects, but pushes - pops = %ld", in_stacks,
		   net);
	VCT_EXPECT(all.objects_pushed > 0 && all.objects_popped > 0 && all.push_batch_ops > 0 &&
		       all.pop_batch_ops > 0 && all.resizes > 0 && all.slab_pushed > 0 &&
		       all.slab_popped > 0,
		   "some operation never completed");
	VCT_EXPECT(rep.signals_sent > 0 && handlers.push_ops + handlers.pop_ops > 0,
		   "no signal reached a handler");
#if INJECT
	long entered = vc_rseq_inject_aborts;
	VCT_EXPECT(entered > 0, "no abort happened under injection");
	VCT_EXPECT(entered == all.aborts + handlers.aborts,
		   "abort handlers entered %ld times but callers saw %ld aborts", entered,
		   all.aborts + handlers.aborts);
#endif
	for (int s = 0; s < SETS; s++)
		stack_set_free(&sets[s]);
	free(workers);
	free(seen);
	return vct_exit();
}
