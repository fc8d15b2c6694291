/* allocator/init.c - start-up, fork and thread exit.
 *
 * Start-up runs on the first allocation (or from our constructor, whichever comes
 * first), under init_lock, and never allocates: rseq discovery, options, size
 * classes, the registry and the reserved vCPU regions. Registration of the fork
 * handlers and of the thread-exit key happens after vc_initialised is 2, because
 * glibc may allocate while registering them.
 *
 * fork: the prepare handler takes every lock in the documented order (lock.h), so
 * that the child starts with consistent lists (not in a single-threaded process:
 * see fork_prepare); the child re-initialises the locks (it has one thread) and
 * renews the rseq fence registration. Of the per-vCPU locks, only those of ids ever
 * populated exist for fork (vc_cache_lock_all): the state of the other possible
 * CPUs is never touched.
 */
#include "internal.h"
#include "rseq.h"
#include "vcpu_cache.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sys/single_threaded.h>

struct vc_global vc_g = {.fast = 4 /* VC_FAST_NONE */};
int vc_initialised;
static vc_lock_t init_lock = VC_LOCK_INIT;
static pthread_key_t exit_key;
static bool exit_key_ok;
static __thread int thread_noted __attribute__((tls_model("initial-exec")));
#if VC_TEST_HOOKS
struct vc_test_hooks vc_test_hooks;
#endif

static void lock_below_cache(void)
{
	for (unsigned n = 0; n < vc_g.nnodes; n++)
		for (unsigned c = 1; c < VC_NUM_CLASSES; c++)
			vc_lock(&vc_central_of(n, c)->lock);
	for (unsigned n = 0; n < vc_g.nnodes; n++)
		vc_lock(&vc_pageheaps[n].lock);
	vc_lock(&vc_huge_lock);
	vc_lock(&vc_os_lock);
}

static void unlock_below_cache(bool child)
{
	void (*release)(vc_lock_t *) = child ? vc_lock_init : vc_unlock;
	release(&vc_os_lock);
	release(&vc_huge_lock);
	for (unsigned n = 0; n < vc_g.nnodes; n++)
		release(&vc_pageheaps[n].lock);
	for (unsigned n = 0; n < vc_g.nnodes; n++)
		for (unsigned c = 1; c < VC_NUM_CLASSES; c++)
			release(&vc_central_of(n, c)->lock);
}

/* A single-threaded process may fork from a signal handler that interrupted
 * malloc while it held one of our locks: taking the locks then would deadlock on
 * ourselves, and no other thread can hold them. So the locks are taken only when
 * the process has other threads; the child always starts with free locks, and
 * drops the vCPU regions whose locks the interrupted code held (vcpu_cache.c's
 * repair_in_child). */
static bool fork_locked;

static void fork_prepare(void)
{
	fork_locked = !__libc_single_threaded;
	if (!fork_locked)
		return;
	vc_lock(&init_lock);
	vc_cache_lock_all();
	lock_below_cache();
}

static void fork_parent(void)
{
	if (!fork_locked)
		return;
	unlock_below_cache(false);
	vc_cache_unlock_all(false, true);
	vc_unlock(&init_lock);
}

/* Threads that have allocated and not exited, and the most there were since the
 * last shrink (the mark). When a crowd of threads is gone, the vCPU caches they
 * filled and the pages their data used are idle by construction: they are given
 * back now, not at the next reclaim tick, which only comes with a later allocation
 * and may never come in a process that went quiet. "Gone": at most one thread of a
 * mark of 8 or more is left; or a quarter of the mark is left, at most once per half
 * reclaim period (the crowd's last threads may still fill caches: the last exit
 * shrinks again); or, for a smaller crowd (2-7), at most one thread is left after
 * more than one ran for 1/64 of a reclaim period (16 ms by default), at most once
 * per half period. A program whose few workers have finished is then as small as
 * glibc leaves it (footprint `few`, workers alive 250 ms: final RSS 15.4 MiB
 * before, 2.2 after, glibc 2.3; `roam`, 40 ms), while one that starts and joins
 * short helper threads in quick succession does not give back what its next
 * helpers fill again (bench/speed shortthreads, waves of 4 threads living under
 * 1 ms: 4% slower when every wave's end could release). */
static uint32_t live_threads, live_threads_mark;
/* The smallest mark counted as a crowd (the first rule above). */
enum { VC_CROWD_MIN = 8 };
static uint64_t last_shrink_ms;
/* When the live count last rose to 2 (a crowd began). */
static uint64_t crowd_since_ms;

static void fork_child(void)
{
	unlock_below_cache(true);
	vc_cache_unlock_all(true, fork_locked);
	vc_lock_init(&init_lock);
	vc_rseq_fence_after_fork();
	vc_maintenance_after_fork_child();
	/* The child has one thread: the one that forked. */
	live_threads = live_threads_mark = thread_noted ? 1 : 0;
}

static int (*libc_pthread_create(void))(pthread_t *, const pthread_attr_t *,
					  void *(*)(void *), void *);

static void thread_exit(void *arg)
{
	(void)arg;
	vc_maintenance_start(libc_pthread_create());
	uint32_t live = __atomic_sub_fetch(&live_threads, 1, __ATOMIC_RELAXED);
	uint32_t mark = __atomic_load_n(&live_threads_mark, __ATOMIC_RELAXED);
	bool crowd = mark >= VC_CROWD_MIN;
	if (mark < 2 || vc_g.opt.reclaim_ms == 0 || live > (crowd ? mark / 4 : 1)) {
		vc_maintain();
		return;
	}
	uint64_t now = vc_os_now_ms();
	uint64_t since_shrink = now - __atomic_load_n(&last_shrink_ms, __ATOMIC_RELAXED);
	uint64_t crowd_ran = now - __atomic_load_n(&crowd_since_ms, __ATOMIC_RELAXED);
	bool period_passed = since_shrink >= vc_g.opt.reclaim_ms / 2;
	bool gone = crowd ? live <= 1 || period_passed
			  : period_passed && crowd_ran >= vc_g.opt.reclaim_ms / 64;
	/* A crowd's quarter-shrink leaves its mark a crowd's, whatever the count an
	 * exit saw: its last threads' exit is the one that gives back what they filled
	 * (with the mark lowered below 8 by an exit that saw 7 or fewer, threads
	 * exiting together left bench/footprint's `storm` at 7.4 MiB final RSS in half
	 * the runs instead of 2.3). */
	uint32_t new_mark = crowd && live > 1 && live < VC_CROWD_MIN ? VC_CROWD_MIN : live;
	if (gone && __atomic_compare_exchange_n(&live_threads_mark, &mark, new_mark, 0,
						__ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
		__atomic_store_n(&last_shrink_ms, now, __ATOMIC_RELAXED);
		vc_release_free_memory(VC_RELEASE_WITH_CACHES);
		return;
	}
	vc_maintain();
}

uint32_t vc_live_threads(void)
{
	return exit_key_ok ? __atomic_load_n(&live_threads, __ATOMIC_RELAXED) : 0;
}

void vc_thread_note(void)
{
	if (VC_LIKELY(thread_noted) || !exit_key_ok)
		return;
	thread_noted = 1;
	pthread_setspecific(exit_key, (void *)1);
	uint32_t live = __atomic_add_fetch(&live_threads, 1, __ATOMIC_RELAXED);
	if (live == 2)
		__atomic_store_n(&crowd_since_ms, vc_os_now_ms(), __ATOMIC_RELAXED);
	vc_atomic_raise_u32(&live_threads_mark, live);
}

/* Threads count from their start, not from their first slow path: a thread whose
 * mallocs and frees all hit a cache that other threads filled never runs any other
 * code of vcmalloc, so it would never be counted and its exit would never be seen.
 * pthread_create (exported by override_thread.c, shared library only) starts every
 * thread in thread_start, which notes it before the start routine runs. (Threads
 * that libc starts itself, e.g. for timers or C11 thrd_create, are noted at their
 * first slow path.) */
/* The start routine and argument go to the new thread through one of a fixed set of
 * slots, each on its own cache line, outside the heap: a heap block allocated by
 * the creating thread and freed by the new one would land in the new thread's
 * cache and be its first block of that class, a neighbour of the block the next
 * new thread gets (two threads writing neighbouring blocks of the creator's span:
 * bench/speed tightN-16 took 0.07-0.08 s instead of 0.055). A slot is claimed by
 * the creator (busy 0 -> 1) and released by the new thread once it has copied it.
 * When every slot is busy the thread starts unwrapped and is noted at its first
 * slow path. */
#define VC_START_SLOTS 64
struct thread_start_slot {
	uint32_t busy;
	void *(*fn)(void *);
	void *arg;
} __attribute__((aligned(64)));
static struct thread_start_slot start_slots[VC_START_SLOTS];

static void *thread_start(void *p)
{
	struct thread_start_slot *slot = p;
	void *(*fn)(void *) = slot->fn;
	void *arg = slot->arg;
	__atomic_store_n(&slot->busy, 0, __ATOMIC_RELEASE);
	vc_thread_note();
	return fn(arg);
}

static struct thread_start_slot *claim_start_slot(void)
{
	for (unsigned i = 0; i < VC_START_SLOTS; i++) {
		uint32_t free_slot = 0;
		if (__atomic_load_n(&start_slots[i].busy, __ATOMIC_RELAXED) == 0 &&
		    __atomic_compare_exchange_n(&start_slots[i].busy, &free_slot, 1, 0,
						__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			return &start_slots[i];
	}
	return NULL;
}

typedef int (*pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
				 void *);

/* The C library's function by its symbol name (the sanitizer build renames our
 * exports with macros; the string is out of their reach). */
extern int c_library_pthread_create(pthread_t *, const pthread_attr_t *, void *(*)(void *),
				    void *) __asm__("pthread_create");
/* Defined by override_thread.c, in the shared library only. */
extern const char vc_exports_pthread_create __attribute__((weak, visibility("hidden")));

/* The C library's pthread_create: found with dlsym(RTLD_NEXT) where the shared
 * library exports its own, else (the static archive) the one this file links to.
 * NULL when dlsym fails. */
static pthread_create_fn libc_pthread_create(void)
{
	static pthread_create_fn next;
	pthread_create_fn create = __atomic_load_n(&next, __ATOMIC_ACQUIRE);
	if (create)
		return create;
	if (&vc_exports_pthread_create == NULL)
		create = c_library_pthread_create;
	else
		create = (pthread_create_fn)dlsym(RTLD_NEXT, "pthread_create");
	if (create)
		__atomic_store_n(&next, create, __ATOMIC_RELEASE);
	return create;
}

int vc_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	vc_ensure_init();
	pthread_create_fn create = libc_pthread_create();
	if (!create)
		return EAGAIN;
	struct thread_start_slot *slot = claim_start_slot();
	int r;
	if (!slot) {
		r = create(t, attr, fn, arg); /* the thread is noted at its first slow path */
	} else {
		slot->fn = fn;
		slot->arg = arg;
		r = create(t, attr, thread_start, slot);
		if (r != 0)
			__atomic_store_n(&slot->busy, 0, __ATOMIC_RELEASE);
	}
	if (r == 0)
		vc_maintenance_start(create);
	return r;
}

static int choose_mode(const struct vc_rseq_info *ri, int want)
{
	if (want < 0)
		want = VCMALLOC_INDEX_VCPU;
	if (want == VCMALLOC_INDEX_VCPU && !ri->has_mm_cid)
		want = VCMALLOC_INDEX_CPU;
	if (want == VCMALLOC_INDEX_CPU && !ri->has_cpu_id)
		want = VCMALLOC_INDEX_FALLBACK;
	if (VC_RSEQ_NO_CRITICAL_SECTIONS) /* no arch/<arch>.h for this architecture */
		want = VCMALLOC_INDEX_FALLBACK;
	return want;
}

void vc_init_slow(void)
{
	vc_lock(&init_lock);
	if (vc_initialised == 2) {
		vc_unlock(&init_lock);
		return;
	}
	int saved = errno;
	vc_initialised = 1;
	vc_options_load(&vc_g.opt);
	vc_g.secret = vc_os_random();
	const struct vc_rseq_info *ri = vc_rseq_init();
	uint32_t ncpu = ri->possible_cpus;
	vc_g.nvcpus = ncpu ? ncpu : 1;
#if VC_TEST_HOOKS
	if (vc_g.nvcpus < VC_TEST_MIN_VCPUS)
		vc_g.nvcpus = VC_TEST_MIN_VCPUS;
#endif
	uint32_t nodes = vc_os_numa_nodes();
	vc_g.nnodes = nodes > VC_MAX_NODES ? VC_MAX_NODES : nodes;
	vc_g.mode = choose_mode(ri, vc_g.opt.index);
	vc_g.rseq_index = vc_g.mode == VCMALLOC_INDEX_VCPU ? VC_RSEQ_INDEX_MM_CID
							   : VC_RSEQ_INDEX_CPU_ID;
	vc_g.numa_cache = vc_g.nnodes > 1 && vc_g.opt.numa && ri->has_node_id &&
			  vc_g.mode != VCMALLOC_INDEX_FALLBACK;
	vc_g.remote_lanes = vc_g.mode == VCMALLOC_INDEX_VCPU && !vc_g.numa_cache;
	vc_sizeclass_init();
	vc_registry_init();
	vc_pageheap_init();
	vc_central_init();
	vc_cache_init();
	vc_remote_init();
	int fast = vc_g.mode == VCMALLOC_INDEX_FALLBACK ? VC_FAST_NONE
			: (vc_g.mode == VCMALLOC_INDEX_VCPU ? VC_FAST_MM_CID : VC_FAST_CPU_ID) +
			      (vc_g.numa_cache ? 2 : 0);
	__atomic_store_n(&vc_g.fast, fast, __ATOMIC_RELEASE);
	__atomic_store_n(&vc_g.mm_cid_limit, fast == VC_FAST_MM_CID ? vc_g.nvcpus : 0,
			 __ATOMIC_RELEASE);
	__atomic_store_n(&vc_initialised, 2, __ATOMIC_RELEASE);
	vc_unlock(&init_lock);

	pthread_atfork(fork_prepare, fork_parent, fork_child);
	exit_key_ok = pthread_key_create(&exit_key, thread_exit) == 0;
	errno = saved;
}

__attribute__((constructor)) static void vc_constructor(void)
{
	vc_ensure_init();
}

__attribute__((destructor)) static void vc_destructor(void)
{
	if (vc_initialised == 2 && vc_g.opt.stats)
		vc_stats_at_exit();
}
