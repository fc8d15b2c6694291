#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench-smoke: run every workload of the speed program once, tiny, against glibc.

Not a benchmark: it times nothing and compares nothing.  It only checks that each
workload runs to completion and prints one well-formed JSON line naming itself, with
numeric figures, some allocations done and glibc found as the allocator.
Usage: speed_smoke.py PATH/TO/speed
"""
import json
import os
import subprocess
import sys

NUMBERS = ["seconds", "ops", "threads", "scale", "seed", "user_seconds", "sys_seconds",
           "minor_faults", "max_rss_kib", "checksum"]


def check(speed, workload):
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    proc = subprocess.run([speed, workload, "--scale", "0.01"], env=env,
                          capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        return [f"exit status {proc.returncode}: {proc.stderr.strip()[-300:]}"]
    lines = proc.stdout.strip().splitlines()
    if len(lines) != 1:
        return [f"expected one line of output, got {len(lines)}"]
    try:
        doc = json.loads(lines[0])
    except json.JSONDecodeError as e:
        return [f"output is not JSON ({e}): {lines[0][:200]!r}"]
    errors = [f"{key} missing or not a number: {doc.get(key)!r}" for key in NUMBERS
              if not isinstance(doc.get(key), (int, float)) or isinstance(doc.get(key), bool)]
    if doc.get("workload") != workload:
        errors.append(f"workload is {doc.get('workload')!r}")
    if doc.get("allocator_detected") != "glibc":
        errors.append(f"allocator_detected is {doc.get('allocator_detected')!r}")
    if not errors and (doc["ops"] <= 0 or doc["threads"] < 1):
        errors.append("no allocations or no threads reported")
    return errors


def main():
    speed = sys.argv[1]
    listing = subprocess.run([speed, "--list"], capture_output=True, text=True, check=True)
    workloads = [line.split("\t")[0] for line in listing.stdout.splitlines()]
    failed = not workloads
    for workload in workloads:
        errors = check(speed, workload)
        print(f"{workload}: {'ok' if not errors else '; '.join(errors)}")
        failed |= bool(errors)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
