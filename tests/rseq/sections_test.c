/* tests/rseq/sections_test.c - what each critical section does, one thread, exactly.
 *
 * Usage: sections-test
 *
 * For both index kinds (cpu_id, mm_cid), on a stack over a small region whose unused
 * slots hold guard values, and on plain words:
 *   - push / pop / push_batch / pop_batch move the right objects in LIFO order
 *     (pop_batch hands out the top first), stop at begin and end, report how many they
 *     moved, and leave every slot outside [begin, end) alone;
 *   - the compare failures return 1 and write nothing: pop on empty, push on full,
 *     batches of 0, cmpeq_store on a word that differs;
 *   - a stopped header fails every operation with 1, nothing written: the all-zero
 *     header and the stop word {any current, begin 0xffff, end 0} (fence-test);
 *   - an index that is not the thread's own (possible CPUs + 7: no thread ever has it)
 *     makes every operation, vc_rseq_addv included, return -1 and write nothing: this
 *     is the compare that protects a thread whose index changed between its read and
 *     the section;
 *   - vc_rseq_addv adds, vc_rseq_cmpeq_store stores the 64-bit word.
 * The slab forms (vc_rseq_slab_pop / vc_rseq_slab_push, rseq.h "Slab sections"), on
 * one slab of possible-CPUs regions: the thread's index (read with vc_rseq_read_index)
 * picks region `index`, whose first SLAB_SLOTS slots are the header at slot SLAB_STACK,
 * live slots [SLAB_BEGIN, SLAB_END) and guards everywhere else; the first SLAB_SLOTS
 * slots of a neighbouring index's region are guards too. "Nothing written" below means
 * both regions byte-for-byte as before the call, and the output untouched:
 *   - pop on empty returns 1, four pushes fill the stack, push on full returns 1, four
 *     pops hand the objects back top first and leave {begin, begin, end}; headers are
 *     the exact words (reserved 0), guards intact;
 *   - index >= *limit (limits 0 and the index): pop and push return 1 and write
 *     nothing (a push whose lane is clear too: 1 or 2); limits index + 1, possible
 *     CPUs and UINT32_MAX (an unsigned compare) let both work;
 *   - lanes with bit (index & VC_RSEQ_SLAB_LANES_MASK) clear (0, all other bits set):
 *     push returns 2 and writes nothing; that bit alone lets it push;
 *   - the all-zero header and the stop word (with several currents) make pop and push
 *     return 1 and write nothing;
 *   - the neighbouring index's region is never written.
 * The thread is pinned to one CPU so that its cpu_id stays put (and, single-threaded,
 * its mm_cid): the slab sections read the index themselves. A -1 from a section
 * given the right index means the thread was preempted inside it: the helpers retry.
 * Built twice: the injection build runs with a delay loop at every injection point and
 * also checks vc_rseq_inject_aborts == the number of -1 returns (every abort handler
 * entry reaches the caller). A helper that loses a register across an injection point
 * (say %eax, which holds `current` between load and commit) fails here every time.
 */
#include "cpus.h"
#include "vctest.h"
#include "rseq.h"

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#if defined(VC_RSEQ_INJECT) && VC_RSEQ_INJECT
#define INJECT_BUILD 1
#else
#define INJECT_BUILD 0
#endif

#define GUARD(k) ((void *)(uintptr_t)(0x9a7d0000u + (unsigned)(k)))
#define OBJ(k) ((void *)(uintptr_t)(0x1000u + (unsigned)(k)))
#define UNTOUCHED ((void *)(uintptr_t)0x5eed)
/* Guard value of slot k of the neighbouring region of the slab checks. */
#define NGUARD(k) ((void *)(uintptr_t)(0x9a7e0000u + (unsigned)(k)))

enum { SLOTS = 16, BEGIN = 2, END = 6 };
/* The slab checks' region: header at slot SLAB_STACK, below the live slots. */
enum { SLAB_SLOTS = 16, SLAB_STACK = 1, SLAB_BEGIN = 4, SLAB_END = 8 };
_Static_assert(SLAB_STACK < SLAB_BEGIN && SLAB_BEGIN < SLAB_END && SLAB_END < SLAB_SLOTS,
	       "the header and a guard at each side of the live slots");

static struct vc_rseq_abi *rs;
static uint32_t foreign_index; /* an index no thread ever has */
static bool foreign;	       /* give the sections foreign_index */
static long minus_ones;	       /* -1 returns seen, deliberate ones included */
static long retries;	       /* -1 returns from preemption, retried */

static uint32_t index_for(enum vc_rseq_index ix)
{
	return foreign ? foreign_index : vc_rseq_read_index(rs, ix);
}

/* Retry while the section aborts with the right index; with the foreign index, a
 * -1 is the expected answer and is returned. */
static int settle(int r)
{
	if (r == -1)
		minus_ones++;
	return r;
}
#define RUN(call)                                                                                  \
	do {                                                                                       \
		for (;;) {                                                                         \
			r = settle(call);                                                          \
			if (r != -1 || foreign)                                                    \
				break;                                                             \
			retries++;                                                                 \
		}                                                                                  \
	} while (0)

static int pop(enum vc_rseq_index ix, struct vc_rseq_stack *h, void **region, void **out)
{
	int r;
	RUN(vc_rseq_pop(ix, rs, index_for(ix), h, region, out));
	return r;
}

static int push(enum vc_rseq_index ix, struct vc_rseq_stack *h, void **region, void *p)
{
	int r;
	RUN(vc_rseq_push(ix, rs, index_for(ix), h, region, p));
	return r;
}

static int pop_batch(enum vc_rseq_index ix, struct vc_rseq_stack *h, void **region, void **out,
		     uint32_t n, uint32_t *popped)
{
	int r;
	RUN(vc_rseq_pop_batch(ix, rs, index_for(ix), h, region, out, n, popped));
	return r;
}

static int push_batch(enum vc_rseq_index ix, struct vc_rseq_stack *h, void **region,
		      void *const *in, uint32_t n, uint32_t *pushed)
{
	int r;
	RUN(vc_rseq_push_batch(ix, rs, index_for(ix), h, region, in, n, pushed));
	return r;
}

static int cmpeq_store(enum vc_rseq_index ix, uint64_t *w, uint64_t expect, uint64_t newv)
{
	int r;
	RUN(vc_rseq_cmpeq_store(ix, rs, index_for(ix), w, expect, newv));
	return r;
}

static int addv(enum vc_rseq_index ix, intptr_t *v, intptr_t count)
{
	int r;
	RUN(vc_rseq_addv(ix, rs, index_for(ix), v, count));
	return r;
}

struct fixture {
	struct vc_rseq_stack h;
	void *region[SLOTS];
};

static void reset(struct fixture *f, unsigned current, unsigned begin, unsigned end)
{
	f->h = (struct vc_rseq_stack){
	    .current = (uint16_t)current, .begin = (uint16_t)begin, .end = (uint16_t)end};
	for (int k = 0; k < SLOTS; k++)
		f->region[k] = GUARD(k);
}

/* The header is {current, begin, end} and the slots are: [begin, current) holding
 * want[0..], everything else outside [begin, end) a guard (slots in [current, end)
 * may hold leftovers and are not checked). */
static void expect_stack(const char *what, const struct fixture *f, unsigned current,
			 unsigned begin, unsigned end, void *const *want)
{
	VCT_EXPECT(f->h.current == current && f->h.begin == begin && f->h.end == end &&
		       f->h.reserved == 0,
		   "%s: header {%u, %u, %u, %u}, expected {%u, %u, %u}", what, f->h.current,
		   f->h.begin, f->h.end, f->h.reserved, current, begin, end);
	for (unsigned k = 0; k < SLOTS; k++) {
		if (k >= begin && k < current)
			VCT_EXPECT(f->region[k] == want[k - begin],
				   "%s: slot %u holds %p, expected %p", what, k, f->region[k],
				   want[k - begin]);
		else if (k < begin || k >= end)
			VCT_EXPECT(f->region[k] == GUARD(k), "%s: guard slot %u overwritten", what,
				   k);
	}
}

static void stack_semantics(enum vc_rseq_index ix, const char *name)
{
	struct fixture f;
	void *out[8], *one = UNTOUCHED;
	uint32_t n = 0;
	char what[80];
#define WHAT(s) (snprintf(what, sizeof what, "%s: %s", name, s), what)

	reset(&f, BEGIN, BEGIN, END);
	VCT_EXPECT(pop(ix, &f.h, f.region, &one) == 1 && one == UNTOUCHED, "%s",
		   WHAT("pop on empty must fail with 1 and not write"));
	expect_stack(WHAT("after pop on empty"), &f, BEGIN, BEGIN, END, NULL);

	void *abcd[] = {OBJ(1), OBJ(2), OBJ(3), OBJ(4)};
	for (int k = 0; k < 4; k++)
		VCT_EXPECT(push(ix, &f.h, f.region, abcd[k]) == 0, "%s", WHAT("push with room"));
	expect_stack(WHAT("after 4 pushes"), &f, END, BEGIN, END, abcd);
	VCT_EXPECT(push(ix, &f.h, f.region, OBJ(5)) == 1, "%s",
		   WHAT("push on full must fail with 1"));
	expect_stack(WHAT("after push on full"), &f, END, BEGIN, END, abcd);

	VCT_EXPECT(pop(ix, &f.h, f.region, &one) == 0 && one == OBJ(4), "%s",
		   WHAT("pop must return the top"));
	expect_stack(WHAT("after pop"), &f, END - 1, BEGIN, END, abcd);

	memset(out, 0, sizeof out);
	VCT_EXPECT(pop_batch(ix, &f.h, f.region, out, 8, &n) == 0 && n == 3 && out[0] == OBJ(3) &&
		       out[1] == OBJ(2) && out[2] == OBJ(1) && out[3] == NULL,
		   "%s (n %u: %p %p %p %p)", WHAT("pop_batch of 8 from 3 must give 3, top first"),
		   n, out[0], out[1], out[2], out[3]);
	expect_stack(WHAT("after pop_batch"), &f, BEGIN, BEGIN, END, NULL);
	n = 77;
	out[0] = UNTOUCHED;
	VCT_EXPECT(pop_batch(ix, &f.h, f.region, out, 8, &n) == 1 && n == 77 && out[0] == UNTOUCHED,
		   "%s", WHAT("pop_batch on empty must fail with 1 and not write"));

	void *in[] = {OBJ(11), OBJ(12), OBJ(13), OBJ(14), OBJ(15), OBJ(16)};
	VCT_EXPECT(push_batch(ix, &f.h, f.region, in, 6, &n) == 0 && n == 4, "%s (pushed %u)",
		   WHAT("push_batch of 6 into room 4 must push 4"), n);
	expect_stack(WHAT("after push_batch"), &f, END, BEGIN, END, in);
	n = 77;
	VCT_EXPECT(push_batch(ix, &f.h, f.region, in, 2, &n) == 1 && n == 77, "%s",
		   WHAT("push_batch on full must fail with 1 and not write"));
	expect_stack(WHAT("after push_batch on full"), &f, END, BEGIN, END, in);

	reset(&f, BEGIN + 2, BEGIN, END);
	f.region[BEGIN] = OBJ(21);
	f.region[BEGIN + 1] = OBJ(22);
	void *two[] = {OBJ(21), OBJ(22)};
	VCT_EXPECT(pop_batch(ix, &f.h, f.region, out, 0, &n) == 1 &&
		       push_batch(ix, &f.h, f.region, in, 0, &n) == 1,
		   "%s", WHAT("batches of 0 must fail with 1"));
	expect_stack(WHAT("after batches of 0"), &f, BEGIN + 2, BEGIN, END, two);
	VCT_EXPECT(push_batch(ix, &f.h, f.region, in, 1, &n) == 0 && n == 1 &&
		       f.region[BEGIN + 2] == OBJ(11),
		   "%s", WHAT("push_batch of 1"));
	VCT_EXPECT(pop_batch(ix, &f.h, f.region, out, 2, &n) == 0 && n == 2 && out[0] == OBJ(11) &&
		       out[1] == OBJ(22),
		   "%s", WHAT("pop_batch of 2 from 3"));
	expect_stack(WHAT("after the batches of 1 and 2"), &f, BEGIN + 1, BEGIN, END, two);

	/* Stopped headers. */
	static const unsigned currents[] = {0, 1, BEGIN, 5, 0xfffe, 0xffff};
	for (int z = 0; z < 1 + (int)(sizeof currents / sizeof currents[0]); z++) {
		bool zero = z == 0;
		unsigned cur = zero ? 0 : currents[z - 1];
		struct vc_rseq_stack stop = vc_rseq_stack_unpack(
		    zero ? 0 : vc_rseq_stack_stop_word(vc_rseq_stack_word((uint16_t)cur, 0, 0)));
		for (int k = 0; k < SLOTS; k++)
			f.region[k] = GUARD(k);
		f.h = stop;
		one = UNTOUCHED;
		out[0] = UNTOUCHED;
		n = 77;
		int r1 = pop(ix, &f.h, f.region, &one);
		int r2 = push(ix, &f.h, f.region, OBJ(31));
		int r3 = pop_batch(ix, &f.h, f.region, out, 4, &n);
		int r4 = push_batch(ix, &f.h, f.region, in, 4, &n);
		bool slots_intact = true;
		for (int k = 0; k < SLOTS; k++)
			slots_intact &= f.region[k] == GUARD(k);
		VCT_EXPECT(r1 == 1 && r2 == 1 && r3 == 1 && r4 == 1 && one == UNTOUCHED &&
			       out[0] == UNTOUCHED && n == 77 && slots_intact &&
			       memcmp(&f.h, &stop, sizeof stop) == 0,
			   "%s: %s stopped header (current %u): pop %d push %d pop_batch %d "
			   "push_batch %d, must all be 1 and write nothing",
			   name, zero ? "all-zero" : "stop-word", cur, r1, r2, r3, r4);
	}

	/* Plain words. */
	uint64_t w = 5;
	VCT_EXPECT(cmpeq_store(ix, &w, 5, 0x123456789abcdefULL) == 0 && w == 0x123456789abcdefULL,
		   "%s", WHAT("cmpeq_store on an equal word must store"));
	VCT_EXPECT(cmpeq_store(ix, &w, 5, 9) == 1 && w == 0x123456789abcdefULL, "%s",
		   WHAT("cmpeq_store on a different word must fail with 1"));
	intptr_t v = 40;
	VCT_EXPECT(addv(ix, &v, 5) == 0 && addv(ix, &v, -3) == 0 && v == 42, "%s (v %ld)",
		   WHAT("addv 40 + 5 - 3"), (long)v);
#undef WHAT
}

/* Every operation with an index that is not the thread's: -1, nothing written. */
static void foreign_index_semantics(enum vc_rseq_index ix, const char *name)
{
	struct fixture f;
	reset(&f, BEGIN + 1, BEGIN, END);
	f.region[BEGIN] = OBJ(41);
	void *one = UNTOUCHED, *out[4] = {UNTOUCHED};
	void *in[2] = {OBJ(42), OBJ(43)};
	uint32_t n = 77;
	uint64_t w = 7;
	intptr_t v = 7;
	long before = minus_ones;
	foreign = true;
	int r[6];
	r[0] = pop(ix, &f.h, f.region, &one);
	r[1] = push(ix, &f.h, f.region, OBJ(44));
	r[2] = pop_batch(ix, &f.h, f.region, out, 2, &n);
	r[3] = push_batch(ix, &f.h, f.region, in, 2, &n);
	r[4] = cmpeq_store(ix, &w, 7, 8);
	r[5] = addv(ix, &v, 1);
	foreign = false;
	void *want[] = {OBJ(41)};
	VCT_EXPECT(r[0] == -1 && r[1] == -1 && r[2] == -1 && r[3] == -1 && r[4] == -1 && r[5] == -1,
		   "%s with index %u: returns %d %d %d %d %d %d, expected -1 everywhere", name,
		   foreign_index, r[0], r[1], r[2], r[3], r[4], r[5]);
	VCT_EXPECT(one == UNTOUCHED && out[0] == UNTOUCHED && n == 77 && w == 7 && v == 7,
		   "%s: a section with a foreign index wrote its outputs", name);
	expect_stack("foreign index", &f, BEGIN + 1, BEGIN, END, want);
	VCT_EXPECT(f.region[BEGIN + 1] == GUARD(BEGIN + 1),
		   "%s: a section with a foreign index wrote a slot", name);
	VCT_EXPECT(minus_ones - before == 6, "%s: %ld aborts counted for 6 foreign calls", name,
		   minus_ones - before);
}

static char *slab;	    /* possible_cpus regions of 1 << VC_RSEQ_SLAB_SHIFT bytes */
static uint32_t slab_count; /* possible_cpus */

static void **slab_region(uint32_t i)
{
	return (void **)(void *)(slab + ((size_t)i << VC_RSEQ_SLAB_SHIFT));
}

/* The header word of region i; only ever accessed as a 64-bit word (and by the
 * sections). */
static uint64_t *slab_header(uint32_t i)
{
	return vc_rseq_stack_word_of((struct vc_rseq_stack *)(void *)(slab_region(i) + SLAB_STACK));
}

/* A region next to idx's that no section of this thread may touch; UINT32_MAX when
 * there is only one. */
static uint32_t slab_neighbour(uint32_t idx)
{
	return idx + 1 < slab_count ? idx + 1 : idx > 0 ? idx - 1 : UINT32_MAX;
}

/* Region idx: header word `hdr`, every other of its first SLAB_SLOTS slots a guard;
 * the neighbour's first SLAB_SLOTS slots all guards. */
static void slab_reset(uint32_t idx, uint64_t hdr)
{
	void **region = slab_region(idx);
	for (int k = 0; k < SLAB_SLOTS; k++)
		if (k != SLAB_STACK)
			region[k] = GUARD(k);
	*slab_header(idx) = hdr;
	uint32_t nb = slab_neighbour(idx);
	if (nb != UINT32_MAX)
		for (int k = 0; k < SLAB_SLOTS; k++)
			slab_region(nb)[k] = NGUARD(k);
}

/* The first SLAB_SLOTS slots of region idx and of its neighbour, as bytes. */
struct slab_snapshot {
	unsigned char own[SLAB_SLOTS * sizeof(void *)];
	unsigned char neighbour[SLAB_SLOTS * sizeof(void *)];
};

static void slab_snap(struct slab_snapshot *snap, uint32_t idx)
{
	uint32_t nb = slab_neighbour(idx);
	memcpy(snap->own, slab_region(idx), sizeof snap->own);
	memset(snap->neighbour, 0, sizeof snap->neighbour);
	if (nb != UINT32_MAX)
		memcpy(snap->neighbour, slab_region(nb), sizeof snap->neighbour);
}

/* Nothing was written to either region since slab_snap. */
static bool slab_unchanged(const struct slab_snapshot *snap, uint32_t idx)
{
	struct slab_snapshot now;
	slab_snap(&now, idx);
	return memcmp(&now, snap, sizeof now) == 0;
}

/* Region idx holds the live header {current, SLAB_BEGIN, SLAB_END} (reserved 0) and
 * want[0..] in [SLAB_BEGIN, current), guards outside [SLAB_BEGIN, SLAB_END) (slots in
 * [current, SLAB_END) may hold leftovers and are not checked); the neighbour holds its
 * guards. */
static void expect_slab(const char *what, uint32_t idx, unsigned current, void *const *want)
{
	uint64_t w = __atomic_load_n(slab_header(idx), __ATOMIC_RELAXED);
	struct vc_rseq_stack h = vc_rseq_stack_unpack(w);
	VCT_EXPECT(w == vc_rseq_stack_word((uint16_t)current, SLAB_BEGIN, SLAB_END),
		   "%s: header {%u, %u, %u, reserved %u}, expected {%u, %u, %u, reserved 0}", what,
		   h.current, h.begin, h.end, h.reserved, current, SLAB_BEGIN, SLAB_END);
	void **region = slab_region(idx);
	for (unsigned k = 0; k < SLAB_SLOTS; k++) {
		if (k == SLAB_STACK)
			continue;
		if (k >= SLAB_BEGIN && k < current)
			VCT_EXPECT(region[k] == want[k - SLAB_BEGIN],
				   "%s: slot %u holds %p, expected %p", what, k, region[k],
				   want[k - SLAB_BEGIN]);
		else if (k < SLAB_BEGIN || k >= SLAB_END)
			VCT_EXPECT(region[k] == GUARD(k), "%s: guard slot %u overwritten", what, k);
	}
	uint32_t nb = slab_neighbour(idx);
	if (nb != UINT32_MAX)
		for (unsigned k = 0; k < SLAB_SLOTS; k++)
			VCT_EXPECT(slab_region(nb)[k] == NGUARD(k),
				   "%s: slot %u of the neighbouring region %u overwritten", what, k,
				   nb);
}

static int slab_pop(enum vc_rseq_index ix, const uint32_t *limit, void **out)
{
	int r;
	RUN(vc_rseq_slab_pop(ix, &slab, limit, SLAB_STACK, out));
	return r;
}

static int slab_push(enum vc_rseq_index ix, const uint32_t *limit, uint32_t lanes, void *p)
{
	int r;
	RUN(vc_rseq_slab_push(ix, &slab, limit, SLAB_STACK, lanes, p));
	return r;
}

/* The slab forms on the region of the thread's own index (see the header comment). */
static void slab_semantics(enum vc_rseq_index ix, const char *name)
{
	const uint32_t idx = vc_rseq_read_index(rs, ix);
	if (idx >= slab_count)
		VCT_FATAL("%s %u not below possible cpus %u", name, idx, slab_count);
	const uint32_t lane = 1u << (idx & VC_RSEQ_SLAB_LANES_MASK);
	uint32_t limit = slab_count;
	struct slab_snapshot snap;
	void *one = UNTOUCHED;
	char what[96];
#define WHAT(s) (snprintf(what, sizeof what, "%s slab (index %u): %s", name, idx, s), what)

	/* Empty, filled up to end, emptied again, in LIFO order. */
	slab_reset(idx, vc_rseq_stack_word(SLAB_BEGIN, SLAB_BEGIN, SLAB_END));
	slab_snap(&snap, idx);
	VCT_EXPECT(slab_pop(ix, &limit, &one) == 1 && one == UNTOUCHED &&
		       slab_unchanged(&snap, idx),
		   "%s", WHAT("pop on empty must fail with 1 and write nothing"));
	void *abcd[] = {OBJ(1), OBJ(2), OBJ(3), OBJ(4)};
	for (int k = 0; k < 4; k++) {
		VCT_EXPECT(slab_push(ix, &limit, UINT32_MAX, abcd[k]) == 0, "%s",
			   WHAT("push with room"));
		expect_slab(WHAT("after a push"), idx, SLAB_BEGIN + (unsigned)k + 1, abcd);
	}
	slab_snap(&snap, idx);
	VCT_EXPECT(slab_push(ix, &limit, UINT32_MAX, OBJ(5)) == 1 && slab_unchanged(&snap, idx),
		   "%s", WHAT("push on full must fail with 1 and write nothing"));
	for (int k = 3; k >= 0; k--) {
		one = UNTOUCHED;
		VCT_EXPECT(slab_pop(ix, &limit, &one) == 0 && one == abcd[k], "%s (got %p)",
			   WHAT("pop must return the top"), one);
		expect_slab(WHAT("after a pop"), idx, SLAB_BEGIN + (unsigned)k, abcd);
	}
	one = UNTOUCHED;
	slab_snap(&snap, idx);
	VCT_EXPECT(slab_pop(ix, &limit, &one) == 1 && one == UNTOUCHED &&
		       slab_unchanged(&snap, idx),
		   "%s", WHAT("pop on the emptied stack must fail with 1 and write nothing"));

	/* Limits: index >= *limit fails everything; any limit above the index works. */
	void *live[] = {OBJ(41), OBJ(42)};
	slab_reset(idx, vc_rseq_stack_word(SLAB_BEGIN + 1, SLAB_BEGIN, SLAB_END));
	slab_region(idx)[SLAB_BEGIN] = OBJ(41);
	const uint32_t excluding[] = {0, idx};
	for (int b = 0; b < 2; b++) {
		limit = excluding[b];
		one = UNTOUCHED;
		slab_snap(&snap, idx);
		int r1 = slab_pop(ix, &limit, &one);
		int r2 = slab_push(ix, &limit, UINT32_MAX, OBJ(43));
		int r3 = slab_push(ix, &limit, ~lane, OBJ(43));
		VCT_EXPECT(r1 == 1 && r2 == 1 && (r3 == 1 || r3 == 2) && one == UNTOUCHED &&
			       slab_unchanged(&snap, idx),
			   "%s slab: index %u, limit %u: pop %d, push %d, push on a clear lane %d; "
			   "must be 1, 1, 1 or 2 and write nothing",
			   name, idx, limit, r1, r2, r3);
	}
	const uint32_t including[] = {idx + 1, slab_count, UINT32_MAX};
	for (int b = 0; b < 3; b++) {
		limit = including[b];
		int r1 = slab_push(ix, &limit, UINT32_MAX, OBJ(42));
		expect_slab(WHAT("after a push with the index below the limit"), idx,
			    SLAB_BEGIN + 2, live);
		one = UNTOUCHED;
		int r2 = slab_pop(ix, &limit, &one);
		VCT_EXPECT(r1 == 0 && r2 == 0 && one == OBJ(42),
			   "%s slab: index %u, limit %u: push %d, pop %d (got %p); must be 0, 0 "
			   "and give back the object",
			   name, idx, limit, r1, r2, one);
		expect_slab(WHAT("after a pop with the index below the limit"), idx, SLAB_BEGIN + 1,
			    live);
	}
	limit = slab_count;

	/* Lanes: the push needs bit (index & mask) of lanes; the pop has no lanes. */
	const uint32_t other_lanes[] = {0, ~lane};
	for (int b = 0; b < 2; b++) {
		slab_snap(&snap, idx);
		int r = slab_push(ix, &limit, other_lanes[b], OBJ(44));
		VCT_EXPECT(r == 2 && slab_unchanged(&snap, idx),
			   "%s slab: index %u, lanes %#x: push %d; must be 2 and write nothing",
			   name, idx, other_lanes[b], r);
	}
	void *with_44[] = {OBJ(41), OBJ(44)};
	VCT_EXPECT(slab_push(ix, &limit, lane, OBJ(44)) == 0, "%s",
		   WHAT("push with only the index's lane bit set must push"));
	expect_slab(WHAT("after a push on its lane"), idx, SLAB_BEGIN + 2, with_44);
	one = UNTOUCHED;
	VCT_EXPECT(slab_pop(ix, &limit, &one) == 0 && one == OBJ(44), "%s",
		   WHAT("pop after the lane push must return it"));
	expect_slab(WHAT("after popping the lane push"), idx, SLAB_BEGIN + 1, live);

	/* Stopped headers. */
	static const unsigned currents[] = {0, 1, SLAB_BEGIN, 5, 0xfffe, 0xffff};
	for (int z = 0; z < 1 + (int)(sizeof currents / sizeof currents[0]); z++) {
		bool zero = z == 0;
		unsigned cur = zero ? 0 : currents[z - 1];
		slab_reset(idx, zero ? 0
				     : vc_rseq_stack_stop_word(vc_rseq_stack_word(
					   (uint16_t)cur, SLAB_BEGIN, SLAB_END)));
		one = UNTOUCHED;
		slab_snap(&snap, idx);
		int r1 = slab_pop(ix, &limit, &one);
		int r2 = slab_push(ix, &limit, UINT32_MAX, OBJ(45));
		int r3 = slab_push(ix, &limit, lane, OBJ(45));
		VCT_EXPECT(r1 == 1 && r2 == 1 && r3 == 1 && one == UNTOUCHED &&
			       slab_unchanged(&snap, idx),
			   "%s slab: %s stopped header (current %u): pop %d push %d push on its "
			   "lane %d, must all be 1 and write nothing",
			   name, zero ? "all-zero" : "stop-word", cur, r1, r2, r3);
	}
	uint32_t after = vc_rseq_read_index(rs, ix);
	VCT_EXPECT(after == idx, "%s moved from %u to %u during the slab checks", name, idx, after);
#undef WHAT
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	vct_watchdog(40);
	const struct vc_rseq_info *info = vc_rseq_init();
	if (!info->has_cpu_id)
		VCT_FATAL("needs rseq (owner %d)", info->owner);
	if (!info->has_mm_cid)
		printf("the kernel does not provide mm_cid (feature size %u): cpu_id only\n",
		       info->kernel_feature_size);
	rs = vc_rseq_area();
	if (!rs)
		VCT_FATAL("no rseq area");
	struct cpu_list allowed;
	cpu_list_allowed(&allowed);
	pin_self(allowed.cpu[0]);
	foreign_index = info->possible_cpus + 7;
	slab_count = info->possible_cpus;
	slab = mmap(NULL, (size_t)slab_count << VC_RSEQ_SLAB_SHIFT, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (slab == MAP_FAILED)
		VCT_FATAL("mmap of the slab (%u regions)", slab_count);
#if INJECT_BUILD
	vc_rseq_inject_delay = 500; /* no yield: it would abort on a busy CPU every time */
#endif
	for (int round = 0; round < 100; round++) {
		stack_semantics(VC_RSEQ_INDEX_CPU_ID, "cpu_id");
		if (info->has_mm_cid)
			stack_semantics(VC_RSEQ_INDEX_MM_CID, "mm_cid");
		foreign_index_semantics(VC_RSEQ_INDEX_CPU_ID, "cpu_id");
		if (info->has_mm_cid)
			foreign_index_semantics(VC_RSEQ_INDEX_MM_CID, "mm_cid");
		slab_semantics(VC_RSEQ_INDEX_CPU_ID, "cpu_id");
		if (info->has_mm_cid)
			slab_semantics(VC_RSEQ_INDEX_MM_CID, "mm_cid");
		if (vct_failures())
			break;
	}
	printf("%s build, owner %s, pinned to cpu %d (mm_cid %d): 100 rounds of every "
	       "operation, slab forms included, on %s; %ld -1 returns (%ld from preemption, "
	       "retried)\n",
	       INJECT_BUILD ? "injection" : "plain",
	       info->owner == VC_RSEQ_OWNER_GLIBC ? "glibc" : "self", allowed.cpu[0],
	       vc_rseq_current_mm_cid(), info->has_mm_cid ? "both indexes" : "the cpu_id index",
	       minus_ones, retries);
#if INJECT_BUILD
	vc_rseq_inject_delay = 0;
	printf("vc_rseq_inject_aborts: %ld\n", (long)vc_rseq_inject_aborts);
	VCT_EXPECT(vc_rseq_inject_aborts == minus_ones,
		   "abort handlers entered %ld times but callers saw %ld aborts",
		   (long)vc_rseq_inject_aborts, minus_ones);
#endif
	munmap(slab, (size_t)slab_count << VC_RSEQ_SLAB_SHIFT);
	return vct_exit();
}
