/* allocator/compat_mallctl.c - jemalloc's mallctl, mallctlnametomib and
 * mallctlbymib, answered from vcmalloc's own state.
 *
 * Names are dot-separated components; a numeric component (an arena or a size
 * class) is written '#' in the table below. The contract is jemalloc's:
 *   - a name that is not a leaf of the table: ENOENT;
 *   - reading (oldp and oldlenp both non-NULL): *oldlenp must be the size of the
 *     value's type, else as many bytes as fit are copied, *oldlenp says how many,
 *     and the call fails with EINVAL;
 *   - writing (newp non-NULL): newlen must be the size of the type, else EINVAL;
 *   - writing a read-only name, or reading or writing an action: EPERM.
 * Statistics (stats.*) are read from a snapshot taken when "epoch" is written
 * (and at the first read), as in jemalloc, so that figures read one after another
 * come from one moment.
 *
 * Arenas are vcmalloc's NUMA nodes: arenas.narenas is the node count and
 * arena.<i>.purge releases free memory (the central lists' wholly free spans, the
 * page heaps' free pages, the cached huge mappings; for every arena also the
 * objects of the vCPU caches); <i> may also be narenas or 4096
 * (MALLCTL_ARENAS_ALL), both meaning every arena. "background_thread" reads
 * whether vcmalloc's maintenance thread is on (maintenance.c: VCMALLOC_BACKGROUND,
 * and a reclaim or decay period to run); the option decides it, so writing the
 * value it has succeeds and writing the other fails with EFAULT, jemalloc's
 * answer when it cannot start or stop its background threads.
 *
 * A MIB (mallctlnametomib) holds per component either the number itself or, for
 * a name, the index of the first table entry having that name at that position;
 * mallctlbymib turns it back into a name and looks it up like mallctl.
 */
#include "internal.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/types.h>

#define MALLCTL_ARENAS_ALL 4096
#define MAX_DEPTH 6

const char vc_jemalloc_version[] = "5.3.0-0-vcmalloc-" VC_VERSION;

void vc_jemalloc_figures_of(const struct vc_stats_detail *d, struct vc_jemalloc_figures *f)
{
	f->allocated = d->st.allocated_bytes;
	f->active = d->active_bytes;
	f->metadata = d->metadata_bytes;
	f->resident = d->st.resident_bytes;
	f->retained = d->released_bytes;
	f->mapped = d->st.mapped_bytes > d->released_bytes ? d->st.mapped_bytes - d->released_bytes
							   : 0;
}

/* ---- the statistics snapshot ---- */

static uint64_t epoch; /* 0: no snapshot yet */
static struct {
	uint64_t allocated, active, metadata, resident, mapped, retained;
} snap; /* relaxed atomics: each figure whole, the set from one refresh or two */

static void refresh(void)
{
	struct vc_stats_detail d;
	vc_stats_detail(&d);
	struct vc_jemalloc_figures f;
	vc_jemalloc_figures_of(&d, &f);
	__atomic_store_n(&snap.allocated, f.allocated, __ATOMIC_RELAXED);
	__atomic_store_n(&snap.active, f.active, __ATOMIC_RELAXED);
	__atomic_store_n(&snap.metadata, f.metadata, __ATOMIC_RELAXED);
	__atomic_store_n(&snap.resident, f.resident, __ATOMIC_RELAXED);
	__atomic_store_n(&snap.mapped, f.mapped, __ATOMIC_RELAXED);
	__atomic_store_n(&snap.retained, f.retained, __ATOMIC_RELAXED);
	__atomic_add_fetch(&epoch, 1, __ATOMIC_RELEASE);
}

static void ensure_snapshot(void)
{
	if (__atomic_load_n(&epoch, __ATOMIC_ACQUIRE) == 0)
		refresh();
}

/* ---- the reading and writing rules ---- */

struct io {
	void *oldp;
	size_t *oldlenp;
	void *newp;
	size_t newlen;
	const size_t *num; /* the numeric components, in order */
};

static bool reads(const struct io *io)
{
	return io->oldp != NULL && io->oldlenp != NULL;
}

static int put(struct io *io, const void *v, size_t size)
{
	if (!reads(io))
		return 0;
	if (*io->oldlenp != size) {
		size_t k = size < *io->oldlenp ? size : *io->oldlenp;
		memcpy(io->oldp, v, k);
		*io->oldlenp = k;
		return EINVAL;
	}
	memcpy(io->oldp, v, size);
	return 0;
}

static int read_only(const struct io *io)
{
	return io->newp != NULL || io->newlen != 0 ? EPERM : 0;
}

static int action_only(const struct io *io)
{
	return io->oldp != NULL || io->oldlenp != NULL || io->newp != NULL || io->newlen != 0
		       ? EPERM
		       : 0;
}

static int ro_size(struct io *io, uint64_t v)
{
	size_t s = (size_t)v;
	int e = read_only(io);
	return e ? e : put(io, &s, sizeof s);
}

static int ro_unsigned(struct io *io, unsigned v)
{
	int e = read_only(io);
	return e ? e : put(io, &v, sizeof v);
}

static int ro_bool(struct io *io, bool v)
{
	int e = read_only(io);
	return e ? e : put(io, &v, sizeof v);
}

static int ro_ssize(struct io *io, ssize_t v)
{
	int e = read_only(io);
	return e ? e : put(io, &v, sizeof v);
}

static int ro_string(struct io *io, const char *v)
{
	int e = read_only(io);
	return e ? e : put(io, &v, sizeof v);
}

/* ---- the names ---- */

static int ctl_version(struct io *io)
{
	return ro_string(io, vc_jemalloc_version);
}

static int ctl_epoch(struct io *io)
{
	if (io->newp) {
		if (io->newlen != sizeof(uint64_t))
			return EINVAL;
		refresh();
	}
	ensure_snapshot();
	uint64_t e = __atomic_load_n(&epoch, __ATOMIC_ACQUIRE);
	return put(io, &e, sizeof e);
}

#define STAT_CTL(field)                                                                    \
	static int ctl_stats_##field(struct io *io)                                        \
	{                                                                                  \
		ensure_snapshot();                                                         \
		return ro_size(io, __atomic_load_n(&snap.field, __ATOMIC_RELAXED));        \
	}
STAT_CTL(allocated)
STAT_CTL(active)
STAT_CTL(metadata)
STAT_CTL(resident)
STAT_CTL(mapped)
STAT_CTL(retained)

static unsigned narenas(void)
{
	return vc_g.nnodes;
}

/* The arena named by io->num[0]; -1 for every arena, -2 for none. */
static long arena_of(const struct io *io)
{
	size_t i = io->num[0];
	if (i == MALLCTL_ARENAS_ALL || i == narenas())
		return -1;
	return i < narenas() ? (long)i : -2;
}

/* The checks of an arena.<i>.<action>: 0 with *a the arena (-1: all), or the error. */
static int arena_action(const struct io *io, long *a)
{
	int e = action_only(io);
	*a = arena_of(io);
	if (e)
		return e;
	return *a == -2 ? ENOENT : 0;
}

static int ctl_arena_purge(struct io *io)
{
	long a;
	int e = arena_action(io, &a);
	if (e)
		return e;
	if (a == -1) {
		/* Every arena: the vCPU caches' objects are free memory of the whole
		 * process (not of one thread, as jemalloc's thread caches are), and a
		 * cache may hold several MiB; they go back with the rest. */
		vc_release_free_memory(VC_RELEASE_WITH_CACHES);
		return 0;
	}
	vc_release_node_free_memory((unsigned)a);
	return 0;
}

static int ctl_arena_decay(struct io *io)
{
	long a;
	int e = arena_action(io, &a);
	if (e)
		return e;
	/* Pages free for longer than the decay time go back; newer ones stay. */
	for (unsigned n = 0; n < narenas(); n++)
		if (a == -1 || (unsigned)a == n)
			vc_pageheap_decay(n, false);
	vc_huge_maybe_decay(vc_os_now_ms());
	return 0;
}

static int ctl_arenas_narenas(struct io *io)
{
	return ro_unsigned(io, narenas());
}

static int ctl_arenas_page(struct io *io)
{
	return ro_size(io, VC_PAGE_SIZE);
}

static int ctl_arenas_quantum(struct io *io)
{
	return ro_size(io, 16);
}

static int ctl_arenas_tcache_max(struct io *io)
{
	return ro_size(io, VC_SMALL_MAX);
}

static int ctl_arenas_nbins(struct io *io)
{
	return ro_unsigned(io, VC_NUM_CLASSES - 1);
}

static int ctl_arenas_bin_size(struct io *io)
{
	size_t i = io->num[0];
	if (i >= VC_NUM_CLASSES - 1)
		return ENOENT;
	vc_ensure_init();
	return ro_size(io, vc_classes[i + 1].size);
}

static int ctl_thread_tcache_flush(struct io *io)
{
	int e = action_only(io);
	if (e)
		return e;
	vc_cache_drain_current();
	return 0;
}

static int ctl_opt_narenas(struct io *io)
{
	vc_ensure_init();
	return ro_unsigned(io, narenas());
}

static int ctl_opt_tcache(struct io *io)
{
	return ro_bool(io, true); /* the per-vCPU caches are always on */
}

static ssize_t ms_of(uint64_t v)
{
	return v > (uint64_t)SSIZE_MAX ? SSIZE_MAX : (ssize_t)v;
}

static int ctl_opt_dirty_decay_ms(struct io *io)
{
	vc_ensure_init();
	return ro_ssize(io, ms_of(vc_g.opt.decay_ms));
}

/* Free pages go straight back with MADV_DONTNEED: there is no "muzzy" stage. */
static int ctl_opt_muzzy_decay_ms(struct io *io)
{
	return ro_ssize(io, 0);
}

static int ctl_opt_lg_tcache_max(struct io *io)
{
	return ro_ssize(io, (ssize_t)__builtin_ctzll(VC_SMALL_MAX));
}

static int ctl_opt_tcache_max(struct io *io)
{
	return ro_size(io, VC_SMALL_MAX);
}

static bool maintenance_thread_on(void)
{
	return vc_g.opt.background && (vc_g.opt.reclaim_ms != 0 || vc_g.opt.decay_ms != 0);
}

static int ctl_opt_background_thread(struct io *io)
{
	return ro_bool(io, maintenance_thread_on());
}

static int ctl_background_thread(struct io *io)
{
	bool on = maintenance_thread_on();
	if (io->newp) {
		if (io->newlen != sizeof(bool))
			return EINVAL;
		if (*(const bool *)io->newp != on)
			return EFAULT;
	}
	return put(io, &on, sizeof on);
}

static int ctl_config_debug(struct io *io)
{
	return ro_bool(io, vc_config_assert_level >= 2);
}

static int ctl_config_stats(struct io *io)
{
	return ro_bool(io, vc_config_stats);
}

static int ctl_config_false(struct io *io)
{
	return ro_bool(io, false);
}

static int ctl_config_malloc_conf(struct io *io)
{
	return ro_string(io, "");
}

struct ctl {
	const char *name;
	int (*fn)(struct io *io);
};

static const struct ctl ctls[] = {
	{"version", ctl_version},
	{"epoch", ctl_epoch},
	{"background_thread", ctl_background_thread},
	{"stats.allocated", ctl_stats_allocated},
	{"stats.active", ctl_stats_active},
	{"stats.metadata", ctl_stats_metadata},
	{"stats.resident", ctl_stats_resident},
	{"stats.mapped", ctl_stats_mapped},
	{"stats.retained", ctl_stats_retained},
	{"arena.#.purge", ctl_arena_purge},
	{"arena.#.decay", ctl_arena_decay},
	{"arenas.narenas", ctl_arenas_narenas},
	{"arenas.page", ctl_arenas_page},
	{"arenas.quantum", ctl_arenas_quantum},
	{"arenas.tcache_max", ctl_arenas_tcache_max},
	{"arenas.nbins", ctl_arenas_nbins},
	{"arenas.bin.#.size", ctl_arenas_bin_size},
	{"thread.tcache.flush", ctl_thread_tcache_flush},
	{"opt.narenas", ctl_opt_narenas},
	{"opt.tcache", ctl_opt_tcache},
	{"opt.dirty_decay_ms", ctl_opt_dirty_decay_ms},
	{"opt.muzzy_decay_ms", ctl_opt_muzzy_decay_ms},
	{"opt.lg_tcache_max", ctl_opt_lg_tcache_max},
	{"opt.tcache_max", ctl_opt_tcache_max},
	{"opt.background_thread", ctl_opt_background_thread},
	{"config.debug", ctl_config_debug},
	{"config.stats", ctl_config_stats},
	{"config.prof", ctl_config_false},
	{"config.fill", ctl_config_false},
	{"config.utrace", ctl_config_false},
	{"config.xmalloc", ctl_config_false},
	{"config.lazy_lock", ctl_config_false},
	{"config.malloc_conf", ctl_config_malloc_conf},
};
#define NCTLS (sizeof ctls / sizeof ctls[0])

/* One component of a name being looked up: a word, or a number. */
struct comp {
	const char *word; /* NULL: a number */
	size_t len;
	size_t num;
};

/* Component k of a table name: its start and length; false if it has fewer. */
static bool pattern_comp(const char *name, unsigned k, const char **start, size_t *len)
{
	const char *s = name;
	for (unsigned i = 0; i < k; i++) {
		s = strchr(s, '.');
		if (!s)
			return false;
		s++;
	}
	const char *dot = strchr(s, '.');
	*start = s;
	*len = dot ? (size_t)(dot - s) : strlen(s);
	return true;
}

static unsigned pattern_depth(const char *name)
{
	unsigned d = 1;
	for (const char *s = name; *s; s++)
		d += *s == '.';
	return d;
}

/* The first k components of path match table entry e. */
static bool prefix_matches(const struct ctl *e, const struct comp *path, unsigned k)
{
	for (unsigned i = 0; i < k; i++) {
		const char *s;
		size_t l;
		if (!pattern_comp(e->name, i, &s, &l))
			return false;
		bool numeric = l == 1 && s[0] == '#';
		if (numeric != (path[i].word == NULL))
			return false;
		if (!numeric && (l != path[i].len || memcmp(s, path[i].word, l) != 0))
			return false;
	}
	return true;
}

/* The table entry path (depth components) names exactly, or NULL. */
static const struct ctl *lookup(const struct comp *path, unsigned depth)
{
	for (size_t i = 0; i < NCTLS; i++)
		if (pattern_depth(ctls[i].name) == depth && prefix_matches(&ctls[i], path, depth))
			return &ctls[i];
	return NULL;
}

/* Split name into components; false (ENOENT) when it cannot be a table name. */
static bool parse(const char *name, struct comp *path, unsigned *depth)
{
	if (!name)
		return false;
	unsigned d = 0;
	const char *s = name;
	for (;;) {
		const char *dot = strchr(s, '.');
		size_t l = dot ? (size_t)(dot - s) : strlen(s);
		if (l == 0 || d == MAX_DEPTH)
			return false;
		if (s[0] >= '0' && s[0] <= '9') {
			size_t v = 0;
			for (size_t i = 0; i < l; i++) {
				if (s[i] < '0' || s[i] > '9' ||
				    __builtin_mul_overflow(v, 10, &v) ||
				    __builtin_add_overflow(v, (size_t)(s[i] - '0'), &v))
					return false;
			}
			path[d] = (struct comp){NULL, 0, v};
		} else {
			path[d] = (struct comp){s, l, 0};
		}
		d++;
		if (!dot)
			break;
		s = dot + 1;
	}
	*depth = d;
	return true;
}

static int run(const struct ctl *c, const struct comp *path, unsigned depth, void *oldp,
	       size_t *oldlenp, void *newp, size_t newlen)
{
	size_t nums[MAX_DEPTH];
	unsigned n = 0;
	for (unsigned i = 0; i < depth; i++)
		if (path[i].word == NULL)
			nums[n++] = path[i].num;
	struct io io = {oldp, oldlenp, newp, newlen, nums};
	return c->fn(&io);
}

VC_EXPORT int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp,
		      size_t newlen)
{
	vc_ensure_init();
	struct comp path[MAX_DEPTH];
	unsigned depth;
	const struct ctl *c;
	if (!parse(name, path, &depth) || !(c = lookup(path, depth)))
		return ENOENT;
	return run(c, path, depth, oldp, oldlenp, newp, newlen);
}

VC_EXPORT int mallctlnametomib(const char *name, size_t *mibp, size_t *miblenp)
{
	vc_ensure_init();
	struct comp path[MAX_DEPTH];
	unsigned depth;
	if (!parse(name, path, &depth) || !lookup(path, depth))
		return ENOENT;
	if (!mibp || !miblenp || *miblenp < depth)
		return EINVAL;
	for (unsigned k = 0; k < depth; k++) {
		if (path[k].word == NULL) {
			mibp[k] = path[k].num;
			continue;
		}
		for (size_t i = 0; i < NCTLS; i++) {
			if (prefix_matches(&ctls[i], path, k + 1)) {
				mibp[k] = i;
				break;
			}
		}
	}
	*miblenp = depth;
	return 0;
}

VC_EXPORT int mallctlbymib(const size_t *mib, size_t miblen, void *oldp, size_t *oldlenp,
			   void *newp, size_t newlen)
{
	vc_ensure_init();
	if (!mib || miblen == 0 || miblen > MAX_DEPTH)
		return ENOENT;
	struct comp path[MAX_DEPTH];
	for (unsigned k = 0; k < miblen; k++) {
		/* What component k is: the same kind in every entry with this prefix. */
		const struct ctl *any = NULL;
		for (size_t i = 0; i < NCTLS && !any; i++)
			if (pattern_depth(ctls[i].name) > k && prefix_matches(&ctls[i], path, k))
				any = &ctls[i];
		if (!any)
			return ENOENT;
		const char *s = NULL;
		size_t l = 0;
		pattern_comp(any->name, k, &s, &l);
		if (l == 1 && s[0] == '#') {
			path[k] = (struct comp){NULL, 0, mib[k]};
			continue;
		}
		if (mib[k] >= NCTLS || !prefix_matches(&ctls[mib[k]], path, k) ||
		    !pattern_comp(ctls[mib[k]].name, k, &s, &l) || (l == 1 && s[0] == '#'))
			return ENOENT;
		path[k] = (struct comp){s, l, 0};
	}
	const struct ctl *c = lookup(path, (unsigned)miblen);
	if (!c)
		return ENOENT;
	return run(c, path, (unsigned)miblen, oldp, oldlenp, newp, newlen);
}
