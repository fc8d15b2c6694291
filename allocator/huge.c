/* allocator/huge.c - huge blocks: requests above 1 MiB, or aligned above a page.
 *
 * One mapping each, starting on a unit boundary; the header sits one page before
 * the object, which is page aligned (or more). At most one huge object starts in
 * any unit. Mappings are returned to the OS on free. Registry bytes change under
 * vc_os_lock (segment.c).
 */
#include "internal.h"

#include <errno.h>

uint64_t vc_huge_mapped_bytes;
uint64_t vc_huge_count;

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
	vc_registry_set(base, map, VC_UNIT_HUGE_BODY, VC_UNIT_HUGE_BODY);
	vc_registry_set(obj, 1, VC_UNIT_HUGE_START, VC_UNIT_HUGE_START);
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
	vc_registry_set(base, map, VC_UNIT_FOREIGN, VC_UNIT_FOREIGN);
	vc_registry_set(obj, 1, VC_UNIT_HUGE_FREED, VC_UNIT_HUGE_FREED);
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
		vc_registry_set((char *)base + map, old_map - map, VC_UNIT_FOREIGN, VC_UNIT_FOREIGN);
	else
		vc_registry_set((char *)base + old_map, map - old_map, VC_UNIT_HUGE_BODY,
			     VC_UNIT_HUGE_BODY);
	/* The units that held the old end or now hold the new one stay ours. */
	vc_registry_set(base, map, VC_UNIT_HUGE_BODY, VC_UNIT_HUGE_BODY);
	vc_registry_set(obj, 1, VC_UNIT_HUGE_START, VC_UNIT_HUGE_START);
	h->map_size = map;
	h->size = map - offset;
	vc_huge_mapped_bytes += map - old_map;
	vc_unlock(&vc_os_lock);
	return obj;
}
