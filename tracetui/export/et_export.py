"""Export of an Execution Trace alone (no Kineto trace): md, html, csv or json.

An ET records no times, so the report is counts and structure: the header (file, schema,
nodes, ops per thread), ops by name, ops by input shapes, and the nodes of the selected
subtree (or the whole ET) in tree order with their ids, thread, rf_id, seq_id and input
shapes.  CSV: one row per node of the subtree (:data:`CSV_COLUMNS`); JSON: everything, every
row.  A Chrome trace needs times: asking for one is a :class:`~tracetui.errors.TraceError`.

Selectors (``--select``) for an ET alone: ``et:<ET node id>``, ``name:<op name>[#<n>]`` (the
n-th node with that name in id order, counting from 1).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pandas as pd

from ..analysis.et_summary import et_counts, ops_by_name, ops_by_shape
from ..errors import TraceError
from ..et.trace import ETTrace
from ..io import jsonout
from .sections import Section, ftext, int_cell, table_section
from .selectors import SelectorError

CSV_COLUMNS = ("id", "parent_id", "level", "name", "tid", "rf_id", "seq_id", "op_schema", "input_shapes",
               "input_types")
ET_SELECTOR_HELP = "et:<ET node id> or name:<op name>[#<n>]"


def resolve_et_selector(et: ETTrace, selector: str | None) -> int | None:
    """The ET position a selector names (None: the whole ET)."""
    if selector is None or not selector.strip():
        return None
    kind, sep, value = selector.strip().partition(":")
    kind, value = kind.strip().lower(), value.strip()
    if not sep or not value:
        raise SelectorError(et.path, f"selector {selector!r}: expected {ET_SELECTOR_HELP}")
    if kind == "et":
        try:
            return et.pos_of_id(int(value))
        except ValueError:
            raise SelectorError(et.path, f"selector {selector!r}: {value!r} is not an integer") from None
        except KeyError:
            raise SelectorError(et.path, f"selector {selector!r}: no ET node has id {value}") from None
    if kind == "name":
        base, nth = value, 1
        hits = _named(et, value)
        if not hits.size and "#" in value and value.rpartition("#")[2].strip().isdigit():
            base, nth = value.rpartition("#")[0], int(value.rpartition("#")[2])
            hits = _named(et, base)
        if not hits.size:
            raise SelectorError(et.path, f"selector {selector!r}: no ET node named {base!r}")
        if not 1 <= nth <= hits.size:
            raise SelectorError(et.path, f"selector {selector!r}: {base!r} occurs {hits.size} time(s); #{nth} is "
                                         "out of range (count from 1)")
        return int(hits[nth - 1])
    raise SelectorError(et.path, f"selector {selector!r}: an Execution Trace alone takes {ET_SELECTOR_HELP}")


def _named(et: ETTrace, name: str) -> np.ndarray:
    try:
        nid = et.names.index(name)
    except ValueError:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(et.name_ids == nid)


def subtree_positions(et: ETTrace, root: int | None) -> tuple[np.ndarray, np.ndarray]:
    """(positions, levels) of the nodes under ``root`` (None: every root) in tree order."""
    starts = et.roots().tolist() if root is None else [root]
    pos: list[int] = []
    lvl: list[int] = []
    stack = [(r, 0) for r in reversed(starts)]
    while stack:
        p, d = stack.pop()
        pos.append(p)
        lvl.append(d)
        stack.extend((int(c), d + 1) for c in et.children(p)[::-1].tolist())
    return np.asarray(pos, dtype=np.int64), np.asarray(lvl, dtype=np.int64)


def nodes_frame(et: ETTrace, root: int | None) -> pd.DataFrame:
    """The nodes under ``root`` in tree order (columns :data:`CSV_COLUMNS`)."""
    pos, lvl = subtree_positions(et, root)
    shapes, types = [], []
    for p in pos.tolist():
        s, t = et.input_shapes_types(p)
        shapes.append(_json(s))
        types.append(_json(t))
    return pd.DataFrame({
        "id": et.ids[pos], "parent_id": et.parent_ids[pos], "level": lvl,
        "name": [et.name(p) for p in pos.tolist()], "tid": et.tid[pos], "rf_id": et.rf_id[pos],
        "seq_id": et.seq_id[pos], "op_schema": [et.op_schemas[i] for i in et.op_schema_ids[pos].tolist()],
        "input_shapes": shapes, "input_types": types})


def _json(v: Any) -> str:
    return "" if v is None else jsonout.dumps(v).decode()


def _header(et: ETTrace, root: int | None, n_nodes: int) -> tuple[str, list[str]]:
    c = et_counts(et)
    threads = ", ".join(f"tid {t['tid']}: {t['ops']:,} ops" for t in c["threads"])
    title = os.path.basename(et.path) if root is None else f"{et.name(root)} (ET node {int(et.ids[root])})"
    lines = [f"Source: {os.path.basename(et.path)} (Execution Trace, schema {c['schema']}, {c['layout']} layout)",
             f"Nodes: {c['nodes']:,}, of them ops: {c['ops']:,} ({threads}); ops with rf_id: "
             f"{c['ops_with_rf_id']:,}, with seq_id: {c['ops_with_seq_id']:,}",
             "An Execution Trace records no times: every number here is a count (give its Kineto trace for times)."]
    if root is not None:
        lines.append(f"Subtree: {n_nodes:,} nodes under ET node {int(et.ids[root])}")
    return title, lines


def et_sections(et: ETTrace, root: int | None, max_rows: int) -> list[Section]:
    nodes = nodes_frame(et, root)
    pos, _ = subtree_positions(et, root)
    names = pd.DataFrame(ops_by_name(et, pos), columns=["name", "count", "threads"])
    shapes = pd.DataFrame(ops_by_shape(et, pos), columns=["name", "input_shapes", "input_types", "count"])
    return [
        table_section("Ops by name", names, [("name", "name", ftext), ("count", "count", int_cell),
                                             ("threads (ET tid)", "threads", ftext)], max_rows, code=("name",)),
        table_section("Ops by input shapes", shapes, [("name", "name", ftext), ("input shapes", "input_shapes", ftext),
                                                      ("input types", "input_types", ftext),
                                                      ("count", "count", int_cell)], max_rows, code=("name",)),
        table_section("Nodes (tree order)", nodes, [
            ("level", "level", int_cell), ("id", "id", ftext), ("name", "name", ftext), ("tid", "tid", ftext),
            ("rf_id", "rf_id", ftext), ("seq_id", "seq_id", ftext), ("input shapes", "input_shapes", ftext)],
            max_rows, code=("name",)),
    ]


def et_export_bytes(et: ETTrace, root: int | None, fmt: str, max_rows: int) -> bytes:
    """The export of an ET alone (``root``: an ET position, None: the whole ET)."""
    if fmt == "chrome":
        raise TraceError(et.path, "an Execution Trace records no times, so it has no Chrome trace; export it as "
                                  "md, html, csv or json, or give its Kineto trace")
    if root is not None and not 0 <= root < len(et):
        raise TraceError(et.path, f"ET position {root} does not exist")
    if fmt == "csv":
        from .csv_json import csv_text

        return csv_text(CSV_COLUMNS, nodes_frame(et, root).itertuples(index=False, name=None)).encode("utf-8")
    if fmt == "json":
        pos, _ = subtree_positions(et, root)
        doc = {"source": et.path, "root": int(et.ids[root]) if root is not None else None, **et_counts(et),
               "ops_by_name": ops_by_name(et, pos), "ops_by_shape": ops_by_shape(et, pos),
               "tree_nodes": nodes_frame(et, root).to_dict("records")}
        return jsonout.dumps(doc, indent=True) + b"\n"
    title, header = _header(et, root, int(subtree_positions(et, root)[0].size))
    sections = et_sections(et, root, max_rows)
    if fmt == "md":
        from .markdown import markdown_document

        return markdown_document(title, header, sections).encode("utf-8")
    from .html import html_document

    return html_document(title, header, sections).encode("utf-8")
