# SPDX-License-Identifier: MIT
"""The allocators compared, and how each one is loaded (LD_PRELOAD + environment).

Every benchmark binary is linked against nothing but glibc's malloc; a peer replaces
it through LD_PRELOAD.  vcmalloc runs twice, once per cache index mode.
"""
import glob
import json
import os
from dataclasses import dataclass, field

LIBDIR = "/usr/lib/x86_64-linux-gnu"
# arm64 guests: Debian's arm64 peer packages, unpacked by tests/vm/fetch-peers under
# its root (this folder inside it), and staged at the same folder in the guest.
ARM64_LIBDIR = "/usr/lib/aarch64-linux-gnu"


@dataclass
class Allocator:
    name: str                 # key used in results and tables
    library: str | None       # shared object to preload (None: glibc's own malloc)
    env: dict = field(default_factory=dict)
    guest_var: str | None = None  # tests/vm variable holding the library path in a guest
    family: str = ""          # "vcmalloc" or the peer's name

    @property
    def is_vcmalloc(self):
        return self.family == "vcmalloc"

    def available(self):
        return self.library is None or os.path.exists(self.library)

    def environment(self, base=None):
        env = dict(os.environ if base is None else base)
        env.pop("LD_PRELOAD", None)
        env.pop("MALLOC_CONF", None)
        if self.library:
            env["LD_PRELOAD"] = self.library
        env.update(self.env)
        return env


def _mimalloc_library(libdir):
    found = sorted(glob.glob(os.path.join(libdir, "libmimalloc.so.[0-9]")))
    return found[-1] if found else os.path.join(libdir, "libmimalloc.so.2")


def vcmalloc_library(build_dir):
    return os.path.join(os.path.abspath(build_dir), "allocator", "libvcmalloc.so")


def all_allocators(build_dir, libdir=LIBDIR):
    """Every allocator the footprint comparison knows, in table order.  libdir: where
    the peers' libraries are (another architecture's for its guests: there a peer
    counts as available if its library is in libdir; the guest names it by variable)."""
    vc = vcmalloc_library(build_dir)
    stats = {"VCMALLOC_STATS": "json"}
    return [
        Allocator("vcmalloc-vcpu", vc, {"VCMALLOC_INDEX": "vcpu", **stats},
                  "VM_LIB_VCMALLOC", "vcmalloc"),
        Allocator("vcmalloc-cpu", vc, {"VCMALLOC_INDEX": "cpu", **stats},
                  "VM_LIB_VCMALLOC", "vcmalloc"),
        Allocator("glibc", None, {}, None, "glibc"),
        Allocator("jemalloc", os.path.join(libdir, "libjemalloc.so.2"), {},
                  "VM_LIB_JEMALLOC", "jemalloc"),
        Allocator("jemalloc-percpu", os.path.join(libdir, "libjemalloc.so.2"),
                  {"MALLOC_CONF": "percpu_arena:percpu"}, "VM_LIB_JEMALLOC", "jemalloc"),
        Allocator("mimalloc", _mimalloc_library(libdir), {}, "VM_LIB_MIMALLOC", "mimalloc"),
        Allocator("tcmalloc", os.path.join(libdir, "libtcmalloc_minimal.so.4"), {},
                  "VM_LIB_TCMALLOC_MINIMAL", "tcmalloc"),
    ]


def select(build_dir, names=None, libdir=LIBDIR):
    """The allocators named (all if None) that exist here, and the names missing."""
    chosen, missing = [], []
    for a in all_allocators(build_dir, libdir):
        if names and a.name not in names:
            continue
        (chosen if a.available() else missing).append(a)
    return chosen, [m.name for m in missing]


def parse_vcmalloc_stats(stderr_text):
    """The last JSON object vcmalloc printed on stderr (VCMALLOC_STATS=json), or None."""
    found = None
    for line in stderr_text.splitlines():
        line = line.strip()
        if not (line.startswith("{") and "vcpu_cache_bytes" in line):
            continue
        try:
            found = json.loads(line)
        except json.JSONDecodeError:
            continue
    return found
