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

/* struct vc_rseq_abi, the VC_RSEQ_OFF_* offsets and VC_RSEQ_SIG: the project's own
 * copy of the ABI, shared with the allocator's rseq layer. */
#include "../../rseq/abi.h"

/* glibc's exports (weak: an old glibc simply has none). */
extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));

static inline int glibc_registered_rseq(void)
{
	return &__rseq_size != NULL && __rseq_size != 0;
}

/* The calling thread's glibc-registered area. */
static inline volatile struct vc_rseq_abi *glibc_rseq_area(void)
{
	char *tp;

	__asm__("mov %%fs:0, %0" : "=r"(tp));
	return (volatile struct vc_rseq_abi *)(tp + __rseq_offset);
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
