/* allocator/segment.c - the unit registry, 4 MiB segments and huge blocks.
 *
 * Registry: one byte per 4 MiB unit of the 47-bit address space (32 MiB reserved,
 * touched only around addresses vcmalloc uses). A byte changes under vc_os_lock,
 * before a unit is handed out and after it is given back; readers (free, realloc,
 * malloc_usable_size) read it without a lock: a pointer into a unit can only exist
 * while the unit is ours.
 *
 * Huge blocks: one mapping each, starting on a unit boundary; the header sits one
 * page before the object, which is page aligned (or more). At most one huge object
 * starts in any unit. Mappings are returned to the OS on free.
 */
#include "internal.h"

#include <errno.h>

vc_lock_t vc_os_lock = VC_LOCK_INIT;
uint64_t vc_huge_mapped_bytes;
uint64_t vc_huge_count;

/* The registry is zero-filled static storage (.bss: address space, resident only
 * where written), so that free() indexes it at a link-time address without first
 * loading and testing a pointer; before start-up it reads "foreign" everywhere. */
uint8_t vc_registry_bytes[VC_REGISTRY_BYTES] __attribute__((aligned(4096)));

void vc_registry_init(void)
{
	vc_g.registry = vc_registry_bytes;
	/* Free reads it everywhere: with huge pages, each read of a new area would map a
	 * 2 MiB zero page and each first write would make 2 MiB resident. */
	vc_os_no_huge_pages(vc_registry_bytes, VC_REGISTRY_BYTES);
}

static void registry_set(const void *p, size_t size, unsigned first, unsigned rest)
{
	uintptr_t u = (uintptr_t)p >> VC_UNIT_SHIFT;
	uintptr_t end = ((uintptr_t)p + size - 1) >> VC_UNIT_SHIFT;
	__atomic_store_n(&vc_g.registry[u], (uint8_t)first, __ATOMIC_RELEASE);
	for (u++; u <= end; u++)
		__atomic_store_n(&vc_g.registry[u], (uint8_t)rest, __ATOMIC_RELEASE);
}

struct vc_segment *vc_segment_map(unsigned node)
{
	struct vc_segment *s = vc_os_map_aligned(VC_UNIT_SIZE, VC_UNIT_SIZE);
	if (!s)
		return NULL;
	if (vc_g.nnodes > 1 && vc_g.opt.numa)
		vc_os_bind_node(s, VC_UNIT_SIZE, node);
	/* Where the system gives transparent huge pages to every mapping, the first
	 * touch of a segment would make 2 MiB resident (and clear it) for a few small
	 * spans, and every partial release would split it again: small and large
	 * objects live in 4 KiB pages unless VCMALLOC_HUGE_PAGES=1. */
	if (!vc_g.opt.huge_pages)
		vc_os_no_huge_pages(s, VC_UNIT_SIZE);
	s->magic = vc_g.secret ^ (uintptr_t)s;
	s->node = (uint8_t)node;
	vc_lock(&vc_os_lock);
	registry_set(s, VC_UNIT_SIZE, VC_UNIT_SEGMENT, VC_UNIT_SEGMENT);
	vc_unlock(&vc_os_lock);
	return s;
}

void vc_segment_unmap(struct vc_segment *s)
{
	vc_lock(&vc_os_lock);
	registry_set(s, VC_UNIT_SIZE, VC_UNIT_FOREIGN, VC_UNIT_FOREIGN);
	vc_unlock(&vc_os_lock);
	vc_os_unmap(s, VC_UNIT_SIZE);
}

static size_t huge_map_size(size_t size, size_t align)
{
	size_t pre = align > VC_PAGE_SIZE ? align : VC_PAGE_SIZE; /* header page + alignment */
	size_t total = pre + size;
	if (total < size)
		return 0;
	total = vc_page_round(total);
	return total < pre ? 0 : total;
}

void *vc_huge_alloc(size_t size, size_t align)
{
	if (align < VC_PAGE_SIZE)
		align = VC_PAGE_SIZE;
	size_t map = huge_map_size(size, align);
	if (map == 0 || map > PTRDIFF_MAX) {
		errno = ENOMEM;
		return NULL;
	}
	/* The mapping starts on a unit; the object is the first aligned address at least
	 * one page in, so its header (one page before it) is inside the mapping. */
	size_t base_align = align > VC_UNIT_SIZE ? align : VC_UNIT_SIZE;
	char *base = vc_os_map_aligned(map, base_align);
	if (!base) {
		errno = ENOMEM;
		return NULL;
	}
	char *obj = base + (align > VC_PAGE_SIZE ? align : VC_PAGE_SIZE);
	struct vc_huge_header *h = (struct vc_huge_header *)(obj - VC_PAGE_SIZE);
	h->map_base = base;
	h->map_size = map;
	h->size = map - (size_t)(obj - base);
	h->state = 1;
	h->magic = vc_g.secret ^ (uintptr_t)obj;
	vc_lock(&vc_os_lock);
	registry_set(base, map, VC_UNIT_HUGE_BODY, VC_UNIT_HUGE_BODY);
	registry_set(obj, 1, VC_UNIT_HUGE_START, VC_UNIT_HUGE_START);
	vc_huge_mapped_bytes += map;
	vc_huge_count++;
	vc_unlock(&vc_os_lock);
	return obj;
}

struct vc_huge_header *vc_huge_lookup(const void *p)
{
	if (((uintptr_t)p & (VC_PAGE_SIZE - 1)) != 0)
		return NULL;
	/* The header page must be ours before we read it: in p's unit, or in the unit
	 * before for objects aligned to a unit. */
	const char *hp = (const char *)p - VC_PAGE_SIZE;
	unsigned k = vc_unit_kind(hp);
	if (k != VC_UNIT_HUGE_START && k != VC_UNIT_HUGE_BODY)
		return NULL;
	if (k == VC_UNIT_HUGE_START && vc_segment_of(hp) != vc_segment_of(p))
		return NULL;
	struct vc_huge_header *h = (struct vc_huge_header *)hp;
	/* The unit says a huge object starts here; the header page is ours whenever it
	 * does, but p may be an interior pointer: the magic tells. */
	if (h->magic != (vc_g.secret ^ (uintptr_t)p) || h->state != 1)
		return NULL;
	return h;
}

void vc_huge_free(struct vc_huge_header *h)
{
	void *base = h->map_base;
	size_t map = h->map_size;
	char *obj = (char *)h + VC_PAGE_SIZE;
	vc_lock(&vc_os_lock);
	h->state = 0;
	registry_set(base, map, VC_UNIT_FOREIGN, VC_UNIT_FOREIGN);
	registry_set(obj, 1, VC_UNIT_HUGE_FREED, VC_UNIT_HUGE_FREED);
	vc_huge_mapped_bytes -= map;
	vc_huge_count--;
	vc_os_unmap(base, map);
	vc_unlock(&vc_os_lock);
}

void *vc_huge_realloc(struct vc_huge_header *h, size_t size)
{
	char *obj = (char *)h + VC_PAGE_SIZE;
	size_t offset = (size_t)(obj - (char *)h->map_base);
	size_t map = huge_map_size(size, offset);
	if (map == 0)
		return NULL;
	if (map <= h->map_size && map * 2 > h->map_size)
		return obj; /* shrinking by less than half: keep it */
	/* Resize in place only: a moved mapping would leave its unit boundary. The
	 * caller copies into a new block when this fails. */
	vc_lock(&vc_os_lock);
	void *base = h->map_base;
	size_t old_map = h->map_size;
	if (!vc_os_resize_in_place(base, old_map, map)) {
		vc_unlock(&vc_os_lock);
		return NULL;
	}
	if (map < old_map)
		registry_set((char *)base + map, old_map - map, VC_UNIT_FOREIGN, VC_UNIT_FOREIGN);
	else
		registry_set((char *)base + old_map, map - old_map, VC_UNIT_HUGE_BODY,
			     VC_UNIT_HUGE_BODY);
	/* The units that held the old end or now hold the new one stay ours. */
	registry_set(base, map, VC_UNIT_HUGE_BODY, VC_UNIT_HUGE_BODY);
	registry_set(obj, 1, VC_UNIT_HUGE_START, VC_UNIT_HUGE_START);
	h->map_size = map;
	h->size = map - offset;
	vc_huge_mapped_bytes += map - old_map;
	vc_unlock(&vc_os_lock);
	return obj;
}
