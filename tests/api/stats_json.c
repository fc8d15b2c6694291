/* stats_json (vcmalloc only): vcmalloc_stats_json is reentrant and reports write
 * errors as its header documents.
 *   - THREADS threads call it ROUNDS times each, each on a pipe of its own, and read
 *     back what it wrote: every output must be exactly one JSON object with the
 *     documented keys in their order, followed by one newline and nothing else (a
 *     buffer shared between callers mixes or truncates objects);
 *   - a bad descriptor, a pipe without reader (SIGPIPE ignored) and a full
 *     non-blocking pipe make it return -1 with errno EBADF, EPIPE and EAGAIN. */
#include "vctest.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

enum { THREADS = 4, ROUNDS = 1500 };

static const char *const top_keys[] = {"index",
				       "possible_cpus",
				       "vcpu_caches_populated",
				       "vcpu_caches_populated_peak",
				       "vcpu_cache_bytes",
				       "vcpu_cache_bytes_peak",
				       "vcpu_cache_object_bytes",
				       "resident_bytes",
				       "mapped_bytes",
				       "allocated_bytes",
				       "vcpu_reclaims",
				       "rseq_fallbacks",
				       "vcpu_node_moves",
				       "vcpu_surplus_drains",
				       "rseq_fences",
				       "rseq_fence_ns",
				       "os_release_calls",
				       "os_release_ns",
				       "os_refault_bytes",
				       "numa_nodes",
				       "nodes"};
static const char *const node_keys[] = {"node", "mapped_bytes", "resident_bytes", "cached_bytes"};

struct cursor {
	const char *s;
	const char *why; /* first error, NULL while the text is valid */
};

static void fail_at(struct cursor *c, const char *why)
{
	if (!c->why)
		c->why = why;
}

static void expect(struct cursor *c, const char *lit)
{
	size_t n = strlen(lit);
	if (strncmp(c->s, lit, n) != 0)
		fail_at(c, lit);
	else
		c->s += n;
}

static void key(struct cursor *c, const char *name)
{
	expect(c, "\"");
	expect(c, name);
	expect(c, "\": ");
}

static void number(struct cursor *c)
{
	const char *start = c->s;
	while (*c->s >= '0' && *c->s <= '9')
		c->s++;
	if (c->s == start || c->s - start > 20 || (*start == '0' && c->s - start > 1))
		fail_at(c, "a number");
}

/* The exact shape vcmalloc writes; returns NULL when text is that, else what was
 * expected where it differs. */
static const char *check_object(const char *text)
{
	struct cursor c = {text, NULL};
	expect(&c, "{");
	size_t ntop = sizeof top_keys / sizeof top_keys[0];
	for (size_t i = 0; i < ntop && !c.why; i++) {
		if (i)
			expect(&c, ", ");
		key(&c, top_keys[i]);
		if (i == 0) {
			if (!strncmp(c.s, "\"vcpu\"", 6) || !strncmp(c.s, "\"cpu\"", 5) ||
			    !strncmp(c.s, "\"fallback\"", 10))
				c.s = strchr(c.s + 1, '"') + 1;
			else
				fail_at(&c, "an index mode");
		} else if (i == ntop - 1) {
			expect(&c, "[");
			/* One object per node, at least one. */
			for (int n = 0; !c.why; n++) {
				if (n && strncmp(c.s, ", {", 3) != 0)
					break;
				expect(&c, n ? ", {" : "{");
				for (size_t k = 0; k < sizeof node_keys / sizeof node_keys[0];
				     k++) {
					if (k)
						expect(&c, ", ");
					key(&c, node_keys[k]);
					number(&c);
				}
				expect(&c, "}");
			}
			expect(&c, "]");
		} else {
			number(&c);
		}
	}
	expect(&c, "}\n");
	if (!c.why && *c.s)
		fail_at(&c, "the end after the newline");
	return c.why;
}

/* Read what one call wrote: everything up to its final newline. */
static size_t read_object(int fd, char *buf, size_t cap)
{
	size_t n = 0;
	while (n == 0 || buf[n - 1] != '\n') {
		VCT_CHECK(n + 1 < cap, "output longer than %zu bytes", cap);
		ssize_t r = read(fd, buf + n, cap - 1 - n);
		VCT_CHECK(r > 0, "read: %s", r < 0 ? strerror(errno) : "end of file");
		n += (size_t)r;
	}
	buf[n] = 0;
	return n;
}

static pthread_barrier_t start;

static void *caller(void *arg)
{
	(void)arg;
	int p[2];
	VCT_CHECK(pipe(p) == 0, "pipe");
	static __thread char text[65536];
	pthread_barrier_wait(&start);
	for (int i = 0; i < ROUNDS; i++) {
		VCT_CHECK(vct_vcmalloc()->stats_json(p[1]) == 0, "vcmalloc_stats_json: %s",
			  strerror(errno));
		read_object(p[0], text, sizeof text);
		const char *why = check_object(text);
		VCT_CHECK(why == NULL, "round %d: expected %s in: %s", i, why, text);
		/* Nothing more than one object per call. */
		int fl = fcntl(p[0], F_GETFL);
		VCT_CHECK(fcntl(p[0], F_SETFL, fl | O_NONBLOCK) == 0, "fcntl");
		char extra;
		VCT_CHECK(read(p[0], &extra, 1) < 0 && errno == EAGAIN,
			  "round %d: bytes after the object", i);
		VCT_CHECK(fcntl(p[0], F_SETFL, fl) == 0, "fcntl");
	}
	close(p[0]);
	close(p[1]);
	return NULL;
}

static void check_errors(void)
{
	errno = 0;
	VCT_CHECK(vct_vcmalloc()->stats_json(-1) == -1 && errno == EBADF,
		  "bad descriptor: errno %d", errno);

	int p[2];
	VCT_CHECK(pipe(p) == 0, "pipe");
	close(p[0]);
	signal(SIGPIPE, SIG_IGN);
	errno = 0;
	VCT_CHECK(vct_vcmalloc()->stats_json(p[1]) == -1 && errno == EPIPE,
		  "pipe without reader: errno %d", errno);
	close(p[1]);

	/* A non-blocking pipe with room for less than one object: a short write, then
	 * EAGAIN. */
	VCT_CHECK(pipe(p) == 0, "pipe");
	VCT_CHECK(fcntl(p[1], F_SETFL, O_NONBLOCK) == 0, "fcntl");
	static char fill[1 << 20];
	ssize_t w;
	while ((w = write(p[1], fill, sizeof fill)) > 0)
		;
	/* Full now: read back a few bytes so the next write is short. */
	VCT_CHECK(read(p[0], fill, 8) == 8, "read");
	errno = 0;
	VCT_CHECK(vct_vcmalloc()->stats_json(p[1]) == -1 && errno == EAGAIN, "full pipe: errno %d",
		  errno);
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	vct_start("stats_json", 120);
	VCT_CHECK(vct_under_vcmalloc(), "stats_json needs vcmalloc");
	pthread_t t[THREADS];
	pthread_barrier_init(&start, NULL, THREADS);
	for (int i = 0; i < THREADS; i++)
		VCT_CHECK(pthread_create(&t[i], NULL, caller, NULL) == 0, "pthread_create");
	for (int i = 0; i < THREADS; i++)
		VCT_CHECK(pthread_join(t[i], NULL) == 0, "pthread_join");
	check_errors();
	printf("stats_json: ok\n");
	return 0;
}
