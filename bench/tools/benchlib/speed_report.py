# SPDX-License-Identifier: MIT
"""Medians, ratios, the Markdown report and the chart of bench/run-speed.

Per workload and allocator: the median of the successful runs' seconds, min and max.
vcmalloc's ratio is its median over the fastest peer's (every allocator not of the
vcmalloc family): above 1, vcmalloc is slower.  Next to it, the paired ratio: in each
repetition the allocators run one workload back to back, so vcmalloc's time over that
peer's time in the same repetition cancels what drifts between repetitions (other
load, frequency); its median and quartiles over the repetitions show how sure the
comparison is.  Two geometric means summarise:
vcmalloc / fastest peer over the workloads, and for every allocator its time over
the fastest allocator's (vcmalloc included), over the workloads every allocator ran.
The chart draws every allocator's median over the fastest peer's, per workload and
as a geometric mean over the workloads every allocator completed.
"""
import math
import statistics

from . import charts


def summarize(records, workloads, allocators, key="seconds"):
    """{(workload, allocator): {median, min, max, runs, failed, errors}} of `key`
    ("seconds": wall time, "cpu_seconds": user + system)."""
    summary = {}
    for w in workloads:
        for a in allocators:
            mine = [r for r in records if r["workload"] == w and r["allocator"] == a]
            times = [r[key] for r in mine if r["status"] == "ok" and r.get(key) is not None]
            errors = sorted({r["error"] for r in mine if r["status"] != "ok" and r["error"]})
            summary[(w, a)] = {
                "median": statistics.median(times) if times else None,
                "min": min(times) if times else None,
                "max": max(times) if times else None,
                "runs": len(times),
                "failed": sum(r["status"] == "failed" for r in mine),
                "skipped": all(r["status"] == "skipped" for r in mine) and bool(mine),
                "extrapolated": any(r.get("extrapolated") for r in mine),
                "errors": errors,
            }
    return summary


def geomean(values):
    values = [v for v in values if v]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def fastest_peer(summary, workload, peers):
    timed = [(summary[(workload, p)]["median"], p) for p in peers
             if summary[(workload, p)]["median"] is not None]
    return min(timed) if timed else (None, None)


def ratios(summary, workloads, vcmallocs, peers):
    """{vcmalloc name: {workload: (ratio, fastest peer)}} where both were measured."""
    out = {}
    for v in vcmallocs:
        out[v] = {}
        for w in workloads:
            best, who = fastest_peer(summary, w, peers)
            mine = summary[(w, v)]["median"]
            if best and mine is not None:
                out[v][w] = (mine / best, who)
    return out


def quartiles(values):
    """(q1, median, q3) of a non-empty list: medians of the lower and upper halves
    (the middle value in neither when the count is odd)."""
    v = sorted(values)
    half = len(v) // 2
    low, high = v[:half] or v, v[len(v) - half:] or v
    return statistics.median(low), statistics.median(v), statistics.median(high)


def paired_ratios(records, summary, workloads, vcmallocs, peers, key="seconds"):
    """{vcmalloc name: {workload: (q1, median, q3, pairs)}}: per repetition where both
    ran, vcmalloc's `key` over the fastest peer's (by median, as in `ratios`)."""
    by_run = {}
    for r in records:
        if r["status"] == "ok" and r.get(key):
            by_run[(r["workload"], r["allocator"], r["repeat"])] = r[key]
    out = {}
    for v in vcmallocs:
        out[v] = {}
        for w in workloads:
            _best, who = fastest_peer(summary, w, peers)
            if who is None:
                continue
            pairs = [t / by_run[(w, who, rep)] for (ww, a, rep), t in by_run.items()
                     if ww == w and a == v and (w, who, rep) in by_run]
            if pairs:
                out[v][w] = (*quartiles(pairs), len(pairs))
    return out


def ratios_to_fastest_peer(summary, workloads, allocators, peers):
    """({allocator: {workload: median / fastest peer median}}, {allocator: geometric
    mean over `common`}, common): common is the workloads where every allocator and
    some peer have a median.  A peer's own ratio is 1 where it is the fastest."""
    per = {a: {} for a in allocators}
    for w in workloads:
        best, _who = fastest_peer(summary, w, peers)
        for a in allocators:
            mine = summary[(w, a)]["median"]
            if best and mine is not None:
                per[a][w] = mine / best
    common = [w for w in workloads if all(w in per[a] for a in allocators)]
    means = {a: geomean([per[a][w] for w in common]) for a in allocators}
    return per, means, common


def plot_ratios(summary, workloads, allocators, peers, out_dir, stem, what):
    """Bars of each allocator's median over the fastest peer's per workload, and their
    geometric mean; a dashed line at 1.  Returns the files written ([] without
    matplotlib: charts.reason() says why)."""
    per, means, common = ratios_to_fastest_peer(summary, workloads, allocators, peers)
    groups = list(workloads) + [f"geo. mean ({len(common)})"]
    series = {a: [per[a].get(w) for w in workloads] + [means[a]] for a in allocators}
    return charts.grouped_bars(out_dir, stem, f"{what} over the fastest peer's "
                               "(below 1: faster than every peer)", groups,
                               [(f"{what} / fastest peer", series, None)], reference=1.0,
                               colours=charts.palette(allocators))


def relative_to_fastest(summary, workloads, allocators):
    """Per allocator, the geometric mean over the workloads that every allocator ran of
    median / fastest median, and how many workloads it was the fastest on."""
    common = [w for w in workloads
              if all(summary[(w, a)]["median"] is not None for a in allocators)]
    rel = {}
    for a in allocators:
        parts, wins = [], 0
        for w in common:
            best = min(summary[(w, b)]["median"] for b in allocators)
            parts.append(summary[(w, a)]["median"] / best)
            wins += summary[(w, a)]["median"] == best
        rel[a] = {"geomean": geomean(parts), "fastest_on": wins}
    return rel, common


def _time(seconds):
    if seconds < 0.01:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e3:.0f} ms" if seconds >= 0.1 else f"{seconds * 1e3:.1f} ms"


def _cell(s, bold, repeat):
    if s["median"] is None:
        if s["skipped"]:
            return "skipped"
        return "failed" if s["failed"] else "–"
    text = ("~" if s["extrapolated"] else "") + _time(s["median"])
    if s["runs"] > 1 and s["median"] > 0:
        text += f" ±{50 * (s['max'] - s['min']) / s['median']:.0f}%"
    elif s["runs"] < repeat:
        text += f" ({s['runs']} run)"
    return f"**{text}**" if bold else text


def _paired_cell(p):
    if not p:
        return "–"
    q1, med, q3, n = p
    return f"{med:.2f} ({q1:.2f}-{q3:.2f})" if n > 1 else f"{med:.2f}"


def _comparison(summary, workloads, allocators, vcmallocs, peers, repeat, what="time",
                paired=None):
    """The table (a row per workload), vcmalloc's geometric means and every allocator's
    geometric mean over the fastest. paired: paired_ratios' result, or None."""
    rat = ratios(summary, [w.name for w in workloads], vcmallocs, peers)
    paired = paired or {}
    head = ["workload", *allocators]
    for v in vcmallocs:
        head += [f"{v} / fastest peer", "fastest peer"]
        if v in paired:
            head.append(f"{v} paired: median (q1-q3)")
    md = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for w in workloads:
        medians = [summary[(w.name, a)]["median"] for a in allocators]
        best = min((m for m in medians if m is not None), default=None)
        row = [w.name] + [_cell(summary[(w.name, a)], summary[(w.name, a)]["median"] == best,
                                repeat)
                          for a in allocators]
        for v in vcmallocs:
            r = rat[v].get(w.name)
            row += [f"{r[0]:.2f}", r[1]] if r else ["–", "–"]
            if v in paired:
                row.append(_paired_cell(paired[v].get(w.name)))
        md.append("| " + " | ".join(row) + " |")
    md.append("")
    speed_names = {w.name for w in workloads if w.kind == "speed"}
    for v in vcmallocs:
        values = rat[v]
        if not values:
            continue
        g = geomean([r for r, _ in values.values()])
        md.append(f"**{v} / fastest peer ({what}), geometric mean over {len(values)} "
                  f"workloads: {g:.2f}** (above 1: slower than the best peer of each "
                  "workload).")
        for label, names in (("speed program", speed_names),
                             ("real programs", set(values) - speed_names)):
            part = [values[w][0] for w in names if w in values]
            if part:
                md.append(f"- {label} only: {geomean(part):.2f} over {len(part)} workloads")
        slower = sorted(((r, w) for w, (r, _) in values.items() if r > 1.05), reverse=True)
        if slower:
            md.append("- more than 5% slower than the fastest peer: " +
                      ", ".join(f"{w} ({r:.2f})" for r, w in slower))
        mine = paired.get(v, {})
        if mine:
            g = geomean([p[1] for p in mine.values()])
            md.append(f"- paired ratios: geometric mean of the medians {g:.2f} over "
                      f"{len(mine)} workloads")
            sure = sorted(((p[0], w) for w, p in mine.items() if p[0] > 1.05), reverse=True)
            md.append("- slower by more than 5% in three quarters of the pairs or more "
                      "(q1 above 1.05): " +
                      (", ".join(f"{w} (q1 {q:.2f})" for q, w in sure) if sure else "none"))
        md.append("")
    rel, common = relative_to_fastest(summary, [w.name for w in workloads], allocators)
    md += [f"Each allocator's {what} over the fastest allocator's, geometric mean over the "
           f"{len(common)} workloads every allocator completed (1.00 = always the fastest):",
           "", f"| allocator | geo mean {what} / fastest | fastest on |", "|---|---|---|"]
    for a in sorted(allocators, key=lambda a: rel[a]["geomean"] or math.inf):
        g = rel[a]["geomean"]
        md.append(f"| {a} | {g:.2f} | {rel[a]['fastest_on']} |" if g else f"| {a} | – | – |")
    md.append("")
    return md


def _chart(files, what):
    if not files:
        return []
    return [f"Each allocator's {what} over the fastest peer's, per workload and as the "
            "geometric mean over the workloads every allocator completed:", "",
            charts.markdown_images([f"plots/{f}" for f in files],
                                   f"{what} over the fastest peer"), ""]


def markdown(summary, cpu_summary, workloads, allocators, families, meta, instructions=None,
             plots=None, paired=None):
    """The report: wall time first (what the comparison is about), then CPU time.
    plots: {"time": files, "cpu": files} of the charts (paths under plots/), or None
    (meta["no_plots"] then says why, if it is set). paired: {"time": ..., "cpu": ...},
    paired_ratios' results for wall and CPU time, or None."""
    plots = plots or {}
    paired = paired or {}
    vcmallocs = [a for a in allocators if families[a] == "vcmalloc"]
    peers = [a for a in allocators if families[a] != "vcmalloc"]
    md = ["# vcmalloc speed next to its peers", "",
          f"{meta['repeat']} interleaved run(s) per allocator and workload, scale "
          f"{meta['scale']}; medians of the wall time of the timed part (speed program) "
          "or of the whole process (real programs).  ±: half the min-max range over the "
          "runs, relative to the median.  Bold: the fastest.  A peer slower than "
          f"{meta['slow_cutoff']}x the fastest in the first repetition runs once only.  "
          f"~: time extrapolated from a run stopped after {meta['max_seconds']} s "
          "(tight workloads).  "
          f"Host: {meta['machine']['cpus']} CPUs, kernel {meta['machine']['kernel']}; "
          f"load average {meta['load_before']:.1f} before, {meta['load_after']:.1f} after.",
          ""]
    vc = meta.get("vcmalloc") or {}
    if vcmallocs and vc.get("library"):
        md += [f"vcmalloc: a copy of `{vc['library']}`, built {vc['built']}; last commit "
               f"to allocator/ or rseq/: {vc['git_head']}" +
               (", with uncommitted changes there"
                if vc.get("uncommitted_allocator_changes") else "") + ".", ""]
    if meta.get("missing"):
        md += [f"Not measured (library missing): {', '.join(meta['missing'])}.", ""]
    md += _comparison(summary, workloads, allocators, vcmallocs, peers, meta["repeat"],
                      paired=paired.get("time"))
    md += _chart(plots.get("time"), "time")
    if meta.get("no_plots"):
        md += [f"No plots: {meta['no_plots']}.", ""]
    failures = [(k, s) for k, s in summary.items() if s["errors"]]
    if failures:
        md += ["Failures and skips:", ""]
        md += [f"- {w} / {a}: {'; '.join(s['errors'])[:300]}" for (w, a), s in failures]
        md.append("")
    md += ["## CPU time", "",
           "User + system CPU seconds: of the timed part for the speed program (all its "
           "threads), of the whole process for the real programs (for redis: the server's). "
           "Less disturbed than wall time when other work shares the machine, but not a "
           "throughput figure for threaded workloads: spinning counts, waiting does not.",
           ""]
    md += _comparison(cpu_summary, workloads, allocators, vcmallocs, peers, meta["repeat"],
                      "CPU time", paired.get("cpu"))
    md += _chart(plots.get("cpu"), "CPU time")
    if instructions:
        md += instructions_markdown(instructions, allocators)
    md.append(f"Total run time: {meta['total_seconds']:.0f} s.")
    return "\n".join(md) + "\n"


def instructions_markdown(inst, allocators):
    rows, method, scale = inst["results"], inst["method"], inst["scale"]
    names = [a for a in allocators if any(r["allocator"] == a for r in rows)]
    md = [f"## Instructions per allocation ({method}, scale {scale})", "",
          "Instructions executed in the timed part divided by its allocations (each with "
          "its free and the workload's own few instructions)."]
    if method == "callgrind":
        md.append("Counted by callgrind: no cache or page-fault costs, threads "
                  "serialised.")
        modes = sorted({r["vcmalloc_index"] for r in rows if r["vcmalloc_index"]})
        if modes and modes != ["vcpu"] and modes != ["cpu"]:
            md.append(f"valgrind has no rseq: vcmalloc ran with index {', '.join(modes)}, "
                      "not its rseq fast path, so its figures here overstate its cost.")
    md += ["", "| workload | " + " | ".join(names) + " |", "|" + "---|" * (len(names) + 1)]
    for w in inst["workloads"]:
        cells = []
        for a in names:
            r = next((r for r in rows if r["workload"] == w and r["allocator"] == a), None)
            cells.append(f"{r['instructions_per_op']:.0f}" if r and r["instructions_per_op"]
                         else "failed")
        md.append(f"| {w} | " + " | ".join(cells) + " |")
    md.append("")
    return md
