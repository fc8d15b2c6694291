/* static_archive: linking libvcmalloc.a into an ordinary (dynamically linked)
 * executable replaces malloc for the whole process.
 *   - malloc, free, realloc, calloc and malloc_usable_size are defined by the
 *     executable itself (dladdr), not by libc;
 *   - allocations made inside libc (strdup, getline, open_memstream) go through the
 *     archive's malloc: they show up in vcmalloc_stats().allocated_bytes, and the
 *     program can free / realloc them;
 *   - the statistics are reached by a direct call (no dlsym needed), and report the
 *     index mode VCMALLOC_INDEX asked for. */
#include <dlfcn.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vcmalloc.h"
#include "vctest.h"

static uint64_t allocated(void)
{
	struct vcmalloc_stats s;
	memset(&s, 0, sizeof(s));
	VCT_CHECK(vcmalloc_stats(&s) == 0, "vcmalloc_stats failed");
	return s.allocated_bytes;
}

static void defined_in_executable(void *fn, const char *name)
{
	Dl_info self, info;
	VCT_CHECK(dladdr((void *)&allocated, &self) != 0, "dladdr(self)");
	VCT_CHECK(dladdr(fn, &info) != 0, "dladdr(%s)", name);
	VCT_CHECK(info.dli_fbase == self.dli_fbase, "%s is defined in %s, not in the executable",
		  name, info.dli_fname ? info.dli_fname : "?");
}

int main(void)
{
	vct_alarm(60);
	void *volatile fns[] = {(void *)malloc,
				(void *)free,
				(void *)realloc,
				(void *)calloc,
				(void *)malloc_usable_size,
				(void *)posix_memalign};
	const char *names[] = {"malloc",	"free", "realloc", "calloc", "malloc_usable_size",
			       "posix_memalign"};
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
		defined_in_executable(fns[i], names[i]);

	/* the archive's allocator runs in the mode the environment asks for */
	struct vcmalloc_stats st;
	VCT_CHECK(vcmalloc_stats(&st) == 0, "vcmalloc_stats failed");
	const int mode = vct_expected_index_mode();
	VCT_CHECK((int)st.index == mode, "index mode %d, expected %d for VCMALLOC_INDEX",
		  (int)st.index, mode);

	/* our own malloc */
	uint64_t a0 = allocated();
	char *p = malloc(300000);
	VCT_CHECK(p != NULL, "malloc");
	memset(p, 'a', 299999);
	p[299999] = 0;
	VCT_CHECK(allocated() >= a0 + 300000, "malloc(300000) not counted by vcmalloc");

	/* libc's internal malloc: strdup */
	uint64_t a1 = allocated();
	char *d = strdup(p);
	VCT_CHECK(d != NULL && strcmp(d, p) == 0, "strdup");
	VCT_CHECK(allocated() >= a1 + 300000, "strdup's malloc inside libc bypassed vcmalloc");
	VCT_CHECK(malloc_usable_size(d) >= 300000, "usable size of libc's block");
	d = realloc(d, 600000); /* realloc of a block libc allocated */
	VCT_CHECK(d != NULL && d[299998] == 'a', "realloc of strdup's block");
	free(d);
	free(p);

	/* libc's internal realloc: open_memstream grows its buffer */
	char *buf = NULL;
	size_t len = 0;
	FILE *ms = open_memstream(&buf, &len);
	VCT_CHECK(ms != NULL, "open_memstream");
	for (int i = 0; i < 50000; i++)
		fprintf(ms, "line %d\n", i);
	fclose(ms);
	VCT_CHECK(len > 300000 && malloc_usable_size(buf) >= len, "open_memstream buffer");
	uint64_t a2 = allocated();
	free(buf);
	VCT_CHECK(allocated() + len <= a2, "free of libc's buffer not seen by vcmalloc");
	printf("static_archive: ok\n");
	return 0;
}
