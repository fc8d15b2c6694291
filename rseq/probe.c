/* rseq/probe.c - vcrseq-probe: prints what the rseq layer sees, then runs N busy
 * threads and shows the cpu_id and mm_cid each one reads.
 * Usage: vcrseq-probe [threads] [seconds] */
#include "rseq.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct sample {
	int cpu, cid, node;
	unsigned cid_max;
};

static atomic_int stop;

static void *spin(void *arg)
{
	struct sample *s = arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		s->cpu = vc_rseq_current_cpu();
		s->cid = vc_rseq_current_mm_cid();
		s->node = vc_rseq_current_node();
		if ((unsigned)s->cid > s->cid_max)
			s->cid_max = (unsigned)s->cid;
	}
	return NULL;
}

static const char *owner_name(enum vc_rseq_owner o)
{
	return o == VC_RSEQ_OWNER_GLIBC ? "glibc" : o == VC_RSEQ_OWNER_SELF ? "self" : "none";
}

int main(int argc, char **argv)
{
	int nthreads = argc > 1 ? atoi(argv[1]) : 4;
	double secs = argc > 2 ? atof(argv[2]) : 0.5;
	if (nthreads < 1 || nthreads > 4096)
		nthreads = 4;
	const struct vc_rseq_info *in = vc_rseq_init();
	printf("rseq owner:          %s\n", owner_name(in->owner));
	printf("kernel feature size: %u (AT_RSEQ_FEATURE_SIZE), align %u\n",
	       in->kernel_feature_size, in->kernel_align);
	printf("glibc __rseq_size:   %u, usable area bytes %u\n", in->glibc_size, in->usable_size);
	printf("fields:              cpu_id %s, node_id %s, mm_cid %s\n",
	       in->has_cpu_id ? "yes" : "no", in->has_node_id ? "yes" : "no",
	       in->has_mm_cid ? "yes" : "no");
	printf("membarrier rseq:     %s\n", in->fence ? "yes" : "no");
	printf("possible cpus:       %u\n", in->possible_cpus);

	pthread_t *t = calloc((size_t)nthreads, sizeof *t);
	struct sample *s = calloc((size_t)nthreads, sizeof *s);
	if (!t || !s)
		return 1;
	for (int i = 0; i < nthreads; i++)
		pthread_create(&t[i], NULL, spin, &s[i]);
	struct timespec ts = {(time_t)secs, (long)((secs - (time_t)secs) * 1e9)};
	nanosleep(&ts, NULL);
	atomic_store(&stop, 1);
	unsigned cid_max = 0;
	printf("%d busy threads for %.2fs (last cpu_id / mm_cid / node_id read):\n", nthreads, secs);
	for (int i = 0; i < nthreads; i++) {
		pthread_join(t[i], NULL);
		if (i < 64)
			printf("  thread %3d: cpu %3d  mm_cid %3d  node %d  (max mm_cid %u)\n", i,
			       s[i].cpu, s[i].cid, s[i].node, s[i].cid_max);
		if (s[i].cid_max > cid_max)
			cid_max = s[i].cid_max;
	}
	printf("highest mm_cid seen: %u (threads %d, possible cpus %u)\n", cid_max, nthreads,
	       in->possible_cpus);
	free(t);
	free(s);
	return 0;
}
