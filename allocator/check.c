/* allocator/check.c - misuse reports and assertion failures.
 * Both write one line to stderr with write(2) (no allocation, no stdio) and abort. */
#include "internal.h"

#include <stdlib.h>

void vc_report(const char *what, const char *func, const void *p)
{
	char buf[32];
	vc_os_write_str(2, "vcmalloc: error: ");
	vc_os_write_str(2, what);
	vc_os_write_str(2, " in ");
	vc_os_write_str(2, func);
	vc_os_write_str(2, "(): pointer ");
	vc_os_write(2, buf, vc_os_fmt_hex(buf, (uint64_t)(uintptr_t)p));
	vc_os_write_str(2, "\n");
	abort();
}

void vc_assert_fail(const char *expr, const char *file, int line)
{
	char buf[32];
	vc_os_write_str(2, "vcmalloc: internal assertion failed: ");
	vc_os_write_str(2, expr);
	vc_os_write_str(2, " at ");
	vc_os_write_str(2, file);
	vc_os_write_str(2, ":");
	vc_os_write(2, buf, vc_os_fmt_u64(buf, (uint64_t)line));
	vc_os_write_str(2, "\n");
	abort();
}
