/* mallctl: jemalloc's mallctl interface answered from vcmalloc's state. Built
 * against <jemalloc/jemalloc.h>; run linked with libvcmalloc, and linked with
 * libjemalloc with vcmalloc preloaded (VCMALLOC_DECAY_MS=1234 in both):
 *   - the names redis and other programs read answer with the right types;
 *   - errors as jemalloc reports them: ENOENT for unknown names, inner nodes and
 *     out-of-range arenas; EINVAL (and a partial copy) for a wrong *oldlenp, EINVAL
 *     for a wrong newlen; EPERM for writing a read-only name or passing data to an
 *     action;
 *   - the statistics come from vcmalloc: a snapshot refreshed by writing "epoch"
 *     (the epoch then advances), stats.allocated within a few MiB of
 *     vcmalloc_stats' allocated bytes and rising by 64 MiB allocated (only after
 *     the epoch is written), allocated <= active <= resident, mapped and retained
 *     summing to what vcmalloc maps;
 *   - arena.<narenas>.purge and MALLCTL_ARENAS_ALL after freeing 64 MiB of small
 *     and large blocks lower stats.resident by most of it; arena.0.decay and
 *     thread.tcache.flush run;
 *   - opt.dirty_decay_ms is VCMALLOC_DECAY_MS; opt.narenas == arenas.narenas;
 *     background_thread reads true (the maintenance thread is on by default) and
 *     refuses to be turned off with EFAULT;
 *   - mallctlnametomib / mallctlbymib reach the same values, with a MIB whose
 *     arena component is changed in place. */
#include <errno.h>
#include <jemalloc/jemalloc.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "vctest.h"

static size_t read_size(const char *name)
{
	size_t v = 0, len = sizeof v;
	int e = mallctl(name, &v, &len, NULL, 0);
	VCT_CHECK(e == 0 && len == sizeof v, "mallctl(%s): %d", name, e);
	return v;
}

static unsigned read_unsigned(const char *name)
{
	unsigned v = 0;
	size_t len = sizeof v;
	VCT_CHECK(mallctl(name, &v, &len, NULL, 0) == 0, "mallctl(%s)", name);
	return v;
}

static uint64_t new_epoch(void)
{
	uint64_t e = 1;
	size_t len = sizeof e;
	VCT_CHECK(mallctl("epoch", &e, &len, &e, sizeof e) == 0, "epoch");
	return e;
}

static void check_errors(void)
{
	size_t v = 0, len = sizeof v;
	static const char *const unknown[] = {"nosuch", "stats", "stats.nosuch",
					      "arena.0", "arena.0.nosuch", "arena.x.purge",
					      "", "stats..allocated", "arena.99999999999999999999.purge",
					      "background_thread.x", "prof.active"};
	for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++)
		VCT_CHECK(mallctl(unknown[i], &v, &len, NULL, 0) == ENOENT, "ENOENT for '%s'",
			  unknown[i]);
	/* An arena that does not exist (narenas + 1 is neither one nor "all"). */
	char name[64];
	snprintf(name, sizeof name, "arena.%u.purge", read_unsigned("arenas.narenas") + 1);
	VCT_CHECK(mallctl(name, NULL, NULL, NULL, 0) == ENOENT, "%s", name);

	/* Wrong *oldlenp: as many bytes as fit are copied, *oldlenp says how many. */
	uint64_t big = 0xffffffffffffffffull;
	len = 4;
	size_t full = read_size("arenas.page");
	VCT_CHECK(mallctl("arenas.page", &big, &len, NULL, 0) == EINVAL, "short oldlen");
	VCT_CHECK(len == 4, "*oldlenp set to the bytes copied: %zu", len);
	uint32_t low = (uint32_t)big;
	VCT_CHECK(low == (uint32_t)full && (big >> 32) == 0xffffffffu, "partial copy");
	unsigned char wide[32];
	len = sizeof wide;
	VCT_CHECK(mallctl("arenas.page", wide, &len, NULL, 0) == EINVAL, "long oldlen");
	VCT_CHECK(len == sizeof(size_t), "long oldlen: copied %zu", len);
	len = 1;
	VCT_CHECK(mallctl("opt.tcache", wide, &len, NULL, 0) == 0 && wide[0] == 1, "bool");

	/* Writes. */
	uint32_t e32 = 1;
	VCT_CHECK(mallctl("epoch", NULL, NULL, &e32, sizeof e32) == EINVAL, "epoch newlen");
	size_t nv = 5;
	VCT_CHECK(mallctl("stats.allocated", NULL, NULL, &nv, sizeof nv) == EPERM,
		  "read-only");
	VCT_CHECK(mallctl("arena.0.purge", &v, &len, NULL, 0) == EPERM, "action read");
	VCT_CHECK(mallctl("thread.tcache.flush", NULL, NULL, &nv, sizeof nv) == EPERM,
		  "action write");
	/* Reading with oldp or oldlenp NULL reads nothing and succeeds. */
	VCT_CHECK(mallctl("stats.allocated", NULL, NULL, NULL, 0) == 0, "no read");
}

static void check_names(void)
{
	const char *version = NULL;
	size_t len = sizeof version;
	VCT_CHECK(mallctl("version", &version, &len, NULL, 0) == 0 && version, "version");
	VCT_CHECK(strstr(version, "vcmalloc") != NULL, "version names vcmalloc: %s", version);
	unsigned narenas = read_unsigned("arenas.narenas");
	VCT_CHECK(narenas >= 1 && narenas == read_unsigned("opt.narenas"), "narenas %u",
		  narenas);
	VCT_CHECK(read_size("arenas.page") >= 4096, "page");
	VCT_CHECK(read_size("arenas.quantum") == 16, "quantum");
	unsigned nbins = read_unsigned("arenas.nbins");
	size_t prev = 0;
	for (unsigned i = 0; i < nbins; i++) {
		char name[64];
		snprintf(name, sizeof name, "arenas.bin.%u.size", i);
		size_t s = read_size(name);
		VCT_CHECK(s > prev, "bin sizes increase: %s = %zu", name, s);
		prev = s;
		void *p = malloc(s);
		VCT_CHECK(malloc_usable_size(p) == s, "bin %u size %zu is a real size", i, s);
		free(p);
	}
	VCT_CHECK(prev == read_size("arenas.tcache_max"), "largest bin is tcache_max");
	ssize_t decay = 0;
	len = sizeof decay;
	VCT_CHECK(mallctl("opt.dirty_decay_ms", &decay, &len, NULL, 0) == 0, "decay");
	const char *env = getenv("VCMALLOC_DECAY_MS");
	VCT_CHECK(env && decay == atol(env), "opt.dirty_decay_ms %zd, VCMALLOC_DECAY_MS %s",
		  decay, env ? env : "(unset)");
	bool b = true;
	len = sizeof b;
	VCT_CHECK(mallctl("config.prof", &b, &len, NULL, 0) == 0 && !b, "config.prof");
	VCT_CHECK(mallctl("config.stats", &b, &len, NULL, 0) == 0 && b, "config.stats");
	const char *conf = NULL;
	len = sizeof conf;
	VCT_CHECK(mallctl("config.malloc_conf", &conf, &len, NULL, 0) == 0 && conf, "conf");
	/* The maintenance thread is on (VCMALLOC_BACKGROUND unset, decay 1234 ms):
	 * writing true is accepted, false cannot be done. */
	bool bg = false, want = true;
	len = sizeof bg;
	VCT_CHECK(mallctl("background_thread", &bg, &len, &want, sizeof want) == 0 && bg,
		  "background_thread");
	want = false;
	VCT_CHECK(mallctl("background_thread", NULL, NULL, &want, sizeof want) == EFAULT,
		  "background_thread cannot be turned off at run time");
	VCT_CHECK(mallctl("opt.background_thread", &bg, &len, NULL, 0) == 0 && bg, "opt");
	VCT_CHECK(mallctl("thread.tcache.flush", NULL, NULL, NULL, 0) == 0, "tcache flush");
	VCT_CHECK(mallctl("arena.0.decay", NULL, NULL, NULL, 0) == 0, "decay arena 0");
}

static void check_stats(void)
{
	uint64_t e1 = new_epoch();
	uint64_t e2 = new_epoch();
	VCT_CHECK(e2 > e1, "epoch advances: %llu then %llu", (unsigned long long)e1,
		  (unsigned long long)e2);
	struct vcmalloc_stats st;
	vct_stats(&st);
	size_t alloc0 = read_size("stats.allocated");
	long long diff = (long long)alloc0 - (long long)st.allocated_bytes;
	VCT_CHECK(diff < (4 << 20) && diff > -(4 << 20),
		  "stats.allocated %zu vs vcmalloc_stats %llu", alloc0,
		  (unsigned long long)st.allocated_bytes);

	/* 64 MiB in small and large blocks. */
	enum { SMALL = 200000, LARGE = 64 };
	void **small = malloc(SMALL * sizeof *small);
	for (int i = 0; i < SMALL; i++) {
		small[i] = malloc(160);
		memset(small[i], 1, 160);
	}
	void *large[LARGE];
	for (int i = 0; i < LARGE; i++) {
		large[i] = malloc(512 << 10);
		memset(large[i], 2, 512 << 10);
	}
	size_t grown = (size_t)SMALL * 160 + (size_t)LARGE * (512 << 10);
	VCT_CHECK(read_size("stats.allocated") == alloc0, "snapshot until the epoch moves");
	new_epoch();
	size_t alloc1 = read_size("stats.allocated");
	size_t active = read_size("stats.active"), resident = read_size("stats.resident");
	size_t mapped = read_size("stats.mapped"), retained = read_size("stats.retained");
	size_t metadata = read_size("stats.metadata");
	VCT_CHECK(alloc1 >= alloc0 + grown, "allocated %zu -> %zu after %zu", alloc0, alloc1,
		  grown);
	VCT_CHECK(alloc1 <= active && active <= resident && resident <= mapped + retained,
		  "allocated %zu active %zu resident %zu mapped %zu retained %zu", alloc1, active,
		  resident, mapped, retained);
	VCT_CHECK(metadata > 0 && metadata < resident, "metadata %zu", metadata);
	vct_stats(&st);
	VCT_CHECK(mapped + retained == st.mapped_bytes, "mapped %zu + retained %zu vs %llu",
		  mapped, retained, (unsigned long long)st.mapped_bytes);

	for (int i = 0; i < SMALL; i++)
		free(small[i]);
	for (int i = 0; i < LARGE; i++)
		free(large[i]);
	free(small);
	char purge[64];
	snprintf(purge, sizeof purge, "arena.%u.purge", read_unsigned("arenas.narenas"));
	VCT_CHECK(mallctl(purge, NULL, NULL, NULL, 0) == 0, "%s", purge);
	new_epoch();
	size_t after = read_size("stats.resident");
	VCT_CHECK(after + grown * 3 / 4 <= resident,
		  "purge gives most of %zu bytes back: resident %zu -> %zu", grown, resident,
		  after);
	VCT_CHECK(mallctl("arena.4096.purge", NULL, NULL, NULL, 0) == 0, "ARENAS_ALL");
}

static void check_mib(void)
{
	size_t mib[4], miblen = 4;
	VCT_CHECK(mallctlnametomib("stats.allocated", mib, &miblen) == 0 && miblen == 2,
		  "nametomib");
	new_epoch();
	size_t v = 0, len = sizeof v;
	VCT_CHECK(mallctlbymib(mib, miblen, &v, &len, NULL, 0) == 0 &&
			  v == read_size("stats.allocated"),
		  "bymib");
	miblen = 4;
	VCT_CHECK(mallctlnametomib("arenas.bin.0.size", mib, &miblen) == 0 && miblen == 4,
		  "bin mib");
	mib[2] = 3;
	VCT_CHECK(mallctlbymib(mib, miblen, &v, &len, NULL, 0) == 0 &&
			  v == read_size("arenas.bin.3.size"),
		  "bin 3 by mib");
	miblen = 3;
	VCT_CHECK(mallctlnametomib("arena.0.purge", mib, &miblen) == 0, "purge mib");
	mib[1] = read_unsigned("arenas.narenas");
	VCT_CHECK(mallctlbymib(mib, miblen, NULL, NULL, NULL, 0) == 0, "purge all by mib");
	miblen = 1;
	VCT_CHECK(mallctlnametomib("arena.0.purge", mib, &miblen) != 0, "mib too short");
	miblen = 4;
	VCT_CHECK(mallctlnametomib("nosuch.name", mib, &miblen) == ENOENT, "nametomib ENOENT");
	mib[0] = 999;
	VCT_CHECK(mallctlbymib(mib, 2, &v, &len, NULL, 0) == ENOENT, "bymib ENOENT");
}

int main(void)
{
	vct_start("mallctl", 120);
	VCT_CHECK(vct_under_vcmalloc(), "vcmalloc must serve this process");
	check_errors();
	check_names();
	check_stats();
	check_mib();
	printf("mallctl: ok\n");
	return 0;
}
