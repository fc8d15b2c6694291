/* fork_threads: fork is safe while other threads are inside malloc and free.
 *
 * WORKERS threads loop without pause: each owns a range of a shared pool of blocks,
 * and replaces them one at a time (take the block out of its slot, check it, free it,
 * allocate a new one of a random size, fill it, publish it in the slot), with extra
 * malloc/free pairs in between. Meanwhile the main thread forks FORKS times. Each
 * child (whose only thread is a copy of the forking one, taken at an arbitrary point
 * of the workers' allocator calls):
 *   - checks and frees every block published in the pool, i.e. memory allocated
 *     before the fork by any thread,
 *   - allocates, fills, checks and frees a few thousand new blocks,
 *   - starts a thread that does the same and frees blocks the child allocated,
 *   - exits with status 0 through exit() (running the allocator's exit path).
 * The parent requires every child to exit with status 0. A deadlock (an allocator
 * lock held across fork by a worker) shows up as the child's alarm (SIGALRM) or the
 * parent's alarm, never as a hang. */
#include "vctest.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { WORKERS = 3, SLOTS_PER_WORKER = 64, FORKS = 40, CHILD_BLOCKS = 1500 };

struct header {
	uint64_t size;
	uint64_t seed;
};

static void *_Atomic pool[WORKERS * SLOTS_PER_WORKER];
static atomic_bool stop;

static void *make_block(uint64_t *rng)
{
	size_t n = sizeof(struct header) + vct_random_size(rng, 1u << 20);
	unsigned char *p = malloc(n);
	VCT_CHECK(p != NULL, "malloc(%zu)", n);
	struct header h = {n, vct_rand(rng)};
	memcpy(p, &h, sizeof(h));
	size_t body = n - sizeof(h);
	vct_fill(p + sizeof(h), body < 8192 ? body : 8192, h.seed);
	return p;
}

static void check_and_free(unsigned char *p, const char *where)
{
	struct header h;
	memcpy(&h, p, sizeof(h));
	VCT_CHECK(h.size >= sizeof(h) && h.size <= (1u << 20) + 70000, "%s: bad header size %llu",
		  where, (unsigned long long)h.size);
	size_t body = h.size - sizeof(h);
	size_t bad = vct_verify(p + sizeof(h), body < 8192 ? body : 8192, h.seed);
	VCT_CHECK(bad == (size_t)-1, "%s: block %p damaged at %zu", where, (void *)p, bad);
	free(p);
}

static void *worker(void *arg)
{
	const unsigned me = (unsigned)(uintptr_t)arg;
	uint64_t rng = 0xf0f0ull + me;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		unsigned slot =
		    me * SLOTS_PER_WORKER + (unsigned)(vct_rand(&rng) % SLOTS_PER_WORKER);
		unsigned char *old = atomic_exchange(&pool[slot], NULL);
		if (old)
			check_and_free(old, "worker");
		atomic_store(&pool[slot], make_block(&rng));
		void *tmp = malloc(vct_random_size(&rng, 64u << 10));
		VCT_CHECK(tmp != NULL, "malloc");
		free(tmp);
	}
	return NULL;
}

static void *child_thread(void *arg)
{
	void **blocks = arg;
	uint64_t rng = 4;
	for (int i = 0; i < CHILD_BLOCKS; i += 2)
		check_and_free(blocks[i], "child thread (cross-thread)");
	for (int i = 0; i < CHILD_BLOCKS; i++)
		check_and_free(make_block(&rng), "child thread");
	return NULL;
}

static void child(void)
{
	vct_alarm(30);
	size_t freed = 0;
	for (size_t i = 0; i < WORKERS * SLOTS_PER_WORKER; i++) {
		unsigned char *p = atomic_load(&pool[i]);
		if (p) {
			check_and_free(p, "child (allocated before fork)");
			freed++;
		}
	}
	VCT_CHECK(freed > 0, "no block was published before the fork");
	static void *blocks[CHILD_BLOCKS];
	uint64_t rng = 3;
	for (int i = 0; i < CHILD_BLOCKS; i++)
		blocks[i] = make_block(&rng);
	pthread_t t;
	VCT_CHECK(pthread_create(&t, NULL, child_thread, blocks) == 0, "child pthread_create");
	VCT_CHECK(pthread_join(t, NULL) == 0, "child pthread_join");
	for (int i = 1; i < CHILD_BLOCKS; i += 2)
		check_and_free(blocks[i], "child");
	exit(0);
}

int main(void)
{
	vct_start("fork_threads", 300);
	uint64_t rng = 1;
	for (size_t i = 0; i < WORKERS * SLOTS_PER_WORKER; i++)
		atomic_store(&pool[i], make_block(&rng));
	pthread_t t[WORKERS];
	for (uintptr_t i = 0; i < WORKERS; i++)
		VCT_CHECK(pthread_create(&t[i], NULL, worker, (void *)i) == 0, "pthread_create");

	int failures = 0;
	const long forks = vct_work(FORKS, 8);
	for (int f = 0; f < forks; f++) {
		fflush(NULL);
		pid_t pid = fork();
		VCT_CHECK(pid >= 0, "fork failed");
		if (pid == 0)
			child();
		int status;
		VCT_CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			failures++;
			if (WIFSIGNALED(status))
				fprintf(stderr, "fork %d: child killed by signal %d%s\n", f,
					WTERMSIG(status),
					WTERMSIG(status) == SIGALRM ? " (deadlock: alarm)" : "");
			else
				fprintf(stderr, "fork %d: child exited with %d\n", f,
					WEXITSTATUS(status));
		}
	}
	atomic_store(&stop, true);
	for (int i = 0; i < WORKERS; i++)
		VCT_CHECK(pthread_join(t[i], NULL) == 0, "pthread_join");
	for (size_t i = 0; i < WORKERS * SLOTS_PER_WORKER; i++)
		check_and_free(atomic_exchange(&pool[i], NULL), "parent at exit");
	VCT_CHECK(failures == 0, "%d of %ld children failed", failures, forks);
	printf("fork_threads: ok (%ld forks while %d threads allocated)\n", forks, WORKERS);
	return 0;
}
