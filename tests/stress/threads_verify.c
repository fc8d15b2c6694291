/* threads_verify: many threads (32, more than CPUs) allocate, write, check and free
 * blocks of every size class, and hand blocks to each other so that most frees happen
 * on a thread (and usually a vCPU) other than the allocating one.
 *
 * Every block carries a pattern derived from its address, its size and its owner
 * thread; it is checked before every free and after every realloc, so two live blocks
 * that overlap, a block handed out twice, or a cache that returns memory still in use
 * is caught as a damaged pattern. Three paths move blocks between threads:
 *   - a ring from each thread to the next (single producer, single consumer);
 *   - a shared exchange table where any thread swaps a block for another one;
 *   - at the end, each thread's leftovers are freed by the main thread.
 * Sizes: 60% up to 256 B, 25% up to 4 KiB, 12% up to 64 KiB, 3% up to 1 MiB; some
 * blocks come from calloc (checked zero), aligned_alloc or realloc.
 */
#include "vctest.h"

#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

enum { THREADS = 32, OPS_PER_THREAD = 15000, SLOTS = 256, RING = 128, EXCHANGE = 1024 };

struct block {
	unsigned char *p;
	size_t size;
	uint64_t seed;
};

/* Blocks larger than this are checked in sample windows (head, tail, one byte per
 * 512) to keep the run short; smaller ones are checked completely. */
#define FULL_CHECK_LIMIT (64u << 10)

static void fill_block(const struct block *b)
{
	if (b->size <= FULL_CHECK_LIMIT) {
		vct_fill(b->p, b->size, b->seed);
		return;
	}
	vct_fill(b->p, 4096, b->seed);
	vct_fill(b->p + b->size - 4096, 4096, b->seed + 1);
	for (size_t i = 4096; i < b->size - 4096; i += 512)
		b->p[i] = (unsigned char)(b->seed >> (i % 56));
}

static void verify_block(const struct block *b, const char *where)
{
	size_t bad;
	if (b->size <= FULL_CHECK_LIMIT) {
		bad = vct_verify(b->p, b->size, b->seed);
	} else {
		bad = vct_verify(b->p, 4096, b->seed);
		if (bad == (size_t)-1) {
			bad = vct_verify(b->p + b->size - 4096, 4096, b->seed + 1);
			if (bad != (size_t)-1)
				bad += b->size - 4096;
		}
		for (size_t i = 4096; bad == (size_t)-1 && i < b->size - 4096; i += 512)
			if (b->p[i] != (unsigned char)(b->seed >> (i % 56)))
				bad = i;
	}
	VCT_CHECK(bad == (size_t)-1, "%s: block %p of %zu bytes (seed %llx) damaged at byte %zu",
		  where, (void *)b->p, b->size, (unsigned long long)b->seed, bad);
}

static uint64_t seed_for(const void *p, size_t size, unsigned owner)
{
	return ((uint64_t)(uintptr_t)p * 0x100000001b3ull) ^ ((uint64_t)size << 20) ^ owner;
}

/* Single-producer single-consumer ring from thread i to thread (i + 1) % THREADS. */
struct ring {
	_Atomic size_t head; /* written by the consumer */
	char pad1[64];
	_Atomic size_t tail; /* written by the producer */
	char pad2[64];
	atomic_bool producer_done;
	struct block slot[RING];
};

static struct ring rings[THREADS];

static bool ring_push(struct ring *r, const struct block *b)
{
	size_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
	if (t - atomic_load_explicit(&r->head, memory_order_acquire) == RING)
		return false;
	r->slot[t % RING] = *b;
	atomic_store_explicit(&r->tail, t + 1, memory_order_release);
	return true;
}

static bool ring_pop(struct ring *r, struct block *out)
{
	size_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
	if (h == atomic_load_explicit(&r->tail, memory_order_acquire))
		return false;
	*out = r->slot[h % RING];
	atomic_store_explicit(&r->head, h + 1, memory_order_release);
	return true;
}

/* Exchange table: blocks of at least 32 bytes store their own size and seed in their
 * first 16 bytes (the pattern starts after that). */
static void *_Atomic exchange_table[EXCHANGE];

struct exchange_header {
	uint64_t size;
	uint64_t seed;
};

static void verify_and_free(const struct block *b, const char *where)
{
	verify_block(b, where);
	VCT_CHECK(malloc_usable_size(b->p) >= b->size, "%s: usable size shrank", where);
	free(b->p);
}

static void exchange_block(unsigned owner, uint64_t *rng)
{
	size_t n = 32 + vct_random_size(rng, 0);
	unsigned char *p = malloc(n);
	VCT_CHECK(p != NULL, "malloc(%zu)", n);
	struct exchange_header h = {n, seed_for(p, n, owner)};
	memcpy(p, &h, sizeof(h));
	fill_block(&(struct block){p + sizeof(h), n - sizeof(h), h.seed});
	unsigned char *old = atomic_exchange(&exchange_table[vct_rand(rng) % EXCHANGE], p);
	if (old) {
		memcpy(&h, old, sizeof(h));
		struct block b = {old + sizeof(h), h.size - sizeof(h), h.seed};
		verify_block(&b, "exchange");
		free(old);
	}
}

static struct block new_block(unsigned owner, uint64_t *rng)
{
	size_t n = vct_random_size(rng, 1u << 20);
	unsigned how = (unsigned)(vct_rand(rng) % 16);
	unsigned char *p;
	if (how == 0) {
		p = calloc(1, n);
		VCT_CHECK(p != NULL, "calloc(%zu)", n);
		for (size_t i = 0; i < n && i < FULL_CHECK_LIMIT; i++)
			VCT_CHECK(p[i] == 0, "calloc(%zu) byte %zu is not zero", n, i);
	} else if (how == 1) {
		size_t align = (size_t)32 << (vct_rand(rng) % 8);
		p = aligned_alloc(align, n);
		VCT_CHECK(((uintptr_t)p & (align - 1)) == 0, "aligned_alloc misaligned");
	} else {
		p = malloc(n);
	}
	VCT_CHECK(p != NULL, "allocation of %zu failed", n);
	VCT_CHECK(((uintptr_t)p & 15) == 0, "%p misaligned", (void *)p);
	struct block b = {p, n, seed_for(p, n, owner)};
	fill_block(&b);
	return b;
}

static void resize_block(struct block *b, unsigned owner, uint64_t *rng)
{
	size_t n = 1 + vct_random_size(rng, 1u << 20); /* realloc(p, 0) would free p */
	verify_block(b, "before realloc");
	unsigned char *q = realloc(b->p, n);
	VCT_CHECK(q != NULL, "realloc(%zu -> %zu)", b->size, n);
	size_t keep = b->size < n ? b->size : n;
	if (b->size <= FULL_CHECK_LIMIT) {
		size_t bad = vct_verify(q, keep, b->seed);
		VCT_CHECK(bad == (size_t)-1, "realloc %zu -> %zu lost byte %zu", b->size, n, bad);
	}
	*b = (struct block){q, n, seed_for(q, n, owner)};
	fill_block(b);
}

static void *worker(void *arg)
{
	const unsigned me = (unsigned)(uintptr_t)arg;
	struct ring *out = &rings[me];
	struct ring *in = &rings[(me + THREADS - 1) % THREADS];
	struct block mine[SLOTS];
	memset(mine, 0, sizeof(mine));
	uint64_t rng = 0x5eed0000ull + me;

	const long ops = vct_work(OPS_PER_THREAD, 500);
	for (long op = 0; op < ops; op++) {
		unsigned what = (unsigned)(vct_rand(&rng) % 100);
		struct block *slot = &mine[vct_rand(&rng) % SLOTS];
		if (what < 10) {
			exchange_block(me, &rng);
		} else if (what < 25) {
			struct block b;
			if (ring_pop(in, &b))
				verify_and_free(&b, "ring consumer");
		} else if (!slot->p) {
			*slot = new_block(me, &rng);
		} else if (what < 45) {
			/* give it away; keep it if the ring is full */
			verify_block(slot, "ring producer");
			if (ring_push(out, slot))
				slot->p = NULL;
		} else if (what < 52) {
			resize_block(slot, me, &rng);
		} else {
			verify_and_free(slot, "owner");
			slot->p = NULL;
		}
	}
	atomic_store_explicit(&out->producer_done, true, memory_order_release);
	for (int i = 0; i < SLOTS; i++)
		if (mine[i].p)
			verify_and_free(&mine[i], "owner at exit");
	/* drain what the previous thread sends until it is done and the ring is empty */
	for (;;) {
		bool done = atomic_load_explicit(&in->producer_done, memory_order_acquire);
		struct block b;
		bool got = false;
		while (ring_pop(in, &b)) {
			verify_and_free(&b, "ring drain");
			got = true;
		}
		if (done && !got)
			break;
		sched_yield();
	}
	return NULL;
}

int main(void)
{
	vct_start("threads_verify", 300);
	pthread_t t[THREADS];
	for (uintptr_t i = 0; i < THREADS; i++)
		VCT_CHECK(pthread_create(&t[i], NULL, worker, (void *)i) == 0, "pthread_create");
	for (int i = 0; i < THREADS; i++)
		VCT_CHECK(pthread_join(t[i], NULL) == 0, "pthread_join");
	size_t left = 0;
	for (int i = 0; i < EXCHANGE; i++) {
		unsigned char *p = atomic_exchange(&exchange_table[i], NULL);
		if (p) {
			struct exchange_header h;
			memcpy(&h, p, sizeof(h));
			struct block b = {p + sizeof(h), h.size - sizeof(h), h.seed};
			verify_block(&b, "exchange at exit");
			free(p);
			left++;
		}
	}
	if (vct_under_vcmalloc()) {
		struct vcmalloc_stats s;
		vct_stats(&s);
		fprintf(stderr, "threads_verify: allocated %llu, resident %llu, vcpu caches %u\n",
			(unsigned long long)s.allocated_bytes, (unsigned long long)s.resident_bytes,
			s.vcpu_caches_populated_peak);
		VCT_CHECK(s.vcpu_caches_populated_peak <= s.possible_cpus,
			  "%u caches for %u possible CPUs", s.vcpu_caches_populated_peak,
			  s.possible_cpus);
	}
	printf("threads_verify: ok (%d threads x %ld operations, %zu exchange blocks at exit)\n",
	       THREADS, vct_work(OPS_PER_THREAD, 500), left);
	return 0;
}
