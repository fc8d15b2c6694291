/* populate_faults: where vcmalloc itself is about to write pages that are not
 * resident, it populates them in one call (MADV_POPULATE_WRITE) instead of taking a
 * page fault on each. Page faults are counted by the kernel's software event
 * (perf_event_open) around the allocator calls only; the program writes nothing
 * there itself, so every fault counted is the allocator's.
 *
 *   carve    Carving writes the free tag of every object it hands a cache; for
 *            classes of at most an OS page that is every page of the span.
 *            4 MiB of 1000-byte blocks (class 1 024 B, a carve of 32 objects covers
 *            8 OS pages) from a process that has not used that class: 1 059 faults
 *            measured without the populate, 30 with it.
 *   realloc  realloc that moves a block copies it into the new one. 256 blocks of
 *            20 KiB, written whole, each grown to 30 KiB, in new spans: the copies
 *            write about 1 280 pages. 842 faults measured without the populate, 167
 *            with it: the carve of each new block writes its tag on its first page
 *            before the copy (one fault per block, which nothing saves), and the
 *            blocks' segment headers.
 *   huge     8 large blocks of 600 KiB, written whole, each grown to 1.5 MiB: huge
 *            blocks in new mappings, 1 200 pages copied. 1 057 faults measured
 *            without the populate, 7 with it.
 *
 * Each must stay under an eighth of the pages written (plus, for the small blocks'
 * realloc, one per block). Skipped (77) where the kernel has no MADV_POPULATE_WRITE
 * (before Linux 5.14) or perf events are not allowed. vcmalloc only. */
#include "vctest.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <malloc.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

enum {
	CARVE_BLOCK = 1000,
	CARVE_BYTES = 4 << 20,
	CARVE_BLOCKS = CARVE_BYTES / 1024,
	GROW_BLOCKS = 256,
	GROW_FROM = 20 << 10,
	GROW_TO = 30 << 10,
	HUGE_BLOCKS = 8,
	HUGE_FROM = 600 << 10,
	HUGE_TO = 1536 << 10,
};

static void *carved[CARVE_BLOCKS], *grown[GROW_BLOCKS], *huge[HUGE_BLOCKS];

static bool kernel_populates(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	VCT_CHECK(p != MAP_FAILED, "mmap: %s", strerror(errno));
	bool ok = madvise(p, 4096, MADV_POPULATE_WRITE) == 0;
	munmap(p, 4096);
	return ok;
}

static int counter = -1;

/* A counter of this thread's page faults, or -1. */
static int fault_counter(void)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_PAGE_FAULTS;
	a.disabled = 1;
	return (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
}

static void count_start(void)
{
	VCT_CHECK(ioctl(counter, PERF_EVENT_IOC_RESET, 0) == 0, "reset: %s", strerror(errno));
	VCT_CHECK(ioctl(counter, PERF_EVENT_IOC_ENABLE, 0) == 0, "enable: %s", strerror(errno));
}

static uint64_t count_stop(void)
{
	VCT_CHECK(ioctl(counter, PERF_EVENT_IOC_DISABLE, 0) == 0, "disable: %s", strerror(errno));
	uint64_t faults = 0;
	VCT_CHECK(read(counter, &faults, sizeof(faults)) == (ssize_t)sizeof(faults), "read: %s",
		  strerror(errno));
	return faults;
}

static void check_carve(void)
{
	count_start();
	for (int i = 0; i < CARVE_BLOCKS; i++)
		carved[i] = malloc(CARVE_BLOCK);
	uint64_t faults = count_stop();
	for (int i = 0; i < CARVE_BLOCKS; i++)
		VCT_CHECK(carved[i] != NULL, "malloc(%d) failed", CARVE_BLOCK);
	const unsigned pages = CARVE_BYTES / 4096;
	printf("populate_faults: carve: %u blocks of %zu B over %u pages: %llu page faults\n",
	       CARVE_BLOCKS, malloc_usable_size(carved[0]), pages, (unsigned long long)faults);
	VCT_CHECK(faults <= pages / 8, "%llu page faults while carving %u pages: more than %u",
		  (unsigned long long)faults, pages, pages / 8);
	/* Kept until the end: their pages, freed, would be resident pages for the
	 * realloc case's new spans. */
}

/* Allocate n blocks of `from` bytes, write them whole, grow each to `to` by realloc
 * (counting the page faults of those calls alone), check the contents moved with
 * them, free them. At most an eighth of the pages copied may fault, plus
 * per_block_faults for each block. */
static void check_moves(const char *name, void **blocks, int n, size_t from, size_t to,
			unsigned per_block_faults)
{
	for (int i = 0; i < n; i++) {
		blocks[i] = malloc(from);
		VCT_CHECK(blocks[i] != NULL, "malloc(%zu) failed", from);
		memset(blocks[i], 'a' + i % 26, malloc_usable_size(blocks[i]));
	}
	const size_t copied = malloc_usable_size(blocks[0]);
	count_start();
	for (int i = 0; i < n; i++)
		blocks[i] = realloc(blocks[i], to);
	uint64_t faults = count_stop();
	for (int i = 0; i < n; i++) {
		VCT_CHECK(blocks[i] != NULL, "realloc(%zu) failed", to);
		const unsigned char *b = blocks[i];
		for (size_t k = 0; k < copied; k += 512)
			VCT_CHECK(b[k] == 'a' + i % 26, "%s: block %d byte %zu: %d after realloc",
				  name, i, k, b[k]);
	}
	const unsigned pages = (unsigned)((size_t)n * ((copied + 4095) / 4096));
	printf("populate_faults: %s: %d blocks of %zu B moved to blocks of %zu B, copies "
	       "over about %u pages: %llu page faults\n",
	       name, n, copied, malloc_usable_size(blocks[0]), pages, (unsigned long long)faults);
	const unsigned most = (unsigned)n * per_block_faults + pages / 8;
	VCT_CHECK(faults <= most, "%s: %llu page faults in the copies of %u pages: more than %u",
		  name, (unsigned long long)faults, pages, most);
	for (int i = 0; i < n; i++)
		free(blocks[i]);
}

int main(void)
{
	vct_start("populate_faults", 60);
	if (!kernel_populates()) {
		printf("populate_faults: skipped: no MADV_POPULATE_WRITE in this kernel\n");
		return 77;
	}
	counter = fault_counter();
	if (counter < 0) {
		printf("populate_faults: skipped: perf_event_open: %s\n", strerror(errno));
		return 77;
	}
	check_carve();
	/* Carving the new small blocks writes each one's tag, on its first page: a fault
	 * per block that no populate saves (the rest of a block larger than an OS page
	 * is the program's to touch, or not). */
	check_moves("realloc", grown, GROW_BLOCKS, GROW_FROM, GROW_TO, 1);
	check_moves("realloc to huge", huge, HUGE_BLOCKS, HUGE_FROM, HUGE_TO, 0);
	close(counter);
	for (int i = 0; i < CARVE_BLOCKS; i++)
		free(carved[i]);
	printf("populate_faults: ok\n");
	return 0;
}
