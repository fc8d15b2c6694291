/* tests/unit/pageheap_unit.c - the page heap (allocator/pageheap.c, segment.c) alone,
 * against the fake OS layer (fake_os.c): no malloc replacement, no threads, no rseq,
 * a clock the test moves. Each case states the rule it checks.
 *
 *   tiling     spans tile a segment's usable pages; freed neighbours merge; a fully
 *              free heap is one FREE span per segment;
 *   decay      a freed span's pages go back to the OS exactly when it has been idle
 *              for the decay time, not before, and a forced decay releases at once;
 *   extend     a LARGE span grows over the FREE pages after it, not over a used span;
 *   lending    on a 2-node heap, a node that faulted in fresh pages has, at the next
 *              maintenance, the same amount of the other node's free pages idle for
 *              decay/32 released, and younger ones left resident; on one node nothing
 *              of the kind happens;
 *   quiet node on 2 nodes, a node whose heap took or gave back no span for decay/32
 *              has its free pages released then; a busy node keeps the decay time;
 *   deferred   neither alloc nor free makes a system call, even with pages to lend
 *              and a decay overdue: vc_pageheap_maintain does that work;
 *   budget     timed releases spend at most 1/32 of the elapsed time in release
 *              calls: after a release that cost 2 s, an overdue span waits until
 *              about 64 s have paid for it; a forced decay does not wait.
 */
#include "fake_os.h"
#include "internal.h"
#include "vctest.h"

#include <stdio.h>
#include <string.h>

#define DECAY_MS 1000u

/* A fresh heap: every node's state zeroed, the clock at `now`. */
static void fresh_heap(unsigned nodes, uint64_t now)
{
	for (unsigned n = 0; n < VC_MAX_NODES; n++)
		for (struct vc_segment *s = vc_pageheaps[n].segments; s;) {
			struct vc_segment *next = s->next;
			vc_segment_unmap(s);
			s = next;
		}
	memset(vc_pageheaps, 0, sizeof(vc_pageheaps));
	memset(&fake_os, 0, sizeof(fake_os));
	fake_os.nodes = nodes;
	fake_os.now_ms = now;
	vc_g.nnodes = nodes;
	vc_g.opt.numa = 1;
	vc_g.opt.decay_ms = DECAY_MS;
	vc_pageheap_init();
}

static size_t usable_pages(void)
{
	return VC_PAGES_PER_SEGMENT - VC_SEGMENT_HEADER_PAGES;
}

static struct vc_span *large(unsigned node, size_t npages)
{
	struct vc_span *sp = vc_pageheap_alloc(node, npages, VC_SPAN_LARGE, -1);
	VCT_EXPECT(sp != NULL, "alloc of %zu pages on node %u", npages, node);
	/* What a slow path does next, with no lock held: the deferred work. */
	vc_pageheap_maintain(fake_os.now_ms, false);
	if (sp) {
		VCT_EXPECT(sp->npages == npages, "span of %u pages for %zu", sp->npages, npages);
		VCT_EXPECT(sp->state == VC_SPAN_LARGE, "state %u", sp->state);
		sp->large_size = npages * VC_PAGE_SIZE;
		memset(vc_span_start(sp), 0x5a, npages * VC_PAGE_SIZE); /* resident now */
	}
	return sp;
}

/* The segment's spans tile its usable pages; returns how many FREE spans it has. */
static unsigned check_tiling(struct vc_segment *s)
{
	unsigned pg = (unsigned)VC_SEGMENT_HEADER_PAGES, nfree = 0;
	while (pg < VC_PAGES_PER_SEGMENT) {
		struct vc_span *t = s->pagemap[pg];
		VCT_EXPECT(t && t->first_page == pg && t->npages > 0, "page %u is not a span start",
			   pg);
		if (!t || t->npages == 0)
			return nfree;
		VCT_EXPECT(t->state != VC_SPAN_FREE || pg == VC_SEGMENT_HEADER_PAGES ||
			       s->pagemap[pg - 1]->state != VC_SPAN_FREE,
			   "two FREE spans are adjacent at page %u", pg);
		nfree += t->state == VC_SPAN_FREE;
		pg += t->npages;
	}
	VCT_EXPECT(pg == VC_PAGES_PER_SEGMENT, "spans end at page %u", pg);
	return nfree;
}

static void case_tiling(void)
{
	fresh_heap(1, 1000);
	struct vc_span *a = large(0, 4), *b = large(0, 8), *c = large(0, 4);
	if (!a || !b || !c)
		return;
	struct vc_segment *s = vc_segment_of(a);
	VCT_EXPECT(vc_segment_of(b) == s && vc_segment_of(c) == s, "one segment for three spans");
	check_tiling(s);
	vc_pageheap_free(b);
	vc_pageheap_free(a);
	struct vc_span *merged = s->pagemap[a->first_page];
	VCT_EXPECT(merged->state == VC_SPAN_FREE && merged->npages >= 12,
		   "a and b merged into a FREE span of %u pages", merged->npages);
	check_tiling(s);
	vc_pageheap_free(c);
	VCT_EXPECT(check_tiling(s) == 1, "a fully free segment is one FREE span");
	VCT_EXPECT(vc_pageheaps[0].free_bytes == usable_pages() * VC_PAGE_SIZE, "free bytes %llu",
		   (unsigned long long)vc_pageheaps[0].free_bytes);
	VCT_EXPECT(s->used_pages == 0, "used pages %u", s->used_pages);
}

static void case_decay(void)
{
	fresh_heap(1, 5000);
	struct vc_span *a = large(0, 16), *keep = large(0, 2);
	if (!a || !keep)
		return;
	char *start = vc_span_start(a);
	vc_pageheap_free(a);
	const uint64_t resident = vc_pageheaps[0].free_bytes - vc_pageheaps[0].released_bytes;
	VCT_EXPECT(resident >= 16 * VC_PAGE_SIZE, "16 resident free pages, %llu bytes",
		   (unsigned long long)resident);
	size_t mark = fake_os.ncalls;
	fake_os.now_ms = 5000 + DECAY_MS - 1;
	vc_pageheap_maybe_decay(fake_os.now_ms, true);
	VCT_EXPECT(fake_os_bytes(FAKE_RELEASE, mark) == 0,
		   "released %zu bytes before the decay time", fake_os_bytes(FAKE_RELEASE, mark));
	fake_os.now_ms = 5000 + DECAY_MS;
	vc_pageheap_maybe_decay(fake_os.now_ms, true);
	bool covered = false;
	for (size_t i = mark; i < fake_os.ncalls; i++)
		if (fake_os.calls[i].kind == FAKE_RELEASE && (char *)fake_os.calls[i].p <= start &&
		    (char *)fake_os.calls[i].p + fake_os.calls[i].size >= start + 16 * VC_PAGE_SIZE)
			covered = true;
	VCT_EXPECT(covered, "the freed span's pages were released at the decay time");
	VCT_EXPECT(vc_pageheaps[0].free_bytes == vc_pageheaps[0].released_bytes,
		   "every free page released: free %llu released %llu",
		   (unsigned long long)vc_pageheaps[0].free_bytes,
		   (unsigned long long)vc_pageheaps[0].released_bytes);

	/* Forced: at once, whatever the age. */
	struct vc_span *b = large(0, 8);
	vc_pageheap_free(b);
	mark = fake_os.ncalls;
	vc_pageheap_decay(0, true);
	VCT_EXPECT(fake_os_bytes(FAKE_RELEASE, mark) >= 8 * VC_PAGE_SIZE,
		   "forced decay released %zu", fake_os_bytes(FAKE_RELEASE, mark));
	vc_pageheap_free(keep);
}

static void case_extend(void)
{
	fresh_heap(1, 1000);
	struct vc_span *a = large(0, 4), *b = large(0, 4);
	if (!a || !b)
		return;
	if (b->first_page != a->first_page + 4) {
		VCT_EXPECT(0, "b does not follow a (pages %u, %u): cannot test growth",
			   a->first_page, b->first_page);
		return;
	}
	VCT_EXPECT(!vc_pageheap_extend(a, 6), "a grew over the used span b");
	VCT_EXPECT(a->npages == 4, "a unchanged: %u pages", a->npages);
	vc_pageheap_free(b);
	VCT_EXPECT(vc_pageheap_extend(a, 6), "a did not grow over the free pages after it");
	VCT_EXPECT(a->npages == 6, "a has %u pages", a->npages);
	struct vc_segment *s = vc_segment_of(a);
	VCT_EXPECT(s->pagemap[a->first_page + 5] == a, "the page map covers a's new pages");
	check_tiling(s);
	vc_pageheap_free(a);
}

static void case_lending(void)
{
	fresh_heap(2, 10000);
	/* Node 1 uses 64 pages and frees them at t = 10000. */
	struct vc_span *x = large(1, 64);
	if (!x)
		return;
	vc_pageheap_free(x);
	const uint64_t min_age = DECAY_MS / 32;

	/* Too young: node 0 faults in fresh pages without touching node 1's. */
	fake_os.now_ms = 10000 + min_age - 1;
	size_t mark = fake_os.ncalls;
	struct vc_span *a = large(0, 16);
	VCT_EXPECT(fake_os_bytes(FAKE_RELEASE, mark) == 0,
		   "node 1's free pages, idle %llu ms, were released",
		   (unsigned long long)(min_age - 1));

	/* Old enough: the next fresh pages of node 0 are paid for by node 1's. */
	fake_os.now_ms = 10000 + min_age;
	mark = fake_os.ncalls;
	uint64_t node1_resident = vc_pageheaps[1].free_bytes - vc_pageheaps[1].released_bytes;
	struct vc_span *b = large(0, 16);
	size_t released = fake_os_bytes(FAKE_RELEASE, mark);
	VCT_EXPECT(released >= 16 * VC_PAGE_SIZE, "released %zu bytes for 16 fresh pages",
		   released);
	uint64_t node1_after = vc_pageheaps[1].free_bytes - vc_pageheaps[1].released_bytes;
	VCT_EXPECT(node1_after + 16 * VC_PAGE_SIZE <= node1_resident,
		   "node 1's resident free bytes %llu -> %llu", (unsigned long long)node1_resident,
		   (unsigned long long)node1_after);
	for (size_t i = mark; i < fake_os.ncalls; i++)
		if (fake_os.calls[i].kind == FAKE_RELEASE)
			VCT_EXPECT(vc_segment_of(fake_os.calls[i].p)->node == 1,
				   "a release on node %u", vc_segment_of(fake_os.calls[i].p)->node);

	/* Reusing resident pages of its own faults nothing in: nothing is lent. */
	vc_pageheap_free(b);
	fake_os.now_ms += 2 * min_age;
	mark = fake_os.ncalls;
	struct vc_span *c = large(0, 16);
	VCT_EXPECT(fake_os_bytes(FAKE_RELEASE, mark) == 0, "reuse of resident pages released %zu",
		   fake_os_bytes(FAKE_RELEASE, mark));
	if (a)
		vc_pageheap_free(a);
	if (c)
		vc_pageheap_free(c);

	/* One node: never. */
	fresh_heap(1, 10000);
	struct vc_span *y = large(0, 64);
	if (!y)
		return;
	vc_pageheap_free(y);
	fake_os.now_ms = 10000 + DECAY_MS / 2;
	mark = fake_os.ncalls;
	struct vc_span *z = large(0, 200); /* more than the free resident 64 */
	VCT_EXPECT(fake_os_bytes(FAKE_RELEASE, mark) == 0, "one node released %zu bytes",
		   fake_os_bytes(FAKE_RELEASE, mark));
	if (z)
		vc_pageheap_free(z);
}

static void case_quiet_node(void)
{
	fresh_heap(2, 30000);
	const uint64_t quiet = DECAY_MS / 32;
	struct vc_span *x = large(1, 32), *a = large(0, 8), *b = large(0, 8);
	if (!x || !a || !b)
		return;
	vc_pageheap_free(x); /* node 1's last use, at 30000 */
	vc_pageheap_free(b); /* node 0 has free resident pages too */
	fake_os.now_ms = 30000 + quiet - 1;
	size_t mark = fake_os.ncalls;
	vc_pageheap_maintain(fake_os.now_ms, false);
	VCT_EXPECT(fake_os_bytes(FAKE_RELEASE, mark) == 0,
		   "released %zu bytes before a node is quiet", fake_os_bytes(FAKE_RELEASE, mark));
	/* Node 0 keeps working; node 1 has been quiet for decay/32. */
	fake_os.now_ms = 30000 + quiet;
	struct vc_span *c = vc_pageheap_alloc(0, 2, VC_SPAN_LARGE, -1);
	mark = fake_os.ncalls;
	vc_pageheap_maintain(fake_os.now_ms, false);
	size_t on_node1 = 0, on_node0 = 0;
	for (size_t i = mark; i < fake_os.ncalls; i++)
		if (fake_os.calls[i].kind == FAKE_RELEASE)
			*(vc_segment_of(fake_os.calls[i].p)->node ? &on_node1 : &on_node0) +=
			    fake_os.calls[i].size;
	VCT_EXPECT(on_node1 >= 32 * VC_PAGE_SIZE, "quiet node 1: %zu bytes released", on_node1);
	VCT_EXPECT(on_node0 == 0, "busy node 0: %zu bytes released before the decay time",
		   on_node0);
	if (c)
		vc_pageheap_free(c);
	vc_pageheap_free(a);

	/* One node is never "quiet": only the decay time applies. */
	fresh_heap(1, 30000);
	struct vc_span *y = large(0, 16), *z = large(0, 2);
	if (!y || !z)
		return;
	vc_pageheap_free(y);
	fake_os.now_ms = 30000 + DECAY_MS / 2;
	mark = fake_os.ncalls;
	vc_pageheap_maintain(fake_os.now_ms, false);
	VCT_EXPECT(fake_os_bytes(FAKE_RELEASE, mark) == 0, "one node released %zu bytes early",
		   fake_os_bytes(FAKE_RELEASE, mark));
	vc_pageheap_free(z);
}

static void case_deferred(void)
{
	fresh_heap(2, 20000);
	struct vc_span *x = large(1, 32), *keep = large(0, 2);
	if (!x || !keep)
		return;
	vc_pageheap_free(x);
	fake_os.now_ms = 20000 + 2 * DECAY_MS; /* x's pages overdue for the decay */
	size_t mark = fake_os.ncalls;
	struct vc_span *a = vc_pageheap_alloc(0, 16, VC_SPAN_LARGE, -1); /* fresh pages */
	struct vc_span *b = vc_pageheap_alloc(0, 4, VC_SPAN_LARGE, -1);
	if (!a || !b)
		return;
	vc_pageheap_free(b); /* a free when the decay is due */
	VCT_EXPECT(fake_os.ncalls == mark, "alloc and free made %zu system calls",
		   fake_os.ncalls - mark);
	vc_pageheap_maintain(fake_os.now_ms, false);
	VCT_EXPECT(fake_os_bytes(FAKE_RELEASE, mark) >= 32 * VC_PAGE_SIZE,
		   "maintenance released %zu bytes", fake_os_bytes(FAKE_RELEASE, mark));
	vc_pageheap_free(a);
	vc_pageheap_free(keep);
}

static void case_budget(void)
{
	/* Late on the clock, after the other cases: whatever they left of the budget's
	 * state is paid off by now. */
	fresh_heap(1, 1000000);
	struct vc_span *a = large(0, 16), *b = large(0, 8), *keep = large(0, 2);
	if (!a || !b || !keep)
		return;
	fake_os.release_cost_ns = 2000000000ull; /* 2 s per release */
	vc_pageheap_free(a);
	fake_os.now_ms += DECAY_MS;
	size_t mark = fake_os.ncalls;
	vc_pageheap_maintain(fake_os.now_ms, true);
	VCT_EXPECT(fake_os_bytes(FAKE_RELEASE, mark) >= 16 * VC_PAGE_SIZE,
		   "the first overdue span was released: %zu bytes", fake_os_bytes(FAKE_RELEASE, mark));
	/* Releases whose pages nobody took back cost nothing: the next overdue span goes
	 * at once, 2 s of calls or not. */
	vc_pageheap_free(b);
	fake_os.now_ms += DECAY_MS;
	mark = fake_os.ncalls;
	vc_pageheap_maintain(fake_os.now_ms, true);
	VCT_EXPECT(fake_os_bytes(FAKE_RELEASE, mark) >= 8 * VC_PAGE_SIZE,
		   "a release with nothing faulted in again was deferred: %zu bytes released",
		   fake_os_bytes(FAKE_RELEASE, mark));
	/* a's and b's pages, merged, taken again: 24 returned pages faulted in, charged
	 * at what the latest release cost per byte (b's: 2 s for 8 pages), 6 s. */
	struct vc_span *c = large(0, 24);
	if (!c)
		return;
	VCT_EXPECT(c == a, "the 24 released pages were taken again (span at page %u, a at %u)",
		   c->first_page, a->first_page);
	vc_pageheap_free(c);
	fake_os.now_ms += DECAY_MS + 30000; /* overdue, but 6 s are owed for 31 s */
	mark = fake_os.ncalls;
	vc_pageheap_maintain(fake_os.now_ms, true);
	vc_pageheap_maintain(fake_os.now_ms, false);
	VCT_EXPECT(fake_os.ncalls == mark, "%zu calls while 6 s of faulted-in releases were owed",
		   fake_os.ncalls - mark);
	fake_os.now_ms += 170000; /* 201 s since the take: 6.3 s paid off */
	vc_pageheap_maintain(fake_os.now_ms, true);
	VCT_EXPECT(fake_os_bytes(FAKE_RELEASE, mark) >= 24 * VC_PAGE_SIZE,
		   "released %zu bytes once the debt was paid", fake_os_bytes(FAKE_RELEASE, mark));
	/* Owed again after a second take (2 s: 24 pages at the cost per byte of their
	 * release): an overdue span waits for the timed passes, a forced decay
	 * releases all the same. */
	c = large(0, 24);
	if (!c)
		return;
	vc_pageheap_free(c);
	fake_os.now_ms += DECAY_MS;
	mark = fake_os.ncalls;
	vc_pageheap_maintain(fake_os.now_ms, true);
	VCT_EXPECT(fake_os.ncalls == mark, "%zu timed calls in debt", fake_os.ncalls - mark);
	vc_pageheap_decay(0, true);
	VCT_EXPECT(fake_os_bytes(FAKE_RELEASE, mark) >= 24 * VC_PAGE_SIZE,
		   "a forced decay in debt released %zu bytes", fake_os_bytes(FAKE_RELEASE, mark));
	vc_pageheap_free(keep);
	/* Debt paid (2 s at 1/32), the recent record forgotten. 128 pages released; then
	 * a quarter of the heap's pages taken back, which holds some of them (the share
	 * of a free span's returned pages a take gets is proportional): less than half of
	 * what was released lately came back, so it costs nothing, and the next overdue
	 * span is released at once (a program going on with a light load after a
	 * burst). */
	fake_os.now_ms += 400000;
	struct vc_span *d = large(0, 64), *e = large(0, 64);
	if (!d || !e)
		return;
	vc_pageheap_free(d);
	vc_pageheap_free(e);
	fake_os.now_ms += DECAY_MS;
	mark = fake_os.ncalls;
	vc_pageheap_maintain(fake_os.now_ms, true);
	VCT_EXPECT(fake_os_bytes(FAKE_RELEASE, mark) >= 128 * VC_PAGE_SIZE, "released %zu bytes",
		   fake_os_bytes(FAKE_RELEASE, mark));
	struct vc_span *f = large(0, VC_PAGES_PER_SEGMENT / 4);
	if (!f)
		return;
	fake_os.now_ms += 1;
	vc_pageheap_maintain(fake_os.now_ms, false); /* the budget sees the take */
	vc_pageheap_free(f);
	fake_os.now_ms += DECAY_MS;
	mark = fake_os.ncalls;
	vc_pageheap_maintain(fake_os.now_ms, true);
	VCT_EXPECT(fake_os_bytes(FAKE_RELEASE, mark) >= (VC_PAGES_PER_SEGMENT / 4) * VC_PAGE_SIZE,
		   "a take of a small share of the released pages held back the next release "
		   "(%zu bytes released)", fake_os_bytes(FAKE_RELEASE, mark));
	fake_os.release_cost_ns = 0;
}

int main(void)
{
	vc_g.secret = 0x1234567;
	vc_sizeclass_init();
	vc_registry_init();
	case_tiling();
	case_decay();
	case_extend();
	case_lending();
	case_deferred();
	case_quiet_node();
	case_budget();
	printf("pageheap_unit: tiling, decay, extend, lending, deferred, quiet node, budget\n");
	return vct_exit();
}
