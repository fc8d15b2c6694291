/* tests/unit/layer_env.c - see layer_env.h. */
#include "layer_env.h"
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>

struct vc_global vc_g;

jmp_buf *layer_env_catch_report;
const char *layer_env_report;

void vc_assert_fail(const char *expr, const char *file, int line)
{
	fprintf(stderr, "allocator assertion failed: %s (%s:%d)\n", expr, file, line);
	abort();
}

void vc_report(const char *what, const char *func, const void *p)
{
	jmp_buf *catcher = layer_env_catch_report;
	if (catcher) {
		layer_env_catch_report = NULL;
		layer_env_report = what;
		longjmp(*catcher, 1);
	}
	fprintf(stderr, "allocator report: %s in %s at %p\n", what, func, p);
	abort();
}
