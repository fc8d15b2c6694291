/* oom_threads: running out of address space in several threads at once.
 *
 * THREADS threads are started first (so their stacks exist before the limit), then
 * RLIMIT_AS is set to the current address-space size plus HEADROOM_MIB. Released
 * together, every thread allocates blocks of random sizes (up to 256 KiB) through
 * malloc, calloc, aligned_alloc, posix_memalign and realloc in turn, filling each,
 * until its first failure. Every failure must be clean: NULL with errno ENOMEM
 * (posix_memalign: return value ENOMEM and the out-pointer untouched); a crash or
 * abort fails the test. Each thread then makes FAILURE_RETRIES more attempts while
 * the others are still exhausting memory; each must succeed or fail cleanly.
 * Then, after a barrier:
 *   - together the threads got at least half of the headroom;
 *   - every thread checks all its blocks (a block handed to two threads, or given
 *     out twice, shows up as a damaged pattern), frees the first half of its own and
 *     the second half of its neighbour's blocks (cross-thread frees);
 *   - recovery: every thread allocates and frees 2000 blocks again, then holds its
 *     share of half the headroom at once in 64 KiB blocks (all must succeed).
 * (One contiguous block of half the headroom, as tests/api/oom.c asks of a single
 * thread, is not asked here: glibc keeps each thread arena's address space, so it
 * could not pass either. The per-thread shares it can, and so must vcmalloc.) */
#include "vctest.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/resource.h>

enum { THREADS = 4, HEADROOM_MIB = 256, FAILURE_RETRIES = 200, MAX_BLOCKS = 1 << 17 };

struct thread_blocks {
	unsigned id;
	void **ptr;
	size_t *size;
	size_t count;
	size_t bytes;
};

static struct thread_blocks blocks[THREADS];
static pthread_barrier_t barrier;

static uint64_t seed_of(const void *p)
{
	return (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull;
}

static size_t checked_len(size_t n)
{
	return n < 512 ? n : 512;
}

/* One allocation of n >= 16 bytes through API number (k % 5). NULL when it failed;
 * the failure has already been checked to be clean. */
static void *allocate(unsigned k, size_t n)
{
	VCT_CHECK(n >= 16, "allocate(%zu): realloc(p, 0) would free", n);
	void *p = NULL;
	errno = 0;
	switch (k % 5) {
	case 0:
		p = malloc(n);
		break;
	case 1:
		p = calloc(1, n);
		break;
	case 2:
		p = aligned_alloc(64, (n + 63) & ~(size_t)63);
		break;
	case 3: {
		void *out = &out;
		int rc = posix_memalign(&out, 256, n);
		if (rc != 0) {
			VCT_CHECK(rc == ENOMEM, "posix_memalign failed with %d", rc);
			VCT_CHECK(out == &out, "failed posix_memalign changed its out-pointer");
			return NULL;
		}
		return out;
	}
	default: {
		char *q = malloc(n / 2 + 1);
		if (!q) {
			VCT_CHECK(errno == ENOMEM, "malloc failed with errno %d", errno);
			return NULL;
		}
		memset(q, 0x5a, n / 2 + 1);
		errno = 0;
		p = realloc(q, n);
		if (!p) {
			VCT_CHECK(errno == ENOMEM, "realloc failed with errno %d", errno);
			free(q);
			return NULL;
		}
		return p;
	}
	}
	if (!p)
		VCT_CHECK(errno == ENOMEM, "API %u failed with errno %d", k % 5, errno);
	return p;
}

static void *worker(void *arg)
{
	struct thread_blocks *b = arg;
	uint64_t rng = 0xa110c000ull + b->id;
	pthread_barrier_wait(&barrier); /* the limit is set */
	unsigned k = b->id;
	for (;;) {
		VCT_CHECK(b->count < MAX_BLOCKS, "thread %u: %d blocks and no failure", b->id,
			  MAX_BLOCKS);
		size_t n = 16 + vct_random_size(&rng, 256u << 10);
		void *p = allocate(k++, n);
		if (!p)
			break;
		vct_fill(p, checked_len(n), seed_of(p));
		b->ptr[b->count] = p;
		b->size[b->count++] = n;
		b->bytes += n;
	}
	for (int i = 0; i < FAILURE_RETRIES; i++) {
		size_t n = 16 + vct_random_size(&rng, 256u << 10);
		void *p = allocate(k++, n);
		if (p) {
			vct_fill(p, checked_len(n), seed_of(p));
			VCT_CHECK(b->count < MAX_BLOCKS, "too many blocks");
			b->ptr[b->count] = p;
			b->size[b->count++] = n;
			b->bytes += n;
		}
	}
	pthread_barrier_wait(&barrier); /* everyone is exhausted */
	for (size_t i = 0; i < b->count; i++) {
		size_t bad = vct_verify(b->ptr[i], checked_len(b->size[i]), seed_of(b->ptr[i]));
		VCT_CHECK(bad == (size_t)-1, "thread %u: block %zu damaged at byte %zu", b->id, i,
			  bad);
	}
	pthread_barrier_wait(&barrier); /* all checked: now free, across threads too */
	struct thread_blocks *next = &blocks[(b->id + 1) % THREADS];
	for (size_t i = 0; i < b->count / 2; i++)
		free(b->ptr[i]);
	for (size_t i = next->count / 2; i < next->count; i++)
		free(next->ptr[i]);
	pthread_barrier_wait(&barrier); /* everything is freed */
	for (int i = 0; i < 2000; i++) {
		size_t n = 16 + vct_random_size(&rng, 256u << 10);
		void *p = allocate(k++, n);
		VCT_CHECK(p != NULL,
			  "thread %u: allocation of %zu failed after everything was "
			  "freed",
			  b->id, n);
		memset(p, 1, n);
		free(p);
	}
	/* Its share of half the headroom, held at once, in 64 KiB blocks. */
	const size_t share = ((size_t)HEADROOM_MIB << 20) / 2 / THREADS, piece = 64u << 10;
	size_t held = 0;
	for (; held * piece < share; held++) {
		b->ptr[held] = allocate(k++, piece);
		VCT_CHECK(b->ptr[held] != NULL,
			  "thread %u: after everything was freed, only %zu of %zu MiB could be "
			  "allocated again",
			  b->id, (held * piece) >> 20, share >> 20);
		memset(b->ptr[held], 2, piece);
	}
	for (size_t i = 0; i < held; i++)
		free(b->ptr[i]);
	return NULL;
}

int main(void)
{
	vct_start("oom_threads", 120);
	VCT_CHECK(pthread_barrier_init(&barrier, NULL, THREADS + 1) == 0, "barrier");
	pthread_t t[THREADS];
	for (unsigned i = 0; i < THREADS; i++) {
		blocks[i].id = i;
		blocks[i].ptr = malloc(MAX_BLOCKS * sizeof(void *));
		blocks[i].size = malloc(MAX_BLOCKS * sizeof(size_t));
		VCT_CHECK(blocks[i].ptr && blocks[i].size, "malloc of the block tables");
		memset(blocks[i].ptr, 0, MAX_BLOCKS * sizeof(void *));
		memset(blocks[i].size, 0, MAX_BLOCKS * sizeof(size_t));
		VCT_CHECK(pthread_create(&t[i], NULL, worker, &blocks[i]) == 0, "pthread_create");
	}
	long vm_kib = vct_proc_status_kib("VmSize");
	VCT_CHECK(vm_kib > 0, "cannot read VmSize");
	struct rlimit rl;
	rl.rlim_cur = rl.rlim_max = (rlim_t)vm_kib * 1024 + ((rlim_t)HEADROOM_MIB << 20);
	VCT_CHECK(setrlimit(RLIMIT_AS, &rl) == 0, "setrlimit: %s", strerror(errno));
	fprintf(stderr, "oom_threads: VmSize %ld KiB, RLIMIT_AS %llu MiB, %d threads\n", vm_kib,
		(unsigned long long)(rl.rlim_cur >> 20), THREADS);

	pthread_barrier_wait(&barrier); /* go */
	pthread_barrier_wait(&barrier); /* all exhausted */
	size_t total = 0;
	for (int i = 0; i < THREADS; i++) {
		fprintf(stderr, "oom_threads: thread %d got %zu blocks, %zu MiB\n", i,
			blocks[i].count, blocks[i].bytes >> 20);
		total += blocks[i].bytes;
	}
	VCT_CHECK(total >= ((size_t)HEADROOM_MIB << 20) / 2,
		  "the threads got only %zu MiB of %d MiB headroom", total >> 20, HEADROOM_MIB);
	pthread_barrier_wait(&barrier); /* checked */
	pthread_barrier_wait(&barrier); /* freed */
	for (int i = 0; i < THREADS; i++)
		VCT_CHECK(pthread_join(t[i], NULL) == 0, "pthread_join");

	printf("oom_threads: ok (%zu MiB allocated by %d threads before exhaustion)\n", total >> 20,
	       THREADS);
	return 0;
}
