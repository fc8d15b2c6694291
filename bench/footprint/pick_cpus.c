/* SPDX-License-Identifier: MIT */
/*
 * pick_cpus.c - chooses K CPUs for a taskset or cpuset placement, with hwloc.
 *
 *   pick-cpus K          prints a CPU list such as "7,15,6,14" -> "6-7,14-15"
 *   pick-cpus --topology prints {"pus": N, "nodes": [{"node": 0, "cpus": "0-15"}, ...]}
 *
 * The choice spreads the K CPUs over the NUMA nodes round-robin and, inside each node,
 * takes the highest-numbered CPUs first: so the set always contains the machine's
 * highest-numbered CPU and touches as many nodes as K allows.  Both matter for an
 * allocator: CPU ids far above the CPU count break tables sized by the affinity count,
 * and nodes decide where memory comes from.  Only CPUs this process may use count.
 */
#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Writes the PUs (OS indexes) of set, highest first, into out[]; returns the count. */
static int pus_descending(hwloc_const_bitmap_t set, int *out, int max)
{
	int count = 0, id;
	hwloc_bitmap_foreach_begin(id, set)
	{
		if (count < max)
			out[count++] = id;
	}
	hwloc_bitmap_foreach_end();
	for (int i = 0; i < count / 2; i++) {
		int t = out[i];
		out[i] = out[count - 1 - i];
		out[count - 1 - i] = t;
	}
	return count;
}

static int print_topology(hwloc_topology_t topo)
{
	hwloc_const_bitmap_t allowed = hwloc_topology_get_allowed_cpuset(topo);
	int nodes = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
	char *list;
	hwloc_bitmap_list_asprintf(&list, allowed);
	printf("{\"pus\": %d, \"cpus\": \"%s\", \"nodes\": [", hwloc_bitmap_weight(allowed), list);
	free(list);
	for (int n = 0; n < nodes; n++) {
		hwloc_obj_t node = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, (unsigned)n);
		hwloc_bitmap_t cpus = hwloc_bitmap_alloc();
		hwloc_bitmap_and(cpus, node->cpuset, allowed);
		hwloc_bitmap_list_asprintf(&list, cpus);
		printf("%s{\"node\": %u, \"cpus\": \"%s\"}", n ? ", " : "", node->os_index, list);
		free(list);
		hwloc_bitmap_free(cpus);
	}
	printf("]}\n");
	return 0;
}

static int print_choice(hwloc_topology_t topo, int want)
{
	hwloc_const_bitmap_t allowed = hwloc_topology_get_allowed_cpuset(topo);
	int total = hwloc_bitmap_weight(allowed);
	if (want < 1 || want > total) {
		fprintf(stderr, "pick-cpus: cannot pick %d of %d CPUs\n", want, total);
		return 1;
	}
	int nodes = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
	if (nodes < 1)
		nodes = 1;
	/* per node: its allowed PUs, highest first, and how many were taken */
	int **pus = calloc((size_t)nodes, sizeof(*pus));
	int *count = calloc((size_t)nodes, sizeof(*count));
	int *taken = calloc((size_t)nodes, sizeof(*taken));
	for (int n = 0; n < nodes; n++) {
		hwloc_obj_t node = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, (unsigned)n);
		hwloc_bitmap_t cpus = hwloc_bitmap_alloc();
		hwloc_bitmap_and(cpus, node ? node->cpuset : allowed, allowed);
		pus[n] = calloc((size_t)total, sizeof(int));
		count[n] = pus_descending(cpus, pus[n], total);
		hwloc_bitmap_free(cpus);
	}
	/* Start with the node that holds the highest-numbered CPU. */
	int first = 0;
	for (int n = 1; n < nodes; n++)
		if (count[n] && (!count[first] || pus[n][0] > pus[first][0]))
			first = n;
	hwloc_bitmap_t chosen = hwloc_bitmap_alloc();
	for (int picked = 0, turn = 0; picked < want; turn++) {
		int n = (first + turn) % nodes;
		if (taken[n] < count[n]) {
			hwloc_bitmap_set(chosen, (unsigned)pus[n][taken[n]++]);
			picked++;
		}
	}
	char *list;
	hwloc_bitmap_list_asprintf(&list, chosen);
	printf("%s\n", list);
	free(list);
	hwloc_bitmap_free(chosen);
	for (int n = 0; n < nodes; n++)
		free(pus[n]);
	free(pus);
	free(count);
	free(taken);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: pick-cpus K | pick-cpus --topology\n");
		return 1;
	}
	hwloc_topology_t topo;
	if (hwloc_topology_init(&topo) != 0 || hwloc_topology_load(topo) != 0) {
		fprintf(stderr, "pick-cpus: hwloc could not load the topology\n");
		return 1;
	}
	int status = strcmp(argv[1], "--topology") == 0 ? print_topology(topo)
							: print_choice(topo, atoi(argv[1]));
	hwloc_topology_destroy(topo);
	return status;
}
