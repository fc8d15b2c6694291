/* jemalloc_api: jemalloc's non-standard allocation API served by vcmalloc.
 * Built against <jemalloc/jemalloc.h> (so the prototypes are jemalloc's); run
 * linked with libvcmalloc alone, and linked with libjemalloc with vcmalloc
 * preloaded, where every call must reach vcmalloc:
 *   - nallocx(n, flags) equals sallocx and malloc_usable_size of mallocx(n, flags)
 *     for sizes across all classes and alignments (above 1 MiB: equal on a fresh
 *     mapping, at most the usable size when a cached mapping serves it);
 *   - MALLOCX_ALIGN / MALLOCX_LG_ALIGN give aligned blocks, MALLOCX_ZERO zeroed ones;
 *     tcache and arena flags are accepted;
 *   - rallocx keeps the contents, honours alignment, zeroes from the old real size
 *     with MALLOCX_ZERO; xallocx never moves, grows a large block in place when the
 *     pages after it are free, and returns the old real size when it cannot grow;
 *   - sdallocx with any size between the request and the real size; dallocx;
 *   - the blocks are vcmalloc's: vcmalloc_stats' allocated bytes rise by a mallocx
 *     of 8 MiB and fall back after dallocx. */
#include <jemalloc/jemalloc.h>
#include <stdint.h>
#include <string.h>

#include "vctest.h"

static bool all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static void check_sizes(void)
{
	static const size_t aligns[] = {0, 16, 32, 64, 256, 4096, 8192, 65536, (size_t)1 << 22};
	for (size_t ai = 0; ai < sizeof aligns / sizeof aligns[0]; ai++) {
		int flags = aligns[ai] ? MALLOCX_ALIGN(aligns[ai]) : 0;
		for (size_t n = 1; n <= ((size_t)3 << 20); n = n < 64 ? n + 1 : n + n / 7 + 1) {
			vct_vcmalloc()->release_free_memory(); /* huge blocks map afresh */
			size_t want = nallocx(n, flags);
			void *p = mallocx(n, flags);
			VCT_CHECK(p != NULL, "mallocx(%zu, align %zu)", n, aligns[ai]);
			if (aligns[ai])
				VCT_CHECK((uintptr_t)p % aligns[ai] == 0, "%p align %zu", p,
					  aligns[ai]);
			size_t real = sallocx(p, 0);
			VCT_CHECK(real == malloc_usable_size(p), "sallocx %zu", real);
			VCT_CHECK(want == real, "nallocx(%zu, align %zu) = %zu, real size %zu", n,
				  aligns[ai], want, real);
			VCT_CHECK(real >= n, "real %zu < %zu", real, n);
			memset(p, 0xa5, real);
			sdallocx(p, n, flags);
		}
	}
	/* Served by a cached mapping, a huge block may be larger than nallocx says. */
	void *a = mallocx(5 << 20, 0);
	dallocx(a, 0);
	void *b = mallocx((3 << 20) + 1, 0);
	VCT_CHECK(nallocx((3 << 20) + 1, 0) <= sallocx(b, 0), "cached huge");
	dallocx(b, 0);
	size_t impossible = vct_launder_size(SIZE_MAX / 2 + 1);
	VCT_CHECK(nallocx(impossible, 0) == 0, "nallocx of an impossible size");
	VCT_CHECK(mallocx(impossible, 0) == NULL, "mallocx of an impossible size");
}

static void check_zero(void)
{
	static const size_t sizes[] = {1, 24, 1000, 5000, 70000, 300000, 900000, 2 << 20};
	for (int round = 0; round < 3; round++) {
		for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
			/* Dirty blocks of the size first, so zeroing has work to do. */
			void *d = mallocx(sizes[i], 0);
			memset(d, 0xff, sallocx(d, 0));
			dallocx(d, 0);
			int flags = MALLOCX_ZERO | MALLOCX_TCACHE_NONE | MALLOCX_ARENA(0) |
				    (round == 2 ? MALLOCX_LG_ALIGN(6) : 0);
			unsigned char *p = mallocx(sizes[i], flags);
			VCT_CHECK(p && all_zero(p, sallocx(p, 0)), "MALLOCX_ZERO %zu", sizes[i]);
			dallocx(p, MALLOCX_TCACHE_NONE);
		}
	}
}

static void check_rallocx(void)
{
	uint64_t seed = 7;
	size_t n = 10;
	unsigned char *p = mallocx(n, 0);
	vct_fill(p, n, seed);
	while (n < ((size_t)4 << 20)) {
		size_t old_real = sallocx(p, 0);
		memset(p + n, 0xee, old_real - n); /* past the kept bytes: must survive */
		size_t next = n * 3 + 5;
		unsigned char *q = rallocx(p, next, MALLOCX_ZERO);
		VCT_CHECK(q != NULL, "rallocx to %zu", next);
		VCT_CHECK(vct_verify(q, n, seed) == (size_t)-1, "contents kept growing to %zu", next);
		size_t real = sallocx(q, 0);
		VCT_CHECK(real >= next, "real %zu", real);
		for (size_t i = n; i < old_real; i++)
			VCT_CHECK(q[i] == 0xee, "byte %zu below the old real size changed", i);
		VCT_CHECK(all_zero(q + old_real, real - old_real), "zeroed from %zu", old_real);
		vct_fill(q, next, ++seed);
		p = q;
		n = next;
	}
	/* Shrinking keeps the prefix; an aligned rallocx moves to an aligned block. */
	unsigned char *s = rallocx(p, 100, 0);
	VCT_CHECK(s && vct_verify(s, 100, seed) == (size_t)-1, "shrink");
	unsigned char *al = rallocx(s, 3000, MALLOCX_ALIGN(4096));
	VCT_CHECK(al && (uintptr_t)al % 4096 == 0, "aligned rallocx");
	VCT_CHECK(vct_verify(al, 100, seed) == (size_t)-1, "aligned rallocx keeps contents");
	dallocx(al, 0);
}

static void check_xallocx(void)
{
	/* A small block stays in its class. */
	void *s = mallocx(100, 0);
	size_t real = sallocx(s, 0);
	VCT_CHECK(xallocx(s, real + 1, 0, 0) == real, "small block cannot grow");
	VCT_CHECK(xallocx(s, 10, 0, 0) == real, "nor shrink");
	dallocx(s, 0);

	/* A large block grows over the free pages after it: a 300 KiB block taken
	 * where a 900 KiB one was just freed usually has them. Where it has not, the
	 * real size stays as it was; a few tries find a block that can grow. */
	vct_vcmalloc()->release_free_memory();
	void *kept[16];
	int nkept = 0;
	bool grew = false;
	while (!grew && nkept < 16) {
		dallocx(mallocx(900 << 10, 0), 0);
		unsigned char *l = mallocx(300 << 10, 0);
		size_t before = sallocx(l, 0);
		vct_fill(l, before, 3);
		size_t after = xallocx(l, 400 << 10, 100 << 10, MALLOCX_ZERO);
		VCT_CHECK(after == sallocx(l, 0), "xallocx returns the real size");
		VCT_CHECK(vct_verify(l, before, 3) == (size_t)-1, "xallocx keeps the contents");
		VCT_CHECK(after == before || after >= (400 << 10), "grown %zu -> %zu", before,
			  after);
		VCT_CHECK(all_zero(l + before, after - before), "MALLOCX_ZERO on growth");
		if (after > before) {
			grew = true;
			/* extra beyond what a large block holds: still at least size. */
			size_t most = xallocx(l, 600 << 10, SIZE_MAX / 4, 0);
			VCT_CHECK(most == sallocx(l, 0) && (most == after || most >= (600 << 10)),
				  "xallocx with a huge extra: %zu", most);
		}
		kept[nkept++] = l;
	}
	VCT_CHECK(grew, "no large block grew in place in %d tries", nkept);
	while (nkept > 0)
		dallocx(kept[--nkept], 0);

	/* A huge block grows where the address space after it is free; if not, it
	 * reports its unchanged size. */
	unsigned char *h = mallocx(2 << 20, 0);
	size_t hb = sallocx(h, 0);
	size_t ha = xallocx(h, 6 << 20, 0, 0);
	VCT_CHECK(ha == hb || ha >= (6 << 20), "huge xallocx: %zu -> %zu", hb, ha);
	VCT_CHECK(ha == sallocx(h, 0), "huge real size");
	memset(h, 1, ha);
	dallocx(h, 0);
}

static void check_owner(void)
{
	struct vcmalloc_stats a, b, c;
	vct_stats(&a);
	void *p = mallocx(8 << 20, MALLOCX_ZERO);
	vct_stats(&b);
	VCT_CHECK(b.allocated_bytes >= a.allocated_bytes + (8 << 20),
		  "mallocx is vcmalloc's: allocated %llu -> %llu",
		  (unsigned long long)a.allocated_bytes, (unsigned long long)b.allocated_bytes);
	dallocx(p, 0);
	vct_stats(&c);
	VCT_CHECK(c.allocated_bytes + (8 << 20) <= b.allocated_bytes, "dallocx is vcmalloc's");
}

int main(void)
{
	vct_start("jemalloc_api", 120);
	VCT_CHECK(vct_under_vcmalloc(), "vcmalloc must serve this process");
	check_sizes();
	check_zero();
	check_rallocx();
	check_xallocx();
	check_owner();
	printf("jemalloc_api: ok\n");
	return 0;
}
