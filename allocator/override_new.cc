// allocator/override_new.cc - the C++ operator new / delete family over vcmalloc.
// new: retry through the new_handler, then throw std::bad_alloc; nothrow forms return
// nullptr; sized deletes check the size against the block (misuse aborts).
#include <cerrno>
#include <cstddef>
#include <new>

extern "C" {
void *vc_malloc(size_t n) __attribute__((visibility("hidden")));
void vc_free(void *p) __attribute__((visibility("hidden")));
void *vc_memalign(size_t align, size_t n) __attribute__((visibility("hidden")));
void vc_free_sized(void *p, size_t n, size_t align) __attribute__((visibility("hidden")));
}

#define VC_CXX_EXPORT __attribute__((visibility("default")))

namespace {

void *allocate(std::size_t n, std::size_t align)
{
	for (;;) {
		void *p = align ? vc_memalign(align, n) : vc_malloc(n);
		if (p)
			return p;
		std::new_handler h = std::get_new_handler();
		if (!h)
			throw std::bad_alloc();
		h();
	}
}

void *allocate_nothrow(std::size_t n, std::size_t align) noexcept
{
	try {
		return allocate(n, align);
	} catch (...) {
		return nullptr;
	}
}

} // namespace

VC_CXX_EXPORT void *operator new(std::size_t n) { return allocate(n, 0); }
VC_CXX_EXPORT void *operator new[](std::size_t n) { return allocate(n, 0); }
VC_CXX_EXPORT void *operator new(std::size_t n, const std::nothrow_t &) noexcept
{
	return allocate_nothrow(n, 0);
}
VC_CXX_EXPORT void *operator new[](std::size_t n, const std::nothrow_t &) noexcept
{
	return allocate_nothrow(n, 0);
}
VC_CXX_EXPORT void *operator new(std::size_t n, std::align_val_t a)
{
	return allocate(n, static_cast<std::size_t>(a));
}
VC_CXX_EXPORT void *operator new[](std::size_t n, std::align_val_t a)
{
	return allocate(n, static_cast<std::size_t>(a));
}
VC_CXX_EXPORT void *operator new(std::size_t n, std::align_val_t a, const std::nothrow_t &) noexcept
{
	return allocate_nothrow(n, static_cast<std::size_t>(a));
}
VC_CXX_EXPORT void *operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t &) noexcept
{
	return allocate_nothrow(n, static_cast<std::size_t>(a));
}

VC_CXX_EXPORT void operator delete(void *p) noexcept { vc_free(p); }
VC_CXX_EXPORT void operator delete[](void *p) noexcept { vc_free(p); }
VC_CXX_EXPORT void operator delete(void *p, const std::nothrow_t &) noexcept { vc_free(p); }
VC_CXX_EXPORT void operator delete[](void *p, const std::nothrow_t &) noexcept { vc_free(p); }
VC_CXX_EXPORT void operator delete(void *p, std::size_t n) noexcept { vc_free_sized(p, n, 0); }
VC_CXX_EXPORT void operator delete[](void *p, std::size_t n) noexcept { vc_free_sized(p, n, 0); }
VC_CXX_EXPORT void operator delete(void *p, std::align_val_t) noexcept { vc_free(p); }
VC_CXX_EXPORT void operator delete[](void *p, std::align_val_t) noexcept { vc_free(p); }
VC_CXX_EXPORT void operator delete(void *p, std::size_t n, std::align_val_t a) noexcept
{
	vc_free_sized(p, n, static_cast<std::size_t>(a));
}
VC_CXX_EXPORT void operator delete[](void *p, std::size_t n, std::align_val_t a) noexcept
{
	vc_free_sized(p, n, static_cast<std::size_t>(a));
}
VC_CXX_EXPORT void operator delete(void *p, std::align_val_t, const std::nothrow_t &) noexcept
{
	vc_free(p);
}
VC_CXX_EXPORT void operator delete[](void *p, std::align_val_t, const std::nothrow_t &) noexcept
{
	vc_free(p);
}
