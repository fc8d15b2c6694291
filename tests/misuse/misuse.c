/* misuse: one deliberate misuse of the malloc API per run, named by argv[1].
 *
 * Each case first does some ordinary work (so the allocator is initialised and its
 * caches are warm), prints "misuse: committing <case>" on stderr, commits the misuse,
 * and, if it survives, says so and exits with status 0. It is run through
 * expect_abort, which requires vcmalloc to report the misuse on stderr and abort().
 *
 * Double frees:
 *   double-free-small      free(p); free(p) at once (64 B block)
 *   double-free-large      the same with a 64 KiB block
 *   double-free-huge       the same with an 8 MiB block (its own mapping)
 *   double-free-huge-reused
 *                          an 8 MiB block freed, allocated again (its mapping comes
 *                          back from the cache of freed huge blocks), freed, freed
 *   double-free-delayed    free(p), then 20000 allocations and frees of other size
 *                          classes (p's class is left alone so p cannot be reused),
 *                          then free(p)
 *   double-free-thread     free(p) in a second thread, joined, then free(p) in main
 *   double-free-sized      free(p); free_sized(p, n)
 *   realloc-freed          free(p); realloc(p, 100)
 * Invalid pointers:
 *   invalid-stack          free of a local variable's address
 *   invalid-static         free of a static variable's address
 *   invalid-interior       free(malloc(64) + 8)
 *   invalid-interior-large free(malloc(256 KiB) + 4096)
 *   invalid-unaligned      free(malloc(64) + 3)
 *   invalid-past-end       free(&a[n]) where a is the last 48 B object of its span:
 *                          a whole number of objects from the span start, but past
 *                          its last object (vcmalloc's spans of 48 B objects are one
 *                          8 KiB page holding 170 objects and a 32-byte tail)
 *   invalid-interior-huge  free(malloc(8 MiB) + 64 KiB)
 *   invalid-huge-near      free(p + malloc_usable_size(p)), p a 2 MiB block: the
 *                          first byte past the block
 *   invalid-huge-remainder free(p + 3 MiB), p a 2 MiB block: in the 4 MiB unit the
 *                          block starts in, past its mapping (nothing mapped there)
 *   invalid-huge-foreign   free of a private mapping placed past a 2 MiB block, in
 *                          the rest of the block's unit (where the kernel may put
 *                          other mappings)
 *   invalid-huge-foreign-freed
 *                          the same after the block was freed (its unit remembers
 *                          the freed block), 16 bytes into the mapping
 *   invalid-huge-far       free(p + 1 GiB), p a 2 MiB block
 *   invalid-foreign-mmap   free of a block of a private mapping, with the header
 *                          words a glibc mmapped chunk has (size, IS_MMAPPED)
 *   invalid-libc-malloc    free of a block from the C library's own allocator
 *                          (__libc_malloc), obtained without the malloc in use
 *   invalid-neighbour-cached
 *                          free of the 48 B object next to a fresh 48 B block: it
 *                          was carved from its span with the block (it sits in a
 *                          cache) but never handed out
 *   invalid-neighbour-uncarved
 *                          free of the last 48 B object of a fresh block's span: an
 *                          object start that no cache has seen yet
 * Double frees across the layers:
 *   double-free-remote     a 48 B block allocated by a thread on CPU 1 that keeps
 *                          running, freed twice by main on CPU 0 (the first free
 *                          goes to the remote-free buffer)
 *   double-free-reused-thread
 *                          free(p) in main; a second thread allocates blocks of
 *                          p's size until it gets p, frees them; then free(p).
 *                          Both threads stay on main's CPU: p goes back to its own
 *                          node's lists, which a thread on another node never uses
 *   double-free-drained    free(p); every vCPU cache drained (vcmalloc_reclaim(1):
 *                          p moves to a central list); free(p)
 *   double-free-released   as double-free-drained, then the central lists flushed
 *                          back to their spans (vcmalloc_release_free_memory); a
 *                          neighbour stays live so that p's span stays in use
 * realloc and malloc_usable_size:
 *   realloc-invalid        realloc of a local variable's address
 *   usable-size-freed      malloc_usable_size of a freed 64 B block
 *   usable-size-invalid    malloc_usable_size of a static variable's address
 * Use after free:
 *   use-after-free-write   a 48 B block freed, flushed to its span's free list (as
 *                          double-free-released), then overwritten; then blocks of
 *                          its size are allocated until the span's free list is used
 * Sizes:
 *   size-mismatch          free_sized(malloc(64), 4096): a size larger than the block
 *   size-mismatch-smaller  free_sized(malloc(4096), 64): a size of a smaller class
 * Heap metadata:
 *   metadata-underflow     a byte written just before the first block of a segment
 *                          (where vcmalloc keeps a guard page before the object
 *                          area: expected outcome SIGSEGV)
 *
 * A case that cannot set up its situation under the malloc in use (e.g. another
 * allocator never hands the freed block to the second thread) says so and exits
 * with status 3.
 */
#include "vctest.h"

#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

void free_sized(void *p, size_t size) __attribute__((weak));

static long static_variable = 42;

/* Ordinary work: blocks of many sizes allocated, written and freed. Sizes in
 * (33, 48] are left alone when spare_48 is set (the neighbour cases need 48 B spans
 * that nothing used before). */
static void warm_up(bool spare_48)
{
	uint64_t rng = 11;
	void *keep[256];
	for (int i = 0; i < 256; i++) {
		size_t n = vct_random_size(&rng, 1u << 20);
		if (spare_48 && n > 32 && n <= 48)
			n += 16;
		keep[i] = malloc(n);
		VCT_CHECK(keep[i] != NULL, "malloc(%zu)", n);
		memset(keep[i], i, n);
	}
	for (int i = 0; i < 256; i++)
		free(keep[i]);
}

static void committing(const char *name)
{
	fprintf(stderr, "misuse: committing %s\n", name);
	fflush(stderr);
}

static void double_free(size_t n, const char *name)
{
	char *p = malloc(n);
	VCT_CHECK(p != NULL, "malloc(%zu)", n);
	memset(p, 7, n);
	free(p);
	committing(name);
	free(vct_launder(p));
}

/* Churn in classes far from p's (p is 48 bytes; the churn uses 1 KiB .. 32 KiB). */
static void double_free_delayed(void)
{
	char *p = malloc(48);
	VCT_CHECK(p != NULL, "malloc(48)");
	free(p);
	uint64_t rng = 3;
	void *live[64] = {0};
	for (int i = 0; i < 20000; i++) {
		unsigned slot = (unsigned)(vct_rand(&rng) % 64);
		free(live[slot]);
		size_t n = 1024 + (size_t)(vct_rand(&rng) % (31u << 10));
		live[slot] = malloc(n);
		VCT_CHECK(live[slot] != NULL, "malloc(%zu)", n);
		memset(live[slot], 1, 64);
	}
	for (int i = 0; i < 64; i++)
		free(live[i]);
	committing("double-free-delayed");
	free(vct_launder(p));
}

static void *free_in_thread(void *p)
{
	free(p);
	return NULL;
}

/* The second block must really be the first one's cached mapping, else this is
 * double-free-huge again. */
static void double_free_huge_reused(void)
{
	const size_t n = 8u << 20;
	char *p = malloc(n);
	VCT_CHECK(p != NULL, "malloc(8 MiB)");
	memset(p, 7, n);
	free(p);
	char *q = malloc(n);
	VCT_CHECK(q == p, "the second 8 MiB block (%p) is not the first one's (%p)", (void *)q,
		  (void *)p);
	memset(q, 8, n);
	free(q);
	committing("double-free-huge-reused");
	free(vct_launder(q));
}

static void double_free_thread(void)
{
	char *p = malloc(200);
	VCT_CHECK(p != NULL, "malloc(200)");
	memset(p, 3, 200);
	pthread_t t;
	VCT_CHECK(pthread_create(&t, NULL, free_in_thread, p) == 0, "pthread_create");
	VCT_CHECK(pthread_join(t, NULL) == 0, "pthread_join");
	committing("double-free-thread");
	free(vct_launder(p));
}

/* A thread on CPU 1 allocates a 48 B block and keeps running; the main thread, on
 * CPU 0 and running too, frees it twice. Two running threads run as different vCPU
 * ids (an id is unique among running threads only), so the first free is one from
 * another lane than the block's span: the block waits in a buffer
 * (allocator/remote_free.c), not in a cache, and the second free must still see it. */
static _Atomic(char *) remote_block;
static atomic_int remote_done;

static void *allocate_and_run(void *arg)
{
	(void)arg;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(1, &set);
	(void)sched_setaffinity(0, sizeof(set), &set);
	char *p = malloc(48);
	VCT_CHECK(p != NULL, "malloc(48)");
	memset(p, 3, 48);
	atomic_store(&remote_block, p);
	while (!atomic_load(&remote_done))
		; /* running, not sleeping: keeps its id */
	return NULL;
}

static void double_free_remote(void)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	(void)sched_setaffinity(0, sizeof(set), &set);
	pthread_t t;
	VCT_CHECK(pthread_create(&t, NULL, allocate_and_run, NULL) == 0, "pthread_create");
	char *p;
	while ((p = atomic_load(&remote_block)) == NULL)
		;
	free(p);
	committing("double-free-remote");
	free(vct_launder(p));
	atomic_store(&remote_done, 1);
	VCT_CHECK(pthread_join(t, NULL) == 0, "pthread_join");
}

static void need_free_sized(void)
{
	VCT_CHECK(free_sized != NULL, "the allocator in use has no free_sized");
}

static void double_free_sized(void)
{
	need_free_sized();
	char *p = malloc(100);
	VCT_CHECK(p != NULL, "malloc(100)");
	free(p);
	committing("double-free-sized");
	free_sized(vct_launder(p), 100);
}

static void realloc_freed(void)
{
	char *p = malloc(40);
	VCT_CHECK(p != NULL, "malloc(40)");
	free(p);
	committing("realloc-freed");
	char *q = realloc(vct_launder(p), 100);
	fprintf(stderr, "misuse: realloc of a freed pointer returned %p\n", (void *)q);
}

static void invalid_stack(void)
{
	long local = 5;
	committing("invalid-stack");
	free(vct_launder(&local));
}

static void invalid_static(void)
{
	committing("invalid-static");
	free(vct_launder(&static_variable));
}

static void invalid_interior(size_t n, size_t offset, const char *name)
{
	char *p = malloc(n);
	VCT_CHECK(p != NULL, "malloc(%zu)", n);
	memset(p, 9, n);
	committing(name);
	free(vct_launder(p + offset));
}

/* One past the last 48 B object of a span: at page offset 170 * 48 = 8160. */
static void invalid_past_end(void)
{
	enum { N = 1024, SIZE = 48, PAGE = 8192, LAST = (PAGE / SIZE - 1) * SIZE };
	static char *blocks[N];
	char *last = NULL;
	for (int i = 0; i < N && !last; i++) {
		blocks[i] = malloc(SIZE);
		VCT_CHECK(blocks[i] != NULL, "malloc(%d)", SIZE);
		if (((uintptr_t)blocks[i] & (PAGE - 1)) == LAST)
			last = blocks[i];
	}
	VCT_CHECK(last != NULL, "no 48-byte block at page offset %d among %d", LAST, N);
	committing("invalid-past-end");
	free(vct_launder(last + SIZE));
}

static void size_mismatch(void)
{
	need_free_sized();
	char *p = malloc(64);
	VCT_CHECK(p != NULL, "malloc(64)");
	memset(p, 1, 64);
	committing("size-mismatch");
	free_sized(vct_launder(p), 4096);
}

enum { SETUP_FAILED = 3 };

static __attribute__((noreturn)) void cannot_set_up(const char *name, const char *why)
{
	fprintf(stderr, "misuse: cannot set up %s: %s\n", name, why);
	exit(SETUP_FAILED);
}

enum { HUGE_UNIT = 4 << 20 };

static char *huge_block(size_t n)
{
	char *p = malloc(n);
	VCT_CHECK(p != NULL, "malloc(%zu)", n);
	memset(p, 5, n);
	return p;
}

/* free(p + offset) for a 2 MiB block p; offset 0: its usable size. */
static void invalid_huge_beyond(size_t offset, const char *name)
{
	char *p = huge_block(2u << 20);
	if (offset == 0)
		offset = malloc_usable_size(p);
	committing(name);
	free(vct_launder(p + offset));
}

/* A private mapping of 64 KiB at a free address past a 2 MiB block, in the rest of
 * the unit the block starts in: the block must end 64 KiB or more before the unit
 * does, which the kernel's placement of the block decides. Up to 8 blocks are tried,
 * each kept allocated so that the next one lands elsewhere (fixed offsets in the unit
 * found no room in an arm64 guest whose block ended past them). When freed is set
 * the chosen block is freed (after the mapping is made), and the pointer is 16 bytes
 * into the mapping. */
static void invalid_huge_foreign(bool freed, const char *name)
{
	enum { MAP = 64u << 10, TRIES = 8 };
	char *p = NULL, *m = MAP_FAILED;
	for (unsigned t = 0; t < TRIES && m == MAP_FAILED; t++) {
		p = huge_block(2u << 20);
		uintptr_t unit_end = ((uintptr_t)p & ~(uintptr_t)(HUGE_UNIT - 1)) + HUGE_UNIT;
		uintptr_t at = ((uintptr_t)p + (2u << 20) + MAP - 1) & ~(uintptr_t)(MAP - 1);
		for (; at + MAP <= unit_end && m == MAP_FAILED; at += MAP) {
			m = mmap((void *)at, MAP, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
			if (m != MAP_FAILED && m != (char *)at) {
				munmap(m, MAP); /* a kernel without MAP_FIXED_NOREPLACE */
				m = MAP_FAILED;
			}
		}
	}
	if (m == MAP_FAILED)
		cannot_set_up(name, "no free address past the block in its unit");
	if (freed)
		free(p);
	memset(m, 6, MAP);
	committing(name);
	free(vct_launder(freed ? m + 16 : m));
}

/* A block of a private mapping dressed as a glibc mmapped chunk: the word before it
 * holds a page-multiple size with IS_MMAPPED (2), the one before that 0. */
static void invalid_foreign_mmap(void)
{
	char *m = mmap(NULL, 64u << 10, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	VCT_CHECK(m != MAP_FAILED, "mmap");
	size_t *chunk = (size_t *)(m + 4096);
	chunk[0] = 0;
	chunk[1] = 8192 | 2;
	char *p = (char *)(chunk + 2);
	memset(p, 7, 256);
	committing("invalid-foreign-mmap");
	free(vct_launder(p));
}

static void invalid_libc_malloc(void)
{
	void *(*libc_malloc)(size_t) = NULL;
	*(void **)&libc_malloc = dlsym(RTLD_DEFAULT, "__libc_malloc");
	if (!libc_malloc)
		cannot_set_up("invalid-libc-malloc", "no __libc_malloc");
	char *p = libc_malloc(100);
	VCT_CHECK(p != NULL, "__libc_malloc(100)");
	memset(p, 8, 100);
	committing("invalid-libc-malloc");
	free(vct_launder(p));
}

/* p is a fresh 48 B block, the first of its span (8 KiB, 170 objects) handed out;
 * uncarved: the span's last object, else the object next to p. */
static void invalid_neighbour(bool uncarved, const char *name)
{
	enum { SIZE = 48, PAGE = 8192 };
	char *p = malloc(SIZE);
	VCT_CHECK(p != NULL, "malloc(%d)", SIZE);
	memset(p, 1, SIZE);
	char *span = (char *)((uintptr_t)p & ~(uintptr_t)(PAGE - 1));
	size_t i = (size_t)(p - span) / SIZE;
	size_t j = uncarved ? PAGE / SIZE - 1 : i == 0 ? 1 : i - 1;
	committing(name);
	free(vct_launder(span + j * SIZE));
}

struct reuse {
	char *p;
	size_t n;
	bool got;
};

/* Allocate blocks of r->n bytes until one is r->p; then free them all. */
static void *reuse_in_thread(void *arg)
{
	struct reuse *r = arg;
	static char *held[512];
	unsigned k = 0;
	const struct vct_vcmalloc *vc = vct_vcmalloc();
	for (int round = 0; round < 2 && !r->got; round++) {
		/* p may sit in a cache this thread does not use: drain them all. */
		if (round == 1 && vc)
			vc->reclaim(1);
		for (int i = 0; i < 256 && !r->got; i++) {
			char *q = malloc(r->n);
			VCT_CHECK(q != NULL, "malloc(%zu)", r->n);
			r->got = q == r->p;
			memset(q, 2, r->n);
			held[k++] = q;
		}
	}
	for (unsigned i = 0; i < k; i++)
		free(held[i]);
	return NULL;
}

/* Keep this thread, and the threads it creates from now on (they inherit its
 * affinity), on the CPU it runs on. */
static void stay_on_this_cpu(void)
{
	int cpu = sched_getcpu();
	VCT_CHECK(cpu >= 0, "sched_getcpu: %s", strerror(errno));
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	VCT_CHECK(sched_setaffinity(0, sizeof(one), &one) == 0, "sched_setaffinity(%d): %s", cpu,
		  strerror(errno));
}

static void double_free_reused_thread(void)
{
	/* On one CPU, the second thread uses main's cache and node: a thread on another
	 * NUMA node would never be handed p (it stays on its node's lists), whatever it
	 * allocates. */
	stay_on_this_cpu();
	struct reuse r = {malloc(200), 200, false};
	VCT_CHECK(r.p != NULL, "malloc(200)");
	memset(r.p, 3, 200);
	free(r.p);
	pthread_t t;
	VCT_CHECK(pthread_create(&t, NULL, reuse_in_thread, &r) == 0, "pthread_create");
	VCT_CHECK(pthread_join(t, NULL) == 0, "pthread_join");
	if (!r.got)
		cannot_set_up("double-free-reused-thread", "the thread never got the block");
	committing("double-free-reused-thread");
	free(vct_launder(r.p));
}

/* 64 blocks of size; returns one of them freed, the others stay live (its span
 * stays in use). Under vcmalloc, the freed block then goes through a drain of every
 * vCPU cache and, when flush is set, on to its span's free list. */
static char *freed_through_layers(size_t size, bool flush)
{
	static char *live[64];
	for (int i = 0; i < 64; i++) {
		live[i] = malloc(size);
		VCT_CHECK(live[i] != NULL, "malloc(%zu)", size);
		memset(live[i], 4, size);
	}
	char *p = live[32];
	free(p);
	const struct vct_vcmalloc *vc = vct_vcmalloc();
	if (vc) {
		vc->reclaim(1);
		if (flush)
			vc->release_free_memory();
	}
	return p;
}

static void double_free_drained(bool flush, const char *name)
{
	char *p = freed_through_layers(64, flush);
	committing(name);
	free(vct_launder(p));
}

/* The write is the misuse; the allocations after it reach p's span free list. */
static void use_after_free_write(void)
{
	enum { SIZE = 48, N = 4096 };
	static char *got[N];
	char *p = freed_through_layers(SIZE, true);
	committing("use-after-free-write");
	memset(vct_launder(p), 0x41, SIZE);
	for (int i = 0; i < N; i++) {
		got[i] = malloc(SIZE);
		VCT_CHECK(got[i] != NULL, "malloc(%d)", SIZE);
	}
}

static void realloc_invalid(void)
{
	long local = 5;
	committing("realloc-invalid");
	void *q = realloc(vct_launder(&local), 100);
	fprintf(stderr, "misuse: realloc of a stack address returned %p\n", q);
}

static void usable_size_of(void *p, const char *name)
{
	committing(name);
	size_t n = malloc_usable_size(vct_launder(p));
	fprintf(stderr, "misuse: malloc_usable_size returned %zu\n", n);
}

static void size_mismatch_smaller(void)
{
	need_free_sized();
	char *p = malloc(4096);
	VCT_CHECK(p != NULL, "malloc(4096)");
	memset(p, 1, 4096);
	committing("size-mismatch-smaller");
	free_sized(vct_launder(p), 64);
}

/* The block with the lowest offset in its 4 MiB unit among 24 blocks of 512 KiB (at
 * least one of them is the first block of a fresh segment); one byte before it. */
static void metadata_underflow(void)
{
	enum { N = 24 };
	const size_t n = 512u << 10;
	static char *b[N];
	char *first = NULL;
	size_t best = SIZE_MAX;
	for (int i = 0; i < N; i++) {
		b[i] = malloc(n);
		VCT_CHECK(b[i] != NULL, "malloc(%zu)", n);
		memset(b[i], 1, n);
		size_t off = (uintptr_t)b[i] & (HUGE_UNIT - 1);
		if (off < best) {
			best = off;
			first = b[i];
		}
	}
	fprintf(stderr, "misuse: lowest block offset in its unit: %zu\n", best);
	committing("metadata-underflow");
	*(volatile char *)vct_launder(first - 1) = 1;
}

int main(int argc, char **argv)
{
	VCT_CHECK(argc == 2, "usage: misuse <case>");
	const char *c = argv[1];
	vct_start("misuse", 60);
	warm_up(!strncmp(c, "invalid-neighbour-", 18));
	if (!strcmp(c, "double-free-small"))
		double_free(64, c);
	else if (!strcmp(c, "double-free-large"))
		double_free(64u << 10, c);
	else if (!strcmp(c, "double-free-huge"))
		double_free(8u << 20, c);
	else if (!strcmp(c, "double-free-huge-reused"))
		double_free_huge_reused();
	else if (!strcmp(c, "double-free-delayed"))
		double_free_delayed();
	else if (!strcmp(c, "double-free-remote"))
		double_free_remote();
	else if (!strcmp(c, "double-free-thread"))
		double_free_thread();
	else if (!strcmp(c, "double-free-sized"))
		double_free_sized();
	else if (!strcmp(c, "realloc-freed"))
		realloc_freed();
	else if (!strcmp(c, "invalid-stack"))
		invalid_stack();
	else if (!strcmp(c, "invalid-static"))
		invalid_static();
	else if (!strcmp(c, "invalid-interior"))
		invalid_interior(64, 8, c);
	else if (!strcmp(c, "invalid-interior-large"))
		invalid_interior(256u << 10, 4096, c);
	else if (!strcmp(c, "invalid-unaligned"))
		invalid_interior(64, 3, c);
	else if (!strcmp(c, "invalid-past-end"))
		invalid_past_end();
	else if (!strcmp(c, "size-mismatch"))
		size_mismatch();
	else if (!strcmp(c, "invalid-interior-huge"))
		invalid_interior(8u << 20, 64u << 10, c);
	else if (!strcmp(c, "invalid-huge-near"))
		invalid_huge_beyond(0, c);
	else if (!strcmp(c, "invalid-huge-remainder"))
		invalid_huge_beyond(3u << 20, c);
	else if (!strcmp(c, "invalid-huge-far"))
		invalid_huge_beyond((size_t)1 << 30, c);
	else if (!strcmp(c, "invalid-huge-foreign"))
		invalid_huge_foreign(false, c);
	else if (!strcmp(c, "invalid-huge-foreign-freed"))
		invalid_huge_foreign(true, c);
	else if (!strcmp(c, "invalid-foreign-mmap"))
		invalid_foreign_mmap();
	else if (!strcmp(c, "invalid-libc-malloc"))
		invalid_libc_malloc();
	else if (!strcmp(c, "invalid-neighbour-cached"))
		invalid_neighbour(false, c);
	else if (!strcmp(c, "invalid-neighbour-uncarved"))
		invalid_neighbour(true, c);
	else if (!strcmp(c, "double-free-reused-thread"))
		double_free_reused_thread();
	else if (!strcmp(c, "double-free-drained"))
		double_free_drained(false, c);
	else if (!strcmp(c, "double-free-released"))
		double_free_drained(true, c);
	else if (!strcmp(c, "realloc-invalid"))
		realloc_invalid();
	else if (!strcmp(c, "usable-size-freed")) {
		char *p = malloc(64);
		VCT_CHECK(p != NULL, "malloc(64)");
		free(p);
		usable_size_of(p, c);
	} else if (!strcmp(c, "usable-size-invalid"))
		usable_size_of(&static_variable, c);
	else if (!strcmp(c, "use-after-free-write"))
		use_after_free_write();
	else if (!strcmp(c, "size-mismatch-smaller"))
		size_mismatch_smaller();
	else if (!strcmp(c, "metadata-underflow"))
		metadata_underflow();
	else
		VCT_CHECK(0, "unknown case %s", c);
	fprintf(stderr, "misuse: survived %s: the misuse went unnoticed\n", c);
	return 0;
}
