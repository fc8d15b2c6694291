/* allocator/pageheap.c - FREE spans of each node, coalesced, and their segments.
 *
 * Everything here is under the node's page-heap lock. Invariants:
 *   - every page of a segment's usable area belongs to exactly one span, and
 *     pagemap[page] points to that span's descriptor (spans[first_page]);
 *   - the page entry of a page in a FREE or DECAYING span counts no objects
 *     (clear_entries), so free()'s hit path never accepts a pointer there;
 *   - two FREE spans are never adjacent (they are merged on free);
 *   - a FREE span is on free[npages] (or free[0] above 128 pages);
 *   - a segment whose spans are all FREE and released is unmapped, except one kept
 *     per node;
 *   - a DECAYING span is off the free lists and counted in its segment's
 *     decaying_pages while its pages are released with the lock dropped.
 * Memory goes back to the OS with MADV_DONTNEED once a FREE span has been idle for
 * the decay time (VCMALLOC_DECAY_MS); released_pages counts what is not resident.
 *
 * No release system call is made by vc_pageheap_alloc or vc_pageheap_free, which
 * run under other layers' locks (a central list's, while a span is carved or given
 * back): they only mark the work due (pages to lend, a decay), and
 * vc_pageheap_maintain does it (maintenance.c: at the end of slow paths, in the
 * maintenance thread), with no allocator lock held but the page heap's own, which
 * is dropped around every release.
 */
#include "internal.h"
#include "span_list.h"

struct vc_pageheap vc_pageheaps[VC_MAX_NODES];

/* Per node: pages it faulted in since the last maintenance, for other nodes to
 * release as many of their idle free pages (release_for_other_node). */
static uint64_t lend_wanted[VC_MAX_NODES];

/* The release budget's record (timed_release_affordable), all nodes together: the
 * time the page heap's release calls took and the bytes they gave back; and of those
 * bytes, the ones spans taken since faulted in again (statistic os_refault_bytes). */
static uint64_t release_ns_sum, release_bytes_sum;
uint64_t vc_pageheap_refault_bytes;

static unsigned list_of(size_t npages)
{
	return npages < VC_FREE_LISTS ? (unsigned)npages : 0;
}

void vc_span_publish(struct vc_span *sp)
{
	struct vc_segment *s = vc_segment_of(sp);
	struct vc_page_entry e = {
		.tag_key = sp->tag_key,
		.span_low = (uint32_t)((uintptr_t)s + ((size_t)sp->first_page << VC_PAGE_SHIFT)),
		.node = sp->node,
		.local_lanes = VC_ALL_LANES,
	};
	if (sp->state == VC_SPAN_SMALL) {
		const struct vc_class_info *ci = &vc_classes[sp->sizeclass];
		e.inverse = ci->inverse;
		e.objects = 0; /* none carved yet (central.c raises it) */
		e.shift = ci->shift;
		e.sizeclass = sp->sizeclass;
		e.local_lanes = vc_local_lanes(sp->lane, ci->size);
	}
	for (unsigned i = 0; i < sp->npages; i++)
		s->entries[sp->first_page + i] = e;
}

static void set_pagemap_only(struct vc_segment *s, struct vc_span *sp)
{
	for (unsigned i = 0; i < sp->npages; i++)
		s->pagemap[sp->first_page + i] = sp;
}

/* The page map and the page entries of sp's pages (a SMALL or LARGE span). */
static void set_pagemap(struct vc_segment *s, struct vc_span *sp)
{
	set_pagemap_only(s, sp);
	vc_span_publish(sp);
}

/* The page entries of pages [first, first+n) of s, which become FREE: no objects, so
 * that free()'s hit path fails its check there (alloc_fast.h). The other fields of a
 * FREE page's entry are read by nobody. Pages that were FREE already keep the entry
 * they have: a split or a merge of FREE spans writes the page map alone (a span
 * carved from a large free span used to rewrite every entry of the remainder, about
 * 16 KiB per new span in a fresh segment). */
static void clear_entries(struct vc_segment *s, unsigned first, unsigned n)
{
	const struct vc_page_entry e = {.node = s->node, .local_lanes = VC_ALL_LANES};
	for (unsigned i = 0; i < n; i++)
		s->entries[first + i] = e;
}

/* Make the descriptor for pages [first, first+n) of s, as a FREE span: the page map
 * only (the entries: clear_entries). */
static struct vc_span *make_free_span(struct vc_segment *s, unsigned first, unsigned n,
				      uint32_t released, uint32_t returned)
{
	struct vc_span *sp = &s->spans[first];
	sp->first_page = (uint16_t)first;
	sp->npages = (uint16_t)n;
	sp->state = VC_SPAN_FREE;
	sp->sizeclass = 0;
	sp->node = s->node;
	sp->released_pages = released;
	sp->returned_pages = returned;
	sp->free_list = NULL;
	sp->free_since_ms = vc_os_now_ms();
	set_pagemap_only(s, sp);
	return sp;
}

static void insert_free(struct vc_pageheap *ph, struct vc_span *sp)
{
	vc_span_list_push(&ph->free[list_of(sp->npages)], sp);
	ph->free_bytes += (uint64_t)sp->npages << VC_PAGE_SHIFT;
	ph->released_bytes += (uint64_t)sp->released_pages << VC_PAGE_SHIFT;
}

static void remove_free(struct vc_pageheap *ph, struct vc_span *sp)
{
	vc_span_list_remove(&ph->free[list_of(sp->npages)], sp);
	ph->free_bytes -= (uint64_t)sp->npages << VC_PAGE_SHIFT;
	ph->released_bytes -= (uint64_t)sp->released_pages << VC_PAGE_SHIFT;
}

static struct vc_span *find_fit(struct vc_pageheap *ph, size_t npages)
{
	for (size_t n = npages; n < VC_FREE_LISTS; n++)
		if (ph->free[n])
			return ph->free[n];
	struct vc_span *best = NULL;
	for (struct vc_span *sp = ph->free[0]; sp; sp = sp->next)
		if (sp->npages >= npages && (!best || sp->npages < best->npages))
			best = sp;
	return best;
}

/* A node's mapped segments (through next/prev; page-heap lock held). */
static void segment_list_push(struct vc_segment **head, struct vc_segment *s)
{
	s->prev = NULL;
	s->next = *head;
	if (*head)
		(*head)->prev = s;
	*head = s;
}

static void segment_list_remove(struct vc_segment **head, struct vc_segment *s)
{
	if (s->prev)
		s->prev->next = s->next;
	else
		*head = s->next;
	if (s->next)
		s->next->prev = s->prev;
	s->next = s->prev = NULL;
}

static bool grow(struct vc_pageheap *ph, unsigned node)
{
	struct vc_segment *s = vc_segment_map(node);
	if (!s)
		return false;
	segment_list_push(&ph->segments, s);
	ph->mapped_bytes += VC_UNIT_SIZE;
	unsigned first = (unsigned)VC_SEGMENT_HEADER_PAGES;
	/* Fresh pages are not resident: count them as released until used. */
	unsigned n = (unsigned)VC_PAGES_PER_SEGMENT - first;
	clear_entries(s, first, n);
	insert_free(ph, make_free_span(s, first, n, n, 0));
	return true;
}

/* Take pages [first, first+npages) out of the FREE span f (which holds them): the
 * pages before and after stay FREE, each with its share of f's released and returned
 * pages (not tracked by position; the taken pages count as resident, and what they
 * had of returned pages is added to vc_pageheap_refault_bytes). Returns the taken
 * span's descriptor, not yet published. Page-heap lock held. */
static struct vc_span *take_pages(struct vc_pageheap *ph, struct vc_span *f, unsigned first,
				  unsigned npages)
{
	struct vc_segment *s = vc_segment_of(f);
	const unsigned f_first = f->first_page, f_n = f->npages, end = first + npages;
	const uint64_t released = f->released_pages, returned = f->returned_pages;
	uint64_t returned_taken = returned; /* less what the pages left FREE keep */
	remove_free(ph, f);
	if (first > f_first) {
		unsigned n = first - f_first;
		insert_free(ph, make_free_span(s, f_first, n, (uint32_t)(released * n / f_n),
					       (uint32_t)(returned * n / f_n)));
		returned_taken -= returned * n / f_n;
	}
	if (f_first + f_n > end) {
		unsigned n = f_first + f_n - end;
		insert_free(ph, make_free_span(s, end, n, (uint32_t)(released * n / f_n),
					       (uint32_t)(returned * n / f_n)));
		returned_taken -= returned * n / f_n;
	}
	if (returned_taken)
		__atomic_add_fetch(&vc_pageheap_refault_bytes, returned_taken << VC_PAGE_SHIFT,
				   __ATOMIC_RELAXED);
	struct vc_span *sp = &s->spans[first];
	sp->first_page = (uint16_t)first;
	sp->npages = (uint16_t)npages;
	sp->node = s->node;
	sp->in_list = 0;
	sp->free_list = NULL;
	return sp;
}

/* Placement of SMALL spans by central lane. A lane's spans are kept together so
 * that no two vCPUs' objects sit on neighbouring pages (see central.c): a new span
 * goes right after the lane's previous one when those pages are free; otherwise to
 * the best fit, but VC_LANE_GAP pages into a free span large enough to leave that
 * gap on both sides, so that the lane which placed the span before the gap can
 * still grow into it. */
#define VC_LANE_GAP 16

/* The FREE span (not DECAYING) of s that holds pages [page, page+npages), or NULL.
 * Page-heap lock held. */
static struct vc_span *free_span_holding(struct vc_segment *s, size_t page, size_t npages)
{
	if (page + npages > VC_PAGES_PER_SEGMENT)
		return NULL;
	struct vc_span *f = s->pagemap[page];
	if (!f || f->state != VC_SPAN_FREE || f->first_page + f->npages < page + npages)
		return NULL;
	return f;
}

/* The FREE span holding the npages after lane's previous span, or NULL; *first
 * gets the first of those pages. */
static struct vc_span *lane_spot(struct vc_pageheap *ph, unsigned lane, size_t npages,
				 unsigned *first)
{
	struct vc_segment *s = ph->lane_next[lane].seg;
	*first = ph->lane_next[lane].page;
	return s ? free_span_holding(s, *first, npages) : NULL;
}

/* SMALL spans of this many pages and more (objects of 30 KiB and up, one or two to
 * a span) go to resident free pages first: a FREE span with none of its pages
 * released, of npages up to twice that, taken from its start. Lane placement is
 * for small objects, whose neighbours share lines with them; it put the spans of
 * these on the lane's next pages, often never touched, while the span freed just
 * before (a string grown by realloc moves up a class of about 12% at a time) sat
 * resident beside them. bench/speed's realloc, scale 1: 2 241 page faults instead
 * of 2 507, peak RSS 10.4 MiB instead of 11.3; from 4 pages on, more faults than
 * before at scale 2 (small spans took the holes large blocks grow into). */
#define VC_RESIDENT_FIRST_PAGES 8

/* A fully resident FREE span of npages to 2 * npages pages, or NULL. Page-heap lock
 * held: at most 64 spans are looked at. */
static struct vc_span *resident_spot(struct vc_pageheap *ph, size_t npages)
{
	size_t most = npages * 2 < VC_FREE_LISTS ? npages * 2 : VC_FREE_LISTS - 1;
	unsigned visits = 64;
	for (size_t n = npages; n <= most; n++)
		for (struct vc_span *f = ph->free[n]; f; f = f->next) {
			if (f->released_pages == 0)
				return f;
			if (--visits == 0)
				return NULL;
		}
	return NULL;
}

static unsigned release_pass(unsigned node, uint64_t min_age_ms, size_t max_pages,
			     bool marks_decay);

/* A span taken or given back: the node is in use (node_is_quiet). Only read with
 * several nodes, so one node spends no clock read on it. */
static void note_use(struct vc_pageheap *ph)
{
	if (vc_g.nnodes > 1)
		__atomic_store_n(&ph->last_use_ms, vc_os_now_ms(), __ATOMIC_RELAXED);
}

/* Free memory across nodes. Each node's heap keeps its free pages resident for the
 * decay time, for that node's threads to reuse. But threads that the scheduler moves
 * across nodes bring their demand to each node in turn, and every node's heap grew to
 * the size of the whole demand (footprint `few` in a 4-node guest: 31 MiB peak, 11
 * with NUMA off; 20 with a 50 ms decay). So when a node is about to fault in fresh
 * pages, the same amount of free pages that other nodes have left idle for an eighth
 * of the decay time is released first: the process's resident free memory stays that
 * of one heap, and every node still gets local pages (lent as released pages, which
 * the borrowing node's first touch places). */
static void release_for_other_node(unsigned node, uint64_t fresh_pages)
{
	size_t want = (size_t)fresh_pages;
	uint64_t min_age = vc_g.opt.decay_ms / 32;
	for (unsigned n = 0; n < vc_g.nnodes && want > 0; n++) {
		struct vc_pageheap *other = &vc_pageheaps[n];
		if (n == node || __atomic_load_n(&other->free_bytes, __ATOMIC_RELAXED) <=
				     __atomic_load_n(&other->released_bytes, __ATOMIC_RELAXED))
			continue;
		uint64_t before = __atomic_load_n(&other->released_bytes, __ATOMIC_RELAXED);
		release_pass(n, min_age, want, false);
		uint64_t after = __atomic_load_n(&other->released_bytes, __ATOMIC_RELAXED);
		size_t got = after > before ? (size_t)((after - before) >> VC_PAGE_SHIFT) : 0;
		want = got >= want ? 0 : want - got;
	}
}

void vc_span_populate(struct vc_span *sp, size_t from, size_t to)
{
	uint16_t mark = __atomic_load_n(&sp->populated, __ATOMIC_RELAXED);
	if (to <= mark)
		return;
	if (from < mark)
		from = mark;
	vc_os_populate(vc_span_start(sp) + from * VC_OS_PAGE, (to - from) * VC_OS_PAGE);
	while (mark < to && !__atomic_compare_exchange_n(&sp->populated, &mark, (uint16_t)to, true,
							 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

struct vc_span *vc_pageheap_alloc(unsigned node, size_t npages, unsigned state, int lane)
{
	struct vc_pageheap *ph = &vc_pageheaps[node];
	if (npages == 0 || npages > VC_PAGES_PER_SEGMENT - VC_SEGMENT_HEADER_PAGES)
		return NULL;
	vc_lock(&ph->lock);
	unsigned first = 0;
	struct vc_span *f = NULL;
	if (lane >= 0) {
		if (npages >= VC_RESIDENT_FIRST_PAGES) {
			f = resident_spot(ph, npages);
			if (f)
				first = f->first_page;
		}
		if (!f)
			f = lane_spot(ph, (unsigned)lane, npages, &first);
	}
	if (!f) {
		f = find_fit(ph, npages);
		if (!f) {
			if (!grow(ph, node)) {
				vc_unlock(&ph->lock);
				return NULL;
			}
			f = find_fit(ph, npages);
		}
		first = f->first_page;
		if (lane >= 0 && f->npages >= npages + 2 * VC_LANE_GAP)
			first += VC_LANE_GAP;
	}
	note_use(ph);
	const uint64_t released_before = ph->released_bytes;
	struct vc_span *sp = take_pages(ph, f, first, (unsigned)npages);
	/* Pages of released (or never used) memory this span will fault in. */
	const uint64_t fresh = released_before - ph->released_bytes;
	struct vc_segment *s = vc_segment_of(sp);
	if (lane >= 0) {
		ph->lane_next[lane].seg = s;
		ph->lane_next[lane].page = first + (unsigned)npages;
	}
	sp->state = (uint8_t)state;
	/* The populated mark (types.h; it shares its field with the FREE spans'
	 * released_pages): nothing to populate in a span taken from resident pages. */
	sp->populated = fresh ? 0 : (uint16_t)(npages * (VC_PAGE_SIZE / VC_OS_PAGE));
	sp->tag_key = vc_g.secret ^ ((vc_g.secret * (++s->span_uses | 1)) >> 7) ^ (uintptr_t)sp;
	s->used_pages = (uint16_t)(s->used_pages + npages);
	/* A SMALL span's entries wait for its class: central.c publishes them once it
	 * has set it. Until then they are the FREE pages' entries, which hold no
	 * objects, so free() of a pointer there takes the checked path. */
	if (state == VC_SPAN_SMALL)
		set_pagemap_only(s, sp);
	else
		set_pagemap(s, sp);
	vc_unlock(&ph->lock);
	if (fresh && vc_g.nnodes > 1)
		__atomic_add_fetch(&lend_wanted[node], fresh >> VC_PAGE_SHIFT, __ATOMIC_RELAXED);
	return sp;
}

/* Grow the LARGE span sp in place to npages when the pages right after it are
 * FREE (not DECAYING) in the same segment; false otherwise, sp unchanged. */
bool vc_pageheap_extend(struct vc_span *sp, size_t npages)
{
	struct vc_segment *s = vc_segment_of(sp);
	struct vc_pageheap *ph = &vc_pageheaps[s->node];
	VC_ASSERT(sp->state == VC_SPAN_LARGE);
	if (npages <= sp->npages)
		return true;
	const unsigned end = sp->first_page + sp->npages;
	const unsigned more = (unsigned)(npages - sp->npages);
	vc_lock(&ph->lock);
	struct vc_span *f = free_span_holding(s, end, more);
	if (!f) {
		vc_unlock(&ph->lock);
		return false;
	}
	/* The taken pages' descriptor is dropped: they join sp. */
	(void)take_pages(ph, f, end, more);
	sp->npages = (uint16_t)npages;
	s->used_pages = (uint16_t)(s->used_pages + more);
	set_pagemap(s, sp);
	vc_unlock(&ph->lock);
	return true;
}

/* Pages [first, first+n) of s become one FREE span, merged with FREE neighbours, with
 * `released` of its pages not resident, `returned` of those given back by a release
 * call. Returns s when the segment is now entirely free and released and must be
 * unmapped by the caller after unlocking (it has been unlinked); NULL otherwise.
 * Page-heap lock held.
 *
 * A segment that becomes free with resident pages stays mapped until the decay has
 * released them: unmapping it at once made a program that frees and reallocates
 * large blocks (a string grown by realloc, say) fault every page of a fresh mapping
 * in again, 38% of its time. */
static struct vc_segment *put_free_locked(struct vc_pageheap *ph, struct vc_segment *s,
					  unsigned first, unsigned n, uint32_t released,
					  uint32_t returned)
{
	clear_entries(s, first, n);
	if (first > VC_SEGMENT_HEADER_PAGES) {
		struct vc_span *prev = s->pagemap[first - 1];
		if (prev && prev->state == VC_SPAN_FREE) {
			remove_free(ph, prev);
			first = prev->first_page;
			n += prev->npages;
			released += prev->released_pages;
			returned += prev->returned_pages;
		}
	}
	if (first + n < VC_PAGES_PER_SEGMENT) {
		struct vc_span *next = s->pagemap[first + n];
		if (next && next->state == VC_SPAN_FREE) {
			remove_free(ph, next);
			n += next->npages;
			released += next->released_pages;
			returned += next->returned_pages;
		}
	}
	struct vc_span *merged = make_free_span(s, first, n, released, returned);
	if (vc_config_assert_level >= 2) {
		/* Expensive: the segment's spans tile its usable pages exactly. */
		unsigned pg = (unsigned)VC_SEGMENT_HEADER_PAGES;
		while (pg < VC_PAGES_PER_SEGMENT) {
			struct vc_span *t = s->pagemap[pg];
			VC_ASSERT_EXPENSIVE(t && t->first_page == pg && t->npages > 0);
			pg += t->npages;
		}
		VC_ASSERT_EXPENSIVE(pg == VC_PAGES_PER_SEGMENT);
	}
	if (s->used_pages == 0 && s->decaying_pages == 0 && released == n) {
		/* Whole segment free (merged is all of it) and released: unmap it unless
		 * it is the node's last one. */
		bool keep = ph->segments == s && s->next == NULL;
		if (!keep) {
			for (unsigned l = 0; l < VC_CENTRAL_LANES; l++)
				if (ph->lane_next[l].seg == s)
					ph->lane_next[l].seg = NULL;
			segment_list_remove(&ph->segments, s);
			ph->mapped_bytes -= VC_UNIT_SIZE;
			return s;
		}
	}
	insert_free(ph, merged);
	return NULL;
}

void vc_pageheap_free(struct vc_span *sp)
{
	struct vc_segment *s = vc_segment_of(sp);
	struct vc_pageheap *ph = &vc_pageheaps[s->node];
	VC_ASSERT(sp->state == VC_SPAN_SMALL || sp->state == VC_SPAN_LARGE);
	vc_lock(&ph->lock);
	VC_ASSERT(s->used_pages >= sp->npages);
	note_use(ph);
	s->used_pages = (uint16_t)(s->used_pages - sp->npages);
	sp->state = VC_SPAN_FREE;
	sp->sizeclass = 0;
	/* sp's pages are resident: its segment cannot be wholly released, so nothing
	 * is unmapped here (decay_pass unmaps). */
	struct vc_segment *unmap = put_free_locked(ph, s, sp->first_page, sp->npages, 0, 0);
	VC_ASSERT_ALWAYS(unmap == NULL);
	vc_unlock(&ph->lock);
}

/* Spans released per pass: the page-heap lock is not held while the OS releases
 * them (a release can take long: on a machine with many CPUs it waits for TLB
 * shootdowns), so other threads keep allocating from this node meanwhile. */
#define VC_DECAY_BATCH 32

/* One pass: take up to VC_DECAY_BATCH FREE spans with resident pages, idle for at
 * least min_age_ms, off the lists (DECAYING), until they hold max_pages pages; release
 * their pages unlocked, give them back as FREE. Returns how many spans. */
static unsigned release_pass(unsigned node, uint64_t min_age_ms, size_t max_pages,
			     bool marks_decay)
{
	struct vc_pageheap *ph = &vc_pageheaps[node];
	struct vc_span *batch[VC_DECAY_BATCH];
	unsigned taken = 0;
	vc_lock(&ph->lock);
	uint64_t now = vc_os_now_ms();
	/* A decay pass (not a lending or quiet-node one) starts the next period. */
	if (marks_decay)
		__atomic_store_n(&ph->last_decay_ms, now, __ATOMIC_RELAXED);
	size_t pages = 0;
	for (unsigned l = 0; l < VC_FREE_LISTS && taken < VC_DECAY_BATCH && pages < max_pages; l++) {
		struct vc_span *sp = ph->free[l];
		while (sp && taken < VC_DECAY_BATCH && pages < max_pages) {
			struct vc_span *next = sp->next;
			if (sp->released_pages < sp->npages && now - sp->free_since_ms >= min_age_ms) {
				pages += sp->npages - sp->released_pages;
				remove_free(ph, sp);
				sp->state = VC_SPAN_DECAYING;
				struct vc_segment *s = vc_segment_of(sp);
				s->decaying_pages = (uint16_t)(s->decaying_pages + sp->npages);
				batch[taken++] = sp;
			}
			sp = next;
		}
	}
	vc_unlock(&ph->lock);
	if (taken == 0)
		return 0;
	/* The calls' time, for the release budget (other threads' releases meanwhile
	 * count too: the estimate errs on the side of cost). */
	const uint64_t spent_before = __atomic_load_n(&vc_os_release_ns, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < taken; i++)
		vc_os_release(vc_span_start(batch[i]), (size_t)batch[i]->npages << VC_PAGE_SHIFT);
	__atomic_add_fetch(&release_ns_sum,
			   __atomic_load_n(&vc_os_release_ns, __ATOMIC_RELAXED) - spent_before,
			   __ATOMIC_RELAXED);
	__atomic_add_fetch(&release_bytes_sum, (uint64_t)pages << VC_PAGE_SHIFT, __ATOMIC_RELAXED);
	struct vc_segment *unmap[VC_DECAY_BATCH];
	unsigned nunmap = 0;
	vc_lock(&ph->lock);
	for (unsigned i = 0; i < taken; i++) {
		struct vc_span *sp = batch[i];
		struct vc_segment *s = vc_segment_of(sp);
		s->decaying_pages = (uint16_t)(s->decaying_pages - sp->npages);
		sp->state = VC_SPAN_FREE;
		/* Its pages resident until now were given back by this call. */
		const uint32_t returned = sp->returned_pages + sp->npages - sp->released_pages;
		struct vc_segment *u =
		    put_free_locked(ph, s, sp->first_page, sp->npages, sp->npages, returned);
		if (u)
			unmap[nunmap++] = u;
	}
	vc_unlock(&ph->lock);
	for (unsigned i = 0; i < nunmap; i++)
		vc_segment_unmap(unmap[i]);
	return taken;
}

static unsigned decay_pass(unsigned node, bool force)
{
	return release_pass(node, force ? 0 : vc_g.opt.decay_ms, SIZE_MAX, true);
}

void vc_pageheap_decay(unsigned node, bool force)
{
	/* A forced decay releases everything; a timed one at most one batch (the rest
	 * waits for the next tick). */
	while (decay_pass(node, force) == VC_DECAY_BATCH && force)
		;
}

/* Decay driven by each node's demand. A node whose heap took or gave back no span
 * for decay/32 has no thread working there any more (its threads moved to other
 * nodes, or stopped): its free pages idle that long are released then, not after the
 * whole decay time, because nothing on that node will reuse them and the nodes the
 * threads went to are growing meanwhile. Busy nodes keep the decay time. With one
 * node this never applies. */
static bool node_is_quiet(const struct vc_pageheap *ph, uint64_t now)
{
	return vc_g.nnodes > 1 &&
	       now - __atomic_load_n(&ph->last_use_ms, __ATOMIC_RELAXED) >= vc_g.opt.decay_ms / 32;
}

/* The cost of timed releases. Each release takes mappings away, and the kernel makes
 * every CPU running the process drop its TLB entries: microseconds on hardware, but
 * 0.1-1 s in a 64-vCPU emulated guest with its threads busy (tests/vm/README.md,
 * vm-os-call-cost). A release is wasted when its pages come back into use soon
 * after: in api crowd_exit there, crowds of threads that take the same pages again
 * and again, the timed passes made 10 940 release calls (the host: about 200) and
 * the test took 843-898 s. So a release is paid for when its pages are faulted in
 * again, while that is what most releases come to: each byte a take finds returned
 * by a release call (returned_pages, so an estimate) costs what a byte's release
 * cost lately (the calls' time per byte since the last update that saw some), as
 * long as the bytes faulted in again lately are more than half of those released
 * lately (both halved every VC_RELEASE_WINDOW_MS). That is a debt that elapsed time
 * pays off at 1/VC_RELEASE_SHARE, and the timed passes (decay, quiet nodes,
 * lending, the maintenance thread's rounds) start only while nothing is owed; the
 * credit saved is capped at VC_RELEASE_CREDIT_NS. crowd_exit with it: 660 calls,
 * 540 s. Releases that mostly stay released cost nothing: a process that goes on
 * with a light load after a burst gets its memory back as fast as the calls go.
 * Charged at every call, or at every byte faulted in again, stress light_release
 * (507 calls on the development host; each 10-150 ms in that guest, with 4 NUMA
 * nodes) held its burst past the test's 30 s there. A debt is not forgiven after a
 * quiet while: forgiving it after 10 s with nothing faulted in again (so that what a
 * burst owed could not hold an idle process's memory: at 1/32, 1 s owed holds it
 * 32 s) let crowd_exit's releases run again there (4831 calls, 693 s): gaps that long
 * come between its rounds. On hardware the bound is far away (a 4 KiB release costs
 * about 10 us on the development host). Releases on request (malloc_trim,
 * vcmalloc_release_free_memory, a crowd of threads gone, out of memory) are never
 * deferred. Lock-free, so nothing needs repair in a fork child. */
#define VC_RELEASE_SHARE 32
#define VC_RELEASE_CREDIT_NS (100ull * 1000 * 1000)
static int64_t release_debt_ns;     /* owed (> 0) or saved (< 0) release time */
static uint64_t release_paid_ms;    /* time up to which elapsed time has paid it off */
/* The updater's own (one at a time, see below): the sums it has seen; the cost per
 * MiB of the releases between the last two updates that saw some; the bytes
 * released and faulted in again lately (halved every VC_RELEASE_WINDOW_MS). */
#define VC_RELEASE_WINDOW_MS 10000
static uint64_t refault_seen, release_ns_seen, release_bytes_seen, release_ns_per_mib;
static uint64_t recent_released, recent_refaulted, recent_since_ms;

static bool timed_release_affordable(uint64_t now)
{
	/* One thread a millisecond brings the debt up to date (slow paths call this
	 * often; the others only read). */
	uint64_t paid = __atomic_load_n(&release_paid_ms, __ATOMIC_RELAXED);
	if (now > paid && __atomic_compare_exchange_n(&release_paid_ms, &paid, now, false,
						      __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
		uint64_t halvings = (now - recent_since_ms) / VC_RELEASE_WINDOW_MS;
		if (halvings > 0) {
			recent_released = halvings < 64 ? recent_released >> halvings : 0;
			recent_refaulted = halvings < 64 ? recent_refaulted >> halvings : 0;
			recent_since_ms = now;
		}
		uint64_t ns = __atomic_load_n(&release_ns_sum, __ATOMIC_RELAXED);
		uint64_t bytes = __atomic_load_n(&release_bytes_sum, __ATOMIC_RELAXED);
		if (bytes > release_bytes_seen) {
			release_ns_per_mib = (uint64_t)(((unsigned __int128)(ns - release_ns_seen) << 20) /
							(bytes - release_bytes_seen));
			recent_released += bytes - release_bytes_seen;
			release_ns_seen = ns;
			release_bytes_seen = bytes;
		}
		uint64_t refault = __atomic_load_n(&vc_pageheap_refault_bytes, __ATOMIC_RELAXED);
		unsigned __int128 charge = 0;
		if (refault > refault_seen) {
			recent_refaulted += refault - refault_seen;
			/* Waste only while most of what was released lately came back. */
			if (recent_refaulted * 2 > recent_released)
				charge = ((unsigned __int128)(refault - refault_seen) *
					  release_ns_per_mib) >> 20;
		}
		refault_seen = refault;
		if (charge > (1ull << 62))
			charge = 1ull << 62;
		uint64_t elapsed = now - paid < (1ull << 32) ? now - paid : 1ull << 32;
		int64_t change =
		    (int64_t)(uint64_t)charge - (int64_t)(elapsed * (1000000 / VC_RELEASE_SHARE));
		int64_t debt = __atomic_add_fetch(&release_debt_ns, change, __ATOMIC_RELAXED);
		if (debt < -(int64_t)VC_RELEASE_CREDIT_NS)
			__atomic_compare_exchange_n(&release_debt_ns, &debt,
						    -(int64_t)VC_RELEASE_CREDIT_NS, false,
						    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	}
	return __atomic_load_n(&release_debt_ns, __ATOMIC_RELAXED) <= 0;
}

/* The slow paths of many threads find a pass due at the same moment: the one that
 * moves *stamp from its due value to now does it, the others go on, so that a node
 * gets one timed pass per period as the rules above mean, not one per thread. */
static bool claim_pass(uint64_t *stamp, uint64_t now, uint64_t period)
{
	uint64_t last = __atomic_load_n(stamp, __ATOMIC_RELAXED);
	return now - last >= period && now >= last &&
	       __atomic_compare_exchange_n(stamp, &last, now, false, __ATOMIC_RELAXED,
					   __ATOMIC_RELAXED);
}

/* A slow path releases one batch per node and decay time (last_decay_ms), so that
 * no allocation waits for more than a batch of system calls; the maintenance thread
 * (every_batch) releases every aged span at each of its rounds, whatever the slow
 * paths did. It used to wait for the decay time too, which the slow paths' passes
 * kept restarting: a program that freed 100 MiB after a burst and went on with a
 * light load (a slow path now and then) got 32 spans back per second, and held 99
 * MiB seven seconds later. */
void vc_pageheap_maybe_decay(uint64_t now, bool every_batch)
{
	for (unsigned n = 0; n < vc_g.nnodes; n++) {
		struct vc_pageheap *ph = &vc_pageheaps[n];
		if (__atomic_load_n(&ph->free_bytes, __ATOMIC_RELAXED) <=
		    __atomic_load_n(&ph->released_bytes, __ATOMIC_RELAXED))
			continue;
		if (!timed_release_affordable(now))
			return;
		if (every_batch)
			while (decay_pass(n, false) == VC_DECAY_BATCH)
				;
		else if (claim_pass(&ph->last_decay_ms, now, vc_g.opt.decay_ms))
			decay_pass(n, false);
		else if (node_is_quiet(ph, now) &&
			 claim_pass(&ph->last_quiet_ms, now, vc_g.opt.decay_ms / 32))
			while (release_pass(n, vc_g.opt.decay_ms / 32, SIZE_MAX, false) ==
			       VC_DECAY_BATCH)
				;
	}
}

void vc_pageheap_maintain(uint64_t now, bool every_batch)
{
	for (unsigned n = 0; n < vc_g.nnodes && vc_g.nnodes > 1; n++)
		if (__atomic_load_n(&lend_wanted[n], __ATOMIC_RELAXED) &&
		    timed_release_affordable(now))
			release_for_other_node(n, __atomic_exchange_n(&lend_wanted[n], 0,
								      __ATOMIC_RELAXED));
	vc_pageheap_maybe_decay(now, every_batch);
}

bool vc_pageheap_holds_resident_free(void)
{
	for (unsigned n = 0; n < vc_g.nnodes; n++)
		if (__atomic_load_n(&vc_pageheaps[n].free_bytes, __ATOMIC_RELAXED) >
		    __atomic_load_n(&vc_pageheaps[n].released_bytes, __ATOMIC_RELAXED))
			return true;
	return false;
}

/* The nodes in use only: vc_pageheaps is about 70 KiB of .bss for VC_MAX_NODES
 * nodes, resident only where written, and a write to every node's made 19 pages
 * resident in every process. */
void vc_pageheap_init(void)
{
	for (unsigned i = 0; i < vc_g.nnodes; i++)
		vc_pageheaps[i].last_decay_ms = vc_os_now_ms();
}
