# SPDX-License-Identifier: MIT
"""Running the footprint program on this machine and turning its output into records.

A record is one process run: {machine, workload, placement, allocator, repeat, status,
footprint: <the program's JSON>, vcmalloc_stats: <VCMALLOC_STATS=json object or None>}.
"""
import json
import os
import subprocess
import sys

from .allocators import parse_vcmalloc_stats

FOOTPRINT_WORKLOADS = ["few", "many", "roam", "storm", "server"]


def make_record(machine, workload, placement, allocator, repeat, returncode, stdout, stderr):
    rec = {"machine": machine, "workload": workload, "placement": placement,
           "allocator": allocator, "repeat": repeat, "status": "ok", "error": None,
           "footprint": None, "vcmalloc_stats": None}
    if returncode != 0:
        rec["status"] = "failed"
        rec["error"] = f"exit status {returncode}: {stderr.strip()[-400:]}"
        return rec
    try:
        rec["footprint"] = json.loads(stdout)
    except json.JSONDecodeError:
        rec["status"] = "failed"
        rec["error"] = f"unreadable output: {stdout[:200]!r} {stderr.strip()[-200:]}"
        return rec
    rec["vcmalloc_stats"] = parse_vcmalloc_stats(stderr)
    if allocator.startswith("vcmalloc") and rec["footprint"].get("allocator_detected") != "vcmalloc":
        rec["status"] = "failed"
        rec["error"] = "vcmalloc was preloaded but the program did not find it"
    elif allocator.startswith("vcmalloc") and rec["vcmalloc_stats"] is None:
        rec["error"] = "no VCMALLOC_STATS=json object on stderr"
    return rec


def run_host(footprint, machine, workload, placement, allocator, repeat, scale, threads=None,
             timeout=600, idle_ms=0):
    cmd = placement.prefix() + [footprint, "--workload", workload, "--scale", str(scale),
                                "--seed", str(repeat + 1)]
    if threads:
        cmd += ["--threads", str(threads)]
    if idle_ms:
        cmd += ["--idle-ms", str(idle_ms)]
    try:
        r = subprocess.run(cmd, env=allocator.environment(), capture_output=True, text=True,
                           timeout=timeout, preexec_fn=placement.preexec())
        rec = make_record(machine, workload, placement.name, allocator.name, repeat,
                          r.returncode, r.stdout, r.stderr)
    except subprocess.TimeoutExpired:
        rec = make_record(machine, workload, placement.name, allocator.name, repeat, -1, "",
                          f"timeout after {timeout} s")
    rec["placement_cpus"] = placement.cpus
    return rec


def progress(rec):
    fp = rec.get("footprint") or {}
    if rec["status"] == "ok":
        detail = (f"{fp.get('ops_per_sec', 0) / 1e6:8.2f} Mops/s  "
                  f"peak {fp.get('vm_hwm_bytes', 0) / 2**20:8.1f} MiB")
    else:
        detail = "FAILED " + (rec.get("error") or "")[:120]
    print(f"  {rec['machine']:>8} {rec['workload']:>7} {rec['placement']:>10} "
          f"{rec['allocator']:>16} #{rec['repeat']}  {detail}", file=sys.stderr, flush=True)


def host_matrix(footprint, machine, workloads, placements, allocators, repeats, scale,
                threads_for=None, idle_ms=0):
    """Every workload x placement x allocator, `repeats` times; allocators interleaved so
    that a burst of load from other processes does not hit one allocator only. Runs of
    the placement "all" end with idle_ms without allocator calls (RSS when idle)."""
    records = []
    for workload in workloads:
        for placement in placements:
            if not placement.available:
                continue
            for repeat in range(repeats):
                for allocator in allocators:
                    threads = threads_for(workload) if threads_for else None
                    rec = run_host(footprint, machine, workload, placement, allocator,
                                   repeat, scale, threads,
                                   idle_ms=idle_ms if placement.name == "all" else 0)
                    progress(rec)
                    records.append(rec)
    return records


def machine_info():
    info = {"kernel": os.uname().release}
    try:
        with open("/sys/devices/system/cpu/online") as f:
            info["cpus_online"] = f.read().strip()
        info["nodes"] = len([d for d in os.listdir("/sys/devices/system/node")
                             if d.startswith("node") and d[4:].isdigit()])
    except OSError:
        pass
    info["cpus"] = os.cpu_count()
    return info
