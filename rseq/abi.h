/* rseq/abi.h - our own copy of the kernel's rseq ABI.
 *
 * Renamed (vc_rseq_*) so that it never clashes with <linux/rseq.h> or glibc's
 * <sys/rseq.h>. Layout facts (Linux UAPI):
 *   struct rseq: u32 cpu_id_start @0, u32 cpu_id @4, u64 rseq_cs @8,
 *                u32 flags @16, u32 node_id @20 (>= 6.3), u32 mm_cid @24 (>= 6.3)
 *   The kernel writes cpu_id_start, cpu_id, node_id and mm_cid; user space writes
 *   only rseq_cs. We never write a kernel-owned field.
 */
#ifndef VC_RSEQ_ABI_H
#define VC_RSEQ_ABI_H

#include <stddef.h>
#include <stdint.h>

/* Values of cpu_id before / instead of a successful registration. */
#define VC_RSEQ_CPU_ID_UNINITIALIZED ((uint32_t)-1)
#define VC_RSEQ_CPU_ID_REGISTRATION_FAILED ((uint32_t)-2)

/* Signature the kernel checks in the 4 bytes before every abort handler; glibc
 * registers its areas with the same value, so sections work in either area.
 * x86-64: 0x53053053, the displacement of a `ud1` instruction before the handler.
 * aarch64: 0xd428bc00, the instruction word `brk #0x45e0`, which traps if ever
 * executed (little-endian code on either data endianness). */
#if defined(__aarch64__)
#define VC_RSEQ_SIG 0xd428bc00u
#else
#define VC_RSEQ_SIG 0x53053053u
#endif

#define VC_RSEQ_FLAG_UNREGISTER 1

/* Original registration length, and the feature sizes at which fields appear. */
#define VC_RSEQ_ORIG_SIZE 32u
#define VC_RSEQ_FEATURE_NODE_ID 24u
#define VC_RSEQ_FEATURE_MM_CID 28u

struct vc_rseq_cs {
	uint32_t version;
	uint32_t flags;
	uint64_t start_ip;
	uint64_t post_commit_offset;
	uint64_t abort_ip;
} __attribute__((aligned(32)));

struct vc_rseq_abi {
	uint32_t cpu_id_start;
	uint32_t cpu_id;
	uint64_t rseq_cs;
	uint32_t flags;
	uint32_t node_id;
	uint32_t mm_cid;
	char end[];
} __attribute__((aligned(32)));

#define VC_RSEQ_OFF_CPU_ID 4
#define VC_RSEQ_OFF_RSEQ_CS 8
#define VC_RSEQ_OFF_NODE_ID 20
#define VC_RSEQ_OFF_MM_CID 24

_Static_assert(offsetof(struct vc_rseq_abi, cpu_id_start) == 0, "abi");
_Static_assert(offsetof(struct vc_rseq_abi, cpu_id) == VC_RSEQ_OFF_CPU_ID, "abi");
_Static_assert(offsetof(struct vc_rseq_abi, rseq_cs) == VC_RSEQ_OFF_RSEQ_CS, "abi");
_Static_assert(offsetof(struct vc_rseq_abi, node_id) == VC_RSEQ_OFF_NODE_ID, "abi");
_Static_assert(offsetof(struct vc_rseq_abi, mm_cid) == VC_RSEQ_OFF_MM_CID, "abi");
_Static_assert(offsetof(struct vc_rseq_abi, flags) == 16, "abi");
_Static_assert(VC_RSEQ_FEATURE_NODE_ID == VC_RSEQ_OFF_NODE_ID + 4 &&
		   VC_RSEQ_FEATURE_MM_CID == VC_RSEQ_OFF_MM_CID + 4 &&
		   offsetof(struct vc_rseq_abi, end) == VC_RSEQ_FEATURE_MM_CID,
	       "a feature size ends with its field");
_Static_assert(sizeof(struct vc_rseq_abi) == VC_RSEQ_ORIG_SIZE &&
		   _Alignof(struct vc_rseq_abi) == 32,
	       "abi: 32 bytes, aligned to 32");
/* The critical sections' descriptors (arch/<arch>.h) are emitted as ".balign 32;
 * .long version, flags; .quad start_ip, post_commit_offset, abort_ip". */
_Static_assert(offsetof(struct vc_rseq_cs, flags) == 4 &&
		   offsetof(struct vc_rseq_cs, start_ip) == 8 &&
		   offsetof(struct vc_rseq_cs, post_commit_offset) == 16 &&
		   offsetof(struct vc_rseq_cs, abort_ip) == 24,
	       "abi: rseq_cs fields");
_Static_assert(sizeof(struct vc_rseq_cs) == 32 && _Alignof(struct vc_rseq_cs) == 32,
	       "abi: rseq_cs is 32 bytes, aligned to 32");

#endif
