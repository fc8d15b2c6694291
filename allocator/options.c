/* allocator/options.c - VCMALLOC_* environment options, parsed in one place at
 * start-up without allocating (see README.md for the list). */
#include "internal.h"

#include <string.h>

static bool parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	if (!*s)
		return false;
	for (; *s >= '0' && *s <= '9'; s++)
		v = v * 10 + (uint64_t)(*s - '0');
	/* Optional binary suffix: k, m, g. */
	switch (*s) {
	case 'k': case 'K': v <<= 10; s++; break;
	case 'm': case 'M': v <<= 20; s++; break;
	case 'g': case 'G': v <<= 30; s++; break;
	default: break;
	}
	if (*s)
		return false;
	*out = v;
	return true;
}

static void warn(const char *name, const char *value)
{
	vc_os_write_str(2, "vcmalloc: warning: ignoring ");
	vc_os_write_str(2, name);
	vc_os_write_str(2, "=");
	vc_os_write_str(2, value);
	vc_os_write_str(2, "\n");
}

static void number(const char *name, uint64_t *dst)
{
	char buf[64];
	uint64_t v;
	if (!vc_os_getenv(name, buf, sizeof buf))
		return;
	if (parse_u64(buf, &v))
		*dst = v;
	else
		warn(name, buf);
}

void vc_options_load(struct vc_options *o)
{
	char buf[64];
	o->index = -1;
	o->stats = 0;
	o->vcpu_cache_bytes = 1u << 20;
	o->reclaim_ms = 1000;
	o->decay_ms = 1000;
	o->numa = 1;
	if (vc_os_getenv("VCMALLOC_INDEX", buf, sizeof buf)) {
		if (!strcmp(buf, "vcpu"))
			o->index = VCMALLOC_INDEX_VCPU;
		else if (!strcmp(buf, "cpu"))
			o->index = VCMALLOC_INDEX_CPU;
		else if (!strcmp(buf, "fallback"))
			o->index = VCMALLOC_INDEX_FALLBACK;
		else if (strcmp(buf, "auto") != 0)
			warn("VCMALLOC_INDEX", buf);
	}
	if (vc_os_getenv("VCMALLOC_STATS", buf, sizeof buf)) {
		if (!strcmp(buf, "json"))
			o->stats = 2;
		else if (!strcmp(buf, "text") || !strcmp(buf, "1"))
			o->stats = 1;
		else if (strcmp(buf, "0") != 0)
			warn("VCMALLOC_STATS", buf);
	}
	number("VCMALLOC_VCPU_CACHE_BYTES", &o->vcpu_cache_bytes);
	number("VCMALLOC_RECLAIM_MS", &o->reclaim_ms);
	number("VCMALLOC_DECAY_MS", &o->decay_ms);
	uint64_t numa = 1;
	number("VCMALLOC_NUMA", &numa);
	o->numa = numa != 0;
	uint64_t huge = 0;
	number("VCMALLOC_HUGE_PAGES", &huge);
	o->huge_pages = huge != 0;
	uint64_t background = 1;
	number("VCMALLOC_BACKGROUND", &background);
	o->background = background != 0;
}
