/* tests/stress/inject_stress.c - the allocator's own critical sections under forced
 * aborts.
 *
 * Linked with an allocator built with the rseq layer's injection points filled
 * (VC_RSEQ_INJECT=1): every critical section of the vCPU caches (pop, push, batch
 * moves, resizes) runs a delay loop and optionally a long spin between reading the
 * header and committing. A knob thread cycles the injection every millisecond
 * through {short delay}, {yield}, {long delay + yield}, {off}; a signaller sends
 * SIGUSR1 to random workers every 200 us; eight workers (more than the CPUs)
 * allocate blocks of mixed sizes, fill them with a pattern derived from address and
 * size, check and free them, and swap blocks through a shared table so that many
 * frees are remote; every 1024 operations a worker drains the cache it runs on
 * (MallocExtension_MarkThreadIdle), which stops that index's stacks from inside
 * critical sections of its own (no fence) while threads preempted as that index may
 * still be inside theirs. Passes when no block was ever damaged or handed out twice,
 * the injected aborts really happened (the rseq layer counts them), the own-index
 * stops happened, and the allocator's allocated bytes are back where they started.
 *
 * Usage: inject-stress [operations-per-thread]   (VCMALLOC_INDEX selects the mode)
 */
#include "rseq.h"
#include "vctest.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { WORKERS = 8, SLOTS = 256, SHARED = 64 };

/* The allocator's (linked in statically): drain the caller's cache, and how many
 * drains of an own index stopped its stacks without a fence (vcpu_slab.h). */
void MallocExtension_MarkThreadIdle(void);
extern uint64_t vc_slab_own_stops;

static pthread_t workers[WORKERS];
static _Atomic(void *) shared[SHARED];
static atomic_int stop_helpers;
static atomic_int workers_done;    /* workers that finished their operations */
static atomic_int release_workers; /* workers may return (signals have stopped) */
static atomic_long signals_sent;
static long ops_per_thread = 1000000;

static uint64_t next_random(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static size_t pick_size(uint64_t *s)
{
	uint64_t r = next_random(s) % 1000;
	if (r < 600)
		return 16 + next_random(s) % 113;
	if (r < 900)
		return 129 + next_random(s) % 900;
	if (r < 990)
		return 1024 + next_random(s) % 7000;
	return 8192 + next_random(s) % 120000;
}

/* The block's size lives in its first word; words at both ends carry a pattern of
 * address and size. */
static uint64_t pattern(const void *p, size_t n, unsigned k)
{
	return ((uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull) ^ (n << 8) ^ k;
}

static void *make_block(uint64_t *s)
{
	size_t n = pick_size(s);
	uint64_t *w = malloc(n);
	VCT_CHECK(w != NULL, "malloc(%zu) failed", n);
	size_t words = n / 8;
	w[0] = n;
	for (unsigned k = 1; k < words && k < 8; k++)
		w[k] = pattern(w, n, k);
	for (size_t k = words > 16 ? words - 8 : 8; k < words; k++)
		w[k] = pattern(w, n, (unsigned)k);
	return w;
}

static void check_and_free(void *p)
{
	uint64_t *w = p;
	size_t n = w[0];
	VCT_CHECK(n >= 16 && n < (1u << 20), "block %p: size word damaged (%zu)", p, n);
	size_t words = n / 8;
	for (unsigned k = 1; k < words && k < 8; k++)
		VCT_CHECK(w[k] == pattern(w, n, k), "block %p (%zu bytes): word %u damaged", p, n, k);
	for (size_t k = words > 16 ? words - 8 : 8; k < words; k++)
		VCT_CHECK(w[k] == pattern(w, n, (unsigned)k), "block %p (%zu bytes): word %zu damaged",
			  p, n, k);
	w[0] = 0; /* a second hand-out of this block shows as a damaged size word */
	free(p);
}

static void sleep_us(long us)
{
	struct timespec ts = {0, us * 1000};
	nanosleep(&ts, NULL);
}

static void *worker_main(void *arg)
{
	uint64_t seed = 0x12345678ull + (uintptr_t)arg * 7919;
	void *mine[SLOTS] = {0};
	for (long op = 0; op < ops_per_thread; op++) {
		unsigned i = (unsigned)(next_random(&seed) % SLOTS);
		if (mine[i])
			check_and_free(mine[i]);
		mine[i] = make_block(&seed);
		if ((op & 15) == 0) {
			/* Swap with the shared table: the block taken was made elsewhere. */
			unsigned j = (unsigned)(next_random(&seed) % SHARED);
			void *theirs = atomic_exchange(&shared[j], mine[i]);
			mine[i] = theirs;
		}
		if ((op & 1023) == 1023)
			MallocExtension_MarkThreadIdle();
	}
	for (unsigned i = 0; i < SLOTS; i++)
		if (mine[i])
			check_and_free(mine[i]);
	/* Stay alive until the signaller has stopped: it must not signal a thread that
	 * has exited. */
	atomic_fetch_add(&workers_done, 1);
	while (!atomic_load(&release_workers))
		sleep_us(500);
	return NULL;
}

static void on_signal(int sig)
{
	(void)sig;
}

static void *signaller_main(void *arg)
{
	(void)arg;
	uint64_t seed = 99;
	while (!atomic_load(&stop_helpers)) {
		pthread_kill(workers[next_random(&seed) % WORKERS], SIGUSR1);
		atomic_fetch_add(&signals_sent, 1);
		sleep_us(200);
	}
	return NULL;
}

static void *knobs_main(void *arg)
{
	(void)arg;
	static const int schedule[4][2] = {{300, 0}, {0, 1}, {3000, 1}, {0, 0}};
	for (unsigned k = 0; !atomic_load(&stop_helpers); k++) {
		vc_rseq_inject_delay = schedule[k % 4][0];
		vc_rseq_inject_yield = schedule[k % 4][1];
		sleep_us(1000);
	}
	vc_rseq_inject_delay = 0;
	vc_rseq_inject_yield = 0;
	return NULL;
}

int main(int argc, char **argv)
{
	vct_start("inject_stress", 600);
	ops_per_thread = vct_work(ops_per_thread, 20000);
	if (argc > 1)
		ops_per_thread = atol(argv[1]);
	struct vcmalloc_stats before;
	vcmalloc_stats(&before);
	const char *mode = before.index == VCMALLOC_INDEX_VCPU  ? "vcpu"
			   : before.index == VCMALLOC_INDEX_CPU ? "cpu"
								: "fallback";

	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);

	long aborts_before = vc_rseq_inject_aborts;
	uint64_t own_before = __atomic_load_n(&vc_slab_own_stops, __ATOMIC_RELAXED);
	for (uintptr_t t = 0; t < WORKERS; t++)
		VCT_CHECK(pthread_create(&workers[t], NULL, worker_main, (void *)t) == 0,
			  "pthread_create failed");
	pthread_t signaller, knobs;
	VCT_CHECK(pthread_create(&signaller, NULL, signaller_main, NULL) == 0, "signaller");
	VCT_CHECK(pthread_create(&knobs, NULL, knobs_main, NULL) == 0, "knobs");
	while (atomic_load(&workers_done) < WORKERS)
		sleep_us(1000);
	atomic_store(&stop_helpers, 1);
	pthread_join(signaller, NULL);
	pthread_join(knobs, NULL);
	atomic_store(&release_workers, 1);
	for (unsigned t = 0; t < WORKERS; t++)
		pthread_join(workers[t], NULL);
	for (unsigned j = 0; j < SHARED; j++) {
		void *p = atomic_exchange(&shared[j], NULL);
		if (p)
			check_and_free(p);
	}
	long aborts = vc_rseq_inject_aborts - aborts_before;
	uint64_t own = __atomic_load_n(&vc_slab_own_stops, __ATOMIC_RELAXED) - own_before;

	struct vcmalloc_stats after;
	vcmalloc_stats(&after);
	printf("inject_stress: mode %s, %d threads x %ld operations, %ld signals, %ld "
	       "injected aborts, %llu own-index stops, allocated bytes %llu -> %llu\n",
	       mode, WORKERS, ops_per_thread, atomic_load(&signals_sent), aborts,
	       (unsigned long long)own,
	       (unsigned long long)before.allocated_bytes,
	       (unsigned long long)after.allocated_bytes);
	if (before.index != VCMALLOC_INDEX_FALLBACK) {
		VCT_CHECK(aborts > 0, "no critical section was aborted: the injection did not act");
		VCT_CHECK(own > 0, "no drain stopped its own index's stacks without a fence");
	}
	VCT_CHECK(after.allocated_bytes <= before.allocated_bytes + (64u << 10),
		  "allocated bytes grew from %llu to %llu", (unsigned long long)before.allocated_bytes,
		  (unsigned long long)after.allocated_bytes);
	printf("inject_stress: ok\n");
	return 0;
}
