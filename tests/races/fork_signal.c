/* fork_signal: fork from a signal handler that interrupted malloc.
 *
 * Usage: fork_signal [FORKS]   (default 300)
 *
 * A single-threaded process mallocs and frees continuously: self-checking blocks
 * up to 4 KiB (races.h) and bursts of 32 bare malloc/free calls of 16 B - 32 KiB
 * (the forks that land in a burst are counted and printed). setitimer(ITIMER_REAL)
 * fires every 2 ms; the SIGALRM handler forks. The interrupted code is often inside
 * malloc or free, holding an allocator lock or in the middle of a list update; the
 * allocator does not take its fork locks in a single-threaded process, so fork
 * cannot deadlock on them, and the child starts with free locks. The child mallocs,
 * checks and frees a few blocks of several classes and _exits 0; the handler waits
 * for it (waitpid is async-signal-safe) and counts failures. After FORKS forks the
 * timer stops; the main loop checks its own blocks and the children's statuses.
 *
 * Hang guard: ITIMER_REAL is taken, so alarm() cannot be used. A POSIX timer on
 * CLOCK_MONOTONIC (SIGEV_SIGNAL, no helper thread: the process stays single-
 * threaded) raises SIGUSR1 after 120 s + 0.1 s per fork; its handler kills the child in
 * flight, reports and exits 2. */
#include "races.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { SLOTS = 128 };

static volatile sig_atomic_t forks_done, child_failures, fork_errors;
/* Set by the main loop around bare malloc / free calls; the handler counts the forks
 * that interrupted one (reported, not asserted: it depends on timing). */
static volatile sig_atomic_t in_allocator, forks_inside_allocator;
static volatile sig_atomic_t last_status;
static volatile pid_t in_flight;
static int forks_wanted;

static void write_str(const char *s)
{
	ssize_t r = write(2, s, strlen(s));
	(void)r;
}

static void child_work(void)
{
	/* no stdio, no locks of libc: only the allocator */
	void *p[16];
	for (int round = 0; round < 4; round++) {
		for (int i = 0; i < 16; i++) {
			size_t n = (size_t)16 << (i % 14); /* 16 B .. 128 KiB */
			p[i] = malloc(n + (size_t)round);
			if (!p[i])
				_exit(3);
			memset(p[i], i + 1, n + (size_t)round);
		}
		for (int i = 0; i < 16; i++) {
			size_t n = ((size_t)16 << (i % 14)) + (size_t)round;
			const unsigned char *b = p[i];
			if (b[0] != i + 1 || b[n - 1] != i + 1 || b[n / 2] != i + 1)
				_exit(4);
			free(p[i]);
		}
	}
	_exit(0);
}

static void on_timer(int sig)
{
	(void)sig;
	int saved = errno;
	if (forks_done >= forks_wanted) {
		errno = saved;
		return;
	}
	if (in_allocator)
		forks_inside_allocator++;
	pid_t pid = fork();
	if (pid == 0)
		child_work();
	if (pid < 0) {
		fork_errors++;
	} else {
		in_flight = pid;
		int status = 0;
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		in_flight = 0;
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			child_failures++;
			last_status = status;
		}
	}
	forks_done++;
	errno = saved;
}

static void on_watchdog(int sig)
{
	(void)sig;
	if (in_flight > 0)
		kill(in_flight, SIGKILL);
	write_str("FAIL fork_signal: watchdog fired (a fork or a child hung)\n");
	_exit(2);
}

int main(int argc, char **argv)
{
	forks_wanted = argc > 1 ? atoi(argv[1]) : 300;
	VCT_CHECK(forks_wanted > 0, "FORKS must be positive");
	if (getenv("VCTEST_EXPECT_VCMALLOC"))
		VCT_CHECK(vct_under_vcmalloc(), "vcmalloc is not loaded");

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_watchdog;
	VCT_CHECK(sigaction(SIGUSR1, &sa, NULL) == 0, "sigaction SIGUSR1");
	struct sigevent ev;
	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_SIGNAL;
	ev.sigev_signo = SIGUSR1;
	timer_t watchdog;
	VCT_CHECK(timer_create(CLOCK_MONOTONIC, &ev, &watchdog) == 0, "timer_create");
	struct itimerspec wd = {
	    .it_value = {.tv_sec = (time_t)(120 + forks_wanted / 10) * vct_time_scale()}};
	VCT_CHECK(timer_settime(watchdog, 0, &wd, NULL) == 0, "timer_settime");

	sa.sa_handler = on_timer;
	sa.sa_flags = SA_RESTART;
	VCT_CHECK(sigaction(SIGALRM, &sa, NULL) == 0, "sigaction SIGALRM");
	struct itimerval it = {.it_interval = {0, 2000}, .it_value = {0, 2000}};
	VCT_CHECK(setitimer(ITIMER_REAL, &it, NULL) == 0, "setitimer");

	void *slot[SLOTS] = {0};
	uint64_t rng = 0x519;
	unsigned long ops = 0;
	while (forks_done < forks_wanted) {
		void **s = &slot[vct_rand(&rng) % SLOTS];
		if (*s) {
			rc_release(*s, "main loop block");
			*s = NULL;
		} else {
			*s = rc_make(&rng, 4096);
		}
		ops++;
		/* a burst of bare calls, where most interruptions land */
		void *burst[32];
		in_allocator = 1;
		for (int i = 0; i < 32; i++)
			burst[i] = malloc((size_t)16 << (i + ops) % 12);
		for (int i = 0; i < 32; i++)
			free(burst[i]);
		in_allocator = 0;
		for (int i = 0; i < 32; i++)
			VCT_CHECK(burst[i] != NULL, "malloc in the burst failed");
	}
	struct itimerval off = {{0, 0}, {0, 0}};
	VCT_CHECK(setitimer(ITIMER_REAL, &off, NULL) == 0, "stop the timer");
	for (int i = 0; i < SLOTS; i++)
		if (slot[i])
			rc_release(slot[i], "main loop block at the end");
	timer_delete(watchdog);
	printf("fork_signal: %d forks from SIGALRM during %lu loop iterations (%d of them "
	       "interrupted a bare malloc/free burst), %d children failed (last status %d), "
	       "%d fork errors\n",
	       (int)forks_done, ops, (int)forks_inside_allocator, (int)child_failures,
	       (int)last_status, (int)fork_errors);
	VCT_CHECK(child_failures == 0, "%d children did not exit 0", (int)child_failures);
	VCT_CHECK(fork_errors == 0, "fork failed %d times", (int)fork_errors);
	printf("fork_signal: ok\n");
	return 0;
}
