/* allocator/override_new.c - the C++ operator new / delete family over vcmalloc,
 * written in C so that libvcmalloc needs no C++ runtime: a C program that preloads
 * it does not load libstdc++ (about 1 MiB of resident memory and its start-up work).
 *
 * The operators are defined under their Itanium-ABI (mangled) names. What needs the
 * C++ runtime is reached only when an allocation fails, through weak references
 * (bound when libstdc++ is loaded with the program) or, when the runtime came later
 * with dlopen, by dlsym:
 *   - throwing new: retry through std::get_new_handler(); with no handler, throw
 *     std::bad_alloc by calling the runtime's std::__throw_bad_alloc (the frames of
 *     this file have unwind tables, so the exception passes through them);
 *   - nothrow new: without a handler installed, nullptr at once; with one, the
 *     runtime's own nothrow operator (found as the next definition after ours), which
 *     calls our throwing operator inside try/catch: the handler runs, and nullptr
 *     comes back when it gives up by throwing, as the standard asks;
 *   - sized deletes check the size against the block (a mismatch aborts).
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>

#include "alloc_fast.h"

#define CXX_EXPORT __attribute__((visibility("default"), used))

typedef void (*vc_new_handler)(void);

/* std::get_new_handler() and std::__throw_bad_alloc(). */
extern vc_new_handler _ZSt15get_new_handlerv(void) __attribute__((weak));
extern void _ZSt17__throw_bad_allocv(void) __attribute__((weak, noreturn));

static void *runtime_symbol(void *weak, const char *name, void *handle)
{
	return weak ? weak : dlsym(handle, name);
}

static vc_new_handler current_new_handler(void)
{
	vc_new_handler (*get)(void) = (vc_new_handler(*)(void))runtime_symbol(
		(void *)_ZSt15get_new_handlerv, "_ZSt15get_new_handlerv", RTLD_DEFAULT);
	return get ? get() : NULL;
}

__attribute__((noreturn, noinline)) static void throw_bad_alloc(size_t n)
{
	void (*thrower)(void) = (void (*)(void))runtime_symbol(
		(void *)_ZSt17__throw_bad_allocv, "_ZSt17__throw_bad_allocv", RTLD_DEFAULT);
	if (thrower) {
		thrower();
		__builtin_unreachable();
	}
	char buf[32];
	vc_os_write_str(2, "vcmalloc: error: operator new(");
	vc_os_write(2, buf, vc_os_fmt_u64(buf, n));
	vc_os_write_str(2, ") failed and no C++ runtime is loaded to throw std::bad_alloc\n");
	abort();
}

static inline void *try_allocate(size_t n, size_t align)
{
	return align ? vc_memalign(align, n) : vc_malloc(n);
}

/* Everything but a cache hit of an unaligned new: the allocation, then the new
 * handler's loop when it fails. */
__attribute__((noinline)) static void *allocate_slow(size_t n, size_t align)
{
	for (;;) {
		void *p = try_allocate(n, align);
		if (p)
			return p;
		vc_new_handler h = current_new_handler();
		if (!h)
			throw_bad_alloc(n);
		h();
	}
}

static inline void *allocate(size_t n, size_t align)
{
	void *p;
	if (!align && VC_LIKELY(vc_malloc_hit(n, &p)))
		return p;
	return allocate_slow(n, align);
}

/* nothrow forms: `runtime_name` is the mangled name of the same operator, whose
 * definition in the C++ runtime wraps the throwing operator in try/catch. */
__attribute__((noinline)) static void *allocate_nothrow_slow(size_t n, size_t align,
							    const char *runtime_name)
{
	if (!current_new_handler())
		return NULL;
	void *op = dlsym(RTLD_NEXT, runtime_name);
	if (!op)
		return NULL;
	static const char nothrow_tag; /* std::nothrow_t is empty: any address */
	if (align)
		return ((void *(*)(size_t, size_t, const void *))op)(n, align, &nothrow_tag);
	return ((void *(*)(size_t, const void *))op)(n, &nothrow_tag);
}

static inline void *allocate_nothrow(size_t n, size_t align, const char *runtime_name)
{
	void *p = try_allocate(n, align);
	return __builtin_expect(p != NULL, 1) ? p : allocate_nothrow_slow(n, align, runtime_name);
}

/* operator new(size_t), new[](size_t): the hit path of malloc inline */
CXX_EXPORT void *_Znwm(size_t n) { return allocate(n, 0); }
CXX_EXPORT void *_Znam(size_t n) __attribute__((alias("_Znwm")));
/* operator new(size_t, std::align_val_t), new[] */
CXX_EXPORT void *_ZnwmSt11align_val_t(size_t n, size_t a) { return allocate(n, a); }
CXX_EXPORT void *_ZnamSt11align_val_t(size_t n, size_t a) { return allocate(n, a); }
/* operator new(size_t, const std::nothrow_t &), new[] */
CXX_EXPORT void *_ZnwmRKSt9nothrow_t(size_t n, const void *nt)
{
	(void)nt;
	return allocate_nothrow(n, 0, "_ZnwmRKSt9nothrow_t");
}
CXX_EXPORT void *_ZnamRKSt9nothrow_t(size_t n, const void *nt)
{
	(void)nt;
	return allocate_nothrow(n, 0, "_ZnamRKSt9nothrow_t");
}
/* operator new(size_t, std::align_val_t, const std::nothrow_t &), new[] */
CXX_EXPORT void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t a, const void *nt)
{
	(void)nt;
	return allocate_nothrow(n, a, "_ZnwmSt11align_val_tRKSt9nothrow_t");
}
CXX_EXPORT void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t a, const void *nt)
{
	(void)nt;
	return allocate_nothrow(n, a, "_ZnamSt11align_val_tRKSt9nothrow_t");
}

/* operator delete(void *), delete[] (free's hit path inline), and their nothrow forms */
CXX_EXPORT void _ZdlPv(void *p) { vc_free_inline(p, "free"); }
CXX_EXPORT void _ZdaPv(void *p) __attribute__((alias("_ZdlPv")));
CXX_EXPORT void _ZdlPvRKSt9nothrow_t(void *p, const void *nt) { (void)nt; vc_free(p); }
CXX_EXPORT void _ZdaPvRKSt9nothrow_t(void *p, const void *nt) { (void)nt; vc_free(p); }
/* operator delete(void *, size_t), delete[]: what C++14 code calls most (sized
 * deallocation), free_sized's hit path inline */
CXX_EXPORT void _ZdlPvm(void *p, size_t n) { vc_free_sized_inline(p, n); }
CXX_EXPORT void _ZdaPvm(void *p, size_t n) __attribute__((alias("_ZdlPvm")));
/* operator delete(void *, std::align_val_t), delete[], and their nothrow forms */
CXX_EXPORT void _ZdlPvSt11align_val_t(void *p, size_t a) { (void)a; vc_free(p); }
CXX_EXPORT void _ZdaPvSt11align_val_t(void *p, size_t a) { (void)a; vc_free(p); }
CXX_EXPORT void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t a, const void *nt)
{
	(void)a;
	(void)nt;
	vc_free(p);
}
CXX_EXPORT void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t a, const void *nt)
{
	(void)a;
	(void)nt;
	vc_free(p);
}
/* operator delete(void *, size_t, std::align_val_t), delete[] */
CXX_EXPORT void _ZdlPvmSt11align_val_t(void *p, size_t n, size_t a) { vc_free_sized(p, n, a); }
CXX_EXPORT void _ZdaPvmSt11align_val_t(void *p, size_t n, size_t a) { vc_free_sized(p, n, a); }
