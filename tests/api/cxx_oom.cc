// cxx_oom: the C++ allocation functions report exhaustion the C++ way.
// Under RLIMIT_AS (current address-space size plus 256 MiB): a 1 GiB operator new
// throws std::bad_alloc, its nothrow form returns nullptr, the aligned forms do the
// same; a loop of new char[64 KiB] ends with std::bad_alloc (not a crash, not an
// abort) after most of the headroom was used; after delete[] of everything, new
// works again.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>
#include <vector>

#include <sys/resource.h>

#include "vctest.h"

namespace {

constexpr size_t headroom = size_t{256} << 20;

void limit_address_space()
{
	long vm_kib = vct_proc_status_kib("VmSize");
	VCT_CHECK(vm_kib > 0, "cannot read VmSize");
	rlimit rl;
	rl.rlim_cur = rl.rlim_max = static_cast<rlim_t>(vm_kib) * 1024 + headroom;
	VCT_CHECK(setrlimit(RLIMIT_AS, &rl) == 0, "setrlimit: %s", std::strerror(errno));
}

template <typename F> bool throws_bad_alloc(F f)
{
	try {
		f();
	} catch (const std::bad_alloc &) {
		return true;
	}
	return false;
}

} // namespace

int main()
{
	vct_start("cxx_oom", 120);
	// Warm up before the limit, so that one-time setup is not what runs out.
	std::vector<char *> warm;
	for (int i = 0; i < 1000; i++)
		warm.push_back(new char[1 + i * 37]);
	for (char *p : warm)
		delete[] p;
	warm.clear();
	warm.shrink_to_fit();

	limit_address_space();
	const size_t g = vct_launder_size(size_t{1} << 30);
	VCT_CHECK(throws_bad_alloc([&] { ::operator delete(::operator new(g)); }),
		  "operator new(1 GiB) did not throw");
	VCT_CHECK(throws_bad_alloc([&] {
			  char *volatile p = new char[g]; // volatile: the new cannot be elided
			  delete[] p;
		  }),
		  "new char[1 GiB] did not throw");
	VCT_CHECK(throws_bad_alloc([&] {
			  std::align_val_t al{4096};
			  ::operator delete(::operator new(g, al), al);
		  }),
		  "aligned operator new(1 GiB) did not throw");
	VCT_CHECK(::operator new(g, std::nothrow) == nullptr, "nothrow new(1 GiB) != nullptr");
	VCT_CHECK(::operator new[](g, std::align_val_t{64}, std::nothrow) == nullptr,
		  "aligned nothrow new[](1 GiB) != nullptr");

	// Exhaust with many blocks; the pointer array is reserved up front so that its
	// own growth is not what fails.
	const size_t block = 64u << 10;
	std::vector<char *> blocks;
	blocks.reserve(2 * headroom / block);
	bool exhausted = throws_bad_alloc([&] {
		for (size_t i = 0; i < blocks.capacity(); i++) {
			char *p = new char[block];
			std::memset(p, 0x42, block);
			blocks.push_back(p);
		}
	});
	VCT_CHECK(exhausted, "new char[64 KiB] never threw within twice the headroom");
	VCT_CHECK(blocks.size() * block >= headroom / 2,
		  "bad_alloc after only %zu KiB", blocks.size() * block >> 10);
	VCT_CHECK(::operator new(g, std::align_val_t{128}, std::nothrow) == nullptr,
		  "aligned nothrow new succeeded while exhausted");

	const size_t got = blocks.size() * block;
	for (char *p : blocks)
		delete[] p;
	blocks.clear();
	char *big = new char[headroom / 2];
	std::memset(big, 1, headroom / 2);
	delete[] big;
	for (int i = 0; i < 10000; i++)
		delete[] new char[1 + (i * 131) % 70000];
	std::printf("cxx_oom: ok (bad_alloc after %zu MiB)\n", got >> 20);
	return 0;
}
