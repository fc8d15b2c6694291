/* tests/lib/cpus.c - see cpus.h. */
#include "cpus.h"
#include "vctest.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

void cpu_list_allowed(struct cpu_list *out)
{
	memset(out, 0, sizeof *out);
	if (sched_getaffinity(0, sizeof out->mask, &out->mask) != 0)
		VCT_FATAL("sched_getaffinity: %s", strerror(errno));
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &out->mask))
			out->cpu[out->n++] = c;
	if (out->n == 0)
		VCT_FATAL("empty affinity mask");
}

void pin_self(int cpu)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	set_self_mask(&s);
}

void set_self_mask(const cpu_set_t *mask)
{
	if (sched_setaffinity(0, sizeof *mask, mask) != 0)
		VCT_FATAL("sched_setaffinity: %s", strerror(errno));
}

void pin_thread(pthread_t thread, int cpu)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	int e = pthread_setaffinity_np(thread, sizeof s, &s);
	if (e != 0)
		VCT_FATAL("pthread_setaffinity_np(cpu %d): %s", cpu, strerror(e));
}

void getcpu_now(unsigned *cpu, unsigned *node)
{
	if (syscall(SYS_getcpu, cpu, node, NULL) != 0)
		VCT_FATAL("getcpu: %s", strerror(errno));
}

unsigned possible_cpus_from_sysfs(void)
{
	FILE *f = fopen("/sys/devices/system/cpu/possible", "re");
	if (!f)
		VCT_FATAL("cannot open /sys/devices/system/cpu/possible");
	/* Comma-separated items, each "a" or "a-b". */
	unsigned highest = 0, a, b;
	int c;
	for (;;) {
		if (fscanf(f, "%u", &a) != 1)
			break;
		b = a;
		c = fgetc(f);
		if (c == '-') {
			if (fscanf(f, "%u", &b) != 1)
				break;
			c = fgetc(f);
		}
		if (b > highest)
			highest = b;
		if (c != ',')
			break;
	}
	fclose(f);
	return highest + 1;
}
