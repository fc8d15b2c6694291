/* allocator/compat_text.c - text output of the compatibility reports (jemalloc's
 * malloc_stats_print, glibc's malloc_stats and malloc_info, tcmalloc's GetStats).
 * Text is gathered in a buffer on the caller's stack and handed to a sink in
 * NUL-terminated pieces; nothing here allocates, so a sink that does (a stdio
 * stream, a program's callback) re-enters malloc with no vcmalloc lock held. */
#include "internal.h"

#include <string.h>

void vc_text_flush(struct vc_text *t)
{
	if (t->n == 0)
		return;
	t->buf[t->n] = '\0';
	t->sink(t->arg, t->buf, t->n);
	t->n = 0;
}

void vc_text_put(struct vc_text *t, const char *s)
{
	size_t l = strlen(s);
	while (l > 0) {
		size_t room = sizeof t->buf - 1 - t->n; /* one byte stays for the NUL */
		if (room == 0) {
			vc_text_flush(t);
			continue;
		}
		size_t k = l < room ? l : room;
		memcpy(t->buf + t->n, s, k);
		t->n += k;
		s += k;
		l -= k;
	}
}

void vc_text_u64(struct vc_text *t, uint64_t v)
{
	char num[24];
	num[vc_os_fmt_u64(num, v)] = '\0';
	vc_text_put(t, num);
}

/* v right-aligned in width columns (glibc's malloc_stats layout). */
void vc_text_u64_width(struct vc_text *t, uint64_t v, unsigned width)
{
	char num[24];
	size_t l = vc_os_fmt_u64(num, v);
	num[l] = '\0';
	for (; width > l; width--)
		vc_text_put(t, " ");
	vc_text_put(t, num);
}

static void fd_sink(void *arg, const char *s, size_t n)
{
	vc_os_write((int)(intptr_t)arg, s, n);
}

void vc_text_to_fd(struct vc_text *t, int fd)
{
	t->sink = fd_sink;
	t->arg = (void *)(intptr_t)fd;
	t->n = 0;
}
