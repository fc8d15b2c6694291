/* tests/rseq/discovery_test.c - discovery and the current ids, in one of three worlds.
 *
 * Usage: discovery-test --world=glibc|self|none
 *   glibc  normal start: glibc registered every thread; we must use its area.
 *   self   run with GLIBC_TUNABLES=glibc.pthread.rseq=0: glibc did not register; the
 *          layer registers an area of its own, lazily, in every thread that asks,
 *          including threads created long after vc_rseq_init().
 *   none   run under no-rseq-exec (seccomp makes rseq fail with ENOSYS): nobody is
 *          registered; every id must come from the fallbacks.
 *
 * Each world first proves it is the world it claims to be with evidence that does not
 * go through the layer (__rseq_size, a raw registration attempt), then checks the
 * layer's answers, then pins the main thread and later threads to each allowed CPU in
 * turn and compares every id the layer reports with what getcpu says.
 */
#include "cpus.h"
#include "vctest.h"
#include "rseq.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef AT_RSEQ_FEATURE_SIZE
#define AT_RSEQ_FEATURE_SIZE 27
#endif
#ifndef AT_RSEQ_ALIGN
#define AT_RSEQ_ALIGN 28
#endif

extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));

enum world { WORLD_GLIBC, WORLD_SELF, WORLD_NONE };
static enum world world;
static struct cpu_list allowed;
static const struct vc_rseq_info *info;

/* A per-index counter, one cache line each, indexed by cpu_id or mm_cid. */
struct padded_counter {
	intptr_t v;
	char pad[64 - sizeof(intptr_t)];
};
static struct padded_counter *by_cpu, *by_cid;
enum { ADDS_PER_THREAD = 1000 };

static const char *owner_name(enum vc_rseq_owner o)
{
	return o == VC_RSEQ_OWNER_GLIBC ? "glibc" : o == VC_RSEQ_OWNER_SELF ? "self" : "none";
}

/* Ask the kernel to register area a for this thread. The kernel answers EBUSY only
 * when this exact area (same length, same signature) is already registered for the
 * calling thread, EINVAL for another area or length, ENOSYS when rseq is denied. A
 * success means the thread was not registered: the registration is undone. Lengths
 * tried: the original 32 bytes, then the feature size and glibc's size. */
static int try_registering_again(struct vc_rseq_abi *a)
{
	unsigned lens[3] = {VC_RSEQ_ORIG_SIZE, info->kernel_feature_size, info->glibc_size};
	int last = 0;
	for (int i = 0; i < 3; i++) {
		if (lens[i] < VC_RSEQ_ORIG_SIZE || (i > 0 && lens[i] == VC_RSEQ_ORIG_SIZE))
			continue;
		long r = syscall(SYS_rseq, a, lens[i], 0, VC_RSEQ_SIG);
		if (r == 0) {
			syscall(SYS_rseq, a, lens[i], VC_RSEQ_FLAG_UNREGISTER, VC_RSEQ_SIG);
			return 0;
		}
		last = errno;
		if (last == EBUSY || last == ENOSYS)
			return last;
	}
	return last;
}

/* Pin the calling thread to each allowed CPU in turn and compare the layer's ids with
 * getcpu. single_threaded: the process has no other thread, so mm_cid must be 0. */
static void check_ids_on_every_cpu(const char *who, bool single_threaded)
{
	for (int i = 0; i < allowed.n; i++) {
		int want = allowed.cpu[i];
		pin_self(want);
		unsigned gcpu, gnode;
		getcpu_now(&gcpu, &gnode);
		int scpu = sched_getcpu();
		int cpu = vc_rseq_current_cpu();
		int node = vc_rseq_current_node();
		int cid = vc_rseq_current_mm_cid();
		VCT_EXPECT((int)gcpu == want && scpu == want,
			   "%s: getcpu %u / sched_getcpu %d, pinned to %d", who, gcpu, scpu, want);
		VCT_EXPECT(cpu == want, "%s: vc_rseq_current_cpu %d, pinned to %d", who, cpu, want);
		VCT_EXPECT(node == (int)gnode, "%s: vc_rseq_current_node %d, getcpu node %u", who,
			   node, gnode);
		VCT_EXPECT(cid >= 0 && (unsigned)cid < info->possible_cpus,
			   "%s: mm_cid %d not below possible cpus %u", who, cid,
			   info->possible_cpus);
		if (!info->has_mm_cid)
			VCT_EXPECT(cid == want, "%s: mm_cid fallback %d, expected the cpu %d", who,
				   cid, want);
		else if (single_threaded)
			VCT_EXPECT(cid == 0, "%s: single-threaded process reads mm_cid %d", who,
				   cid);
		struct vc_rseq_abi *a = vc_rseq_area();
		if (info->has_cpu_id && a) {
			uint32_t raw = vc_rseq_read_index(a, VC_RSEQ_INDEX_CPU_ID);
			VCT_EXPECT(raw == (uint32_t)want, "%s: area cpu_id %u, pinned to %d", who,
				   raw, want);
		}
	}
	set_self_mask(&allowed.mask);
}

/* Evidence about this thread's registration that bypasses the layer. */
static void check_thread_registration(const char *who)
{
	struct vc_rseq_abi *a = vc_rseq_area();
	char *tp = vc_rseq_thread_pointer();
	switch (world) {
	case WORLD_GLIBC:
		VCT_EXPECT(a == (struct vc_rseq_abi *)(tp + __rseq_offset),
			   "%s: area %p is not glibc's %p", who, (void *)a,
			   (void *)(tp + __rseq_offset));
		VCT_EXPECT(try_registering_again(a) == EBUSY,
			   "%s: the kernel does not have glibc's area registered", who);
		break;
	case WORLD_SELF:
		VCT_EXPECT(a != NULL, "%s: no area in a world where we register our own", who);
		if (&__rseq_offset)
			VCT_EXPECT(a != (struct vc_rseq_abi *)(tp + __rseq_offset),
				   "%s: owner self but the area is glibc's (unregistered) one",
				   who);
		/* vc_rseq_area() above registered this thread; the kernel must know. */
		VCT_EXPECT(a && try_registering_again(a) == EBUSY,
			   "%s: after vc_rseq_area() the kernel has not this area registered", who);
		VCT_EXPECT(vc_rseq_area() == a, "%s: area changed between calls", who);
		break;
	case WORLD_NONE:
		VCT_EXPECT(a == NULL, "%s: area %p in a world without rseq", who, (void *)a);
		{
			static __thread struct vc_rseq_abi probe __attribute__((aligned(32)));
			VCT_EXPECT(try_registering_again(&probe) == ENOSYS,
				   "%s: rseq is not denied here", who);
		}
		break;
	}
}

/* Increment both per-index counters inside critical sections; counts aborts. */
static long add_both(int times)
{
	long aborts = 0;
	struct vc_rseq_abi *rs = vc_rseq_area();
	if (!rs)
		VCT_FATAL("critical section without an area");
	for (int k = 0; k < times; k++) {
		for (;;) {
			uint32_t ix = vc_rseq_read_index(rs, VC_RSEQ_INDEX_CPU_ID);
			if (ix >= info->possible_cpus)
				VCT_FATAL("cpu_id %u >= possible %u", ix, info->possible_cpus);
			if (vc_rseq_addv(VC_RSEQ_INDEX_CPU_ID, rs, ix, &by_cpu[ix].v, 1) == 0)
				break;
			aborts++;
		}
		if (!info->has_mm_cid)
			continue;
		for (;;) {
			uint32_t ix = vc_rseq_read_index(rs, VC_RSEQ_INDEX_MM_CID);
			if (ix >= info->possible_cpus)
				VCT_FATAL("mm_cid %u >= possible %u", ix, info->possible_cpus);
			if (vc_rseq_addv(VC_RSEQ_INDEX_MM_CID, rs, ix, &by_cid[ix].v, 1) == 0)
				break;
			aborts++;
		}
	}
	return aborts;
}

struct thread_arg {
	int id;
	bool spawn_child; /* create one more thread from inside this one */
	long aborts;
};

static void *thread_main(void *p)
{
	struct thread_arg *t = p;
	char who[48];
	snprintf(who, sizeof who, "thread %d", t->id);
	check_thread_registration(who);
	check_ids_on_every_cpu(who, false);
	if (info->has_cpu_id)
		t->aborts = add_both(ADDS_PER_THREAD);
	if (t->spawn_child) {
		struct thread_arg child = {.id = t->id + 1000};
		pthread_t c;
		if (pthread_create(&c, NULL, thread_main, &child) != 0)
			VCT_FATAL("pthread_create");
		pthread_join(c, NULL);
		t->aborts += child.aborts;
	}
	return NULL;
}

/* Runs a batch of threads; returns how many threads ran (children included). */
static int run_batch(int first_id, int n, long *aborts)
{
	pthread_t th[16];
	struct thread_arg args[16];
	int ran = 0;
	for (int i = 0; i < n; i++) {
		args[i] = (struct thread_arg){.id = first_id + i, .spawn_child = (i % 4 == 0)};
		if (pthread_create(&th[i], NULL, thread_main, &args[i]) != 0)
			VCT_FATAL("pthread_create");
	}
	for (int i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		*aborts += args[i].aborts;
		ran += 1 + args[i].spawn_child;
	}
	return ran;
}

static void check_world_evidence(void)
{
	unsigned gsize = &__rseq_size ? __rseq_size : 0;
	errno = 0;
	long r = syscall(SYS_rseq, NULL, 0, 0, 0);
	int e = errno;
	switch (world) {
	case WORLD_GLIBC:
		VCT_EXPECT(gsize > 0, "world glibc, but __rseq_size is 0 (glibc did not register)");
		VCT_EXPECT(r == -1 && e != ENOSYS, "world glibc, but rseq is denied");
		break;
	case WORLD_SELF:
		VCT_EXPECT(gsize == 0, "world self, but __rseq_size is %u (tunable not applied?)",
			   gsize);
		VCT_EXPECT(r == -1 && e != ENOSYS, "world self, but rseq is denied");
		break;
	case WORLD_NONE:
		VCT_EXPECT(gsize == 0, "world none, but __rseq_size is %u", gsize);
		VCT_EXPECT(r == -1 && e == ENOSYS, "world none, but rseq is not denied (errno %d)",
			   e);
		break;
	}
}

static void check_info(void)
{
	unsigned kfs = (unsigned)getauxval(AT_RSEQ_FEATURE_SIZE);
	unsigned kalign = (unsigned)getauxval(AT_RSEQ_ALIGN);
	unsigned gsize = &__rseq_size ? __rseq_size : 0;
	unsigned eff = kfs ? kfs : 20; /* pre-6.3 kernels fill the original 20 bytes */
	long conf = sysconf(_SC_NPROCESSORS_CONF);

	VCT_EXPECT(info->initialised, "info not initialised");
	VCT_EXPECT(vc_rseq_init() == info, "second vc_rseq_init returned another pointer");
	VCT_EXPECT(info->kernel_feature_size == kfs, "feature size %u, getauxval %u",
		   info->kernel_feature_size, kfs);
	VCT_EXPECT(info->kernel_align == kalign, "align %u, getauxval %u", info->kernel_align,
		   kalign);
	VCT_EXPECT(info->glibc_size == gsize, "glibc_size %u, __rseq_size %u", info->glibc_size,
		   gsize);
	VCT_EXPECT(info->possible_cpus == possible_cpus_from_sysfs(),
		   "possible cpus %u, sysfs says %u", info->possible_cpus,
		   possible_cpus_from_sysfs());
	VCT_EXPECT(info->possible_cpus == vc_rseq_possible_cpus(), "possible cpus disagree");
	VCT_EXPECT(conf <= 0 || info->possible_cpus >= (unsigned)conf,
		   "possible cpus %u below configured %ld", info->possible_cpus, conf);
	VCT_EXPECT((unsigned)allowed.cpu[allowed.n - 1] < info->possible_cpus,
		   "allowed cpu %d not below possible %u", allowed.cpu[allowed.n - 1],
		   info->possible_cpus);

	switch (world) {
	case WORLD_GLIBC: {
		VCT_EXPECT(info->owner == VC_RSEQ_OWNER_GLIBC, "owner %s, expected glibc",
			   owner_name(info->owner));
		VCT_EXPECT(&__rseq_offset && info->area_offset == __rseq_offset,
			   "area offset %td is not __rseq_offset", info->area_offset);
		/* glibc 2.35-2.39 report 20 or 32 whatever the kernel fills; then the
		 * kernel's feature size (at most the 32 registered bytes) counts. */
		unsigned want = (gsize == 20 || gsize == 32) ? (eff < 32 ? eff : 32) : gsize;
		VCT_EXPECT(info->usable_size == want, "usable size %u, expected %u",
			   info->usable_size, want);
		break;
	}
	case WORLD_SELF:
		VCT_EXPECT(info->owner == VC_RSEQ_OWNER_SELF, "owner %s, expected self",
			   owner_name(info->owner));
		VCT_EXPECT(info->usable_size == eff, "usable size %u, expected the feature size %u",
			   info->usable_size, eff);
		break;
	case WORLD_NONE:
		VCT_EXPECT(info->owner == VC_RSEQ_OWNER_NONE, "owner %s, expected none",
			   owner_name(info->owner));
		VCT_EXPECT(info->usable_size == 0, "usable size %u without rseq",
			   info->usable_size);
		break;
	}
	bool rseq = world != WORLD_NONE;
	VCT_EXPECT(info->has_cpu_id == rseq, "has_cpu_id %d", info->has_cpu_id);
	VCT_EXPECT(info->has_node_id == (rseq && eff >= 24), "has_node_id %d (feature size %u)",
		   info->has_node_id, kfs);
	VCT_EXPECT(info->has_mm_cid == (rseq && eff >= 28), "has_mm_cid %d (feature size %u)",
		   info->has_mm_cid, kfs);
	if (!rseq) {
		VCT_EXPECT(!info->fence, "fence available without rseq");
		VCT_EXPECT(vc_rseq_fence() == -1, "vc_rseq_fence succeeded without rseq");
	}
	printf("world %s: owner %s, feature size %u, align %u, __rseq_size %u, usable %u, "
	       "cpu_id %d node_id %d mm_cid %d, fence %d, possible cpus %u, allowed cpus %d\n",
	       world == WORLD_GLIBC  ? "glibc"
	       : world == WORLD_SELF ? "self"
				     : "none",
	       owner_name(info->owner), kfs, kalign, gsize, info->usable_size, info->has_cpu_id,
	       info->has_node_id, info->has_mm_cid, info->fence, info->possible_cpus, allowed.n);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	vct_watchdog(40);
	const char *w = vct_arg_str(argc, argv, "world", NULL);
	if (!w || (strcmp(w, "glibc") && strcmp(w, "self") && strcmp(w, "none")))
		VCT_FATAL("usage: discovery-test --world=glibc|self|none");
	world = !strcmp(w, "glibc") ? WORLD_GLIBC : !strcmp(w, "self") ? WORLD_SELF : WORLD_NONE;
	cpu_list_allowed(&allowed);

	check_world_evidence();
	info = vc_rseq_init();
	check_info();

	unsigned p = info->possible_cpus;
	by_cpu = calloc(p, sizeof *by_cpu);
	by_cid = calloc(p, sizeof *by_cid);
	if (!by_cpu || !by_cid)
		VCT_FATAL("out of memory");

	/* The main thread, while the process is still single-threaded. */
	check_thread_registration("main");
	check_ids_on_every_cpu("main", true);
	long aborts = 0;
	int adders = 0;
	if (info->has_cpu_id) {
		aborts += add_both(ADDS_PER_THREAD);
		adders++;
	}

	/* Threads created later, in two waves: the second reuses the first wave's
	 * stacks (and TLS), and each wave has threads created by threads. */
	int threads = run_batch(1, 8, &aborts);
	vct_sleep_us(20000);
	threads += run_batch(101, 8, &aborts);
	if (info->has_cpu_id)
		adders += threads;

	if (info->has_cpu_id) {
		intptr_t sum_cpu = 0, sum_cid = 0;
		for (unsigned i = 0; i < p; i++) {
			sum_cpu += by_cpu[i].v;
			sum_cid += by_cid[i].v;
		}
		intptr_t want = (intptr_t)adders * ADDS_PER_THREAD;
		VCT_EXPECT(sum_cpu == want, "cpu_id counters sum %ld, expected %ld", (long)sum_cpu,
			   (long)want);
		if (info->has_mm_cid)
			VCT_EXPECT(sum_cid == want, "mm_cid counters sum %ld, expected %ld",
				   (long)sum_cid, (long)want);
		printf("critical sections: %d threads x %d adds per index: cpu_id sum %ld, "
		       "mm_cid sum %ld, aborts %ld\n",
		       adders, ADDS_PER_THREAD, (long)sum_cpu, (long)sum_cid, aborts);
	}
	printf("ids checked on %d cpu(s) in the main thread and %d later threads\n", allowed.n,
	       threads);
	free(by_cpu);
	free(by_cid);
	return vct_exit();
}
