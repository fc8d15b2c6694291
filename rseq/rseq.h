/* rseq/rseq.h - the one public header of vcmalloc's rseq layer.
 *
 * What this layer gives:
 *   - discovery (vc_rseq_init): who registered this process's rseq areas (glibc or
 *     us), how many bytes of the area the kernel fills, which of cpu_id / node_id /
 *     mm_cid are usable, the possible CPU count, whether the membarrier fence works;
 *   - this thread's area (vc_rseq_area), registering our own lazily when glibc did not;
 *   - fast reads of the current ids with fallbacks (vc_rseq_current_*);
 *   - restartable critical sections over per-index data, indexed by either mm_cid or
 *     cpu_id (arch/x86_64.h, arch/aarch64.h): a counter add, and push / pop / batch push / batch pop
 *     on a bounded per-index array of pointers (struct vc_rseq_stack);
 *   - a fence for cross-index work (vc_rseq_fence).
 *
 * What it never does: call malloc, dlsym or anything that may allocate; write a
 * kernel-owned field of the rseq area; know anything about memory allocation.
 *
 * Return convention of every critical section helper (as in librseq):
 *    0  done (the commit store happened),
 *    1  the compare failed (stack empty for a pop, full for a push); nothing written,
 *   -1  aborted: preempted, migrated, signalled, or the index changed. Re-read the
 *       index and retry.
 */
#ifndef VC_RSEQ_H
#define VC_RSEQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VC_RSEQ_HIDDEN __attribute__((visibility("hidden")))

/* Who owns the registration of the rseq areas of this process. */
enum vc_rseq_owner {
	VC_RSEQ_OWNER_NONE = 0, /* rseq unusable: no kernel support or the syscall is denied */
	VC_RSEQ_OWNER_GLIBC,    /* glibc registered every thread; we use its area */
	VC_RSEQ_OWNER_SELF,     /* we register a TLS area of our own, lazily per thread */
};

/* Which field indexes per-index data. The value is the field's offset. */
enum vc_rseq_index {
	VC_RSEQ_INDEX_CPU_ID = VC_RSEQ_OFF_CPU_ID,
	VC_RSEQ_INDEX_MM_CID = VC_RSEQ_OFF_MM_CID,
};

struct vc_rseq_info {
	bool initialised;
	enum vc_rseq_owner owner;
	unsigned kernel_feature_size; /* getauxval(AT_RSEQ_FEATURE_SIZE); 0: pre-6.3 kernel */
	unsigned kernel_align;        /* getauxval(AT_RSEQ_ALIGN) */
	unsigned glibc_size;          /* __rseq_size, 0 when glibc did not register */
	unsigned usable_size;         /* bytes of the area the kernel keeps up to date */
	bool has_cpu_id;              /* rseq registered: cpu_id and critical sections */
	bool has_node_id;             /* usable_size >= 24 */
	bool has_mm_cid;              /* usable_size >= 28 */
	bool fence;                   /* membarrier private-expedited-rseq registered */
	unsigned possible_cpus;       /* from /sys/devices/system/cpu/possible */
	ptrdiff_t area_offset;        /* thread-pointer offset of this process's areas */
};

/* Filled once by vc_rseq_init(); read-only afterwards. */
extern struct vc_rseq_info vc_rseq_info_ VC_RSEQ_HIDDEN;

/* Discovery, done once (later calls return the same answers). Async-signal-safe
 * after the first call; does not allocate. Safe to call before main. */
const struct vc_rseq_info *vc_rseq_init(void) VC_RSEQ_HIDDEN;

/* Possible CPU count of the machine: highest id in /sys/devices/system/cpu/possible
 * plus one (never the affinity count). */
unsigned vc_rseq_possible_cpus(void) VC_RSEQ_HIDDEN;

/* Slow part of vc_rseq_area(): registers our own area for this thread. */
struct vc_rseq_abi *vc_rseq_area_slow(void) VC_RSEQ_HIDDEN;

/* The thread pointer, from which glibc's __rseq_offset counts: %fs:0 on x86-64
 * (the TCB's self pointer), TPIDR_EL0 on aarch64 (what __builtin_thread_pointer
 * reads there, and on the other architectures GCC supports it for). */
static inline char *vc_rseq_thread_pointer(void)
{
#if defined(__x86_64__)
	char *tp;
	__asm__("mov %%fs:0, %0" : "=r"(tp));
	return tp;
#else
	return (char *)__builtin_thread_pointer();
#endif
}

/* This thread's rseq area at the process's offset, without registering it: what
 * vc_rseq_area returns when glibc registered every thread. Hot paths read it
 * directly and leave the registration to their slow paths (vc_rseq_area). */
static inline struct vc_rseq_abi *vc_rseq_area_unchecked(void)
{
	return (struct vc_rseq_abi *)(vc_rseq_thread_pointer() + vc_rseq_info_.area_offset);
}

/* This thread's registered rseq area, or NULL when rseq is unusable here. */
static inline struct vc_rseq_abi *vc_rseq_area(void)
{
	struct vc_rseq_abi *a = vc_rseq_area_unchecked();
	if (__builtin_expect(vc_rseq_info_.owner == VC_RSEQ_OWNER_GLIBC, 1))
		return a;
	return vc_rseq_area_slow();
}

/* vc_rseq_fence works in this process (membarrier private-expedited-rseq). */
static inline bool vc_rseq_has_fence(void)
{
	return vc_rseq_info_.fence;
}

/* Raw read of an index field of an area; values >= possible CPUs mean "not usable". */
static inline uint32_t vc_rseq_read_index(const struct vc_rseq_abi *a, enum vc_rseq_index ix)
{
	return *(const volatile uint32_t *)((const char *)a + ix);
}

/* Current ids, with fallbacks where the field is missing:
 *   cpu:    rseq cpu_id, else sched_getcpu();
 *   node:   rseq node_id (feature size >= 24), else getcpu();
 *   mm_cid: rseq mm_cid (feature size >= 28), else the cpu id (unique among running
 *           threads too, but bounded only by the possible CPU count). */
int vc_rseq_current_cpu(void) VC_RSEQ_HIDDEN;
int vc_rseq_current_node(void) VC_RSEQ_HIDDEN;
int vc_rseq_current_mm_cid(void) VC_RSEQ_HIDDEN;

/* Fence for cross-index work: after it returns, every critical section that was in
 * flight on any CPU of this process when it was called has been aborted or has
 * completed. Returns 0, or -1 when the kernel lacks membarrier rseq (info.fence is
 * false): callers must then not modify another index's data. */
int vc_rseq_fence(void) VC_RSEQ_HIDDEN;
/* In a fork child: renew the fence registration for the new memory space. */
void vc_rseq_fence_after_fork(void) VC_RSEQ_HIDDEN;

/* A bounded per-index array of pointers. The header is one 64-bit word so that a
 * drainer can replace it with one compare-and-swap. Positions are in 8-byte slots
 * from the start of the index's region: the live objects are slots [begin, current).
 * Critical sections change only `current`; begin and end change only through
 * vc_rseq_cmpeq_store on the owning index, or while the stack is stopped.
 *
 * Commit stores. The single-object pop and push (and their node forms) commit the
 * whole word they loaded with `current` moved by one: the next operation's 64-bit
 * load of the header then forwards from that store. A 16-bit commit followed by a
 * 64-bit load cannot be forwarded on x86 and stalls the load until the store leaves
 * the store buffer: measured, it doubled the cost of a malloc/free pair in a tight
 * loop (12 ns -> 6 ns). The batch forms commit `current` alone (16 bits); they run on
 * slow paths, where that stall does not matter.
 *
 * A zero header means "never used": pops see it empty, pushes full, and nothing can
 * be in flight against it. To stop a live stack (vc_rseq_stack_stop), replace its
 * header H with vc_rseq_stack_stop_word(H) (compare-and-swap), then vc_rseq_fence().
 * A section in flight at the stop may still commit before the fence returns:
 *   - a batch commit (16 bits) changes only `current`: begin = 0xffff and end = 0
 *     still make every pop, push and batch fail whatever `current` holds;
 *   - a single-object commit writes back the live word it loaded, plus or minus one:
 *     the stack is live again, and consistent (that section's view of it).
 * So after the fence, re-read the header: when it is no longer the stop word, stop it
 * again and fence again, until a fence passes with the stop word in place (then no
 * section that saw a live header is left, and none can start). Only then are the low
 * 16 bits the final `current`. (Zero would not do as a stop word: a late 16-bit
 * commit into a zero header makes pops succeed again, below the real begin.)
 *
 * Every operation reads the header with a single 64-bit load, so that it acts on one
 * state of the header: a section that starts after the stop sees the stop word and
 * fails, even when the drainer then releases (zeroes) or reopens the stack while the
 * section runs. Field-by-field loads could pair the stopped `current` with the next
 * state's `begin`/`end` and commit after the fence. */
struct vc_rseq_stack {
	uint16_t current;
	uint16_t reserved;
	uint16_t begin;
	uint16_t end;
} __attribute__((aligned(8)));
/* The header word: the one definition of its format. The sections (arch/<arch>.h,
 * which shift by these constants), the allocator and the tests read and build it
 * only through what follows. Little-endian 64-bit word: current in bits 0-15, begin
 * in 32-47, end in 48-63, bits 16-31 zero; batch commits store the 16 bits of
 * current at offset 0. */
#define VC_RSEQ_STACK_CURRENT_SHIFT 0
#define VC_RSEQ_STACK_BEGIN_SHIFT 32
#define VC_RSEQ_STACK_END_SHIFT 48
#define VC_RSEQ_STACK_FIELD_MASK 0xffff
_Static_assert(sizeof(struct vc_rseq_stack) == 8 && _Alignof(struct vc_rseq_stack) == 8,
	       "a stack header is one aligned 64-bit word");
_Static_assert(offsetof(struct vc_rseq_stack, current) * 8 == VC_RSEQ_STACK_CURRENT_SHIFT &&
		   offsetof(struct vc_rseq_stack, begin) * 8 == VC_RSEQ_STACK_BEGIN_SHIFT &&
		   offsetof(struct vc_rseq_stack, end) * 8 == VC_RSEQ_STACK_END_SHIFT,
	       "the struct's fields sit at the word's shifts (little-endian)");
_Static_assert(sizeof(((struct vc_rseq_stack *)0)->current) * 8 == 16 &&
		   VC_RSEQ_STACK_FIELD_MASK == UINT16_MAX,
	       "positions are 16 bits");

static inline uint64_t vc_rseq_stack_word(uint16_t current, uint16_t begin, uint16_t end)
{
	return (uint64_t)current << VC_RSEQ_STACK_CURRENT_SHIFT |
	       (uint64_t)begin << VC_RSEQ_STACK_BEGIN_SHIFT |
	       (uint64_t)end << VC_RSEQ_STACK_END_SHIFT;
}
static inline uint16_t vc_rseq_stack_current(uint64_t w)
{
	return (uint16_t)(w >> VC_RSEQ_STACK_CURRENT_SHIFT);
}
static inline uint16_t vc_rseq_stack_begin(uint64_t w)
{
	return (uint16_t)(w >> VC_RSEQ_STACK_BEGIN_SHIFT);
}
static inline uint16_t vc_rseq_stack_end(uint64_t w)
{
	return (uint16_t)(w >> VC_RSEQ_STACK_END_SHIFT);
}
/* The word with `current` moved by delta (the result must stay in 0..0xffff, so no
 * carry or borrow reaches the other fields): what a single push (+1) or pop (-1)
 * commits. */
static inline uint64_t vc_rseq_stack_moved(uint64_t w, int delta)
{
	return w + ((uint64_t)(int64_t)delta << VC_RSEQ_STACK_CURRENT_SHIFT);
}
/* The same word as a struct, and back. */
static inline uint64_t vc_rseq_stack_pack(struct vc_rseq_stack h)
{
	return vc_rseq_stack_word(h.current, h.begin, h.end) |
	       (uint64_t)h.reserved << 16;
}
static inline struct vc_rseq_stack vc_rseq_stack_unpack(uint64_t w)
{
	return (struct vc_rseq_stack){.current = vc_rseq_stack_current(w),
				      .reserved = (uint16_t)(w >> 16),
				      .begin = vc_rseq_stack_begin(w),
				      .end = vc_rseq_stack_end(w)};
}
/* The header as the word compare-and-swap and cmpeq_store work on. */
static inline uint64_t *vc_rseq_stack_word_of(struct vc_rseq_stack *h)
{
	return (uint64_t *)(void *)h;
}

#define VC_RSEQ_STACK_STOPPED_BEGIN 0xffffu

/* The stop word of a header: its current kept, begin 0xffff, end 0. */
static inline uint64_t vc_rseq_stack_stop_word(uint64_t live)
{
	return vc_rseq_stack_word(vc_rseq_stack_current(live), VC_RSEQ_STACK_STOPPED_BEGIN, 0);
}

static inline bool vc_rseq_stack_is_stopped(uint64_t h)
{
	return vc_rseq_stack_begin(h) == VC_RSEQ_STACK_STOPPED_BEGIN && vc_rseq_stack_end(h) == 0;
}

/* Stop the stack whose header word is *word (compare-and-swap to the stop word of
 * whatever it holds). Returns true when it was live (or zero) and is now stopped,
 * false when it was already stopped. The caller fences afterwards and re-checks. */
static inline bool vc_rseq_stack_stop(uint64_t *word)
{
	uint64_t h = __atomic_load_n(word, __ATOMIC_ACQUIRE);
	while (!vc_rseq_stack_is_stopped(h)) {
		if (__atomic_compare_exchange_n(word, &h, vc_rseq_stack_stop_word(h), 0,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return true;
	}
	return false;
}

#if defined(VC_RSEQ_INJECT) && VC_RSEQ_INJECT
/* Test builds: delay loops and yields inside critical sections, abort counting. */
extern volatile int vc_rseq_inject_delay VC_RSEQ_HIDDEN; /* spin iterations, 0: none */
extern volatile int vc_rseq_inject_yield VC_RSEQ_HIDDEN; /* 1: long spin inside */
extern volatile long vc_rseq_inject_aborts VC_RSEQ_HIDDEN;
#endif

#ifdef __cplusplus
}
#endif

/* Shared by the architecture headers. */
#define VC_RSEQ_STR_(x) #x
#define VC_RSEQ_STR(x) VC_RSEQ_STR_(x)

/* Slab sections (vc_rseq_slab_pop_<index>, vc_rseq_slab_push_<index>): the stacks
 * of the index the calling thread runs as, in a slab of per-index regions: index
 * i's region starts at *base + (i << VC_RSEQ_SLAB_SHIFT), stack k's header is the
 * k-th word of the region, and positions count 8-byte slots from the region's start
 * (the layout of the forms above, with header and slots in one region). The section
 * itself reads the index, after publishing its descriptor: from that load on,
 * whatever moves the thread (preemption, migration, a signal) aborts the section,
 * so the index is never compared with one read before it. They fail (1, nothing
 * written) when the index is >= *limit, as on an empty stack (pop) or a full or
 * stopped one (push); the push also returns 2, nothing written, when bit
 * (index & VC_RSEQ_SLAB_LANES_MASK) of `lanes` is clear. -1: aborted, retry. A
 * successful pop ends with a prefetch of the object the next pop would return
 * (vc_rseq_slab_prefetch_next). Before
 * vc_rseq_init() they fail (1) at once: the area offset is still 0, and a section
 * that published its descriptor there would write the thread's TCB.
 *   int vc_rseq_slab_pop_<index>(char *const *base, const uint32_t *limit,
 *                                uintptr_t stack, void **out);
 *   int vc_rseq_slab_push_<index>(char *const *base, const uint32_t *limit,
 *                                 uintptr_t stack, uint32_t lanes, void *p);
 * Architectures without their own (VC_RSEQ_HAVE_SLAB_OPS) get them below, built
 * from the forms that compare an index read before the section. */
#define VC_RSEQ_SLAB_SHIFT 21
#define VC_RSEQ_SLAB_LANES_MASK 31

/* Critical sections exist where an architecture header defines them; elsewhere
 * VC_RSEQ_NO_CRITICAL_SECTIONS is 1, none of the helpers below is declared, and the
 * allocator runs only its locked fallback mode (allocator/init.c). */
#if defined(__x86_64__)
#define VC_RSEQ_ARCH_INSIDE 1
#include "arch/x86_64.h"
#undef VC_RSEQ_ARCH_INSIDE
#define VC_RSEQ_NO_CRITICAL_SECTIONS 0
#elif defined(__aarch64__) && !defined(__AARCH64EB__)
#define VC_RSEQ_ARCH_INSIDE 1
#include "arch/aarch64.h"
#undef VC_RSEQ_ARCH_INSIDE
#define VC_RSEQ_NO_CRITICAL_SECTIONS 0
#else
#define VC_RSEQ_NO_CRITICAL_SECTIONS 1
#endif

#if !VC_RSEQ_NO_CRITICAL_SECTIONS
/* Index-generic forms of the helpers each architecture header defines twice
 * (_cpu_id, _mm_cid): ix is a constant at every call site we have, so the choice
 * folds away. */
#define VC_RSEQ_DISPATCH(op, ix, ...)                                                   \
	((ix) == VC_RSEQ_INDEX_MM_CID ? vc_rseq_##op##_mm_cid(__VA_ARGS__)             \
				      : vc_rseq_##op##_cpu_id(__VA_ARGS__))
#define vc_rseq_addv(ix, ...) VC_RSEQ_DISPATCH(addv, ix, __VA_ARGS__)
#define vc_rseq_pop(ix, ...) VC_RSEQ_DISPATCH(pop, ix, __VA_ARGS__)
#define vc_rseq_push(ix, ...) VC_RSEQ_DISPATCH(push, ix, __VA_ARGS__)
#define vc_rseq_pop_batch(ix, ...) VC_RSEQ_DISPATCH(pop_batch, ix, __VA_ARGS__)
#define vc_rseq_push_batch(ix, ...) VC_RSEQ_DISPATCH(push_batch, ix, __VA_ARGS__)
#define vc_rseq_cmpeq_store(ix, ...) VC_RSEQ_DISPATCH(cmpeq_store, ix, __VA_ARGS__)
#define vc_rseq_pop_local(ix, ...) VC_RSEQ_DISPATCH(pop_local, ix, __VA_ARGS__)
#define vc_rseq_push_tagged(ix, ...) VC_RSEQ_DISPATCH(push_tagged, ix, __VA_ARGS__)

/* After a slab pop, a hint: the object the stack's next pop returns is fetched for
 * writing (malloc clears its tag, the caller writes it), as the pop's caller gets
 * its own. Read outside the section, the header and the slot may be stale or of a
 * stack being resized: a prefetch of any value never faults. A slab stack begins
 * past the region's headers, so the slot below `current` is in the region (below a
 * header a release has zeroed meanwhile, the word before the region: the allocator
 * maps its regions inside larger strides, allocator/vcpu_slab.h). The
 * generic slab pop below calls it; x86-64's slab pop has the same two loads and
 * prefetch in its asm (arch/x86_64.h). */
static inline void vc_rseq_slab_prefetch_next(char *region, uintptr_t stack)
{
	uint64_t w = __atomic_load_n((uint64_t *)region + stack, __ATOMIC_RELAXED);
	void **below = (void **)region + vc_rseq_stack_current(w) - 1;
	__builtin_prefetch(__atomic_load_n(below, __ATOMIC_RELAXED), 1, 3);
}
#if !defined(VC_RSEQ_HAVE_SLAB_OPS)
/* The generic slab forms' first part: this thread's area and index, and the index's
 * region; NULL when the index is unusable (>= *limit, or before vc_rseq_init). */
static inline char *vc_rseq_slab_region(enum vc_rseq_index ix, char *const *base,
					const uint32_t *limit, struct vc_rseq_abi **rs,
					uint32_t *idx)
{
	if (vc_rseq_info_.area_offset == 0)
		return NULL;
	*rs = vc_rseq_area_unchecked();
	*idx = vc_rseq_read_index(*rs, ix);
	if (*idx >= *limit)
		return NULL;
	return *base + ((size_t)*idx << VC_RSEQ_SLAB_SHIFT);
}
#define VC_RSEQ_DEFINE_SLAB_OPS(name, ix)                                               \
	static inline int vc_rseq_slab_pop_##name(char *const *base, const uint32_t *limit, \
						  uintptr_t stack, void **out)          \
	{                                                                               \
		struct vc_rseq_abi *rs;                                                 \
		uint32_t idx;                                                           \
		char *region = vc_rseq_slab_region(ix, base, limit, &rs, &idx);         \
		if (!region)                                                            \
			return 1;                                                       \
		int r = vc_rseq_pop_##name(rs, idx, (struct vc_rseq_stack *)region + stack, \
					   region, out);                                \
		if (r == 0)                                                             \
			vc_rseq_slab_prefetch_next(region, stack);                      \
		return r;                                                               \
	}                                                                               \
	static inline int vc_rseq_slab_push_##name(char *const *base,                   \
						   const uint32_t *limit, uintptr_t stack, \
						   uint32_t lanes, void *p)             \
	{                                                                               \
		struct vc_rseq_abi *rs;                                                 \
		uint32_t idx;                                                           \
		char *region = vc_rseq_slab_region(ix, base, limit, &rs, &idx);         \
		if (!region)                                                            \
			return 1;                                                       \
		if (!((lanes >> (idx & VC_RSEQ_SLAB_LANES_MASK)) & 1))                  \
			return 2;                                                       \
		return vc_rseq_push_##name(rs, idx, (struct vc_rseq_stack *)region + stack, \
					   region, p);                                  \
	}
VC_RSEQ_DEFINE_SLAB_OPS(cpu_id, VC_RSEQ_INDEX_CPU_ID)
VC_RSEQ_DEFINE_SLAB_OPS(mm_cid, VC_RSEQ_INDEX_MM_CID)
#endif
#define vc_rseq_slab_pop(ix, ...) VC_RSEQ_DISPATCH(slab_pop, ix, __VA_ARGS__)
#define vc_rseq_slab_push(ix, ...) VC_RSEQ_DISPATCH(slab_push, ix, __VA_ARGS__)
#endif

#endif
