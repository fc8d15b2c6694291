# SPDX-License-Identifier: MIT
"""From run records to figures: medians per configuration, Markdown tables with ratio
columns against the baseline (jemalloc), the overhead over live data (overhead.py),
the targets of the footprint comparison, and the plots (charts.py).  Nothing here
knows a number in advance: every verdict is computed."""
import statistics

from . import charts, overhead

BASELINE = "jemalloc"
VCMALLOC = "vcmalloc-vcpu"
VCMALLOC_CPU = "vcmalloc-cpu"
PEERS = ["glibc", "jemalloc", "jemalloc-percpu", "mimalloc", "tcmalloc"]
MIB = 2 ** 20


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def cache_peak(rec):
    """Peak allocator cache bytes of one run: vcmalloc's own peak counter when it printed
    its statistics, otherwise the sampled peak (jemalloc tcache, tcmalloc thread caches)."""
    vc = rec.get("vcmalloc_stats")
    if vc and vc.get("vcpu_cache_bytes_peak") is not None:
        return vc["vcpu_cache_bytes_peak"]
    return (rec.get("footprint") or {}).get("cache_bytes_peak_sampled")


def summarize(records):
    """{(machine, workload, placement, allocator): medians over the successful repeats}."""
    groups = {}
    for rec in records:
        key = (rec["machine"], rec["workload"], rec["placement"], rec["allocator"])
        groups.setdefault(key, []).append(rec)
    out = {}
    for key, recs in groups.items():
        ok = [r for r in recs if r["status"] == "ok"]
        fps = [r["footprint"] for r in ok]
        vcs = [r["vcmalloc_stats"] for r in ok if r.get("vcmalloc_stats")]
        out[key] = {
            "runs": len(recs),
            "failed": len(recs) - len(ok),
            "errors": sorted({r["error"] for r in recs if r["status"] != "ok" and r["error"]}),
            "ops_per_sec": _median([f["ops_per_sec"] for f in fps]),
            "peak_rss": _median([f["vm_hwm_bytes"] for f in fps]),
            "final_rss": _median([f["vm_rss_final_bytes"] for f in fps]),
            # After --idle-ms without allocator calls; None where not measured.
            "idle_rss": _median([f.get("vm_rss_idle_bytes") for f in fps]),
            # Results of programs older than the live-byte count have none: None.
            "peak_live": _median([f.get("live_bytes_peak") for f in fps]),
            "live_final": _median([f.get("live_bytes_final") for f in fps]),
            "start_rss": _median([f.get("vm_rss_start_bytes") for f in fps]),
            "cache_peak": _median([cache_peak(r) for r in ok]),
            "caches_populated_peak": _median([v.get("vcpu_caches_populated_peak") for v in vcs]),
            "allowed_cpus": _median([f["allowed_cpus"] for f in fps]),
            "cpus_visited": _median([f["cpus_visited"] for f in fps]),
            "threads": _median([f["threads"] for f in fps]),
            "cpus": next((r.get("placement_cpus") for r in ok if r.get("placement_cpus")), None),
        }
    overhead.add_overhead(out, PEERS)
    return out


def _fmt(value, scale=1.0, digits=1):
    """value/scale with `digits` decimals, or more for small values (3 significant)."""
    if value is None:
        return "–"
    v = value / scale
    if v != 0 and abs(v) < 10 ** (2 - digits):
        return f"{v:.3g}" if abs(v) >= 1e-4 else f"{v:.1e}"
    return f"{v:.{digits}f}"


def _ratio(value, base):
    if value is None or not base:
        return ""
    return f" ({value / base:.2f}x)"


MEASURES = [
    ("peak_rss", "Peak RSS (VmHWM), MiB", MIB, 1),
    ("final_rss", "Final RSS (VmRSS after the workload), MiB", MIB, 1),
    ("idle_rss", "Idle RSS (VmRSS after a further quiet period without allocator calls; "
     "placement all), MiB", MIB, 1),
    ("ops_per_sec", "Throughput, million allocations/s", 1e6, 2),
    ("cache_peak", "Peak allocator cache bytes, MiB (where reported)", MIB, 2),
]


CACHE_RATIO_HEADERS = ["machine", "workload", "placement", "vcpu mode, MiB", "cpu mode, MiB",
                       "vCPU/CPU", "caches at peak (vcpu / cpu)"]


def cache_ratio_rows(summary, machines):
    """vcmalloc's peak per-vCPU cache bytes over its peak per-CPU cache bytes, per
    machine, workload and placement where both modes ran: [dict] with vcpu, cpu (bytes),
    ratio (None where the cpu figure is missing or 0) and the caches populated at peak."""
    out = []
    for m in machines:
        for w, p in configurations(summary, m):
            v = summary.get((m, w, p, VCMALLOC))
            c = summary.get((m, w, p, VCMALLOC_CPU))
            if v is None or c is None:
                continue
            vb, cb = v.get("cache_peak"), c.get("cache_peak")
            out.append(dict(machine=m, workload=w, placement=p, vcpu=vb, cpu=cb,
                            ratio=vb / cb if vb is not None and cb else None,
                            vcpu_caches=v.get("caches_populated_peak"),
                            cpu_caches=c.get("caches_populated_peak")))
    return out


def cache_ratio_table(rows):
    """(headers, cells) of cache_ratio_rows, for tables.markdown or tables.text."""
    return CACHE_RATIO_HEADERS, [
        [r["machine"], r["workload"], r["placement"], _fmt(r["vcpu"], MIB, 2),
         _fmt(r["cpu"], MIB, 2), "–" if r["ratio"] is None else f"{r['ratio']:.3f}",
         f"{_fmt(r['vcpu_caches'], 1, 0)} / {_fmt(r['cpu_caches'], 1, 0)}"]
        for r in rows]


def configurations(summary, machine):
    seen = []
    for (m, w, p, _a) in summary:
        if m == machine and (w, p) not in seen:
            seen.append((w, p))
    return seen


def markdown_tables(summary, machines, allocators, workload_order):
    """One table per machine and measure: rows workload/placement, columns allocators,
    each cell 'value (ratio to jemalloc)'."""
    lines = []
    for machine in machines:
        meta = machines[machine]
        lines.append(f"### {machine}: {meta.get('description', '')}")
        lines.append("")
        configs = sorted(configurations(summary, machine),
                         key=lambda wp: (workload_order.index(wp[0])
                                         if wp[0] in workload_order else 99, wp[1]))
        present = [a for a in allocators
                   if any((machine, w, p, a) in summary for w, p in configs)]
        for key, title, scale, digits in MEASURES:
            if not any(summary.get((machine, w, p, a), {}).get(key) is not None
                       for w, p in configs for a in present):
                continue
            lines.append(f"**{title}** – ratio to {BASELINE} in parentheses")
            lines.append("")
            lines.append("| workload | placement | " + " | ".join(present) + " |")
            lines.append("|---|---|" + "---|" * len(present))
            for w, p in configs:
                base = summary.get((machine, w, p, BASELINE), {}).get(key)
                cells = []
                for a in present:
                    s = summary.get((machine, w, p, a))
                    if not s:
                        cells.append("")
                    elif s["ops_per_sec"] is None:
                        cells.append("failed")
                    else:
                        cells.append(_fmt(s.get(key), scale, digits) + _ratio(s.get(key), base))
                cpus = next((summary[(machine, w, p, a)]["cpus"] for a in present
                             if (machine, w, p, a) in summary and summary[(machine, w, p, a)]["cpus"]), None)
                place = p + (f" [{cpus}]" if cpus else "")
                lines.append(f"| {w} | {place} | " + " | ".join(cells) + " |")
            lines.append("")
        vc_rows = [(w, p) for w, p in configs
                   if any(summary.get((machine, w, p, a), {}).get("caches_populated_peak")
                          is not None for a in (VCMALLOC, VCMALLOC_CPU))]
        if vc_rows:
            lines.append("**vcmalloc: per-vCPU caches populated at peak** (CPUs visited by "
                         "the workload threads in brackets)")
            lines.append("")
            lines.append(f"| workload | placement | {VCMALLOC} | {VCMALLOC_CPU} |")
            lines.append("|---|---|---|---|")
            for w, p in vc_rows:
                cells = []
                for a in (VCMALLOC, VCMALLOC_CPU):
                    s = summary.get((machine, w, p, a), {})
                    cells.append(f"{_fmt(s.get('caches_populated_peak'), 1, 0)} "
                                 f"[{_fmt(s.get('cpus_visited'), 1, 0)}]")
                lines.append(f"| {w} | {p} | " + " | ".join(cells) + " |")
            lines.append("")
    return "\n".join(lines)


def _best_peer(summary, machine, workload, placement, key, want_max):
    vals = [(summary[(machine, workload, placement, a)][key], a) for a in PEERS
            if (machine, workload, placement, a) in summary
            and summary[(machine, workload, placement, a)][key] is not None]
    if not vals:
        return None, None
    return max(vals) if want_max else min(vals)


def _unmeasured_peers(summary, machine, workload, placement, key):
    absent = [a for a in PEERS
              if (summary.get((machine, workload, placement, a)) or {}).get(key) is None]
    return f"; peers not measured: {', '.join(absent)}" if absent else ""


def _rss_target(summary, machine, workload, placement, key, label, rows, target):
    vc = summary.get((machine, workload, placement, VCMALLOC), {}).get(key)
    best, who = _best_peer(summary, machine, workload, placement, key, want_max=False)
    where = f"{machine}, {workload}, {placement}"
    if vc is None or best is None:
        rows.append(dict(target=target, where=where, measured="not measured",
                         goal=f"{label} ≤ lowest peer", met=None,
                         miss="no successful run of " +
                              ("vcmalloc" if vc is None else "any peer") + " here"))
        return
    met = vc <= best
    rows.append(dict(target=target, where=where,
                     measured=f"{vc / MIB:.1f} MiB vs {best / MIB:.1f} MiB ({who})" +
                     _unmeasured_peers(summary, machine, workload, placement, key),
                     goal=f"{label} ≤ lowest peer", met=met,
                     miss="" if met else f"{(vc - best) / MIB:.1f} MiB over "
                                         f"(+{100 * (vc / best - 1):.1f}%)"))


def evaluate_targets(summary, machines):
    rows = []
    have_vc = any(k[3] == VCMALLOC for k in summary)
    guests64 = [m for m, meta in machines.items()
                if meta.get("kind") == "guest" and meta.get("vcpus") == 64]
    t1 = "few threads, 64-vCPU guest"
    if not guests64:
        rows.append(dict(target=t1, where="–", measured="not measured", goal="–", met=None,
                         miss="no 64-vCPU guest in this result set (run --full or --vm-cpus 64)"))
    for m in guests64:
        v = summary.get((m, "few", "all", VCMALLOC), {}).get("cache_peak")
        c = summary.get((m, "few", "all", VCMALLOC_CPU), {}).get("cache_peak")
        if v is None or c is None:
            rows.append(dict(target=t1 + ": per-vCPU cache bytes", where=f"{m}, few, all",
                             measured="not measured", goal="vcpu ≤ 1/4 of cpu mode", met=None,
                             miss="vcmalloc cache statistics missing"))
        else:
            limit = c / 4
            met = v <= limit
            rows.append(dict(
                target=t1 + ": peak per-vCPU cache bytes", where=f"{m}, few, all",
                measured=f"vcpu {v / MIB:.2f} MiB, cpu {c / MIB:.2f} MiB "
                         f"(ratio {v / c if c else float('inf'):.3f})",
                goal="vcpu ≤ 1/4 of cpu mode", met=met,
                miss="" if met else f"{(v - limit) / MIB:.2f} MiB over the limit of "
                                    f"{limit / MIB:.2f} MiB (ratio {v / c:.3f} > 0.25)"))
        _rss_target(summary, m, "few", "all", "peak_rss", "peak RSS", rows, t1 + ": peak RSS")

    t2 = "hundreds of threads on 4 CPUs"
    fours = sorted({(m, p) for (m, w, p, a), s in summary.items()
                    if w == "many" and s["allowed_cpus"] == 4})
    if not fours:
        rows.append(dict(target=t2, where="–", measured="not measured", goal="–", met=None,
                         miss="no 'many' run restricted to 4 CPUs (needs a machine with "
                              "more than 4 CPUs: a guest)"))
    for m, p in fours:
        _rss_target(summary, m, "many", p, "peak_rss", "peak RSS", rows, t2 + ": peak RSS")
        _rss_target(summary, m, "many", p, "final_rss", "final RSS", rows, t2 + ": final RSS")

    t3 = "throughput within 5% of the fastest peer"
    for (m, w, p, a), s in sorted(summary.items()):
        if a != VCMALLOC:
            continue
        best, who = _best_peer(summary, m, w, p, "ops_per_sec", want_max=True)
        vc = s["ops_per_sec"]
        where = f"{m}, {w}, {p}"
        if vc is None or best is None:
            rows.append(dict(target=t3, where=where, measured="not measured",
                             goal="≥ 95% of fastest", met=None, miss="no successful run"))
            continue
        frac = vc / best
        met = frac >= 0.95
        rows.append(dict(target=t3, where=where,
                         measured=f"{_fmt(vc, 1e6, 2)} vs {_fmt(best, 1e6, 2)} M/s ({who}): "
                                  f"{100 * frac:.1f}%" +
                                  _unmeasured_peers(summary, m, w, p, "ops_per_sec"),
                         goal="≥ 95% of fastest", met=met,
                         miss="" if met else f"{100 * (0.95 - frac):.1f} points short "
                                             f"({100 * (1 - frac):.1f}% slower than {who})"))
    if not have_vc:
        rows.append(dict(target="all targets", where="–", measured="not measured", goal="–",
                         met=None, miss="vcmalloc was not measured (build/allocator/"
                                        "libvcmalloc.so missing)"))
    return rows


def targets_markdown(rows):
    verdict = {True: "met", False: "**missed**", None: "not measured"}
    lines = ["| target | where | measured | goal | verdict | missed by |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['target']} | {r['where']} | {r['measured']} | {r['goal']} | "
                     f"{verdict[r['met']]} | {r['miss']} |")
    met = sum(1 for r in rows if r["met"] is True)
    missed = sum(1 for r in rows if r["met"] is False)
    unknown = sum(1 for r in rows if r["met"] is None)
    lines.append("")
    lines.append(f"{met} met, {missed} missed, {unknown} not measured.")
    return "\n".join(lines)


def _node_panels(machines):
    """Machines grouped by NUMA node count (the host with its own), in order."""
    groups = {}
    for m, meta in machines.items():
        if meta.get("vcpus"):
            groups.setdefault(meta.get("nodes") or 1, []).append(m)
    return sorted(groups.items())


def _against_cpus(summary, machines, group, w, p, allocators, keys):
    """{allocator: {key: [(cpus, MiB)]}} over the machines of one panel."""
    series = {}
    for a in allocators:
        for m in group:
            s = summary.get((m, w, p, a))
            if not s:
                continue
            for key in keys:
                if s.get(key) is not None:
                    series.setdefault(a, {}).setdefault(key, []).append(
                        (machines[m]["vcpus"], s[key] / MIB))
    return series


def _live_line(summary, machines, group, w, p, allocators):
    pts = []
    for m in group:
        limit = overhead.live_limit(summary, m, w, p,
                                    [a for a in allocators if (m, w, p, a) in summary])
        if limit:
            pts.append((machines[m]["vcpus"], limit["peak_live"] / MIB))
    return pts


def plots(summary, machines, allocators, out_dir):
    """Figures against the machine's CPU count, one panel per NUMA node count: peak RSS
    with the live-data limit and the overhead above it; final RSS; allocator cache
    bytes.  Per machine: peak RSS (live data marked) and overhead of every workload as
    grouped bars.  Returns [(title, [files])]; [] without matplotlib (charts.reason()
    says why)."""
    if charts.load() is None:
        return []
    written = []
    colours = charts.palette(allocators)
    panels_by_nodes = _node_panels(machines)
    cpu_axis = "CPUs of the machine"

    def node_title(nodes, group):
        return f"{nodes} NUMA node{'s' if nodes != 1 else ''} ({', '.join(group)})"

    for w, p in sorted({(w, p) for (_m, w, p, _a) in summary}):
        panels = []
        for nodes, group in panels_by_nodes:
            series = _against_cpus(summary, machines, group, w, p, allocators,
                                   ("peak_rss", "overhead"))
            if not series:
                continue  # this workload/placement did not run on these machines
            panels.append((node_title(nodes, group), series,
                           {"peak_rss": _live_line(summary, machines, group, w, p,
                                                   allocators),
                            "overhead": 0}))
        title = (f"{w} ({p}): peak RSS, and overhead ≈ peak RSS − peak live bytes, "
                 "per NUMA node count")
        files = charts.line_panels(out_dir, f"footprint-{w}-{p}", title,
                                   [("peak RSS, MiB", "peak_rss"),
                                    ("overhead ≈, MiB", "overhead")],
                                   panels, cpu_axis, colours)
        if files:
            written.append((title, files))
        for key, what in (("final_rss", "final RSS"),
                          ("cache_peak", "peak allocator cache bytes")):
            panels = [(node_title(nodes, group), series,
                       {"final_rss": 0} if key == "final_rss" else {})
                      for nodes, group in panels_by_nodes
                      for series in [_against_cpus(summary, machines, group, w, p,
                                                   allocators, (key,))] if series]
            title = f"{w} ({p}): {what}"
            files = charts.line_panels(out_dir, f"{key}-{w}-{p}", title,
                                       [(f"{what}, MiB", key)], panels, cpu_axis, colours)
            if files:
                written.append((title, files))
    for m in machines:
        configs = configurations(summary, m)
        present = [a for a in allocators if any((m, w, p, a) in summary for w, p in configs)]
        if not configs or not present:
            continue

        def column(key, a):
            return [None if (summary.get((m, w, p, a)) or {}).get(key) is None
                    else summary[(m, w, p, a)][key] / MIB for w, p in configs]

        live = []
        for w, p in configs:
            limit = overhead.live_limit(summary, m, w, p, present)
            live.append(limit["peak_live"] / MIB if limit else None)
        title = f"{m}: peak RSS (live data marked) and overhead per workload"
        files = charts.grouped_bars(
            out_dir, f"by-workload-{m}", title, [f"{w}/{p}" for w, p in configs],
            [("peak RSS, MiB", {a: column("peak_rss", a) for a in present}, live),
             ("overhead ≈, MiB", {a: column("overhead", a) for a in present}, None)],
            colours=colours)
        if files:
            written.append((title, files))
    return written
