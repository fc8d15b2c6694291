/* rseq/arch/aarch64.h - restartable critical sections for aarch64 (little-endian).
 *
 * Include <rseq/rseq.h>, never this file. The helpers, their arguments and their
 * results are those of arch/x86_64.h, each generated from one asm body for both
 * indexes: _cpu_id (index = rseq cpu_id, offset 4) and _mm_cid (mm_cid, offset 24).
 * Each one:
 *   1. publishes its descriptor in rseq_cs (the only field we write),
 *   2. compares the index field with the index the caller computed its addresses
 *      from; a mismatch aborts (-1),
 *   3. does its loads and speculative stores to memory no one else may read,
 *   4. ends with a single commit store.
 *
 * The abort handler follows the function's code in the same section (subsection 1
 * of whatever section the compiler is emitting), preceded by the signature word
 * (abi.h's VC_RSEQ_SIG, `brk #0x45e0`, emitted with .inst so that it is code). It is
 * kept near because the branch to it from inside the section is conditional, and an
 * aarch64 conditional branch reaches only +-1 MiB: a separate output section placed
 * after all the text of a large program linking libvcmalloc.a could be out of reach.
 *
 * Ordering. A stack's header and slots belong to one index; the threads that run as
 * that index one after the other may do so on different CPUs (mm_cid moves with the
 * thread that holds it). Every commit that changes a stack is a store-release
 * (stlr / stlrh), so the slot stores and loads of the section are ordered before the
 * header change another CPU may read next. Reads of slots depend on the address
 * computed from the header load, which orders them after it on aarch64 without an
 * acquire. The counter add commits with a plain store: nothing is published with it.
 *
 * Registers: x9-x13 are scratch for the sections, x14-x16 for the injection points;
 * all are listed as clobbered, so the compiler keeps no operand in them.
 */
#ifndef VC_RSEQ_ARCH_INSIDE
#error "include rseq/rseq.h, not rseq/arch/aarch64.h"
#endif

#if defined(__AARCH64EB__)
#error "rseq/arch/aarch64.h: the stack header layout assumes little-endian data"
#endif

#if defined(VC_RSEQ_INJECT) && VC_RSEQ_INJECT
/* Delay loop (and, when the yield knob is on, a long spin that invites preemption and
 * migration) at an injection point. No system call: the rseq ABI forbids them inside
 * a critical section. The knobs are hidden symbols, reached pc-relative. */
#define VC_RSEQ_INJECT_ASM(n)                                                          \
	"adrp x14, vc_rseq_inject_delay\n\t"                                            \
	"ldr w14, [x14, #:lo12:vc_rseq_inject_delay]\n\t"                               \
	"cbz w14, 7" #n "1f\n\t"                                                        \
	"7" #n "0:\n\t"                                                                 \
	"subs w14, w14, #1\n\t"                                                         \
	"b.ne 7" #n "0b\n\t"                                                            \
	"7" #n "1:\n\t"                                                                 \
	"adrp x14, vc_rseq_inject_yield\n\t"                                            \
	"ldr w14, [x14, #:lo12:vc_rseq_inject_yield]\n\t"                               \
	"cbz w14, 7" #n "2f\n\t"                                                        \
	"movz w14, #0x3, lsl #16\n\t" /* 200000: a long spin, no system call */         \
	"movk w14, #0x0d40\n\t"                                                         \
	"7" #n "3:\n\t"                                                                 \
	"subs w14, w14, #1\n\t"                                                         \
	"b.ne 7" #n "3b\n\t"                                                            \
	"7" #n "2:\n\t"
/* In the abort handler, outside the section: an exclusive-monitor increment. */
#define VC_RSEQ_INJECT_ABORT                                                            \
	"adrp x14, vc_rseq_inject_aborts\n\t"                                           \
	"add x14, x14, #:lo12:vc_rseq_inject_aborts\n\t"                                \
	"6:\n\t"                                                                        \
	"ldxr x15, [x14]\n\t"                                                           \
	"add x15, x15, #1\n\t"                                                          \
	"stxr w16, x15, [x14]\n\t"                                                      \
	"cbnz w16, 6b\n\t"
#define VC_RSEQ_INJECT_CLOBBERS "x14", "x15", "x16",
#else
#define VC_RSEQ_INJECT_ASM(n)
#define VC_RSEQ_INJECT_ABORT
#define VC_RSEQ_INJECT_CLOBBERS
#endif

/* The header word's format is rseq.h's: begin and end are extracted at its
 * shifts; current is the low 16 bits (and #0xffff), which the batch commits store
 * alone (stlrh). */
_Static_assert(VC_RSEQ_STACK_CURRENT_SHIFT == 0 && VC_RSEQ_STACK_FIELD_MASK == 0xffff,
	       "current is the word's low 16 bits");

/* The stack header is read with one 64-bit load into x10, never field by field: a
 * section must see one state of the header (see VC_RSEQ_ASM_LOAD_HEADER in
 * arch/x86_64.h and the stop protocol in rseq.h). x12 gets `current`. */
#define VC_RSEQ_ASM_LOAD_HEADER                                                         \
	"ldr x10, [%[hdr]]\n\t"                                                         \
	"and x12, x10, #0xffff\n\t" /* current */
/* The header in x10, current in x12; to cmpfail when the stack is empty
 * (current <= begin) or, for the second, full (current >= end). */
#define VC_RSEQ_ASM_HEADER_OR_EMPTY                                                     \
	VC_RSEQ_ASM_LOAD_HEADER                                                         \
	"ubfx x11, x10, #" VC_RSEQ_STR(VC_RSEQ_STACK_BEGIN_SHIFT) ", #16\n\t" /* begin */ \
	"cmp x12, x11\n\t"                                                              \
	"b.ls %l[cmpfail]\n\t"
#define VC_RSEQ_ASM_HEADER_OR_FULL                                                      \
	VC_RSEQ_ASM_LOAD_HEADER                                                         \
	"lsr x11, x10, #" VC_RSEQ_STR(VC_RSEQ_STACK_END_SHIFT) "\n\t" /* end */         \
	"cmp x12, x11\n\t"                                                              \
	"b.hs %l[cmpfail]\n\t"

/* Descriptor (label 3), start (1), post-commit (2), abort handler (4). */
#define VC_RSEQ_ASM_PROLOGUE(field_off)                                                 \
	".pushsection __rseq_cs, \"aw\"\n\t"                                            \
	".balign 32\n\t"                                                                \
	"3:\n\t"                                                                        \
	".long 0x0, 0x0\n\t"                                                            \
	".quad 1f, (2f - 1f), 4f\n\t"                                                   \
	".popsection\n\t"                                                               \
	"adrp x9, 3b\n\t"                                                               \
	"add x9, x9, #:lo12:3b\n\t"                                                     \
	"str x9, [%[rs], #" VC_RSEQ_STR(VC_RSEQ_OFF_RSEQ_CS) "]\n\t"                     \
	"1:\n\t"                                                                        \
	"ldr w9, [%[rs], #" VC_RSEQ_STR(field_off) "]\n\t"                               \
	"cmp w9, %w[idx]\n\t"                                                           \
	"b.ne 4f\n\t" VC_RSEQ_INJECT_ASM(1)

#define VC_RSEQ_ASM_EPILOGUE                                                            \
	"2:\n\t"                                                                        \
	".subsection 1\n\t"                                                             \
	".inst " VC_RSEQ_STR(VC_RSEQ_SIG_ASM) "\n\t"                                    \
	"4:\n\t" VC_RSEQ_INJECT_ABORT "b %l[aborted]\n\t"                                \
	".previous\n\t"

#define VC_RSEQ_SIG_ASM 0xd428bc00
_Static_assert(VC_RSEQ_SIG == VC_RSEQ_SIG_ASM, "the signature in the code is the registered one");

#define VC_RSEQ_CLOBBERS VC_RSEQ_INJECT_CLOBBERS "x9", "x10", "x11", "x12", "x13", "memory", "cc"

#define VC_RSEQ_DEFINE_OPS(name, field_off)                                             \
	/* *v += count, on the index's counter. */                                      \
	static inline __attribute__((always_inline)) int vc_rseq_addv_##name(          \
	    struct vc_rseq_abi *rs, uint32_t idx, intptr_t *v, intptr_t count)          \
	{                                                                               \
		__asm__ goto(VC_RSEQ_ASM_PROLOGUE(field_off)                            \
			     "ldr x10, [%[v]]\n\t" VC_RSEQ_INJECT_ASM(2)                \
			     "add x10, x10, %[count]\n\t"                               \
			     "str x10, [%[v]]\n\t" /* commit */                         \
			     VC_RSEQ_ASM_EPILOGUE                                       \
			     :                                                          \
			     : [rs] "r"(rs), [idx] "r"(idx), [v] "r"(v),                \
			       [count] "r"(count)                                       \
			     : VC_RSEQ_CLOBBERS                                         \
			     : aborted);                                                \
		return 0;                                                       \
	aborted:                                                                        \
		return -1;                                                      \
	}                                                                               \
                                                                                        \
	/* Pop the top object of the stack at hdr (slots counted from region). */      \
	static inline __attribute__((always_inline)) int vc_rseq_pop_##name(           \
	    struct vc_rseq_abi *rs, uint32_t idx, struct vc_rseq_stack *hdr,            \
	    void *region, void **out)                                                   \
	{                                                                               \
		void *obj;                                                              \
		__asm__ goto(VC_RSEQ_ASM_PROLOGUE(field_off)                            \
			     VC_RSEQ_ASM_HEADER_OR_EMPTY                                \
			     "add x13, %[region], x12, lsl #3\n\t"                      \
			     "ldur %[obj], [x13, #-8]\n\t" VC_RSEQ_INJECT_ASM(2)        \
			     "sub x10, x10, #1\n\t"                                     \
			     "stlr x10, [%[hdr]]\n\t" /* commit */                      \
			     VC_RSEQ_ASM_EPILOGUE                                       \
			     : [obj] "=&r"(obj)                                         \
			     : [rs] "r"(rs), [idx] "r"(idx), [hdr] "r"(hdr),            \
			       [region] "r"(region)                                     \
			     : VC_RSEQ_CLOBBERS                                         \
			     : aborted, cmpfail);                                       \
		*out = obj;                                                     \
		return 0;                                                       \
	aborted:                                                                        \
		return -1;                                                      \
	cmpfail:                                                                        \
		return 1;                                                       \
	}                                                                               \
                                                                                        \
	/* Push p on the stack at hdr. */                                               \
	static inline __attribute__((always_inline)) int vc_rseq_push_##name(          \
	    struct vc_rseq_abi *rs, uint32_t idx, struct vc_rseq_stack *hdr,            \
	    void *region, void *p)                                                      \
	{                                                                               \
		__asm__ goto(VC_RSEQ_ASM_PROLOGUE(field_off)                            \
			     VC_RSEQ_ASM_HEADER_OR_FULL                                 \
			     "str %[p], [%[region], x12, lsl #3]\n\t"                   \
			     VC_RSEQ_INJECT_ASM(2)                                      \
			     "add x10, x10, #1\n\t"                                     \
			     "stlr x10, [%[hdr]]\n\t" /* commit */                      \
			     VC_RSEQ_ASM_EPILOGUE                                       \
			     :                                                          \
			     : [rs] "r"(rs), [idx] "r"(idx), [hdr] "r"(hdr),            \
			       [region] "r"(region), [p] "r"(p)                         \
			     : VC_RSEQ_CLOBBERS                                         \
			     : aborted, cmpfail);                                       \
		return 0;                                                       \
	aborted:                                                                        \
		return -1;                                                      \
	cmpfail:                                                                        \
		return 1;                                                       \
	}                                                                               \
                                                                                        \
	/* Pop up to n objects into out[] (the top first); *popped gets how many (>= 1 \
	 * on success). */                                                              \
	static inline __attribute__((always_inline)) int vc_rseq_pop_batch_##name(     \
	    struct vc_rseq_abi *rs, uint32_t idx, struct vc_rseq_stack *hdr,            \
	    void *region, void **out, uint32_t n, uint32_t *popped)                     \
	{                                                                               \
		__asm__ goto(VC_RSEQ_ASM_PROLOGUE(field_off)                            \
			     VC_RSEQ_ASM_LOAD_HEADER                                    \
			     "ubfx x11, x10, #" VC_RSEQ_STR(VC_RSEQ_STACK_BEGIN_SHIFT) ", #16\n\t" \
			     "subs x13, x12, x11\n\t" /* available */                   \
			     "b.ls %l[cmpfail]\n\t"                                     \
			     "cmp w13, %w[n]\n\t"                                       \
			     "csel w13, %w[n], w13, hi\n\t" /* k = min(n, available) */ \
			     "cbz w13, %l[cmpfail]\n\t"                                 \
			     "mov x11, #0\n\t"                                          \
			     "5:\n\t"                                                   \
			     "sub x12, x12, #1\n\t"                                     \
			     "ldr x9, [%[region], x12, lsl #3]\n\t"                     \
			     "str x9, [%[out], x11, lsl #3]\n\t"                        \
			     "add x11, x11, #1\n\t"                                     \
			     "cmp x11, x13\n\t"                                         \
			     "b.lo 5b\n\t"                                              \
			     "str w13, [%[popped]]\n\t" VC_RSEQ_INJECT_ASM(2)           \
			     "stlrh w12, [%[hdr]]\n\t" /* commit */                     \
			     VC_RSEQ_ASM_EPILOGUE                                       \
			     :                                                          \
			     : [rs] "r"(rs), [idx] "r"(idx), [hdr] "r"(hdr),            \
			       [region] "r"(region), [out] "r"(out), [n] "r"(n),        \
			       [popped] "r"(popped)                                     \
			     : VC_RSEQ_CLOBBERS                                         \
			     : aborted, cmpfail);                                       \
		return 0;                                                       \
	aborted:                                                                        \
		return -1;                                                      \
	cmpfail:                                                                        \
		return 1;                                                       \
	}                                                                               \
                                                                                        \
	/* Push up to n objects from in[]; *pushed gets how many (>= 1 on success). */ \
	static inline __attribute__((always_inline)) int vc_rseq_push_batch_##name(    \
	    struct vc_rseq_abi *rs, uint32_t idx, struct vc_rseq_stack *hdr,            \
	    void *region, void *const *in, uint32_t n, uint32_t *pushed)                \
	{                                                                               \
		__asm__ goto(VC_RSEQ_ASM_PROLOGUE(field_off)                            \
			     VC_RSEQ_ASM_LOAD_HEADER                                    \
			     "lsr x11, x10, #" VC_RSEQ_STR(VC_RSEQ_STACK_END_SHIFT) "\n\t" \
			     "subs x13, x11, x12\n\t" /* room */                        \
			     "b.ls %l[cmpfail]\n\t"                                     \
			     "cmp w13, %w[n]\n\t"                                       \
			     "csel w13, %w[n], w13, hi\n\t"                             \
			     "cbz w13, %l[cmpfail]\n\t"                                 \
			     "mov x11, #0\n\t"                                          \
			     "5:\n\t"                                                   \
			     "ldr x9, [%[in], x11, lsl #3]\n\t"                         \
			     "str x9, [%[region], x12, lsl #3]\n\t"                     \
			     "add x12, x12, #1\n\t"                                     \
			     "add x11, x11, #1\n\t"                                     \
			     "cmp x11, x13\n\t"                                         \
			     "b.lo 5b\n\t"                                              \
			     "str w13, [%[pushed]]\n\t" VC_RSEQ_INJECT_ASM(2)           \
			     "stlrh w12, [%[hdr]]\n\t" /* commit */                     \
			     VC_RSEQ_ASM_EPILOGUE                                       \
			     :                                                          \
			     : [rs] "r"(rs), [idx] "r"(idx), [hdr] "r"(hdr),            \
			       [region] "r"(region), [in] "r"(in), [n] "r"(n),          \
			       [pushed] "r"(pushed)                                     \
			     : VC_RSEQ_CLOBBERS                                         \
			     : aborted, cmpfail);                                       \
		return 0;                                                       \
	aborted:                                                                        \
		return -1;                                                      \
	cmpfail:                                                                        \
		return 1;                                                       \
	}

VC_RSEQ_DEFINE_OPS(cpu_id, 4)
VC_RSEQ_DEFINE_OPS(mm_cid, 24)

/* *word = newv if *word == expect (the 64-bit commit store); used to change a
 * stack header (capacity) from the index that owns it. */
#define VC_RSEQ_DEFINE_CMPEQ_STORE(name, field_off)                                     \
	static inline __attribute__((always_inline)) int vc_rseq_cmpeq_store_##name(   \
	    struct vc_rseq_abi *rs, uint32_t idx, uint64_t *word, uint64_t expect,      \
	    uint64_t newv)                                                              \
	{                                                                               \
		__asm__ goto(VC_RSEQ_ASM_PROLOGUE(field_off)                            \
			     "ldr x10, [%[word]]\n\t"                                   \
			     "cmp x10, %[expect]\n\t"                                   \
			     "b.ne %l[cmpfail]\n\t" VC_RSEQ_INJECT_ASM(2)               \
			     "stlr %[newv], [%[word]]\n\t" /* commit */                 \
			     VC_RSEQ_ASM_EPILOGUE                                       \
			     :                                                          \
			     : [rs] "r"(rs), [idx] "r"(idx), [word] "r"(word),          \
			       [expect] "r"(expect), [newv] "r"(newv)                   \
			     : VC_RSEQ_CLOBBERS                                         \
			     : aborted, cmpfail);                                       \
		return 0;                                                       \
	aborted:                                                                        \
		return -1;                                                      \
	cmpfail:                                                                        \
		return 1;                                                       \
	}
VC_RSEQ_DEFINE_CMPEQ_STORE(cpu_id, 4)
VC_RSEQ_DEFINE_CMPEQ_STORE(mm_cid, 24)

/* Node-tagged stacks: the 32-bit word at `tag` names the NUMA node of the objects
 * on the index's stacks. pop_local pops only while the tag equals the thread's
 * node_id (offset 20); push_tagged pushes only while the tag equals `node`.
 * Either returns 1 (nothing written) on a mismatch, as for empty / full. */
#define VC_RSEQ_DEFINE_NODE_OPS(name, field_off)                                        \
	static inline __attribute__((always_inline)) int vc_rseq_pop_local_##name(     \
	    struct vc_rseq_abi *rs, uint32_t idx, struct vc_rseq_stack *hdr,            \
	    void *region, const uint32_t *tag, void **out)                              \
	{                                                                               \
		void *obj;                                                              \
		__asm__ goto(VC_RSEQ_ASM_PROLOGUE(field_off)                            \
			     VC_RSEQ_ASM_HEADER_OR_EMPTY                                \
			     "ldr w13, [%[rs], #" VC_RSEQ_STR(VC_RSEQ_OFF_NODE_ID) "]\n\t" \
			     "ldr w11, [%[tag]]\n\t"                                    \
			     "cmp w11, w13\n\t"                                         \
			     "b.ne %l[cmpfail]\n\t"                                     \
			     "add x13, %[region], x12, lsl #3\n\t"                      \
			     "ldur %[obj], [x13, #-8]\n\t" VC_RSEQ_INJECT_ASM(2)        \
			     "sub x10, x10, #1\n\t"                                     \
			     "stlr x10, [%[hdr]]\n\t" /* commit */                      \
			     VC_RSEQ_ASM_EPILOGUE                                       \
			     : [obj] "=&r"(obj)                                         \
			     : [rs] "r"(rs), [idx] "r"(idx), [hdr] "r"(hdr),            \
			       [region] "r"(region), [tag] "r"(tag)                     \
			     : VC_RSEQ_CLOBBERS                                         \
			     : aborted, cmpfail);                                       \
		*out = obj;                                                     \
		return 0;                                                       \
	aborted:                                                                        \
		return -1;                                                      \
	cmpfail:                                                                        \
		return 1;                                                       \
	}                                                                               \
	static inline __attribute__((always_inline)) int vc_rseq_push_tagged_##name(   \
	    struct vc_rseq_abi *rs, uint32_t idx, struct vc_rseq_stack *hdr,            \
	    void *region, const uint32_t *tag, uint32_t node, void *p)                  \
	{                                                                               \
		__asm__ goto(VC_RSEQ_ASM_PROLOGUE(field_off)                            \
			     VC_RSEQ_ASM_HEADER_OR_FULL                                 \
			     "ldr w13, [%[tag]]\n\t"                                    \
			     "cmp w13, %w[node]\n\t"                                    \
			     "b.ne %l[cmpfail]\n\t"                                     \
			     "str %[p], [%[region], x12, lsl #3]\n\t"                   \
			     VC_RSEQ_INJECT_ASM(2)                                      \
			     "add x10, x10, #1\n\t"                                     \
			     "stlr x10, [%[hdr]]\n\t" /* commit */                      \
			     VC_RSEQ_ASM_EPILOGUE                                       \
			     :                                                          \
			     : [rs] "r"(rs), [idx] "r"(idx), [hdr] "r"(hdr),            \
			       [region] "r"(region), [tag] "r"(tag), [node] "r"(node),  \
			       [p] "r"(p)                                               \
			     : VC_RSEQ_CLOBBERS                                         \
			     : aborted, cmpfail);                                       \
		return 0;                                                       \
	aborted:                                                                        \
		return -1;                                                      \
	cmpfail:                                                                        \
		return 1;                                                       \
	}
VC_RSEQ_DEFINE_NODE_OPS(cpu_id, 4)
VC_RSEQ_DEFINE_NODE_OPS(mm_cid, 24)
