/* tests/unit/fake_os.h - what white-box tests see of the fake OS layer (fake_os.c). */
#ifndef FAKE_OS_H
#define FAKE_OS_H

#include "os.h"

#include <stddef.h>
#include <stdint.h>

enum fake_call {
	FAKE_MAP,
	FAKE_UNMAP,
	FAKE_RELEASE,
	FAKE_BIND,
	FAKE_RESIZE,
	FAKE_MOVE,
	FAKE_POPULATE,
};

/* The calls that give memory back or move it (munmap, madvise, mremap): the ones no
 * allocator lock may be held across. */
static inline int fake_call_releases(enum fake_call k)
{
	return k == FAKE_UNMAP || k == FAKE_RELEASE || k == FAKE_RESIZE || k == FAKE_MOVE;
}

struct fake_os_call {
	enum fake_call kind;
	void *p;
	size_t size;
	unsigned node;
};

#define FAKE_MAX_CALLS 4096

struct fake_os {
	uint64_t now_ms;   /* vc_os_now_ms() */
	uint64_t release_cost_ns; /* what each unmap or release adds to vc_os_release_ns */
	unsigned nodes;    /* vc_os_numa_nodes(), 0 reads as 1 */
	unsigned fail_maps; /* the next n vc_os_map_aligned calls fail */
	unsigned fail_resizes; /* the next n vc_os_resize_in_place calls fail */
	unsigned fail_moves;   /* the next n vc_os_move calls fail */
	/* Called with every recorded call, before a release, unmap, resize or move is
	 * carried out (after a map or a binding); p, size: the call's range (for
	 * FAKE_RESIZE and FAKE_MOVE, size is the new size). A test looks
	 * at the allocator's state at that moment there: which locks are held, what a
	 * header says. NULL: nothing. */
	void (*before_call)(enum fake_call kind, void *p, size_t size);
	size_t ncalls;
	struct fake_os_call calls[FAKE_MAX_CALLS];
};
extern struct fake_os fake_os;

/* Bytes of the calls of one kind recorded since call number from_call. */
size_t fake_os_bytes(enum fake_call kind, size_t from_call);

#endif
