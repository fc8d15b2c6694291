#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench-smoke: run the footprint program briefly against glibc and check its JSON.

Not a benchmark: it only asserts that every workload still runs and reports
figures that are well-formed and mutually consistent (e.g. the RSS high-water mark
is at least the final RSS and at least the peak of live bytes, and no live bytes are
left once the workload is over).  Usage: smoke.py PATH/TO/footprint
"""
import json
import os
import subprocess
import sys

REQUIRED_NUMBERS = ["threads", "ops", "seconds", "ops_per_sec", "vm_hwm_bytes",
                    "vm_rss_final_bytes", "live_bytes_peak", "live_bytes_final",
                    "allowed_cpus", "possible_cpus", "online_cpus", "cpus_visited", "samples"]


def check(workload, footprint):
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    args = [footprint, "--workload", workload, "--scale", "0.02"]
    if workload in ("many", "storm"):
        args += ["--threads", "8"]
    proc = subprocess.run(args, env=env, capture_output=True, text=True, timeout=60)
    errors = []
    if proc.returncode != 0:
        return [f"exit status {proc.returncode}: {proc.stderr.strip()}"]
    try:
        doc = json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        return [f"output is not JSON ({e}): {proc.stdout[:200]!r}"]
    for key in REQUIRED_NUMBERS:
        if not isinstance(doc.get(key), (int, float)):
            errors.append(f"{key} missing or not a number: {doc.get(key)!r}")
    if errors:
        return errors
    if doc["workload"] != workload:
        errors.append(f"workload is {doc['workload']!r}")
    if doc["allocator_detected"] != "glibc":
        errors.append(f"allocator_detected is {doc['allocator_detected']!r}, expected glibc")
    if doc["ops"] <= 0 or doc["ops_per_sec"] <= 0 or doc["seconds"] <= 0:
        errors.append("no work measured")
    if doc["vm_hwm_bytes"] < doc["vm_rss_final_bytes"]:
        errors.append("VmHWM below the final VmRSS")
    # Every page of every object is written, so the objects alive at once were all
    # resident at once: their peak cannot exceed the RSS high-water mark.
    if not 0 < doc["live_bytes_peak"] <= doc["vm_hwm_bytes"]:
        errors.append(f"peak live bytes {doc['live_bytes_peak']} not in "
                      f"(0, VmHWM {doc['vm_hwm_bytes']}]")
    if doc["live_bytes_final"] != 0:
        errors.append(f"{doc['live_bytes_final']} live bytes left after the workload")
    if not 1 <= doc["allowed_cpus"] <= doc["online_cpus"] <= doc["possible_cpus"]:
        errors.append("CPU counts inconsistent")
    if not 1 <= doc["cpus_visited"] <= doc["possible_cpus"]:
        errors.append("cpus_visited out of range")
    if doc["cache_bytes_source"] is not None:
        errors.append("glibc reported a cache-bytes source")
    return errors


def main():
    footprint = sys.argv[1]
    failed = False
    for workload in ("few", "many", "roam", "storm", "server", "churn", "larson"):
        errors = check(workload, footprint)
        print(f"{workload}: {'ok' if not errors else '; '.join(errors)}")
        failed |= bool(errors)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
