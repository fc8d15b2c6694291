/* tests/api/early_ctor_lib.c - a shared library whose constructor allocates.
 *
 * When vcmalloc is preloaded, the dynamic loader runs this library's constructor
 * before vcmalloc's own (a program's libraries are initialised before an unrelated
 * preloaded one), so these are the first calls that reach vcmalloc, before its
 * start-up: GLib's constructor does exactly this in every GTK or perf process.
 * Every result is checked here and the verdict handed to the program. */
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char *early_ctor_failure = "constructor did not run";

__attribute__((visibility("default"))) const char *early_ctor_result(void)
{
	return early_ctor_failure;
}

static const char *check_block(void *p, size_t n, size_t align)
{
	if (!p)
		return "allocation returned NULL";
	if ((uintptr_t)p % align)
		return "misaligned block";
	if (malloc_usable_size(p) < n)
		return "usable size below the request";
	memset(p, 0xa5, n);
	return NULL;
}

__attribute__((constructor)) static void allocate_first(void)
{
	static const size_t sizes[] = {1, 4, 24, 100, 1000, 4000, 70000, 300000, 3u << 20};
	void *blocks[sizeof sizes / sizeof sizes[0]];
	const char *err = NULL;
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0] && !err; i++) {
		blocks[i] = malloc(sizes[i]);
		err = check_block(blocks[i], sizes[i], 16);
	}
	void *a = NULL;
	if (!err) {
		a = memalign(256, 200);
		err = check_block(a, 200, 256);
	}
	if (!err) {
		free(a);
		for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
			free(blocks[i]);
	}
	early_ctor_failure = err;
}
