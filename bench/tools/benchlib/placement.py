# SPDX-License-Identifier: MIT
"""Where a benchmark process may run on this machine.

  all        no restriction
  taskset    sched affinity to K CPUs (taskset -c), the CPUs chosen by pick-cpus (hwloc:
             the highest-numbered CPUs, spread over NUMA nodes)
  cpuset-v1  a cgroup v1 cpuset with the same CPUs (the process starts inside it)
  cpuset-v2  a cgroup v2 cpuset, when the unified hierarchy offers the cpuset
             controller (many hosts mount cgroup2 without it: then the placement is
             reported as unavailable, with the reason)

The hierarchies are found in /proc/mounts, never assumed.
"""
import os
import subprocess
from dataclasses import dataclass


@dataclass
class Placement:
    name: str
    cpus: str | None = None      # CPU list, None for "all"
    available: bool = True
    note: str = ""
    cgroup_dir: str | None = None  # for cpusets: the directory of the cgroup created
    procs_file: str = "cgroup.procs"

    def prefix(self):
        """Command prefix (taskset); cpusets move the child in preexec instead."""
        if self.name == "taskset":
            return ["taskset", "-c", self.cpus]
        return []

    def preexec(self):
        if not self.cgroup_dir:
            return None
        path = os.path.join(self.cgroup_dir, self.procs_file)

        def join():
            with open(path, "w") as f:
                f.write(str(os.getpid()))
        return join

    def to_dict(self):
        return {"name": self.name, "cpus": self.cpus, "available": self.available,
                "note": self.note}


def mounts():
    with open("/proc/mounts") as f:
        return [line.split() for line in f if len(line.split()) >= 4]


def cgroup_v1_cpuset_root():
    for _, where, kind, options, *_ in mounts():
        if kind == "cgroup" and "cpuset" in options.split(","):
            return where
    return None


def cgroup_v2_root():
    for _, where, kind, *_ in mounts():
        if kind == "cgroup2":
            return where
    return None


def read(path, default=""):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


def pick_cpus(pick_cpus_prog, k):
    r = subprocess.run([pick_cpus_prog, str(k)], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"pick-cpus {k}: {r.stderr.strip()}")
    return r.stdout.strip()


def _make_cgroup_v1(root, cpus, tag):
    path = os.path.join(root, f"vcmalloc-bench.{os.getpid()}.{tag}")
    os.makedirs(path, exist_ok=True)
    mems = read(os.path.join(root, "cpuset.mems")) or read(os.path.join(root, "cpuset.effective_mems"))
    with open(os.path.join(path, "cpuset.cpus"), "w") as f:
        f.write(cpus)
    with open(os.path.join(path, "cpuset.mems"), "w") as f:
        f.write(mems)
    return path


def _make_cgroup_v2(root, cpus, tag):
    subtree = os.path.join(root, "cgroup.subtree_control")
    if "cpuset" not in read(subtree).split():
        with open(subtree, "w") as f:
            f.write("+cpuset")
    path = os.path.join(root, f"vcmalloc-bench.{os.getpid()}.{tag}")
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "cpuset.cpus"), "w") as f:
        f.write(cpus)
    return path


def host_placements(pick_cpus_prog, k, wanted=("all", "taskset", "cpuset-v1", "cpuset-v2")):
    """The placements asked for, each set up (cgroups created) or marked unavailable."""
    out = []
    cpus = pick_cpus(pick_cpus_prog, k) if pick_cpus_prog else None
    for name in wanted:
        if name == "all":
            out.append(Placement("all"))
        elif name == "taskset":
            out.append(Placement("taskset", cpus) if cpus else
                       Placement("taskset", None, False, "pick-cpus (hwloc) not built"))
        elif name == "cpuset-v1":
            root = cgroup_v1_cpuset_root()
            if not root:
                out.append(Placement(name, cpus, False, "no cgroup v1 cpuset hierarchy mounted"))
                continue
            try:
                d = _make_cgroup_v1(root, cpus, "v1")
                out.append(Placement(name, cpus, True, f"cgroup v1 at {root}", d, "tasks"))
            except OSError as e:
                out.append(Placement(name, cpus, False, f"cannot create a v1 cpuset: {e}"))
        elif name == "cpuset-v2":
            root = cgroup_v2_root()
            if not root:
                out.append(Placement(name, cpus, False, "no cgroup2 hierarchy mounted"))
                continue
            controllers = read(os.path.join(root, "cgroup.controllers"))
            if "cpuset" not in controllers.split():
                out.append(Placement(name, cpus, False,
                                     f"cgroup2 at {root} offers no cpuset controller "
                                     f"(controllers: {controllers or 'none'})"))
                continue
            try:
                d = _make_cgroup_v2(root, cpus, "v2")
                out.append(Placement(name, cpus, True, f"cgroup v2 at {root}", d))
            except OSError as e:
                out.append(Placement(name, cpus, False, f"cannot create a v2 cpuset: {e}"))
    return out


def cleanup(placements):
    for p in placements:
        if p.cgroup_dir:
            try:
                os.rmdir(p.cgroup_dir)
            except OSError:
                pass
