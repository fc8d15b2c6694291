/* few_threads: a short multi-threaded allocation stress whose thread count is chosen
 * on the command line, for guests with many more vCPUs than threads.
 *
 *   vm-few-threads THREADS [OPERATIONS_PER_THREAD [roam]]
 *
 * THREADS workers start together (barrier) and each runs OPERATIONS_PER_THREAD steps
 * on its own table of blocks: allocate a random size (1 B to 64 KiB, mostly small),
 * fill it with a pattern derived from its address and size, and later check
 * the pattern and free it or realloc it. One block in eight is handed to the next
 * worker through a shared slot and freed there, so remote frees happen too. With
 * `roam`, each worker moves itself to another allowed CPU every ROAM_EVERY steps
 * (sched_setaffinity to one CPU, in turn over all of them), so that the kernel hands
 * it other mm_cids as it goes.
 *
 * Under vcmalloc the process's statistics are printed (VCMALLOC_STATS=json prints
 * them again at exit) and one invariant is checked here: no more vCPU caches are
 * populated than the machine has possible CPUs. How many caches a given index mode
 * populates is checked by the caller, who knows the machine (tests/vm/checks/alloc).
 */
#include "vctest.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

enum { MAX_THREADS = 256, SLOTS = 64, ROAM_EVERY = 10 };

struct block {
	unsigned char *p;
	size_t size;
};

static unsigned nthreads;
static unsigned long ops_per_thread = 20000; /* default when not given */
static bool roam;
static cpu_set_t allowed; /* the process's CPUs at start (roam) */
static pthread_barrier_t start_line;
/* handoff[i]: a block waiting for worker i to free it, or NULL. */
static _Atomic(unsigned char *) handoff[MAX_THREADS];
static _Atomic size_t handoff_size[MAX_THREADS];

/* Mostly small blocks, some up to 4 KiB, few up to 64 KiB: every kind of size class
 * is used while the bytes written per operation stay few (under TCG filling and
 * checking memory dominates the run time). */
static size_t random_size(uint64_t *rng)
{
	uint64_t r = vct_rand(rng);
	unsigned bucket = (unsigned)(r % 100);
	r >>= 8;
	if (bucket < 70)
		return 1 + (size_t)(r % 256);
	if (bucket < 95)
		return 257 + (size_t)(r % 3840);
	return 4097 + (size_t)(r % 61440);
}

static uint64_t seed_of(const void *p, size_t size)
{
	return (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull ^ size;
}

static void check_and_free(unsigned char *p, size_t size, const char *where)
{
	size_t bad = vct_verify(p, size, seed_of(p, size));
	VCT_CHECK(bad == (size_t)-1, "%s: block %p of %zu bytes damaged at byte %zu", where,
		  (void *)p, size, bad);
	free(p);
}

/* Only worker i - 1 fills handoff[i], and only while it is NULL; only worker i (or main
 * after the joins) empties it. So the size is stable while the slot is non-NULL. */
static void take_handoff(unsigned me)
{
	unsigned char *p = atomic_load(&handoff[me]);
	if (!p)
		return;
	size_t size = atomic_load(&handoff_size[me]);
	atomic_store(&handoff[me], NULL);
	check_and_free(p, size, "handoff");
}

/* Move the calling thread to the first allowed CPU at or after `from` (cyclic);
 * returns it. */
static int next_cpu(int from)
{
	for (int k = 0; k < CPU_SETSIZE; k++) {
		int c = (from + k) % CPU_SETSIZE;
		if (!CPU_ISSET(c, &allowed))
			continue;
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(c, &one);
		VCT_CHECK(sched_setaffinity(0, sizeof one, &one) == 0, "sched_setaffinity(%d)", c);
		return c;
	}
	return from;
}

static void *worker(void *arg)
{
	const unsigned me = (unsigned)(uintptr_t)arg;
	const unsigned next = (me + 1) % nthreads;
	struct block mine[SLOTS];
	memset(mine, 0, sizeof mine);
	uint64_t rng = 0xfe3000ull + me;

	pthread_barrier_wait(&start_line);
	int cpu = -1;
	for (unsigned long op = 0; op < ops_per_thread; op++) {
		if (roam && op % ROAM_EVERY == 0)
			cpu = next_cpu(cpu + (int)me + 1);
		struct block *b = &mine[vct_rand(&rng) % SLOTS];
		take_handoff(me);
		if (!b->p) {
			b->size = random_size(&rng);
			b->p = malloc(b->size);
			VCT_CHECK(b->p != NULL, "malloc(%zu)", b->size);
			vct_fill(b->p, b->size, seed_of(b->p, b->size));
			continue;
		}
		unsigned what = (unsigned)(vct_rand(&rng) % 8);
		if (what == 0 && nthreads > 1 && atomic_load(&handoff[next]) == NULL) {
			/* The size is published before the pointer. */
			VCT_CHECK(vct_verify(b->p, b->size, seed_of(b->p, b->size)) == (size_t)-1,
				  "block %p damaged before handoff", (void *)b->p);
			atomic_store(&handoff_size[next], b->size);
			atomic_store(&handoff[next], b->p);
			b->p = NULL;
		} else if (what == 1) {
			VCT_CHECK(vct_verify(b->p, b->size, seed_of(b->p, b->size)) == (size_t)-1,
				  "block %p damaged before realloc", (void *)b->p);
			const uint64_t old_seed = seed_of(b->p, b->size);
			size_t size = random_size(&rng); /* never 0: realloc(p, 0) frees p */
			unsigned char *q = realloc(b->p, size);
			VCT_CHECK(q != NULL, "realloc(%zu)", size);
			size_t kept = size < b->size ? size : b->size;
			VCT_CHECK(vct_verify(q, kept, old_seed) == (size_t)-1,
				  "realloc to %zu bytes lost the first %zu", size, kept);
			b->p = q;
			b->size = size;
			vct_fill(b->p, b->size, seed_of(b->p, b->size));
		} else {
			check_and_free(b->p, b->size, "owner");
			b->p = NULL;
		}
	}
	for (int i = 0; i < SLOTS; i++)
		if (mine[i].p)
			check_and_free(mine[i].p, mine[i].size, "owner at exit");
	return NULL;
}

int main(int argc, char **argv)
{
	vct_start("few_threads", 600);
	VCT_CHECK(argc >= 2 && argc <= 4,
		  "usage: vm-few-threads THREADS [OPERATIONS_PER_THREAD [roam]]");
	nthreads = (unsigned)strtoul(argv[1], NULL, 10);
	VCT_CHECK(nthreads >= 1 && nthreads <= MAX_THREADS, "THREADS must be 1..%d", MAX_THREADS);
	if (argc >= 3)
		ops_per_thread = strtoul(argv[2], NULL, 10);
	if (argc == 4) {
		VCT_CHECK(strcmp(argv[3], "roam") == 0, "third argument: roam, not %s", argv[3]);
		roam = true;
		VCT_CHECK(sched_getaffinity(0, sizeof allowed, &allowed) == 0, "sched_getaffinity");
	}
	VCT_CHECK(ops_per_thread >= 1, "OPERATIONS_PER_THREAD must be positive");

	VCT_CHECK(pthread_barrier_init(&start_line, NULL, nthreads) == 0, "barrier");
	pthread_t t[MAX_THREADS];
	for (uintptr_t i = 0; i < nthreads; i++)
		VCT_CHECK(pthread_create(&t[i], NULL, worker, (void *)i) == 0, "pthread_create");
	for (unsigned i = 0; i < nthreads; i++)
		VCT_CHECK(pthread_join(t[i], NULL) == 0, "pthread_join");
	for (unsigned i = 0; i < nthreads; i++)
		take_handoff(i);

	if (vct_under_vcmalloc()) {
		struct vcmalloc_stats s;
		vct_stats(&s);
		fprintf(stderr, "few_threads: vcpu caches populated peak %u of %u possible\n",
			s.vcpu_caches_populated_peak, s.possible_cpus);
		VCT_CHECK(s.vcpu_caches_populated_peak <= s.possible_cpus,
			  "%u caches for %u possible CPUs", s.vcpu_caches_populated_peak,
			  s.possible_cpus);
	}
	printf("few_threads: ok (%u threads x %lu operations)\n", nthreads, ops_per_thread);
	return 0;
}
