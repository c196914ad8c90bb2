"""The building blocks of the detail pane's sections, shared by :mod:`.trace_detail` (Kineto and ET
rows) and :mod:`.driver_detail` (driver-call traces): a key/value grid, a cell, a heading,
byte counts and durations in human units.  Trace strings always become ``Text`` (as
:class:`~.detail_text.KeepText`), never markup.  Durations are microseconds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from rich.table import Table
from rich.text import Text

from .keep_text import KeepText
from .timescale import format_duration_us


def cell(value: Any, style: str = "") -> Text:
    """``value`` as text (None: empty), never parsed as markup."""
    return KeepText("" if value is None else str(value), style=style)


def grid(rows: Iterable[tuple[str, Any]]) -> Table:
    """Bold keys left, values right; rows whose value is None or "" are left out."""
    table = Table.grid(padding=(0, 1))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for key, value in rows:
        if value is None or value == "":
            continue
        table.add_row(KeepText(key), value if isinstance(value, Text) else cell(value))
    return table


def heading(text: str) -> Text:
    return KeepText(text, style="bold underline")


def format_bytes(n: float) -> str:
    """``33,792 B (33.0 KiB)`` style byte counts."""
    if not isinstance(n, (int, float)) or not math.isfinite(n):
        return str(n)
    if abs(n) < 1024:
        return f"{int(n):,} B"
    for unit, scale in (("KiB", 1024.0), ("MiB", 1024.0 ** 2), ("GiB", 1024.0 ** 3), ("TiB", 1024.0 ** 4)):
        if abs(n) < scale * 1024 or unit == "TiB":
            return f"{int(n):,} B ({n / scale:.1f} {unit})"
    return f"{n} B"  # pragma: no cover


def duration_text(us: float) -> str:
    """``5.82µs  (5.824 µs)``: the human unit, then the exact microseconds."""
    return f"{format_duration_us(us)}  ({us:,.3f} µs)"
