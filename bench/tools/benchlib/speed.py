# SPDX-License-Identifier: MIT
"""The workloads of bench/run-speed and how one run of each is made.

Two kinds of workload:
  - the subcommands of the speed program (bench/speed), which print one JSON line
    whose "seconds" is the wall time of the timed part;
  - real programs (Python, SQLite, Perl, Redis), timed from the outside: the wall
    time of the whole process (for Redis: of redis-benchmark against a server that
    runs under the allocator).

A run returns a record: {workload, allocator, repeat, status ("ok", "failed",
"skipped"), seconds, ops, user_seconds, sys_seconds, cpu_seconds (their sum),
max_rss_kib, error, detail (the speed program's JSON line)}, plus "extrapolated":
true for a run cut short.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass

from .allocators import parse_vcmalloc_stats

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS_DIR = os.path.join(HERE, "..", "..", "speed", "programs")

# Speed-program workloads that run on one thread: the ones --instructions counts.
SINGLE_THREAD = ["wide1", "bigblocks", "bigblocks64", "tight1-16", "tight1-64",
                 "tight1-256", "tight1-1024", "realloc"]


@dataclass
class Workload:
    name: str
    what: str
    kind: str           # "speed" (a speed-program subcommand) or "program"
    base: int = 0       # programs: the size argument at scale 1
    unavailable: str | None = None  # why it cannot run here, if it cannot


def speed_workloads(speed_exe):
    """The speed program's subcommands, in its own order."""
    out = subprocess.run([speed_exe, "--list"], capture_output=True, text=True, check=True)
    return [Workload(*line.split("\t", 1), "speed") for line in out.stdout.splitlines()]


def _python():
    return "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else shutil.which("python3")


def program_workloads():
    """The real programs; one whose executable is missing says so in `unavailable`."""
    found = {"python": _python(), "sqlite3": shutil.which("sqlite3"),
             "perl": shutil.which("perl"), "redis-server": shutil.which("redis-server"),
             "redis-benchmark": shutil.which("redis-benchmark")}

    def need(*names):
        missing = [n for n in names if not found[n]]
        return f"not installed: {', '.join(missing)}" if missing else None

    return [
        Workload("python-malloc", "python3: dict of 600k entries (1.2M str, 600k tuples) "
                 "built and dropped, PYTHONMALLOC=malloc", "program", 600_000, need("python")),
        Workload("python-pymalloc", "the same with Python's own small-object allocator",
                 "program", 600_000, need("python")),
        Workload("sqlite", "sqlite3 :memory:: 200k rows into a table with 2 indexes, "
                 "then GROUP BY", "program", 200_000, need("sqlite3")),
        Workload("perl", "perl: hash of 300k string pairs built, read, half deleted",
                 "program", 300_000, need("perl")),
        Workload("redis", "redis-server on loopback, redis-benchmark -P 16: 60k each of "
                 "SET GET LPUSH LPOP SADD HSET", "program", 60_000,
                 need("redis-server", "redis-benchmark")),
    ]


def new_record(workload, allocator, repeat):
    return {"workload": workload, "allocator": allocator, "repeat": repeat, "status": "ok",
            "seconds": None, "ops": None, "user_seconds": None, "sys_seconds": None,
            "cpu_seconds": None,
            "max_rss_kib": None, "error": None, "detail": None}


def _spawn(cmd, env, timeout, stdin_text=None):
    """Runs cmd; returns (returncode, stdout, stderr, wall seconds, rusage).  A run
    that outlives the timeout is killed and returns returncode None."""
    killed = threading.Event()

    def kill():
        killed.set()
        proc.kill()

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=err,
                                stdin=subprocess.DEVNULL if stdin_text is None else
                                subprocess.PIPE)
        timer = threading.Timer(timeout, kill)
        timer.start()
        if stdin_text is not None:
            try:
                proc.stdin.write(stdin_text.encode())
                proc.stdin.close()
            except BrokenPipeError:
                pass
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped: Popen must not wait
        out.seek(0)
        err.seek(0)
        return (None if killed.is_set() else proc.returncode,
                out.read().decode(errors="replace"), err.read().decode(errors="replace"),
                wall, usage)


def _fill_usage(rec, usage):
    rec["user_seconds"] = round(usage.ru_utime, 6)
    rec["sys_seconds"] = round(usage.ru_stime, 6)
    rec["cpu_seconds"] = round(usage.ru_utime + usage.ru_stime, 6)
    rec["max_rss_kib"] = usage.ru_maxrss


def _check_exit(rec, code, stderr, timeout):
    if code is None:
        rec["status"], rec["error"] = "failed", f"timeout after {timeout} s"
    elif code != 0:
        rec["status"] = "failed"
        rec["error"] = f"exit status {code}: {stderr.strip()[-300:]}"
    return rec["status"] == "ok"


def _check_vcmalloc(rec, allocator, stderr):
    """vcmalloc prints its statistics at exit (VCMALLOC_STATS=json): they prove it was
    loaded and tell the index mode it ran in."""
    if not allocator.is_vcmalloc:
        return
    stats = parse_vcmalloc_stats(stderr)
    if stats is None:
        rec["status"] = "failed"
        rec["error"] = ("vcmalloc preloaded but printed no statistics; stderr: "
                        f"{stderr.strip()[-200:]!r}")
        return
    rec["vcmalloc_index"] = stats.get("index")


def run_speed(speed_exe, workload, allocator, repeat, scale, timeout, max_seconds=0):
    """One run of a speed-program workload.  With max_seconds, a workload that supports
    it (tight) stops early; its time is then extrapolated to the whole planned work
    (seconds * planned_ops / ops) and the record says "extrapolated"."""
    rec = new_record(workload.name, allocator.name, repeat)
    cmd = [speed_exe, workload.name, "--scale", str(scale), "--seed", str(repeat + 1)]
    if max_seconds:
        cmd += ["--max-seconds", str(max_seconds)]
    code, stdout, stderr, _, usage = _spawn(cmd, allocator.environment(), timeout)
    if not _check_exit(rec, code, stderr, timeout):
        return rec
    try:
        doc = json.loads(stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        rec["status"], rec["error"] = "failed", f"unreadable output {stdout[:200]!r}"
        return rec
    rec["detail"] = doc
    rec["seconds"], rec["ops"] = doc["seconds"], doc["ops"]
    rec["user_seconds"], rec["sys_seconds"] = doc["user_seconds"], doc["sys_seconds"]
    rec["cpu_seconds"] = doc["user_seconds"] + doc["sys_seconds"]
    rec["max_rss_kib"] = doc["max_rss_kib"]
    if 0 < doc["ops"] < doc["planned_ops"]:
        rec["seconds"] = doc["seconds"] * doc["planned_ops"] / doc["ops"]
        rec["cpu_seconds"] *= doc["planned_ops"] / doc["ops"]
        rec["extrapolated"] = True
    if doc.get("allocator_detected") != allocator.family:
        rec["status"] = "failed"
        rec["error"] = (f"{allocator.name} preloaded but the program found "
                        f"{doc.get('allocator_detected')}")
    _check_vcmalloc(rec, allocator, stderr)
    return rec


def _program_command(workload, count):
    """argv, stdin text and environment changes of a real program's run."""
    if workload.name.startswith("python"):
        env = {"PYTHONMALLOC": "malloc"} if workload.name == "python-malloc" else {}
        return [_python(), os.path.join(PROGRAMS_DIR, "dict.py"), str(count)], None, env
    if workload.name == "sqlite":
        with open(os.path.join(PROGRAMS_DIR, "rows.sql")) as f:
            script = f".parameter set @rows {count}\n" + f.read()
        return [shutil.which("sqlite3"), ":memory:"], script, {}
    if workload.name == "perl":
        return [shutil.which("perl"), os.path.join(PROGRAMS_DIR, "hash.pl"), str(count)], None, {}
    raise ValueError(workload.name)


def run_program(workload, allocator, repeat, scale, timeout):
    rec = new_record(workload.name, allocator.name, repeat)
    if workload.unavailable:
        rec["status"], rec["error"] = "skipped", workload.unavailable
        return rec
    count = max(1000, int(workload.base * scale))
    if workload.name == "redis":
        return _run_redis(rec, allocator, count, timeout)
    cmd, stdin_text, extra = _program_command(workload, count)
    env = allocator.environment()
    env.pop("PYTHONMALLOC", None)
    env.update(extra)
    code, _, stderr, wall, usage = _spawn(cmd, env, timeout, stdin_text)
    if _check_exit(rec, code, stderr, timeout):
        rec["seconds"] = round(wall, 6)
        _fill_usage(rec, usage)
        _check_vcmalloc(rec, allocator, stderr)
    return rec


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _redis_ready(port, deadline):
    while time.perf_counter() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                if s.recv(64).startswith(b"+PONG"):
                    return True
        except OSError:
            time.sleep(0.02)
    return False


def _run_redis(rec, allocator, count, timeout):
    """redis-server under the allocator on a free loopback port; redis-benchmark (under
    glibc, the same for every allocator) is what is timed."""
    port = _free_port()
    server = subprocess.Popen(
        [shutil.which("redis-server"), "--port", str(port), "--bind", "127.0.0.1",
         "--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning",
         "--protected-mode", "no"],
        env=allocator.environment(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        if not _redis_ready(port, time.perf_counter() + 10):
            rec["status"], rec["error"] = "failed", "redis-server did not answer PING"
            return rec
        plain = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "MALLOC_CONF")}
        cmd = [shutil.which("redis-benchmark"), "-h", "127.0.0.1", "-p", str(port), "-q",
               "-n", str(count), "-P", "16", "-r", "100000", "-d", "100",
               "-t", "set,get,lpush,lpop,sadd,hset", "--csv"]
        code, _, stderr, wall, _ = _spawn(cmd, plain, timeout)
        if _check_exit(rec, code, stderr, timeout):
            rec["seconds"] = round(wall, 6)
    finally:
        server_err, status, usage = _stop(server)
    if rec["status"] == "ok":
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            rec["status"] = "failed"
            rec["error"] = f"redis-server exit status {code}"
        else:
            _fill_usage(rec, usage)
            _check_vcmalloc(rec, allocator, server_err)
    return rec


def _stop(server):
    """SIGTERM (SIGKILL after 20 s) to the server; returns its stderr, wait status and
    resource usage."""
    server.send_signal(signal.SIGTERM)
    timer = threading.Timer(20, server.kill)
    timer.start()
    err = server.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(server.pid, 0)
    timer.cancel()
    server.returncode = os.waitstatus_to_exitcode(status)
    server.stderr.close()
    return err, status, usage
