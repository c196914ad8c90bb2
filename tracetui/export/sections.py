"""A :class:`~tracetui.export.report.SubtreeReport` as titled text tables (for Markdown and HTML).

Each :class:`Section` has a title, a few lines of text and one table of already formatted
string cells; the Markdown and HTML writers only lay them out.  Long tables are cut at
``max_rows`` with a line saying how many rows were left out (CSV and JSON keep every row).
Units are in the column headers: µs for event times, ms for totals.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .. import units
from ..analysis.tables import NESTED_CALLS_RULE
from .ranking import names_text
from .report import KINETO_OCCUPANCY, SubtreeReport, with_occupancy

DEFAULT_MAX_ROWS = 200
TIMELINE_LABELS = (("total", "total span"), ("computation", "computation"),
                   ("exposed_comm", "exposed communication"), ("exposed_memcpy", "exposed memcpy"),
                   ("busy", "busy"), ("idle", "idle"), ("total_comm", "all communication"),
                   ("total_memcpy", "all memcpy"))


@dataclass
class Section:
    """One titled table.  ``code`` lists the columns whose cells are names (shown as code)."""

    title: str
    columns: list[str]
    rows: list[list[str]]
    lines: list[str] = field(default_factory=list)
    code: frozenset[str] = frozenset()
    total_rows: int = 0  #: rows before cutting at max_rows

    @property
    def omitted(self) -> int:
        return max(self.total_rows - len(self.rows), 0)


#: a number as text ("" for None/NaN); integers without decimals
fnum = units.number


def ftext(v: Any) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return ""
    return str(v)


def table_section(title: str, df: pd.DataFrame, spec: list[tuple[str, str, Any]], max_rows: int,
                  code: tuple[str, ...] = (), lines: list[str] | None = None) -> Section:
    """A section from a frame.  spec: (header, column, formatter) per output column; ``code``:
    the columns whose cells are names; the table is cut at ``max_rows`` (-1: every row)."""
    total = len(df)
    head = df.head(max_rows) if max_rows >= 0 else df
    rows = []
    cols = [c for _, c, _ in spec]
    for rec in head[cols].itertuples(index=False, name=None):
        rows.append([fmt(v) for (_, _, fmt), v in zip(spec, rec)])
    return Section(title, [h for h, _, _ in spec], rows, list(lines or []),
                   frozenset(h for h, c, _ in spec if c in code), total)


def _us(v: Any) -> str:
    return fnum(v, 3)


def _pct(v: Any) -> str:
    return fnum(v, 2)


def int_cell(v: Any) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return ""
    return fnum(int(v))


def _id(v: Any) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return ""
    return str(int(v))


def _stream(df: pd.DataFrame) -> pd.Series:
    return df["device"].astype(str) + ":" + df["stream"].astype(str)


def header_lines(rep: SubtreeReport) -> list[str]:
    kt = rep.trace
    lines = [f"Source: {rep.source}"]
    if rep.root is not None:
        lines.append(f"Root: {kt.name(rep.root)} (node {rep.root}, {rep.parent_chain[-1]['kind']})")
    if rep.root is not None and rep.root < kt.n_events:
        lo, hi = kt.node_span(rep.root)
        lines.append(f"Host span: {lo:,.3f} {units.US} to {hi:,.3f} {units.US} after the trace start "
                     f"({(hi - lo) / 1000:,.3f} {units.MS})")
    if rep.window is not None:
        lo, hi = rep.window
        what = "GPU window (first to last GPU event)" if len(rep.kernels) else "Window (no GPU work: host span)"
        lines.append(f"{what}: {lo:,.3f} {units.US} to {hi:,.3f} {units.US} ({(hi - lo) / 1000:,.3f} {units.MS})")
    n = len(rep.kernels)
    word = kt.device_word()
    kinds = rep.kernels["kind"].astype(str).value_counts().to_dict() if n else {}
    what = (f"{kinds.get('kernel', 0):,} kernels, " if word == "GPU" else "") + \
        f"{kinds.get('memcpy', 0):,} memcpy, {kinds.get('memset', 0):,} memset"
    lines.append(f"{word} events: {n:,} ({what}), summed {word} time "
                 f"{rep.kernels['dur'].sum() / 1000 if n else 0:,.3f} {units.MS}; host events: {len(rep.ops):,}")
    lines.extend(rep.notes)
    return lines


def _ranking_section(rep: SubtreeReport, max_rows: int) -> Section:
    """The ops ranked by the GPU time they launched (:mod:`.ranking`), with their GPU events
    by name, their shapes and their share of the summed GPU time."""
    r = rep.op_ranking
    r = r.assign(_names=[names_text(v) for v in r["gpu_names"]]) if not r.empty else r.assign(_names=[])
    total = rep.kernels["dur"].sum() if len(rep.kernels) else 0.0
    what = "the whole trace's" if rep.root is None else "the subtree's"
    word = rep.trace.device_word()
    return table_section(f"Ops by {word} time", r, [
        ("#", "rank", int_cell), ("op", "name", ftext), ("node", "node", _id), ("input dims", "input_dims", ftext),
        ("input types", "input_types", ftext), (f"{word} ({units.US})", "gpu_us", _us),
        (f"% of {word} time", "percent", _pct), (f"{word} events", "n_gpu", int_cell),
        ("kernels and copies (most time first)", "_names", ftext),
        (f"host ({units.US})", "host_us", _us), ("called from", "caller", ftext)],
        max_rows, code=("name", "_names", "caller"),
        lines=[f"Each {word} event counted once, for the innermost cpu_op above its launch (the op the browser's "
               f"< key goes to); % of {what} summed {word} time ({fnum(total)} {units.US})."])


def _context_sections(rep: SubtreeReport) -> list[Section]:
    """Where the root sits and what it was called with: Kineto input shapes, the linked ET
    node, the parent chain."""
    out: list[Section] = []
    if rep.inputs:
        out.append(table_section("Root op inputs (Kineto args)", pd.DataFrame(rep.inputs), [
            ("#", "index", int_cell), ("dims", "dims", ftext), ("type", "type", ftext),
            ("strides", "strides", ftext), ("concrete", "concrete", ftext)], -1))
    if rep.et_node is not None:
        et = rep.et_node
        how = f" (heuristic link, found by {et.get('found_by')})" if et["heuristic"] else ""
        note = [f"ET node {et['id']}: {et['name']}{how}"]
        if et.get("op_schema"):
            note.append(f"schema: {et['op_schema']}")
        for side in ("inputs", "outputs"):
            df = pd.DataFrame(et[side], columns=["index", "type", "shape", "stride", "value"])
            out.append(table_section(f"ET node {side}", df, [
                ("#", "index", int_cell), ("type", "type", ftext), ("shape", "shape", ftext),
                ("stride", "stride", ftext), ("value", "value", ftext)], -1, lines=note if side == "inputs" else []))
    if rep.parent_chain:
        chain = pd.DataFrame(rep.parent_chain)
        out.append(table_section("Parent chain", chain, [
            ("level", "level", int_cell), ("kind", "kind", ftext), ("name", "name", ftext), ("node", "node", _id),
            (f"duration ({units.US})", "dur", _us)], -1, code=("name",)))
    return out


def build_sections(rep: SubtreeReport, max_rows: int = DEFAULT_MAX_ROWS) -> list[Section]:
    """The report's sections in reading order: the ops ranked by GPU time first, then the
    kernels (by name, then each GPU event), kernel categories, the GPU time breakdown, the
    idle gaps and (a trace with [memory] events) the memory allocated; then where the root sits
    (inputs, ET node, parent chain) and the op tree."""
    whole = rep.root is None
    out: list[Section] = [_ranking_section(rep, max_rows)]
    if whole:
        out.append(table_section("Ops by name", rep.op_summary, [
            ("name", "name", ftext), ("count", "count", int_cell), ("nested", "nested_calls", int_cell),
            (f"host ({units.US})", "host_us", _us), (f"GPU direct ({units.US})", "direct_gpu_us", _us),
            (f"GPU subtree ({units.US})", "subtree_gpu_us", _us), ("% direct GPU", "percent", _pct)],
            max_rows, code=("name",), lines=[NESTED_CALLS_RULE]))
    word = rep.trace.device_word()
    out.append(table_section(f"{word} events by name", rep.kernel_summary, [
        ("name", "name", ftext), ("category", "kernel_category", ftext), ("streams", "streams", ftext),
        ("count", "count", int_cell), (f"total ({units.US})", "total_us", _us), (f"mean ({units.US})", "mean_us", _us),
        (f"min ({units.US})", "min_us", _us), (f"max ({units.US})", "max_us", _us), ("% of GPU time", "percent", _pct)],
        max_rows, code=("name",)))
    if not whole:
        k = with_occupancy(rep)
        k = k.assign(_ds=_stream(k)) if not k.empty else k.assign(_ds=[])
        out.append(table_section(f"{word} events", k, [
            (f"start ({units.US})", "ts", _us), ("device:stream", "_ds", ftext), ("name", "name", ftext),
            ("category", "kernel_category", ftext), (f"dur ({units.US})", "dur", _us), ("grid", "grid", ftext),
            ("block", "block", ftext), ("blocks", "blocks", ftext), ("registers", "registers", int_cell),
            ("shared mem (B)", "shared_mem", int_cell),
            ("theoretical occupancy (%)", "theoretical_occupancy_pct", _pct),
            ("limited by", "occupancy_limiter", ftext),
            ("Kineto est. occupancy (%)", KINETO_OCCUPANCY, _pct), ("op", "op_name", ftext)], max_rows,
            code=("name", "op_name"),
            lines=["theoretical occupancy: from the launch configuration and the device (docs/occupancy.md), with the "
                   "factor limiting it; Kineto est. occupancy: the profiler's own estimate (its "
                   "'est. achieved occupancy %' arg)."]))
    out.append(table_section("Kernel categories", rep.categories, [
        ("category", "category", ftext), ("count", "count", int_cell), (f"total ({units.MS})", "total_ms", _us),
        ("% of GPU time", "percent", _pct)], -1))
    tl = rep.timeline_us
    tot = tl["total"] or 1.0
    tl_df = pd.DataFrame([{"metric": label, "value_ms": tl[k] / 1000.0, "pct": 100.0 * tl[k] / tot}
                          for k, label in TIMELINE_LABELS])
    what = "every GPU event" if whole else "the subtree's GPU events"
    out.append(table_section("GPU time breakdown", tl_df, [("metric", "metric", ftext), (units.MS, "value_ms", _us),
                                                           ("% of total", "pct", _pct)], -1,
                             lines=[f"Unions over all streams of {what}; total = first GPU start to last GPU end."]))
    out.append(table_section("Idle time by class", rep.gap_summary, [
        ("class", "idle_class", ftext), ("gaps", "count", int_cell), (f"total ({units.US})", "total_us", _us),
        (f"mean ({units.US})", "mean_us", _us), (f"max ({units.US})", "max_us", _us),
        ("% of idle", "percent", _pct)], -1,
        lines=["host_wait: the next launch started after the stream went idle; kernel_to_kernel: a short gap "
               "with the launch already queued; other: the rest."]))
    gaps = rep.gaps
    if not gaps.empty:
        gaps = gaps.assign(_ds=_stream(gaps))
        if whole:
            gaps = gaps.sort_values("dur", ascending=False, kind="stable")
    else:
        gaps = gaps.assign(_ds=[])
    out.append(table_section("Largest idle gaps" if whole else "Idle gaps in the GPU window", gaps, [
        ("device:stream", "_ds", ftext), (f"start ({units.US})", "start", _us), (f"dur ({units.US})", "dur", _us),
        ("class", "idle_class", ftext), ("next GPU event", "next_name", ftext),
        ("launched by", "next_op_name", ftext), ("host busy in", "host_event_name", ftext)], max_rows,
        code=("next_name", "next_op_name", "host_event_name")))
    if rep.memory is not None:
        out.append(_memory_section(rep.memory, whole, max_rows))
    out += _context_sections(rep)
    if not whole:
        out.append(table_section("Op tree", rep.ops, [
            ("level", "level", int_cell), ("kind", "kind", ftext), ("name", "name", ftext), ("node", "node", _id),
            (f"host ({units.US})", "dur", _us), (f"GPU direct ({units.US})", "gpu_direct_us", _us),
            (f"GPU subtree ({units.US})", "gpu_subtree_us", _us),
            (f"{rep.trace.device_word()} events", "n_gpu", int_cell),
            ("input dims", "input_dims", ftext)], max_rows, code=("name",),
            lines=["Host events of the subtree in tree order (level: depth below the root)."]))
    return out


def _memory_section(mem: dict[str, Any], whole: bool, max_rows: int) -> Section:
    """The blocks the subtree allocated, with per device totals as lines."""
    lines = []
    b, blocks = units.bytes_text, (lambda n: units.plural(n, "block"))
    for d in mem["devices"]:
        lines.append(f"{d['device']}: allocated {b(d['allocated_bytes'])} in {blocks(d['allocations'])}, "
                     f"freed {b(d['freed_bytes'])} in {blocks(d['frees'])}, net {b(d['net_bytes'])}; "
                     f"transient (allocated and freed inside): {b(d['transient_bytes'])} in {blocks(d['transient'])}")
    if mem["outside_frees"]:
        lines.append(f"{len(mem['outside_frees']):,} frees of blocks allocated outside "
                     f"{'the trace' if whole else 'the subtree'} (in the JSON export)")
    what = "every [memory] allocation of the trace" if whole else "blocks allocated in the subtree"
    lines.append(f"Rows: {what}; sizes in bytes, times in {units.US} after the trace start.")
    df = pd.DataFrame(mem["allocations"], columns=["ts_us", "device", "bytes", "op", "freed_ts_us", "lifetime_us",
                                                   "freed_by"])
    return table_section("Memory: allocations", df, [
        (f"start ({units.US})", "ts_us", _us), ("device", "device", ftext), ("bytes", "bytes", int_cell),
        ("op", "op", ftext),
        (f"lifetime ({units.US})", "lifetime_us", _us), ("freed by", "freed_by", ftext)], max_rows,
        code=("op", "freed_by"), lines=lines)
