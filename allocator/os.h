/* allocator/os.h - the OS boundary. Nothing else in allocator/ includes <sys/mman.h>.
 * Every function preserves errno unless it says otherwise, and none allocates. */
#ifndef VC_OS_H
#define VC_OS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Reserve address space without committing memory (MAP_NORESERVE, readable and
 * writable; pages become resident when touched). NULL on failure. */
void *vc_os_reserve(size_t size);
/* Map size bytes aligned to align (a power of two >= 4 KiB). NULL on failure. */
void *vc_os_map_aligned(size_t size, size_t align);
void vc_os_unmap(void *p, size_t size);
/* Give pages back to the OS; they read as zero when touched again. */
void vc_os_release(void *p, size_t size);
/* Calls of vc_os_unmap and vc_os_release so far, and the nanoseconds spent in them
 * (monotonic clock). Each takes mappings away, which makes the kernel invalidate
 * the TLB entries of every CPU the process runs on: cheap on hardware, but costly
 * where CPUs are emulated (statistics: os_release_calls, os_release_ns). */
extern uint64_t vc_os_release_calls;
extern uint64_t vc_os_release_ns;
/* The monotonic clock in nanoseconds (what the counters above add up). */
uint64_t vc_os_now_ns(void);
/* Never back [p, p + size) with transparent huge pages (where THP is "always", a
 * first touch would otherwise make 2 MiB resident). */
void vc_os_no_huge_pages(void *p, size_t size);
/* Make the pages of [p, p + size) resident and writable now, in one call, instead of
 * one page fault per page at first touch (MADV_POPULATE_WRITE, Linux 5.14). False,
 * nothing done, where the kernel lacks it: the pages then fault in as they are
 * touched. */
bool vc_os_populate(void *p, size_t size);
/* Make [p, p + size) inaccessible (PROT_NONE): a guard page. */
void vc_os_guard(void *p, size_t size);
/* Grow or shrink a mapping where it is (mremap without MAYMOVE). */
bool vc_os_resize_in_place(void *p, size_t old_size, size_t new_size);
/* Move the mapping [from, from + old_size) to `to` and grow it there to new_size
 * (mremap MAYMOVE|FIXED: page tables move, nothing is copied; the grown part reads
 * as zero), replacing what is mapped at [to, to + new_size); [from, from + old_size)
 * is unmapped. One kernel mapping results, which can be grown or moved again. False
 * (nothing changed) when it fails, e.g. because the range spans more than one
 * kernel mapping. */
bool vc_os_move(void *from, size_t old_size, size_t new_size, void *to);
/* Bind [p, p+size) to a NUMA node (mbind MPOL_PREFERRED); false if unsupported. */
bool vc_os_bind_node(void *p, size_t size, unsigned node);

/* Sleep while *word == val, at most timeout_ms (0: no limit), or until vc_os_wake;
 * may return early (signals, spurious wake-ups). Process-private futex. */
void vc_os_wait(uint32_t *word, uint32_t val, uint64_t timeout_ms);
/* Wake every thread sleeping in vc_os_wait on word. */
void vc_os_wake(uint32_t *word);

/* Milliseconds of CLOCK_MONOTONIC_COARSE. */
uint64_t vc_os_now_ms(void);
/* 64 random bits from the auxiliary vector / getrandom. */
uint64_t vc_os_random(void);

/* Environment lookup without allocation: copies the value of name into buf
 * (NUL-terminated) and returns true when the variable is set. */
bool vc_os_getenv(const char *name, char *buf, size_t bufsize);

/* Writes without allocating: all n bytes, through short writes and EINTR. Returns 0,
 * or the errno value of the write that failed (errno itself is preserved). */
int vc_os_write(int fd, const char *s, size_t n);
void vc_os_write_str(int fd, const char *s);
/* Formatting into a caller buffer: unsigned decimal and 0x-hex. Return length. */
size_t vc_os_fmt_u64(char *buf, uint64_t v);
size_t vc_os_fmt_hex(char *buf, uint64_t v);

/* NUMA topology from /sys/devices/system/node: number of nodes (>= 1). */
unsigned vc_os_numa_nodes(void);

#endif
