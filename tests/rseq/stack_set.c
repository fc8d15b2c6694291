/* tests/rseq/stack_set.c - see stack_set.h. */
#include "stack_set.h"

#include "cpus.h"
#include "vctest.h"
#include "index_window.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Guard value of slot k: never an object (objects are small integers). */
#define GUARD(k) ((void *)(uintptr_t)(0x6a7d0000u + (unsigned)(k)))

void stack_set_init(struct stack_set *s, enum vc_rseq_index ix, enum stack_layout layout,
		    uint32_t possible_cpus, unsigned end)
{
	if (end <= STACK_BEGIN || end > STACK_END_MAX)
		VCT_FATAL("bad stack end %u", end);
	bool slab = layout == STACK_LAYOUT_SLAB;
	s->ix = ix;
	s->layout = layout;
	if (ix == VC_RSEQ_INDEX_MM_CID)
		s->name = slab ? "mm_cid slab" : "mm_cid";
	else
		s->name = slab ? "cpu_id slab" : "cpu_id";
	s->count = possible_cpus;
	if (slab) {
		s->stride = (size_t)1 << VC_RSEQ_SLAB_SHIFT;
		void *m = mmap(NULL, possible_cpus * s->stride, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (m == MAP_FAILED)
			VCT_FATAL("mmap of a slab of %u regions", possible_cpus);
		s->base = m;
	} else {
		s->stride = sizeof(struct per_index);
		s->base = aligned_alloc(64, possible_cpus * s->stride);
		if (!s->base)
			VCT_FATAL("out of memory");
	}
	for (uint32_t i = 0; i < possible_cpus; i++) {
		struct per_index *st = stack_at(s, i);
		memset(st, 0, sizeof *st);
		*stack_hdr(st) = (struct vc_rseq_stack){
		    .current = STACK_BEGIN, .begin = STACK_BEGIN, .end = (uint16_t)end};
		for (int k = 0; k < STACK_REGION_SLOTS; k++)
			if (k != STACK_HDR_SLOT)
				st->region[k] = GUARD(k);
	}
}

void stack_set_free(struct stack_set *s)
{
	if (s->layout == STACK_LAYOUT_SLAB)
		munmap(s->base, s->count * s->stride);
	else
		free(s->base);
	s->base = NULL;
}

static struct vc_rseq_abi *area(void)
{
	struct vc_rseq_abi *rs = vc_rseq_area();
	if (!rs)
		VCT_FATAL("thread without an rseq area");
	return rs;
}

/* The stack of the calling thread's current index in s, and that index. */
static struct per_index *current_stack(const struct stack_set *s, struct vc_rseq_abi *rs,
				       uint32_t *idx)
{
	uint32_t i = vc_rseq_read_index(rs, s->ix);
	if (i >= s->count)
		VCT_FATAL("%s %u not below possible cpus %u", s->name, i, s->count);
	*idx = i;
	index_window_delay();
	return stack_at(s, i);
}

/* After a slab section's compare failed: the failure must have been the stack's, not
 * the limit's (every index is below the possible CPUs). The index may have changed
 * since the section, but never to one >= count. */
static void slab_check_index(const struct stack_set *s, struct vc_rseq_abi *rs)
{
	uint32_t i = vc_rseq_read_index(rs, s->ix);
	if (i >= s->count)
		VCT_FATAL("%s %u not below possible cpus %u", s->name, i, s->count);
}

/* The slab sections read the index themselves: no index window to widen. Lanes all
 * set, so a 2 is a failure of the section. */
static int slab_push_one(const struct stack_set *s, void *p, struct stack_counts *c)
{
	struct vc_rseq_abi *rs = area(); /* the sections write this thread's area */
	for (;;) {
		int r =
		    vc_rseq_slab_push(s->ix, &s->base, &s->count, STACK_HDR_SLOT, UINT32_MAX, p);
		if (r == 2)
			VCT_FATAL("%s: slab push returned 2 with every lane set", s->name);
		if (r >= 0) {
			if (r == 1)
				slab_check_index(s, rs);
			c->push_ops++;
			c->objects_pushed += r == 0;
			c->slab_pushed += r == 0;
			c->full += r == 1;
			return r;
		}
		c->aborts++;
	}
}

static int slab_pop_one(const struct stack_set *s, void **out, struct stack_counts *c)
{
	struct vc_rseq_abi *rs = area();
	for (;;) {
		int r = vc_rseq_slab_pop(s->ix, &s->base, &s->count, STACK_HDR_SLOT, out);
		if (r >= 0) {
			if (r == 1)
				slab_check_index(s, rs);
			c->pop_ops++;
			c->objects_popped += r == 0;
			c->slab_popped += r == 0;
			c->empty += r == 1;
			return r;
		}
		c->aborts++;
	}
}

int stack_push_one(const struct stack_set *s, void *p, struct stack_counts *c)
{
	if (s->layout == STACK_LAYOUT_SLAB)
		return slab_push_one(s, p, c);
	struct vc_rseq_abi *rs = area();
	for (;;) {
		uint32_t i;
		struct per_index *st = current_stack(s, rs, &i);
		int r = vc_rseq_push(s->ix, rs, i, stack_hdr(st), st->region, p);
		if (r >= 0) {
			c->push_ops++;
			c->objects_pushed += r == 0;
			c->full += r == 1;
			return r;
		}
		c->aborts++;
	}
}

int stack_pop_one(const struct stack_set *s, void **out, struct stack_counts *c)
{
	if (s->layout == STACK_LAYOUT_SLAB)
		return slab_pop_one(s, out, c);
	struct vc_rseq_abi *rs = area();
	for (;;) {
		uint32_t i;
		struct per_index *st = current_stack(s, rs, &i);
		int r = vc_rseq_pop(s->ix, rs, i, stack_hdr(st), st->region, out);
		if (r >= 0) {
			c->pop_ops++;
			c->objects_popped += r == 0;
			c->empty += r == 1;
			return r;
		}
		c->aborts++;
	}
}

uint32_t stack_push_batch(const struct stack_set *s, void *const *in, uint32_t n,
			  struct stack_counts *c)
{
	struct vc_rseq_abi *rs = area();
	for (;;) {
		uint32_t i, pushed = 0;
		struct per_index *st = current_stack(s, rs, &i);
		int r = vc_rseq_push_batch(s->ix, rs, i, stack_hdr(st), st->region, in, n, &pushed);
		if (r >= 0) {
			c->push_batch_ops++;
			if (r == 1) {
				c->full++;
				return 0;
			}
			if (pushed < 1 || pushed > n)
				VCT_FATAL("push_batch of %u reported %u pushed", n, pushed);
			c->objects_pushed += pushed;
			return pushed;
		}
		c->aborts++;
	}
}

uint32_t stack_pop_batch(const struct stack_set *s, void **out, uint32_t n, struct stack_counts *c)
{
	struct vc_rseq_abi *rs = area();
	for (;;) {
		uint32_t i, popped = 0;
		struct per_index *st = current_stack(s, rs, &i);
		int r = vc_rseq_pop_batch(s->ix, rs, i, stack_hdr(st), st->region, out, n, &popped);
		if (r >= 0) {
			c->pop_batch_ops++;
			if (r == 1) {
				c->empty++;
				return 0;
			}
			if (popped < 1 || popped > n)
				VCT_FATAL("pop_batch of %u reported %u popped", n, popped);
			c->objects_popped += popped;
			return popped;
		}
		c->aborts++;
	}
}

/* The header is read before the critical section starts; the section's compare of
 * the whole word rejects it if anything changed since (a stale read is a compare
 * failure, counted in resize_stale). */
void stack_resize(const struct stack_set *s, uint64_t *rng, struct stack_counts *c)
{
	struct vc_rseq_abi *rs = area();
	for (;;) {
		uint32_t i;
		struct per_index *st = current_stack(s, rs, &i);
		uint64_t old = stack_header_load(stack_hdr(st));
		struct vc_rseq_stack h = vc_rseq_stack_unpack(old);
		unsigned lo = h.current > STACK_BEGIN + 1 ? h.current : STACK_BEGIN + 1;
		if (h.begin != STACK_BEGIN || lo > STACK_END_MAX)
			VCT_FATAL("%s stack %u has a corrupt header {%u, %u, %u}", s->name, i,
				  h.current, h.begin, h.end);
		h.end = (uint16_t)(lo + vct_rand(rng) % (STACK_END_MAX - lo + 1));
		int r = vc_rseq_cmpeq_store(s->ix, rs, i, vc_rseq_stack_word_of(stack_hdr(st)), old,
					    vc_rseq_stack_pack(h));
		if (r >= 0) {
			c->resizes += r == 0;
			c->resize_stale += r == 1;
			return;
		}
		c->aborts++;
	}
}

void stack_counts_add(struct stack_counts *sum, const struct stack_counts *c)
{
	sum->push_ops += c->push_ops;
	sum->pop_ops += c->pop_ops;
	sum->push_batch_ops += c->push_batch_ops;
	sum->pop_batch_ops += c->pop_batch_ops;
	sum->objects_pushed += c->objects_pushed;
	sum->objects_popped += c->objects_popped;
	sum->full += c->full;
	sum->empty += c->empty;
	sum->slab_pushed += c->slab_pushed;
	sum->slab_popped += c->slab_popped;
	sum->resizes += c->resizes;
	sum->resize_stale += c->resize_stale;
	sum->aborts += c->aborts;
}

uint64_t stack_header_load(const struct vc_rseq_stack *h)
{
	return __atomic_load_n((const uint64_t *)(const void *)h, __ATOMIC_ACQUIRE);
}

void object_seen(unsigned *seen, long m, void *p, const char *where)
{
	uintptr_t v = (uintptr_t)p;
	if (v < 1 || v > (uintptr_t)m) {
		VCT_EXPECT(0, "%s holds %#lx, not an object", where, (unsigned long)v);
		return;
	}
	seen[v]++;
}

long stack_set_audit(const struct stack_set *s, unsigned *seen, long m)
{
	long live = 0;
	for (uint32_t i = 0; i < s->count; i++) {
		const struct per_index *st = stack_at(s, i);
		struct vc_rseq_stack h =
		    vc_rseq_stack_unpack(stack_header_load(stack_hdr_const(st)));
		char where[48];
		snprintf(where, sizeof where, "%s stack %u", s->name, i);
		bool sane = h.begin == STACK_BEGIN && h.begin <= h.current && h.current <= h.end &&
			    h.end <= STACK_END_MAX && h.reserved == 0;
		VCT_EXPECT(sane, "%s: header {current %u, begin %u, end %u, reserved %u}", where,
			   h.current, h.begin, h.end, h.reserved);
		for (int k = 0; k < STACK_REGION_SLOTS; k++)
			if (k != STACK_HDR_SLOT && (k < STACK_BEGIN || k >= STACK_END_MAX))
				VCT_EXPECT(st->region[k] == GUARD(k),
					   "%s: guard slot %d overwritten", where, k);
		if (h.current < STACK_BEGIN || h.current > STACK_END_MAX)
			continue;
		for (unsigned k = STACK_BEGIN; k < h.current; k++)
			object_seen(seen, m, st->region[k], where);
		live += h.current - STACK_BEGIN;
	}
	return live;
}

long objects_audit(const unsigned *seen, long m, long *missing, long *duplicated)
{
	*missing = *duplicated = 0;
	for (long v = 1; v <= m; v++) {
		if (seen[v] == 1)
			continue;
		*missing += seen[v] == 0;
		*duplicated += seen[v] > 1;
		if (*missing + *duplicated <= 10)
			VCT_EXPECT(0, "object %ld found %u times", v, seen[v]);
	}
	return *missing + *duplicated;
}
