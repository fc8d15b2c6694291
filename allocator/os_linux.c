/* allocator/os_linux.c - Linux implementation of os.h: mmap, madvise, mbind,
 * clocks, randomness, environment and stderr, all without allocating. */
#include "os.h"
#if VC_TEST_HOOKS
#include "internal.h" /* vc_test_hooks */
#endif

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define VC_OS_NODEMASK_WORDS 2

void *vc_os_reserve(size_t size)
{
	int saved = errno;
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	errno = saved;
	return p == MAP_FAILED ? NULL : p;
}

void *vc_os_map_aligned(size_t size, size_t align)
{
	int saved = errno;
	if (size + align < size)
		return NULL;
	/* Map with slack, then trim both ends so the result is aligned. */
	size_t len = size + align;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		errno = saved;
		return NULL;
	}
	char *a = (char *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	size_t tail = (size_t)((p + len) - (a + size));
	if (tail)
		munmap(a + size, tail);
	errno = saved;
	return a;
}

uint64_t vc_os_release_calls;
uint64_t vc_os_release_ns;

uint64_t vc_os_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void count_release(uint64_t start)
{
	__atomic_add_fetch(&vc_os_release_calls, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&vc_os_release_ns, vc_os_now_ns() - start, __ATOMIC_RELAXED);
}

void vc_os_unmap(void *p, size_t size)
{
	int saved = errno;
	uint64_t start = vc_os_now_ns();
	munmap(p, size);
	count_release(start);
	errno = saved;
}

void vc_os_release(void *p, size_t size)
{
	int saved = errno;
	uint64_t start = vc_os_now_ns();
	madvise(p, size, MADV_DONTNEED);
	count_release(start);
	errno = saved;
}

void vc_os_no_huge_pages(void *p, size_t size)
{
	int saved = errno;
	madvise(p, size, MADV_NOHUGEPAGE);
	errno = saved;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
bool vc_os_populate(void *p, size_t size)
{
	/* Cleared on the first refusal of the call itself (EINVAL before Linux 5.14,
	 * EPERM or ENOSYS from a seccomp filter): no call after it. Other errors
	 * (ENOMEM, EFAULT) are this range's: the pages then fault in as before. */
	static bool supported = true;
	if (!__atomic_load_n(&supported, __ATOMIC_RELAXED))
		return false;
	int saved = errno;
	bool done = madvise(p, size, MADV_POPULATE_WRITE) == 0;
	if (!done && (errno == EINVAL || errno == EPERM || errno == ENOSYS))
		__atomic_store_n(&supported, false, __ATOMIC_RELAXED);
	errno = saved;
	return done;
}

void vc_os_guard(void *p, size_t size)
{
	int saved = errno;
	mprotect(p, size, PROT_NONE);
	errno = saved;
}

bool vc_os_resize_in_place(void *p, size_t old_size, size_t new_size)
{
	int saved = errno;
	void *r = mremap(p, old_size, new_size, 0);
	errno = saved;
	return r == p;
}

bool vc_os_move(void *from, size_t old_size, size_t new_size, void *to)
{
	int saved = errno;
	void *r = mremap(from, old_size, new_size, MREMAP_MAYMOVE | MREMAP_FIXED, to);
	errno = saved;
	return r == to;
}

bool vc_os_bind_node(void *p, size_t size, unsigned node)
{
	int saved = errno;
	unsigned long mask[VC_OS_NODEMASK_WORDS];
	memset(mask, 0, sizeof mask);
	if (node >= 64 * VC_OS_NODEMASK_WORDS)
		return false;
	mask[node / 64] = 1ul << (node % 64);
	/* MPOL_PREFERRED = 1: local placement, falls back to other nodes when full. */
	long r = syscall(SYS_mbind, p, size, 1, mask, 64 * VC_OS_NODEMASK_WORDS + 1, 0);
	errno = saved;
	return r == 0;
}

void vc_os_wait(uint32_t *word, uint32_t val, uint64_t timeout_ms)
{
	int saved = errno;
	struct timespec ts = {(time_t)(timeout_ms / 1000), (long)(timeout_ms % 1000) * 1000000L};
	syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, val, timeout_ms ? &ts : NULL, NULL, 0);
	errno = saved;
}

void vc_os_wake(uint32_t *word)
{
	int saved = errno;
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL, NULL, 0);
	errno = saved;
}

uint64_t vc_os_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	uint64_t ms = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
#if VC_TEST_HOOKS
	ms += __atomic_load_n(&vc_test_hooks.clock_offset_ms, __ATOMIC_RELAXED);
#endif
	return ms;
}

uint64_t vc_os_random(void)
{
	uint64_t r = 0;
	const unsigned char *at = (const unsigned char *)getauxval(AT_RANDOM);
	if (at)
		memcpy(&r, at + 8, sizeof r); /* bytes 0-7 feed glibc's stack guard */
	int saved = errno;
	uint64_t g;
	if (syscall(SYS_getrandom, &g, sizeof g, 0x1 /* GRND_NONBLOCK */) == sizeof g)
		r ^= g;
	errno = saved;
	r ^= (uint64_t)(uintptr_t)&r * 0x9e3779b97f4a7c15ull;
	return r | 1;
}

static bool match_entry(const char *entry, const char *name, char *buf, size_t bufsize)
{
	size_t n = strlen(name);
	if (strncmp(entry, name, n) != 0 || entry[n] != '=')
		return false;
	const char *v = entry + n + 1;
	size_t len = strlen(v);
	if (len >= bufsize)
		len = bufsize - 1;
	memcpy(buf, v, len);
	buf[len] = 0;
	return true;
}

bool vc_os_getenv(const char *name, char *buf, size_t bufsize)
{
	if (bufsize == 0)
		return false;
	if (environ) {
		for (char **e = environ; *e; e++)
			if (match_entry(*e, name, buf, bufsize))
				return true;
		return false;
	}
	/* Before libc set environ up: read our environment from /proc. */
	int saved = errno;
	int fd = open("/proc/self/environ", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		errno = saved;
		return false;
	}
	char entry[512];
	size_t have = 0;
	bool found = false, skipping = false;
	char chunk[1024];
	ssize_t n;
	while (!found && (n = read(fd, chunk, sizeof chunk)) > 0) {
		for (ssize_t i = 0; i < n && !found; i++) {
			char c = chunk[i];
			if (c == 0) {
				if (!skipping) {
					entry[have] = 0;
					found = match_entry(entry, name, buf, bufsize);
				}
				have = 0;
				skipping = false;
			} else if (!skipping) {
				if (have + 1 < sizeof entry)
					entry[have++] = c;
				else
					skipping = true;
			}
		}
	}
	close(fd);
	errno = saved;
	return found;
}

int vc_os_write(int fd, const char *s, size_t n)
{
	int saved = errno, err = 0;
	while (n > 0) {
		ssize_t w = write(fd, s, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			err = w < 0 ? errno : EIO;
			break;
		}
		s += w;
		n -= (size_t)w;
	}
	errno = saved;
	return err;
}

void vc_os_write_str(int fd, const char *s)
{
	(void)vc_os_write(fd, s, strlen(s));
}

size_t vc_os_fmt_u64(char *buf, uint64_t v)
{
	char tmp[24];
	size_t n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	buf[n] = 0;
	return n;
}

size_t vc_os_fmt_hex(char *buf, uint64_t v)
{
	static const char digits[] = "0123456789abcdef";
	char tmp[20];
	size_t n = 0;
	do {
		tmp[n++] = digits[v & 15];
		v >>= 4;
	} while (v);
	buf[0] = '0';
	buf[1] = 'x';
	for (size_t i = 0; i < n; i++)
		buf[2 + i] = tmp[n - 1 - i];
	buf[2 + n] = 0;
	return n + 2;
}

unsigned vc_os_numa_nodes(void)
{
	char buf[256];
	int saved = errno;
	int fd = open("/sys/devices/system/node/possible", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		errno = saved;
		return 1;
	}
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	errno = saved;
	if (n <= 0)
		return 1;
	buf[n] = 0;
	unsigned highest = 0, cur = 0;
	int have = 0;
	for (ssize_t i = 0; i <= n; i++) {
		if (buf[i] >= '0' && buf[i] <= '9') {
			cur = cur * 10 + (unsigned)(buf[i] - '0');
			have = 1;
		} else {
			if (have && cur > highest)
				highest = cur;
			cur = have = 0;
		}
	}
	return highest + 1;
}
