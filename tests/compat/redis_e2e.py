#!/usr/bin/env python3
"""redis_e2e: Debian's redis-server (linked with jemalloc) with libvcmalloc.so
preloaded reports and releases vcmalloc's memory through jemalloc's interface.

On a free loopback port, with persistence off and DEBUG enabled:
  1. DEBUG POPULATE 1000000 keys; INFO memory must show mem_allocator and
     allocator_allocated / active / resident that are vcmalloc's: allocated
     within 10% of redis's own used_memory (which it counts with
     malloc_usable_size) and allocated <= active <= resident. Under jemalloc's
     own mallctl these stay at jemalloc's few hundred KiB while vcmalloc holds
     the data, so this fails unless mallctl is vcmalloc's.
  2. MEMORY MALLOC-STATS (malloc_stats_print) is vcmalloc's report.
  3. FLUSHALL, then MEMORY PURGE (mallctl "arena.<narenas>.purge"): VmRSS from
     /proc/PID/status must fall by at least 3/4 of what populating added, and
     allocator_resident by at least 3/4 of its rise.
  4. redis-benchmark (SET, GET, LPUSH, LPOP, 20000 requests) exits 0 without
     errors, and the server then shuts down cleanly.
Exits 77 (skip) when redis-server or redis-cli is not installed.
"""
import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    args = ap.parse_args()
    tools = [shutil.which(t) for t in ("redis-server", "redis-cli", "redis-benchmark")]
    if not all(tools):
        print("SKIP: redis-server, redis-cli or redis-benchmark is not installed")
        sys.exit(77)
    server, cli, bench = tools
    port = free_port()
    work = tempfile.mkdtemp(prefix="vc-redis-")
    env = dict(os.environ, LD_PRELOAD=os.path.abspath(args.lib))
    proc = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--daemonize", "no", "--enable-debug-command", "yes",
         "--dir", work, "--logfile", os.path.join(work, "server.log")],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def redis(*cmd, timeout=120):
        r = subprocess.run([cli, "-p", str(port)] + list(cmd), capture_output=True,
                           text=True, timeout=timeout)
        if r.returncode != 0:
            fail("redis-cli %s: status %d %s" % (cmd, r.returncode, r.stderr))
        return r.stdout

    def info_memory():
        fields = {}
        for line in redis("info", "memory").splitlines():
            if ":" in line:
                k, v = line.strip().split(":", 1)
                fields[k] = v
        return fields

    def rss_kib():
        with open("/proc/%d/status" % proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        fail("no VmRSS")

    try:
        for _ in range(300):
            if proc.poll() is not None:
                fail("redis-server exited with %d" % proc.returncode)
            r = subprocess.run([cli, "-p", str(port), "ping"], capture_output=True, text=True)
            if r.stdout.strip() == "PONG":
                break
            time.sleep(0.1)
        else:
            fail("redis-server did not answer")
        with open("/proc/%d/maps" % proc.pid) as f:
            if "libvcmalloc" not in f.read():
                fail("libvcmalloc.so is not mapped in redis-server")

        rss0 = rss_kib()
        m0 = info_memory()
        if redis("debug", "populate", "1000000").strip() != "OK":
            fail("DEBUG POPULATE")
        if redis("dbsize").strip() != "1000000":
            fail("dbsize after populate")
        rss1 = rss_kib()
        m1 = info_memory()
        print("populated: VmRSS %d KiB (from %d); used_memory %s allocator_allocated %s "
              "allocator_active %s allocator_resident %s mem_allocator %s" % (
                  rss1, rss0, m1["used_memory"], m1["allocator_allocated"],
                  m1["allocator_active"], m1["allocator_resident"], m1["mem_allocator"]))
        if not m1.get("mem_allocator"):
            fail("INFO memory has no mem_allocator")
        used = int(m1["used_memory"])
        alloc, active, resident = (int(m1[k]) for k in (
            "allocator_allocated", "allocator_active", "allocator_resident"))
        if used < 50 << 20:
            fail("populating 1M keys used only %d bytes" % used)
        if abs(alloc - used) > used // 10:
            fail("allocator_allocated %d is not vcmalloc's (used_memory %d)" % (alloc, used))
        if not alloc <= active <= resident:
            fail("allocated %d active %d resident %d out of order" % (alloc, active, resident))
        if resident > rss1 * 1024:
            fail("allocator_resident %d above VmRSS %d KiB" % (resident, rss1))

        stats = redis("memory", "malloc-stats")
        if "vcmalloc statistics" not in stats or "Allocated: " not in stats:
            fail("MEMORY MALLOC-STATS is not vcmalloc's:\n" + stats[:500])

        redis("flushall")
        if redis("memory", "purge").strip() != "OK":
            fail("MEMORY PURGE")
        rss2 = rss_kib()
        m2 = info_memory()
        print("flushall + purge: VmRSS %d KiB; allocator_allocated %s allocator_resident %s"
              % (rss2, m2["allocator_allocated"], m2["allocator_resident"]))
        if rss1 - rss2 < (rss1 - rss0) * 3 // 4:
            fail("VmRSS fell from %d to %d KiB only (started at %d)" % (rss1, rss2, rss0))
        res0, res2 = int(m0["allocator_resident"]), int(m2["allocator_resident"])
        if resident - res2 < (resident - res0) * 3 // 4:
            fail("allocator_resident fell from %d to %d only (started at %d)" % (
                resident, res2, res0))

        b = subprocess.run([bench, "-p", str(port), "-q", "-n", "20000", "-c", "20", "-P", "4",
                            "-t", "set,get,lpush,lpop"], env=env, capture_output=True,
                           text=True, timeout=300)
        if b.returncode != 0 or "ERR" in b.stdout or "rror" in b.stderr:
            fail("redis-benchmark: status %d\n%s\n%s" % (b.returncode, b.stdout, b.stderr))
        if redis("llen", "mylist").strip() == "":
            fail("llen")
        subprocess.run([cli, "-p", str(port), "shutdown", "nosave"], capture_output=True)
        if proc.wait(timeout=60) != 0:
            fail("redis-server exited with %d" % proc.returncode)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        shutil.rmtree(work, ignore_errors=True)
    print("redis_e2e: ok")


if __name__ == "__main__":
    main()
