/* kernel/tests/rseq_abi.h - the rseq area as the guest tests see it.
 *
 * The tests read the area glibc registered for the calling thread (glibc >= 2.35
 * registers one per thread and exports its offset from the thread pointer), or,
 * when glibc did not register (GLIBC_TUNABLES=glibc.pthread.rseq=0), an area the
 * test registers itself. Field offsets are those of the kernel ABI:
 * cpu_id_start 0, cpu_id 4, rseq_cs 8, flags 16, node_id 20, mm_cid 24.
 */
#ifndef KERNEL_TESTS_RSEQ_ABI_H
#define KERNEL_TESTS_RSEQ_ABI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/auxv.h>

#ifndef AT_RSEQ_FEATURE_SIZE
#define AT_RSEQ_FEATURE_SIZE 27
#endif
#ifndef AT_RSEQ_ALIGN
#define AT_RSEQ_ALIGN 28
#endif

#define RSEQ_SIG_X86 0x53053053u

/* Offsets into struct rseq, fixed by the ABI. */
#define RSEQ_OFF_CPU_ID 4
#define RSEQ_OFF_RSEQ_CS 8
#define RSEQ_OFF_NODE_ID 20
#define RSEQ_OFF_MM_CID 24

struct test_rseq {
	uint32_t cpu_id_start;
	uint32_t cpu_id;
	uint64_t rseq_cs;
	uint32_t flags;
	uint32_t node_id;
	uint32_t mm_cid;
} __attribute__((aligned(32)));

/* glibc's exports (weak: an old glibc simply has none). */
extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));

static inline int glibc_registered_rseq(void)
{
	return &__rseq_size != NULL && __rseq_size != 0;
}

/* The calling thread's glibc-registered area. */
static inline volatile struct test_rseq *glibc_rseq_area(void)
{
	char *tp;

	__asm__("mov %%fs:0, %0" : "=r"(tp));
	return (volatile struct test_rseq *)(tp + __rseq_offset);
}

/* Print the failure and exit 1: tests assert, they do not just report. */
#define CHECK(cond, ...)                                                                   \
	do {                                                                               \
		if (!(cond)) {                                                             \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);               \
			fprintf(stderr, __VA_ARGS__);                                      \
			fputc('\n', stderr);                                               \
			exit(1);                                                           \
		}                                                                          \
	} while (0)

#endif
