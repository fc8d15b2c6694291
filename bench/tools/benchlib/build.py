# SPDX-License-Identifier: MIT
"""Packages the benchmarks need, and building the benchmark programs with meson."""
import os
import shutil
import subprocess
import sys

# Debian packages: build tools, Google Benchmark, hwloc, the peer allocators, matplotlib
# for the plots, and the guest harness (qemu, busybox, cpio) for the VM runs.
PACKAGES = ["meson", "ninja-build", "pkg-config", "gcc", "g++", "python3",
            "libbenchmark-dev", "libhwloc-dev", "libjemalloc-dev", "libmimalloc-dev",
            "libgoogle-perftools-dev", "util-linux", "python3-matplotlib"]
VM_PACKAGES = ["qemu-system-x86", "busybox-static", "cpio"]
# arm64 guests (run-footprint --arch arm64): qemu for arm64 (qemu-user lists the arm64
# busybox's applets), the cross compiler and the cross C and C++ libraries the guest
# programs and the peers run with.
ARM64_VM_PACKAGES = ["qemu-system-arm", "qemu-user", "cpio", "gcc-aarch64-linux-gnu",
                     "libc6-dev-arm64-cross", "libstdc++6-arm64-cross"]
CROSS_FILES = {"arm64": os.path.join("tests", "cross", "aarch64-linux-gnu.ini")}

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def log(message):
    print(message, file=sys.stderr, flush=True)


def missing_packages(packages):
    missing = []
    for p in packages:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", p],
                           capture_output=True, text=True)
        if r.returncode != 0 or "install ok installed" not in r.stdout:
            missing.append(p)
    return missing


def install_packages(packages):
    """Installs the missing packages with apt-get (as root); returns False if it can't."""
    if not shutil.which("dpkg-query"):
        log("bench: not a Debian system; install by hand: " + " ".join(packages))
        return True
    missing = missing_packages(packages)
    if not missing:
        return True
    if os.geteuid() != 0:
        log("bench: missing packages (run as root or install them): " + " ".join(missing))
        return False
    log("bench: installing " + " ".join(missing))
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    r = subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", *missing],
                       env=env)
    if r.returncode != 0:
        subprocess.run(["apt-get", "update"], env=env)
        r = subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", *missing],
                           env=env)
    return r.returncode == 0


def build(build_dir, targets, arch=None):
    """meson setup (if needed) + ninja for the targets; returns the targets built.
    arch "arm64": a new build directory is set up as a cross build (release, without
    the VM tests), as tests/vm/checks/suite-in-arm64-guest does.

    A target that fails to build (the allocator, say, while it is being written) is
    reported and left out, so the peers can still be measured.
    """
    build_dir = os.path.abspath(build_dir)
    if not os.path.exists(os.path.join(build_dir, "build.ninja")):
        log(f"bench: meson setup {build_dir}")
        setup = ["meson", "setup", build_dir, REPO]
        if arch in CROSS_FILES:
            setup += ["--cross-file", os.path.join(REPO, CROSS_FILES[arch]),
                      "-Dbuildtype=release", "-Dvm_tests=false"]
        r = subprocess.run(setup)
        if r.returncode != 0:
            raise SystemExit("bench: meson setup failed")
    known = _ninja_targets(build_dir)
    built = []
    for t in targets:
        if t not in known:
            # A versioned shared library is built under its full name (libx.so.0.1.0);
            # the unversioned name is a symlink ninja knows only by that full name.
            versioned = sorted(k for k in known
                               if k.startswith(t + ".") and ".p/" not in k)
            if not versioned:
                log(f"bench: no build target {t} in {build_dir}")
                continue
            t = versioned[-1]
        r = subprocess.run(["ninja", "-C", build_dir, t], capture_output=True, text=True)
        if r.returncode == 0:
            built.append(t)
        else:
            tail = "\n".join((r.stdout + r.stderr).strip().splitlines()[-5:])
            log(f"bench: could not build {t}:\n{tail}")
    return built


def _ninja_targets(build_dir):
    r = subprocess.run(["ninja", "-C", build_dir, "-t", "targets", "all"],
                       capture_output=True, text=True)
    return {line.split(":")[0] for line in r.stdout.splitlines() if ":" in line}


def program(build_dir, relative):
    path = os.path.join(os.path.abspath(build_dir), relative)
    return path if os.path.exists(path) else None
