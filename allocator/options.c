/* allocator/options.c - VCMALLOC_* environment options, parsed in one place at
 * start-up without allocating. The options, their defaults and their documentation
 * are one table, options.def. */
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

/* The words of CHOICE options (options.def). */
static const struct {
	const char *field;
	const char *word;
	int value;
} choices[] = {
#define VC_OPTION(field, name, kind, def, doc_default, doc_values)
#define VC_CHOICE(field, word, value) {#field, word, value},
#include "options.def"
#undef VC_OPTION
#undef VC_CHOICE
};

static void read_NUMBER(const char *name, const char *field, const char *s, int64_t *v)
{
	(void)field;
	uint64_t u;
	if (parse_u64(s, &u))
		*v = (int64_t)u;
	else
		warn(name, s);
}

static void read_FLAG(const char *name, const char *field, const char *s, int64_t *v)
{
	read_NUMBER(name, field, s, v);
	*v = *v != 0;
}

static void read_CHOICE(const char *name, const char *field, const char *s, int64_t *v)
{
	for (size_t i = 0; i < sizeof(choices) / sizeof(choices[0]); i++)
		if (!strcmp(choices[i].field, field) && !strcmp(choices[i].word, s)) {
			*v = choices[i].value;
			return;
		}
	warn(name, s);
}

void vc_options_load(struct vc_options *o)
{
	char buf[64];
#define VC_OPTION(field, name, kind, def, doc_default, doc_values)                          \
	{                                                                                   \
		int64_t v = (int64_t)(def);                                                 \
		if (vc_os_getenv(name, buf, sizeof buf))                                    \
			read_##kind(name, #field, buf, &v);                                 \
		o->field = (__typeof__(o->field))v;                                         \
	}
#define VC_CHOICE(field, word, value)
#include "options.def"
#undef VC_OPTION
#undef VC_CHOICE
}
