/* tests/unit/fake_os.c - the OS layer (allocator/os.h) for white-box tests, linked in
 * place of allocator/os_linux.c: the link-time seam.
 *
 * Memory is real (segments are written), but the clock is a variable the test moves,
 * and every release, unmap and node binding is recorded, so that a test can assert
 * exactly what the allocator gave back to the OS and when. Single-threaded use only. */
#include "fake_os.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct fake_os fake_os;

static void record(enum fake_call kind, const void *p, size_t size, unsigned node)
{
	if (fake_os.before_call)
		fake_os.before_call(kind, (void *)p, size);
	if (fake_os.ncalls < FAKE_MAX_CALLS)
		fake_os.calls[fake_os.ncalls] = (struct fake_os_call){kind, (void *)p, size, node};
	fake_os.ncalls++;
}

size_t fake_os_bytes(enum fake_call kind, size_t from_call)
{
	size_t sum = 0;
	for (size_t i = from_call; i < fake_os.ncalls && i < FAKE_MAX_CALLS; i++)
		if (fake_os.calls[i].kind == kind)
			sum += fake_os.calls[i].size;
	return sum;
}

void *vc_os_reserve(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void *vc_os_map_aligned(size_t size, size_t align)
{
	if (fake_os.fail_maps) {
		fake_os.fail_maps--;
		return NULL;
	}
	char *p = mmap(NULL, size + align, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	char *aligned = (char *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
	if (aligned > p)
		munmap(p, (size_t)(aligned - p));
	if ((size_t)(aligned - p) < align)
		munmap(aligned + size, align - (size_t)(aligned - p));
	record(FAKE_MAP, aligned, size, 0);
	return aligned;
}

uint64_t vc_os_release_calls;
uint64_t vc_os_release_ns;

/* What os.h counts of a release, with the cost the test sets. */
static void count_release(void)
{
	vc_os_release_calls++;
	vc_os_release_ns += fake_os.release_cost_ns;
}

void vc_os_unmap(void *p, size_t size)
{
	record(FAKE_UNMAP, p, size, 0);
	count_release();
	munmap(p, size);
}

void vc_os_release(void *p, size_t size)
{
	record(FAKE_RELEASE, p, size, 0);
	count_release();
	madvise(p, size, MADV_DONTNEED);
}

void vc_os_no_huge_pages(void *p, size_t size)
{
	(void)p;
	(void)size;
}

bool vc_os_populate(void *p, size_t size)
{
	record(FAKE_POPULATE, p, size, 0);
	return true;
}

void vc_os_guard(void *p, size_t size)
{
	mprotect(p, size, PROT_NONE);
}

/* Real mremap, so that the memory behind a resized or moved mapping is what the
 * allocator expects; fail_resizes / fail_moves make the next calls fail (as when
 * the address space after a mapping is taken), for tests of the fallbacks. */
bool vc_os_resize_in_place(void *p, size_t old_size, size_t new_size)
{
	record(FAKE_RESIZE, p, new_size, 0);
	if (fake_os.fail_resizes) {
		fake_os.fail_resizes--;
		return false;
	}
	return mremap(p, old_size, new_size, 0) != MAP_FAILED;
}

bool vc_os_move(void *from, size_t old_size, size_t new_size, void *to)
{
	record(FAKE_MOVE, from, new_size, 0);
	if (fake_os.fail_moves) {
		fake_os.fail_moves--;
		return false;
	}
	return mremap(from, old_size, new_size, MREMAP_MAYMOVE | MREMAP_FIXED, to) != MAP_FAILED;
}

bool vc_os_bind_node(void *p, size_t size, unsigned node)
{
	record(FAKE_BIND, p, size, node);
	return true;
}

void vc_os_wait(uint32_t *word, uint32_t val, uint64_t timeout_ms)
{
	(void)word;
	(void)val;
	(void)timeout_ms;
}

void vc_os_wake(uint32_t *word)
{
	(void)word;
}

uint64_t vc_os_now_ms(void)
{
	return fake_os.now_ms;
}

uint64_t vc_os_random(void)
{
	return 0x9e3779b97f4a7c15ull;
}

bool vc_os_getenv(const char *name, char *buf, size_t bufsize)
{
	(void)name;
	(void)buf;
	(void)bufsize;
	return false;
}

int vc_os_write(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = write(fd, s, n);
		if (w <= 0)
			return 1;
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

void vc_os_write_str(int fd, const char *s)
{
	vc_os_write(fd, s, strlen(s));
}

size_t vc_os_fmt_u64(char *buf, uint64_t v)
{
	char tmp[24];
	size_t n = 0;
	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	for (size_t i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	return n;
}

size_t vc_os_fmt_hex(char *buf, uint64_t v)
{
	static const char digits[] = "0123456789abcdef";
	char tmp[16];
	size_t n = 0;
	do
		tmp[n++] = digits[v & 15];
	while ((v >>= 4) != 0);
	buf[0] = '0';
	buf[1] = 'x';
	for (size_t i = 0; i < n; i++)
		buf[2 + i] = tmp[n - 1 - i];
	return n + 2;
}

unsigned vc_os_numa_nodes(void)
{
	return fake_os.nodes ? fake_os.nodes : 1;
}
