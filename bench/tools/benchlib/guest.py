# SPDX-License-Identifier: MIT
"""The footprint runs inside tests/vm guests (qemu TCG, kernel 6.12 with mm_cid).

One guest boot per machine size.  Each run is one guest command: it picks its CPUs
with pick-cpus (hwloc, inside the guest), applies the placement (taskset, or a cgroup
v2 cpuset through the harness's vm-cpuset helper), runs the footprint program with the
allocator preloaded, and prints stdout, a marker line, then the program's stderr (where
vcmalloc writes its statistics).  The harness writes each command's output to
<output-dir>/<n>.out; those files are parsed into records.
"""
import os
import shlex
import subprocess
import sys

from .runs import make_record

STDERR_MARK = "@@BENCH-STDERR"
CPUS_MARK = "@@BENCH-CPUS "


def harness(repo):
    path = os.path.join(repo, "tests", "vm", "run-guest")
    return path if os.access(path, os.X_OK) else None


def guest_command(footprint, pick_cpus, workload, placement, k, allocator, scale, repeat,
                  threads=None, run_timeout=0):
    assign = []
    if allocator.library:
        assign.append(f"LD_PRELOAD=${allocator.guest_var}")
    assign += [f"{key}={shlex.quote(value)}" for key, value in allocator.env.items()]
    # A run past run_timeout seconds is killed (busybox timeout; status 137), so that
    # one run that never ends does not hold up the rest of the guest's runs.
    limit = ["timeout", "-s", "KILL", str(run_timeout)] if run_timeout else []
    run = [*limit, "env", *assign, footprint, "--workload", workload, "--scale", str(scale),
           "--seed", str(repeat + 1)]
    if threads:
        run += ["--threads", str(threads)]
    run = " ".join(run)
    if placement == "all":
        body = run
    else:
        pick = f'cpus=$({pick_cpus} {k}) || exit 125; echo "{CPUS_MARK}$cpus"; '
        if placement == "taskset":
            body = pick + f'taskset -c "$cpus" {run}'
        elif placement == "cpuset-v2":
            body = pick + f'vm-cpuset "$cpus" "$(cat /sys/devices/system/node/online)" -- {run}'
        else:
            raise ValueError(placement)
    return (f"{body} 2>/tmp/bench.err; s=$?; echo {STDERR_MARK}; cat /tmp/bench.err; "
            f"exit $s")


def split_output(text):
    cpus = None
    out, err, in_err = [], [], False
    for line in text.splitlines():
        if line.startswith(CPUS_MARK):
            cpus = line[len(CPUS_MARK):].strip()
        elif line.strip() == STDERR_MARK:
            in_err = True
        else:
            (err if in_err else out).append(line)
    return "\n".join(out), "\n".join(err), cpus


def run_guest(repo, vcmalloc_build, footprint, pick_cpus, machine, vcpus, nodes, mem, plan,
              allocators, repeats, out_dir, timeout, threads_for=None, arch="amd64",
              run_timeout=0):
    """Boots one guest and runs plan = [(workload, placement, k, scale)] x allocators x
    repeats, allocators interleaved.  arch "arm64" boots an arm64 guest: footprint,
    pick_cpus and the vcmalloc build must then be arm64 (or scripts), and the peers are
    Debian's arm64 packages (run-guest --arch arm64 --with-peers).  run_timeout: limit
    of one run in seconds (0: none).

    Returns (records, info) where info describes the guest or the harness failure."""
    run_guest_prog = harness(repo)
    if not run_guest_prog:
        return [], {"status": "unavailable", "note": "tests/vm/run-guest not found"}
    # Files are copied to the same path in the guest, whose /tmp is a fresh tmpfs that
    # hides anything staged below it.
    for path in (footprint, pick_cpus, os.path.abspath(vcmalloc_build)):
        if os.path.abspath(path).startswith("/tmp/"):
            return [], {"status": "unavailable",
                        "note": f"{path} is under /tmp, which the guest mounts afresh"}
    runs, commands = [], ["vm-info"]
    for workload, placement, k, scale in plan:
        for repeat in range(repeats):
            for a in allocators:
                threads = threads_for(workload) if threads_for else None
                runs.append((workload, placement, a, repeat))
                commands.append(guest_command(footprint, pick_cpus, workload, placement, k,
                                              a, scale, repeat, threads, run_timeout))
    os.makedirs(out_dir, exist_ok=True)
    # Booting emulated CPUs on a loaded host can take minutes: allow far more than the
    # harness's default before calling the boot failed.
    boot_timeout = 120 + 15 * vcpus
    cmd = [run_guest_prog, "--arch", arch, "--smp", str(vcpus), "--nodes", str(nodes), "--mem", mem,
           "--timeout", str(timeout + boot_timeout), "--boot-timeout", str(boot_timeout),
           "--with-peers", "--output-dir", out_dir,
           # A slow emulated boot can fail the kernel's IO-APIC timer check and panic.
           "--append", "no_timer_check",
           "--copy", footprint, "--copy", pick_cpus, "--cgroup", "v2"]
    if any(a.is_vcmalloc for a in allocators):
        cmd += ["--with-vcmalloc", os.path.abspath(vcmalloc_build)]
    cmd += ["--", *commands]
    print(f"bench: guest {machine}: {arch}, {vcpus} vCPUs, {nodes} node(s), {len(runs)} runs",
          file=sys.stderr, flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True)
    with open(os.path.join(out_dir, "run-guest.log"), "w") as f:
        f.write(r.stdout + "\n--- stderr ---\n" + r.stderr)
    info = {"status": "ok" if r.returncode in (0, 1) else "failed", "arch": arch, "vcpus": vcpus,
            "nodes": nodes, "mem": mem, "harness_status": r.returncode}
    if r.returncode not in (0, 1):
        failed = [l for l in r.stderr.splitlines() if "FAILED" in l]
        info["note"] = (failed[-1] if failed else r.stderr.strip()[-300:]) + \
            f" (runs finished before: see {out_dir}/run-guest.log)"
    info["vm_info"] = _read(os.path.join(out_dir, "1.out"))
    records = []
    for i, (workload, placement, a, repeat) in enumerate(runs, start=2):
        text = _read(os.path.join(out_dir, f"{i}.out"))
        status = _read(os.path.join(out_dir, f"{i}.status")).strip()
        if not status:
            continue  # the guest never ran it
        stdout, stderr, cpus = split_output(text)
        rec = make_record(machine, workload, placement, a.name, repeat, int(status),
                          stdout, stderr)
        rec["placement_cpus"] = cpus
        if run_timeout and int(status) == 137:
            rec["error"] = f"killed at the run limit of {run_timeout} s ({rec['error']})"
        records.append(rec)
    return records, info


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""
