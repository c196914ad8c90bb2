"""Detail-pane rows of a counter event: a CUPTI profiler range (``cuda_profiler_range``), a
``hardware_counters``/``mtia_counters`` event or a ``C`` sample.

Per numeric arg (:mod:`tracetui.kineto.counters`): the counter's name, then its value as
the trace wrote it (exact integers, thousands separators) and its share of that counter's
total over the whole trace (how much of, say, all FFMA instructions this range executed).
Names are trace data: plain text, never markup.
"""

from __future__ import annotations

from typing import Any

from rich.console import RenderableType

from ... import units
from ...kineto.counters import counters_of
from ...kineto.trace import KinetoTrace
from .detail_section import DetailSection
from .keep_text import KeepText


def _value(v: Any) -> str:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    return format(v, ",")


def _arg_key(name: str, base: str, is_c: bool) -> str:
    """The args key of a series name (``C`` series are ``"<event name>: <key>"``)."""
    return name[len(base) + 2:] if is_c and name.startswith(base + ": ") else name


def counter_sections(kt: KinetoTrace, ev: int) -> list[DetailSection]:
    """The ``Counters`` section of event ``ev``; [] when it carries no counter samples."""
    c = counters_of(kt)
    samples = c.of_event(ev)
    if not samples:
        return []
    args = kt.args(ev)
    totals = c.series_totals()
    is_c = kt.ph[ev] == ord("C")
    what = "counter sample" if is_c else f"{len(samples)} counters over this range"
    base = kt.names[kt.name_id[ev]] if is_c else ""
    texts = [_value(args.get(_arg_key(name, base, is_c), value)) for name, value in samples]
    width = max(map(len, texts))
    # two lines per counter: its name (CUPTI metric names are long single words, so a
    # table would cut the values), then its value and share, aligned
    lines: list[RenderableType] = []
    for (name, value), text in zip(samples, texts):
        total = totals.get(name, 0.0)
        share = f"{100.0 * value / total:.1f}{units.PCT} of its total" if total else "its total is 0"
        lines.append(KeepText(name, style="bold", overflow="fold"))
        line = KeepText(f"  {text:>{width}}  ")
        line.append(share, style="dim")
        lines.append(line)
    return [DetailSection(f"Counters ({what})", lines)]
