/* allocator/lock.h - a small futex lock that never allocates.
 *
 * States: 0 free, 1 held, 2 held with waiters. Spins briefly, then sleeps on the
 * futex. Safe to re-initialise in a fork child (vc_lock_init) because the child has
 * one thread: the one that forked while holding every lock (see init.c).
 *
 * Lock order, outermost first: reclaim lock -> vCPU id claims (vcpu_cache.c) ->
 * vCPU lock -> central (node, class) -> page heap (node) -> huge cache (huge.c) ->
 * OS/registry lock. (The id-claim lock and the huge cache lock are never held
 * together with the locks above them; fork takes them in these places.)
 */
#ifndef VC_LOCK_H
#define VC_LOCK_H

#include <errno.h>
#include <linux/futex.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef struct {
	uint32_t state;
} vc_lock_t;

#define VC_LOCK_INIT {0}

static inline void vc_lock_init(vc_lock_t *l)
{
	__atomic_store_n(&l->state, 0, __ATOMIC_RELAXED);
}

static inline int vc_lock_try(vc_lock_t *l)
{
	uint32_t z = 0;
	return __atomic_compare_exchange_n(&l->state, &z, 1, 0, __ATOMIC_ACQUIRE,
					   __ATOMIC_RELAXED);
}

/* One step of a spin-wait: tells the CPU the loop is waiting (x86 `pause`,
 * aarch64 `yield`), which saves power and hands the core to a sibling hardware
 * thread; elsewhere only a compiler barrier, so the load is redone. */
static inline void vc_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield" ::: "memory");
#else
	__asm__ volatile("" ::: "memory");
#endif
}

static inline void vc_lock_slow(vc_lock_t *l)
{
	for (int i = 0; i < 100; i++) {
		if (__atomic_load_n(&l->state, __ATOMIC_RELAXED) == 0 && vc_lock_try(l))
			return;
		vc_cpu_relax();
	}
	int saved = errno;
	while (__atomic_exchange_n(&l->state, 2, __ATOMIC_ACQUIRE) != 0)
		syscall(SYS_futex, &l->state, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
	errno = saved;
}

static inline void vc_lock(vc_lock_t *l)
{
	if (__builtin_expect(!vc_lock_try(l), 0))
		vc_lock_slow(l);
}

static inline void vc_unlock(vc_lock_t *l)
{
	if (__builtin_expect(__atomic_exchange_n(&l->state, 0, __ATOMIC_RELEASE) == 2, 0)) {
		int saved = errno;
		syscall(SYS_futex, &l->state, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
		errno = saved;
	}
}

#endif
