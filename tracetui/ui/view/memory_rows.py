"""Detail-pane section of a node of a trace recorded with ``profile_memory=True``: what the
node and everything under it allocated and freed, per device
(:func:`~tracetui.analysis.memory_peak.node_memory`, rules in docs/memory.md).

One column per device: ``allocated`` (bytes and blocks allocated under the node), ``freed``
(frees under it, whoever allocated the block), ``net`` (allocated - freed: what the node
leaves allocated; negative when it freed more) and ``transient`` (blocks allocated and freed
again under it: workspace its caller never sees).  Bytes are SI (:mod:`tracetui.units`).
"""

from __future__ import annotations

from rich.table import Table

from ... import units
from ...analysis.memory import memory_model
from ...analysis.memory_peak import NodeMemory, node_memory
from ...kineto.trace import KinetoTrace
from .detail_section import DetailSection
from .detail_section import cell as _t

HEADING = "Memory (this row and everything under it)"


def _bytes_blocks(n: int, count: int) -> str:
    return f"{units.bytes_rounded(n)} ({units.plural(count, 'block')})" if count else "0"


def _net(n: int) -> str:
    return ("+" if n > 0 else "") + units.bytes_rounded(n)


def memory_table(rows: list[NodeMemory]) -> Table:
    """Keys down the left, one column per device."""
    table = Table(box=None, padding=(0, 1), show_edge=False, header_style="bold")
    table.add_column("", style="bold", no_wrap=True)
    for r in rows:
        table.add_column(r.device, justify="right", no_wrap=True)
    table.add_row(_t("allocated"), *(_t(_bytes_blocks(r.allocated_bytes, r.allocations)) for r in rows))
    table.add_row(_t("freed"), *(_t(_bytes_blocks(r.freed_bytes, r.frees)) for r in rows))
    table.add_row(_t("net"), *(_t(_net(r.net_bytes)) for r in rows))
    table.add_row(_t("transient"), *(_t(_bytes_blocks(r.transient_bytes, r.transient)) for r in rows))
    table.keep_whole = True  # type: ignore[attr-defined]
    return table


def memory_sections(kt: KinetoTrace, node: int) -> list[DetailSection]:
    """The memory section of tree node ``node`` (an event or a lane); [] when the trace has no
    ``[memory]`` events or none counts under the node."""
    if not memory_model(kt).n_rows:
        return []
    rows = node_memory(kt, node)
    if not rows:
        return []
    note = _t("net: what it leaves allocated; transient: allocated and freed again inside", "dim")
    return [DetailSection(HEADING, [memory_table(rows), note])]
