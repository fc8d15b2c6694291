/* SPDX-License-Identifier: MIT */
/*
 * proc.c - readers for /proc/self/status and /sys CPU lists.  They use open/read on
 * stack buffers and never call malloc, so the sampler thread does not disturb the
 * allocator it measures.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "footprint.h"

/* Reads a whole small file into buf (NUL-terminated); returns its length or -1. */
static ssize_t read_small_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t used = 0;
	while (used + 1 < size) {
		ssize_t n = read(fd, buf + used, size - 1 - used);
		if (n <= 0)
			break;
		used += (size_t)n;
	}
	close(fd);
	buf[used] = '\0';
	return (ssize_t)used;
}

int64_t status_bytes(const char *field)
{
	char buf[4096];
	if (read_small_file("/proc/self/status", buf, sizeof(buf)) < 0)
		return -1;
	size_t len = strlen(field);
	for (char *line = buf; line && *line;
	     line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		if (strncmp(line, field, len) == 0 && line[len] == ':')
			return (int64_t)strtoll(line + len + 1, NULL, 10) * 1024; /* kB */
	}
	return -1;
}

/* Counts the CPUs named by a list such as "0-3,8,10-11". */
static int count_cpu_list(const char *list)
{
	int count = 0;
	const char *p = list;
	while (*p >= '0' && *p <= '9') {
		char *end;
		long first = strtol(p, &end, 10), last = first;
		if (*end == '-')
			last = strtol(end + 1, &end, 10);
		count += (int)(last - first + 1);
		p = *end == ',' ? end + 1 : end;
	}
	return count;
}

int sys_cpu_list(const char *name, char *buf, size_t size)
{
	char path[128];
	snprintf(path, sizeof(path), "/sys/devices/system/cpu/%s", name);
	if (read_small_file(path, buf, size) < 0)
		return -1;
	buf[strcspn(buf, "\n")] = '\0';
	return count_cpu_list(buf);
}

int cpu_set_list(const cpu_set_t *set, int *cpus, int max)
{
	int count = 0;
	for (int cpu = 0; cpu < CPU_SETSIZE && count < max; cpu++)
		if (CPU_ISSET(cpu, set))
			cpus[count++] = cpu;
	return count;
}

int cpu_set_format(const cpu_set_t *set, char *buf, size_t size)
{
	size_t used = 0;
	int count = 0;
	buf[0] = '\0';
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, set))
			continue;
		int last = cpu;
		while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, set))
			last++;
		int n =
		    last == cpu
			? snprintf(buf + used, size - used, "%s%d", used ? "," : "", cpu)
			: snprintf(buf + used, size - used, "%s%d-%d", used ? "," : "", cpu, last);
		if (n < 0 || (size_t)n >= size - used)
			break;
		used += (size_t)n;
		count += last - cpu + 1;
		cpu = last;
	}
	return count;
}
