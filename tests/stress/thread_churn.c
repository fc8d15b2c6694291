/* thread_churn: thousands of short-lived threads do not make memory grow.
 *
 * ROUNDS rounds each start THREADS_PER_ROUND threads at once, and join them. Every
 * thread allocates BLOCKS_PER_THREAD blocks of every size class (up to 256 KiB),
 * frees half of them itself, leaves the other half to the main thread (freed after
 * the join, a cross-thread free), and swaps a few small blocks with a carry table
 * that the next rounds' threads free. So every round leaves the same live set.
 *
 * After BASELINE_ROUND rounds (caches, arenas and glibc's thread-stack cache are
 * warm) the process's VmRSS and, with vcmalloc, resident_bytes and allocated_bytes
 * are recorded (vcmalloc's caches drained and free pages released just before);
 * after the last round they are read again the same way. The bounds:
 *   VmRSS and resident_bytes: final <= baseline + 8 MiB + baseline / 4
 *     (with ~4500 threads after the baseline, any per-thread leak above ~2 KiB,
 *     such as an orphaned thread cache, breaks it);
 *   allocated_bytes: |final - baseline| <= 1 MiB (the live set is the same at both
 *     points up to the carry table, 64 blocks of at most 4 KiB).
 * No timing is involved. */
#include "vctest.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

enum {
	ROUNDS = 320,
	BASELINE_ROUND = 40,
	THREADS_PER_ROUND = 16,
	BLOCKS_PER_THREAD = 96,
	CARRY = 64,
};

struct thread_work {
	unsigned id;
	void *handed_to_main[BLOCKS_PER_THREAD];
	size_t n_handed;
};

static void *_Atomic carry[CARRY];

static void *churn_thread(void *arg)
{
	struct thread_work *w = arg;
	uint64_t rng = 0xc0ffee00ull + w->id;
	void *mine[BLOCKS_PER_THREAD];
	for (int i = 0; i < BLOCKS_PER_THREAD; i++) {
		size_t n = vct_random_size(&rng, 256u << 10);
		mine[i] = malloc(n);
		VCT_CHECK(mine[i] != NULL, "malloc(%zu)", n);
		memset(mine[i], (int)w->id, n);
	}
	w->n_handed = 0;
	for (int i = 0; i < BLOCKS_PER_THREAD; i++) {
		if (i & 1)
			w->handed_to_main[w->n_handed++] = mine[i];
		else
			free(mine[i]);
	}
	for (int k = 0; k < 4; k++) {
		size_t n = 1 + (size_t)(vct_rand(&rng) % 4096);
		void *p = malloc(n);
		VCT_CHECK(p != NULL, "malloc(%zu)", n);
		memset(p, 1, n);
		free(atomic_exchange(&carry[vct_rand(&rng) % CARRY], p));
	}
	return NULL;
}

struct sample {
	long rss_kib;
	uint64_t resident, allocated;
};

/* Under vcmalloc the caches are drained and free pages released first, at both
 * points: what is left is live data plus what the allocator cannot give back, the
 * figure a leak makes grow. Without this the samples depend on how much of the
 * previous round's memory the crowd-exit release had caught (in a 64-vCPU guest
 * resident varied 13-39 MB between rounds, against ~57 MB with reclaim off). */
static struct sample take_sample(void)
{
	const struct vct_vcmalloc *vc = vct_vcmalloc();
	if (vc) {
		vc->reclaim(1);
		vc->release_free_memory();
	}
	struct sample s = {vct_proc_status_kib("VmRSS"), 0, 0};
	VCT_CHECK(s.rss_kib > 0, "cannot read VmRSS");
	if (vct_under_vcmalloc()) {
		struct vcmalloc_stats st;
		vct_stats(&st);
		s.resident = st.resident_bytes;
		s.allocated = st.allocated_bytes;
	}
	return s;
}

int main(void)
{
	vct_start("thread_churn", 300);
	static struct thread_work work[THREADS_PER_ROUND];
	struct sample base = {0, 0, 0};
	unsigned next_id = 0;
	/* At least 2 * BASELINE_ROUND: the leak check needs rounds after the baseline. */
	const long rounds = vct_work(ROUNDS, 2 * BASELINE_ROUND);
	for (int round = 0; round < rounds; round++) {
		if (round == BASELINE_ROUND)
			base = take_sample();
		pthread_t t[THREADS_PER_ROUND];
		for (int i = 0; i < THREADS_PER_ROUND; i++) {
			work[i].id = next_id++;
			VCT_CHECK(pthread_create(&t[i], NULL, churn_thread, &work[i]) == 0,
				  "pthread_create (round %d)", round);
		}
		for (int i = 0; i < THREADS_PER_ROUND; i++) {
			VCT_CHECK(pthread_join(t[i], NULL) == 0, "pthread_join");
			for (size_t k = 0; k < work[i].n_handed; k++)
				free(work[i].handed_to_main[k]);
		}
	}
	struct sample end = take_sample();
	const long rss_bound = base.rss_kib + 8 * 1024 + base.rss_kib / 4;
	fprintf(stderr,
		"thread_churn: %u threads; VmRSS %ld -> %ld KiB (bound %ld); resident %llu -> "
		"%llu; allocated %llu -> %llu\n",
		next_id, base.rss_kib, end.rss_kib, rss_bound, (unsigned long long)base.resident,
		(unsigned long long)end.resident, (unsigned long long)base.allocated,
		(unsigned long long)end.allocated);
	VCT_CHECK(end.rss_kib <= rss_bound, "VmRSS grew from %ld to %ld KiB over %u threads",
		  base.rss_kib, end.rss_kib, next_id);
	if (vct_under_vcmalloc()) {
		const uint64_t resident_bound = base.resident + (8u << 20) + base.resident / 4;
		VCT_CHECK(end.resident <= resident_bound,
			  "resident_bytes grew from %llu to %llu (bound %llu)",
			  (unsigned long long)base.resident, (unsigned long long)end.resident,
			  (unsigned long long)resident_bound);
		const uint64_t diff = end.allocated > base.allocated
					  ? end.allocated - base.allocated
					  : base.allocated - end.allocated;
		VCT_CHECK(diff <= (1u << 20), "allocated_bytes moved from %llu to %llu",
			  (unsigned long long)base.allocated, (unsigned long long)end.allocated);
	}
	for (int i = 0; i < CARRY; i++)
		free(atomic_exchange(&carry[i], NULL));
	printf("thread_churn: ok (%u threads)\n", next_id);
	return 0;
}
