/* tests/lib/vctest.c - the test harness (see vctest.h). */
#include "vctest.h"
#include "test_env.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <sys/utsname.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>

void vct_fail(const char *file, int line, const char *expr, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "FAIL %s:%d: %s: ", file, line, expr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(NULL);
	_exit(1);
}

static long expect_failures;

void vct_expect_fail(const char *file, int line, const char *expr, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	flockfile(stdout);
	printf("FAIL %s:%d: %s: ", file, line, expr);
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	funlockfile(stdout);
	va_end(ap);
	__atomic_add_fetch(&expect_failures, 1, __ATOMIC_RELAXED);
}

long vct_failures(void)
{
	return __atomic_load_n(&expect_failures, __ATOMIC_RELAXED);
}

int vct_exit(void)
{
	long n = vct_failures();
	if (n)
		printf("RESULT: %ld failure(s)\n", n);
	else
		printf("RESULT: ok\n");
	fflush(stdout);
	return n ? 1 : 0;
}

void vct_fatal(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("FATAL %s:%d: ", file, line);
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	va_end(ap);
	_exit(2);
}

static struct vct_vcmalloc vcmalloc_entry_points;
static bool vcmalloc_looked_up;

const struct vct_vcmalloc *vct_vcmalloc(void)
{
	if (!vcmalloc_looked_up) {
		/* dlsym returns object pointers; the conversion to function pointers is
		 * what POSIX requires dlsym users to do. */
		*(void **)&vcmalloc_entry_points.stats = dlsym(RTLD_DEFAULT, "vcmalloc_stats");
		*(void **)&vcmalloc_entry_points.stats_json =
		    dlsym(RTLD_DEFAULT, "vcmalloc_stats_json");
		*(void **)&vcmalloc_entry_points.reclaim = dlsym(RTLD_DEFAULT, "vcmalloc_reclaim");
		*(void **)&vcmalloc_entry_points.release_free_memory =
		    dlsym(RTLD_DEFAULT, "vcmalloc_release_free_memory");
		vcmalloc_looked_up = true;
	}
	return vcmalloc_entry_points.stats ? &vcmalloc_entry_points : NULL;
}

bool vct_under_vcmalloc(void)
{
	return vct_vcmalloc() != NULL;
}

void vct_stats(struct vcmalloc_stats *out)
{
	const struct vct_vcmalloc *vc = vct_vcmalloc();
	VCT_CHECK(vc != NULL, "vcmalloc_stats not found: vcmalloc is not loaded");
	memset(out, 0, sizeof(*out));
	VCT_CHECK(vc->stats(out) == 0, "vcmalloc_stats failed");
}

void vct_print_memory_stats(void)
{
	struct vcmalloc_stats st;
	vct_stats(&st);
	printf("vcmalloc: resident %llu KiB, vCPU caches %llu KiB (%u populated), %llu release "
	       "calls (%llu ms), %llu KiB faulted in again, %llu drains\n",
	       (unsigned long long)st.resident_bytes >> 10,
	       (unsigned long long)st.vcpu_cache_bytes >> 10, st.vcpu_caches_populated,
	       (unsigned long long)st.os_release_calls,
	       (unsigned long long)st.os_release_ns / 1000000,
	       (unsigned long long)st.os_refault_bytes >> 10,
	       (unsigned long long)st.vcpu_reclaims);
	for (unsigned n = 0; n < st.nodes && n < VCMALLOC_MAX_NODES; n++)
		printf("  node %u: mapped %llu KiB, resident %llu KiB, cached %llu KiB\n", n,
		       (unsigned long long)st.node[n].mapped_bytes >> 10,
		       (unsigned long long)st.node[n].resident_bytes >> 10,
		       (unsigned long long)st.node[n].cached_bytes >> 10);
}

/* Prove that malloc, free and the statistics all belong to vcmalloc: the object that
 * defines malloc is libvcmalloc, and a 1 MiB block shows up in allocated_bytes. */
static void check_malloc_is_vcmalloc(void)
{
	const struct vct_vcmalloc *vc = vct_vcmalloc();
	VCT_CHECK(vc != NULL, "VCTEST_EXPECT_VCMALLOC=1 but vcmalloc_stats is not loaded");

	Dl_info info;
	void *(*volatile malloc_address)(size_t) = malloc;
	VCT_CHECK(dladdr(*(void **)&malloc_address, &info) != 0, "dladdr(malloc) failed");
	VCT_CHECK(info.dli_fname && strstr(info.dli_fname, "vcmalloc"),
		  "malloc is defined by %s, not by libvcmalloc",
		  info.dli_fname ? info.dli_fname : "(unknown)");

	struct vcmalloc_stats before, during, after;
	const size_t n = (1u << 20) + 123;
	vct_stats(&before);
	char *p = malloc(n);
	VCT_CHECK(p != NULL, "malloc(%zu) failed", n);
	memset(p, 1, n);
	vct_stats(&during);
	free(vct_launder(p));
	vct_stats(&after);
	VCT_CHECK(during.allocated_bytes >= before.allocated_bytes + n,
		  "allocated_bytes did not grow by a 1 MiB malloc: %llu -> %llu",
		  (unsigned long long)before.allocated_bytes,
		  (unsigned long long)during.allocated_bytes);
	VCT_CHECK(after.allocated_bytes + n <= during.allocated_bytes,
		  "allocated_bytes did not shrink after free: %llu -> %llu",
		  (unsigned long long)during.allocated_bytes,
		  (unsigned long long)after.allocated_bytes);
}

unsigned vct_time_scale(void)
{
	return test_time_scale();
}

unsigned vct_work_divisor(void)
{
	return test_work_divisor();
}

long vct_work(long n, long least)
{
	long w = n / (long)vct_work_divisor();
	return w < least ? least : w;
}

void vct_alarm(unsigned seconds)
{
	alarm(seconds * vct_time_scale());
}

void vct_start(const char *name, unsigned seconds)
{
	vct_alarm(seconds); /* a hang fails */
	const char *expect = getenv("VCTEST_EXPECT_VCMALLOC");
	if (expect && strcmp(expect, "1") == 0)
		check_malloc_is_vcmalloc();
	fprintf(stderr, "%s: running with %s\n", name,
		vct_under_vcmalloc() ? "vcmalloc" : "the C library's malloc");
}

static inline uint8_t pattern_byte(uint64_t seed, size_t i)
{
	uint64_t x = seed ^ ((uint64_t)i * 0x9e3779b97f4a7c15ull);
	return (uint8_t)(x ^ (x >> 29) ^ (x >> 47));
}

void vct_fill(void *p, size_t n, uint64_t seed)
{
	uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		b[i] = pattern_byte(seed, i);
}

size_t vct_verify(const void *p, size_t n, uint64_t seed)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		if (b[i] != pattern_byte(seed, i))
			return i;
	return (size_t)-1;
}

size_t vct_random_size(uint64_t *state, size_t max_large)
{
	uint64_t r = vct_rand(state);
	unsigned bucket = (unsigned)(r % 100);
	r >>= 8;
	if (bucket < 60)
		return (size_t)(r % 257); /* tiny classes, 0 included */
	if (bucket < 85)
		return 257 + (size_t)(r % 3840); /* up to 4 KiB */
	if (bucket < 97 || max_large == 0)
		return 4097 + (size_t)(r % 61440); /* up to 64 KiB */
	return 65537 + (size_t)(r % (max_large > 65537 ? max_large - 65536 : 1));
}

long vct_proc_status_kib(const char *field)
{
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	char line[256];
	size_t len = strlen(field);
	long value = -1;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, field, len) == 0 && line[len] == ':') {
			value = strtol(line + len + 1, NULL, 10);
			break;
		}
	}
	fclose(f);
	return value;
}

int vct_expected_index_mode(void)
{
	int mode = vct_env_index_mode();
	if (mode < 0)
		mode = VCMALLOC_INDEX_VCPU;
	if (mode == VCMALLOC_INDEX_VCPU && getauxval(27 /* AT_RSEQ_FEATURE_SIZE */) < 28)
		mode = VCMALLOC_INDEX_CPU;
	return mode;
}

int vct_env_index_mode(void)
{
	const char *m = getenv("VCMALLOC_INDEX");
	if (!m)
		return -1;
	if (strcmp(m, "vcpu") == 0)
		return VCMALLOC_INDEX_VCPU;
	if (strcmp(m, "cpu") == 0)
		return VCMALLOC_INDEX_CPU;
	if (strcmp(m, "fallback") == 0)
		return VCMALLOC_INDEX_FALLBACK;
	return -1;
}

void vct_sem_wait(sem_t *s)
{
	while (sem_wait(s) != 0)
		VCT_CHECK(errno == EINTR, "sem_wait: %s", strerror(errno));
}

long vct_rss_kib_syscalls(void)
{
	char buf[128];
	int fd = open("/proc/self/statm", O_RDONLY);
	VCT_CHECK(fd >= 0, "open statm");
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	VCT_CHECK(n > 0, "read statm");
	buf[n] = 0;
	char *p = buf;
	while (*p && *p != ' ')
		p++;
	return strtol(p, NULL, 10) * (sysconf(_SC_PAGESIZE) / 1024);
}

void vct_sleep_us(long us)
{
	struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

const char *vct_arg_str(int argc, char **argv, const char *name, const char *def)
{
	size_t len = strlen(name);
	for (int i = 1; i < argc; i++)
		if (strncmp(argv[i], "--", 2) == 0 && strncmp(argv[i] + 2, name, len) == 0 &&
		    argv[i][2 + len] == '=')
			return argv[i] + 3 + len;
	return def;
}

long vct_arg_long(int argc, char **argv, const char *name, long def)
{
	const char *s = vct_arg_str(argc, argv, name, NULL);
	if (!s)
		return def;
	char *end;
	long v = strtol(s, &end, 10);
	if (*s == 0 || *end != 0)
		VCT_FATAL("bad value for --%s: %s", name, s);
	return v;
}

long vct_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void on_watchdog(int sig)
{
	(void)sig;
	static const char msg[] = "FATAL: watchdog: the test ran past its time bound\n";
	ssize_t w = write(STDOUT_FILENO, msg, sizeof msg - 1);
	(void)w;
	_exit(3);
}

void vct_watchdog(unsigned seconds)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_watchdog;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGALRM, &sa, NULL) != 0)
		VCT_FATAL("sigaction(SIGALRM): %s", strerror(errno));
	alarm(seconds * vct_time_scale());
}

void vct_kernel_version(int *major, int *minor)
{
	struct utsname u;
	if (uname(&u) != 0 || sscanf(u.release, "%d.%d", major, minor) != 2)
		VCT_FATAL("cannot parse the kernel release");
}
