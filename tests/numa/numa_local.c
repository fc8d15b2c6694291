/* tests/numa/numa_local.c - NUMA locality of vcmalloc's objects.
 *
 * For every node, threads pinned to that node's CPUs allocate objects of many
 * sizes (small, large, through the vCPU caches and around them), write them, and
 * ask the kernel where each page lies (get_mempolicy MPOL_F_NODE|MPOL_F_ADDR). Then
 * the threads migrate to another node, free what a thread of another node
 * allocated (remote frees), and allocate again: objects recycled through vCPU
 * caches must still be local. Then every worker roams: it hops to another node
 * every few milliseconds while it allocates, fills, checks and frees blocks, and
 * frees blocks another worker filled (a roaming thread's region keeps objects of
 * every node, allocator/README.md: NUMA); no block may lose its contents. Passes
 * when >= 99% of objects are local in the first two phases, every roaming block
 * kept its contents, and, after everything is freed, no node holds live bytes.
 *
 * Usage: numa-local [objects-per-thread]   (needs >= 2 NUMA nodes; exits 77 on one)
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "vcmalloc.h"

#define MPOL_F_NODE (1 << 0)
#define MPOL_F_ADDR (1 << 1)
#define MAX_NODES 64
#define MAX_CPUS 1024

static int nnodes;
static int node_of_cpu[MAX_CPUS];
static int ncpus;
static int objects = 2000;

struct worker {
	pthread_t t;
	int node;          /* node it allocates on in phase 1 */
	int cpu;
	void **objs;
	size_t *sizes;
	long local, remote;   /* current phase */
	long local1, remote1; /* phase 1: fresh objects on the home node */
};

static int page_node(void *p)
{
	int node = -1;
	long r = syscall(SYS_get_mempolicy, &node, NULL, 0, p, MPOL_F_NODE | MPOL_F_ADDR);
	return r == 0 ? node : -1;
}

static void pin(int cpu)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	if (sched_setaffinity(0, sizeof s, &s) != 0) {
		perror("sched_setaffinity");
		exit(2);
	}
	sched_yield();
}

static int first_cpu_of(int node, int k)
{
	int seen = 0;
	for (int c = 0; c < ncpus; c++)
		if (node_of_cpu[c] == node && seen++ == k)
			return c;
	for (int c = 0; c < ncpus; c++)
		if (node_of_cpu[c] == node)
			return c;
	return -1;
}

static size_t size_for(unsigned i)
{
	static const size_t sizes[] = {16, 48, 128, 400, 1000, 4096, 10000, 40000, 300000};
	return sizes[i % (sizeof sizes / sizeof sizes[0])];
}

/* Allocate, touch, and count where each object's first byte lies. */
static void alloc_and_check(struct worker *w, int expect_node)
{
	for (int i = 0; i < objects; i++) {
		size_t sz = size_for((unsigned)i * 7 + (unsigned)w->cpu);
		char *p = malloc(sz);
		if (!p) {
			fprintf(stderr, "malloc(%zu) failed\n", sz);
			exit(1);
		}
		memset(p, 0xa5, sz < 256 ? sz : 256);
		w->objs[i] = p;
		w->sizes[i] = sz;
		if (page_node(p) == expect_node)
			w->local++;
		else
			w->remote++;
	}
}

static struct worker *workers;
static int nworkers;
static pthread_barrier_t barrier;

enum { ROAM_HOPS = 40, ROAM_BLOCKS = 64 };
static long roam_corrupt;

/* Byte j of a roaming block of `owner` holding `sz` bytes. */
static unsigned char roam_byte(int owner, size_t sz, size_t j)
{
	return (unsigned char)(owner * 31 + sz + j * 7);
}

static void roam_fill(char *p, int owner, size_t sz)
{
	for (size_t j = 0; j < sz; j += 61)
		p[j] = (char)roam_byte(owner, sz, j);
}

static int roam_intact(const char *p, int owner, size_t sz)
{
	for (size_t j = 0; j < sz; j += 61)
		if ((unsigned char)p[j] != roam_byte(owner, sz, j))
			return 0;
	return 1;
}

/* Phase 3: hop to the next node every round (a roaming thread from the second hop
 * on); each round frees and checks the blocks the previous worker filled in its
 * round (handed over through the barrier), replaces half of its own, and checks
 * the rest. */
static void roam(struct worker *w, int idx)
{
	struct worker *prev = &workers[(idx + nworkers - 1) % nworkers];
	int node = w->node;
	for (int i = 0; i < ROAM_BLOCKS; i++) {
		w->sizes[i] = size_for((unsigned)(i * 5 + idx));
		w->objs[i] = malloc(w->sizes[i]);
		roam_fill(w->objs[i], idx, w->sizes[i]);
	}
	for (int hop = 0; hop < ROAM_HOPS; hop++) {
		node = (node + 1) % nnodes;
		pin(first_cpu_of(node, idx / nnodes));
		for (int i = 0; i < ROAM_BLOCKS; i += 2) {
			if (!roam_intact(w->objs[i], idx, w->sizes[i]))
				__atomic_add_fetch(&roam_corrupt, 1, __ATOMIC_RELAXED);
			free(w->objs[i]);
			w->sizes[i] = size_for((unsigned)(i * 5 + idx + hop + 1));
			w->objs[i] = malloc(w->sizes[i]);
			roam_fill(w->objs[i], idx, w->sizes[i]);
		}
		pthread_barrier_wait(&barrier);
		/* The odd blocks of the previous worker: checked, freed here, replaced by
		 * blocks it will find refilled at its next round. */
		int pidx = (int)(prev - workers);
		for (int i = 1; i < ROAM_BLOCKS; i += 2) {
			if (!roam_intact(prev->objs[i], pidx, prev->sizes[i]))
				__atomic_add_fetch(&roam_corrupt, 1, __ATOMIC_RELAXED);
			free(prev->objs[i]);
			prev->objs[i] = malloc(prev->sizes[i]);
			roam_fill(prev->objs[i], pidx, prev->sizes[i]);
		}
		pthread_barrier_wait(&barrier);
		struct timespec pause = {0, 2 * 1000 * 1000};
		nanosleep(&pause, NULL);
	}
	for (int i = 0; i < ROAM_BLOCKS; i++) {
		if (!roam_intact(w->objs[i], idx, w->sizes[i]))
			__atomic_add_fetch(&roam_corrupt, 1, __ATOMIC_RELAXED);
		free(w->objs[i]);
	}
}

static void *run(void *arg)
{
	struct worker *w = arg;
	/* Phase 1: allocate on the home node. */
	pin(w->cpu);
	alloc_and_check(w, w->node);
	w->local1 = w->local;
	w->remote1 = w->remote;
	pthread_barrier_wait(&barrier);
	/* Phase 2: move to the next node; free the objects of the worker that was
	 * there (remote frees), then allocate: recycled objects must be local. */
	int next = (w->node + 1) % nnodes;
	int idx = (int)(w - workers);
	int cpu = first_cpu_of(next, idx / nnodes);
	pin(cpu);
	w->cpu = cpu;
	struct worker *other = &workers[(idx + nworkers - 1) % nworkers];
	pthread_barrier_wait(&barrier);
	for (int i = 0; i < objects; i++)
		free(other->objs[i]);
	pthread_barrier_wait(&barrier);
	w->local = w->remote = 0;
	alloc_and_check(w, next);
	pthread_barrier_wait(&barrier);
	for (int i = 0; i < objects; i++)
		free(w->objs[i]);
	pthread_barrier_wait(&barrier);
	roam(w, idx);
	return NULL;
}

static void read_topology(void)
{
	char path[128], buf[4096];
	ncpus = (int)sysconf(_SC_NPROCESSORS_CONF);
	if (ncpus > MAX_CPUS)
		ncpus = MAX_CPUS;
	for (int c = 0; c < ncpus; c++)
		node_of_cpu[c] = -1;
	for (int n = 0; n < MAX_NODES; n++) {
		snprintf(path, sizeof path, "/sys/devices/system/node/node%d/cpulist", n);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		if (!fgets(buf, sizeof buf, f)) {
			fclose(f);
			continue;
		}
		fclose(f);
		nnodes = n + 1;
		char *s = buf;
		while (*s && *s != '\n') {
			int a = (int)strtol(s, &s, 10), b = a;
			if (*s == '-')
				b = (int)strtol(s + 1, &s, 10);
			for (int c = a; c <= b && c < ncpus; c++)
				node_of_cpu[c] = n;
			if (*s == ',')
				s++;
		}
	}
}

int main(int argc, char **argv)
{
	if (argc > 1)
		objects = atoi(argv[1]);
	read_topology();
	if (nnodes < 2) {
		printf("numa-local: %d node(s): needs at least 2\n", nnodes);
		return 77;
	}
	/* Two workers per node (fewer if a node has one CPU). */
	nworkers = 0;
	workers = calloc((size_t)nnodes * 2, sizeof *workers);
	for (int n = 0; n < nnodes; n++) {
		for (int k = 0; k < 2; k++) {
			int cpu = first_cpu_of(n, k);
			if (cpu < 0)
				continue;
			struct worker *w = &workers[nworkers++];
			w->node = n;
			w->cpu = cpu;
			w->objs = calloc((size_t)objects, sizeof(void *));
			w->sizes = calloc((size_t)objects, sizeof(size_t));
		}
	}
	pthread_barrier_init(&barrier, NULL, (unsigned)nworkers);
	for (int i = 0; i < nworkers; i++)
		pthread_create(&workers[i].t, NULL, run, &workers[i]);
	for (int i = 0; i < nworkers; i++)
		pthread_join(workers[i].t, NULL);

	long local = 0, remote = 0, local1 = 0, remote1 = 0;
	for (int i = 0; i < nworkers; i++) {
		local += workers[i].local;
		remote += workers[i].remote;
		local1 += workers[i].local1;
		remote1 += workers[i].remote1;
	}
	struct vcmalloc_stats st;
	vcmalloc_stats(&st);
	printf("numa-local: %d nodes, %d workers, %d objects each\n", nnodes, nworkers, objects);
	printf("home node:       local %ld remote %ld (%.2f%% local)\n", local1, remote1,
	       100.0 * (double)local1 / (double)(local1 + remote1));
	printf("after migration: local %ld remote %ld (%.2f%% local)\n", local, remote,
	       100.0 * (double)local / (double)(local + remote));
	uint64_t live = st.allocated_bytes;
	for (unsigned n = 0; n < st.nodes; n++)
		printf("node %u: mapped %llu resident %llu cached %llu\n", n,
		       (unsigned long long)st.node[n].mapped_bytes,
		       (unsigned long long)st.node[n].resident_bytes,
		       (unsigned long long)st.node[n].cached_bytes);
	printf("allocated bytes after freeing everything: %llu\n", (unsigned long long)live);
	printf("roaming: %d hops of %d workers, %ld block(s) lost their contents; "
	       "node moves of vCPU regions %llu\n",
	       ROAM_HOPS, nworkers, roam_corrupt, (unsigned long long)st.vcpu_node_moves);
	int ok = 1;
	if (local * 100 < (local + remote) * 99 || local1 * 100 < (local1 + remote1) * 99) {
		printf("FAIL: fewer than 99%% of objects are local\n");
		ok = 0;
	}
	if (roam_corrupt) {
		printf("FAIL: roaming blocks lost their contents\n");
		ok = 0;
	}
	/* The main thread's own bookkeeping allocations stay live: a few KiB. */
	if (live > (1u << 20)) {
		printf("FAIL: %llu bytes still counted as allocated\n", (unsigned long long)live);
		ok = 0;
	}
	return ok ? 0 : 1;
}
