/* tests/unit/central_unit.c - the central layer (allocator/central.c) over the real
 * page heap (pageheap.c, segment.c), against the fake OS layer (fake_os.c): no
 * malloc replacement, no threads, no rseq, no vCPU caches (the test takes and gives
 * batches as they would). Each case states the rule it checks; after every step the
 * accounting holds: free_objects is what the transfer array holds plus the free
 * objects (listed or uncarved) of the spans on the nonempty lists, span_out is what
 * the test holds plus the transfer array, and every span on a lane's list belongs
 * to that lane and the class and still has a free object.
 *
 *   carve      a fresh class carves its first span in address order, every object
 *              tagged free, and the page entries' carved limits cover exactly the
 *              pages where carved objects start; a carve on fresh pages populates
 *              the OS pages its tags go to that no earlier carve populated, in one
 *              call, and a refill that carves nothing populates nothing;
 *   transfer   objects given back wait in the transfer array (taken back last in,
 *              first out) up to the class's transfer_cap; beyond it they go to their
 *              span's free list; a span whose objects all came back goes to the page
 *              heap (its page entries lose the class);
 *   lanes      two lanes carve different spans, not neighbours in memory; a lane
 *              without spans takes another lane's free-list objects before it makes
 *              a span, and never carves another lane's span;
 *   lanes with a remote path (classes up to VC_REMOTE_MAX_SIZE in vcpu mode)
 *              a lane takes from the transfer array only objects of its own lane,
 *              and never borrows another lane's free objects: without spans it
 *              makes one, unless a span of another lane has at most a quarter of
 *              its objects out, which it adopts (the span, its list and its page
 *              entries' local lanes become the new lane's, and it carves it);
 *   tag        an object on a span's free list whose free tag was overwritten is
 *              reported as a use after free when it is taken;
 *   idle       the idle trim flushes a transfer array untouched since the previous
 *              trim; of one that was used, the objects below its low-water mark
 *              (never taken since the previous trim) go back to their spans and the
 *              others move down, in order; a flush in between lowers the mark;
 *   no release a flush that empties spans makes no system call, even with the page
 *              heap's decay overdue; the page heap's maintenance releases them later,
 *              with no central or page-heap lock held;
 *   nodes      on two nodes, objects go back to the central lists of their own node.
 */
#include "fake_os.h"
#include "internal.h"
#include "layer_env.h"
#include "vctest.h"

#include <stdio.h>
#include <string.h>

#define DECAY_MS 1000u
#define MAX_HELD 4096

static unsigned cls;				    /* the class most cases use: 64-byte objects */
static unsigned held[VC_MAX_NODES][VC_NUM_CLASSES]; /* objects the test holds */

/* ---- accounting ---- */

static void check_accounts(unsigned node, unsigned c, const char *where)
{
	struct vc_central *ce = vc_central_of(node, c);
	uint64_t span_free = 0;
	for (unsigned l = 0; l < VC_CENTRAL_LANES; l++) {
		for (struct vc_span *sp = ce->nonempty[l]; sp; sp = sp->next) {
			VCT_EXPECT(sp->lane == l && sp->in_list && sp->sizeclass == c &&
				       sp->state == VC_SPAN_SMALL && sp->node == node,
				   "%s: span of lane %u, class %u, state %u on lane %u's list",
				   where, sp->lane, sp->sizeclass, sp->state, l);
			VCT_EXPECT(sp->free_list || sp->carved < sp->capacity,
				   "%s: a span without free objects on lane %u's list", where, l);
			uint32_t listed = 0;
			for (void **o = sp->free_list; o && listed <= sp->capacity; o = o[0])
				listed++;
			VCT_EXPECT(sp->allocated + listed == sp->carved,
				   "%s: span allocated %u + listed %u != carved %u", where,
				   sp->allocated, listed, sp->carved);
			span_free += sp->capacity - sp->allocated;
		}
	}
	VCT_EXPECT(ce->free_objects == ce->transfer_count + span_free,
		   "%s: free_objects %llu, transfer %u + span free %llu", where,
		   (unsigned long long)ce->free_objects, ce->transfer_count,
		   (unsigned long long)span_free);
	VCT_EXPECT(ce->span_out == held[node][c] + ce->transfer_count,
		   "%s: span_out %llu, held %u + transfer %u", where,
		   (unsigned long long)ce->span_out, held[node][c], ce->transfer_count);
}

/* n objects a remove returned, counted as held and handed out as malloc would:
 * the tag cleared. */
static void handed_out(unsigned node, unsigned c, void **out, unsigned n)
{
	held[node][c] += n;
	for (unsigned i = 0; i < n; i++)
		((uint64_t *)out[i])[1] = 0;
}

/* n objects of class c, in as many removes as it takes: a remove carves a limited
 * number of new objects (central.c's carve_limit). */
static unsigned take(unsigned node, unsigned c, unsigned lane, void **out, unsigned n)
{
	unsigned got = 0, k;
	while (got < n && (k = vc_central_remove(node, c, lane, out + got, n - got)) > 0)
		got += k;
	VCT_EXPECT(got == n, "took %u of %u objects of class %u", got, n, c);
	handed_out(node, c, out, got);
	return got;
}

/* Give objects back as a cache would: each tagged free first. */
static void give(unsigned c, void **in, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct vc_span *sp = vc_span_of(vc_segment_of(in[i]), in[i]);
		((uint64_t *)in[i])[1] = vc_tag(in[i], sp);
		held[sp->node][c]--;
	}
	vc_central_insert(c, in, n);
}

static struct vc_span *span_of(void *p)
{
	return vc_span_of(vc_segment_of(p), p);
}

/* ---- what the fake OS sees ---- */

static size_t calls_under_lock;

static bool any_layer_lock_held(void)
{
	for (unsigned n = 0; n < VC_MAX_NODES; n++) {
		if (__atomic_load_n(&vc_pageheaps[n].lock.state, __ATOMIC_RELAXED))
			return true;
		if (!vc_central_nodes[n])
			continue;
		for (unsigned c = 1; c < VC_NUM_CLASSES; c++)
			if (__atomic_load_n(&vc_central_of(n, c)->lock.state, __ATOMIC_RELAXED))
				return true;
	}
	return false;
}

static void before_call(enum fake_call kind, void *p, size_t size)
{
	if (fake_call_releases(kind) && any_layer_lock_held()) {
		calls_under_lock++;
		VCT_EXPECT(0, "call %d on [%p, +%zu) with a central or page-heap lock held",
			   (int)kind, p, size);
	}
}

/* ---- cases ---- */

static void case_carve(void)
{
	const struct vc_class_info *ci = &vc_classes[cls];
	void *out[VC_TRANSFER_CAP];
	unsigned n = ci->batch;
	size_t calls = fake_os.ncalls;
	take(0, cls, 0, out, n);
	struct vc_span *sp = span_of(out[0]);
	char *start = vc_span_start(sp);
	/* Populated: the OS pages up to the one holding the last carved object's tag. */
	size_t tag_end = (size_t)(n - 1) * ci->size + 16;
	size_t want = (tag_end + VC_OS_PAGE - 1) / VC_OS_PAGE * VC_OS_PAGE;
	size_t populates = 0, at_start = 0;
	for (size_t i = calls; i < fake_os.ncalls; i++) {
		populates += fake_os.calls[i].kind == FAKE_POPULATE;
		at_start += fake_os.calls[i].kind == FAKE_POPULATE && fake_os.calls[i].p == start;
	}
	VCT_EXPECT(populates == 1 && at_start == 1 && fake_os_bytes(FAKE_POPULATE, calls) == want,
		   "first carve of %u objects of %u B: %zu populate calls (%zu at the span's "
		   "start), %zu bytes (want one call of %zu at the start)",
		   n, ci->size, populates, at_start, fake_os_bytes(FAKE_POPULATE, calls), want);
	VCT_EXPECT(sp->sizeclass == cls && sp->lane == 0 && sp->carved == n,
		   "span of class %u, lane %u, carved %u", sp->sizeclass, sp->lane, sp->carved);
	for (unsigned i = 0; i < n; i++)
		VCT_EXPECT(out[i] == start + (size_t)i * ci->size, "object %u at offset %td", i,
			   (char *)out[i] - start);
	check_accounts(0, cls, "carve");
	/* The carved limit of each page: the objects carved so far where an object
	 * starts in it, nothing beyond the last carved object's page. */
	struct vc_segment *s = vc_segment_of(sp);
	size_t last_page = sp->first_page + (((size_t)(n - 1) * ci->size) >> VC_PAGE_SHIFT);
	for (size_t pg = sp->first_page; pg <= last_page; pg++)
		VCT_EXPECT(s->entries[pg].objects == n, "page %zu: carved limit %u", pg,
			   s->entries[pg].objects);
	if (last_page + 1 < (size_t)sp->first_page + sp->npages)
		VCT_EXPECT(s->entries[last_page + 1].objects == 0,
			   "page after the carved objects: carved limit %u",
			   s->entries[last_page + 1].objects);
	/* Tagged free when carved: give back (tags rewritten by give), take again. */
	give(cls, out, n);
	check_accounts(0, cls, "carve: given back");
	calls = fake_os.ncalls;
	take(0, cls, 0, out, n);
	VCT_EXPECT(fake_os_bytes(FAKE_POPULATE, calls) == 0,
		   "a refill from the transfer array populated %zu bytes",
		   fake_os_bytes(FAKE_POPULATE, calls));
	give(cls, out, n);
	/* Carving on: every page of the span populated once, in order, none twice. */
	static void *rest[MAX_HELD];
	const unsigned more = ci->objects - n < MAX_HELD ? ci->objects - n : MAX_HELD;
	const size_t done = want;
	calls = fake_os.ncalls;
	take(0, cls, 0, out, n); /* the n given back, from the transfer array */
	take(0, cls, 0, rest, more);
	tag_end = (size_t)(n + more - 1) * ci->size + 16;
	want = (tag_end + VC_OS_PAGE - 1) / VC_OS_PAGE * VC_OS_PAGE;
	VCT_EXPECT(fake_os_bytes(FAKE_POPULATE, calls) == want - done,
		   "carving objects %u..%u: %zu bytes populated, want %zu", n, n + more - 1,
		   fake_os_bytes(FAKE_POPULATE, calls), want - done);
	for (size_t i = calls; i < fake_os.ncalls; i++)
		if (fake_os.calls[i].kind == FAKE_POPULATE)
			VCT_EXPECT((char *)fake_os.calls[i].p >= start + done &&
					   (char *)fake_os.calls[i].p + fake_os.calls[i].size <=
						   start + want,
				   "populated [%p, +%zu) outside the newly carved pages",
				   fake_os.calls[i].p, fake_os.calls[i].size);
	give(cls, rest, more);
	give(cls, out, n);
}

/* A remove carves at most what one OS page holds (at least one object), after the
 * objects that came back, twice that in the next remove if no object came back in
 * between: a class at a new high does not carve, and touch, half a cache's capacity
 * of objects nobody may ask for, and one growing steadily carves more each time
 * (central.c's carve_limit). */
static void case_carve_limit(void)
{
	static void *a[MAX_HELD], *b[MAX_HELD], *d[MAX_HELD];
	const unsigned sizes[] = {16, 4096, 32768};
	for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		const unsigned c = vc_class_of(sizes[i]);
		const uint32_t size = vc_classes[c].size;
		const unsigned page = VC_OS_PAGE / size ? VC_OS_PAGE / size : 1;
		const unsigned ask = page + 40 < MAX_HELD ? page + 40 : MAX_HELD;
		unsigned got = vc_central_remove(0, c, 0, a, ask);
		VCT_EXPECT(got == page, "class of %u B, nothing free: a remove of %u carved %u "
			   "(want %u)", size, ask, got, page);
		handed_out(0, c, a, got);
		/* Some back: a remove takes them all, then carves a page's worth again. */
		const unsigned back = got < 3 ? got : 3;
		give(c, a, back);
		unsigned again = vc_central_remove(0, c, 0, b, ask);
		VCT_EXPECT(again == back + page, "class of %u B, %u free: a remove of %u took %u "
			   "(want %u)", size, back, ask, again, back + page);
		handed_out(0, c, b, again);
		const unsigned ask2 = 2 * page + 40 < MAX_HELD ? 2 * page + 40 : MAX_HELD;
		unsigned next = vc_central_remove(0, c, 0, d, ask2);
		VCT_EXPECT(next == 2 * page, "class of %u B, a second remove in a row carved %u "
			   "(want %u)", size, next, 2 * page);
		handed_out(0, c, d, next);
		check_accounts(0, c, "carve limit");
		give(c, d, next);
		give(c, b, again);
		give(c, a + back, got - back);
		vc_central_flush();
		check_accounts(0, c, "carve limit: all back");
	}
}

static void case_transfer(void)
{
	const struct vc_class_info *ci = &vc_classes[cls];
	struct vc_central *ce = vc_central_of(0, cls);
	vc_central_flush();
	check_accounts(0, cls, "transfer: flushed");
	static void *out[MAX_HELD];
	unsigned cap = ci->transfer_cap, n = cap + ci->batch;
	take(0, cls, 0, out, n);
	give(cls, out, cap);
	VCT_EXPECT(ce->transfer_count == cap, "transfer holds %u, cap %u", ce->transfer_count, cap);
	check_accounts(0, cls, "transfer: full");
	/* Beyond the cap: to the span's free list, in front. */
	give(cls, out + cap, 1);
	struct vc_span *sp = span_of(out[cap]);
	VCT_EXPECT(ce->transfer_count == cap && sp->free_list == out[cap],
		   "the object past the cap went to its span (transfer %u)", ce->transfer_count);
	check_accounts(0, cls, "transfer: overflow");
	/* Taken back last in, first out. */
	void *again[2];
	take(0, cls, 0, again, 2);
	VCT_EXPECT(again[0] == out[cap - 1] && again[1] == out[cap - 2],
		   "taken back %p, %p; last given %p, %p", again[0], again[1], out[cap - 1],
		   out[cap - 2]);
	give(cls, again, 2);
	give(cls, out + cap + 1, n - cap - 1);
	check_accounts(0, cls, "transfer: all back");
	/* Every object back and the transfer array flushed: the spans are the page
	 * heap's again, their pages without a class. */
	const uint64_t free_before = vc_pageheaps[0].free_bytes;
	vc_central_flush();
	check_accounts(0, cls, "transfer: flushed again");
	for (unsigned l = 0; l < VC_CENTRAL_LANES; l++)
		VCT_EXPECT(ce->nonempty[l] == NULL, "lane %u still has a span", l);
	VCT_EXPECT(vc_pageheaps[0].free_bytes > free_before, "page heap free bytes %llu -> %llu",
		   (unsigned long long)free_before, (unsigned long long)vc_pageheaps[0].free_bytes);
	VCT_EXPECT(vc_page_entry_of(vc_segment_of(out[0]), out[0])->sizeclass == 0,
		   "a freed span's page still names class %u",
		   vc_page_entry_of(vc_segment_of(out[0]), out[0])->sizeclass);
	VCT_EXPECT(ce->free_objects == 0 && ce->span_out == 0, "free %llu, out %llu",
		   (unsigned long long)ce->free_objects, (unsigned long long)ce->span_out);
}

static void case_lanes(void)
{
	const struct vc_class_info *ci = &vc_classes[cls];
	struct vc_central *ce = vc_central_of(0, cls);
	void *a[VC_TRANSFER_CAP], *b[VC_TRANSFER_CAP];
	unsigned n = ci->batch;
	take(0, cls, 0, a, n);
	take(0, cls, 1, b, n);
	struct vc_span *sa = span_of(a[0]), *sb = span_of(b[0]);
	VCT_EXPECT(sa != sb && sa->lane == 0 && sb->lane == 1, "lanes 0 and 1 share a span");
	VCT_EXPECT(vc_segment_of(sa) != vc_segment_of(sb) ||
		       (sb->first_page != sa->first_page + sa->npages &&
			sa->first_page != sb->first_page + sb->npages),
		   "the spans of lanes 0 and 1 are neighbours (pages %u and %u)", sa->first_page,
		   sb->first_page);
	check_accounts(0, cls, "lanes");
	/* Lane 0's objects back to its span's free list (the transfer array flushed). */
	give(cls, a, n / 2);
	vc_central_flush();
	const uint32_t carved_a = sa->carved;
	unsigned listed = n / 2;
	/* Lane 2 has no span: it takes lane 0's (or 1's) listed objects first, then
	 * makes its own span, never carving another lane's. */
	void *c[VC_TRANSFER_CAP];
	take(0, cls, 2, c, listed + 4);
	unsigned from_a = 0, from_new = 0;
	for (unsigned i = 0; i < listed + 4; i++) {
		struct vc_span *sp = span_of(c[i]);
		from_a += sp == sa;
		from_new += sp->lane == 2;
	}
	VCT_EXPECT(from_a == listed && from_new == 4,
		   "lane 2 took %u of lane 0's %u listed objects and %u of its own span", from_a,
		   listed, from_new);
	VCT_EXPECT(sa->carved == carved_a, "lane 0's span carved %u -> %u by lane 2", carved_a,
		   sa->carved);
	check_accounts(0, cls, "lanes: recycled");
	/* A span wholly handed out leaves its lane's list; one object back and it is
	 * on the list again. */
	static void *whole[MAX_HELD];
	unsigned cap = ci->objects < MAX_HELD ? ci->objects : MAX_HELD;
	vc_central_flush();
	take(0, cls, 3, whole, cap);
	struct vc_span *sw = span_of(whole[0]);
	VCT_EXPECT(sw->lane == 3 && !sw->in_list && sw->allocated == sw->capacity,
		   "a span wholly handed out: lane %u, listed %u, allocated %u of %u", sw->lane,
		   sw->in_list, sw->allocated, sw->capacity);
	give(cls, whole, 1);
	vc_central_flush();
	VCT_EXPECT(sw->in_list && ce->nonempty[3] == sw, "one object back: span listed %u",
		   sw->in_list);
	check_accounts(0, cls, "lanes: one back");
	give(cls, whole + 1, cap - 1);
	give(cls, a + n / 2, n - n / 2);
	give(cls, b, n);
	give(cls, c, listed + 4);
	vc_central_flush();
	check_accounts(0, cls, "lanes: all back");
	VCT_EXPECT(ce->span_out == 0, "span_out %llu", (unsigned long long)ce->span_out);
}

static void case_tag(void)
{
	const struct vc_class_info *ci = &vc_classes[cls];
	struct vc_central *ce = vc_central_of(0, cls);
	void *out[VC_TRANSFER_CAP];
	unsigned n = ci->batch;
	take(0, cls, 0, out, n);
	/* All but out[0] (which keeps the span in use) back on the span's free list. */
	give(cls, out + 1, n - 1);
	vc_central_flush();
	struct vc_span *sp = span_of(out[0]);
	void **victim = sp->free_list;
	uint64_t tag = ((uint64_t *)victim)[1];
	((uint64_t *)victim)[1] = 0x6b6b6b6b6b6b6b6bull; /* written after its free */
	jmp_buf caught;
	layer_env_report = NULL;
	void *got[1];
	if (setjmp(caught) == 0) {
		layer_env_catch_report = &caught;
		vc_central_remove(0, cls, 0, got, 1);
		layer_env_catch_report = NULL;
	} else {
		vc_lock_init(&ce->lock); /* the report left the central lock held */
	}
	VCT_EXPECT(layer_env_report && strstr(layer_env_report, "use after free"),
		   "a written free object was reported as: %s",
		   layer_env_report ? layer_env_report : "nothing");
	((uint64_t *)victim)[1] = tag;
	take(0, cls, 0, got, 1);
	VCT_EXPECT(got[0] == victim, "the repaired object is taken next");
	give(cls, got, 1);
	give(cls, out, 1);
	vc_central_flush();
	check_accounts(0, cls, "tag");
}

static void case_idle(void)
{
	const struct vc_class_info *ci = &vc_classes[cls];
	unsigned other = vc_class_of(256);
	struct vc_central *ce = vc_central_of(0, cls), *co = vc_central_of(0, other);
	void *a[VC_TRANSFER_CAP], *b[VC_TRANSFER_CAP];
	unsigned na = ci->batch, nb = vc_classes[other].batch;
	take(0, cls, 0, a, na);
	take(0, other, 0, b, nb);
	give(cls, a, na);
	give(other, b, nb);
	vc_central_trim_idle(); /* both were used since the previous trim */
	VCT_EXPECT(ce->transfer_count == na && co->transfer_count == nb,
		   "a trim flushed transfer arrays just used (%u, %u)", ce->transfer_count,
		   co->transfer_count);
	/* `other` is used again, cls is not: 3 taken (the mark falls to nb - 3), 2
	 * given back. */
	void *top[3];
	take(0, other, 0, top, 3);
	VCT_EXPECT(top[0] == b[nb - 1] && top[2] == b[nb - 3], "taken from the top");
	give(other, top, 2);
	vc_central_trim_idle();
	VCT_EXPECT(ce->transfer_count == 0, "the idle transfer array kept %u objects",
		   ce->transfer_count);
	VCT_EXPECT(co->transfer_count == 2 && co->transfer[0] == top[0] &&
		       co->transfer[1] == top[1],
		   "the used transfer array: %u objects, want the 2 given back since the "
		   "previous trim, in their order",
		   co->transfer_count);
	VCT_EXPECT(co->transfer_low == 2, "mark %u after the trim", co->transfer_low);
	check_accounts(0, cls, "idle");
	check_accounts(0, other, "idle: other");
	/* A flush empties the array: the mark falls to 0, and what is given back after
	 * it stays at the next trim. */
	vc_central_flush();
	VCT_EXPECT(co->transfer_low == 0, "mark %u after a flush", co->transfer_low);
	give(other, top + 2, 1);
	vc_central_trim_idle();
	VCT_EXPECT(co->transfer_count == 1 && co->transfer[0] == top[2],
		   "the object given back after the flush: %u in the array", co->transfer_count);
	check_accounts(0, other, "idle: after a flush");
	vc_central_flush();
}

static void case_no_release(void)
{
	const struct vc_class_info *ci = &vc_classes[cls];
	static void *out[MAX_HELD];
	unsigned n = ci->transfer_cap + 4 * ci->objects;
	if (n > MAX_HELD)
		n = MAX_HELD;
	take(0, cls, 0, out, n);
	give(cls, out, n);
	fake_os.now_ms += 3 * DECAY_MS; /* every free page of the heap is overdue */
	size_t mark = fake_os.ncalls;
	vc_central_flush(); /* empties several spans into the page heap */
	VCT_EXPECT(fake_os.ncalls == mark, "a flush made %zu system calls", fake_os.ncalls - mark);
	fake_os.now_ms += DECAY_MS; /* the emptied spans' pages are now overdue too */
	vc_pageheap_maintain(fake_os.now_ms, true);
	VCT_EXPECT(fake_os_bytes(FAKE_RELEASE, mark) >= (size_t)ci->span_pages * VC_PAGE_SIZE,
		   "maintenance released %zu bytes", fake_os_bytes(FAKE_RELEASE, mark));
	VCT_EXPECT(calls_under_lock == 0, "%zu release calls under a lock", calls_under_lock);
	check_accounts(0, cls, "no release");
}

static void case_nodes(void)
{
	/* A second node's central lists and page heap. */
	fake_os.nodes = 2;
	vc_g.nnodes = 2;
	vc_central_init(); /* node 0's lists are made again: they are empty now */
	const struct vc_class_info *ci = &vc_classes[cls];
	void *a[VC_TRANSFER_CAP], *b[VC_TRANSFER_CAP], *mix[2 * VC_TRANSFER_CAP];
	unsigned n = ci->batch;
	take(0, cls, 0, a, n);
	take(1, cls, 0, b, n);
	VCT_EXPECT(vc_segment_of(a[0])->node == 0 && vc_segment_of(b[0])->node == 1,
		   "objects of nodes %u and %u", vc_segment_of(a[0])->node,
		   vc_segment_of(b[0])->node);
	for (unsigned i = 0; i < n; i++) {
		mix[2 * i] = a[i];
		mix[2 * i + 1] = b[i];
	}
	give(cls, mix, 2 * n);
	VCT_EXPECT(vc_central_of(0, cls)->transfer_count == n &&
		       vc_central_of(1, cls)->transfer_count == n,
		   "transfer arrays of nodes 0 and 1 hold %u and %u, want %u each",
		   vc_central_of(0, cls)->transfer_count, vc_central_of(1, cls)->transfer_count, n);
	check_accounts(0, cls, "nodes: 0");
	check_accounts(1, cls, "nodes: 1");
	vc_central_flush();
	check_accounts(0, cls, "nodes: flushed 0");
	check_accounts(1, cls, "nodes: flushed 1");
}

static void case_lanes_remote(void)
{
	vc_g.remote_lanes = true;
	const unsigned c = vc_class_of(48);
	const struct vc_class_info *ci = &vc_classes[c];
	struct vc_central *ce = vc_central_of(0, c);
	/* Lane 0 takes a whole span and gives two objects back to it. */
	static void *a[MAX_HELD];
	const unsigned cap = ci->objects;
	VCT_EXPECT(cap <= MAX_HELD && cap >= 16, "class of 48 B: %u objects a span", cap);
	take(0, c, 0, a, cap);
	struct vc_span *sa = span_of(a[0]);
	give(c, a, 2);
	vc_central_flush();
	VCT_EXPECT(ce->transfer_count == 0 && sa->in_list && sa->allocated == cap - 2,
		   "two objects back on the span: listed %u, allocated %u of %u", sa->in_list,
		   sa->allocated, cap);
	/* Lane 1 has no span: a new one, not lane 0's two free objects. */
	void *b[4];
	take(0, c, 1, b, 4);
	struct vc_span *sb = span_of(b[0]);
	VCT_EXPECT(sb != sa && sb->lane == 1 && span_of(b[3]) == sb && sa->lane == 0 &&
		       sa->allocated == cap - 2,
		   "lane 1 borrowed lane 0's objects (span %s, lane %u; lane 0's span: lane %u, "
		   "allocated %u)",
		   sb == sa ? "lane 0's" : "new", sb->lane, sa->lane, sa->allocated);
	check_accounts(0, c, "remote lanes: no borrowing");
	/* Lane 1's objects wait in the transfer array: lane 0 does not take them, lane 1
	 * does. */
	give(c, b, 4);
	VCT_EXPECT(ce->transfer_count == 4, "lane 1's four objects: transfer %u", ce->transfer_count);
	take(0, c, 0, a, 2);
	VCT_EXPECT(span_of(a[0]) == sa && span_of(a[1]) == sa && ce->transfer_count == 4,
		   "lane 0 took lane 1's objects from the transfer array (%u left)",
		   ce->transfer_count);
	take(0, c, 1, b, 4);
	VCT_EXPECT(ce->transfer_count == 0 && span_of(b[0]) == sb,
		   "lane 1 did not take its objects from the transfer array (%u left)",
		   ce->transfer_count);
	check_accounts(0, c, "remote lanes: transfer");
	/* Lane 0 gives back all but a quarter: lane 2, without spans, adopts its span. */
	unsigned keep = cap / 4;
	give(c, a, cap - keep);
	vc_central_flush();
	void *d[4];
	take(0, c, 2, d, 4);
	VCT_EXPECT(span_of(d[0]) == sa && sa->lane == 2 && ce->nonempty[2] == sa &&
		       ce->nonempty[0] != sa,
		   "lane 2 did not adopt lane 0's span (lane %u, listed on lane 2: %d)", sa->lane,
		   ce->nonempty[2] == sa);
	struct vc_segment *s = vc_segment_of(sa);
	for (unsigned i = 0; i < sa->npages; i++)
		VCT_EXPECT(s->entries[sa->first_page + i].local_lanes == VC_LANE_MASK(1u << 2),
			   "adopted span's page %u: local lanes %#x", i,
			   s->entries[sa->first_page + i].local_lanes);
	check_accounts(0, c, "remote lanes: adopted");
	give(c, a + cap - keep, keep);
	give(c, b, 4);
	give(c, d, 4);
	vc_central_flush();
	check_accounts(0, c, "remote lanes: all back");
	VCT_EXPECT(ce->span_out == 0, "span_out %llu", (unsigned long long)ce->span_out);
}

int main(void)
{
	vc_g.secret = 0x1234567;
	vc_g.nnodes = 1;
	vc_g.opt.numa = 1;
	vc_g.opt.decay_ms = DECAY_MS;
	fake_os.now_ms = 100000;
	fake_os.before_call = before_call;
	vc_sizeclass_init();
	vc_registry_init();
	vc_pageheap_init();
	vc_central_init();
	cls = vc_class_of(64);
	case_carve();
	case_carve_limit();
	case_transfer();
	case_lanes();
	case_tag();
	case_idle();
	case_no_release();
	case_nodes();
	case_lanes_remote(); /* last: it turns the remote path on */
	printf("central_unit: carve, carve limit, transfer, lanes, tag, idle, no release, nodes, "
	       "lanes with a remote path\n");
	return vct_exit();
}
