/* glibc_info: glibc's malloc introspection reporting vcmalloc's state (vcmalloc
 * only: under glibc the figures are glibc's). Linked with libvcmalloc, and
 * preloaded into the plain binary:
 *   - mallinfo2: uordblks rises by what 48 MiB of small and large blocks hold
 *     and falls back when they are freed; hblks / hblkhd count a 16 MiB block;
 *     arena == uordblks + fordblks; mallinfo agrees with mallinfo2 where the
 *     figures fit an int;
 *   - malloc_trim after freeing 48 MiB gives most of it back (VmRSS and arena
 *     fall) and keepcost is then below 1 MiB;
 *   - malloc_info(0, fp) writes well-formed XML in glibc's shape (<malloc
 *     version="1">, <heap nr=...> with <sizes>, <total type="mmap">, <system>,
 *     <aspace>), and with options != 0 fails with EINVAL and writes nothing;
 *   - malloc_stats prints glibc's labels on stderr with vcmalloc's in-use bytes. */
#include <errno.h>
#include <malloc.h>
#include <string.h>
#include <unistd.h>

#include "vctest.h"

enum { SMALL = 250000, SMALL_SIZE = 128, LARGE = 32, LARGE_SIZE = 512 << 10 };
#define HELD ((size_t)SMALL * SMALL_SIZE + (size_t)LARGE * LARGE_SIZE)

static void check_mallinfo(void)
{
	struct mallinfo2 a = mallinfo2();
	VCT_CHECK(a.arena == a.uordblks + a.fordblks, "arena %zu = %zu + %zu", a.arena,
		  a.uordblks, a.fordblks);
	void **small = malloc(SMALL * sizeof *small);
	for (int i = 0; i < SMALL; i++) {
		small[i] = malloc(SMALL_SIZE);
		memset(small[i], 1, SMALL_SIZE);
	}
	void *large[LARGE];
	for (int i = 0; i < LARGE; i++) {
		large[i] = malloc(LARGE_SIZE);
		memset(large[i], 2, LARGE_SIZE);
	}
	void *huge = malloc(16 << 20);
	memset(huge, 3, 16 << 20);
	struct mallinfo2 b = mallinfo2();
	VCT_CHECK(b.uordblks >= a.uordblks + HELD && b.uordblks <= a.uordblks + HELD + (8 << 20),
		  "uordblks %zu -> %zu holding %zu", a.uordblks, b.uordblks, HELD);
	VCT_CHECK(b.hblks >= a.hblks + 1 && b.hblkhd >= a.hblkhd + (16 << 20), "hblk %zu %zu",
		  b.hblks, b.hblkhd);
	VCT_CHECK(b.arena == b.uordblks + b.fordblks, "arena identity");
	struct vcmalloc_stats st;
	vct_stats(&st);
	VCT_CHECK(b.uordblks + b.hblkhd >= st.allocated_bytes - (4 << 20) &&
			  b.uordblks + b.hblkhd <= st.allocated_bytes + (8 << 20),
		  "uordblks + hblkhd %zu vs allocated %llu", b.uordblks + b.hblkhd,
		  (unsigned long long)st.allocated_bytes);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
	struct mallinfo old = mallinfo();
#pragma GCC diagnostic pop
	VCT_CHECK((size_t)old.hblks == b.hblks && (size_t)old.hblkhd >= (16 << 20) &&
			  (size_t)old.uordblks >= HELD,
		  "mallinfo");

	long rss_held = vct_proc_status_kib("VmRSS");
	for (int i = 0; i < SMALL; i++)
		free(small[i]);
	for (int i = 0; i < LARGE; i++)
		free(large[i]);
	free(small);
	free(huge);
	struct mallinfo2 c = mallinfo2();
	VCT_CHECK(c.uordblks + HELD <= b.uordblks + (1 << 20), "uordblks falls: %zu -> %zu",
		  b.uordblks, c.uordblks);
	VCT_CHECK(c.hblks + 1 <= b.hblks, "hblks falls");
	VCT_CHECK(malloc_trim(0) == 1, "malloc_trim");
	struct mallinfo2 d = mallinfo2();
	long rss_trimmed = vct_proc_status_kib("VmRSS");
	VCT_CHECK(d.arena + HELD * 3 / 4 <= b.arena, "trim lowers arena %zu -> %zu", b.arena,
		  d.arena);
	VCT_CHECK(d.keepcost < (1 << 20), "keepcost after trim %zu", d.keepcost);
	VCT_CHECK(rss_trimmed * 1024 + (long)(HELD * 3 / 4) <= rss_held * 1024,
		  "trim lowers VmRSS: %ld -> %ld KiB", rss_held, rss_trimmed);
}

/* A small XML check: tags nest and close, attributes are quoted. Returns NULL
 * when well-formed, else what is wrong. */
static const char *xml_problem(const char *s)
{
	const char *stack[32];
	size_t lens[32];
	int depth = 0, roots = 0;
	while (*s) {
		if (*s != '<') {
			if (*s != '\n' && *s != ' ' && depth == 0)
				return "text outside the root";
			s++;
			continue;
		}
		bool closing = s[1] == '/';
		const char *name = s + 1 + closing;
		size_t n = strcspn(name, " />");
		if (n == 0)
			return "empty tag name";
		const char *p = name + n;
		while (*p == ' ') {
			p++;
			size_t an = strcspn(p, "=");
			if (an == 0 || p[an] != '=' || p[an + 1] != '"')
				return "attribute without a quoted value";
			const char *end = strchr(p + an + 2, '"');
			if (!end)
				return "unterminated attribute";
			p = end + 1;
		}
		bool empty = p[0] == '/';
		if (empty)
			p++;
		if (*p != '>')
			return "tag not closed";
		if (closing) {
			if (depth == 0 || lens[depth - 1] != n || memcmp(stack[depth - 1], name, n))
				return "mismatched closing tag";
			depth--;
		} else if (!empty) {
			if (depth == 0)
				roots++;
			if (depth == 32)
				return "too deep";
			stack[depth] = name;
			lens[depth++] = n;
		} else if (depth == 0) {
			return "empty element outside the root";
		}
		s = p + 1;
	}
	if (depth)
		return "unclosed element";
	return roots == 1 ? NULL : "not exactly one root";
}

static void check_malloc_info(void)
{
	void *keep[1000];
	for (int i = 0; i < 1000; i++)
		keep[i] = malloc((size_t)(i % 50 + 1) * 24);
	for (int i = 0; i < 1000; i += 2)
		free(keep[i]);
	void *huge = malloc(3 << 20);
	vct_vcmalloc()->reclaim(1); /* the freed objects go to the central lists */
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	VCT_CHECK(f && malloc_info(0, f) == 0, "malloc_info");
	fclose(f);
	const char *why = xml_problem(buf);
	VCT_CHECK(why == NULL, "malloc_info XML: %s\n%s", why, buf);
	const char *opening = "<malloc version=\"1\">\n<heap nr=\"0\">\n<sizes>\n";
	VCT_CHECK(strncmp(buf, opening, strlen(opening)) == 0, "glibc's opening: %.60s", buf);
	static const char *const parts[] = {"<total type=\"mmap\" count=\"", "<system type=\"current\" size=\"",
					    "<aspace type=\"total\" size=\"", "<size from=\"", "</malloc>\n"};
	for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
		VCT_CHECK(strstr(buf, parts[i]) != NULL, "malloc_info has %s", parts[i]);
	unsigned long mmap_count = 0;
	sscanf(strstr(buf, "<total type=\"mmap\" count=\""), "<total type=\"mmap\" count=\"%lu",
	       &mmap_count);
	VCT_CHECK(mmap_count >= 1, "the 3 MiB block is an mmap region");
	free(buf);
	free(huge);
	for (int i = 1; i < 1000; i += 2)
		free(keep[i]);

	buf = NULL;
	f = open_memstream(&buf, &len);
	errno = 0;
	VCT_CHECK(malloc_info(1, f) == -1 && errno == EINVAL, "options != 0");
	fclose(f);
	VCT_CHECK(len == 0, "nothing written for options != 0");
	free(buf);
}

static void check_malloc_stats(void)
{
	int fds[2];
	VCT_CHECK(pipe(fds) == 0, "pipe");
	int saved = dup(2);
	dup2(fds[1], 2);
	void *p = malloc(1 << 20);
	malloc_stats();
	dup2(saved, 2);
	close(saved);
	close(fds[1]);
	char text[4096];
	ssize_t n = read(fds[0], text, sizeof text - 1);
	close(fds[0]);
	VCT_CHECK(n > 0, "malloc_stats wrote");
	text[n] = '\0';
	VCT_CHECK(strstr(text, "Arena 0:\nsystem bytes     = ") != NULL, "labels:\n%s", text);
	const char *use = strstr(text, "Total (incl. mmap):\nsystem bytes     = ");
	VCT_CHECK(use != NULL, "total");
	use = strstr(use, "in use bytes     = ");
	VCT_CHECK(use != NULL, "in use");
	unsigned long long inuse = strtoull(use + strlen("in use bytes     = "), NULL, 10);
	VCT_CHECK(inuse >= (1 << 20), "in use bytes %llu with a 1 MiB block", inuse);
	free(p);
}

int main(void)
{
	vct_start("glibc_info", 120);
	VCT_CHECK(vct_under_vcmalloc(), "vcmalloc must serve this process");
	check_mallinfo();
	check_malloc_info();
	check_malloc_stats();
	printf("glibc_info: ok\n");
	return 0;
}
