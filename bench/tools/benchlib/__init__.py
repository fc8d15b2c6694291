# SPDX-License-Identifier: MIT
"""Helpers shared by bench/run-footprint, bench/run-micro and bench/run-speed.

allocators  which allocators exist, how to preload them, their exit-time statistics
build       checking packages and building the benchmark programs with meson
placement   CPU placements on this machine: unrestricted, taskset, cgroup cpusets
guest       the same runs inside tests/vm guests of 16..128 vCPUs
report      aggregation, Markdown tables and the targets (run-footprint)
runs        running the footprint program and reading its output
speed       run-speed's workloads (speed program, real programs) and one run of each
speed_report  run-speed's medians, ratios to the fastest peer, geometric means
instructions  run-speed --instructions: perf counters, else callgrind
svg         small SVG line and bar charts, written without dependencies
"""
