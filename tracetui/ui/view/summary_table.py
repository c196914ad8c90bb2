"""One tab of the summaries screen: a table of plain values and, per row, where Enter goes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: rows kept per table (the largest by time)
MAX_ROWS = 200


@dataclass
class SummaryTable:
    """One tab: column headers (and which are numeric), rows of plain values, and per row
    the label and the tree nodes (event ids) Enter goes to."""

    key: str
    title: str
    columns: list[tuple[str, bool]]
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    occurrences: list[np.ndarray] = field(default_factory=list)
    note: str = ""

    def add(self, row: tuple[Any, ...], label: str, nodes: Any) -> None:
        self.rows.append(row)
        self.labels.append(label if len(label) <= 60 else label[:59] + "…")
        self.occurrences.append(np.asarray(nodes, dtype=np.int64))
