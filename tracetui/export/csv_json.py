"""CSV and JSON exports of a subtree report.

CSV: one row per node of the subtree in tree (preorder) order, host events and GPU events
together, so a spreadsheet can filter and sum it; columns :data:`CSV_COLUMNS` (times in µs
relative to the trace start; empty cells where a column does not apply).  Every text cell
(the header too) is trace text made safe to show (:func:`tracetui.errors.one_line`: control,
bidi and invisible characters escaped visibly, so ``cat`` or ``head`` of the file shows
nothing a terminal acts on and one line per row).  A text cell that a spreadsheet would read
as a formula (it starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return: an op
named ``=HYPERLINK(...)``) is written with a ``'`` before it, as OWASP advises against CSV
injection; numbers are written as numbers.

JSON: the whole report as one object (every row of every table; see :func:`report_json`).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..analysis.gpu_breakdown import timeline_ms
from ..analysis.roofline import ops_cost_columns
from ..errors import one_line
from ..io import jsonout
from ..kineto.counters import counters_export
from .report import KINETO_OCCUPANCY, SubtreeReport, plain, records, with_occupancy

CSV_COLUMNS = ("node", "parent", "level", "kind", "name", "kernel_category", "ts_us", "dur_us", "gpu_direct_us",
               "gpu_subtree_us", "n_gpu", "device", "stream", "external_id", "external_id_is_correlation",
               "correlation", "launch", "op_name", "grid", "block", "grid_unit", "blocks", "registers", "shared_mem",
               "blocks_per_sm", "warps_per_sm", "theoretical_occupancy_pct", "occupancy_limiter", KINETO_OCCUPANCY,
               "bytes", "input_dims", "input_types")


def csv_frame(rep: SubtreeReport) -> pd.DataFrame:
    """The CSV rows as a DataFrame (columns :data:`CSV_COLUMNS`, preorder)."""
    kt = rep.trace
    ops = rep.ops.rename(columns={"ts": "ts_us", "dur": "dur_us"})
    ops = ops.assign(external_id=ops["external_id"].where(ops["external_id"] >= 0))
    k = with_occupancy(rep)
    base = int(kt.depth[rep.root]) if rep.root is not None else 0
    gpu = pd.DataFrame({
        "node": k["event"], "parent": kt.parent[k["event"].to_numpy()].astype(np.int64),
        "level": kt.depth[k["event"].to_numpy()].astype(np.int64) - base,
        "kind": k["kind"], "name": k["name"], "kernel_category": k["kernel_category"],
        "ts_us": k["ts"], "dur_us": k["dur"], "gpu_subtree_us": k["dur"], "n_gpu": 1,
        "device": k["device"], "stream": k["stream"], "external_id": k["external_id"].where(k["external_id"] >= 0),
        "correlation": k["correlation"].where(k["correlation"] >= 0), "launch": k["launch"].where(k["launch"] >= 0),
        "external_id_is_correlation": k["external_id_is_correlation"],
        "op_name": k["op_name"], "grid": k["grid"], "block": k["block"], "grid_unit": k["grid_unit"],
        "blocks": k["blocks"], "registers": k["registers"],
        "shared_mem": k["shared_mem"], "blocks_per_sm": k["blocks_per_sm"], "warps_per_sm": k["warps_per_sm"],
        "theoretical_occupancy_pct": k["theoretical_occupancy_pct"], "occupancy_limiter": k["occupancy_limiter"],
        KINETO_OCCUPANCY: k[KINETO_OCCUPANCY], "bytes": k["bytes"],
    })
    both = pd.concat([ops, gpu], ignore_index=True, sort=False)
    pos = np.full(kt.n_nodes, np.iinfo(np.int64).max, dtype=np.int64)
    pos[rep.nodes] = np.arange(rep.nodes.size)
    both = both.assign(_p=pos[both["node"].to_numpy().astype(np.int64)]).sort_values("_p", kind="stable")
    return both.reindex(columns=list(CSV_COLUMNS)).reset_index(drop=True)


#: first characters that make a spreadsheet evaluate a cell
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _cell(v: Any, value_text: Callable[[Any], str] | None = None) -> Any:
    v = plain(v)
    if v is None:
        return ""
    if isinstance(v, str):
        v = one_line(v)  # (a tab or CR is escaped: only the other formula starts are left)
        return "'" + v if v.startswith(FORMULA_START) else v
    if value_text is not None:  # a number as text (a minus sign is no formula); a list of names
        return one_line(value_text(v))
    return v


def render_csv(rep: SubtreeReport) -> str:
    """The CSV text (header row, then one row per node)."""
    return csv_text(CSV_COLUMNS, csv_frame(rep).itertuples(index=False, name=None))


def csv_text(header: Sequence[str], rows: Iterable[Sequence[Any]],
             value_text: Callable[[Any], str] | None = None) -> str:
    """Every CSV export's text: ``header``, then ``rows`` with each text cell made safe to
    show (:func:`~tracetui.errors.one_line`: one line, so a row is one line) and for a
    spreadsheet (:data:`FORMULA_START`; numpy scalars as Python numbers, NaN empty);
    ``value_text`` writes the cells that are not text (numbers, booleans: ``tracetui query``
    writes them as its table does)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([_cell(h) for h in header])
    w.writerows([_cell(v, value_text) for v in row] for row in rows)
    return buf.getvalue()


def _with_costs(rep: SubtreeReport) -> pd.DataFrame:
    """The ops table plus ``flops``, ``bytes_moved`` and ``tflops_per_s`` (over the subtree GPU
    time; analysis/roofline.py, null where the op's FLOPs are not known)."""
    cost = ops_cost_columns(rep.trace, rep.ops["node"].to_numpy())
    return rep.ops.reset_index(drop=True).assign(flops=cost["flops"], bytes_moved=cost["bytes_moved"],
                                                 tflops_per_s=cost["tflops_per_s"])


def report_json(rep: SubtreeReport) -> dict[str, Any]:
    """The report as JSON-ready data: ``source``, ``title``, ``root`` (node id or null),
    ``origin_us``, ``window_us``, ``parent_chain``, ``inputs``, ``et_node``, ``ops_by_gpu_time``
    (:mod:`.ranking`), ``gpu_timeline`` (ms), ``kernel_categories``, ``ops``, ``kernels``, ``op_summary``,
    ``kernel_summary``, ``idle_summary``, ``idle_gaps``, ``notes``, ``counters`` when the
    subtree holds counter samples (see :func:`tracetui.kineto.counters.counters_export`), and
    ``memory`` when the trace has ``[memory]`` events (see
    :func:`tracetui.analysis.memory_doc.subtree_memory`)."""
    kt = rep.trace
    out = {
        "source": rep.source,
        "title": rep.title,
        "root": rep.root,
        "root_name": kt.name(rep.root) if rep.root is not None else None,
        "origin_us": rep.origin_us,
        "window_us": list(rep.window) if rep.window is not None else None,
        "parent_chain": plain(rep.parent_chain),
        "inputs": plain(rep.inputs),
        "et_node": plain(rep.et_node),
        "ops_by_gpu_time": records(rep.op_ranking),
        "gpu_timeline": timeline_ms(rep.timeline_us),
        "kernel_categories": records(rep.categories),
        "ops": records(_with_costs(rep)),
        "kernels": records(with_occupancy(rep)),
        "op_summary": records(rep.op_summary),
        "kernel_summary": records(rep.kernel_summary),
        "idle_summary": records(rep.gap_summary),
        "idle_gaps": records(rep.gaps),
        "notes": list(rep.notes),
    }
    counters = counters_export(kt, None if rep.root is None else rep.nodes,
                               None if rep.root is None else kt.node_span(rep.root))
    if counters:  # counter ranges / samples of the subtree (kineto/counters.py)
        out["counters"] = plain(counters)
    if rep.memory is not None:  # [memory] events (analysis/memory_doc.py)
        out["memory"] = plain(rep.memory)
    return out


def render_json(rep: SubtreeReport) -> bytes:
    """The report as indented JSON bytes."""
    return jsonout.dumps(report_json(rep), indent=True) + b"\n"
