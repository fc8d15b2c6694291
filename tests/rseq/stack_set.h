/* tests/rseq/stack_set.h - per-index stacks of objects for the stack tests, and the
 * retrying callers of the rseq layer's stack operations.
 *
 * A stack set has one struct per_index per possible CPU, indexed by mm_cid or by
 * cpu_id: a region of STACK_REGION_SLOTS 8-byte slots whose slot STACK_HDR_SLOT is the
 * stack's header (struct vc_rseq_stack, through stack_hdr()) and whose positions count
 * slots from the region's start. Live objects are the slots [STACK_BEGIN, current);
 * slots outside [STACK_BEGIN, STACK_END_MAX), the header's excepted, hold guard values
 * that no operation may overwrite. Objects are the integers 1..M as pointers.
 *
 * Two layouts of the same per_index (stack_at() finds index i's in either):
 *   STACK_LAYOUT_ARRAY  a contiguous array of per_index, 64-byte aligned;
 *   STACK_LAYOUT_SLAB   index i's per_index at base + (i << VC_RSEQ_SLAB_SHIFT), in one
 *                       mapping of possible CPUs << VC_RSEQ_SLAB_SHIFT bytes: the layout
 *                       of the slab sections (rseq.h, "Slab sections"), stack number
 *                       STACK_HDR_SLOT, limit = count.
 *
 * The stack_* operations run on the stack of the calling thread's current index,
 * retry after every abort (-1, counted in c->aborts), and return when the critical
 * section committed (0) or its compare failed (1). They are async-signal-safe (the
 * stack tests call them from signal handlers too). On a slab set, stack_push_one and
 * stack_pop_one use the slab sections, which read the index themselves; every other
 * operation, and both on an array set, read the index, compute the header and region
 * addresses from it and pass them to the forms that compare that index (batches and
 * resizes work on any layout). So on a slab set the two kinds of sections share each
 * header.
 * This file is compiled into each test program, so that the injection builds get the
 * injection variant of the inline critical sections.
 */
#ifndef VC_TESTS_RSEQ_STACK_SET_H
#define VC_TESTS_RSEQ_STACK_SET_H

#include "rseq.h"

#include <stddef.h>
#include <stdint.h>

enum {
	STACK_REGION_SLOTS = 64,
	STACK_HDR_SLOT = 1, /* the header's slot: the slab sections' stack number */
	STACK_BEGIN = 4,    /* slots [0, STACK_BEGIN) are never live: guards, the header */
	STACK_END_MAX = 60, /* nor are slots [STACK_END_MAX, STACK_REGION_SLOTS) */
};
_Static_assert(STACK_HDR_SLOT < STACK_BEGIN && STACK_BEGIN < STACK_END_MAX &&
		   STACK_END_MAX <= STACK_REGION_SLOTS,
	       "the header sits below the live slots");

/* One index's stack: the header and the slots in one region. The header slot is only
 * ever accessed as a struct vc_rseq_stack (or its 64-bit word), never as a pointer. */
struct per_index {
	void *region[STACK_REGION_SLOTS];
} __attribute__((aligned(64)));
_Static_assert(sizeof(struct per_index) <= (size_t)1 << VC_RSEQ_SLAB_SHIFT,
	       "a per_index fits in a slab region");

enum stack_layout { STACK_LAYOUT_ARRAY, STACK_LAYOUT_SLAB };

struct stack_set {
	enum vc_rseq_index ix;
	enum stack_layout layout;
	const char *name;
	uint32_t count; /* possible CPUs; the slab sections' limit */
	char *base;	/* index i's per_index at base + i * stride */
	size_t stride;	/* sizeof(struct per_index), or 1 << VC_RSEQ_SLAB_SHIFT */
};

static inline struct per_index *stack_at(const struct stack_set *s, uint32_t i)
{
	return (struct per_index *)(void *)(s->base + (size_t)i * s->stride);
}

static inline struct vc_rseq_stack *stack_hdr(struct per_index *st)
{
	return (struct vc_rseq_stack *)(void *)&st->region[STACK_HDR_SLOT];
}

static inline const struct vc_rseq_stack *stack_hdr_const(const struct per_index *st)
{
	return (const struct vc_rseq_stack *)(const void *)&st->region[STACK_HDR_SLOT];
}

/* What a thread did; objects_* count objects, the others operations. */
struct stack_counts {
	long push_ops, pop_ops, push_batch_ops, pop_batch_ops;
	long objects_pushed, objects_popped;
	long full, empty;	       /* compare failures (1) of pushes and pops */
	long slab_pushed, slab_popped; /* objects moved by the slab sections (included above) */
	long resizes, resize_stale;
	long aborts; /* -1 returns */
};

/* All stacks empty, end = `end`, guards everywhere, in the given layout. */
void stack_set_init(struct stack_set *s, enum vc_rseq_index ix, enum stack_layout layout,
		    uint32_t possible_cpus, unsigned end);
void stack_set_free(struct stack_set *s);

int stack_push_one(const struct stack_set *s, void *p, struct stack_counts *c);
int stack_pop_one(const struct stack_set *s, void **out, struct stack_counts *c);
/* Batch forms return how many objects moved (0 when the compare failed). push_batch
 * pushes in[0 .. returned); pop_batch fills out[0 .. returned). */
uint32_t stack_push_batch(const struct stack_set *s, void *const *in, uint32_t n,
			  struct stack_counts *c);
uint32_t stack_pop_batch(const struct stack_set *s, void **out, uint32_t n, struct stack_counts *c);
/* New capacity with vc_rseq_cmpeq_store of the whole header word: end moves to a
 * random value in [max(current, STACK_BEGIN + 1), STACK_END_MAX]. */
void stack_resize(const struct stack_set *s, uint64_t *rng, struct stack_counts *c);

void stack_counts_add(struct stack_counts *sum, const struct stack_counts *c);

/* The header word, loaded once (its format and the conversions: rseq/rseq.h). */
uint64_t stack_header_load(const struct vc_rseq_stack *h);

/* Where objects are: seen[v] counts the places object v was found (objects 1..m).
 * object_seen reports (VCT_EXPECT) anything that is not an object. */
void object_seen(unsigned *seen, long m, void *p, const char *where);
/* After all threads stopped: checks every header (begin == STACK_BEGIN <= current <=
 * end <= STACK_END_MAX, reserved 0) and guard slot (the header's skipped), counts the
 * live objects into seen, returns how many there are. */
long stack_set_audit(const struct stack_set *s, unsigned *seen, long m);
/* Checks that every object 1..m was seen exactly once; returns missing + duplicated
 * and stores both. */
long objects_audit(const unsigned *seen, long m, long *missing, long *duplicated);

#endif
