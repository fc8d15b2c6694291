/* stats_report (vcmalloc only): the introspection interface tells the truth.
 *   - stats.index is the mode VCMALLOC_INDEX asked for (vcpu when unset), or cpu
 *     where vcpu was asked and the kernel has no mm_cid (AT_RSEQ_FEATURE_SIZE < 28);
 *   - possible_cpus is the possible-CPU count of the machine
 *     (/sys/devices/system/cpu/possible), not the online or affinity count;
 *   - the byte counters are consistent: allocated <= resident <= mapped,
 *     vcpu_cache_object_bytes <= vcpu_cache_bytes <= vcpu_cache_bytes_peak,
 *     and per-node resident bytes add up to no more than the total;
 *   - allocated_bytes follows live allocations (grows by what is allocated, falls back
 *     when it is freed, within the usable-size rounding);
 *   - in fallback mode the operations are counted as done without rseq;
 *   - vcmalloc_stats_json writes one JSON object with the same counter names. */
#include "vctest.h"

#include <malloc.h>
#include <string.h>
#include <unistd.h>

static unsigned sysfs_possible_cpus(void)
{
	FILE *f = fopen("/sys/devices/system/cpu/possible", "r");
	VCT_CHECK(f != NULL, "cannot open /sys/devices/system/cpu/possible");
	char buf[256];
	VCT_CHECK(fgets(buf, sizeof(buf), f) != NULL, "empty possible-CPU list");
	fclose(f);
	/* the highest number in a list like "0-3,8-11" */
	unsigned highest = 0, v = 0;
	bool in_number = false;
	for (char *c = buf; *c; c++) {
		if (*c >= '0' && *c <= '9') {
			v = v * 10 + (unsigned)(*c - '0');
			in_number = true;
		} else if (in_number) {
			if (v > highest)
				highest = v;
			v = 0;
			in_number = false;
		}
	}
	if (in_number && v > highest)
		highest = v;
	return highest + 1;
}

static void check_invariants(const struct vcmalloc_stats *s)
{
	VCT_CHECK(s->allocated_bytes <= s->resident_bytes, "allocated %llu > resident %llu",
		  (unsigned long long)s->allocated_bytes, (unsigned long long)s->resident_bytes);
	VCT_CHECK(s->resident_bytes <= s->mapped_bytes, "resident %llu > mapped %llu",
		  (unsigned long long)s->resident_bytes, (unsigned long long)s->mapped_bytes);
	VCT_CHECK(s->vcpu_cache_object_bytes <= s->vcpu_cache_bytes,
		  "cached objects %llu > vcpu cache bytes %llu",
		  (unsigned long long)s->vcpu_cache_object_bytes,
		  (unsigned long long)s->vcpu_cache_bytes);
	VCT_CHECK(s->vcpu_cache_bytes <= s->vcpu_cache_bytes_peak, "cache bytes above peak");
	VCT_CHECK(s->vcpu_caches_populated <= s->vcpu_caches_populated_peak, "populated > peak");
	VCT_CHECK(s->vcpu_caches_populated_peak <= s->possible_cpus, "more caches than CPUs");
	VCT_CHECK(s->nodes >= 1 && s->nodes <= VCMALLOC_MAX_NODES, "nodes = %u", s->nodes);
	uint64_t node_resident = 0;
	for (unsigned i = 0; i < s->nodes; i++)
		node_resident += s->node[i].resident_bytes;
	VCT_CHECK(node_resident <= s->resident_bytes, "node resident %llu > total %llu",
		  (unsigned long long)node_resident, (unsigned long long)s->resident_bytes);
}

static void check_json(void)
{
	char path[] = "/tmp/vctest-stats-XXXXXX";
	int fd = mkstemp(path);
	VCT_CHECK(fd >= 0, "mkstemp");
	unlink(path);
	VCT_CHECK(vct_vcmalloc()->stats_json(fd) == 0, "vcmalloc_stats_json failed");
	off_t len = lseek(fd, 0, SEEK_CUR);
	VCT_CHECK(len > 2 && len < 1000000, "JSON output of %lld bytes", (long long)len);
	char *text = malloc((size_t)len + 1);
	VCT_CHECK(text && pread(fd, text, (size_t)len, 0) == len, "read back JSON");
	text[len] = 0;
	close(fd);
	size_t a = strspn(text, " \t\r\n");
	size_t b = (size_t)len;
	while (b > a && strchr(" \t\r\n", text[b - 1]))
		b--;
	VCT_CHECK(text[a] == '{' && text[b - 1] == '}', "JSON output is not one object: %s", text);
	const char *keys[] = {"\"allocated_bytes\"", "\"resident_bytes\"", "\"mapped_bytes\"",
			      "\"vcpu_caches_populated\"", "\"vcpu_cache_bytes\""};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		VCT_CHECK(strstr(text, keys[i]) != NULL, "JSON lacks %s: %s", keys[i], text);
	int depth = 0;
	for (size_t i = a; i < b; i++) {
		depth += text[i] == '{' || text[i] == '[';
		depth -= text[i] == '}' || text[i] == ']';
		VCT_CHECK(depth >= 0 && (depth > 0 || i == b - 1), "unbalanced JSON: %s", text);
	}
	free(text);
}

int main(void)
{
	vct_start("stats_report", 60);
	VCT_CHECK(vct_under_vcmalloc(), "stats_report needs vcmalloc");
	struct vcmalloc_stats s;
	vct_stats(&s);
	int want = vct_expected_index_mode();
	/* Where rseq is denied the mode asked for cannot be had: the test says which
	 * mode vcmalloc must have fallen back to. */
	const char *fell = getenv("STATS_EXPECT_INDEX");
	if (fell && *fell)
		want = strcmp(fell, "fallback") == 0 ? VCMALLOC_INDEX_FALLBACK
		       : strcmp(fell, "cpu") == 0    ? VCMALLOC_INDEX_CPU
						     : VCMALLOC_INDEX_VCPU;
	VCT_CHECK((int)s.index == want, "index mode %d in use, %d asked", (int)s.index, want);
	unsigned possible = sysfs_possible_cpus();
	VCT_CHECK(s.possible_cpus == possible, "possible_cpus %u, sysfs says %u", s.possible_cpus,
		  possible);
	check_invariants(&s);

	enum { N = 5000 };
	static void *blocks[N];
	size_t total = 0;
	uint64_t rng = 3;
	struct vcmalloc_stats before, during, after;
	vct_stats(&before);
	for (int i = 0; i < N; i++) {
		size_t n = vct_random_size(&rng, 512u << 10);
		blocks[i] = malloc(n);
		VCT_CHECK(blocks[i] != NULL, "malloc(%zu)", n);
		total += malloc_usable_size(blocks[i]);
	}
	vct_stats(&during);
	check_invariants(&during);
	VCT_CHECK(during.allocated_bytes >= before.allocated_bytes + total,
		  "allocated grew by %lld for %zu usable bytes",
		  (long long)(during.allocated_bytes - before.allocated_bytes), total);
	for (int i = 0; i < N; i++)
		free(blocks[i]);
	vct_stats(&after);
	check_invariants(&after);
	VCT_CHECK(after.allocated_bytes + total <= during.allocated_bytes,
		  "allocated fell by %lld after freeing %zu bytes",
		  (long long)(during.allocated_bytes - after.allocated_bytes), total);
	if (want == VCMALLOC_INDEX_FALLBACK)
		VCT_CHECK(after.rseq_fallbacks > 0, "fallback mode counted no fallback operation");
	check_json();
	printf("stats_report: ok\n");
	return 0;
}
