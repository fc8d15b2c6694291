/* tests/rseq/stack_set.h - per-index stacks of objects for the stack tests, and the
 * retrying callers of the rseq layer's stack operations.
 *
 * A stack set has one struct vc_rseq_stack per possible CPU, indexed by mm_cid or by
 * cpu_id, each over a region of STACK_REGION_SLOTS pointer slots. Live objects are the
 * slots [STACK_BEGIN, current); slots outside [STACK_BEGIN, STACK_END_MAX) hold guard
 * values that no operation may overwrite. Objects are the integers 1..M as pointers.
 *
 * The stack_* operations run on the stack of the calling thread's current index,
 * re-read the index and retry after every abort (-1, counted in c->aborts), and return
 * when the critical section committed (0) or its compare failed (1). They are
 * async-signal-safe (the stack tests call them from signal handlers too).
 * This file is compiled into each test program, so that the injection builds get the
 * injection variant of the inline critical sections.
 */
#ifndef VC_TESTS_RSEQ_STACK_SET_H
#define VC_TESTS_RSEQ_STACK_SET_H

#include "rseq.h"

#include <stdint.h>

enum {
	STACK_REGION_SLOTS = 64,
	STACK_BEGIN = 4,    /* slots [0, STACK_BEGIN) are never live: guards */
	STACK_END_MAX = 60, /* nor are slots [STACK_END_MAX, STACK_REGION_SLOTS) */
};

/* One index's stack: the header in a cache line of its own, then the region. */
struct per_index {
	struct vc_rseq_stack hdr;
	char pad[64 - sizeof(struct vc_rseq_stack)];
	void *region[STACK_REGION_SLOTS];
} __attribute__((aligned(64)));

struct stack_set {
	enum vc_rseq_index ix;
	const char *name;
	unsigned count; /* possible CPUs */
	struct per_index *at;
};

/* What a thread did; objects_* count objects, the others operations. */
struct stack_counts {
	long push_ops, pop_ops, push_batch_ops, pop_batch_ops;
	long objects_pushed, objects_popped;
	long full, empty; /* compare failures (1) of pushes and pops */
	long resizes, resize_stale;
	long aborts; /* -1 returns */
};

/* All stacks empty, end = `end`, guards everywhere. */
void stack_set_init(struct stack_set *s, enum vc_rseq_index ix, unsigned possible_cpus,
		    unsigned end);
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
 * end <= STACK_END_MAX) and guard slot, counts the live objects into seen, returns how
 * many there are. */
long stack_set_audit(const struct stack_set *s, unsigned *seen, long m);
/* Checks that every object 1..m was seen exactly once; returns missing + duplicated
 * and stores both. */
long objects_audit(const unsigned *seen, long m, long *missing, long *duplicated);

#endif
