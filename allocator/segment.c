/* allocator/segment.c - the unit registry and 4 MiB segments.
 *
 * Registry: one byte per 4 MiB unit of the user address space (VC_ADDRESS_BITS: 32 MiB
 * reserved on x86-64, 64 MiB on aarch64; touched only around addresses vcmalloc
 * uses). A byte changes under vc_os_lock, before a unit is handed out and after it is given back; readers (free, realloc,
 * malloc_usable_size) read it without a lock: a pointer into a unit can only exist
 * while the unit is ours. Huge blocks (huge.c) set the bytes of their units through
 * vc_registry_set.
 */
#include "internal.h"

vc_lock_t vc_os_lock = VC_LOCK_INIT;

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

void vc_registry_set(const void *p, size_t size, unsigned first, unsigned rest)
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
	/* The unused end of the header pages, between the header and the first span:
	 * an underflow of the segment's first object faults instead of reaching the
	 * header. (Where the system gives THP to every mapping, this also keeps the
	 * segment's first 2 MiB out of a huge page.) */
	vc_os_guard((char *)s + VC_SEGMENT_GUARD_START,
		    VC_SEGMENT_HEADER_PAGES * VC_PAGE_SIZE - VC_SEGMENT_GUARD_START);
	s->magic = vc_g.secret ^ (uintptr_t)s;
	s->node = (uint8_t)node;
	vc_lock(&vc_os_lock);
	vc_registry_set(s, VC_UNIT_SIZE, VC_UNIT_SEGMENT, VC_UNIT_SEGMENT);
	vc_unlock(&vc_os_lock);
	return s;
}

void vc_segment_unmap(struct vc_segment *s)
{
	vc_lock(&vc_os_lock);
	/* A later free of a block it held is then reported as a double free. */
	vc_registry_set(s, VC_UNIT_SIZE, VC_UNIT_SEGMENT_FREED, VC_UNIT_SEGMENT_FREED);
	vc_unlock(&vc_os_lock);
	vc_os_unmap(s, VC_UNIT_SIZE);
}
