# SPDX-License-Identifier: MIT
"""Overhead over live data: what an allocator's memory costs above the bytes the
workload holds.

The footprint program counts the requested sizes of the objects alive at once and
reports their peak (live_bytes_peak); every page of every object is written, so no
allocator can have a peak RSS below it.  Per configuration (machine, workload,
placement, allocator), from the medians over the repeats:

  overhead ≈ peak RSS − peak live bytes

Approximate: the two peaks need not fall at the same instant, and RSS also holds what
the process has before any allocation (program, libraries; shown as the RSS at start)
and the workload's thread stacks and pointer arrays.  The row "live data (limit)" is
the physical limit: an allocator without any overhead would have a peak RSS equal to
the live bytes (overhead 0) and keep nothing once every object is freed (final live
bytes: 0).  Ratios are to the peers (glibc, jemalloc, jemalloc-percpu, mimalloc,
tcmalloc): overhead over the smallest peer overhead, final RSS over the smallest peer
final RSS (vcmalloc is never its own reference)."""
from . import tables

MIB = 2 ** 20
LIVE_ROW = "live data (limit)"
# Sizes in MiB (said in the note above the tables).
HEADERS = ["workload", "placement", "allocator", "peak RSS", "peak live", "overhead≈",
           "overhead / best peer", "final RSS", "final / smallest peer", "RSS at start"]


def _smallest(values):
    """(value, name) of the smallest non-None value of {name: value}, or (None, None)."""
    present = [(v, n) for n, v in values.items() if v is not None]
    return min(present) if present else (None, None)


def _ratio(value, base):
    if value is None or base is None or base <= 0:
        return None
    return value / base


def add_overhead(summary, peers):
    """Adds to every summary entry: overhead, best_peer / best_peer_overhead and
    overhead_ratio_to_best_peer, smallest_peer_final / smallest_peer_final_rss and
    final_rss_ratio_to_smallest_peer (None where a figure is missing)."""
    for s in summary.values():
        live, rss = s.get("peak_live"), s.get("peak_rss")
        s["overhead"] = rss - live if rss is not None and live is not None else None
    for (m, w, p, a), s in summary.items():
        same = {b: summary.get((m, w, p, b)) for b in peers}
        best, who = _smallest({b: t["overhead"] for b, t in same.items() if t})
        small, small_who = _smallest({b: t["final_rss"] for b, t in same.items() if t})
        s["best_peer"], s["best_peer_overhead"] = who, best
        s["overhead_ratio_to_best_peer"] = _ratio(s["overhead"], best)
        s["smallest_peer_final"], s["smallest_peer_final_rss"] = small_who, small
        s["final_rss_ratio_to_smallest_peer"] = _ratio(s["final_rss"], small)


def live_limit(summary, machine, workload, placement, allocators):
    """The limit row's figures: the median live peak of the allocators' runs (they run
    the same seeded work; threads interleave differently, so the peaks differ a
    little), final live bytes, and the ratio of 0 overhead to the best peer's."""
    entries = [summary[(machine, workload, placement, a)] for a in allocators
               if (machine, workload, placement, a) in summary]
    lives = sorted(e["peak_live"] for e in entries if e.get("peak_live") is not None)
    if not lives:
        return None
    finals = [e["live_final"] for e in entries if e.get("live_final") is not None]
    peak = lives[len(lives) // 2] if len(lives) % 2 else \
        (lives[len(lives) // 2 - 1] + lives[len(lives) // 2]) / 2
    best = next((e["best_peer_overhead"] for e in entries
                 if e.get("best_peer_overhead") is not None), None)
    return {"peak_live": peak, "overhead": 0, "final_live": max(finals) if finals else None,
            "overhead_ratio_to_best_peer": _ratio(0, best)}


def _mib(value):
    return "–" if value is None else f"{value / MIB:.1f}"


def _times(value):
    return "–" if value is None else f"{value:.2f}"


def rows(summary, machine, configs, allocators):
    """The table's rows for one machine: per workload/placement, the limit first, then
    every allocator measured there."""
    out = []
    for w, p in configs:
        present = [a for a in allocators if (machine, w, p, a) in summary]
        if not present:
            continue
        cpus = next((summary[(machine, w, p, a)].get("cpus") for a in present
                     if summary[(machine, w, p, a)].get("cpus")), None)
        place = p + (f" [{cpus}]" if cpus else "")
        limit = live_limit(summary, machine, w, p, present)
        if limit:
            out.append([w, place, LIVE_ROW, _mib(limit["peak_live"]),
                        _mib(limit["peak_live"]), _mib(0), _times(
                            limit["overhead_ratio_to_best_peer"]),
                        _mib(limit["final_live"]), "–", "–"])
        for a in present:
            s = summary[(machine, w, p, a)]
            if s.get("ops_per_sec") is None:
                out.append([w, place, a] + ["failed"] + ["–"] * 6)
                continue
            out.append([w, place, a, _mib(s.get("peak_rss")), _mib(s.get("peak_live")),
                        _mib(s.get("overhead")),
                        _times(s.get("overhead_ratio_to_best_peer")),
                        _mib(s.get("final_rss")),
                        _times(s.get("final_rss_ratio_to_smallest_peer")),
                        _mib(s.get("start_rss"))])
    return out


def records(summary, machines, configs_of, allocators):
    """The same table as JSON objects (results.json "overhead"), numbers in bytes,
    the limit rows with allocator LIVE_ROW."""
    out = []
    for m in machines:
        for w, p in configs_of(m):
            present = [a for a in allocators if (m, w, p, a) in summary]
            limit = live_limit(summary, m, w, p, present) if present else None
            if limit:
                out.append(dict(machine=m, workload=w, placement=p, allocator=LIVE_ROW,
                                peak_rss=limit["peak_live"], peak_live=limit["peak_live"],
                                overhead=0, overhead_ratio_to_best_peer=limit[
                                    "overhead_ratio_to_best_peer"],
                                final_rss=limit["final_live"],
                                final_rss_ratio_to_smallest_peer=None, start_rss=None))
            for a in present:
                s = summary[(m, w, p, a)]
                out.append(dict(machine=m, workload=w, placement=p, allocator=a,
                                **{k: s.get(k) for k in (
                                    "peak_rss", "peak_live", "overhead",
                                    "overhead_ratio_to_best_peer", "final_rss",
                                    "final_rss_ratio_to_smallest_peer", "start_rss",
                                    "best_peer", "smallest_peer_final")}))
    return out


def render(summary, machines, configs_of, allocators, fmt):
    """Per machine a heading and the table, as Markdown (fmt "md") or text."""
    parts = []
    for m in machines:
        body = rows(summary, m, configs_of(m), allocators)
        if not body:
            continue
        desc = machines[m].get("description", "")
        if fmt == "md":
            parts += [f"### {m}: {desc}", "", tables.markdown(HEADERS, body), ""]
        else:
            parts += [f"{m}: {desc}", "", tables.text(HEADERS, body), ""]
    return "\n".join(parts)
