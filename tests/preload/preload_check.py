#!/usr/bin/python3
"""preload_check: run a real program with and without LD_PRELOAD=libvcmalloc.so and
compare.

usage: preload_check.py --lib LIBVCMALLOC --workloads DIR [--modes vcpu,cpu,fallback] CASE

For CASE (python3, perl, sqlite3, git, gcc, bash, redis) the workload runs once
without the preload (the baseline) and once preloaded per index mode. Every run
happens in a fresh directory, under `strace -f -e trace=brk` (strace's own process
is not preloaded: the preload is passed with strace -E). The test passes when:

  1. every run exits with status 0;
  2. stdout and stderr of each preloaded run equal the baseline's, after the
     case's normalisation (timings, rates) and with vcmalloc's JSON removed;
  3. libc's heap is unused under the preload: no process of the preloaded run moves
     the program break (a brk(addr) call that sets a new break). glibc's malloc
     grows its main heap with brk, so a moved break means some malloc call reached
     glibc. The baseline must move the break in at least one process: this shows
     the detector sees what it looks for;
  4. vcmalloc was really used: VCMALLOC_STATS=json makes every preloaded process
     print its statistics on stderr at exit; at least one object must be there,
     every object must name the requested index mode, and the largest mapped_bytes
     must be above 0.
"""
import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile

RUN_TIMEOUT = 240  # seconds, per run

BRK_DONE = re.compile(r"^(\d+)\s+brk\((NULL|0x[0-9a-f]+)\)\s*=\s*(0x[0-9a-f]+)")
BRK_UNFINISHED = re.compile(r"^(\d+)\s+brk\((NULL|0x[0-9a-f]+)\s*<unfinished")
BRK_RESUMED = re.compile(r"^(\d+)\s+<\.\.\. brk resumed>.*=\s*(0x[0-9a-f]+)")


def brk_moves(trace_path):
    """Count brk calls that moved the break, and the processes that made them.

    Per process the last known break is remembered (from brk(NULL), which only asks).
    brk(addr) moved the break when it returned addr (success) and addr differs from
    the break known before; a process that never asked (a forked child using its
    parent's cached value) has no known break, and a successful brk(addr) counts."""
    known = {}
    pending = {}
    moves = 0
    movers = set()
    with open(trace_path, errors="replace") as f:
        for line in f:
            m = BRK_DONE.match(line)
            if m:
                pid, arg, ret = m.group(1), m.group(2), int(m.group(3), 16)
            else:
                m = BRK_UNFINISHED.match(line)
                if m:
                    pending[m.group(1)] = m.group(2)
                    continue
                m = BRK_RESUMED.match(line)
                if not m or m.group(1) not in pending:
                    continue
                pid, arg, ret = m.group(1), pending.pop(m.group(1)), int(m.group(2), 16)
            if arg == "NULL":
                known[pid] = ret
                continue
            addr = int(arg, 16)
            if ret == addr and known.get(pid) != addr:
                moves += 1
                movers.add(pid)
            known[pid] = ret
    return moves, len(movers)


def stats_objects(stderr):
    """The vcmalloc JSON objects in stderr, and stderr without them."""
    decoder = json.JSONDecoder()
    objects = []
    rest = []
    pos = 0
    while True:
        start = stderr.find('{"index"', pos)
        if start < 0:
            rest.append(stderr[pos:])
            break
        rest.append(stderr[pos:start])
        obj, end = decoder.raw_decode(stderr, start)
        objects.append(obj)
        pos = end
        if pos < len(stderr) and stderr[pos] == "\n":
            pos += 1
    return objects, "".join(rest)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def unittest_timing(text):
    return re.sub(r"Ran (\d+) tests? in [0-9.]+s", r"Ran \1 tests in <t>s", text)


def redis_output(text):
    """Keep what does not depend on speed: the benchmark's test names, and the rest."""
    kept = []
    for line in re.split(r"[\r\n]+", text):
        m = re.match(r"^([A-Z_]+(?: \([^)]*\))?): .*requests per second", line.strip())
        if m:
            kept.append("benchmark " + m.group(1))
        elif line.strip() and "requests per second" not in line and "rps=" not in line:
            kept.append(line.strip())
    return "\n".join(kept) + "\n"


def identity(text):
    return text


# Lines each case's output must contain (checked in every run, the baseline too), so
# that a workload that silently did nothing cannot pass by matching itself.
EXPECTED = {
    "python3": [r"^json: \d+ bytes", r"^sqlite3: \[", r"^unittest: ran [1-9]\d*, failures 0, errors 0"],
    "perl": [r"^distinct words: \d+", r"^built string of \d+ bytes"],
    "sqlite3": [r"^100000\|", r"^ok$"],
    "git": [r"^[0-9a-f]{40} commit 12$", r"^[0-9a-f]{40}$"],
    "gcc": [r"^tree depth \d+, sum \d+"],
    "bash": [r"^words 20000, distinct \d+", r"^fib 9 = 34$", r"^after unset \d+"],
    "redis": [r"^ping: PONG$", r"^benchmark SET$", r"^benchmark GET$", r"^benchmark LPUSH$",
              r"^benchmark LPOP$", r"^dbsize: [1-9]\d*$", r"^server exit status: 0$"],
}

# name: (command builder(workdir, workloads) -> argv, normaliser)
CASES = {
    "python3": (lambda w, d: ["/usr/bin/python3", os.path.join(d, "python_workload.py")],
                unittest_timing),
    "perl": (lambda w, d: ["/usr/bin/perl", os.path.join(d, "perl_workload.pl")], identity),
    "sqlite3": (lambda w, d: ["/usr/bin/sqlite3", os.path.join(w, "test.db"),
                              ".read " + os.path.join(d, "sqlite_workload.sql")], identity),
    "git": (lambda w, d: ["/bin/bash", os.path.join(d, "git_workload.sh")], identity),
    "gcc": (lambda w, d: ["/bin/bash", os.path.join(d, "gcc_workload.sh")], identity),
    "bash": (lambda w, d: ["/bin/bash", os.path.join(d, "bash_workload.sh")], identity),
    "redis": (lambda w, d: ["/bin/bash", os.path.join(d, "redis_workload.sh"),
                            str(free_port())], redis_output),
}


def run(case, workloads, lib, mode):
    """One run of the case; lib None for the baseline. Returns a result dict."""
    build, normalise = CASES[case]
    workdir = tempfile.mkdtemp(prefix="vcpreload-%s-%s-" % (case, mode or "baseline"))
    trace = os.path.join(workdir, "brk.trace")
    env = {k: v for k, v in os.environ.items()
           if k != "LD_PRELOAD" and not k.startswith("VCMALLOC_") and k != "MALLOC_PERTURB_"}
    env.update({"HOME": workdir, "TMPDIR": workdir, "LC_ALL": "C"})
    cmd = ["strace", "-f", "-qq", "--seccomp-bpf", "-e", "trace=brk", "-o", trace]
    if lib:
        cmd += ["-E", "LD_PRELOAD=" + lib, "-E", "VCMALLOC_STATS=json",
                "-E", "VCMALLOC_INDEX=" + mode]
    cmd += ["--"] + build(workdir, workloads)
    try:
        p = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True,
                           errors="replace", timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        return {"label": mode or "baseline", "timeout": True, "workdir": workdir}
    moves, movers = brk_moves(trace)
    objects, stderr = stats_objects(p.stderr)
    result = {
        "label": mode or "baseline", "timeout": False, "rc": p.returncode,
        "stdout": normalise(p.stdout), "stderr": normalise(stderr), "raw_stderr": p.stderr,
        "brk_moves": moves, "brk_movers": movers, "stats": objects, "workdir": workdir,
    }
    return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--workloads", required=True)
    ap.add_argument("--modes", default="vcpu,cpu,fallback")
    ap.add_argument("case", choices=sorted(CASES))
    a = ap.parse_args()
    a.workloads = os.path.abspath(a.workloads)
    a.lib = os.path.abspath(a.lib)
    if shutil.which("strace") is None:
        print("FAIL: strace is not installed (the brk check needs it)")
        return 1
    if not os.path.exists(a.lib):
        print("FAIL: %s does not exist" % a.lib)
        return 1

    failures = []
    base = run(a.case, a.workloads, None, None)
    runs = [base] + [run(a.case, a.workloads, a.lib, m) for m in a.modes.split(",")]
    for r in runs:
        if r["timeout"]:
            failures.append("%s: timed out after %d s" % (r["label"], RUN_TIMEOUT))
            continue
        if r["rc"] != 0:
            failures.append("%s: exit status %d; stderr:\n%s" % (r["label"], r["rc"],
                                                                 r["raw_stderr"][-3000:]))
        for pattern in EXPECTED[a.case]:
            if not re.search(pattern, r["stdout"], re.M):
                failures.append("%s: no output line matches %r" % (r["label"], pattern))
    if base["timeout"]:
        return report(a.case, runs, failures)
    print("%s baseline: brk moved the break %d times in %d processes" % (
        a.case, base["brk_moves"], base["brk_movers"]))
    if base["brk_moves"] == 0:
        failures.append("baseline: no process moved the break, so the brk check "
                        "cannot tell whether glibc's heap was used")
    for r in runs[1:]:
        if r["timeout"]:
            continue
        label = r["label"]
        mapped = max((o.get("mapped_bytes", 0) for o in r["stats"]), default=0)
        print("%s %s: brk moved the break %d times; %d vcmalloc stats objects, "
              "largest mapped_bytes %d" % (a.case, label, r["brk_moves"], len(r["stats"]),
                                           mapped))
        if r["brk_moves"] != 0:
            failures.append("%s: the break moved %d times in %d processes: glibc's heap "
                            "was used" % (label, r["brk_moves"], r["brk_movers"]))
        if not r["stats"]:
            failures.append("%s: no VCMALLOC_STATS=json output: vcmalloc was not loaded"
                            % label)
        elif mapped <= 0:
            failures.append("%s: mapped_bytes is 0 in every stats object" % label)
        wrong = [o.get("index") for o in r["stats"] if o.get("index") != label]
        if wrong:
            failures.append("%s: stats report index modes %s" % (label, sorted(set(wrong))))
        for stream in ("stdout", "stderr"):
            if r[stream] != base[stream]:
                failures.append("%s: %s differs from the baseline\n%s" % (
                    label, stream, first_difference(base[stream], r[stream])))
    return report(a.case, runs, failures)


def first_difference(a, b):
    la, lb = a.splitlines(), b.splitlines()
    for i in range(max(len(la), len(lb))):
        x = la[i] if i < len(la) else "<end>"
        y = lb[i] if i < len(lb) else "<end>"
        if x != y:
            return "  line %d:\n    baseline:  %r\n    preloaded: %r" % (i + 1, x, y)
    return "  (no line differs: whitespace at the end)"


def report(case, runs, failures):
    if failures:
        for f in failures:
            print("FAIL %s: %s" % (case, f))
        print("work directories kept: %s" % " ".join(r["workdir"] for r in runs))
        return 1
    for r in runs:
        shutil.rmtree(r["workdir"], ignore_errors=True)
    print("%s: ok (%d runs)" % (case, len(runs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
