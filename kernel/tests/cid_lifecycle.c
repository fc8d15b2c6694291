/* kernel/tests/cid_lifecycle.c - mm_cid across fork, exec, thread exit and the
 * transitions between one and several threads.
 *
 * usage: cid_lifecycle            (the whole sequence, exits 0 when every step holds)
 *        cid_lifecycle --after-exec (used by the sequence itself)
 *
 * Steps, each asserted:
 *  1. a single-threaded process reads mm_cid 0;
 *  2. with W busy threads (W = min(4, CPUs)) every id read is below
 *     min(W + 1, CPUs) (single -> multi-threaded);
 *  3. after they exit, the process is single-threaded again and reads 0;
 *  4. fork() from a multi-threaded process: the child reads 0, then execs this
 *     program, which reads feature size 28 and mm_cid 0 in the new image;
 *  5. posix_spawn() (vfork + exec) of the same, from a single-threaded parent;
 *  6. a non-main thread of a multi-threaded process execs: the new image is
 *     single-threaded and reads 0;
 *  7. 300 rounds of creating and joining 3 short threads, each id below the
 *     bound, and 0 again at the end.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <spawn.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rseq_abi.h"

extern char **environ;

static char self[4096];
static atomic_int stop;
static int ncpus;

static unsigned int my_cid(void)
{
	return glibc_rseq_area()->mm_cid;
}

/* Let the scheduler switch us out and in again: the id is (re)assigned then. */
static void reschedule(void)
{
	struct timespec ts = { 0, 2 * 1000 * 1000 };

	nanosleep(&ts, NULL);
}

/* Threads: in /proc/self/status (exited threads are gone from it). */
static int thread_count(void)
{
	char line[256];
	int n = -1;
	FILE *f = fopen("/proc/self/status", "r");

	CHECK(f, "open /proc/self/status");
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "Threads: %d", &n) == 1)
			break;
	fclose(f);
	return n;
}

/*
 * Once the process has a single thread left, its next switch-in gives it 0.
 * (pthread_join() may return a little before the joined thread is gone.)
 */
static void check_single(const char *when)
{
	while (thread_count() != 1)
		reschedule();
	reschedule();
	CHECK(my_cid() == 0, "%s: single-threaded process has mm_cid %u", when, my_cid());
	printf("cid_lifecycle: %s: mm_cid 0\n", when);
}

struct spinner {
	pthread_t thread;
	unsigned int bound;
	unsigned int max_cid;
};

static void *spin(void *arg)
{
	struct spinner *s = arg;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		unsigned int cid = my_cid();

		if (cid > s->max_cid)
			s->max_cid = cid;
	}
	return NULL;
}

/* Step 2: W threads spin while main sleeps; no id reaches the bound. */
static void check_multi(int w)
{
	struct spinner s[8];
	unsigned int bound = w + 1 < ncpus ? w + 1 : ncpus;

	atomic_store(&stop, 0);
	for (int i = 0; i < w; i++) {
		s[i] = (struct spinner){ .bound = bound };
		CHECK(pthread_create(&s[i].thread, NULL, spin, &s[i]) == 0, "pthread_create");
	}
	sleep(1);
	atomic_store(&stop, 1);
	unsigned int max_cid = my_cid();
	for (int i = 0; i < w; i++) {
		CHECK(pthread_join(s[i].thread, NULL) == 0, "pthread_join");
		if (s[i].max_cid > max_cid)
			max_cid = s[i].max_cid;
	}
	CHECK(max_cid < bound, "%d threads: mm_cid %u not below %u", w, max_cid, bound);
	printf("cid_lifecycle: %d threads: ids up to %u (bound %u)\n", w, max_cid, bound);
}

static void *block(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop))
		reschedule();
	return NULL;
}

static void expect_exit0(pid_t pid, const char *what)
{
	int status;

	CHECK(waitpid(pid, &status, 0) == pid, "waitpid %s", what);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s failed (status %#x)", what,
	      status);
	printf("cid_lifecycle: %s: ok\n", what);
}

static void exec_self_after(void)
{
	execl(self, self, "--after-exec", (char *)NULL);
	fprintf(stderr, "exec %s failed\n", self);
	_exit(1);
}

/* Step 4: fork from a multi-threaded process. */
static void check_fork_exec(void)
{
	pthread_t t;

	atomic_store(&stop, 0);
	CHECK(pthread_create(&t, NULL, block, NULL) == 0, "pthread_create");
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		reschedule();
		if (my_cid() != 0) {
			fprintf(stderr, "FAIL: forked child has mm_cid %u\n", my_cid());
			_exit(1);
		}
		exec_self_after();
	}
	atomic_store(&stop, 1);
	CHECK(pthread_join(t, NULL) == 0, "pthread_join");
	expect_exit0(pid, "fork of a multi-threaded process, then exec");
}

/* Step 5: posix_spawn (CLONE_VM | CLONE_VFORK, then exec). */
static void check_spawn(void)
{
	pid_t pid;
	char *argv[] = { self, "--after-exec", NULL };

	CHECK(posix_spawn(&pid, self, NULL, NULL, argv, environ) == 0, "posix_spawn");
	expect_exit0(pid, "posix_spawn");
}

static void *exec_from_thread(void *arg)
{
	(void)arg;
	reschedule();
	exec_self_after();
	return NULL;
}

/* Step 6: exec from a non-main thread while another thread runs. */
static void check_thread_exec(void)
{
	pid_t pid = fork();

	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		pthread_t a, b;

		atomic_store(&stop, 0);
		pthread_create(&a, NULL, block, NULL);
		pthread_create(&b, NULL, exec_from_thread, NULL);
		pthread_join(b, NULL);
		_exit(1); /* not reached: the exec replaces the process */
	}
	expect_exit0(pid, "exec from a non-main thread");
}

static void *short_thread(void *arg)
{
	unsigned int *cid = arg;

	*cid = my_cid();
	return NULL;
}

/* Step 7: thread churn. */
static void check_churn(void)
{
	unsigned int max_cid = 0, bound = 4 < ncpus ? 4 : ncpus;

	for (int round = 0; round < 300; round++) {
		pthread_t t[3];
		unsigned int cid[3];

		for (int i = 0; i < 3; i++)
			CHECK(pthread_create(&t[i], NULL, short_thread, &cid[i]) == 0, "create");
		for (int i = 0; i < 3; i++) {
			CHECK(pthread_join(t[i], NULL) == 0, "join");
			CHECK(cid[i] < bound, "round %d: mm_cid %u not below %u", round, cid[i],
			      bound);
			if (cid[i] > max_cid)
				max_cid = cid[i];
		}
	}
	printf("cid_lifecycle: 300 rounds of 3 threads: ids up to %u (bound %u)\n", max_cid,
	       bound);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	CHECK(getauxval(AT_RSEQ_FEATURE_SIZE) >= 28, "kernel reports no mm_cid (feature size %lu)",
	      getauxval(AT_RSEQ_FEATURE_SIZE));
	CHECK(glibc_registered_rseq(), "glibc registered no rseq area");
	if (argc == 2 && strcmp(argv[1], "--after-exec") == 0) {
		check_single("after exec");
		return 0;
	}
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	CHECK(n > 0, "readlink /proc/self/exe");
	self[n] = 0;

	cpu_set_t allowed;
	CHECK(sched_getaffinity(0, sizeof allowed, &allowed) == 0, "sched_getaffinity");
	ncpus = CPU_COUNT(&allowed);
	int w = ncpus < 4 ? ncpus : 4;

	check_single("start");
	check_multi(w);
	check_single("after the threads exited");
	check_fork_exec();
	check_single("after fork");
	check_spawn();
	check_thread_exec();
	check_churn();
	check_single("after thread churn");
	printf("cid_lifecycle: ok\n");
	return 0;
}
