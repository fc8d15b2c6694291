/* allocator/maintenance.c - the periodic work, the thread that does it when the
 * program does not call the allocator, and the release of everything free on request.
 *
 * The periodic work: the reclaim tick (idle vCPU caches drained, idle transfer
 * arrays flushed to their spans: vcpu_cache.c, central.c), the page heap's decay
 * (free pages idle for VCMALLOC_DECAY_MS returned to the OS: pageheap.c) and the
 * huge-block cache's decay (huge.c). Each is cheap when not due. vc_maintain runs
 * what is due from the slow paths and at thread exit.
 *
 * Why a thread as well: a process that goes quiet after a burst (a server between
 * requests, a program waiting for input) makes no slow path, so without one its
 * caches and free pages would stay resident until its next allocation, which may
 * never come. The maintenance thread runs the same work every half period
 * (min(VCMALLOC_RECLAIM_MS, VCMALLOC_DECAY_MS) / 2) while anything is left to give
 * back, releasing every aged page at once (a slow path releases one batch), and
 * sleeps on a futex once a few rounds in a row found nothing populated, resident
 * or cached; the next slow path wakes it. An idle process costs no wake-ups.
 *
 * When it starts: in the program's first pthread_create (the shared library's
 * export) or at the first thread exit (the static archive), never from malloc:
 * malloc can run under the dynamic loader's locks, which pthread_create takes.
 * So a single-threaded program never gets a thread it did not ask for (some rely
 * on having one thread: unshare(CLONE_NEWUSER), setns into a mount namespace); its
 * memory comes back at its next slow path, or with malloc_trim. VCMALLOC_BACKGROUND=0
 * turns the thread off. After fork the child has no maintenance thread; it starts
 * one again the same way.
 *
 * The release on request (vc_release_free_memory): every transfer array back to its
 * spans, every free page of every node and every cached huge mapping back to the
 * OS; with VC_RELEASE_WITH_CACHES, every vCPU cache is drained first, so that the
 * objects cached there reach their spans too. The public calls (malloc_trim,
 * vcmalloc_release_free_memory, tcmalloc's ReleaseFreeMemory) release what is free;
 * the out-of-memory retry (alloc.c), a crowd of threads gone (init.c) and
 * mallctl's arena.<all>.purge release the caches too; arena.<i>.purge releases
 * one node's pages (vc_release_node_free_memory). No lock is held by the caller,
 * and each layer makes its system calls with its own locks dropped.
 *
 * Invariants: the thread never allocates (its stack and TLS are the C library's),
 * blocks every signal (process-directed signals go to the program's threads), and
 * takes allocator locks only inside the same functions the slow paths call, so the
 * fork handlers' lock order holds for it too.
 */
#include "internal.h"
#include "os.h"

#include <pthread.h>
#include <signal.h>

/* 0: not started; 1: started (or being started) in this process. */
static uint32_t started;
/* Never changes and nobody wakes it: the thread's timed sleep between rounds. */
static uint32_t round_timer;
/* The futex word the thread sleeps on: 1 while it is parked (asleep with nothing to
 * do), set back to 0 by whoever wakes it. */
static uint32_t parked;

/* Rounds in a row that found nothing to give back before the thread parks: the
 * reclaim tick drains a cache after two idle scans and a transfer array after one,
 * so three empty rounds mean nothing more will become releasable by waiting. */
#define VC_IDLE_ROUNDS_TO_PARK 3

/* What is due of the page heap's work, the huge-block decay and the reclaim tick;
 * the page heap's aged spans all at once (every_batch) or one batch per node. */
static void run_due_work(bool every_batch)
{
	uint64_t now = vc_os_now_ms();
	vc_pageheap_maintain(now, every_batch);
	vc_huge_maybe_decay(now);
	if (vc_cache_tick())
		vc_central_trim_idle(); /* the tick's period: transfer arrays idle since the last */
}

void vc_maintain(void)
{
	run_due_work(false);
	/* A relaxed load on every slow path; the exchange and the system call only
	 * when the thread sleeps. A wake-up lost to a race with the thread parking is
	 * made by the next slow path. */
	if (__atomic_load_n(&parked, __ATOMIC_RELAXED) &&
	    __atomic_exchange_n(&parked, 0, __ATOMIC_RELAXED))
		vc_os_wake(&parked);
}

static uint64_t period_ms(void)
{
	uint64_t r = vc_g.opt.reclaim_ms, d = vc_g.opt.decay_ms;
	uint64_t p = r && d ? (r < d ? r : d) : (r ? r : d);
	p /= 2;
	return p < 10 ? 10 : p;
}

/* One round; true when something is still populated, resident or cached. */
static bool round_leaves_work(void)
{
	run_due_work(true);
	return __atomic_load_n(&vc_cache_populated_now, __ATOMIC_RELAXED) != 0 ||
	       vc_pageheap_holds_resident_free() ||
	       __atomic_load_n(&vc_huge_cached_bytes, __ATOMIC_RELAXED) != 0;
}

static void *maintenance_thread(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "vcmalloc");
	unsigned idle_rounds = 0;
	for (;;) {
		vc_os_wait(&round_timer, 0, period_ms());
		idle_rounds = round_leaves_work() ? 0 : idle_rounds + 1;
		if (idle_rounds < VC_IDLE_ROUNDS_TO_PARK)
			continue;
		__atomic_store_n(&parked, 1, __ATOMIC_RELAXED);
		while (__atomic_load_n(&parked, __ATOMIC_RELAXED))
			vc_os_wait(&parked, 1, 0);
		idle_rounds = 0;
	}
	return NULL;
}

void vc_maintenance_start(int (*create)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
					void *))
{
	if (__atomic_load_n(&started, __ATOMIC_RELAXED) || !vc_g.opt.background ||
	    (vc_g.opt.reclaim_ms == 0 && vc_g.opt.decay_ms == 0) || !create)
		return;
	uint32_t expected = 0;
	if (!__atomic_compare_exchange_n(&started, &expected, 1, 0, __ATOMIC_RELAXED,
					 __ATOMIC_RELAXED))
		return;
	pthread_attr_t attr;
	if (pthread_attr_init(&attr) != 0)
		return; /* stays "started": no retry on every thread creation */
	sigset_t all;
	sigfillset(&all);
	pthread_attr_setsigmask_np(&attr, &all);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	pthread_t t;
	create(&t, &attr, maintenance_thread, NULL);
	pthread_attr_destroy(&attr);
}

void vc_maintenance_after_fork_child(void)
{
	__atomic_store_n(&started, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&parked, 0, __ATOMIC_RELAXED);
}

void vc_release_free_memory(enum vc_release what)
{
	vc_ensure_init();
	if (what == VC_RELEASE_WITH_CACHES)
		vc_cache_reclaim(true);
	vc_central_flush();
	for (unsigned n = 0; n < vc_g.nnodes; n++)
		vc_pageheap_decay(n, true);
	vc_huge_release_all();
}

void vc_release_node_free_memory(unsigned node)
{
	vc_ensure_init();
	vc_central_flush();
	if (node < vc_g.nnodes)
		vc_pageheap_decay(node, true);
}

void vcmalloc_release_free_memory(void)
{
	vc_release_free_memory(VC_RELEASE_FREE);
}

int vcmalloc_reclaim(int force)
{
	int drained = vc_cache_reclaim(force != 0);
	vc_central_trim_idle();
	vc_huge_maybe_decay(vc_os_now_ms());
	return drained;
}
