/* tests/races/races.c - self-checking blocks and the exchange table (races.h). */
#include "races.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>

void *_Atomic rc_table[RC_TABLE];

#define CHECK_CONSTANT 0x6c6976652d626c6bull
#define FULL_CHECK (64u << 10)
#define WINDOW 4096u

static void fill_body(unsigned char *p, size_t size, uint64_t seed)
{
	size_t body = size - sizeof(struct rc_header);
	unsigned char *b = p + sizeof(struct rc_header);
	if (size <= FULL_CHECK) {
		vct_fill(b, body, seed);
		return;
	}
	vct_fill(b, WINDOW, seed);
	vct_fill(b + body - WINDOW, WINDOW, seed + 1);
}

/* First bad byte of the block (from its start), or (size_t)-1. */
static size_t verify_body(const unsigned char *p, size_t size, uint64_t seed)
{
	size_t body = size - sizeof(struct rc_header);
	const unsigned char *b = p + sizeof(struct rc_header);
	size_t bad;
	if (size <= FULL_CHECK) {
		bad = vct_verify(b, body, seed);
	} else {
		bad = vct_verify(b, WINDOW, seed);
		if (bad == (size_t)-1) {
			bad = vct_verify(b + body - WINDOW, WINDOW, seed + 1);
			if (bad != (size_t)-1)
				bad += body - WINDOW;
		}
	}
	return bad == (size_t)-1 ? bad : bad + sizeof(struct rc_header);
}

static void stamp(unsigned char *p, size_t size, uint64_t seed)
{
	struct rc_header h = {size, seed, size ^ seed ^ CHECK_CONSTANT};
	memcpy(p, &h, sizeof(h));
	fill_body(p, size, seed);
}

void rc_check(const void *p, const char *where)
{
	struct rc_header h;
	memcpy(&h, p, sizeof(h));
	VCT_CHECK(h.check == (h.size ^ h.seed ^ CHECK_CONSTANT),
		  "%s: header of block %p damaged (size %llu seed %llx check %llx)", where, p,
		  (unsigned long long)h.size, (unsigned long long)h.seed,
		  (unsigned long long)h.check);
	size_t bad = verify_body(p, h.size, h.seed);
	VCT_CHECK(bad == (size_t)-1, "%s: block %p of %llu bytes damaged at byte %zu", where, p,
		  (unsigned long long)h.size, bad);
	size_t usable = malloc_usable_size((void *)p);
	VCT_CHECK(usable >= h.size, "%s: usable size %zu of block %p below its %llu bytes", where,
		  usable, p, (unsigned long long)h.size);
}

void rc_release(void *p, const char *where)
{
	rc_check(p, where);
	free(p);
}

static size_t pick_size(uint64_t *rng, size_t max_size)
{
	size_t n = vct_random_size(rng, max_size);
	if (n > max_size)
		n = max_size;
	return n < sizeof(struct rc_header) ? sizeof(struct rc_header) : n;
}

void *rc_make(uint64_t *rng, size_t max_size)
{
	size_t n = pick_size(rng, max_size);
	unsigned how = (unsigned)(vct_rand(rng) % 16);
	unsigned char *p = NULL;
	if (how == 0) {
		p = calloc(1, n);
		VCT_CHECK(p != NULL, "calloc(%zu)", n);
		size_t limit = n < FULL_CHECK ? n : FULL_CHECK;
		for (size_t i = 0; i < limit; i++)
			VCT_CHECK(p[i] == 0, "calloc(%zu) block %p byte %zu is %u", n, (void *)p, i,
				  p[i]);
	} else if (how == 1) {
		size_t align = (size_t)32 << (vct_rand(rng) % 9);
		p = aligned_alloc(align, n);
		VCT_CHECK(p != NULL, "aligned_alloc(%zu, %zu)", align, n);
		VCT_CHECK(((uintptr_t)p & (align - 1)) == 0, "aligned_alloc(%zu) gave %p", align,
			  (void *)p);
	} else if (how == 2) {
		size_t align = (size_t)64 << (vct_rand(rng) % 6);
		void *q = NULL;
		int e = posix_memalign(&q, align, n);
		VCT_CHECK(e == 0, "posix_memalign(%zu, %zu) = %d", align, n, e);
		VCT_CHECK(((uintptr_t)q & (align - 1)) == 0, "posix_memalign(%zu) gave %p", align,
			  q);
		p = q;
	} else {
		p = malloc(n);
		VCT_CHECK(p != NULL, "malloc(%zu)", n);
	}
	VCT_CHECK(((uintptr_t)p & 15) == 0, "block %p is not 16-byte aligned", (void *)p);
	stamp(p, n, vct_rand(rng));
	return p;
}

void *rc_resize(void *p, uint64_t *rng, size_t max_size)
{
	rc_check(p, "before realloc");
	struct rc_header h;
	memcpy(&h, p, sizeof(h));
	size_t n = pick_size(rng, max_size);
	unsigned char *q = realloc(p, n);
	VCT_CHECK(q != NULL, "realloc(%llu -> %zu)", (unsigned long long)h.size, n);
	/* The kept prefix: the header and the first window of the pattern (all of it
	 * when both sizes are fully checked). */
	size_t keep = h.size < n ? h.size : n;
	if (keep > sizeof(h) + WINDOW && h.size > FULL_CHECK)
		keep = sizeof(h) + WINDOW;
	VCT_CHECK(memcmp(q, &h, sizeof(h)) == 0, "realloc %p -> %p lost the header", p, (void *)q);
	size_t bad = vct_verify(q + sizeof(h), keep - sizeof(h), h.seed);
	VCT_CHECK(bad == (size_t)-1, "realloc %llu -> %zu lost byte %zu",
		  (unsigned long long)h.size, n, bad + sizeof(h));
	stamp(q, n, vct_rand(rng));
	return q;
}

void rc_swap(uint64_t *rng, void *p)
{
	void *old = atomic_exchange(&rc_table[vct_rand(rng) % RC_TABLE], p);
	if (old)
		rc_release(old, "block from the exchange table");
}

size_t rc_drain_table(const char *where)
{
	size_t n = 0;
	for (int i = 0; i < RC_TABLE; i++) {
		void *p = atomic_exchange(&rc_table[i], NULL);
		if (p) {
			rc_release(p, where);
			n++;
		}
	}
	return n;
}

enum { SLOTS = 64 };

void rc_work(uint64_t seed, unsigned ops, size_t max_size)
{
	void *slot[SLOTS] = {0};
	uint64_t rng = seed;
	for (unsigned op = 0; op < ops; op++) {
		unsigned what = (unsigned)(vct_rand(&rng) % 100);
		void **s = &slot[vct_rand(&rng) % SLOTS];
		if (what < 20) {
			rc_swap(&rng, rc_make(&rng, max_size));
		} else if (!*s) {
			*s = rc_make(&rng, max_size);
		} else if (what < 30) {
			*s = rc_resize(*s, &rng, max_size);
		} else if (what < 40) {
			rc_swap(&rng, *s);
			*s = NULL;
		} else if (what < 50) {
			rc_check(*s, "live block");
		} else {
			rc_release(*s, "own block");
			*s = NULL;
		}
	}
	for (int i = 0; i < SLOTS; i++)
		if (slot[i])
			rc_release(slot[i], "own block at thread end");
}

int rc_cpu_count(void)
{
	cpu_set_t set;
	VCT_CHECK(sched_getaffinity(0, sizeof(set), &set) == 0, "sched_getaffinity: %s",
		  strerror(errno));
	return CPU_COUNT(&set);
}

int rc_cpu_at(int i)
{
	cpu_set_t set;
	VCT_CHECK(sched_getaffinity(0, sizeof(set), &set) == 0, "sched_getaffinity");
	int n = CPU_COUNT(&set);
	i %= n;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &set) && i-- == 0)
			return cpu;
	return 0;
}

uint64_t rc_allocated_after_reclaim(void)
{
	const struct vct_vcmalloc *vc = vct_vcmalloc();
	VCT_CHECK(vc != NULL, "vcmalloc is not loaded");
	vc->reclaim(1);
	struct vcmalloc_stats s;
	vct_stats(&s);
	/* RACES_EXPECT_INDEX=vcpu|cpu|fallback: the mode vcmalloc must have chosen (the
	 * worlds without glibc's rseq and valgrind set it). */
	const char *want = getenv("RACES_EXPECT_INDEX");
	if (want) {
		static const char *const names[] = {"vcpu", "cpu", "fallback"};
		VCT_CHECK((unsigned)s.index < 3 && strcmp(names[s.index], want) == 0,
			  "vcmalloc runs index mode %d, RACES_EXPECT_INDEX=%s", (int)s.index, want);
	}
	return s.allocated_bytes;
}
