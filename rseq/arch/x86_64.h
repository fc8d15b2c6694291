/* rseq/arch/x86_64.h - restartable critical sections for x86-64.
 *
 * Include <rseq/rseq.h>, never this file. Every helper exists in two variants,
 * generated from one asm body: _cpu_id (index = rseq cpu_id, offset 4) and _mm_cid
 * (index = rseq mm_cid, offset 24). Each one:
 *   1. publishes its descriptor in rseq_cs (the only field we write),
 *   2. compares the index field with the index the caller computed its addresses
 *      from; a mismatch aborts (-1),
 *   3. does its loads and speculative stores to memory no one else may read,
 *   4. ends with a single commit store.
 * The abort handler is in section __rseq_failure, preceded by the signature.
 */
#ifndef VC_RSEQ_ARCH_INSIDE
#error "include rseq/rseq.h, not rseq/arch/x86_64.h"
#endif

#if defined(VC_RSEQ_INJECT) && VC_RSEQ_INJECT
/* Delay loop (and, when the yield knob is on, a long spin that invites preemption and
 * migration) at an injection point. No system call: the rseq ABI forbids them inside
 * a critical section, and a kernel need not abort a section it returns to from one. */
#define VC_RSEQ_INJECT_ASM(n)                                                          \
	"movq %%rax, %%r10\n\t" /* the helper's rax survives the injection */          \
	"movl vc_rseq_inject_delay(%%rip), %%eax\n\t"                                   \
	"testl %%eax, %%eax\n\t"                                                        \
	"jz 7" #n "1f\n\t"                                                              \
	"7" #n "0:\n\t"                                                                 \
	"decl %%eax\n\t"                                                                \
	"jnz 7" #n "0b\n\t"                                                             \
	"7" #n "1:\n\t"                                                                 \
	"movl vc_rseq_inject_yield(%%rip), %%eax\n\t"                                   \
	"testl %%eax, %%eax\n\t"                                                        \
	"jz 7" #n "2f\n\t"                                                              \
	"movl $200000, %%eax\n\t" /* a long spin: no system call inside a section */    \
	"7" #n "3:\n\t"                                                                 \
	"decl %%eax\n\t"                                                                \
	"jnz 7" #n "3b\n\t"                                                             \
	"7" #n "2:\n\t"                                                                 \
	"movq %%r10, %%rax\n\t"
#define VC_RSEQ_INJECT_ABORT "lock; incq vc_rseq_inject_aborts(%%rip)\n\t"
#define VC_RSEQ_INJECT_CLOBBERS "rcx", "r10", "r11",
#else
#define VC_RSEQ_INJECT_ASM(n)
#define VC_RSEQ_INJECT_ABORT
#define VC_RSEQ_INJECT_CLOBBERS
#endif

/* The header word's format is rseq.h's: begin and end are shifted out by its
 * constants; current is the low 16 bits (ax), which the batch commits store alone. */
_Static_assert(VC_RSEQ_STACK_CURRENT_SHIFT == 0, "current is the word's low 16 bits");

/* The stack header is read with one 64-bit load into rax (and a copy in rdx), never
 * field by field: a section must see one state of the header. Reading `current` and
 * `begin`/`end` with two loads lets a section that starts after a drain's stop
 * combine `current` of the stopped word with `begin`/`end` of the next state (the
 * zero header of a released region, or a reopened one) and commit into it; the
 * fence cannot help, since the section began after the stop. With one load, a
 * section either saw a live header (then any later stop is followed by a fence that
 * aborts it before the header changes again) or a stopped or zero one (and fails). */
#define VC_RSEQ_ASM_LOAD_HEADER                                                         \
	"movq (%[hdr]), %%rax\n\t"                                                      \
	"movq %%rax, %%rdx\n\t"
/* The header in rax (current in ax); to cmpfail when the stack is empty
 * (current <= begin) or, for the second, full (current >= end). Clobber rdx. */
#define VC_RSEQ_ASM_HEADER_OR_EMPTY                                                     \
	VC_RSEQ_ASM_LOAD_HEADER                                                         \
	"shrq $" VC_RSEQ_STR(VC_RSEQ_STACK_BEGIN_SHIFT) ", %%rdx\n\t" /* dx = begin */  \
	"cmpw %%dx, %%ax\n\t"                                                           \
	"jbe %l[cmpfail]\n\t"
#define VC_RSEQ_ASM_HEADER_OR_FULL                                                      \
	VC_RSEQ_ASM_LOAD_HEADER                                                         \
	"shrq $" VC_RSEQ_STR(VC_RSEQ_STACK_END_SHIFT) ", %%rdx\n\t" /* dx = end */      \
	"cmpw %%dx, %%ax\n\t"                                                           \
	"jae %l[cmpfail]\n\t"

/* Descriptor (label 3), start (1), post-commit (2), abort handler (4). */
#define VC_RSEQ_ASM_PROLOGUE(field_off)                                                 \
	".pushsection __rseq_cs, \"aw\"\n\t"                                            \
	".balign 32\n\t"                                                                \
	"3:\n\t"                                                                        \
	".long 0x0, 0x0\n\t"                                                            \
	".quad 1f, (2f - 1f), 4f\n\t"                                                   \
	".popsection\n\t"                                                               \
	"leaq 3b(%%rip), %%rax\n\t"                                                     \
	"movq %%rax, " VC_RSEQ_STR(VC_RSEQ_OFF_RSEQ_CS) "(%[rs])\n\t"                    \
	"1:\n\t"                                                                        \
	"cmpl %[idx], " VC_RSEQ_STR(field_off) "(%[rs])\n\t"                             \
	"jnz 4f\n\t" VC_RSEQ_INJECT_ASM(1)

#define VC_RSEQ_ASM_EPILOGUE                                                            \
	"2:\n\t"                                                                        \
	".pushsection __rseq_failure, \"ax\"\n\t"                                       \
	".byte 0x0f, 0xb9, 0x3d\n\t"                                                    \
	".long " VC_RSEQ_STR(VC_RSEQ_SIG_ASM) "\n\t"                                    \
	"4:\n\t" VC_RSEQ_INJECT_ABORT "jmp %l[aborted]\n\t"                              \
	".popsection\n\t"

#define VC_RSEQ_SIG_ASM 0x53053053

#define VC_RSEQ_DEFINE_OPS(name, field_off)                                             \
	/* *v += count, on the index's counter. */                                      \
	static inline __attribute__((always_inline)) int vc_rseq_addv_##name(          \
	    struct vc_rseq_abi *rs, uint32_t idx, intptr_t *v, intptr_t count)          \
	{                                                                               \
		__asm__ goto(VC_RSEQ_ASM_PROLOGUE(field_off)                            \
			     "movq (%[v]), %%rdx\n\t" VC_RSEQ_INJECT_ASM(2)             \
			     "addq %[count], %%rdx\n\t"                                 \
			     "movq %%rdx, (%[v])\n\t" /* commit */                      \
			     VC_RSEQ_ASM_EPILOGUE                                       \
			     :                                                          \
			     : [rs] "r"(rs), [idx] "r"(idx), [v] "r"(v),                \
			       [count] "r"(count)                                       \
			     : VC_RSEQ_INJECT_CLOBBERS "rax", "rdx", "memory", "cc"     \
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
			     "movzwl %%ax, %%edx\n\t"                                   \
			     "movq -8(%[region], %%rdx, 8), %[obj]\n\t"                 \
			     VC_RSEQ_INJECT_ASM(2)                                      \
			     "decq %%rax\n\t"                                           \
			     "movq %%rax, (%[hdr])\n\t" /* commit */                    \
			     VC_RSEQ_ASM_EPILOGUE                                       \
			     : [obj] "=&r"(obj)                                         \
			     : [rs] "r"(rs), [idx] "r"(idx), [hdr] "r"(hdr),            \
			       [region] "r"(region)                                     \
			     : VC_RSEQ_INJECT_CLOBBERS "rax", "rdx", "memory", "cc"     \
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
			     "movzwl %%ax, %%edx\n\t"                                   \
			     "movq %[p], (%[region], %%rdx, 8)\n\t" VC_RSEQ_INJECT_ASM(2) \
			     "incq %%rax\n\t"                                           \
			     "movq %%rax, (%[hdr])\n\t" /* commit */                    \
			     VC_RSEQ_ASM_EPILOGUE                                       \
			     :                                                          \
			     : [rs] "r"(rs), [idx] "r"(idx), [hdr] "r"(hdr),            \
			       [region] "r"(region), [p] "r"(p)                         \
			     : VC_RSEQ_INJECT_CLOBBERS "rax", "rdx", "memory", "cc"     \
			     : aborted, cmpfail);                                       \
		return 0;                                                       \
	aborted:                                                                        \
		return -1;                                                      \
	cmpfail:                                                                        \
		return 1;                                                       \
	}                                                                               \
                                                                                        \
	/* Pop up to n objects into out[]; *popped gets how many (>= 1 on success). */ \
	static inline __attribute__((always_inline)) int vc_rseq_pop_batch_##name(     \
	    struct vc_rseq_abi *rs, uint32_t idx, struct vc_rseq_stack *hdr,            \
	    void *region, void **out, uint32_t n, uint32_t *popped)                     \
	{                                                                               \
		__asm__ goto(VC_RSEQ_ASM_PROLOGUE(field_off)                            \
			     VC_RSEQ_ASM_LOAD_HEADER                                    \
			     "shrq $" VC_RSEQ_STR(VC_RSEQ_STACK_BEGIN_SHIFT) ", %%rdx\n\t" \
			     "movzwl %%dx, %%edx\n\t" /* begin */                       \
			     "movzwl %%ax, %%eax\n\t" /* current */                     \
			     "movl %%eax, %%r8d\n\t"                                    \
			     "subl %%edx, %%r8d\n\t" /* available */                    \
			     "jbe %l[cmpfail]\n\t"                                      \
			     "cmpl %[n], %%r8d\n\t"                                     \
			     "cmova %[n], %%r8d\n\t" /* k = min(n, available) */        \
			     "testl %%r8d, %%r8d\n\t"                                   \
			     "jz %l[cmpfail]\n\t"                                       \
			     "xorl %%edx, %%edx\n\t"                                    \
			     "5:\n\t"                                                   \
			     "movq -8(%[region], %%rax, 8), %%r9\n\t"                   \
			     "movq %%r9, (%[out], %%rdx, 8)\n\t"                        \
			     "decl %%eax\n\t"                                           \
			     "incl %%edx\n\t"                                           \
			     "cmpl %%r8d, %%edx\n\t"                                    \
			     "jb 5b\n\t"                                                \
			     "movl %%r8d, (%[popped])\n\t" VC_RSEQ_INJECT_ASM(2)        \
			     "movw %%ax, (%[hdr])\n\t" /* commit */                     \
			     VC_RSEQ_ASM_EPILOGUE                                       \
			     :                                                          \
			     : [rs] "r"(rs), [idx] "r"(idx), [hdr] "r"(hdr),            \
			       [region] "r"(region), [out] "r"(out), [n] "r"(n),        \
			       [popped] "r"(popped)                                     \
			     : VC_RSEQ_INJECT_CLOBBERS "rax", "rdx", "r8", "r9",        \
			       "memory", "cc"                                           \
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
			     "movq %%rax, %%r8\n\t"                                     \
			     "shrq $" VC_RSEQ_STR(VC_RSEQ_STACK_END_SHIFT) ", %%r8\n\t" /* end */ \
			     "movzwl %%ax, %%eax\n\t" /* current */                     \
			     "subl %%eax, %%r8d\n\t" /* room */                         \
			     "jbe %l[cmpfail]\n\t"                                      \
			     "cmpl %[n], %%r8d\n\t"                                     \
			     "cmova %[n], %%r8d\n\t"                                    \
			     "testl %%r8d, %%r8d\n\t"                                   \
			     "jz %l[cmpfail]\n\t"                                       \
			     "xorl %%edx, %%edx\n\t"                                    \
			     "5:\n\t"                                                   \
			     "movq (%[in], %%rdx, 8), %%r9\n\t"                         \
			     "movq %%r9, (%[region], %%rax, 8)\n\t"                     \
			     "incl %%eax\n\t"                                           \
			     "incl %%edx\n\t"                                           \
			     "cmpl %%r8d, %%edx\n\t"                                    \
			     "jb 5b\n\t"                                                \
			     "movl %%r8d, (%[pushed])\n\t" VC_RSEQ_INJECT_ASM(2)        \
			     "movw %%ax, (%[hdr])\n\t" /* commit */                     \
			     VC_RSEQ_ASM_EPILOGUE                                       \
			     :                                                          \
			     : [rs] "r"(rs), [idx] "r"(idx), [hdr] "r"(hdr),            \
			       [region] "r"(region), [in] "r"(in), [n] "r"(n),          \
			       [pushed] "r"(pushed)                                     \
			     : VC_RSEQ_INJECT_CLOBBERS "rax", "rdx", "r8", "r9",        \
			       "memory", "cc"                                           \
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
			     "cmpq %[expect], (%[word])\n\t"                            \
			     "jnz %l[cmpfail]\n\t" VC_RSEQ_INJECT_ASM(2)                \
			     "movq %[newv], (%[word])\n\t" /* commit */                 \
			     VC_RSEQ_ASM_EPILOGUE                                       \
			     :                                                          \
			     : [rs] "r"(rs), [idx] "r"(idx), [word] "r"(word),          \
			       [expect] "r"(expect), [newv] "r"(newv)                   \
			     : VC_RSEQ_INJECT_CLOBBERS "rax", "rdx", "memory", "cc"     \
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
			     "movl " VC_RSEQ_STR(VC_RSEQ_OFF_NODE_ID) "(%[rs]), %%edx\n\t" \
			     "cmpl %%edx, (%[tag])\n\t"                                 \
			     "jnz %l[cmpfail]\n\t"                                      \
			     "movzwl %%ax, %%edx\n\t"                                   \
			     "movq -8(%[region], %%rdx, 8), %[obj]\n\t"                 \
			     VC_RSEQ_INJECT_ASM(2)                                      \
			     "decq %%rax\n\t"                                           \
			     "movq %%rax, (%[hdr])\n\t" /* commit */                    \
			     VC_RSEQ_ASM_EPILOGUE                                       \
			     : [obj] "=&r"(obj)                                         \
			     : [rs] "r"(rs), [idx] "r"(idx), [hdr] "r"(hdr),            \
			       [region] "r"(region), [tag] "r"(tag)                     \
			     : VC_RSEQ_INJECT_CLOBBERS "rax", "rdx", "memory", "cc"     \
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
			     "cmpl %[node], (%[tag])\n\t"                               \
			     "jnz %l[cmpfail]\n\t"                                      \
			     "movzwl %%ax, %%edx\n\t"                                   \
			     "movq %[p], (%[region], %%rdx, 8)\n\t" VC_RSEQ_INJECT_ASM(2) \
			     "incq %%rax\n\t"                                           \
			     "movq %%rax, (%[hdr])\n\t" /* commit */                    \
			     VC_RSEQ_ASM_EPILOGUE                                       \
			     :                                                          \
			     : [rs] "r"(rs), [idx] "r"(idx), [hdr] "r"(hdr),            \
			       [region] "r"(region), [tag] "r"(tag), [node] "r"(node),  \
			       [p] "r"(p)                                               \
			     : VC_RSEQ_INJECT_CLOBBERS "rax", "rdx", "memory", "cc"     \
			     : aborted, cmpfail);                                       \
		return 0;                                                       \
	aborted:                                                                        \
		return -1;                                                      \
	cmpfail:                                                                        \
		return 1;                                                       \
	}
VC_RSEQ_DEFINE_NODE_OPS(cpu_id, 4)
VC_RSEQ_DEFINE_NODE_OPS(mm_cid, 24)

/* Slab forms (rseq.h, "Slab sections"): the section reads the index itself, right
 * after publishing its descriptor, so no compare of a caller's index is needed and
 * the caller computes nothing before it. The area is addressed through %fs at the
 * process's offset (one load of a global, no read of the thread pointer). rdx holds
 * the index, then the region; rax the header word; r8 the scratch of the bound and
 * lane tests and the position (after a pop's section, the slot below the new top,
 * whose object it prefetches: vc_rseq_slab_prefetch_next in rseq.h). */
#define VC_RSEQ_ASM_SLAB_PROLOGUE(field_off)                                            \
	".pushsection __rseq_cs, \"aw\"\n\t"                                            \
	".balign 32\n\t"                                                                \
	"3:\n\t"                                                                        \
	".long 0x0, 0x0\n\t"                                                            \
	".quad 1f, (2f - 1f), 4f\n\t"                                                   \
	".popsection\n\t"                                                               \
	"testq %[area], %[area]\n\t" /* 0: before vc_rseq_init, no area to write */    \
	"jz %l[cmpfail]\n\t"                                                            \
	"leaq 3b(%%rip), %%rax\n\t"                                                     \
	"movq %%rax, %%fs:" VC_RSEQ_STR(VC_RSEQ_OFF_RSEQ_CS) "(%[area])\n\t"            \
	"1:\n\t"                                                                        \
	"movl %%fs:" VC_RSEQ_STR(field_off) "(%[area]), %%edx\n\t" VC_RSEQ_INJECT_ASM(1) \
	"cmpl %[limit], %%edx\n\t"                                                      \
	"jae %l[cmpfail]\n\t"
/* The index in rdx becomes its region's address. */
#define VC_RSEQ_ASM_SLAB_REGION                                                         \
	"shlq $" VC_RSEQ_STR(VC_RSEQ_SLAB_SHIFT) ", %%rdx\n\t"                          \
	"addq %[base], %%rdx\n\t"

#define VC_RSEQ_HAVE_SLAB_OPS 1
#define VC_RSEQ_DEFINE_SLAB_OPS(name, field_off)                                        \
	static inline __attribute__((always_inline)) int vc_rseq_slab_pop_##name(      \
	    char *const *base, const uint32_t *limit, uintptr_t stack, void **out)      \
	{                                                                               \
		void *obj;                                                              \
		__asm__ goto(VC_RSEQ_ASM_SLAB_PROLOGUE(field_off)                       \
			     VC_RSEQ_ASM_SLAB_REGION                                    \
			     "movq (%%rdx, %[stack], 8), %%rax\n\t"                     \
			     "movq %%rax, %%r8\n\t"                                     \
			     "shrq $" VC_RSEQ_STR(VC_RSEQ_STACK_BEGIN_SHIFT) ", %%r8\n\t" \
			     "cmpw %%r8w, %%ax\n\t"                                     \
			     "jbe %l[cmpfail]\n\t"                                      \
			     "movzwl %%ax, %%r8d\n\t"                                   \
			     "movq -8(%%rdx, %%r8, 8), %[obj]\n\t" VC_RSEQ_INJECT_ASM(2) \
			     "decq %%rax\n\t"                                           \
			     "movq %%rax, (%%rdx, %[stack], 8)\n\t" /* commit */        \
			     VC_RSEQ_ASM_EPILOGUE                                       \
			     /* after the section: vc_rseq_slab_prefetch_next's hint */ \
			     "movq -16(%%rdx, %%r8, 8), %%r8\n\t"                       \
			     "prefetcht0 (%%r8)\n\t"                                    \
			     : [obj] "=&r"(obj)                                         \
			     : [area] "r"(vc_rseq_info_.area_offset), [limit] "m"(*limit), \
			       [base] "m"(*base), [stack] "r"(stack)                    \
			     : VC_RSEQ_INJECT_CLOBBERS "rax", "rdx", "r8", "memory", "cc" \
			     : aborted, cmpfail);                                       \
		*out = obj;                                                     \
		return 0;                                                       \
	aborted:                                                                        \
		return -1;                                                      \
	cmpfail:                                                                        \
		return 1;                                                       \
	}                                                                               \
	static inline __attribute__((always_inline)) int vc_rseq_slab_push_##name(     \
	    char *const *base, const uint32_t *limit, uintptr_t stack, uint32_t lanes,  \
	    void *p)                                                                    \
	{                                                                               \
		__asm__ goto(VC_RSEQ_ASM_SLAB_PROLOGUE(field_off)                       \
			     /* the bit offset of a 32-bit bt is taken mod 32 */        \
			     "btl %%edx, %[lanes]\n\t"                                  \
			     "jnc %l[other_lane]\n\t" VC_RSEQ_ASM_SLAB_REGION           \
			     "movq (%%rdx, %[stack], 8), %%rax\n\t"                     \
			     "movq %%rax, %%r8\n\t"                                     \
			     "shrq $" VC_RSEQ_STR(VC_RSEQ_STACK_END_SHIFT) ", %%r8\n\t" \
			     "cmpw %%r8w, %%ax\n\t"                                     \
			     "jae %l[cmpfail]\n\t"                                      \
			     "movzwl %%ax, %%r8d\n\t"                                   \
			     "movq %[p], (%%rdx, %%r8, 8)\n\t" VC_RSEQ_INJECT_ASM(2)    \
			     "incq %%rax\n\t"                                           \
			     "movq %%rax, (%%rdx, %[stack], 8)\n\t" /* commit */        \
			     VC_RSEQ_ASM_EPILOGUE                                       \
			     :                                                          \
			     : [area] "r"(vc_rseq_info_.area_offset), [limit] "m"(*limit), \
			       [base] "m"(*base), [stack] "r"(stack), [lanes] "r"(lanes), \
			       [p] "r"(p)                                               \
			     : VC_RSEQ_INJECT_CLOBBERS "rax", "rdx", "r8", "memory", "cc" \
			     : aborted, cmpfail, other_lane);                           \
		return 0;                                                       \
	aborted:                                                                        \
		return -1;                                                      \
	cmpfail:                                                                        \
		return 1;                                                       \
	other_lane:                                                                     \
		return 2;                                                       \
	}
VC_RSEQ_DEFINE_SLAB_OPS(cpu_id, 4)
VC_RSEQ_DEFINE_SLAB_OPS(mm_cid, 24)
