// cxx_new_delete: the C++ allocation functions work on top of the allocator in use.
// Every form is called explicitly (so the compiler cannot elide it): plain, array,
// nothrow, sized delete, aligned (std::align_val_t up to 1 MiB), aligned nothrow,
// aligned sized delete; results are aligned (16 bytes, or the requested alignment),
// writable over the requested size, and released (with vcmalloc: allocated_bytes
// grows while the object lives and falls back after delete). Containers exercise the
// ordinary new-expressions, and impossible sizes throw std::bad_alloc (or give
// nullptr for the nothrow forms).
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "vctest.h"

namespace {

struct alignas(256) OverAligned {
	unsigned char bytes[300];
};

void check_ptr(const void *p, size_t size, size_t align, const char *what)
{
	VCT_CHECK(p != nullptr, "%s(%zu) returned nullptr", what, size);
	VCT_CHECK((reinterpret_cast<uintptr_t>(p) & (align - 1)) == 0,
		  "%s(%zu) = %p is not %zu-aligned", what, size, p, align);
	std::memset(const_cast<void *>(p), 0x3c, size);
}

// allocated_bytes, or 0 when vcmalloc is not loaded.
uint64_t allocated()
{
	if (!vct_under_vcmalloc())
		return 0;
	struct vcmalloc_stats s;
	vct_stats(&s);
	return s.allocated_bytes;
}

void expect_growth(uint64_t before, size_t size, const char *what)
{
	if (!vct_under_vcmalloc())
		return;
	uint64_t now = allocated();
	VCT_CHECK(now >= before + size, "%s(%zu) not seen by vcmalloc: allocated %llu -> %llu",
		  what, size, (unsigned long long)before, (unsigned long long)now);
}

void expect_release(uint64_t before, size_t size, const char *what)
{
	if (!vct_under_vcmalloc())
		return;
	uint64_t now = allocated();
	VCT_CHECK(now + size <= before, "%s of %zu bytes not released: allocated %llu -> %llu",
		  what, size, (unsigned long long)before, (unsigned long long)now);
}

void check_plain_forms()
{
	for (size_t n = 1; n <= (4u << 20); n = n * 2 + 5) {
		size_t size = vct_launder_size(n);
		uint64_t a0 = allocated();
		void *p = ::operator new(size);
		check_ptr(p, size, 16, "operator new");
		expect_growth(a0, size, "operator new");
		uint64_t a1 = allocated();
		::operator delete(p);
		expect_release(a1, size, "operator delete");

		p = ::operator new[](size);
		check_ptr(p, size, 16, "operator new[]");
		a1 = allocated();
		::operator delete[](p, size); // sized array delete
		expect_release(a1, size, "operator delete[](p, n)");

		p = ::operator new(size, std::nothrow);
		check_ptr(p, size, 16, "operator new(nothrow)");
		a1 = allocated();
		::operator delete(p, size); // sized delete
		expect_release(a1, size, "operator delete(p, n)");

		p = ::operator new[](size, std::nothrow);
		check_ptr(p, size, 16, "operator new[](nothrow)");
		::operator delete[](p, std::nothrow);
	}
}

void check_aligned_forms()
{
	for (size_t align = 32; align <= (1u << 20); align *= 2) {
		const std::align_val_t al{align};
		const size_t sizes[] = {1, align - 1, align, align + 1, 3 * align};
		for (size_t size : sizes) {
			size = vct_launder_size(size);
			uint64_t a0 = allocated();
			void *p = ::operator new(size, al);
			check_ptr(p, size, align, "operator new(align)");
			expect_growth(a0, size, "operator new(align)");
			uint64_t a1 = allocated();
			::operator delete(p, size, al); // sized aligned delete
			expect_release(a1, size, "operator delete(p, n, align)");

			p = ::operator new[](size, al);
			check_ptr(p, size, align, "operator new[](align)");
			::operator delete[](p, al);

			p = ::operator new(size, al, std::nothrow);
			check_ptr(p, size, align, "operator new(align, nothrow)");
			::operator delete(p, al, std::nothrow);

			p = ::operator new[](size, al, std::nothrow);
			check_ptr(p, size, align, "operator new[](align, nothrow)");
			::operator delete[](p, size, al);
		}
	}
	// new-expressions with an over-aligned type pick the aligned forms.
	std::vector<OverAligned *> objs;
	for (int i = 0; i < 500; i++) {
		objs.push_back(new OverAligned());
		check_ptr(objs.back(), sizeof(OverAligned), 256, "new OverAligned");
	}
	OverAligned *arr = new OverAligned[37];
	check_ptr(arr, 37 * sizeof(OverAligned), 256, "new OverAligned[37]");
	delete[] arr;
	for (OverAligned *o : objs)
		delete o;
}

void check_impossible_sizes()
{
	const size_t huge = vct_launder_size(static_cast<size_t>(PTRDIFF_MAX) + 1);
	bool thrown = false;
	try {
		void *p = ::operator new(huge);
		::operator delete(p);
	} catch (const std::bad_alloc &) {
		thrown = true;
	}
	VCT_CHECK(thrown, "operator new(PTRDIFF_MAX + 1) did not throw bad_alloc");

	thrown = false;
	try {
		void *p = ::operator new[](huge, std::align_val_t{4096});
		::operator delete[](p, std::align_val_t{4096});
	} catch (const std::bad_alloc &) {
		thrown = true;
	}
	VCT_CHECK(thrown, "aligned operator new[](PTRDIFF_MAX + 1) did not throw bad_alloc");

	VCT_CHECK(::operator new(huge, std::nothrow) == nullptr,
		  "nothrow operator new(PTRDIFF_MAX + 1) did not return nullptr");
	VCT_CHECK(::operator new[](huge, std::align_val_t{64}, std::nothrow) == nullptr,
		  "aligned nothrow operator new[] did not return nullptr");
}

void check_containers()
{
	std::map<std::string, std::vector<int>> m;
	for (int i = 0; i < 20000; i++) {
		std::string key = "key-" + std::to_string(i % 3000) + std::string(i % 50, 'x');
		m[key].push_back(i);
	}
	size_t total = 0;
	for (auto &kv : m)
		total += kv.second.size();
	VCT_CHECK(total == 20000, "map lost elements: %zu", total);
	auto shared = std::make_shared<std::vector<std::string>>(1000, std::string(100, 'y'));
	VCT_CHECK(shared->at(999).size() == 100, "make_shared vector broken");
	auto unique = std::make_unique<OverAligned[]>(10);
	check_ptr(unique.get(), 10 * sizeof(OverAligned), 256, "make_unique<OverAligned[]>");
}

} // namespace

int main()
{
	vct_start("cxx_new_delete", 60);
	check_plain_forms();
	check_aligned_forms();
	check_impossible_sizes();
	check_containers();
	std::printf("cxx_new_delete: ok\n");
	return 0;
}
