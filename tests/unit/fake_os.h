/* tests/unit/fake_os.h - what white-box tests see of the fake OS layer (fake_os.c). */
#ifndef FAKE_OS_H
#define FAKE_OS_H

#include "os.h"

#include <stddef.h>
#include <stdint.h>

enum fake_call { FAKE_MAP, FAKE_UNMAP, FAKE_RELEASE, FAKE_BIND };

struct fake_os_call {
	enum fake_call kind;
	void *p;
	size_t size;
	unsigned node;
};

#define FAKE_MAX_CALLS 4096

struct fake_os {
	uint64_t now_ms;   /* vc_os_now_ms() */
	unsigned nodes;    /* vc_os_numa_nodes(), 0 reads as 1 */
	unsigned fail_maps; /* the next n vc_os_map_aligned calls fail */
	size_t ncalls;
	struct fake_os_call calls[FAKE_MAX_CALLS];
};
extern struct fake_os fake_os;

/* Bytes of the calls of one kind recorded since call number from_call. */
size_t fake_os_bytes(enum fake_call kind, size_t from_call);

#endif
