/* allocator/central.c - the central layer of each (node, size class).
 *
 * A transfer array of free objects sits in front of the SMALL spans that still
 * have free objects (the "nonempty" list). vCPU caches take and give batches here.
 * All of it is under the lock of its struct vc_central; the page heap lock nests inside.
 *
 * Objects on a span's free list are linked through word 0 and carry their free tag
 * in word 1 (see types.h). Uncarved objects (never handed out since the span was
 * made) are carved lazily so that untouched pages of a span stay untouched; a
 * carved object is tagged free at once (it may sit in a cache before any malloc
 * returns it), and the page entries' carved limits (`objects`) cover it before it
 * leaves the central lock, so that free() of an uncarved object is reported as
 * invalid. An object taken off a span's free list must still hold its tag: a write
 * to a freed block there is reported.
 *
 * Lanes keep the objects of different vCPUs apart. The nonempty spans are on
 * VC_CENTRAL_LANES lists; a vCPU takes from the spans of lane (id % lanes) and a
 * new span joins the lane of the vCPU that asked for it. Two vCPUs refilling the
 * same class at once would otherwise carve alternate batches of one span, and
 * their objects would share cache lines and adjacent lines: measured on this
 * project's 2-CPU machine, two threads each cycling 1024 blocks of 64 B ran 3-5x
 * slower with interleaved blocks than with blocks of separate spans. A lane
 * whose spans are used up takes free objects of another lane's span before making
 * a new span, so that lanes cost at most one partly carved span each (untouched
 * pages of it are never touched); cost follows the ids in use. In the classes
 * with a remote path (remote_free.c) a lane is handed only objects its own frees
 * keep: it adopts another lane's span rather than borrowing from it
 * (recycled_span), and takes from the transfer array only such objects, from the
 * top down to the first other one. Otherwise a lane that held the other lane's
 * objects (two threads that shared one CPU, hence one mm_cid, for a while, then
 * split) freed them down the remote path, got them back through the transfer
 * array or by borrowing, and so on for the rest of the run: with two threads each
 * cycling 1024 blocks of 16 B, 1.6 M remote frees in 32 M operations, a batch per
 * round, 2-4 times slower. Spans of different lanes must not be neighbours in
 * memory either: the page heap places a lane's new span after its previous one
 * (pageheap.c); with one-page spans alternating between the two threads above, the
 * same test still ran 2-3x slower, and 1.0x with one unused page between them.
 */
#include "internal.h"
#include "span_list.h"

#include <string.h>

struct vc_central *vc_central_nodes[VC_MAX_NODES];

/* One mapping per node: the class headers first (a few pages, written here, so that
 * no later access finds them unmapped: locks, counters and the idle scan's reads all
 * land on pages already ours), then the transfer arrays, whose pages are first
 * touched by an insert's write. A read before the first write would map the shared
 * zero page, and the write after it would copy the page and flush the TLB of every
 * CPU the process ran on. The mapping is bound to its node and kept out of
 * transparent huge pages (a huge page would make all of it resident at once). */
void vc_central_init(void)
{
	size_t head = vc_page_round(sizeof(struct vc_central) * VC_NUM_CLASSES);
	size_t size = vc_page_round(head + sizeof(void *) * VC_TRANSFER_CAP * VC_NUM_CLASSES);
	for (unsigned node = 0; node < vc_g.nnodes; node++) {
		char *block = vc_os_reserve(size);
		VC_ASSERT_ALWAYS(block != NULL);
		vc_os_no_huge_pages(block, size);
		if (vc_g.nnodes > 1 && vc_g.opt.numa)
			vc_os_bind_node(block, size, node);
		struct vc_central *ce = (struct vc_central *)block;
		void **transfer = (void **)(block + head);
		for (unsigned c = 0; c < VC_NUM_CLASSES; c++) {
			vc_lock_init(&ce[c].lock);
			ce[c].transfer = transfer + (size_t)c * VC_TRANSFER_CAP;
		}
		vc_central_nodes[node] = ce;
	}
}

static struct vc_span *new_span(unsigned node, unsigned c, unsigned lane)
{
	const struct vc_class_info *ci = &vc_classes[c];
	struct vc_span *sp = vc_pageheap_alloc(node, ci->span_pages, VC_SPAN_SMALL, (int)lane);
	if (!sp)
		return NULL;
	sp->sizeclass = (uint8_t)c;
	sp->lane = (uint8_t)lane;
	sp->capacity = ci->objects;
	sp->carved = 0;
	sp->allocated = 0;
	sp->free_list = NULL;
	vc_span_publish(sp);
	return sp;
}

/* Carve up to n objects of sp (class size `size`) into out[]: tag each as free, then
 * raise the carved limit of the pages where they start. Returns how many. */
static unsigned carve(struct vc_span *sp, uint32_t size, void **out, unsigned n)
{
	const uint32_t first = sp->carved;
	uint32_t end = sp->capacity - first < n ? sp->capacity : first + n;
	char *base = vc_span_start(sp);
	/* Populate the pages up to the one holding the last tag first, instead of a
	 * page fault on each (11-13 us apiece on the machine of bench/README.md). For
	 * classes of at most an OS page only: every page of their spans holds an
	 * object start, so the carve touches those pages anyway and nothing becomes
	 * resident earlier than it would have. Larger objects' middle pages are the
	 * program's to touch, or not. Populating ahead of the carve, a whole span of
	 * the smallest classes at once, cost `roam` 0.5 MiB of peak RSS (spans that
	 * are never carved to their end). */
	if (size <= VC_OS_PAGE && end > first)
		vc_span_populate(sp, 0, vc_page_round((size_t)(end - 1) * size + 16) / VC_OS_PAGE);
	for (uint32_t i = first; i < end; i++) {
		uint64_t *obj = (uint64_t *)(base + (size_t)i * size);
		obj[1] = vc_tag(obj, sp);
		out[i - first] = obj;
	}
	if (end == first)
		return 0;
	struct vc_segment *s = vc_segment_of(sp);
	size_t lo = sp->first_page + (((size_t)first * size) >> VC_PAGE_SHIFT);
	size_t hi = sp->first_page + (((size_t)(end - 1) * size) >> VC_PAGE_SHIFT);
	for (size_t pg = lo; pg <= hi; pg++)
		__atomic_store_n(&s->entries[pg].objects, end, __ATOMIC_RELAXED);
	sp->carved = end;
	sp->allocated += end - first;
	return end - first;
}

/* The next object of sp's free list, checked for its free tag (word 0, the link,
 * shares its cache line). */
static void *pop_free_list(struct vc_span *sp)
{
	void **obj = sp->free_list;
	if (VC_UNLIKELY(((uint64_t *)obj)[1] != vc_tag(obj, sp)))
		vc_report("use after free (a freed block was written: its free tag is gone)",
			  "malloc", obj);
	sp->free_list = obj[0];
	sp->allocated++;
	return obj;
}

/* sp (on its lane's nonempty list) becomes lane `lane`'s: its free objects and its
 * uncarved rest go to that lane from now on, and frees of its objects still out
 * from their old lane take the remote path (the page entries' local lanes change
 * with it), which brings them back here, to the new lane. */
static void adopt(struct vc_central *ce, struct vc_span *sp, unsigned lane)
{
	vc_span_list_remove(&ce->nonempty[sp->lane], sp);
	sp->lane = (uint8_t)lane;
	vc_span_list_push(&ce->nonempty[lane], sp);
	struct vc_segment *s = vc_segment_of(sp);
	const uint32_t mask = vc_local_lanes(lane, vc_classes[sp->sizeclass].size);
	for (unsigned i = 0; i < sp->npages; i++)
		__atomic_store_n(&s->entries[sp->first_page + i].local_lanes, mask,
				 __ATOMIC_RELAXED);
}

/* Before it makes a new span, a lane whose spans are used up takes from a span of
 * another lane with objects on its free list (objects that were handed out and came
 * back), the first such span found at the head of a lane's list. In classes without
 * a remote path it takes the span's free objects (uncarved ones stay the other
 * lane's). In classes with one (remote_free.c) it adopts the span, and only a
 * span at most a quarter of whose objects are out: lending objects there started
 * a cycle (the borrowing lane freed every one of them down the remote path, they
 * went home, it borrowed them again), and so did adopting a span whose objects
 * were out in both lanes, as after two threads shared one CPU, hence one id, for
 * a while (the span's owner changed back and forth with every refill). A new span
 * instead lets the remote path sort such objects out: each goes home once.
 * tightN-16 ran 2-4 times slower while either cycle lasted. */
static struct vc_span *recycled_span(struct vc_central *ce, unsigned c, unsigned lane)
{
	const bool remote = vc_class_has_remote_path(c);
	for (unsigned k = 1; k < VC_CENTRAL_LANES; k++) {
		struct vc_span *sp = ce->nonempty[(lane + k) % VC_CENTRAL_LANES];
		if (!sp || !sp->free_list)
			continue;
		if (!remote)
			return sp;
		if (sp->allocated <= sp->capacity / 4) {
			adopt(ce, sp, lane);
			return sp;
		}
	}
	return NULL;
}

/* Objects carved by one take, at most: what one OS page holds (at least one),
 * doubled for each take in a row that carved with no object coming back to the
 * class in between (ce->carve_streak), up to VC_CARVE_STREAK_MAX doublings. A take
 * asks for what the cache may keep (half its capacity, vcpu_cache.c's move_count),
 * objects that had been handed out and came back go first, and carving means the
 * class is at a new high of objects out: the carved objects are touched (their
 * free tags), asked for or not. Carving whole moves, each class's spans held up to
 * half a cache's capacity above the class's own highest count of live objects: a
 * wide mix of sizes (bench/footprint's `few --threads 1`, whose classes' highs sum
 * to 4.1 MiB) had 1.0 MiB more carved than those highs, and its peak RSS was 7.7
 * MiB; 7.0 with one page per take, 7.3 with the doublings. Without them a class
 * growing steadily made a central operation per page's worth: a wandering set of
 * 12 KiB blocks (tests/stress/wander_moves.c), whose walk reaches new highs now
 * and then, made 521 central operations where half-capacity moves had made 104;
 * 152 with up to three doublings. */
#define VC_CARVE_STREAK_MAX 3
static unsigned carve_limit(const struct vc_central *ce, uint32_t size)
{
	unsigned page = VC_OS_PAGE / size ? (unsigned)(VC_OS_PAGE / size) : 1;
	return page << (ce->carve_streak < VC_CARVE_STREAK_MAX ? ce->carve_streak
							     : VC_CARVE_STREAK_MAX);
}

/* Take up to n objects out of the spans of `lane`, making new spans only when
 * `grow`, and carving at most carve_limit's. Central lock held. */
static unsigned take_from_spans(struct vc_central *ce, unsigned node, unsigned c,
				unsigned lane, void **out, unsigned n, bool grow)
{
	const uint32_t size = vc_classes[c].size;
	const unsigned limit = carve_limit(ce, size);
	unsigned got = 0, carve_left = limit;
	while (got < n) {
		struct vc_span *sp = ce->nonempty[lane];
		if (!sp)
			sp = recycled_span(ce, c, lane);
		if (!sp) {
			sp = grow ? new_span(node, c, lane) : NULL;
			if (!sp)
				break;
			vc_span_list_push(&ce->nonempty[lane], sp);
			LOCKED_ADD(ce->free_objects, sp->capacity);
		}
		while (got < n && sp->free_list)
			out[got++] = pop_free_list(sp);
		/* Another lane's uncarved objects stay its own (a new span instead). */
		if (sp->lane == lane) {
			unsigned k = carve(sp, size, out + got,
					   n - got < carve_left ? n - got : carve_left);
			got += k;
			carve_left -= k;
		}
		if (!sp->free_list && sp->carved == sp->capacity)
			vc_span_list_remove(&ce->nonempty[sp->lane], sp);
		if (carve_left == 0)
			break;
	}
	if (carve_left < limit && ce->carve_streak < VC_CARVE_STREAK_MAX)
		ce->carve_streak++;
	LOCKED_ADD(ce->free_objects, -(uint64_t)got);
	LOCKED_ADD(ce->span_out, got);
	return got;
}

static unsigned remove_objects(unsigned node, unsigned c, unsigned lane, void **out,
			       unsigned n, bool grow)
{
	struct vc_central *ce = vc_central_of(node, c);
	lane %= VC_CENTRAL_LANES;
	vc_lock(&ce->lock);
	ce->ops++;
	unsigned got = 0;
	/* In a class with a remote path, only objects a free from this lane would keep
	 * (their page entry's local lanes), from the top down to the first other one. */
	const uint8_t bit = vc_class_has_remote_path(c) ? (uint8_t)(1u << lane) : 0;
	while (got < n && ce->transfer_count > 0) {
		void *p = ce->transfer[ce->transfer_count - 1];
		if (bit && !(vc_page_entry_of(vc_segment_of(p), p)->local_lanes & bit))
			break;
		LOCKED_ADD(ce->transfer_count, -1u);
		out[got++] = p;
		LOCKED_ADD(ce->free_objects, -(uint64_t)1);
	}
	if (ce->transfer_count < ce->transfer_low)
		ce->transfer_low = ce->transfer_count;
	if (got < n)
		got += take_from_spans(ce, node, c, lane, out + got, n - got, grow);
	vc_unlock(&ce->lock);
	return got;
}

unsigned vc_central_remove(unsigned node, unsigned c, unsigned lane, void **out, unsigned n)
{
	return remove_objects(node, c, lane, out, n, true);
}

unsigned vc_central_remove_free(unsigned node, unsigned c, unsigned lane, void **out,
				unsigned n)
{
	/* An unlocked look first: a caller tries every node in turn. */
	struct vc_central *ce = vc_central_of(node, c);
	if (__atomic_load_n(&ce->free_objects, __ATOMIC_RELAXED) == 0)
		return 0;
	return remove_objects(node, c, lane, out, n, false);
}

/* Return one object to its span. Central lock held. */
static void give_to_span(struct vc_central *ce, struct vc_span *sp, void *p)
{
	VC_ASSERT(sp->state == VC_SPAN_SMALL && sp->allocated > 0);
	void **obj = p;
	obj[0] = sp->free_list;
	sp->free_list = obj;
	sp->allocated--;
	LOCKED_ADD(ce->free_objects, 1);
	LOCKED_ADD(ce->span_out, -(uint64_t)1);
	if (!sp->in_list)
		vc_span_list_push(&ce->nonempty[sp->lane], sp);
	if (sp->allocated == 0) {
		vc_span_list_remove(&ce->nonempty[sp->lane], sp);
		LOCKED_ADD(ce->free_objects, -(uint64_t)sp->capacity);
		vc_pageheap_free(sp);
	}
}

/* Node of a free small object: its page entry's. */
static unsigned object_node(const void *p)
{
	return vc_page_entry_of(vc_segment_of(p), p)->node;
}

void vc_central_insert(unsigned c, void *const *in, unsigned n)
{
	/* Without per-node arenas every object is of node 0: nothing of an object is
	 * read until the transfer array is full (then its span is). */
	const bool one_node = vc_g.nnodes == 1 || !vc_g.opt.numa;
	const uint32_t cap = vc_classes[c].transfer_cap;
	unsigned i = 0;
	while (i < n) {
		/* Objects of one node at a time: a run of objects from the same node. */
		unsigned node = one_node ? 0 : object_node(in[i]);
		struct vc_central *ce = vc_central_of(node, c);
		vc_lock(&ce->lock);
		ce->ops++;
		ce->carve_streak = 0;
		for (; i < n && (one_node || object_node(in[i]) == node); i++) {
			if (ce->transfer_count < cap) {
				ce->transfer[ce->transfer_count] = in[i];
				LOCKED_ADD(ce->transfer_count, 1);
				LOCKED_ADD(ce->free_objects, 1);
			} else {
				give_to_span(ce, vc_span_of(vc_segment_of(in[i]), in[i]), in[i]);
			}
		}
		vc_unlock(&ce->lock);
	}
}

/* Transfer array back to spans (whose emptied spans go to the page heap). Lock held. */
static void flush_transfer(struct vc_central *ce)
{
	while (ce->transfer_count > 0) {
		LOCKED_ADD(ce->transfer_count, -1u);
		void *p = ce->transfer[ce->transfer_count];
		LOCKED_ADD(ce->free_objects, -(uint64_t)1);
		give_to_span(ce, vc_span_of(vc_segment_of(p), p), p);
	}
	ce->transfer_low = 0;
}

void vc_central_flush(void)
{
	for (unsigned node = 0; node < vc_g.nnodes; node++) {
		for (unsigned c = 1; c < VC_NUM_CLASSES; c++) {
			struct vc_central *ce = vc_central_of(node, c);
			vc_lock(&ce->lock);
			flush_transfer(ce);
			vc_unlock(&ce->lock);
		}
	}
}

/* The bottom n objects of the transfer array back to their spans, the others moved
 * down. Lock held. */
static void flush_transfer_bottom(struct vc_central *ce, uint32_t n)
{
	/* transfer_low <= transfer_count: every decrease of the count (a remove, a
	 * flush) lowers the mark with it. */
	VC_ASSERT(n <= ce->transfer_count);
	uint32_t left = ce->transfer_count - n;
	for (uint32_t i = 0; i < n; i++) {
		void *p = ce->transfer[i];
		/* The count falls before the span takes the object back, as in
		 * flush_transfer: span_out - transfer_count, read without the lock
		 * (stats.c), never goes below the objects really out. */
		LOCKED_ADD(ce->transfer_count, -1u);
		LOCKED_ADD(ce->free_objects, -(uint64_t)1);
		give_to_span(ce, vc_span_of(vc_segment_of(p), p), p);
	}
	memmove(ce->transfer, ce->transfer + n, (size_t)left * sizeof(void *));
}

/* Called with each reclaim tick and by vcmalloc_reclaim (maintenance.c), so that
 * memory a program stopped using can reach the page heap and, after the decay, the
 * OS: a transfer array untouched since the previous call goes back to its spans,
 * and of one in use, the objects below its low-water mark (never taken since the
 * previous call: more than the program's traffic needed). A program that freed
 * 100 MiB after a burst and went on with a light load kept 27 MiB in arrays that its
 * light load touched now and then, all of it until malloc_trim. A busy central
 * (lock held) is left alone. */
void vc_central_trim_idle(void)
{
	for (unsigned node = 0; node < vc_g.nnodes; node++) {
		for (unsigned c = 1; c < VC_NUM_CLASSES; c++) {
			struct vc_central *ce = vc_central_of(node, c);
			if (!vc_lock_try(&ce->lock))
				continue;
			if (ce->transfer_count > 0 && ce->ops == ce->ops_at_scan)
				flush_transfer(ce);
			else if (ce->transfer_low > 0)
				flush_transfer_bottom(ce, ce->transfer_low);
			ce->ops_at_scan = ce->ops;
			ce->transfer_low = ce->transfer_count;
			vc_unlock(&ce->lock);
		}
	}
}
