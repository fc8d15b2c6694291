/* crowd_exit (vcmalloc only): when most threads of a crowd have exited, the memory
 * they used goes back to the OS at once, without the program allocating again.
 *
 * 64 threads each allocate about 2 MiB in small and medium blocks, free them all and
 * exit. Then the main thread only reads statistics (vcmalloc_stats does not
 * allocate) and /proc/self/status. Bounds, with R the peak resident bytes:
 *   - vcmalloc's resident_bytes after the joins: at most R / 4;
 *   - the process's VmRSS fell by at least R / 2 from its high-water mark.
 * How many caches are populated afterwards is printed, not checked: a thread's exit
 * path may still free into a cache after the drain (crowd_hits checks that threads
 * served by hits alone count).
 * A second crowd right after the first checks that the caches refill and the memory
 * is reused normally (allocated bytes back to the start). */
#include "vctest.h"

#include <pthread.h>
#include <string.h>

enum { THREADS = 64, BLOCKS = 2048 };

/* all_allocated: every thread holds its blocks; measured: main has read the peak,
 * the threads may free (without it, a main thread descheduled after the first
 * barrier could read the statistics after the crowd had freed and left). */
static pthread_barrier_t all_allocated, measured;

static void *crowd_thread(void *arg)
{
	uint64_t rng = (uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1;
	static __thread void *blocks[BLOCKS];
	for (int i = 0; i < BLOCKS; i++) {
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		size_t n = 16 + (size_t)(rng >> 33) % 2048;
		blocks[i] = malloc(n);
		VCT_CHECK(blocks[i] != NULL, "malloc(%zu)", n);
		memset(blocks[i], 0x5a, n);
	}
	/* Everyone holds their blocks at once: the peak is the whole crowd's data. */
	pthread_barrier_wait(&all_allocated);
	pthread_barrier_wait(&measured);
	for (int i = 0; i < BLOCKS; i++)
		free(blocks[i]);
	return NULL;
}

static long vm_kib(const char *field)
{
	FILE *f = fopen("/proc/self/status", "r");
	VCT_CHECK(f != NULL, "/proc/self/status");
	char line[256];
	long v = -1;
	size_t n = strlen(field);
	while (fgets(line, sizeof line, f))
		if (strncmp(line, field, n) == 0 && line[n] == ':')
			v = strtol(line + n + 1, NULL, 10);
	fclose(f);
	VCT_CHECK(v >= 0, "no %s in /proc/self/status", field);
	return v;
}

static void run_crowd(uint64_t *peak_resident)
{
	pthread_t t[THREADS];
	pthread_barrier_init(&all_allocated, NULL, THREADS + 1);
	pthread_barrier_init(&measured, NULL, THREADS + 1);
	for (uintptr_t i = 0; i < THREADS; i++)
		VCT_CHECK(pthread_create(&t[i], NULL, crowd_thread, (void *)i) == 0,
			  "pthread_create");
	pthread_barrier_wait(&all_allocated);
	struct vcmalloc_stats s;
	vct_stats(&s);
	*peak_resident = s.resident_bytes;
	pthread_barrier_wait(&measured);
	for (int i = 0; i < THREADS; i++)
		VCT_CHECK(pthread_join(t[i], NULL) == 0, "pthread_join");
	pthread_barrier_destroy(&all_allocated);
	pthread_barrier_destroy(&measured);
}

int main(void)
{
	vct_start("crowd_exit", 60);
	VCT_CHECK(vct_under_vcmalloc(), "needs vcmalloc");
	struct vcmalloc_stats start;
	vct_stats(&start);
	for (int round = 1; round <= 2; round++) {
		uint64_t peak;
		run_crowd(&peak);
		struct vcmalloc_stats after;
		vct_stats(&after);
		long hwm = vm_kib("VmHWM"), rss = vm_kib("VmRSS");
		fprintf(stderr,
			"crowd_exit: round %d: resident %llu at the peak, %llu after the joins; "
			"caches populated %u holding %llu bytes; VmRSS %ld KiB (high-water %ld)\n",
			round, (unsigned long long)peak, (unsigned long long)after.resident_bytes,
			after.vcpu_caches_populated,
			(unsigned long long)after.vcpu_cache_object_bytes, rss, hwm);
		VCT_CHECK(peak >= (uint64_t)THREADS * BLOCKS * 16,
			  "resident %llu at the peak: the crowd did not allocate?",
			  (unsigned long long)peak);
		VCT_CHECK(after.resident_bytes <= peak / 4,
			  "resident_bytes %llu after the crowd left (peak %llu)",
			  (unsigned long long)after.resident_bytes, (unsigned long long)peak);
		if (round == 1)
			VCT_CHECK(hwm - rss >= (long)(peak / 2048),
				  "VmRSS %ld KiB, high-water %ld KiB: less than half of the "
				  "%llu peak bytes went back",
				  rss, hwm, (unsigned long long)peak);
		VCT_CHECK(after.allocated_bytes <= start.allocated_bytes + (64u << 10),
			  "allocated_bytes %llu after the crowd, %llu at the start",
			  (unsigned long long)after.allocated_bytes,
			  (unsigned long long)start.allocated_bytes);
	}
	printf("crowd_exit: ok\n");
	return 0;
}
