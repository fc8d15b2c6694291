/* budget_alone (white-box, linked with the allocator's test-hook build): the budget
 * of a vCPU cache that is the only one populated grows past the cap of the shared
 * rule (allocator/vcpu_policy.h: VC_BUDGET_GROWTH_ALONE), and the budget of one of two
 * populated caches does not.
 *
 * A pinned thread churns a wide mix, as bench/speed's wide1 does: 4096 live blocks
 * of 8 B to 32 KiB (log-uniform by octave, about 16 MiB of live data), a random one
 * replaced by a block of a random size at each step. (Up to 16 KiB, with four
 * classes per doubling above 8 KiB, the cache stopped thrashing at the shared cap.)
 *   1. Every cache drained (vcmalloc_reclaim(1)), the thread alone: after STEPS steps
 *      its cache's budget is above VC_BUDGET_GROWTH times the starting one.
 *   2. Everything freed and every cache drained again; a second thread, pinned to
 *      another allowed CPU, allocates while the first one runs, so that it gets an
 *      id of its own and opens a second cache, then waits. The same churn: no
 *      budget may pass VC_BUDGET_GROWTH times the starting one. Skipped with one
 *      allowed CPU.
 * In the fallback mode, whose shards grow without the thrashing rule, the budgets
 * stay the starting one throughout.
 */
#include "central_count.h"
#include "vcpu_policy.h"

#include <pthread.h>
#include <unistd.h>

enum {
	LIVE = 4096,
	STEPS = 600000,
	MIN_SIZE = 8,
	MAX_SIZE = 32768,
};

static unsigned char *live[LIVE];
static uint64_t rng = 1; /* vct_rand's state */

/* An octave at random, then a size at random within it. */
static size_t random_size(void)
{
	unsigned octaves = 0;
	while ((size_t)MIN_SIZE << (octaves + 1) <= MAX_SIZE)
		octaves++;
	size_t low = (size_t)MIN_SIZE << (vct_rand(&rng) % octaves);
	return low + vct_rand(&rng) % low;
}

static unsigned char *block_new(void)
{
	size_t size = random_size();
	unsigned char *p = malloc(vct_launder_size(size));
	VCT_CHECK(p != NULL, "malloc(%zu)", size);
	p[0] = (unsigned char)size;
	return p;
}

static void churn(void)
{
	for (int i = 0; i < LIVE; i++)
		live[i] = block_new();
	for (int s = 0; s < STEPS; s++) {
		unsigned i = (unsigned)(vct_rand(&rng) % LIVE);
		free(live[i]);
		live[i] = block_new();
	}
}

static void free_all(void)
{
	for (int i = 0; i < LIVE; i++)
		free(live[i]);
}

/* The largest budget of a populated vCPU cache, and how many are populated. */
static uint64_t largest_budget(unsigned *populated)
{
	uint64_t most = 0;
	*populated = 0;
	for (uint32_t idx = 0; idx < vc_g.nvcpus; idx++) {
		const struct vc_vcpu *v = &vc_g.vcpus[idx];
		if (!__atomic_load_n(&v->populated, __ATOMIC_ACQUIRE))
			continue;
		(*populated)++;
		uint64_t b = __atomic_load_n(&v->locked.cap.budget, __ATOMIC_RELAXED);
		if (b > most)
			most = b;
	}
	return most;
}

static volatile int second_ready, second_release, first_spinning;

static void *second_thread(void *arg)
{
	pin_self(*(const int *)arg);
	while (!__atomic_load_n(&first_spinning, __ATOMIC_ACQUIRE))
		;
	free(malloc(vct_launder_size(64)));
	__atomic_store_n(&second_ready, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&second_release, __ATOMIC_ACQUIRE))
		usleep(1000);
	return NULL;
}

int main(void)
{
	struct cpu_list allowed; /* before central_count_start pins this thread */
	cpu_list_allowed(&allowed);
	central_count_start("budget_alone");
	const uint64_t start = vc_g.opt.vcpu_cache_bytes + VC_BUDGET_ROOM; /* budget_base */
	const uint64_t shared_cap = start * VC_BUDGET_GROWTH;
	const bool fallback = vc_g.mode == VCMALLOC_INDEX_FALLBACK;
	unsigned populated;

	vct_vcmalloc()->reclaim(1);
	churn();
	uint64_t alone = largest_budget(&populated);
	fprintf(stderr, "budget_alone: alone, %u cache(s) populated, budget %llu KiB (start %llu)\n",
		populated, (unsigned long long)alone >> 10, (unsigned long long)start >> 10);
	if (fallback)
		VCT_EXPECT(alone == start, "fallback: budget %llu, the starting one is %llu",
			   (unsigned long long)alone, (unsigned long long)start);
	else
		VCT_EXPECT(populated == 1 && alone > shared_cap,
			   "alone (%u populated): budget %llu, not past the shared cap %llu",
			   populated, (unsigned long long)alone, (unsigned long long)shared_cap);
	free_all();

	if (allowed.n < 2) {
		fprintf(stderr, "budget_alone: one allowed CPU, no second cache: part 2 skipped\n");
		return vct_exit();
	}
	vct_vcmalloc()->reclaim(1);
	pthread_t t;
	int other = allowed.cpu[1];
	VCT_CHECK(pthread_create(&t, NULL, second_thread, &other) == 0, "pthread_create");
	free(malloc(vct_launder_size(64))); /* this thread's cache opens first */
	__atomic_store_n(&first_spinning, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&second_ready, __ATOMIC_ACQUIRE))
		;
	churn();
	uint64_t shared = largest_budget(&populated);
	fprintf(stderr, "budget_alone: shared, %u caches populated, largest budget %llu KiB\n",
		populated, (unsigned long long)shared >> 10);
	if (fallback)
		VCT_EXPECT(shared == start, "fallback: budget %llu, the starting one is %llu",
			   (unsigned long long)shared, (unsigned long long)start);
	else
		VCT_EXPECT(populated == 2 && shared <= shared_cap,
			   "two caches (%u populated): budget %llu past the shared cap %llu",
			   populated, (unsigned long long)shared, (unsigned long long)shared_cap);
	__atomic_store_n(&second_release, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	free_all();
	return vct_exit();
}
