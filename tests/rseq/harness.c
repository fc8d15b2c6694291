/* tests/rseq/harness.c - see harness.h. */
#include "harness.h"
#include "../lib/test_env.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

long harness_failures;

void harness_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	flockfile(stdout);
	printf("FAIL %s:%d: ", file, line);
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	funlockfile(stdout);
	va_end(ap);
	__atomic_add_fetch(&harness_failures, 1, __ATOMIC_RELAXED);
}

void harness_fatal(const char *file, int line, const char *fmt, ...)
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

int harness_exit(void)
{
	long n = __atomic_load_n(&harness_failures, __ATOMIC_RELAXED);
	if (n)
		printf("RESULT: %ld failure(s)\n", n);
	else
		printf("RESULT: ok\n");
	fflush(stdout);
	return n ? 1 : 0;
}

void cpu_list_allowed(struct cpu_list *out)
{
	memset(out, 0, sizeof *out);
	if (sched_getaffinity(0, sizeof out->mask, &out->mask) != 0)
		FATAL("sched_getaffinity: %s", strerror(errno));
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &out->mask))
			out->cpu[out->n++] = c;
	if (out->n == 0)
		FATAL("empty affinity mask");
}

void pin_self(int cpu)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	set_self_mask(&s);
}

void set_self_mask(const cpu_set_t *mask)
{
	if (sched_setaffinity(0, sizeof *mask, mask) != 0)
		FATAL("sched_setaffinity: %s", strerror(errno));
}

void pin_thread(pthread_t thread, int cpu)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	int e = pthread_setaffinity_np(thread, sizeof s, &s);
	if (e != 0)
		FATAL("pthread_setaffinity_np(cpu %d): %s", cpu, strerror(e));
}

void getcpu_now(unsigned *cpu, unsigned *node)
{
	if (syscall(SYS_getcpu, cpu, node, NULL) != 0)
		FATAL("getcpu: %s", strerror(errno));
}

unsigned possible_cpus_from_sysfs(void)
{
	FILE *f = fopen("/sys/devices/system/cpu/possible", "re");
	if (!f)
		FATAL("cannot open /sys/devices/system/cpu/possible");
	/* Comma-separated items, each "a" or "a-b". */
	unsigned highest = 0, a, b;
	int c;
	for (;;) {
		if (fscanf(f, "%u", &a) != 1)
			break;
		b = a;
		c = fgetc(f);
		if (c == '-') {
			if (fscanf(f, "%u", &b) != 1)
				break;
			c = fgetc(f);
		}
		if (b > highest)
			highest = b;
		if (c != ',')
			break;
	}
	fclose(f);
	return highest + 1;
}

void sleep_us(long us)
{
	struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

const char *arg_str(int argc, char **argv, const char *name, const char *def)
{
	size_t len = strlen(name);
	for (int i = 1; i < argc; i++)
		if (strncmp(argv[i], "--", 2) == 0 && strncmp(argv[i] + 2, name, len) == 0 &&
		    argv[i][2 + len] == '=')
			return argv[i] + 3 + len;
	return def;
}

long arg_long(int argc, char **argv, const char *name, long def)
{
	const char *s = arg_str(argc, argv, name, NULL);
	if (!s)
		return def;
	char *end;
	long v = strtol(s, &end, 10);
	if (*s == 0 || *end != 0)
		FATAL("bad value for --%s: %s", name, s);
	return v;
}

long now_us(void)
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

void harness_watchdog(unsigned seconds)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_watchdog;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGALRM, &sa, NULL) != 0)
		FATAL("sigaction(SIGALRM): %s", strerror(errno));
	alarm(seconds * test_time_scale());
}

void kernel_version(int *major, int *minor)
{
	struct utsname u;
	if (uname(&u) != 0 || sscanf(u.release, "%d.%d", major, minor) != 2)
		FATAL("cannot parse the kernel release");
}
