/* fork_state (white-box, linked with the allocator's test-hook build): fork touches
 * the per-vCPU state of the ids in use, not of every possible CPU.
 *
 * The test-hook build sizes the vCPU id space for at least VC_TEST_MIN_VCPUS (1024)
 * possible CPUs, whatever the machine has; ids above the machine's possible CPUs
 * are never used. The states (struct vc_vcpu, one per id) live in reserved memory
 * that becomes resident where it is touched, so the resident pages of that array
 * (mincore) are the state a fork touched. Each fork is checked in the parent after
 * it returns and in the child (which also allocates, from two threads, with the
 * locks the fork left it): at most the pages of the states of the machine's
 * possible CPUs may be resident. Forks: one from a single-threaded process (the
 * child re-initialises the locks), one while another thread that has allocated is
 * alive (the parent takes the locks). Touching every state is 1024 x 896 bytes:
 * 224 pages. */
#include "internal.h"
#include "vctest.h"

#include <pthread.h>
#include <semaphore.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static size_t state_pages(void)
{
	return vc_page_round(vc_g.nvcpus * sizeof(struct vc_vcpu)) / VC_OS_PAGE;
}

static size_t resident_state_pages(void)
{
	static unsigned char vec[1 << 16];
	size_t n = state_pages();
	VCT_CHECK(n <= sizeof vec, "%zu pages of vCPU state", n);
	VCT_CHECK(mincore(vc_g.vcpus, n * VC_OS_PAGE, vec) == 0, "mincore");
	size_t r = 0;
	for (size_t i = 0; i < n; i++)
		r += vec[i] & 1;
	return r;
}

/* Pages holding the states of ids below the machine's possible CPU count (the
 * highest id in /sys/devices/system/cpu/possible, plus one). */
static size_t allowed_pages(void)
{
	FILE *f = fopen("/sys/devices/system/cpu/possible", "r");
	VCT_CHECK(f != NULL, "/sys/devices/system/cpu/possible");
	char buf[256];
	VCT_CHECK(fgets(buf, sizeof buf, f) != NULL, "empty possible-CPU list");
	fclose(f);
	unsigned highest = 0, v = 0;
	for (char *c = buf;; c++) {
		if (*c >= '0' && *c <= '9') {
			v = v * 10 + (unsigned)(*c - '0');
			continue;
		}
		if (v > highest)
			highest = v;
		v = 0;
		if (!*c)
			break;
	}
	size_t bytes = (size_t)(highest + 1) * sizeof(struct vc_vcpu);
	return (bytes + VC_OS_PAGE - 1) / VC_OS_PAGE + 1;
}

static void *churn(void *arg)
{
	uint64_t rng = (uintptr_t)arg;
	void *p[256];
	for (int round = 0; round < 20; round++) {
		for (int i = 0; i < 256; i++) {
			size_t n = vct_random_size(&rng, 0);
			p[i] = malloc(n);
			VCT_CHECK(p[i] != NULL, "malloc(%zu)", n);
			memset(p[i], i, n < 64 ? n : 64);
		}
		for (int i = 0; i < 256; i++)
			free(p[i]);
	}
	return NULL;
}

static void fork_and_check(const char *when, size_t allowed)
{
	size_t before = resident_state_pages();
	pid_t pid = fork();
	VCT_CHECK(pid >= 0, "fork");
	if (pid == 0) {
		size_t child = resident_state_pages();
		if (child > allowed) {
			fprintf(stderr,
				"FAIL: %s: the child has %zu pages of vCPU state resident "
				"(of %zu; at most %zu allowed)\n",
				when, child, state_pages(), allowed);
			_exit(1);
		}
		/* The child's allocator works, from two threads. */
		pthread_t t;
		VCT_CHECK(pthread_create(&t, NULL, churn, (void *)1) == 0, "pthread_create");
		churn((void *)2);
		VCT_CHECK(pthread_join(t, NULL) == 0, "pthread_join");
		_exit(0);
	}
	size_t parent = resident_state_pages();
	int status;
	VCT_CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
	fprintf(stderr,
		"fork_state: %s: vCPU state pages resident %zu before the fork, %zu after "
		"(of %zu, at most %zu allowed)\n",
		when, before, parent, state_pages(), allowed);
	VCT_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: child status %#x", when,
		  status);
	VCT_CHECK(parent <= allowed, "%s: %zu pages of vCPU state resident in the parent", when,
		  parent);
}

static sem_t allocated, done;

static void *other_thread(void *arg)
{
	churn(arg);
	sem_post(&allocated);
	vct_sem_wait(&done);
	return NULL;
}

int main(void)
{
	vct_start("fork_state", 60);
	VCT_CHECK(vct_under_vcmalloc(), "needs vcmalloc");
	size_t allowed = allowed_pages();
	VCT_CHECK(vc_g.nvcpus >= VC_TEST_MIN_VCPUS, "id space of %u", vc_g.nvcpus);
	if (state_pages() <= 2 * allowed) {
		printf("fork_state: skipped: the machine has nearly %u possible CPUs\n",
		       vc_g.nvcpus);
		return 77;
	}
	churn((void *)3);
	fork_and_check("single-threaded", allowed);

	sem_init(&allocated, 0, 0);
	sem_init(&done, 0, 0);
	pthread_t t;
	VCT_CHECK(pthread_create(&t, NULL, other_thread, (void *)4) == 0, "pthread_create");
	vct_sem_wait(&allocated);
	fork_and_check("multi-threaded", allowed);
	sem_post(&done);
	VCT_CHECK(pthread_join(t, NULL) == 0, "pthread_join");
	printf("fork_state: ok\n");
	return 0;
}
