/* kernel/tests/cid_unique.c - mm_cid is unique among running threads and compact.
 *
 * usage: cid_unique THREADS ITERATIONS [--control]
 *
 * THREADS workers each add 1 to a per-id counter ITERATIONS times. An addition is
 * one rseq critical section on glibc's area: read mm_cid, load counters[mm_cid],
 * spin a little, store the value plus one (the commit). The kernel aborts the
 * section on any preemption, migration or signal, so a committed section ran
 * start to end without leaving its CPU, and owned its id throughout. Two threads
 * holding the same id at once would both load the same value and one addition
 * would be lost; so the counters must add up to exactly THREADS * ITERATIONS.
 *
 * Every id seen inside a committed section must also be below
 * min(threads of the process (workers + main), CPUs in the affinity mask), which
 * covers taskset and cpusets (the mask reflects both).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "rseq_abi.h"

#define MAX_IDS 1024

static long counters[MAX_IDS];
static unsigned long iterations;
/*
 * Where the id is read: mm_cid (24). --control reads flags (16) instead, which
 * every thread sees as 0: a shared id by construction, which the lost-addition
 * check must catch (it proves the check can fail).
 */
static long id_offset = VC_RSEQ_OFF_MM_CID;
static atomic_int go;

struct worker {
	pthread_t thread;
	unsigned long aborts;
	unsigned int max_cid;
	unsigned char seen[MAX_IDS];
};

/* Pauses inside each critical section: widens the window a duplicate id would need. */
#define SPIN_IN_SECTION 20

/*
 * One addition to counters[mm_cid]; returns the id used, or -1 if the kernel
 * aborted the section (then nothing was stored).
 */
static int add_one(void)
{
	long off = __rseq_offset, id_field = __rseq_offset + id_offset;
	unsigned long cid;

	__asm__ goto(".pushsection __rseq_cs, \"aw\"\n\t"
		     ".balign 32\n"
		     "3:\n\t"
		     ".long 0, 0\n\t"
		     ".quad 1f, (2f - 1f), 4f\n\t"
		     ".popsection\n\t"
		     "leaq 3b(%%rip), %%rax\n\t"
		     "movq %%rax, %%fs:8(%[off])\n"
		     "1:\n\t"
		     "movl %%fs:(%[id_field]), %k[cid]\n\t"
		     "movq (%[ctr], %[cid], 8), %%rdx\n\t"
		     "movl %[spin], %%eax\n"
		     "5:\n\t"
		     "pause\n\t"
		     "decl %%eax\n\t"
		     "jnz 5b\n\t"
		     "incq %%rdx\n\t"
		     "movq %%rdx, (%[ctr], %[cid], 8)\n"
		     "2:\n\t"
		     ".pushsection __rseq_failure, \"ax\"\n\t"
		     ".long 0x53053053\n"
		     "4:\n\t"
		     "jmp %l[aborted]\n\t"
		     ".popsection\n"
		     : [cid] "=&r"(cid)
		     : [off] "r"(off), [id_field] "r"(id_field), [ctr] "r"(counters), [spin] "i"(SPIN_IN_SECTION)
		     : "rax", "rdx", "memory", "cc"
		     : aborted);
	return (int)cid;
aborted:
	return -1;
}

static void *work(void *arg)
{
	struct worker *w = arg;

	while (!atomic_load(&go))
		;
	for (unsigned long done = 0; done < iterations;) {
		int cid = add_one();

		if (cid < 0) {
			w->aborts++;
			continue;
		}
		done++;
		w->seen[cid] = 1;
		if ((unsigned int)cid > w->max_cid)
			w->max_cid = cid;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	CHECK(argc == 3 || argc == 4, "usage: cid_unique THREADS ITERATIONS [--control]");
	int control = argc == 4 && strcmp(argv[3], "--control") == 0;
	if (control)
		id_offset = 16;
	int nthreads = atoi(argv[1]);
	iterations = strtoul(argv[2], NULL, 0);
	CHECK(nthreads > 0 && nthreads <= 1024 && iterations > 0, "bad arguments");
	CHECK(getauxval(AT_RSEQ_FEATURE_SIZE) >= 28, "kernel reports no mm_cid (feature size %lu)",
	      getauxval(AT_RSEQ_FEATURE_SIZE));
	CHECK(glibc_registered_rseq(), "glibc registered no rseq area");

	cpu_set_t allowed;
	CHECK(sched_getaffinity(0, sizeof allowed, &allowed) == 0, "sched_getaffinity");
	int ncpus = CPU_COUNT(&allowed);
	int process_threads = nthreads + 1;
	int bound = process_threads < ncpus ? process_threads : ncpus;

	struct worker *w = calloc(nthreads, sizeof *w);
	CHECK(w, "calloc");
	for (int i = 0; i < nthreads; i++)
		CHECK(pthread_create(&w[i].thread, NULL, work, &w[i]) == 0, "pthread_create");
	atomic_store(&go, 1);

	unsigned long aborts = 0, total = 0;
	unsigned int max_cid = 0;
	unsigned char seen[MAX_IDS] = { 0 };
	for (int i = 0; i < nthreads; i++) {
		CHECK(pthread_join(w[i].thread, NULL) == 0, "pthread_join");
		aborts += w[i].aborts;
		if (w[i].max_cid > max_cid)
			max_cid = w[i].max_cid;
		for (int c = 0; c < MAX_IDS; c++)
			seen[c] |= w[i].seen[c];
	}
	int distinct = 0;
	for (int c = 0; c < MAX_IDS; c++) {
		total += counters[c];
		distinct += seen[c];
	}
	unsigned long want = (unsigned long)nthreads * iterations;

	if (control) {
		printf("cid_unique: control (one id for all): %lu of %lu additions lost\n",
		       want - total, want);
		CHECK(total < want, "sharing one id lost no addition: the check is blind");
		printf("cid_unique: control ok\n");
		return 0;
	}
	printf("cid_unique: %d threads on %d CPUs: %lu additions (want %lu), %lu aborts, "
	       "ids 0..%u (%d distinct), bound %d\n",
	       nthreads, ncpus, total, want, aborts, max_cid, distinct, bound);
	CHECK(total == want, "%lu additions lost: two running threads shared an mm_cid",
	      want - total);
	CHECK(max_cid < (unsigned int)bound, "mm_cid %u not below min(%d threads, %d CPUs)",
	      max_cid, process_threads, ncpus);
	printf("cid_unique: ok\n");
	return 0;
}
