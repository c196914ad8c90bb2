"""Short forms of long, common name prefixes, for tree rows that are too narrow.

PyTorch names many ops with a long shared prefix, e.g. every backward step is
``autograd::engine::evaluate_function: AddmmBackward0``: in a 30-cell name column the
rows all read ``autograd::engine::evaluate…`` and the distinctive tail is cut off.
The rule, in one place:

* a label that fits its cells is shown unchanged;
* otherwise each prefix of :data:`SHORT_PREFIXES` found at the head of the name (in
  table order, then again on what follows it) is replaced by its short form, drawn dim
  so it reads as an abbreviation; whatever still does not fit is cut at the end by the
  caller as before.

Only what is drawn changes: search, filter and the detail pane use the full name.

A name longer than :data:`tracetui.names.NAME_WORK_CHARS` is drawn cut, with its mark
(``… (+10 MB)``, :func:`name_text`); in cells narrower than that, :func:`keep_cut_mark` keeps the
mark in view, so a row, a lane label or the status line says the name goes on.
This module does not import textual.
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text

from ...errors import one_line
from ...names import mark_start, shown

SHORT_PREFIXES: tuple[tuple[str, str], ...] = (
    ("autograd::engine::evaluate_function: ", "eval_fn: "),
    ("torch::autograd::", "…"),
)
"""(prefix, short form) pairs.  Found in the shared traces (mi250_minitoy_train,
mi300_resnet_train_checkpointing, v100x2_nccl_216k, the torch_cpu_pair ET pair, ...):
``autograd::engine::evaluate_function: torch::autograd::AccumulateGrad`` becomes
``eval_fn: …AccumulateGrad``."""

SHORT_STYLE = "dim"
"""Added to the label's style on the short form, marking it as an abbreviation."""


def shorten_label(label: Text, width: int) -> Text:
    """``label`` for ``width`` cells: itself when it fits, else with the known prefixes
    at its head replaced by their short forms (styles of the kept tail are kept)."""
    if label.cell_len <= width:
        return label
    plain = label.plain
    pos = 0
    shorts: list[str] = []
    matched = True
    while matched:
        matched = False
        for prefix, short in SHORT_PREFIXES:
            if plain.startswith(prefix, pos):
                shorts.append(short)
                pos += len(prefix)
                matched = True
                break
    if not pos:
        return label
    out = Text(style=label.style, no_wrap=label.no_wrap, end=label.end)
    out.append("".join(shorts), SHORT_STYLE)
    out.append_text(label[pos:])
    return out


def name_text(name: str, style: str = "") -> Text:
    """A name from a trace as a label: control characters escaped, cut at
    :data:`~tracetui.names.NAME_WORK_CHARS` characters with its mark (bounded work per name)."""
    return Text(one_line(shown(name)), style=style)


def keep_cut_mark(label: Text, width: int) -> Text:
    """``label`` for ``width`` cells when it ends with a cut mark and does not fit: its head
    shortened so the mark stays in view (``aten::mm_lo… (+10 MB)``); otherwise unchanged."""
    if label.cell_len <= width:
        return label
    plain = label.plain
    start = mark_start(plain)
    if start < 0:
        return label
    mark = cell_len(plain[start:])
    if mark >= width:
        return label
    out = label[:start]
    out.truncate(width - mark)
    out.append_text(label[start:])
    return out
