// tests/fuzz/fuzz_api.cc - libFuzzer harness: the input is a program of malloc API
// calls, run against vcmalloc and checked against a reference model.
//
// The binary links libvcmalloc.a, so vcmalloc serves every allocation of the process
// (libFuzzer's own included). Each input is decoded as a sequence of operations on
// SLOTS slots; a slot holds a live block and the model of it:
//   requested size, promised alignment, how it must be released (free family,
//   delete, delete[], aligned delete), and a seed: byte i of the block is
//   pattern(seed, i), written after every allocation and checked before every
//   release, after every realloc (the common prefix) and for all blocks at the end.
// Checks after each allocation: non-NULL (sizes stay far below any limit), the
// alignment promised by the call (16 for malloc-like calls), malloc_usable_size >=
// the request, calloc memory reads zero. Impossible requests (overflowing counts,
// sizes above PTRDIFF_MAX, invalid alignments) must fail with the documented errno
// and leave the model untouched. At the end of an input every block is checked and
// released; allocated_bytes must come back to its value at the start of the input
// (libFuzzer allocates only between inputs, on this same thread).
//
// A failed check prints what happened and aborts: libFuzzer saves the input as a
// crash artifact that replays the failure (run the binary with the file as argument).
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <malloc.h>
#include <new>

#include "vcmalloc.h"

extern "C" void free_sized(void *p, size_t n);
extern "C" void free_aligned_sized(void *p, size_t align, size_t n);

namespace
{

// The pattern loops are left out of coverage: their comparisons say nothing about
// the allocator and would only slow every execution down.
#define NO_COVERAGE __attribute__((no_sanitize("coverage")))

constexpr unsigned SLOTS = 48;
constexpr size_t LIVE_LIMIT = 96u << 20; // bytes the model may hold at once

enum class Release : uint8_t { FREE, DELETE, DELETE_ARRAY, DELETE_ALIGNED };

struct Block {
	unsigned char *p;
	size_t size;  // bytes requested (the model's view)
	size_t align; // alignment promised by the call that made it
	uint64_t seed;
	Release release;
};

Block slots[SLOTS];
size_t live_bytes;
uint64_t seed_counter;
unsigned long long ops_done;

[[noreturn]] void fail(const char *what, const Block *b, size_t detail)
{
	std::fprintf(stderr,
		     "fuzz_api: FAIL after %llu operations: %s (block %p, size %zu, align %zu, "
		     "detail %zu)\n",
		     ops_done, what, b ? (void *)b->p : nullptr, b ? b->size : 0, b ? b->align : 0,
		     detail);
	std::abort();
}

// Input reader: missing bytes read as zero, so every input is a valid program.
struct Reader {
	const uint8_t *d;
	size_t n, pos;
	uint8_t u8()
	{
		return pos < n ? d[pos++] : 0;
	}
	uint32_t u16()
	{
		return u8() | (uint32_t)u8() << 8;
	}
	uint32_t u24()
	{
		return u16() | (uint32_t)u8() << 16;
	}
	bool more() const
	{
		return pos < n;
	}
};

// Sizes over every regime: tiny and small classes, medium classes up to 256 KiB
// (log-uniform), large spans up to 1 MiB and huge mappings up to 5 MiB (rarer: they
// cost page faults), exact class edges often.
size_t read_size(Reader &r)
{
	uint8_t k = r.u8();
	switch (k >> 5) {
	case 0:
		return k & 31; // 0..31
	case 1:
	case 2:
		return r.u16() & 1023; // small
	case 3: {
		// a power of two or a neighbour of one: class edges
		unsigned sh = r.u8() % 23;
		size_t s = (size_t)1 << sh;
		int d = (int)(k & 7) - 3;
		return (size_t)((long)s + d < 0 ? 0 : (long)s + d);
	}
	case 4:
	case 5: {
		unsigned sh = 10 + r.u8() % 9; // 1 KiB .. 256 KiB
		return r.u24() % (((size_t)1 << sh) + 1);
	}
	case 6:
		if ((k & 7) == 0)
			return r.u24() % ((1u << 20) + 1) + 1; // large spans
		return r.u16() % 4097;
	default:
		if ((k & 7) == 0)
			return (1u << 20) + (r.u24() % (4u << 20)); // huge
		return r.u24() % ((256u << 10) + 1);
	}
}

size_t read_align(Reader &r)
{
	uint8_t k = r.u8();
	return (size_t)1 << (k % 20); // 1 .. 512 KiB
}

NO_COVERAGE inline uint64_t mix(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x7fb5d329728ea185ull;
	x ^= x >> 27;
	x *= 0x81dadef4bc2dd44dull;
	return x ^ (x >> 33);
}

// The pattern: byte i of a block is byte (i % 8) of mix(seed + i / 8). Blocks are
// patterned on their checked positions only, the same for every block: every byte
// below DENSE, the 8-byte word at each multiple of STRIDE above it, and the last
// TAIL bytes. So a realloc's kept prefix is checked on the positions both sizes
// share, and a 5 MiB block costs ~20 KiB of writes instead of 5 MiB.
constexpr size_t DENSE = 64u << 10, STRIDE = 512, TAIL = 4096;

NO_COVERAGE __attribute__((noinline)) void fill_range(unsigned char *p, size_t a, size_t b,
						      uint64_t seed)
{
	size_t i = a;
	for (; i < b && i % 8; i++)
		p[i] = (unsigned char)(mix(seed + i / 8) >> (8 * (i % 8)));
	for (; i + 8 <= b; i += 8) {
		uint64_t v = mix(seed + i / 8);
		std::memcpy(p + i, &v, 8);
	}
	for (; i < b; i++)
		p[i] = (unsigned char)(mix(seed + i / 8) >> (8 * (i % 8)));
}

// First byte of [a, b) that differs from the pattern, or SIZE_MAX.
NO_COVERAGE __attribute__((noinline)) size_t verify_range(const unsigned char *p, size_t a,
							  size_t b, uint64_t seed)
{
	for (size_t i = a; i < b; i++) {
		if (i % 8 == 0 && i + 8 <= b) {
			uint64_t v = mix(seed + i / 8), have;
			std::memcpy(&have, p + i, 8);
			if (have == v) {
				i += 7;
				continue;
			}
		}
		if (p[i] != (unsigned char)(mix(seed + i / 8) >> (8 * (i % 8))))
			return i;
	}
	return SIZE_MAX;
}

void fill(unsigned char *p, size_t n, uint64_t seed)
{
	fill_range(p, 0, n < DENSE ? n : DENSE, seed);
	for (size_t off = DENSE; off + 8 <= n; off += STRIDE)
		fill_range(p, off, off + 8, seed);
	if (n > DENSE)
		fill_range(p, n - TAIL > DENSE ? n - TAIL : DENSE, n, seed);
}

// First damaged checked position of a block of n bytes (the tail window only when
// `tail`: a realloc prefix does not have the old block's tail), or SIZE_MAX.
size_t verify(const unsigned char *p, size_t n, uint64_t seed, bool tail = true)
{
	size_t bad = verify_range(p, 0, n < DENSE ? n : DENSE, seed);
	for (size_t off = DENSE; bad == SIZE_MAX && off + 8 <= n; off += STRIDE)
		bad = verify_range(p, off, off + 8, seed);
	if (bad == SIZE_MAX && tail && n > DENSE)
		bad = verify_range(p, n - TAIL > DENSE ? n - TAIL : DENSE, n, seed);
	return bad;
}

// First non-zero checked position of a block of n bytes, or SIZE_MAX.
NO_COVERAGE __attribute__((noinline)) size_t nonzero_range(const unsigned char *p, size_t a,
							   size_t b)
{
	for (size_t i = a; i < b; i++)
		if (p[i])
			return i;
	return SIZE_MAX;
}

size_t first_nonzero(const unsigned char *p, size_t n)
{
	size_t bad = nonzero_range(p, 0, n < DENSE ? n : DENSE);
	for (size_t off = DENSE; bad == SIZE_MAX && off + 8 <= n; off += STRIDE)
		bad = nonzero_range(p, off, off + 8);
	if (bad == SIZE_MAX && n > DENSE)
		bad = nonzero_range(p, n - TAIL > DENSE ? n - TAIL : DENSE, n);
	return bad;
}

void check_contents(const Block &b, const char *when)
{
	size_t bad = verify(b.p, b.size, b.seed);
	if (bad != SIZE_MAX)
		fail(when, &b, bad);
}

// A new block p of `size` bytes promised `align`: check it, record it, fill it.
void adopt(Block &slot, void *p, size_t size, size_t align, Release rel, bool zeroed)
{
	Block b{static_cast<unsigned char *>(p), size, align, 0, rel};
	if (!p)
		fail("allocation returned NULL", &b, size);
	size_t need = align < 16 ? 16 : align;
	if ((uintptr_t)p % need)
		fail("block is misaligned", &b, (uintptr_t)p % need);
	size_t usable = malloc_usable_size(p);
	if (usable < size)
		fail("malloc_usable_size is below the request", &b, usable);
	if (zeroed) {
		size_t i = first_nonzero(b.p, size);
		if (i != SIZE_MAX)
			fail("calloc memory is not zero", &b, i);
	}
	b.seed = mix(++seed_counter);
	fill(b.p, size, b.seed);
	slot = b;
	live_bytes += size;
}

void release(Block &b, Reader &r)
{
	check_contents(b, "contents changed while the block was live");
	live_bytes -= b.size;
	switch (b.release) {
	case Release::FREE:
		switch (r.u8() % 4) {
		case 0:
			free_sized(b.p, b.size);
			break;
		case 1:
			if (b.align > 16)
				free_aligned_sized(b.p, b.align, b.size);
			else
				std::free(b.p);
			break;
		default:
			std::free(b.p);
		}
		break;
	case Release::DELETE:
		if (r.u8() & 1)
			::operator delete(b.p, b.size);
		else
			::operator delete(b.p);
		break;
	case Release::DELETE_ARRAY:
		if (r.u8() & 1)
			::operator delete[](b.p, b.size);
		else
			::operator delete[](b.p);
		break;
	case Release::DELETE_ALIGNED:
		if (r.u8() & 1)
			::operator delete(b.p, b.size, std::align_val_t(b.align));
		else
			::operator delete(b.p, std::align_val_t(b.align));
		break;
	}
	b = Block{};
}

// realloc / reallocarray of slot s to n bytes (n > 0): prefix kept, model updated.
void resize(Block &b, size_t n, void *q)
{
	if (!q)
		fail("realloc returned NULL", &b, n);
	Block moved = b;
	moved.p = static_cast<unsigned char *>(q);
	size_t keep = b.size < n ? b.size : n;
	size_t bad = verify(moved.p, keep, b.seed, false);
	if (bad != SIZE_MAX)
		fail("realloc lost the contents", &moved, bad);
	live_bytes -= b.size;
	b.p = nullptr;
	adopt(b, q, n, 16, Release::FREE, false);
}

bool fits(size_t n)
{
	return live_bytes + n <= LIVE_LIMIT;
}

void expect_failure(void *p, const char *what, int want_errno)
{
	if (p) {
		Block b{static_cast<unsigned char *>(p), 0, 0, 0, Release::FREE};
		fail(what, &b, 0);
	}
	if (errno != want_errno)
		fail(what, nullptr, (size_t)errno);
}

void step(Reader &r)
{
	uint8_t op = r.u8();
	Block &b = slots[r.u8() % SLOTS];
	ops_done++;
	const unsigned kind = op % 24;
	const bool makes_new_block = kind <= 13 && kind != 2 && kind != 3 && kind != 10;
	if (b.p && makes_new_block)
		release(b, r); // the slot's old block goes first
	switch (kind) {
	case 0: {
		size_t n = read_size(r);
		if (fits(n))
			adopt(b, std::malloc(n), n, 16, Release::FREE, false);
		break;
	}
	case 1: {
		size_t n = read_size(r), m = 1 + r.u8() % 16;
		size_t count = n / m;
		if (fits(count * m))
			adopt(b, std::calloc(count, m), count * m, 16, Release::FREE, true);
		break;
	}
	case 2: { // realloc (of NULL when the slot is empty; to 0 frees)
		size_t n = read_size(r);
		if (!fits(n))
			break;
		if (!b.p) {
			adopt(b, std::realloc(nullptr, n), n, 16, Release::FREE, false);
		} else if (b.release != Release::FREE) {
			release(b, r);
		} else if (n == 0) {
			check_contents(b, "contents changed before realloc(p, 0)");
			live_bytes -= b.size;
			void *q = std::realloc(b.p, 0); // frees, like glibc
			if (q)
				fail("realloc(p, 0) returned a block", &b, 0);
			b = Block{};
		} else {
			check_contents(b, "contents changed before realloc");
			resize(b, n, std::realloc(b.p, n));
		}
		break;
	}
	case 3: { // reallocarray
		size_t m = 1 + r.u8() % 32, n = read_size(r) / m;
		if (!fits(n * m) || (b.p && b.release != Release::FREE))
			break;
		if (!b.p) {
			if (n)
				adopt(b, reallocarray(nullptr, n, m), n * m, 16, Release::FREE,
				      false);
		} else if (n) {
			check_contents(b, "contents changed before reallocarray");
			resize(b, n * m, reallocarray(b.p, n, m));
		}
		break;
	}
	case 4: {
		size_t a = read_align(r), n = read_size(r);
		if (a < sizeof(void *))
			a = sizeof(void *);
		void *p = reinterpret_cast<void *>(0x1);
		if (!fits(n))
			break;
		int e = posix_memalign(&p, a, n);
		if (e != 0)
			fail("posix_memalign failed", nullptr, (size_t)e);
		adopt(b, p, n, a, Release::FREE, false);
		break;
	}
	case 5: {
		size_t a = read_align(r), n = read_size(r);
		if (fits(n))
			adopt(b, aligned_alloc(a, n), n, a, Release::FREE, false);
		break;
	}
	case 6: {
		size_t a = read_align(r), n = read_size(r);
		if (fits(n))
			adopt(b, memalign(a, n), n, a, Release::FREE, false);
		break;
	}
	case 7: {
		size_t n = read_size(r);
		if (fits(n))
			adopt(b, valloc(n), n, 4096, Release::FREE, false);
		break;
	}
	case 8: {
		size_t n = read_size(r);
		size_t rounded = (n + 4095) & ~(size_t)4095;
		if (fits(rounded + 4096)) {
			void *p = pvalloc(n);
			// pvalloc rounds the request up to whole pages (one page for 0)
			adopt(b, p, rounded ? rounded : 4096, 4096, Release::FREE, false);
		}
		break;
	}
	case 9: {
		size_t n = read_size(r);
		if (fits(n))
			adopt(b, ::operator new(n), n, 16, Release::DELETE, false);
		break;
	}
	case 10: // free / delete of whatever is there
		if (b.p)
			release(b, r);
		break;
	case 11: {
		size_t n = read_size(r);
		if (fits(n))
			adopt(b, ::operator new[](n), n, 16, Release::DELETE_ARRAY, false);
		break;
	}
	case 12: {
		size_t a = read_align(r), n = read_size(r);
		if (fits(n))
			adopt(b, ::operator new(n, std::align_val_t(a)), n, a,
			      Release::DELETE_ALIGNED, false);
		break;
	}
	case 13: {
		size_t n = read_size(r);
		if (fits(n))
			adopt(b, ::operator new(n, std::nothrow), n, 16, Release::DELETE, false);
		break;
	}
	case 14: { // impossible requests fail cleanly and change nothing
		errno = 0;
		size_t big = (size_t)PTRDIFF_MAX + 1 + r.u16();
		switch (r.u8() % 6) {
		case 0:
			expect_failure(std::malloc(big), "malloc(> PTRDIFF_MAX)", ENOMEM);
			break;
		case 1:
			expect_failure(std::calloc((size_t)1 << 33, (size_t)1 << 33),
				       "calloc overflow", ENOMEM);
			break;
		case 2:
			expect_failure(reallocarray(nullptr, (size_t)1 << 40, (size_t)1 << 30),
				       "reallocarray overflow", ENOMEM);
			break;
		case 3:
			expect_failure(aligned_alloc(24 + 16 * (r.u8() % 4), 64),
				       "aligned_alloc with a non-power-of-two alignment", EINVAL);
			break;
		case 4: {
			void *p = reinterpret_cast<void *>(0x1);
			int e = posix_memalign(&p, 3 + r.u8() % 4, 64);
			if (e != EINVAL || p != reinterpret_cast<void *>(0x1))
				fail("posix_memalign with a bad alignment", nullptr, (size_t)e);
			break;
		}
		default:
			if (b.p && b.release == Release::FREE) {
				check_contents(b, "contents changed before a failed realloc");
				expect_failure(std::realloc(b.p, big), "realloc(> PTRDIFF_MAX)",
					       ENOMEM);
				check_contents(b, "failed realloc damaged the block");
			}
		}
		break;
	}
	case 15: // usable size and the contents of a live block
		if (b.p) {
			if (malloc_usable_size(b.p) < b.size)
				fail("malloc_usable_size shrank", &b, malloc_usable_size(b.p));
			check_contents(b, "contents changed while the block was live");
		}
		break;
	case 16: // rewrite a live block, including its first 16 bytes (the free tag word)
		if (b.p) {
			check_contents(b, "contents changed while the block was live");
			b.seed = mix(++seed_counter);
			fill(b.p, b.size, b.seed);
		}
		break;
	case 17: // drain the caches while blocks are live
		if ((r.u8() & 7) == 0)
			vcmalloc_reclaim(r.u8() & 1);
		break;
	case 18:
		if ((r.u8() & 15) == 0)
			vcmalloc_release_free_memory();
		break;
	default: { // plain small malloc: the common case, weighted up
		size_t n = r.u8() * (size_t)(1 + (op & 3));
		if (b.p)
			release(b, r);
		adopt(b, std::malloc(n), n, 16, Release::FREE, false);
	}
	}
}

uint64_t allocated_now()
{
	struct vcmalloc_stats s;
	std::memset(&s, 0, sizeof(s));
	vcmalloc_stats(&s);
	return s.allocated_bytes;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint64_t start = allocated_now();
	Reader r{data, size, 0};
	while (r.more())
		step(r);
	for (Block &b : slots) {
		if (b.p) {
			check_contents(b, "contents changed (final check)");
			release(b, r);
		}
	}
	if (live_bytes != 0)
		fail("model accounting", nullptr, live_bytes);
	const uint64_t end = allocated_now();
	if (end != start) {
		std::fprintf(stderr, "fuzz_api: allocated_bytes %llu at start, %llu at end\n",
			     (unsigned long long)start, (unsigned long long)end);
		fail("allocated_bytes did not return to its value at the start of the input",
		     nullptr, (size_t)(end > start ? end - start : start - end));
	}
	return 0;
}
