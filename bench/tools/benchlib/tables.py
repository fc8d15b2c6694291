# SPDX-License-Identifier: MIT
"""One table, two renderings: Markdown (the reports) and aligned plain text (what the
scripts print).  Cells are strings; a cell that reads as a number is right-aligned in
the text rendering."""


def _numeric(cell):
    text = cell.strip().rstrip("x%").replace("−", "-")
    try:
        float(text)
        return True
    except ValueError:
        return text in ("–", "")


def markdown(headers, rows):
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def text(headers, rows):
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(headers)]
    right = [all(_numeric(r[i]) for r in rows) and any(r[i].strip() not in ("", "–")
                                                          for r in rows)
             for i in range(len(headers))]

    def line(cells):
        return "  ".join(c.rjust(w) if rj else c.ljust(w)
                         for c, w, rj in zip(cells, widths, right)).rstrip()

    out = [line(headers), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in rows]
    return "\n".join(out)
