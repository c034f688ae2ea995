"""Pictures for the HTML report, as inline SVG (no script, no external request).

`charts_for` draws the rail matrix (every rail measured: its number before the first fix and
after it, against the expected ceiling of its kind) and the NCCL busbw per message size (each
run's sweep against the expected busbw). `fabric_map_for` lays the measured lanes out as a table
coloured by the verdicts that name them. Every text drawn comes from the (possibly redacted)
report data and is escaped here.
"""

from __future__ import annotations

import html
import math
from typing import Any

from markupsafe import Markup

from wizard import safetext

_W = 880
_VALUE_W = 130  # the column of numbers at the right of the rail chart
_LABEL = 290
_BAND = {"pass": "#3a9d4a", "warn": "#d9a300", "fail": "#c8372d", "none": "#8a8a8a"}


def _t(value: object) -> str:
    return html.escape(safetext.clean(value), quote=True)


def band(value: float, expected: float | None, ratios: tuple[float, float]) -> str:
    if expected is None or expected <= 0:
        return "none"
    ratio = value / expected
    return "pass" if ratio >= ratios[0] else "warn" if ratio >= ratios[1] else "fail"


def rail_chart(rails: list[dict[str, Any]], ratios: tuple[float, float]) -> str:
    """One row per rail: a grey bar before the first fix, a coloured bar after it, and a tick
    at the rail's expected ceiling."""
    if not rails:
        return ""
    top = max(
        [r["ceiling"] or 0.0 for r in rails]
        + [r["before"] or 0.0 for r in rails]
        + [r["after"] or 0.0 for r in rails]
        + [1.0]
    )
    scale = (_W - _LABEL - _VALUE_W - 10) / top
    row = 22
    height = 24 + row * len(rails)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{height}" '
        f'viewBox="0 0 {_W} {height}" role="img" aria-label="rail bandwidth against expected">',
        f'<text x="{_LABEL}" y="12">Gb/s: grey before the first fix, coloured after it, '
        "| expected</text>",
    ]
    for i, r in enumerate(rails):
        y = 20 + i * row
        out.append(f'<text x="0" y="{y + 12}">{_t(r["target"])}</text>')
        label = []
        for j, key in enumerate(("before", "after")):
            value = r[key]
            if value is None:
                continue
            colour = _BAND["none"] if key == "before" else _BAND[band(value, r["ceiling"], ratios)]
            width = max(1.0, value * scale)
            out.append(
                f'<rect x="{_LABEL}" y="{y + 2 + j * 8}" width="{width:.1f}" height="7" '
                f'fill="{colour}"><title>{_t(key)}: {value:.2f} Gb/s</title></rect>'
            )
            label.append(f"{value:.1f}")
        if r["ceiling"]:
            x = _LABEL + r["ceiling"] * scale
            out.append(
                f'<line x1="{x:.1f}" y1="{y}" x2="{x:.1f}" y2="{y + 18}" stroke="#000" '
                f'stroke-width="1.5"><title>expected {r["ceiling"]:.2f} Gb/s</title></line>'
            )
        shown = " → ".join(label) + (f" / {r['ceiling']:.0f}" if r["ceiling"] else "")
        out.append(f'<text x="{_W - _VALUE_W}" y="{y + 12}">{_t(shown)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def nccl_chart(runs: list[dict[str, Any]], expected: float | None) -> str:
    """busbw (GB/s) against message size (log scale), one line per run, the expected busbw as
    a dashed line."""
    runs = [r for r in runs if r["points"]]
    if not runs:
        return ""
    sizes = [p[0] for r in runs for p in r["points"]]
    lo, hi = math.log2(min(sizes)), math.log2(max(sizes))
    span = (hi - lo) or 1.0
    top = max([p[1] for r in runs for p in r["points"]] + [expected or 0.0, 1.0]) * 1.1
    left, bottom, width, height = 50, 200, _W - 70, 180
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="240" '
        f'viewBox="0 0 {_W} 240" role="img" aria-label="NCCL busbw by message size">',
        f'<line x1="{left}" y1="{bottom}" x2="{left + width}" y2="{bottom}" stroke="#999"/>',
        f'<line x1="{left}" y1="{bottom}" x2="{left}" y2="{bottom - height}" stroke="#999"/>',
        f'<text x="0" y="{bottom - height + 4}">{top:.0f} GB/s</text>',
        f'<text x="0" y="{bottom}">0</text>',
        f'<text x="{left}" y="{bottom + 16}">{_t(_size(min(sizes)))}</text>',
        f'<text x="{left + width - 40}" y="{bottom + 16}">{_t(_size(max(sizes)))}</text>',
    ]
    if expected:
        y = bottom - expected / top * height
        out.append(
            f'<line x1="{left}" y1="{y:.1f}" x2="{left + width}" y2="{y:.1f}" stroke="#000" '
            f'stroke-dasharray="4 3"><title>expected {expected:.2f} GB/s</title></line>'
        )
        out.append(f'<text x="{left + width - 150}" y="{y - 4:.1f}">expected {expected:.2f}</text>')
    colours = ["#8a8a8a", "#1f6fb2", "#3a9d4a", "#c8372d"]
    for i, r in enumerate(runs):
        pts = " ".join(
            f"{left + (math.log2(s) - lo) / span * width:.1f},{bottom - b / top * height:.1f}"
            for s, b in r["points"]
        )
        colour = colours[i % len(colours)]
        out.append(
            f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="2">'
            f"<title>{_t(r['label'])}</title></polyline>"
        )
        out.append(
            f'<text x="{left + 8}" y="{bottom + 32 + 0 * i}" dx="{i * 250}" fill="{colour}">'
            f"{_t(r['label'])}</text>"
        )
    out.append("</svg>")
    return "\n".join(out)


def _size(n: float) -> str:
    for unit, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= div:
            return f"{n / div:g}{unit}"
    return f"{n:g}B"


def charts_for(data: dict[str, Any]) -> dict[str, Markup]:
    charts = data.get("charts") or {}
    ratios = tuple(charts.get("ratios") or (0.9, 0.75))
    return {
        "rails": Markup(rail_chart(charts.get("rails", []), (ratios[0], ratios[1]))),  # noqa: S704
        "nccl": Markup(nccl_chart(charts.get("nccl", []), charts.get("nccl_expected"))),  # noqa: S704
    }


def fabric_map_for(data: dict[str, Any]) -> dict[str, Any] | None:
    """Per node and measured lane: half, netdev, the far end, the last Gb/s, each cell coloured
    by the worst verdict whose evidence names that node or lane (none: not judged)."""
    if data.get("fabric_map"):
        return dict(data["fabric_map"])  # the full lanes, rebuilt from the log by the caller
    lanes = (data.get("charts") or {}).get("lanes") or []
    if not lanes:
        return None
    rows = []
    for lane in lanes:
        st = lane["status"]
        rows.append(
            [
                {"text": lane["node"], "status": lane["node_status"]},
                {"text": lane["half"], "status": st},
                {"text": lane["netdev"], "status": st},
                {"text": lane["peer"], "status": st},
                {"text": lane["gbps"], "status": lane["band"]},
                {"text": lane["verdict"], "status": st},
            ]
        )
    return {
        "headers": ["Node", "Half", "Netdev", "Far end", "Last Gb/s", "Worst verdict"],
        "rows": rows,
    }


__all__ = ["band", "charts_for", "fabric_map_for", "nccl_chart", "rail_chart"]
