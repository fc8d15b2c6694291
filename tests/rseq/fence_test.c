/* tests/rseq/fence_test.c - vc_rseq_fence() makes draining another index's stack safe.
 *
 * Usage: fence-test [--threads=4] [--ms=1000] [--no-fence] [--stop=sentinel|zero]
 *
 * What the allocator does to empty the cache of an index it does not own, done here
 * as fast as possible by a drainer thread against workers (a crowd, crowd.h, indexed
 * by mm_cid) that keep pushing and popping single objects and batches, and refill
 * their bags from a shared pool:
 *   1. stop:   compare-and-swap the header from the value read, H, to the stop word:
 *              H's `current`, begin 0xffff, end 0. Every pop compares current <= begin
 *              and every push current >= end, so both fail whatever `current` holds;
 *   2. fence:  vc_rseq_fence(), which must return 0;
 *   3. settle: re-read the header. A section that was in flight at step 1 may have
 *              completed before the fence returned (the fence aborts or lets finish):
 *              a batch commit changed only `current`; a single-object commit wrote
 *              the whole (live) word back, so stop and fence again until the stop
 *              word stays; then `current` is final;
 *   4. take:   the objects in slots [begin, current) into the pool;
 *   5. reopen: compare-and-swap the header from the word read in step 3 to
 *              {current = begin, begin, end}.
 *
 * Why this fails without the fence: a worker that loaded `current` before step 1 and
 * has not yet made its commit store is still inside its critical section; nothing in
 * step 1 stops it. Its commit can then land after step 3: step 5's compare-and-swap
 * finds another header (counted as a late commit), and the objects no longer add up
 * (a late pop hands out an object step 4 also took: a duplicate; a late push records
 * an object in a slot step 5 discards: lost). The fence aborts every critical section
 * in flight on any CPU, or lets it complete, before it returns, so neither can happen.
 * The test is built with the injection points and a delay loop inside each critical
 * section (about a microsecond between load and commit), so that drains often hit a
 * section in flight: the count of sections that completed between stop and fence is
 * printed. --no-fence skips step 2 and shows the failures the checks detect (not part
 * of the suite: how many races a run hits depends on timing). On a single allowed CPU
 * the drainer and a worker never run at the same time, a worker found inside its
 * section has been preempted, which aborts it anyway: the test cannot tell a fence
 * from none there (it says so).
 *
 * --stop=zero uses the all-zero stop word instead (rseq.h calls a zero header
 * "stopped") and, like allocator/vcpu_cache.c, re-stops and fences again while late
 * commits show up. It is not safe: a commit completing after the stop writes only
 * `current`, leaving {current, 0, 0, 0}, and pops then succeed again (current > begin
 * = 0), down into slots below begin, until the drainer notices. This mode fails here
 * (guard values popped, duplicates): the zero stop is only safe for a stack that was
 * never live.
 *
 * Every operation reads the header in one 64-bit load (rseq/arch/x86_64.h). When
 * they read `current` and `begin`/`end` with two loads, a section starting after
 * step 1 could pair the stopped `current` with the `begin`/`end` written by step 5
 * and commit into the reopened stack: duplicates here, under load, about one run in
 * ten.
 *
 * Checked: no late commit; every object 1..M in exactly one place (stack, bag or
 * pool); every fence returned 0; sane headers and intact guards (stack_set.h).
 */
#include "crowd.h"
#include "cpus.h"
#include "vctest.h"
#include "rseq.h"
#include "stack_set.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if !(defined(VC_RSEQ_INJECT) && VC_RSEQ_INJECT)
#error "fence-test is built with rseq_inject_dep (it widens the critical sections)"
#endif

enum {
	END = 40,
	BAG_INIT = 32,
	BAG_MAX = 64,
	BATCH_MAX = 8,
	REFILL = 16,
	DELAY_LOOPS = 2000, /* vc_rseq_inject_delay while the drainer runs */
};

struct worker {
	void *bag[BAG_MAX];
	int count;
	uint64_t rng;
	struct stack_counts n;
	long refills;
} __attribute__((aligned(64)));

static const struct vc_rseq_info *info;
static struct stack_set set;
static struct worker *workers;
static bool use_fence = true;
static bool zero_stop; /* --stop=zero: the all-zero stop word (unsafe, see above) */

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static void **pool;
static long pool_n, pool_size;

static pthread_t drainer;
static int drainer_stop; /* atomic */
static struct {
	long drains, taken, late_commits, cas_lost, fences, fence_failures;
	long completed_in_flight; /* drains whose header changed during the fence */
	long restops;             /* stops repeated after a late single-object commit */
} dr;

/* The stop word of a live header: begin 0xffff and end 0 make every pop see "empty"
 * and every push "full" whatever `current` holds, so a commit completing after the
 * stop changes only `current` and leaves the stack stopped. `current` is kept. */
static uint64_t stopped_word(struct vc_rseq_stack live)
{
	return vc_rseq_stack_stop_word(vc_rseq_stack_pack(live));
}

static void fence_now(void)
{
	if (!use_fence)
		return;
	dr.fences++;
	if (vc_rseq_fence() != 0)
		dr.fence_failures++;
}

/* Steps 1-4 of the header comment on index i; false when step 1 lost a race. */
static bool drain(unsigned i)
{
	struct per_index *st = stack_at(&set, i);
	uint64_t *word = vc_rseq_stack_word_of(stack_hdr(st));
	uint64_t old = stack_header_load(stack_hdr(st));
	struct vc_rseq_stack live = vc_rseq_stack_unpack(old);
	uint64_t stop = zero_stop ? 0 : stopped_word(live);
	if (live.begin != STACK_BEGIN ||
	    !__atomic_compare_exchange_n(word, &old, stop, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_RELAXED)) {
		dr.cas_lost++;
		return false;
	}
	fence_now();
	/* A section in flight at the stop may have completed before the fence returned:
	 * its commit store holds the final `current`. */
	unsigned current = live.current;
	uint64_t now = stack_header_load(stack_hdr(st));
	if (!zero_stop) {
		/* A late batch commit changed only `current`; a late single-object commit
		 * wrote back a live word: stop it again and fence again (rseq.h). */
		while (!vc_rseq_stack_is_stopped(now)) {
			dr.completed_in_flight++;
			dr.restops++;
			vc_rseq_stack_stop(word);
			fence_now();
			now = stack_header_load(stack_hdr(st));
		}
		struct vc_rseq_stack h = vc_rseq_stack_unpack(now);
		VCT_EXPECT(h.begin == VC_RSEQ_STACK_STOPPED_BEGIN && h.end == 0 && h.reserved == 0,
			   "stack %u: stopped header became %#llx", i, (unsigned long long)now);
		dr.completed_in_flight += h.current != current;
		current = h.current;
	} else {
		/* The zero stop: a late commit leaves {current, 0, 0, 0}; stop it again and
		 * fence again until the header stays zero. */
		while (now != 0) {
			dr.completed_in_flight++;
			current = (unsigned)(now & 0xffff);
			while (!__atomic_compare_exchange_n(word, &now, 0, false, __ATOMIC_ACQ_REL,
							    __ATOMIC_RELAXED))
				;
			fence_now();
			now = stack_header_load(stack_hdr(st));
		}
	}
	pthread_mutex_lock(&pool_lock);
	for (unsigned k = live.begin; k < current && k < STACK_END_MAX; k++)
		if (pool_n < pool_size) /* more only when objects were duplicated */
			pool[pool_n++] = st->region[k];
	pthread_mutex_unlock(&pool_lock);
	if (current > live.begin)
		dr.taken += current - live.begin;
	uint64_t reopened = vc_rseq_stack_pack(
	    (struct vc_rseq_stack){.current = live.begin, .begin = live.begin, .end = live.end});
	if (!__atomic_compare_exchange_n(word, &now, reopened, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_RELAXED)) {
		dr.late_commits++;
		if (dr.late_commits <= 5)
			printf("late commit on stack %u: the stopped header became %#llx\n", i,
			       (unsigned long long)now);
		__atomic_store_n(word, reopened, __ATOMIC_RELEASE);
	}
	dr.drains++;
	return true;
}

static void *drainer_main(void *p)
{
	(void)p;
	while (!__atomic_load_n(&drainer_stop, __ATOMIC_ACQUIRE))
		for (unsigned i = 0; i < set.count; i++)
			drain(i);
	return NULL;
}

/* The crowd's first tick starts the drainer, once every worker is running. */
static void tick(long k)
{
	if (k != 0)
		return;
	vc_rseq_inject_delay = DELAY_LOOPS;
	if (pthread_create(&drainer, NULL, drainer_main, NULL) != 0)
		VCT_FATAL("pthread_create (drainer)");
}

static void before_stop(void)
{
	__atomic_store_n(&drainer_stop, 1, __ATOMIC_RELEASE);
	pthread_join(drainer, NULL);
	vc_rseq_inject_delay = 0;
}

static void prepare(int i, void *ctx)
{
	(void)ctx;
	if (!vc_rseq_area())
		VCT_FATAL("thread without an rseq area");
	struct worker *w = &workers[i];
	w->rng = 0x9E3779B97F4A7C15ULL * (uint64_t)(i + 1);
	for (int k = 0; k < BAG_INIT; k++)
		w->bag[w->count++] = (void *)(uintptr_t)(i * BAG_INIT + k + 1);
}

static void refill(struct worker *w)
{
	pthread_mutex_lock(&pool_lock);
	while (pool_n > 0 && w->count < REFILL)
		w->bag[w->count++] = pool[--pool_n];
	pthread_mutex_unlock(&pool_lock);
	w->refills++;
}

static void body(int i, void *ctx)
{
	(void)ctx;
	struct worker *w = &workers[i];
	while (crowd_running()) {
		if (w->count < 2)
			refill(w);
		uint64_t r = vct_rand(&w->rng);
		uint32_t k = 1 + (uint32_t)((r >> 8) % BATCH_MAX);
		unsigned op = (unsigned)(r % 4);
		if (w->count == 0)
			op |= 1; /* pop */
		if (w->count == BAG_MAX)
			op &= 2; /* push */
		switch (op) {
		case 0:
			if (stack_push_one(&set, w->bag[w->count - 1], &w->n) == 0)
				w->count--;
			break;
		case 1:
			if (stack_pop_one(&set, &w->bag[w->count], &w->n) == 0)
				w->count++;
			break;
		case 2: {
			if (k > (uint32_t)w->count)
				k = (uint32_t)w->count;
			void **top = &w->bag[w->count - (int)k];
			uint32_t pushed = stack_push_batch(&set, top, k, &w->n);
			memmove(top, top + pushed, (k - pushed) * sizeof *top);
			w->count -= (int)pushed;
			break;
		}
		default:
			if (k > (uint32_t)(BAG_MAX - w->count))
				k = (uint32_t)(BAG_MAX - w->count);
			w->count += (int)stack_pop_batch(&set, &w->bag[w->count], k, &w->n);
			break;
		}
	}
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	int threads = (int)vct_arg_long(argc, argv, "threads", 4);
	long ms = vct_arg_long(argc, argv, "ms", 1000);
	for (int a = 1; a < argc; a++)
		if (strcmp(argv[a], "--no-fence") == 0)
			use_fence = false;
	const char *stop = vct_arg_str(argc, argv, "stop", "sentinel");
	if (strcmp(stop, "zero") != 0 && strcmp(stop, "sentinel") != 0)
		VCT_FATAL("--stop=sentinel|zero");
	zero_stop = strcmp(stop, "zero") == 0;
	if (threads < 1 || threads > 256 || ms < 1 || ms > 20000)
		VCT_FATAL("bad arguments");
	vct_watchdog((unsigned)(ms / 1000) + 40);
	info = vc_rseq_init();
	if (!info->has_cpu_id)
		VCT_FATAL("needs rseq (owner %d)", info->owner);
	if (!info->has_mm_cid)
		printf("the kernel does not provide mm_cid (feature size %u): the stacks are "
		       "indexed by cpu_id\n",
		       info->kernel_feature_size);
	if (!info->fence)
		VCT_FATAL("membarrier private-expedited-rseq is not available: no fence");
	struct cpu_list allowed;
	cpu_list_allowed(&allowed);

	stack_set_init(&set, info->has_mm_cid ? VC_RSEQ_INDEX_MM_CID : VC_RSEQ_INDEX_CPU_ID,
		       STACK_LAYOUT_ARRAY, info->possible_cpus, END);
	long objects = (long)threads * BAG_INIT;
	workers = aligned_alloc(64, (size_t)threads * sizeof *workers);
	pool_size = 2 * objects;
	pool = calloc((size_t)pool_size, sizeof *pool);
	unsigned *seen = calloc((size_t)objects + 1, sizeof *seen);
	if (!workers || !pool || !seen)
		VCT_FATAL("out of memory");
	memset(workers, 0, (size_t)threads * sizeof *workers);

	struct crowd_config cfg = {
	    .threads = threads,
	    .prepare = prepare,
	    .body = body,
	    .tick = tick,
	    .before_stop = before_stop,
	    .run_ms = (int)ms,
	    .tick_us = 10000,
	};
	struct crowd_report rep;
	crowd_run(&cfg, &rep);

	struct stack_counts all = {0};
	long refills = 0;
	for (int i = 0; i < threads; i++) {
		struct worker *w = &workers[i];
		stack_counts_add(&all, &w->n);
		refills += w->refills;
		for (int k = 0; k < w->count; k++)
			object_seen(seen, objects, w->bag[k], "a bag");
	}
	for (long k = 0; k < pool_n; k++)
		object_seen(seen, objects, pool[k], "the pool");
	long in_stacks = stack_set_audit(&set, seen, objects);
	long missing, duplicated;
	objects_audit(seen, objects, &missing, &duplicated);

	printf("owner %s, %s, %s stop word, %d allowed cpus: %d workers, %.2f s, "
	       "%ld affinity moves\n",
	       info->owner == VC_RSEQ_OWNER_GLIBC ? "glibc" : "self",
	       use_fence ? "with the fence" : "WITHOUT the fence (control run)",
	       zero_stop ? "zero" : "sentinel", allowed.n, threads, rep.seconds,
	       rep.affinity_moves);
	printf("drainer: %ld drains (%ld lost a race to a commit), %ld objects taken, "
	       "%ld fences (%ld failed); %ld sections completed between stop and fence, "
	       "%ld stopped again after a single-object commit, %ld late commits\n",
	       dr.drains, dr.cas_lost, dr.taken, dr.fences, dr.fence_failures,
	       dr.completed_in_flight, dr.restops, dr.late_commits);
	printf("workers: %ld objects pushed, %ld popped, %ld full, %ld empty, %ld refills, "
	       "%ld aborts; vc_rseq_inject_aborts %ld\n",
	       all.objects_pushed, all.objects_popped, all.full, all.empty, refills, all.aborts,
	       (long)vc_rseq_inject_aborts);
	printf("objects: %ld: %ld in stacks, %ld in the pool; %ld missing, %ld duplicated\n",
	       objects, in_stacks, pool_n, missing, duplicated);
	if (allowed.n < 2)
		printf("note: one allowed cpu; this run cannot tell a fence from none\n");

	VCT_EXPECT(dr.late_commits == 0, "%ld commits landed on stopped stacks", dr.late_commits);
	VCT_EXPECT(missing == 0 && duplicated == 0, "%ld objects missing, %ld duplicated", missing,
		   duplicated);
	VCT_EXPECT(dr.fence_failures == 0, "vc_rseq_fence failed %ld times", dr.fence_failures);
	VCT_EXPECT(dr.drains > 0 && dr.taken > 0, "the drainer never took an object");
	VCT_EXPECT(all.objects_pushed > 0 && all.objects_popped > 0, "the workers did nothing");
	stack_set_free(&set);
	free(workers);
	free(pool);
	free(seen);
	return vct_exit();
}
