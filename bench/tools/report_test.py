#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench-report: the footprint and speed reports computed from made-up results.

A small results.json written here (figures chosen so that every overhead and ratio
is known) is re-rendered by bench/run-footprint --from-json; the test checks the
overhead tables (text, Markdown, JSON: peak RSS, peak live, overhead, its ratio to
the best peer, final RSS and its ratio to the smallest peer, the live-data limit
row), vcmalloc's per-vCPU over per-CPU cache bytes, that results older than the
live-byte count still render, that the summary
keeps its former keys, and that the plots exist as PNG and SVG, one panel per NUMA
node count.  The same for run-speed's chart of time over the fastest peer.  Without
matplotlib the scripts must say so and still write the tables; the table checks then
run and the test exits 77 (skipped) for the plot checks.
Usage: report_test.py (finds bench/ next to itself).
"""
import json
import math
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

TOOLS = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(TOOLS)
RUN_FOOTPRINT = os.path.join(BENCH, "run-footprint")
sys.path.insert(0, TOOLS)

from benchlib import charts, speed_report  # noqa: E402

MIB = 2 ** 20
failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
    return condition


def record(machine, workload, placement, allocator, hwm, live, final, start, cpus=None,
           live_counted=True):
    """One successful run; sizes in MiB."""
    fp = {"ops_per_sec": 1e6, "vm_hwm_bytes": int(hwm * MIB),
          "vm_rss_final_bytes": int(final * MIB), "allowed_cpus": 2, "cpus_visited": 2,
          "threads": 4, "cache_bytes_peak_sampled": None}
    if live_counted:
        fp.update(live_bytes_peak=int(live * MIB), live_bytes_final=0,
                  vm_rss_start_bytes=int(start * MIB))
    return {"machine": machine, "workload": workload, "placement": placement,
            "allocator": allocator, "repeat": 0, "status": "ok", "error": None,
            "footprint": fp, "vcmalloc_stats": None, "placement_cpus": cpus}


# host, few/all: live 10 MiB.  Overheads: glibc 15 (best peer), jemalloc 20, mimalloc 30,
# vcmalloc 6.  Final RSS: glibc 4 (smallest peer), jemalloc 8, mimalloc 12, vcmalloc 3.
HOST_FEW = {"vcmalloc-vcpu": (16, 10, 3), "glibc": (25, 10, 4), "jemalloc": (30, 10, 8),
            "mimalloc": (40, 10, 12)}
EXPECTED_HOST_FEW = {  # allocator: (peak RSS, live, overhead, ratio, final, final ratio)
    "vcmalloc-vcpu": ("16.0", "10.0", "6.0", "0.40", "3.0", "0.75"),
    "glibc": ("25.0", "10.0", "15.0", "1.00", "4.0", "1.00"),
    "jemalloc": ("30.0", "10.0", "20.0", "1.33", "8.0", "2.00"),
    "mimalloc": ("40.0", "10.0", "30.0", "2.00", "12.0", "3.00"),
}


def results_doc():
    recs = [record("host", "few", "all", a, h, l, f, 1.5) for a, (h, l, f) in HOST_FEW.items()]
    # tcmalloc from a program older than the live-byte count: no overhead, no ratio, and
    # it must not be taken as the best peer.
    recs.append(record("host", "few", "all", "tcmalloc", 12, 0, 6, 0, live_counted=False))
    # Guests on 1 and 2 NUMA nodes: overheads spanning two orders of magnitude.
    for machine, scale in (("vm-16-n1", 1), ("vm-64-n1", 4), ("vm-16-n2", 1.5),
                           ("vm-64-n2", 8)):
        recs += [record(machine, "few", "all", "vcmalloc-vcpu", 10 + 1 * scale, 10, 3, 2),
                 record(machine, "few", "all", "jemalloc", 10 + 50 * scale, 10, 9, 2),
                 record(machine, "few", "all", "glibc", 10 + 20 * scale, 10, 5, 2)]
    # vm-16-n2 with both cache index modes: vcpu 0.5 MiB in 4 caches, cpu 2 MiB in 16.
    for rec in recs:
        if rec["machine"] == "vm-16-n2" and rec["allocator"] == "vcmalloc-vcpu":
            rec["vcmalloc_stats"] = {"vcpu_cache_bytes_peak": MIB // 2,
                                     "vcpu_caches_populated_peak": 4}
    cpu_mode = record("vm-16-n2", "few", "all", "vcmalloc-cpu", 12, 10, 3, 2)
    cpu_mode["vcmalloc_stats"] = {"vcpu_cache_bytes_peak": 2 * MIB,
                                  "vcpu_caches_populated_peak": 16}
    recs.append(cpu_mode)
    machines = {"host": {"kind": "host", "vcpus": 2, "nodes": 1, "description": "host"}}
    for name in ("vm-16-n1", "vm-64-n1", "vm-16-n2", "vm-64-n2"):
        cpus, nodes = name[3:].split("-n")
        machines[name] = {"kind": "guest", "vcpus": int(cpus), "nodes": int(nodes),
                          "description": f"guest {cpus}/{nodes}"}
    return {"meta": {"started": "2026-01-01T00:00:00Z", "finished": "2026-01-01T00:10:00Z",
                     "mode": "quick", "repeats": 1, "missing_allocators": []},
            "machines": machines, "records": recs, "guests": {}}


def table_rows(text, machine):
    """Rows of the Markdown overhead table of one machine: {allocator: cells}."""
    rows, inside = {}, False
    for line in text.splitlines():
        if line.startswith("### "):
            inside = line.startswith(f"### {machine}:")
        elif line.startswith("## ") and rows:
            break
        elif inside and line.startswith("| ") and "allocator" not in line:
            cells = [c.strip() for c in line.strip("|").split("|")]
            rows.setdefault((cells[0], cells[1]), {})[cells[2]] = cells[3:]
    return rows


def check_footprint_tables(out):
    md = open(os.path.join(out, "report.md")).read()
    section = md[md.index("## Overhead over live data"):md.index("## Measurements")]
    check("approximate" in section, "the overhead is not called approximate")
    host = table_rows(section, "host").get(("few", "all"), {})
    check(host.get("live data (limit)", [None])[:4] == ["10.0", "10.0", "0.0", "0.00"],
          f"limit row of host/few: {host.get('live data (limit)')}")
    for a, want in EXPECTED_HOST_FEW.items():
        got = host.get(a)
        check(got is not None and tuple(got[:6]) == want and got[6] == "1.5",
              f"host/few {a}: {got} != {want} (+ start 1.5)")
    tc = host.get("tcmalloc")
    check(tc is not None and tc[0] == "12.0" and tc[1:4] == ["–", "–", "–"] and
          tc[4:7] == ["6.0", "1.50", "–"], f"tcmalloc without live bytes: {tc}")
    text = open(os.path.join(out, "report.txt")).read()
    line = next((l for l in text.splitlines() if l.split()[:3] == ["few", "all", "jemalloc"]),
                "")
    check(line.split()[3:9] == list(EXPECTED_HOST_FEW["jemalloc"]),
          f"text table, jemalloc: {line!r}")
    check(any("live data (limit)" in l for l in text.splitlines()), "no limit row in text")
    doc = json.load(open(os.path.join(out, "results.json")))
    rows = {(r["machine"], r["allocator"]): r for r in doc["overhead"]}
    j = rows.get(("host", "jemalloc"), {})
    check(j.get("overhead") == 20 * MIB and j.get("peak_live") == 10 * MIB and
          math.isclose(j.get("overhead_ratio_to_best_peer") or 0, 20 / 15) and
          j.get("best_peer") == "glibc" and
          math.isclose(j.get("final_rss_ratio_to_smallest_peer") or 0, 8 / 4),
          f"JSON overhead row of jemalloc: {j}")
    check(rows.get(("host", "live data (limit)"), {}).get("overhead") == 0,
          "JSON limit row missing")
    ratio = [r for r in doc.get("cache_ratio", []) if r["machine"] == "vm-16-n2"]
    check(len(ratio) == 1 and ratio[0]["vcpu"] == MIB // 2 and ratio[0]["cpu"] == 2 * MIB
          and math.isclose(ratio[0]["ratio"], 0.25) and ratio[0]["vcpu_caches"] == 4 and
          ratio[0]["cpu_caches"] == 16 and len(doc.get("cache_ratio", [])) == 1,
          f"JSON cache ratio: {doc.get('cache_ratio')}")
    line = next((l for l in text.splitlines() if l.split()[:3] == ["vm-16-n2", "few", "all"]),
                "")
    check(line.split()[3:] == ["0.5", "2.00", "0.250", "4", "/", "16"],
          f"text cache ratio row: {line!r}")
    check("| vm-16-n2 | few | all | 0.5 | 2.00 | 0.250 | 4 / 16 |" in md,
          "report.md lacks the cache ratio row of vm-16-n2")
    summary = {(s["machine"], s["allocator"]): s for s in doc["summary"]}
    for key in ("peak_rss", "final_rss", "ops_per_sec", "cache_peak", "runs", "failed"):
        check(key in summary.get(("host", "glibc"), {}), f"summary lost its key {key}")
    v = summary.get(("vm-64-n2", "vcmalloc-vcpu"), {})
    check(v.get("overhead") == 8 * MIB and math.isclose(v["overhead_ratio_to_best_peer"],
                                                          8 / 160),
          f"vm-64-n2 vcmalloc: {v.get('overhead')}, {v.get('overhead_ratio_to_best_peer')}")
    return md


def check_image(path):
    if not check(os.path.isfile(path), f"{path} not written"):
        return None
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".png"):
        check(data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 2000, f"{path}: not a PNG")
        return None
    root = ET.fromstring(data)
    check(root.tag.endswith("svg"), f"{path}: not an SVG")
    return data.decode()


def check_footprint_plots(out, md):
    plots = os.path.join(out, "plots")
    for stem in ("footprint-few-all", "final_rss-few-all", "by-workload-host",
                 "by-workload-vm-64-n2"):
        check_image(os.path.join(plots, stem + ".png"))
        svg = check_image(os.path.join(plots, stem + ".svg"))
        check(f"](plots/{stem}.png)" in md, f"report.md does not show plots/{stem}.png")
        if stem == "footprint-few-all" and svg:
            # matplotlib keeps each text as a comment next to its drawn glyphs
            for title in ("1 NUMA node (", "2 NUMA nodes (", "live data (limit)",
                          "overhead"):
                check(title in svg, f"{stem}.svg lacks {title!r}")


def check_speed():
    s = {}
    times = {"w1": {"vcmalloc-vcpu": 1.0, "glibc": 4.0, "jemalloc": 2.0},
             "w2": {"vcmalloc-vcpu": 3.0, "glibc": 1.5, "jemalloc": 1.0},
             "w3": {"vcmalloc-vcpu": 1.0, "glibc": None, "jemalloc": 1.0}}
    for w, per in times.items():
        for a, t in per.items():
            s[(w, a)] = {"median": t}
    names = ["vcmalloc-vcpu", "glibc", "jemalloc"]
    per, means, common = speed_report.ratios_to_fastest_peer(s, list(times), names,
                                                            ["glibc", "jemalloc"])
    check(common == ["w1", "w2"], f"speed common workloads {common}")
    check(per["vcmalloc-vcpu"] == {"w1": 0.5, "w2": 3.0, "w3": 1.0} and
          per["glibc"] == {"w1": 2.0, "w2": 1.5}, f"speed ratios {per}")
    check(math.isclose(means["vcmalloc-vcpu"], math.sqrt(1.5)) and
          math.isclose(means["glibc"], math.sqrt(3.0)) and
          math.isclose(means["jemalloc"], 1.0), f"speed geometric means {means}")
    with tempfile.TemporaryDirectory() as out:
        files = speed_report.plot_ratios(s, list(times), names, ["glibc", "jemalloc"], out,
                                         "speed-time", "time")
        if charts.load() is None:
            check(files == [], "speed chart written without matplotlib")
            return
        check(sorted(files) == ["speed-time.png", "speed-time.svg"], f"speed files {files}")
        check_image(os.path.join(out, "speed-time.png"))
        svg = check_image(os.path.join(out, "speed-time.svg"))
        check(svg is not None and "geo. mean (2)" in svg, "speed chart has no geometric mean")


def run_footprint(json_path, out, block_matplotlib=False):
    code = ("import runpy, sys\n"
            + ("sys.modules['matplotlib'] = None\n" if block_matplotlib else "")
            + f"sys.argv = {[RUN_FOOTPRINT, '--from-json', json_path, '--out', out]!r}\n"
            + f"runpy.run_path({RUN_FOOTPRINT!r}, run_name='__main__')\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)


def main():
    have_matplotlib = charts.load() is not None
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "in.json")
        with open(src, "w") as f:
            json.dump(results_doc(), f)
        out = os.path.join(tmp, "with")
        r = run_footprint(src, out)
        if check(r.returncode == 0, f"run-footprint --from-json failed: {r.stderr[-800:]}"):
            md = check_footprint_tables(out)
            if have_matplotlib:
                check_footprint_plots(out, md)
            else:
                check("plots skipped: matplotlib is not installed" in r.stderr,
                      "no message about the missing matplotlib")
        # Without matplotlib: a clear message, the tables, no plot.
        bare = os.path.join(tmp, "without")
        r = run_footprint(src, bare, block_matplotlib=True)
        if check(r.returncode == 0, f"run-footprint without matplotlib: {r.stderr[-800:]}"):
            check("plots skipped: matplotlib is not installed" in r.stderr,
                  f"no message about the missing matplotlib: {r.stderr[-300:]}")
            md = check_footprint_tables(bare)
            check("No plots: matplotlib is not installed" in md, "report.md hides the reason")
            check(not os.path.isdir(os.path.join(bare, "plots")) or
                  not os.listdir(os.path.join(bare, "plots")), "plots written without matplotlib")
    check_speed()
    for f in failures:
        print("FAILED:", f)
    if failures:
        return 1
    if not have_matplotlib:
        print(f"tables checked; plots skipped: {charts.reason()}")
        return 77
    print("overhead tables, ratios and plots: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
