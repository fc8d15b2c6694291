/* fork_storm: fork again and again while other threads allocate.
 *
 * Usage: fork_storm [FORKS]   (default 150)
 *
 * WORKERS threads run rc_work in a loop (self-checking blocks, exchange table;
 * races.h). Before the storm the main thread allocates KEEP blocks ("pre-fork
 * memory"). Then it forks FORKS times, each fork landing wherever the workers are:
 * in the middle of fast paths, refills, overflows, reclaim. Each child (one thread,
 * possibly forked while the allocator's locks were held by now-vanished threads):
 *   - checks and frees every pre-fork block and every block of the exchange table
 *     (blocks of other threads, some of them freed on another vCPU in the parent);
 *   - runs rc_work itself, and starts two threads that do the same (the child's
 *     allocator must also work multi-threaded);
 *   - exits 0; any damage or hang makes it exit non-zero or be killed by vct_alarm().
 * The parent waits for each child and requires status 0; its own blocks are checked
 * at the end. */
#include "races.h"

#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

enum { WORKERS = 4, KEEP = 200, OPS = 400 };

static atomic_bool stop;
static void *keep[KEEP];

static void *worker(void *arg)
{
	uint64_t rng = 0xf0f0ull + (uintptr_t)arg;
	while (!atomic_load(&stop))
		rc_work(vct_rand(&rng), OPS, 256u << 10);
	return NULL;
}

static void *child_thread(void *arg)
{
	rc_work((uintptr_t)arg, OPS, 64u << 10);
	return NULL;
}

static void child(int n)
{
	vct_alarm(60);
	for (int i = 0; i < KEEP; i++)
		rc_release(keep[i], "pre-fork block in the child");
	rc_drain_table("exchange block in the child");
	rc_work(0xc41dull + (uint64_t)n, OPS, 256u << 10);
	pthread_t t[2];
	for (uintptr_t i = 0; i < 2; i++)
		VCT_CHECK(pthread_create(&t[i], NULL, child_thread, (void *)(i + 7 * n)) == 0,
			  "create in the child");
	for (int i = 0; i < 2; i++)
		VCT_CHECK(pthread_join(t[i], NULL) == 0, "join in the child");
	rc_drain_table("exchange block in the child at exit");
	_exit(0);
}

int main(int argc, char **argv)
{
	int forks = argc > 1 ? atoi(argv[1]) : 150;
	VCT_CHECK(forks > 0, "FORKS must be positive");
	/* hang guard: generous, scaled by the work asked for */
	vct_start("fork_storm", 120 + 3 * (unsigned)forks);
	uint64_t rng = 0x1234;
	for (int i = 0; i < KEEP; i++)
		keep[i] = rc_make(&rng, 256u << 10);
	pthread_t t[WORKERS];
	for (uintptr_t i = 0; i < WORKERS; i++)
		VCT_CHECK(pthread_create(&t[i], NULL, worker, (void *)i) == 0, "create");
	int ok = 0;
	for (int n = 0; n < forks; n++) {
		pid_t pid = fork();
		VCT_CHECK(pid >= 0, "fork");
		if (pid == 0)
			child(n);
		int status;
		VCT_CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
		VCT_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			  "child %d ended with %s %d", n, WIFEXITED(status) ? "status" : "signal",
			  WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		ok++;
	}
	atomic_store(&stop, true);
	for (int i = 0; i < WORKERS; i++)
		VCT_CHECK(pthread_join(t[i], NULL) == 0, "join");
	for (int i = 0; i < KEEP; i++)
		rc_release(keep[i], "pre-fork block in the parent");
	size_t left = rc_drain_table("table at exit");
	printf("fork_storm: %d children exited 0 (forked under %d allocating threads), "
	       "%zu table blocks at exit\nfork_storm: ok\n",
	       ok, WORKERS, left);
	return 0;
}
