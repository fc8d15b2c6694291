# SPDX-License-Identifier: MIT
"""Small SVG charts written by hand: a line chart (log2 x axis, for CPU counts) and a
grouped bar chart.  No plotting library is needed to produce or to view them."""
import math
from xml.sax.saxutils import escape

PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf"]
W, H = 760, 440
LEFT, RIGHT, TOP, BOTTOM = 80, 190, 40, 60


def _nice_max(value):
    if value <= 0:
        return 1.0
    exp = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if step * exp >= value:
            return step * exp
    return 10 * exp


def _frame(title, xlabel, ylabel, ymax):
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
             f'font-family="sans-serif" font-size="12">',
             f'<rect width="{W}" height="{H}" fill="white"/>',
             f'<text x="{W / 2 - RIGHT / 2}" y="22" text-anchor="middle" font-size="15">'
             f'{escape(title)}</text>',
             f'<text x="{LEFT + (W - LEFT - RIGHT) / 2}" y="{H - 15}" text-anchor="middle">'
             f'{escape(xlabel)}</text>',
             f'<text transform="translate(18,{TOP + (H - TOP - BOTTOM) / 2}) rotate(-90)" '
             f'text-anchor="middle">{escape(ylabel)}</text>']
    plot_h = H - TOP - BOTTOM
    for i in range(6):
        v = ymax * i / 5
        y = TOP + plot_h - plot_h * i / 5
        parts.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{W - RIGHT}" y2="{y:.1f}" '
                     f'stroke="#ddd"/>')
        parts.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{v:g}</text>')
    parts.append(f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{W - RIGHT}" y2="{TOP + plot_h}" '
                 f'stroke="black"/>')
    parts.append(f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + plot_h}" stroke="black"/>')
    return parts


def _legend(parts, names):
    for i, name in enumerate(names):
        y = TOP + 10 + 18 * i
        color = PALETTE[i % len(PALETTE)]
        parts.append(f'<rect x="{W - RIGHT + 15}" y="{y - 9}" width="12" height="12" '
                     f'fill="{color}"/>')
        parts.append(f'<text x="{W - RIGHT + 32}" y="{y + 1}">{escape(name)}</text>')


def line_chart(path, title, xlabel, ylabel, series):
    """series: {name: [(x, y), ...]} with x > 0 (drawn on a log2 axis)."""
    xs = sorted({x for points in series.values() for x, _ in points})
    ys = [y for points in series.values() for _, y in points]
    if not xs:
        return False
    ymax = _nice_max(max(ys) if ys else 1)
    parts = _frame(title, xlabel, ylabel, ymax)
    plot_w, plot_h = W - LEFT - RIGHT, H - TOP - BOTTOM
    lo, hi = math.log2(min(xs)), math.log2(max(xs))

    def px(x):
        if hi == lo:
            return LEFT + plot_w / 2
        return LEFT + 20 + (plot_w - 40) * (math.log2(x) - lo) / (hi - lo)

    def py(y):
        return TOP + plot_h - plot_h * y / ymax

    for x in xs:
        parts.append(f'<text x="{px(x):.1f}" y="{TOP + plot_h + 18}" text-anchor="middle">'
                     f'{x:g}</text>')
    names = list(series)
    for i, name in enumerate(names):
        color = PALETTE[i % len(PALETTE)]
        points = sorted(series[name])
        if len(points) > 1:
            d = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in points)
            parts.append(f'<polyline points="{d}" fill="none" stroke="{color}" '
                         f'stroke-width="2"/>')
        for x, y in points:
            parts.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3.5" fill="{color}">'
                         f'<title>{escape(name)}: {y:.3g} at {x:g}</title></circle>')
    _legend(parts, names)
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts) + "\n")
    return True


def bar_chart(path, title, ylabel, groups, series):
    """groups: labels along x; series: {name: [value or None per group]}."""
    values = [v for vals in series.values() for v in vals if v is not None]
    if not groups or not values:
        return False
    ymax = _nice_max(max(values))
    parts = _frame(title, "", ylabel, ymax)
    plot_w, plot_h = W - LEFT - RIGHT, H - TOP - BOTTOM
    group_w = plot_w / len(groups)
    names = list(series)
    bar_w = group_w * 0.8 / max(1, len(names))
    for g, label in enumerate(groups):
        x0 = LEFT + g * group_w + group_w * 0.1
        parts.append(f'<text x="{LEFT + g * group_w + group_w / 2:.1f}" y="{TOP + plot_h + 18}" '
                     f'text-anchor="middle">{escape(label)}</text>')
        for i, name in enumerate(names):
            v = series[name][g]
            if v is None:
                continue
            h = plot_h * v / ymax
            parts.append(f'<rect x="{x0 + i * bar_w:.1f}" y="{TOP + plot_h - h:.1f}" '
                         f'width="{bar_w * 0.9:.1f}" height="{h:.1f}" '
                         f'fill="{PALETTE[i % len(PALETTE)]}"><title>{escape(name)} '
                         f'{escape(label)}: {v:.3g}</title></rect>')
    _legend(parts, names)
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts) + "\n")
    return True
