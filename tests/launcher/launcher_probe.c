/* tests/launcher/launcher_probe.c - what a program started by the vcmalloc launcher
 * sees. Prints its process id, the VCMALLOC_* variables and LD_PRELOAD of its
 * environment, the index mode of the vcmalloc serving its malloc ("none" when
 * malloc is not vcmalloc's) and whether the marker library was preloaded too; then
 * exits with the status given as its argument (0 by default).
 *
 * Looks vcmalloc up with dlsym rather than linking it: the program must find it
 * only through LD_PRELOAD. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "vcmalloc.h"

static const char *const variables[] = {
	"VCMALLOC_INDEX",
	"VCMALLOC_STATS",
	"VCMALLOC_VCPU_CACHE_BYTES",
	"VCMALLOC_RECLAIM_MS",
	"VCMALLOC_DECAY_MS",
	"VCMALLOC_NUMA",
	"VCMALLOC_BACKGROUND",
	"VCMALLOC_HUGE_PAGES",
	"LD_PRELOAD",
};

static const char *index_name(enum vcmalloc_index index)
{
	switch (index) {
	case VCMALLOC_INDEX_VCPU: return "vcpu";
	case VCMALLOC_INDEX_CPU: return "cpu";
	case VCMALLOC_INDEX_FALLBACK: return "fallback";
	}
	return "unknown";
}

int main(int argc, char **argv)
{
	/* An allocation vcmalloc must account for, when it is the malloc. */
	char *volatile block = malloc(1000);
	if (!block) {
		perror("malloc");
		return 1;
	}
	printf("pid=%ld\n", (long)getpid());
	for (size_t i = 0; i < sizeof variables / sizeof variables[0]; i++) {
		const char *v = getenv(variables[i]);
		printf("%s=%s\n", variables[i], v ? v : "(unset)");
	}
	int (*stats)(struct vcmalloc_stats *) =
		(int (*)(struct vcmalloc_stats *))dlsym(RTLD_DEFAULT, "vcmalloc_stats");
	const char *index = "none";
	if (stats) {
		static struct vcmalloc_stats st;
		stats(&st);
		index = st.allocated_bytes >= 1000 ? index_name(st.index) : "not-malloc";
	}
	printf("index=%s\n", index);
	printf("marker=%s\n", dlsym(RTLD_DEFAULT, "launcher_test_marker") ? "yes" : "no");
	free(block);
	fflush(stdout);
	return argc > 1 ? atoi(argv[1]) : 0;
}
