# SPDX-License-Identifier: MIT
"""Instructions per allocation of the speed program's timed part (run-speed
--instructions).

With hardware counters (`perf stat -e instructions,cycles` counts), perf counts the
timed part alone: it starts with the counters disabled (-D -1) and the program
enables them around its body through perf's control descriptors.  Without them,
valgrind's callgrind counts the instructions executed inside the function
`measured` (--toggle-collect), serialising threads on one simulated CPU.  Valgrind
does not implement rseq, so vcmalloc runs there without its rseq index (its
statistics name the index it used; the report shows it).
"""
import json
import os
import re
import shutil
import subprocess
import tempfile

from .allocators import parse_vcmalloc_stats


def perf_counts_instructions():
    """True when perf counts instructions and cycles on this machine."""
    if not shutil.which("perf"):
        return False
    r = subprocess.run(["perf", "stat", "-x,", "-e", "instructions,cycles", "true"],
                       capture_output=True, text=True)
    counted = [line for line in r.stderr.splitlines()
               if re.match(r"^\d+,", line) and ("instructions" in line or "cycles" in line)]
    return r.returncode == 0 and len(counted) == 2


def method():
    """'perf', 'callgrind' or None."""
    if perf_counts_instructions():
        return "perf"
    return "callgrind" if shutil.which("valgrind") else None


def _result(workload, allocator, ops, counts, stderr, error=None):
    rec = {"workload": workload, "allocator": allocator.name, "ops": ops, "error": error,
           "instructions": counts.get("instructions"), "cycles": counts.get("cycles"),
           "instructions_per_op": None, "vcmalloc_index": None}
    if rec["instructions"] is not None and ops:
        rec["instructions_per_op"] = rec["instructions"] / ops
    if allocator.is_vcmalloc:
        stats = parse_vcmalloc_stats(stderr) or {}
        rec["vcmalloc_index"] = stats.get("index")
    return rec


def _ops(stdout):
    try:
        return json.loads(stdout.strip().splitlines()[-1])["ops"]
    except (ValueError, IndexError, KeyError):
        return None


def run_callgrind(speed_exe, workload, allocator, scale, timeout=600):
    with tempfile.TemporaryDirectory() as tmp:
        out_file = os.path.join(tmp, "callgrind.out")
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_file}",
               "--toggle-collect=measured", "--collect-atstart=no",
               speed_exe, workload, "--scale", str(scale)]
        try:
            r = subprocess.run(cmd, env=allocator.environment(), capture_output=True,
                               text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return _result(workload, allocator, None, {}, "", f"timeout after {timeout} s")
        if r.returncode != 0 or not os.path.exists(out_file):
            return _result(workload, allocator, None, {}, r.stderr,
                           f"exit status {r.returncode}: {r.stderr.strip()[-300:]}")
        total = None
        with open(out_file) as f:
            for line in f:
                if line.startswith(("summary:", "totals:")):
                    total = int(line.split()[1])
        return _result(workload, allocator, _ops(r.stdout), {"instructions": total}, r.stderr)


def run_perf(speed_exe, workload, allocator, scale, timeout=600, events="instructions,cycles"):
    ctl_read, ctl_write = os.pipe()
    ack_read, ack_write = os.pipe()
    with tempfile.TemporaryDirectory() as tmp:
        out_file = os.path.join(tmp, "perf.csv")
        cmd = ["perf", "stat", "-x,", "-o", out_file, "-e", events, "-D", "-1",
               "--control", f"fd:{ctl_read},{ack_write}", "--",
               speed_exe, workload, "--scale", str(scale),
               "--perf-ctl-fd", str(ctl_write), "--perf-ack-fd", str(ack_read)]
        try:
            r = subprocess.run(cmd, env=allocator.environment(), capture_output=True,
                               text=True, timeout=timeout,
                               pass_fds=(ctl_read, ctl_write, ack_read, ack_write))
        except subprocess.TimeoutExpired:
            return _result(workload, allocator, None, {}, "", f"timeout after {timeout} s")
        finally:
            for fd in (ctl_read, ctl_write, ack_read, ack_write):
                os.close(fd)
        if r.returncode != 0:
            return _result(workload, allocator, None, {}, r.stderr,
                           f"exit status {r.returncode}: {r.stderr.strip()[-300:]}")
        counts = {}
        with open(out_file) as f:
            for line in f:
                fields = line.strip().split(",")
                if len(fields) > 2 and re.match(r"^\d+(\.\d+)?$", fields[0]):
                    counts[fields[2].split(":")[0]] = float(fields[0])
        return _result(workload, allocator, _ops(r.stdout), counts, r.stderr)


def run(kind, speed_exe, workload, allocator, scale):
    if kind == "perf":
        return run_perf(speed_exe, workload, allocator, scale)
    return run_callgrind(speed_exe, workload, allocator, scale)
