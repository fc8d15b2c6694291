/* allocator/remote_free.c - frees of small objects from another lane than their span's.
 *
 * A per-vCPU cache is a stack: the object freed last is the next one handed out.
 * When a thread frees a small object that another thread allocated (the producer
 * of a hand-off), the freeing thread gets it back at once, yet its neighbours in
 * the same cache line may still be in use by the thread that allocated them: the
 * two threads then write one line from two CPUs (passive false sharing, as in
 * Hoard's cache-scratch test), and every write costs a line transfer.
 *
 * Spans of small classes belong to a central lane (the allocating vCPU id modulo
 * VC_CENTRAL_LANES, central.c), and each page entry says which lanes count as
 * local (local_lanes). free() tests the freeing thread's id against it, one bit
 * test on the entry it loads anyway; a free from another lane comes here instead
 * of the cache. The object waits in a small per-vCPU buffer, and a full buffer
 * goes to the central lists, class by class: it is handed out again only to its
 * span's lane (central.c: a refill takes from the transfer array only objects its
 * lane's frees keep). Only classes
 * up to VC_REMOTE_MAX_SIZE (a cache line) take this path: larger objects share at
 * most their first and last lines with a neighbour. Outside the common mode (mm_cid without
 * node tags) every lane is local (vc_local_lanes).
 *
 * Invariants: the buffer of id i is used only while i is populated and only under
 * i's vCPU lock (vc_g.vcpus[i].lock): taken with a try-lock here, so that a free
 * never waits (a busy lock sends the object straight to central), and held by the
 * drains, which empty the buffer (vcpu_cache.c) before the id is unpopulated. Fork
 * takes every used id's lock, so no buffer is half-written in the child. Objects in
 * a buffer carry their free tag: a second free of one is a double free.
 */
#include "internal.h"
#include "rseq.h"

enum { VC_REMOTE_BATCH = 32 };

struct vc_remote_buffer {
	uint32_t count;
	uint8_t cls[VC_REMOTE_BATCH];
	void *objs[VC_REMOTE_BATCH];
} __attribute__((aligned(64)));

/* nvcpus buffers of reserved address space: an id's page is touched by its first
 * remote free. */
static struct vc_remote_buffer *buffers;

void vc_remote_init(void)
{
	if (!vc_g.remote_lanes)
		return;
	buffers = vc_os_reserve(vc_page_round(vc_g.nvcpus * sizeof(*buffers)));
	VC_ASSERT_ALWAYS(buffers);
}

/* The buffer to central: sorted by class first (insertion sort of at most 32), so
 * that each class costs one central insert, one lock, however the frees were
 * interleaved (hand-offs of mixed sizes alternate classes). */
static void flush(struct vc_vcpu *v, struct vc_remote_buffer *b)
{
	uint32_t n = b->count;
	for (uint32_t i = 1; i < n; i++) {
		uint8_t c = b->cls[i];
		void *p = b->objs[i];
		uint32_t j = i;
		for (; j > 0 && b->cls[j - 1] > c; j--) {
			b->cls[j] = b->cls[j - 1];
			b->objs[j] = b->objs[j - 1];
		}
		b->cls[j] = c;
		b->objs[j] = p;
	}
	uint32_t i = 0;
	while (i < n) {
		uint32_t j = i + 1;
		while (j < n && b->cls[j] == b->cls[i])
			j++;
		vc_central_insert(b->cls[i], &b->objs[i], j - i);
		i = j;
	}
	b->count = 0;
	__atomic_store_n(&v->locked.remote_bytes, 0, __ATOMIC_RELAXED);
}

void vc_remote_flush_locked(uint32_t idx)
{
	if (buffers == NULL)
		return;
	struct vc_remote_buffer *b = &buffers[idx];
	/* Never-used buffers are never touched (their page may not be mapped yet). */
	if (__atomic_load_n(&vc_g.vcpus[idx].populated, __ATOMIC_ACQUIRE) && b->count > 0)
		flush(&vc_g.vcpus[idx], b);
}

void vc_remote_free(unsigned c, void *p, unsigned node)
{
	int saved = errno;
	struct vc_rseq_abi *rs = vc_rseq_area();
	uint32_t idx = rs ? vc_rseq_read_index(rs, VC_RSEQ_INDEX_MM_CID) : UINT32_MAX;
	struct vc_vcpu *v = idx < vc_g.nvcpus ? &vc_g.vcpus[idx] : NULL;
	if (v == NULL || buffers == NULL || !vc_lock_try(&v->lock)) {
		vc_central_insert(c, &p, 1);
		errno = saved;
		return;
	}
	if (!__atomic_load_n(&v->populated, __ATOMIC_ACQUIRE)) {
		/* Not populated (drained): the buffer must stay empty. */
		vc_unlock(&v->lock);
		vc_cache_free_slow(c, p, node);
		errno = saved;
		return;
	}
	struct vc_remote_buffer *b = &buffers[idx];
	b->cls[b->count] = (uint8_t)c;
	b->objs[b->count] = p;
	LOCKED_ADD(v->locked.remote_bytes, vc_classes[c].size);
	if (++b->count == VC_REMOTE_BATCH)
		flush(v, b);
	vc_unlock(&v->lock);
	errno = saved;
}
