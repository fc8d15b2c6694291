/* SPDX-License-Identifier: MIT */
/*
 * main.c - the speed benchmark's command line: run one workload against whatever
 * malloc is loaded and print one JSON line on stdout.
 *
 *   speed WORKLOAD [--scale F] [--seed N] [--threads N] [--max-seconds S]
 *                  [--perf-ctl-fd N --perf-ack-fd N]
 *   speed --list          every workload, one "name<TAB>description" a line
 *
 * The line holds: workload, seconds (wall time of the timed body), ops (allocations
 * in the body), planned_ops (more than ops when --max-seconds cut the run short),
 * threads, scale, seed, user/system CPU seconds and minor page faults
 * of the body (all threads), the process's peak RSS, checksum, and the allocator
 * found by its exported symbols (a check that LD_PRELOAD took effect).
 */
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "speed.h"

static const struct workload workloads[] = {
    {"wide1", workload_wide1, 0, "1 thread, 4096 live blocks of 8 B-16 KiB, random replacement"},
    {"wide4x", workload_wide4x, 0, "4 threads like wide1, 1 block in 8 freed by the next thread"},
    {"bigblocks", workload_bigblocks, 25, "3 live blocks of 5-25 MiB, every page written"},
    {"bigblocks64", workload_bigblocks, 64, "3 live blocks of 1-64 MiB, every page written"},
    {"tight1-16", workload_tight, 16, "1 thread: 1024 x malloc(16) then 1024 frees, repeated"},
    {"tight1-64", workload_tight, 64, "1 thread: the same with 64 B"},
    {"tight1-256", workload_tight, 256, "1 thread: the same with 256 B"},
    {"tight1-1024", workload_tight, 1024, "1 thread: the same with 1 KiB"},
    {"tightN-16", workload_tight, 16 + TIGHT_ALL_CPUS, "one thread per CPU, 16 B"},
    {"tightN-64", workload_tight, 64 + TIGHT_ALL_CPUS, "one thread per CPU, 64 B"},
    {"tightN-256", workload_tight, 256 + TIGHT_ALL_CPUS, "one thread per CPU, 256 B"},
    {"tightN-1024", workload_tight, 1024 + TIGHT_ALL_CPUS, "one thread per CPU, 1 KiB"},
    {"larson", workload_larson, 0, "4 lanes of threads replacing 16-1024 B blocks; "
				   "each thread exits, its successor inherits the blocks"},
    {"xmalloc", workload_xmalloc, 0, "2 producers allocate batches, 2 consumers free them"},
    {"prodcons", workload_prodcons, 0, "1 producer, 1 consumer: messages through a ring"},
    {"rptest", workload_rptest, 0, "4 threads, batches of 16 B-8 KiB, 1 batch in 8 freed "
				   "by another thread"},
    {"realloc", workload_realloc, 0, "4 strings grown by 8-128 B appends up to 1 KiB-1 MiB"},
    {"shortthreads", workload_shortthreads, 0, "threads created 4 at a time, 300 blocks each"},
    {"falseshare", workload_falseshare, 0, "blocks handed to 2 workers, freed, then the "
					   "workers' own blocks written hard"},
};
#define WORKLOAD_COUNT (sizeof(workloads) / sizeof(workloads[0]))

/* perf's control and acknowledgement descriptors (perf stat --control fd:CTL,ACK). */
static int perf_ctl_fd = -1, perf_ack_fd = -1;

/* Sends "enable" or "disable" to perf and waits for its "ack". */
static void perf_command(const char *command)
{
	if (perf_ctl_fd < 0)
		return;
	size_t len = strlen(command);
	if (write(perf_ctl_fd, command, len) != (ssize_t)len) {
		fprintf(stderr, "speed: writing perf control: %s\n", strerror(errno));
		exit(2);
	}
	char ack[16];
	ssize_t n;
	do
		n = read(perf_ack_fd, ack, sizeof(ack));
	while (n < 0 && errno == EINTR);
	if (n <= 0) {
		fprintf(stderr, "speed: no ack from perf\n");
		exit(2);
	}
}

static struct rusage usage_before, usage_after;

/* The timed region; its name is what `valgrind --toggle-collect=measured` matches. */
__attribute__((noinline)) void measured(struct result *res, void (*body)(void *arg), void *arg)
{
	perf_command("enable\n");
	getrusage(RUSAGE_SELF, &usage_before);
	double start = now_seconds();
	body(arg);
	res->seconds = now_seconds() - start;
	getrusage(RUSAGE_SELF, &usage_after);
	perf_command("disable\n");
}

static double tv_seconds(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec * 1e-6;
}

/* The loaded malloc, by the symbols it exports. */
static const char *allocator_detected(void)
{
	if (dlsym(RTLD_DEFAULT, "vcmalloc_stats"))
		return "vcmalloc";
	if (dlsym(RTLD_DEFAULT, "mallctl"))
		return "jemalloc";
	if (dlsym(RTLD_DEFAULT, "tc_malloc"))
		return "tcmalloc";
	if (dlsym(RTLD_DEFAULT, "mi_malloc"))
		return "mimalloc";
	return "glibc";
}

static void usage(FILE *to)
{
	fprintf(to, "usage: speed WORKLOAD [--scale F] [--seed N] [--threads N] "
		    "[--max-seconds S] [--perf-ctl-fd N --perf-ack-fd N]\n"
		    "       speed --list\nworkloads:");
	for (size_t i = 0; i < WORKLOAD_COUNT; i++)
		fprintf(to, " %s", workloads[i].name);
	fprintf(to, "\n");
}

int main(int argc, char **argv)
{
	struct config cfg = {.scale = 1.0, .seed = 1};
	static const struct option options[] = {
	    {"scale", required_argument, NULL, 's'},
	    {"seed", required_argument, NULL, 'r'},
	    {"threads", required_argument, NULL, 't'},
	    {"max-seconds", required_argument, NULL, 'm'},
	    {"perf-ctl-fd", required_argument, NULL, 'c'},
	    {"perf-ack-fd", required_argument, NULL, 'a'},
	    {"list", no_argument, NULL, 'l'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int opt;
	while ((opt = getopt_long(argc, argv, "s:r:t:h", options, NULL)) != -1) {
		switch (opt) {
		case 's':
			cfg.scale = atof(optarg);
			break;
		case 'r':
			cfg.seed = strtoull(optarg, NULL, 0);
			break;
		case 't':
			cfg.threads = atoi(optarg);
			break;
		case 'm':
			cfg.max_seconds = atof(optarg);
			break;
		case 'c':
			perf_ctl_fd = atoi(optarg);
			break;
		case 'a':
			perf_ack_fd = atoi(optarg);
			break;
		case 'l':
			for (size_t i = 0; i < WORKLOAD_COUNT; i++)
				printf("%s\t%s\n", workloads[i].name, workloads[i].what);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1 || cfg.scale <= 0 || cfg.threads < 0 || cfg.max_seconds < 0 ||
	    (perf_ctl_fd < 0) != (perf_ack_fd < 0)) {
		usage(stderr);
		return 2;
	}
	cfg.workload = argv[optind];
	const struct workload *w = NULL;
	for (size_t i = 0; i < WORKLOAD_COUNT; i++)
		if (strcmp(workloads[i].name, cfg.workload) == 0)
			w = &workloads[i];
	if (!w) {
		fprintf(stderr, "speed: unknown workload %s\n", cfg.workload);
		usage(stderr);
		return 2;
	}

	const char *allocator = allocator_detected(); /* dlsym before any timing */
	struct result res = {.seconds = -1};
	if (w->run(&cfg, &res, w->param) != 0 || res.seconds < 0) {
		fprintf(stderr, "speed: workload %s failed\n", w->name);
		return 1;
	}
	if (res.planned_ops < res.ops)
		res.planned_ops = res.ops;
	struct rusage end;
	getrusage(RUSAGE_SELF, &end);
	printf("{\"workload\": \"%s\", \"seconds\": %.6f, \"ops\": %llu, "
	       "\"planned_ops\": %llu, \"threads\": %d, "
	       "\"scale\": %g, \"seed\": %llu, \"user_seconds\": %.6f, \"sys_seconds\": %.6f, "
	       "\"minor_faults\": %ld, \"max_rss_kib\": %ld, \"checksum\": %llu, "
	       "\"allocator_detected\": \"%s\"}\n",
	       w->name, res.seconds, (unsigned long long)res.ops,
	       (unsigned long long)res.planned_ops, res.threads, cfg.scale,
	       (unsigned long long)cfg.seed,
	       tv_seconds(usage_after.ru_utime) - tv_seconds(usage_before.ru_utime),
	       tv_seconds(usage_after.ru_stime) - tv_seconds(usage_before.ru_stime),
	       usage_after.ru_minflt - usage_before.ru_minflt, end.ru_maxrss,
	       (unsigned long long)res.checksum, allocator);
	return 0;
}
