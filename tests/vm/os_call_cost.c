/* os_call_cost: what the system calls an allocator makes cost while other threads of
 * the process run, for guests whose CPUs are emulated (and for comparison, the host).
 *
 *   vm-os-call-cost [THREADS [spin|sleep [CALLS]]]     (defaults: 64 spin 10)
 *
 * THREADS threads either spin (busy on their CPUs) or sleep in 1 ms naps; then the
 * main thread times CALLS calls of each kind and prints the mean per call:
 *   - madvise(MADV_DONTNEED) of one touched page (what a release of free pages is);
 *   - membarrier(PRIVATE_EXPEDITED_RSEQ) (the fence of a drain of another index);
 *   - mmap of 64 KiB, a write to each of its 16 pages, munmap;
 *   - MADV_POPULATE_WRITE of one page (what a carve's populate is).
 * A call that takes mappings away makes every CPU running the process drop its TLB
 * entries, and a fence interrupts each of them: on hardware microseconds, in a TCG
 * guest a wait for every vCPU thread. Measures only; nothing is checked. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

enum { MAX_THREADS = 256, MEMBARRIER_RSEQ = 1 << 7, MEMBARRIER_REGISTER_RSEQ = 1 << 8 };

static volatile int stop;

static void *spinner(void *arg)
{
	(void)arg;
	volatile unsigned long n = 0;
	while (!stop)
		n++;
	return NULL;
}

static void *sleeper(void *arg)
{
	(void)arg;
	while (!stop)
		usleep(1000);
	return NULL;
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 64;
	int spin = argc > 2 ? strcmp(argv[2], "sleep") != 0 : 1;
	int calls = argc > 3 ? atoi(argv[3]) : 10;
	if (threads < 0 || threads > MAX_THREADS || calls < 1 || calls > 64) {
		fprintf(stderr, "usage: vm-os-call-cost [0..%d [spin|sleep [1..64]]]\n",
			MAX_THREADS);
		return 2;
	}
	int fence = syscall(SYS_membarrier, MEMBARRIER_REGISTER_RSEQ, 0, 0) == 0;
	pthread_t t[MAX_THREADS];
	for (int i = 0; i < threads; i++)
		if (pthread_create(&t[i], NULL, spin ? spinner : sleeper, NULL) != 0) {
			perror("pthread_create");
			return 1;
		}
	usleep(200000); /* every thread started */
	long page = sysconf(_SC_PAGESIZE);
	char *area = mmap(NULL, (size_t)page * 2 * 64, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (area == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	double t0 = now_s();
	for (int i = 0; i < calls; i++) {
		area[(size_t)i * page] = 1;
		madvise(area + (size_t)i * page, (size_t)page, MADV_DONTNEED);
	}
	double t1 = now_s();
	for (int i = 0; i < calls && fence; i++)
		syscall(SYS_membarrier, MEMBARRIER_RSEQ, 0, 0);
	double t2 = now_s();
	for (int i = 0; i < calls; i++) {
		char *m = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);
		if (m == MAP_FAILED)
			break;
		for (size_t off = 0; off < 65536; off += 4096)
			m[off] = 1;
		munmap(m, 65536);
	}
	double t3 = now_s();
	for (int i = 0; i < calls; i++)
		madvise(area + (size_t)(64 + i) * page, (size_t)page, MADV_POPULATE_WRITE);
	double t4 = now_s();
	printf("os_call_cost: %d %s threads, ms per call: madvise(DONTNEED) %.2f, "
	       "membarrier(rseq) %s%.2f, mmap+16 faults+munmap %.2f, populate %.2f\n",
	       threads, spin ? "spinning" : "sleeping", (t1 - t0) * 1e3 / calls,
	       fence ? "" : "(unavailable) ", (t2 - t1) * 1e3 / calls,
	       (t3 - t2) * 1e3 / calls, (t4 - t3) * 1e3 / calls);
	stop = 1;
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	return 0;
}
