/* SPDX-License-Identifier: MIT */
/*
 * probe.c - which allocator is loaded, and how many bytes sit in its caches.
 *
 * The benchmark is not linked against any allocator: it finds the loaded one by
 * the symbols it exports (dlsym on the global scope, done once, on the main thread,
 * before the workload starts).  Cache bytes, where the allocator reports them:
 *   vcmalloc  vcmalloc_stats(): vcpu_cache_bytes (the whole per-vCPU layer)
 *   jemalloc  mallctl "stats.arenas.<all>.tcache_bytes" after an "epoch" refresh
 *   tcmalloc  MallocExtension "tcmalloc.thread_cache_free_bytes"
 * glibc and mimalloc expose no such figure.
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "footprint.h"
#include "vcmalloc.h"

/* jemalloc's index for "all arenas merged" in stats.arenas.<i> names. */
#define JEMALLOC_ARENAS_ALL "4096"

typedef int (*vcmalloc_stats_fn)(struct vcmalloc_stats *out);
typedef int (*mallctl_fn)(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);
typedef int (*tcmalloc_property_fn)(const char *name, size_t *value);

static struct {
	bool probed;
	const char *name;
	const char *cache_source;
	vcmalloc_stats_fn vcmalloc_stats;
	mallctl_fn mallctl;
	tcmalloc_property_fn tcmalloc_property;
} loaded;

static void probe(void)
{
	if (loaded.probed)
		return;
	loaded.probed = true;
	loaded.name = "glibc";
	if ((loaded.vcmalloc_stats = (vcmalloc_stats_fn)dlsym(RTLD_DEFAULT, "vcmalloc_stats"))) {
		loaded.name = "vcmalloc";
		loaded.cache_source = "vcmalloc_stats().vcpu_cache_bytes";
	} else if ((loaded.mallctl = (mallctl_fn)dlsym(RTLD_DEFAULT, "mallctl"))) {
		loaded.name = "jemalloc";
		loaded.cache_source = "jemalloc stats.arenas.all.tcache_bytes";
	} else if ((loaded.tcmalloc_property = (tcmalloc_property_fn)dlsym(
			RTLD_DEFAULT, "MallocExtension_GetNumericProperty"))) {
		loaded.name = "tcmalloc";
		loaded.cache_source = "tcmalloc.thread_cache_free_bytes";
	} else if (dlsym(RTLD_DEFAULT, "mi_version")) {
		loaded.name = "mimalloc";
	}
}

const char *allocator_name(void)
{
	probe();
	return loaded.name;
}

const char *cache_bytes_source(void)
{
	probe();
	return loaded.cache_source;
}

int64_t cache_bytes_now(void)
{
	probe();
	if (loaded.vcmalloc_stats) {
		struct vcmalloc_stats st;
		if (loaded.vcmalloc_stats(&st) != 0)
			return -1;
		return (int64_t)st.vcpu_cache_bytes;
	}
	if (loaded.mallctl) {
		uint64_t epoch = 1;
		size_t len = sizeof(epoch);
		if (loaded.mallctl("epoch", &epoch, &len, &epoch, sizeof(epoch)) != 0)
			return -1;
		size_t bytes = 0;
		len = sizeof(bytes);
		if (loaded.mallctl("stats.arenas." JEMALLOC_ARENAS_ALL ".tcache_bytes", &bytes,
				   &len, NULL, 0) != 0)
			return -1;
		return (int64_t)bytes;
	}
	if (loaded.tcmalloc_property) {
		size_t bytes = 0;
		if (!loaded.tcmalloc_property("tcmalloc.thread_cache_free_bytes", &bytes))
			return -1;
		return (int64_t)bytes;
	}
	return -1;
}

bool vc_breakdown_now(struct vc_breakdown *out)
{
	probe();
	struct vcmalloc_stats st;
	*out = (struct vc_breakdown){-1, -1, -1, -1};
	if (!loaded.vcmalloc_stats || loaded.vcmalloc_stats(&st) != 0)
		return false;
	int64_t central = 0;
	for (uint32_t n = 0; n < st.nodes && n < VCMALLOC_MAX_NODES; n++)
		central += (int64_t)st.node[n].cached_bytes;
	*out = (struct vc_breakdown){(int64_t)st.resident_bytes, (int64_t)st.allocated_bytes,
				     (int64_t)st.vcpu_cache_bytes, central};
	return true;
}

static void sample_once(struct sampler *s)
{
	int64_t rss = status_bytes("VmRSS");
	/* Under vcmalloc one snapshot gives both the cache bytes and the split. */
	struct vc_breakdown b;
	int64_t cache = vc_breakdown_now(&b) ? b.vcpu_layer : cache_bytes_now();
	if (rss > s->rss_peak) {
		s->rss_peak = rss;
		s->at_rss_peak = b;
	}
	if (cache > s->cache_peak)
		s->cache_peak = cache;
	s->samples++;
}

/*
 * Sampling must not become the workload: a jemalloc "epoch" refresh walks every arena
 * and thread cache under their locks, which on an emulated many-CPU guest can take
 * longer than the period.  So the sampler sleeps at least 20 times as long as its last
 * sample took (at most ~5% of the time spent sampling).
 */
static void *sampler_main(void *arg)
{
	struct sampler *s = arg;
	while (!atomic_load(&s->stop)) {
		double start = now_seconds();
		sample_once(s);
		long took_us = (long)((now_seconds() - start) * 1e6);
		long period_us = (long)s->period_ms * 1000;
		sleep_us(took_us * 20 > period_us ? took_us * 20 : period_us);
	}
	sample_once(s);
	return NULL;
}

void sampler_start(struct sampler *s, int period_ms)
{
	probe(); /* dlsym on this thread, before the sampler may call the probes */
	s->period_ms = period_ms > 0 ? period_ms : 10;
	atomic_store(&s->stop, 0);
	s->rss_peak = -1;
	s->cache_peak = -1;
	s->at_rss_peak = (struct vc_breakdown){-1, -1, -1, -1};
	s->samples = 0;
	thread_start(&s->thread, sampler_main, s);
}

void sampler_stop(struct sampler *s)
{
	atomic_store(&s->stop, 1);
	pthread_join(s->thread, NULL);
}
