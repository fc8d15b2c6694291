# SPDX-License-Identifier: MIT
"""Charts drawn with matplotlib (Debian's python3-matplotlib, Agg backend: no display,
no network, DejaVu fonts from Debian) and written twice, as PNG and as SVG.

Two shapes serve every report: line panels (a figure against the machine's CPU count,
one line per allocator, one panel per group of machines) and grouped bars (one group
per workload, one bar per allocator).  An axis switches to a log scale when its
positive values span more than LOG_SPAN; a reference line (the limit, or ratio 1) is
drawn where given.

Without matplotlib, load() says why and every drawing function returns no file: the
reports still write their tables and print the reason once.
"""
import importlib.machinery
import os
import sys

# Debian installs python3-matplotlib here; an interpreter of the same ABI (e.g. a
# pyenv build of the same Python version) can use it when it has none of its own.
DEBIAN_PACKAGES = "/usr/lib/python3/dist-packages"
LOG_SPAN = 20.0
FORMATS = ("png", "svg")
COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
          "#7f7f7f", "#bcbd22", "#17becf"]

_pyplot = None
_why_not = None


def _debian_matplotlib_fits():
    """True if Debian's matplotlib has compiled modules for this interpreter's ABI."""
    folder = os.path.join(DEBIAN_PACKAGES, "matplotlib")
    if not os.path.isdir(folder) or DEBIAN_PACKAGES in sys.path:
        return False
    own = [s for s in importlib.machinery.EXTENSION_SUFFIXES if s.startswith(".cpython")]
    return any(name.endswith(suffix) for name in os.listdir(folder) for suffix in own)


def load():
    """pyplot with the Agg backend, or None; reason() then says why."""
    global _pyplot, _why_not
    if _pyplot or _why_not:
        return _pyplot
    try:
        import matplotlib
    except ImportError:
        matplotlib = None
        if _debian_matplotlib_fits():
            sys.path.append(DEBIAN_PACKAGES)
            try:
                import matplotlib
            except ImportError:
                matplotlib = None
    if matplotlib is None:
        _why_not = ("matplotlib is not installed for " + sys.executable +
                    " (Debian: apt-get install python3-matplotlib, which .ci/deps does)")
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as pyplot
    # Same input, same bytes: no date in the files, fixed SVG ids; text drawn as paths
    # so that the SVG needs no font where it is viewed.
    pyplot.rcParams.update({"svg.hashsalt": "vcmalloc-bench", "svg.fonttype": "path",
                            "font.family": "DejaVu Sans", "font.size": 9})
    _pyplot = pyplot
    return _pyplot


def reason():
    return _why_not


def color(index):
    return COLORS[index % len(COLORS)]


def wants_log(values):
    positive = [v for v in values if v is not None and v > 0]
    if len(positive) != len([v for v in values if v is not None]) or not positive:
        return False
    return max(positive) / min(positive) > LOG_SPAN


def _log_y(ax):
    """A log y axis labelled at 1, 2 and 5 times the powers of ten, in plain numbers."""
    from matplotlib import ticker
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(ticker.FormatStrFormatter("%g"))
    ax.yaxis.set_minor_formatter(ticker.NullFormatter())


def save(fig, out_dir, stem):
    """Writes stem.png and stem.svg; returns their names."""
    pyplot = load()
    os.makedirs(out_dir, exist_ok=True)
    names = []
    for fmt in FORMATS:
        name = f"{stem}.{fmt}"
        fig.savefig(os.path.join(out_dir, name), format=fmt, dpi=110,
                    bbox_inches="tight", metadata={"Date": None} if fmt == "svg" else None)
        names.append(name)
    pyplot.close(fig)
    return names


def palette(names):
    """{name: colour} in the order given: one allocator keeps its colour in every chart."""
    return {n: color(i) for i, n in enumerate(names)}


def _ordered(names, colours):
    known = [n for n in colours if n in names]
    return known + sorted(n for n in names if n not in colours)


def line_panels(out_dir, stem, title, rows, panels, xlabel, colours=None):
    """A grid of line charts against CPU counts.

    rows:   [(ylabel, key)], one row of panels per measure
    panels: [(panel title, {series name: {key: [(cpus, value), ...]}}, {key: limit
            series [(cpus, value)] or a constant, drawn dashed in black})]
    colours: {series name: colour} (palette()), which also orders the legend
    Returns the files written ([] without matplotlib or data)."""
    pyplot = load()
    if pyplot is None:
        return []
    if not any(pts for _t, series, _l in panels for s in series.values()
               for pts in s.values()):
        return []
    colours = colours or {}
    fig, axes = pyplot.subplots(len(rows), len(panels), squeeze=False,
                                figsize=(4.2 * len(panels) + 2.2, 3.2 * len(rows)))
    names = _ordered({n for _t, series, _l in panels for n in series}, colours)
    colours = {n: colours.get(n) or color(i) for i, n in enumerate(names)}
    for c, (panel_title, series, limits) in enumerate(panels):
        for r, (ylabel, key) in enumerate(rows):
            ax = axes[r][c]
            xs = set()
            values = []
            for name in names:
                pts = sorted(series.get(name, {}).get(key, []))
                pts = [(x, y) for x, y in pts if y is not None]
                if not pts:
                    continue
                xs |= {x for x, _ in pts}
                values += [y for _, y in pts]
                ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o",
                        color=colours[name], label=name)
            limit = limits.get(key)
            if isinstance(limit, list) and limit:
                limit = sorted(limit)
                # a wide dash at each point: visible also where there is only one
                ax.plot([x for x, _ in limit], [y for _, y in limit], linestyle="--",
                        marker="_", markersize=22, markeredgewidth=2, color="black",
                        label="live data (limit)")
                values += [y for _, y in limit]
                limit = None
            log_y = wants_log(values)
            # A constant limit (overhead 0) is drawn unless a log axis cannot show it.
            limit_note, limit_drawn = "", False
            if limit is not None and not (log_y and limit <= 0):
                limit_drawn = True
                ax.axhline(limit, linestyle="--", color="black", linewidth=1,
                           label=f"limit: {limit:g}")
                values.append(limit)
                log_y = wants_log(values)
            elif limit is not None:
                limit_note = f", limit {limit:g} below"
            if len(xs) > 1:
                ax.set_xscale("log", base=2)
            if xs:
                ax.set_xticks(sorted(xs))
                ax.set_xticklabels([f"{x:g}" for x in sorted(xs)])
                ax.minorticks_off()
            if log_y:
                _log_y(ax)
            elif values and min(values) >= 0:
                ax.set_ylim(bottom=0)
            if limit_drawn and not log_y:
                # keep a limit at the bottom off the axis line, where it would vanish
                low, high = ax.get_ylim()
                ax.set_ylim(bottom=min(low, limit - 0.04 * (high - limit)))
            ax.set_ylabel(ylabel + (f" (log{limit_note})" if log_y else ""))
            if r == 0:
                ax.set_title(panel_title)
            if r == len(rows) - 1:
                ax.set_xlabel(xlabel + (" (log)" if len(xs) > 1 else ""))
            ax.grid(True, which="major", alpha=0.3)
    handles, labels = {}, []
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in handles:
                handles[lab] = h
                labels.append(lab)
    fig.legend([handles[lab] for lab in labels], labels, loc="center left",
               bbox_to_anchor=(1.0, 0.5), frameon=False)
    fig.suptitle(title)
    fig.tight_layout()
    return save(fig, out_dir, stem)


def grouped_bars(out_dir, stem, title, groups, rows, reference=None, colours=None):
    """Grouped bar charts stacked in rows sharing the groups along x.

    groups: labels along x
    rows:   [(ylabel, {series name: [value or None per group]}, markers)] where markers
            is None or [value or None per group]: a black bar across the group (a limit)
    reference: a y value drawn as a dashed line in every row (e.g. 1 for ratios)
    colours: {series name: colour} (palette())
    Returns the files written ([] without matplotlib or data)."""
    pyplot = load()
    if pyplot is None or not groups:
        return []
    if not any(v is not None for _y, series, _m in rows for vals in series.values()
               for v in vals):
        return []
    width = max(6.0, 0.22 * len(groups) * max(len(s) for _y, s, _m in rows) + 2.5)
    fig, axes = pyplot.subplots(len(rows), 1, squeeze=False,
                                figsize=(min(width, 30.0), 3.4 * len(rows)))
    for r, (ylabel, series, markers) in enumerate(rows):
        ax = axes[r][0]
        names = list(series)
        shades = {n: (colours or {}).get(n) or color(i) for i, n in enumerate(names)}
        bar = 0.8 / max(1, len(names))
        values = []
        for i, name in enumerate(names):
            xs = [g + (i - (len(names) - 1) / 2) * bar
                  for g, v in enumerate(series[name]) if v is not None]
            ys = [v for v in series[name] if v is not None]
            if not ys:
                continue  # nothing measured: no bar, no legend entry
            values += ys
            ax.bar(xs, ys, width=bar * 0.92, color=shades[name], label=name)
        if markers:
            first = True
            for g, m in enumerate(markers):
                if m is None:
                    continue
                ax.hlines(m, g - 0.45, g + 0.45, colors="black", linewidth=2,
                          label="live data (limit)" if first else None)
                values.append(m)
                first = False
        if reference is not None:
            ax.axhline(reference, linestyle="--", color="black", linewidth=1)
            values.append(reference)
        log_y = wants_log(values)
        if log_y:
            _log_y(ax)
        ax.set_ylabel(ylabel + (" (log)" if log_y else ""))
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels(groups, rotation=35 if len(groups) > 6 else 0,
                           ha="right" if len(groups) > 6 else "center")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
    axes[0][0].set_title(title)
    fig.tight_layout()
    return save(fig, out_dir, stem)


def markdown_images(files, alt):
    """Markdown that shows the PNG of a chart and links its SVG (paths relative to the
    report)."""
    png = next((f for f in files if f.endswith(".png")), None)
    svg = next((f for f in files if f.endswith(".svg")), None)
    if not png:
        return ""
    return f"![{alt}]({png})" + (f" ([SVG]({svg}))" if svg else "")
