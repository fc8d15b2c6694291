/* tests/lib/cpus.h - the CPUs a test runs on: the allowed list, pinning, getcpu, the
 * possible count from sysfs. Failures of the system calls end the program
 * (VCT_FATAL, vctest.h). */
#ifndef VCTEST_CPUS_H
#define VCTEST_CPUS_H

#include <pthread.h>
#include <sched.h>

/* The CPUs this process may run on, in increasing order, captured at start. */
struct cpu_list {
	int n;
	int cpu[CPU_SETSIZE];
	cpu_set_t mask;
};
void cpu_list_allowed(struct cpu_list *out);

/* Restrict the calling thread to one CPU, or to a mask; the move happens before the
 * call returns (the kernel migrates a thread that leaves its allowed set). */
void pin_self(int cpu);
void set_self_mask(const cpu_set_t *mask);
void pin_thread(pthread_t thread, int cpu);

/* Current CPU and NUMA node as the getcpu system call reports them. */
void getcpu_now(unsigned *cpu, unsigned *node);

/* The possible CPU count, parsed here independently of the rseq layer. */
unsigned possible_cpus_from_sysfs(void);

#endif
