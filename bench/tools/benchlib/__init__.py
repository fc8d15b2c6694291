# SPDX-License-Identifier: MIT
"""Helpers shared by bench/run-footprint, bench/run-micro and bench/run-speed.

allocators  which allocators exist, how to preload them, their exit-time statistics
build       checking packages and building the benchmark programs with meson
placement   CPU placements on this machine: unrestricted, taskset, cgroup cpusets
guest       the same runs inside tests/vm guests of 16..128 vCPUs and 1..4 NUMA nodes
report      aggregation, Markdown tables, the targets and the plots (run-footprint)
overhead    overhead over live data: peak RSS - peak live bytes, ratios to the best peer
tables      a table as Markdown or as aligned plain text
runs        running the footprint program and reading its output
speed       run-speed's workloads (speed program, real programs) and one run of each
speed_report  run-speed's medians, ratios to the fastest peer, geometric means, chart
instructions  run-speed --instructions: perf counters, else callgrind
charts      matplotlib (Agg) line panels and grouped bars, written as PNG and SVG
"""
