/* oom: running out of address space is an ordinary, recoverable error.
 * After a warm-up, RLIMIT_AS is set to the current address-space size plus a
 * HEADROOM_MIB margin. Then:
 *   1. single huge requests (1 GiB) fail with NULL / ENOMEM in every API
 *      (posix_memalign returns ENOMEM and leaves its out-pointer alone);
 *   2. many small blocks are allocated until malloc fails: it must fail with ENOMEM,
 *      not crash or abort, and only after most of the headroom was handed out;
 *   3. a block grown by realloc until the limit stops it stays intact;
 *   4. while memory is exhausted, every API fails cleanly (each is driven until it
 *      fails);
 *   5. after everything is freed, allocation works again: small blocks and a block
 *      of half the headroom. */
#include "vctest.h"

#include <errno.h>
#include <malloc.h>
#include <string.h>
#include <sys/resource.h>

enum { HEADROOM_MIB = 256 };

/* Live blocks are chained through their first word. */
struct chain {
	struct chain *next;
};
static struct chain *chain_head;
static size_t chain_bytes;

static void chain_push(void *p, size_t n)
{
	struct chain *c = p;
	c->next = chain_head;
	chain_head = c;
	chain_bytes += n;
}

static void chain_free_all(void)
{
	while (chain_head) {
		struct chain *next = chain_head->next;
		free(chain_head);
		chain_head = next;
	}
	chain_bytes = 0;
}

static void warm_up(void)
{
	uint64_t rng = 5;
	for (int i = 0; i < 20000; i++) {
		size_t n = vct_random_size(&rng, 4u << 20);
		void *p = malloc(n);
		VCT_CHECK(p != NULL, "warm-up malloc(%zu)", n);
		free(p);
	}
}

static void limit_address_space(void)
{
	long vm_kib = vct_proc_status_kib("VmSize");
	VCT_CHECK(vm_kib > 0, "cannot read VmSize");
	struct rlimit rl;
	rl.rlim_cur = rl.rlim_max = (rlim_t)vm_kib * 1024 + ((rlim_t)HEADROOM_MIB << 20);
	VCT_CHECK(setrlimit(RLIMIT_AS, &rl) == 0, "setrlimit: %s", strerror(errno));
	fprintf(stderr, "oom: VmSize %ld KiB, RLIMIT_AS set to %llu MiB\n", vm_kib,
		(unsigned long long)(rl.rlim_cur >> 20));
}

#define EXPECT_ENOMEM(call, what)                                                                  \
	do {                                                                                       \
		errno = 0;                                                                         \
		void *r_ = (call);                                                                 \
		int e_ = errno;                                                                    \
		VCT_CHECK(r_ == NULL, "%s succeeded beyond RLIMIT_AS", what);                      \
		VCT_CHECK(e_ == ENOMEM, "%s: errno %d, expected ENOMEM", what, e_);                \
	} while (0)

static void huge_requests_fail(void)
{
	const size_t g = vct_launder_size((size_t)1 << 30);
	EXPECT_ENOMEM(malloc(g), "malloc(1 GiB)");
	EXPECT_ENOMEM(calloc(g / 8, 8), "calloc(1 GiB)");
	EXPECT_ENOMEM(aligned_alloc(4096, g), "aligned_alloc(1 GiB)");
	EXPECT_ENOMEM(memalign(1u << 20, g), "memalign(1 GiB)");
	EXPECT_ENOMEM(valloc(g), "valloc(1 GiB)");
	EXPECT_ENOMEM(pvalloc(g), "pvalloc(1 GiB)");
	EXPECT_ENOMEM(reallocarray(NULL, g / 16, 16), "reallocarray(1 GiB)");
	char *p = malloc(1000);
	VCT_CHECK(p != NULL, "malloc(1000)");
	vct_fill(p, 1000, 31);
	EXPECT_ENOMEM(realloc(vct_launder(p), g), "realloc(1000 -> 1 GiB)");
	VCT_CHECK(vct_verify(p, 1000, 31) == (size_t)-1, "failed realloc damaged its block");
	free(p);
	void *out = &out;
	int rc = posix_memalign(&out, 64, g);
	VCT_CHECK(rc == ENOMEM, "posix_memalign(1 GiB) = %d, expected ENOMEM", rc);
	VCT_CHECK(out == &out, "posix_memalign changed the out-pointer on failure");
}

static void exhaust_with_small_blocks(void)
{
	uint64_t rng = 77;
	for (;;) {
		size_t n = 16 + vct_random_size(&rng, 0);
		errno = 0;
		void *p = malloc(n);
		if (!p) {
			VCT_CHECK(errno == ENOMEM, "malloc(%zu) failed with errno %d", n, errno);
			break;
		}
		memset(p, 0x77, n);
		chain_push(p, n);
	}
	fprintf(stderr, "oom: small blocks exhausted after %zu MiB\n", chain_bytes >> 20);
	VCT_CHECK(chain_bytes >= ((size_t)HEADROOM_MIB << 20) / 2,
		  "malloc gave up after only %zu MiB of %d MiB headroom", chain_bytes >> 20,
		  HEADROOM_MIB);
}

/* Drive one API with 64 KiB requests until it fails; it must fail with ENOMEM. */
enum api {
	API_MALLOC,
	API_CALLOC,
	API_ALIGNED,
	API_MEMALIGN,
	API_VALLOC,
	API_PVALLOC,
	API_REALLOCARRAY,
	API_POSIX_MEMALIGN,
	API_COUNT
};
static const char *const api_names[API_COUNT] = {"malloc",	 "calloc",	  "aligned_alloc",
						 "memalign",	 "valloc",	  "pvalloc",
						 "reallocarray", "posix_memalign"};

static void drive_until_failure(enum api which)
{
	const size_t n = 64u << 10;
	for (int i = 0; i < 100000; i++) {
		void *p = NULL;
		int err;
		errno = 0;
		switch (which) {
		case API_MALLOC:
			p = malloc(n);
			break;
		case API_CALLOC:
			p = calloc(n / 16, 16);
			break;
		case API_ALIGNED:
			p = aligned_alloc(4096, n);
			break;
		case API_MEMALIGN:
			p = memalign(256, n);
			break;
		case API_VALLOC:
			p = valloc(n);
			break;
		case API_PVALLOC:
			p = pvalloc(n);
			break;
		case API_REALLOCARRAY:
			p = reallocarray(NULL, n / 8, 8);
			break;
		case API_POSIX_MEMALIGN: {
			int rc = posix_memalign(&p, 128, n);
			if (rc != 0) {
				VCT_CHECK(rc == ENOMEM, "posix_memalign failed with %d", rc);
				p = NULL;
				errno = ENOMEM;
			}
			break;
		}
		default:
			break;
		}
		err = errno;
		if (!p) {
			VCT_CHECK(err == ENOMEM, "%s failed with errno %d", api_names[which], err);
			return;
		}
		chain_push(p, n);
	}
	VCT_CHECK(0, "%s kept succeeding past RLIMIT_AS", api_names[which]);
}

static void realloc_cannot_grow(void)
{
	/* a block we own, grown until the limit stops it */
	char *p = malloc(4096);
	VCT_CHECK(p != NULL, "malloc(4096) failed with all the headroom free");
	size_t n = 4096;
	vct_fill(p, n, 5);
	for (;;) {
		errno = 0;
		char *q = realloc(vct_launder(p), n * 2);
		if (!q) {
			VCT_CHECK(errno == ENOMEM, "realloc failed with errno %d", errno);
			VCT_CHECK(vct_verify(p, n, 5) == (size_t)-1,
				  "realloc failure damaged the %zu-byte block", n);
			break;
		}
		p = q;
		vct_fill(p + n, n, 5 + n); /* new part; old part keeps its pattern */
		VCT_CHECK(vct_verify(p, n, 5) == (size_t)-1, "realloc lost contents at %zu", n);
		vct_fill(p, n * 2, 5);
		n *= 2;
	}
	free(p);
}

static void recovery(void)
{
	chain_free_all();
	const size_t big = ((size_t)HEADROOM_MIB << 20) / 2;
	char *p = malloc(big);
	VCT_CHECK(p != NULL, "malloc(%zu MiB) failed after everything was freed", big >> 20);
	memset(p, 1, big);
	free(p);
	uint64_t rng = 9;
	for (int i = 0; i < 20000; i++) {
		size_t n = vct_random_size(&rng, 1u << 20);
		void *q = (i & 1) ? malloc(n) : calloc(1, n);
		VCT_CHECK(q != NULL, "allocation of %zu failed after recovery", n);
		free(q);
	}
	void *out = NULL;
	VCT_CHECK(posix_memalign(&out, 4096, 1u << 20) == 0, "posix_memalign after recovery");
	free(out);
}

int main(void)
{
	vct_start("oom", 120);
	warm_up();
	limit_address_space();
	huge_requests_fail();
	realloc_cannot_grow();
	exhaust_with_small_blocks();
	for (int a = 0; a < API_COUNT; a++)
		drive_until_failure((enum api)a);
	recovery();
	printf("oom: ok\n");
	return 0;
}
