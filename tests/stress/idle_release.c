/* idle_release (vcmalloc only): memory comes back from a process that stops calling
 * the allocator, through the maintenance thread (allocator/maintenance.c), and when
 * its worker threads are gone (allocator/init.c).
 *   1. a single-threaded process gets no thread it did not ask for;
 *   2. four threads allocate ~48 MiB of mixed small and large blocks, free them and
 *      stay alive, blocked; the main thread then sleeps, polling VmRSS with system
 *      calls only (no allocator call at all): RSS must fall to within 6 MiB of what
 *      it was before the burst, within 30 s (run with 100 ms reclaim and decay
 *      periods: a few periods are enough; the bound is generous for a loaded
 *      machine);
 *      with argument "off" (VCMALLOC_BACKGROUND=0) the control: no thread appears
 *      and RSS does not fall during 1 s without calls;
 *   3. the four threads exit: with "off", the last exit leaves one thread and gives
 *      everything back, so RSS is within 6 MiB of where it started once they are
 *      joined (which also shows that the control held memory to give back);
 *   4. fork while the thread may be working: 30 children each allocate on two
 *      threads and exit; every child ends (no deadlock) with status 0.
 */
#include "vctest.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MIB (1L << 20)

/* Threads of this process (reads /proc/self/task with getdents through opendir,
 * which allocates: only called where that does not matter). */
static int task_count(void)
{
	DIR *d = opendir("/proc/self/task");
	VCT_CHECK(d != NULL, "opendir");
	int n = 0;
	for (struct dirent *e; (e = readdir(d));)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

#define BURST_OBJECTS 60000
#define BURST_THREADS 4

/* Each burst thread posts burst_done when its blocks are freed, then waits for
 * burst_leave. */
static sem_t burst_done, burst_leave;

static void *burst(void *arg)
{
	uint64_t seed = (uintptr_t)arg * 7919 + 1;
	void **v = malloc(BURST_OBJECTS * sizeof(*v));
	VCT_CHECK(v != NULL, "malloc");
	for (long i = 0; i < BURST_OBJECTS; i++) {
		size_t n = (i % 64 == 0) ? 4096 + vct_rand(&seed) % 28672 : 16 + vct_rand(&seed) % 240;
		v[i] = malloc(n);
		VCT_CHECK(v[i] != NULL, "malloc %zu", n);
		memset(v[i], (int)i, n);
	}
	for (long i = 0; i < BURST_OBJECTS; i++)
		free(v[i]);
	free(v);
	sem_post(&burst_done);
	vct_sem_wait(&burst_leave);
	return NULL;
}

static void *child_worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < 2000; i++)
		free(malloc((size_t)(16 + i % 900)));
	return NULL;
}

int main(int argc, char **argv)
{
	vct_start("idle_release", 120);
	bool off = argc > 1 && strcmp(argv[1], "off") == 0;
	VCT_CHECK(vct_under_vcmalloc(), "this test needs vcmalloc");

	for (int i = 0; i < 1000; i++)
		free(malloc((size_t)(i + 1)));
	VCT_CHECK(task_count() == 1, "a single-threaded process has %d threads", task_count());

	long before = vct_rss_kib_syscalls();
	sem_init(&burst_done, 0, 0);
	sem_init(&burst_leave, 0, 0);
	pthread_t t[BURST_THREADS];
	for (uintptr_t i = 0; i < BURST_THREADS; i++)
		VCT_CHECK(pthread_create(&t[i], NULL, burst, (void *)i) == 0, "pthread_create");
	for (int i = 0; i < BURST_THREADS; i++)
		vct_sem_wait(&burst_done);
	long peak = vct_proc_status_kib("VmHWM");
	long after = vct_rss_kib_syscalls();
	printf("before %ld KiB, peak %ld KiB, after the burst %ld KiB\n", before, peak, after);
	VCT_CHECK(peak - before > 24 * 1024, "the burst is too small to measure (%ld KiB)",
		  peak - before);

	if (off) {
		/* How much the burst's own frees gave back depends on how long they took
		 * (each allocator call may release what has decayed: under emulation most
		 * of it), so the claim is made from the idle point: RSS does not move while
		 * no call is made. */
		VCT_CHECK(task_count() == 1 + BURST_THREADS,
			  "VCMALLOC_BACKGROUND=0 but %d threads", task_count());
		long held = vct_rss_kib_syscalls();
		vct_sleep_us(1000000);
		long later = vct_rss_kib_syscalls();
		printf("background off: %ld KiB, 1 s later %ld KiB\n", held, later);
		VCT_CHECK(later >= held - 512,
			  "RSS fell from %ld to %ld KiB without allocator calls nor maintenance "
			  "thread", held, later);
	} else {
		long rss = after;
		int waited = 0;
		while (rss > before + 6 * 1024 && waited < 30000) {
			vct_sleep_us(50000);
			waited += 50;
			rss = vct_rss_kib_syscalls();
		}
		printf("idle: %ld KiB after %d ms without allocator calls\n", rss, waited);
		vct_print_memory_stats();
		VCT_CHECK(rss <= before + 6 * 1024,
			  "RSS %ld KiB did not fall to within 6 MiB of %ld KiB in 30 s", rss,
			  before);
		VCT_CHECK(task_count() == 2 + BURST_THREADS,
			  "expected the program's threads and one more, got %d", task_count());
	}

	long idle_end = vct_rss_kib_syscalls();
	for (int i = 0; i < BURST_THREADS; i++)
		sem_post(&burst_leave);
	for (int i = 0; i < BURST_THREADS; i++)
		pthread_join(t[i], NULL);
	long joined = vct_rss_kib_syscalls();
	printf("threads gone: %ld KiB (%ld KiB before they exited)\n", joined, idle_end);
	if (off)
		VCT_CHECK(joined <= before + 6 * 1024 && idle_end - joined >= 1024,
			  "the exits left %ld KiB (from %ld KiB; %ld KiB before the burst)",
			  joined, idle_end, before);

	for (int round = 0; round < 30; round++) {
		pid_t pid = fork();
		VCT_CHECK(pid >= 0, "fork");
		if (pid == 0) {
			pthread_t a, b;
			if (pthread_create(&a, NULL, child_worker, NULL) ||
			    pthread_create(&b, NULL, child_worker, NULL))
				_exit(3);
			pthread_join(a, NULL);
			pthread_join(b, NULL);
			child_worker(NULL);
			_exit(0);
		}
		for (int i = 0; i < 200; i++)
			free(malloc((size_t)(64 + i)));
		int status = 0;
		VCT_CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
		VCT_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			  "child %d ended with status %#x", round, status);
		vct_sleep_us((round % 3 == 0 ? 60 : 5) * 1000L);
	}
	printf("idle_release: ok\n");
	return 0;
}
