/* SPDX-License-Identifier: MIT */
/*
 * main.c - the footprint benchmark's command line: run one workload against whatever
 * allocator is loaded (LD_PRELOAD), and print one JSON object on stdout with every
 * figure: throughput, peak and final RSS, allocator cache bytes, CPUs allowed/visited.
 *
 *   footprint --workload few|many|roam|storm|server|churn|larson
 *             [--threads N] [--scale F] [--seed N] [--sample-ms N] [--idle-ms N]
 *
 * Peak RSS is VmHWM of /proc/self/status when the workload is over (the kernel's own
 * high-water mark); final RSS is VmRSS after every workload thread has exited and freed
 * its objects.  The live bytes are the sum of the requested sizes of the objects the
 * workload holds, counted by the workload (objects.c): their peak is the least RSS any
 * allocator could have had, so peak RSS minus peak live bytes approximates what the
 * allocator costs above the data (plus the process's own RSS at start, reported as
 * vm_rss_start_bytes).  A sampler thread also polls VmRSS and the allocator's cache
 * bytes.  With --idle-ms N the program then sleeps N ms without any allocator call
 * and reports VmRSS again (vm_rss_idle_bytes): what an allocator gives back, unasked,
 * to a process that went quiet.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "footprint.h"

static const struct {
	const char *name;
	workload_fn run;
} workloads[] = {
    {"few", workload_few},	 {"many", workload_many},     {"roam", workload_roam},
    {"storm", workload_storm},	 {"server", workload_server}, {"churn", workload_churn},
    {"larson", workload_larson},
};

static void usage(FILE *to)
{
	fprintf(to, "usage: footprint --workload NAME [--threads N] [--scale F] [--seed N] "
		    "[--sample-ms N] [--idle-ms N]\nworkloads:");
	for (size_t i = 0; i < sizeof(workloads) / sizeof(workloads[0]); i++)
		fprintf(to, " %s", workloads[i].name);
	fprintf(to, "\n");
}

static void json_number_or_null(const char *key, int64_t value, int last)
{
	if (value < 0)
		printf("  \"%s\": null%s\n", key, last ? "" : ",");
	else
		printf("  \"%s\": %lld%s\n", key, (long long)value, last ? "" : ",");
}

int main(int argc, char **argv)
{
	struct config cfg = {.scale = 1.0, .seed = 1, .sample_ms = 10};
	int idle_ms = 0;
	static const struct option options[] = {
	    {"workload", required_argument, NULL, 'w'},
	    {"threads", required_argument, NULL, 't'},
	    {"scale", required_argument, NULL, 's'},
	    {"seed", required_argument, NULL, 'r'},
	    {"sample-ms", required_argument, NULL, 'm'},
	    {"idle-ms", required_argument, NULL, 'i'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int opt;
	while ((opt = getopt_long(argc, argv, "w:t:s:r:m:i:h", options, NULL)) != -1) {
		switch (opt) {
		case 'w':
			cfg.workload = optarg;
			break;
		case 't':
			cfg.threads = atoi(optarg);
			break;
		case 's':
			cfg.scale = atof(optarg);
			break;
		case 'r':
			cfg.seed = strtoull(optarg, NULL, 0);
			break;
		case 'm':
			cfg.sample_ms = atoi(optarg);
			break;
		case 'i':
			idle_ms = atoi(optarg);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 1;
		}
	}
	workload_fn run = NULL;
	for (size_t i = 0; cfg.workload && i < sizeof(workloads) / sizeof(workloads[0]); i++)
		if (strcmp(cfg.workload, workloads[i].name) == 0)
			run = workloads[i].run;
	if (!run || cfg.threads < 0 || cfg.scale <= 0 || idle_ms < 0) {
		usage(stderr);
		return 1;
	}

	cpu_set_t allowed;
	char allowed_list[4096] = "", possible_list[256] = "", online_list[256] = "";
	int allowed_cpus = -1;
	if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0)
		allowed_cpus = cpu_set_format(&allowed, allowed_list, sizeof(allowed_list));
	int possible_cpus = sys_cpu_list("possible", possible_list, sizeof(possible_list));
	int online_cpus = sys_cpu_list("online", online_list, sizeof(online_list));
	int64_t rss_start = status_bytes("VmRSS");

	struct sampler sampler;
	sampler_start(&sampler, cfg.sample_ms);
	struct outcome out = {0};
	int failed = run(&cfg, &out);
	sampler_stop(&sampler);
	if (failed) {
		fprintf(stderr, "footprint: workload %s failed\n", cfg.workload);
		return 2;
	}
	int64_t hwm = status_bytes("VmHWM");
	int64_t live_final = live_bytes_now();
	int64_t rss_final = status_bytes("VmRSS");
	const char *source = cache_bytes_source();
	int64_t cache_final = source ? cache_bytes_now() : -1;
	int64_t rss_idle = -1;
	if (idle_ms > 0) {
		/* Nothing here calls the allocator: status_bytes reads with read(2). */
		struct timespec ts = {idle_ms / 1000, (long)(idle_ms % 1000) * 1000000L};
		while (nanosleep(&ts, &ts) != 0)
			;
		rss_idle = status_bytes("VmRSS");
	}

	printf("{\n");
	printf("  \"benchmark\": \"footprint\",\n");
	printf("  \"workload\": \"%s\",\n", cfg.workload);
	printf("  \"allocator_detected\": \"%s\",\n", allocator_name());
	printf("  \"threads\": %d,\n", out.threads);
	printf("  \"scale\": %g,\n", cfg.scale);
	printf("  \"seed\": %llu,\n", (unsigned long long)cfg.seed);
	printf("  \"ops\": %llu,\n", (unsigned long long)out.ops);
	printf("  \"seconds\": %.6f,\n", out.seconds);
	printf("  \"ops_per_sec\": %.1f,\n", out.ops_per_sec);
	printf("  \"throughput_basis\": \"%s\",\n", out.throughput_basis);
	json_number_or_null("vm_rss_start_bytes", rss_start, 0);
	json_number_or_null("vm_hwm_bytes", hwm, 0);
	json_number_or_null("vm_rss_final_bytes", rss_final, 0);
	json_number_or_null("vm_rss_idle_bytes", rss_idle, 0);
	printf("  \"idle_ms\": %d,\n", idle_ms);
	json_number_or_null("live_bytes_peak", live_bytes_peak(), 0);
	json_number_or_null("live_bytes_final", live_final, 0);
	json_number_or_null("rss_peak_sampled_bytes", sampler.rss_peak, 0);
	if (source)
		printf("  \"cache_bytes_source\": \"%s\",\n", source);
	else
		printf("  \"cache_bytes_source\": null,\n");
	json_number_or_null("cache_bytes_peak_sampled", source ? sampler.cache_peak : -1, 0);
	json_number_or_null("cache_bytes_final", cache_final, 0);
	/* vcmalloc's split of its resident bytes at the sample of the RSS peak. */
	json_number_or_null("vc_resident_at_rss_peak", sampler.at_rss_peak.resident, 0);
	json_number_or_null("vc_allocated_at_rss_peak", sampler.at_rss_peak.allocated, 0);
	json_number_or_null("vc_vcpu_layer_at_rss_peak", sampler.at_rss_peak.vcpu_layer, 0);
	json_number_or_null("vc_central_free_at_rss_peak", sampler.at_rss_peak.central_free, 0);
	printf("  \"samples\": %llu,\n", (unsigned long long)sampler.samples);
	printf("  \"allowed_cpus\": %d,\n", allowed_cpus);
	printf("  \"allowed_cpu_list\": \"%s\",\n", allowed_list);
	printf("  \"possible_cpus\": %d,\n", possible_cpus);
	printf("  \"possible_cpu_list\": \"%s\",\n", possible_list);
	printf("  \"online_cpus\": %d,\n", online_cpus);
	printf("  \"cpus_visited\": %d\n", cpus_visited());
	printf("}\n");
	fflush(stdout);
	return 0;
}
