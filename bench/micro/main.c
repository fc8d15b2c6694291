/* SPDX-License-Identifier: MIT */
/*
 * main.c - the microbenchmark binary: registers every case, then hands argv to
 * Google Benchmark (so --benchmark_filter, --benchmark_format=json and friends work).
 */
#include "cases.h"

int main(int argc, char **argv)
{
	register_size_pairs();
	register_batch();
	register_realloc_growth();
	register_remote_free();
	register_crowded_threads();
	return gb_main(argc, argv);
}
