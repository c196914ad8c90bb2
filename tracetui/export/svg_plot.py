"""Static SVG charts for the HTML report: bars (and optional lines) over equal slots, with
marks under the axis, drawn as plain ``<rect>``/``<polyline>``/``<text>`` (no script, no
fonts fetched).  A chart of more slots than :data:`MAX_BARS` keeps the highest value of each
group of slots, so a peak is never lost (as the terminal's plots do).

Every text is trace text made safe (:func:`tracetui.errors.one_line`), then escaped for XML."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from html import escape

import numpy as np

from ..errors import one_line

#: the most bars a chart draws
MAX_BARS = 600
WIDTH, HEIGHT = 720, 170
LEFT, RIGHT, TOP, BOTTOM = 64, 8, 12, 36
BAR_COLOUR, LINE_COLOURS, MARK_COLOUR = "#4c78a8", ("#f58518", "#54a24b"), "#d62728"


@dataclass
class Chart:
    """``bars`` (one value per slot) under ``y_text`` labels from 0 to ``y_max`` (default: the
    highest value); ``lines``: (label, values per slot); ``marks``: (slot, glyph);
    ``x_left``/``x_right``: the labels of the axis's ends; ``title``: the chart's ``<title>``."""

    title: str
    bars: np.ndarray
    y_text: Callable[[float], str]
    x_left: str
    x_right: str
    lines: list[tuple[str, np.ndarray]] = field(default_factory=list)
    marks: list[tuple[int, str]] = field(default_factory=list)
    y_max: float | None = None
    bar_label: str = ""


def _t(text: str) -> str:
    return escape(one_line(text))


def _grouped(values: np.ndarray, groups: int) -> np.ndarray:
    """The highest value of each of ``groups`` near-equal runs of ``values``."""
    if values.size <= groups:
        return values.astype(np.float64)
    cuts = np.linspace(0, values.size, groups + 1).astype(np.int64)
    return np.maximum.reduceat(values.astype(np.float64), cuts[:-1])


def render_svg(chart: Chart) -> str:
    """The chart as one ``<svg>`` element, inline in an HTML page (no ``xmlns``: the page links nowhere)."""
    n = int(chart.bars.size)
    slots = min(n, MAX_BARS)
    bars = _grouped(np.nan_to_num(chart.bars), max(slots, 1))
    lines = [(label, _grouped(np.nan_to_num(v), max(slots, 1))) for label, v in chart.lines]
    top = chart.y_max if chart.y_max is not None else max([float(bars.max()) if bars.size else 0.0,
                                                            *(float(v.max()) for _, v in lines if v.size), 0.0])
    top = top if top > 0 else 1.0
    pw, ph = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot_w = pw / max(slots, 1)

    def y(v: float) -> float:
        return TOP + ph * (1.0 - min(max(v / top, 0.0), 1.0))

    out = [f'<svg viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" '
           f'height="{HEIGHT}" role="img" font-family="sans-serif" font-size="11">',
           f"<title>{_t(chart.title)}</title>"]
    for k, v in enumerate(bars.tolist()):
        if v > 0:
            yv = y(v)
            out.append(f'<rect x="{LEFT + k * slot_w:.1f}" y="{yv:.1f}" width="{max(slot_w - 0.3, 0.5):.1f}" '
                       f'height="{TOP + ph - yv:.1f}" fill="{BAR_COLOUR}"/>')
    for (label, v), colour in zip(lines, LINE_COLOURS):
        pts = []
        for k, val in enumerate(v.tolist()):
            yv = y(val)
            pts.append(f"{LEFT + k * slot_w:.1f},{yv:.1f} {LEFT + (k + 1) * slot_w:.1f},{yv:.1f}")
        out.append(f'<polyline points="{" ".join(pts)}" fill="none" stroke="{colour}" stroke-width="1.5">'
                   f"<title>{_t(label)}</title></polyline>")
    base = TOP + ph
    out.append(f'<line x1="{LEFT}" y1="{base}" x2="{LEFT + pw}" y2="{base}" stroke="#59636e"/>')
    out.append(f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{base}" stroke="#59636e"/>')
    out.append(f'<text x="{LEFT - 4}" y="{TOP + 8}" text-anchor="end">{_t(chart.y_text(top))}</text>')
    out.append(f'<text x="{LEFT - 4}" y="{base}" text-anchor="end">{_t(chart.y_text(0.0))}</text>')
    out.append(f'<text x="{LEFT}" y="{base + 26}">{_t(chart.x_left)}</text>')
    out.append(f'<text x="{LEFT + pw}" y="{base + 26}" text-anchor="end">{_t(chart.x_right)}</text>')
    for slot, glyph in chart.marks:
        k = int(slot * slots / n) if n else 0
        out.append(f'<text x="{LEFT + (k + 0.5) * slot_w:.1f}" y="{base + 13}" text-anchor="middle" '
                   f'fill="{MARK_COLOUR}" font-weight="bold">{_t(glyph)}</text>')
    legend = [(chart.bar_label, BAR_COLOUR)] if chart.bar_label else []
    legend += [(label, colour) for (label, _), colour in zip(lines, LINE_COLOURS)]
    x = LEFT + pw * 0.3
    for label, colour in legend:
        out.append(f'<rect x="{x:.0f}" y="{base + 18}" width="10" height="10" fill="{colour}"/>'
                   f'<text x="{x + 14:.0f}" y="{base + 27}">{_t(label)}</text>')
        x += 20 + 7 * len(label)
    out.append("</svg>")
    return "".join(out)
