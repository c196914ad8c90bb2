"""The SQL tables of one loaded trace, built from the model's columns and the existing
analyses (each number keeps its one definition: the frames of ``analysis/frames.py``, the
idle gaps of ``analysis/gaps.py``, the steps of ``analysis/steps.py``, the occupancy of
``analysis/occupancy.py``, the counters of ``kineto/counters.py``).

Every table is built only when a query names it.  Times are µs (``_us``) relative to the
trace origin; a column holding a model event id is named ``event`` or ends in ``_event``.
The columns and units of every table: docs/query.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from ..analysis.categories import KernelCategorizer
from ..analysis.frames import cpu_ops_frame, gpu_events_frame, gpu_work_events, resolve_categorizer
from ..analysis.gaps import idle_gaps
from ..analysis.launches import launch_frame, step_table
from ..analysis.occupancy import occupancy_of_rows
from ..analysis.steps import find_steps, step_of_events
from ..kineto.counters import counters_of
from ..kineto.kinds import Kind
from ..session import LinkedTrace
from .columns import coded, frame, ids, ids_where, lane_text, parent_ids, text_codes
from .links import et_link_methods

_KIND_NAMES = [k.name.lower() for k in sorted(Kind, key=int)]


class TraceTables:
    """Builds the tables of one :class:`~tracetui.session.LinkedTrace` on demand (each once)."""

    #: table name -> builder method name; docs/query.md documents each
    TABLES = ("events", "kernels", "gpu_events", "ops", "links", "gaps", "steps", "counters", "args")

    def __init__(self, linked: LinkedTrace, categorizer: KernelCategorizer | None = None) -> None:
        if linked.kineto is None:
            from ..errors import WrongTraceKindError

            raise WrongTraceKindError(linked.et.path if linked.et else None,
                                      "a query needs a Kineto trace (this is an Execution Trace only)")
        self.linked = linked
        self.kt = linked.kineto
        self.categorizer = resolve_categorizer(categorizer)
        self._gpu: pd.DataFrame | None = None
        self._gpu_rows: pd.DataFrame | None = None  # the gpu_events table: kernels is its subset

    def names(self) -> tuple[str, ...]:
        return self.TABLES

    def build(self, name: str) -> pd.DataFrame:
        builder: Callable[[], pd.DataFrame] = getattr(self, f"_{name}")
        return builder()

    # ------------------------------------------------------------------ helpers
    def _gpu_frame(self) -> pd.DataFrame:
        if self._gpu is None:
            self._gpu = gpu_events_frame(self.kt, self.categorizer)
        return self._gpu

    def _name_of(self, events: np.ndarray) -> pd.Categorical:
        """Names of events (-1: NULL) as codes into the trace's name table."""
        ev = np.asarray(events, dtype=np.int64)
        return coded(np.where(ev >= 0, self.kt.name_id[np.maximum(ev, 0)], -1), self.kt.names)

    def _et_node_of(self, events: np.ndarray) -> pd.arrays.IntegerArray:
        """The ET node id linked to each Kineto event (NULL: none or no ET)."""
        link, et = self.linked.link, self.linked.et
        ev = np.asarray(events, dtype=np.int64)
        if link is None or et is None:
            return ids(np.full(ev.shape, -1))
        pos = link.kineto_to_et[ev].astype(np.int64)
        node = np.asarray(et.ids, dtype=np.int64)[np.maximum(pos, 0)] if len(et.ids) else np.zeros(ev.shape, np.int64)
        return ids_where(node, pos < 0)

    def _found_steps(self) -> tuple:
        """The trace's steps (``analysis.steps.find_steps``: ProfilerStep#N, else the repeated
        top-level annotation); a trace with neither has none here (not one whole-trace step)."""
        steps = find_steps(self.kt)
        return () if steps.whole_trace else steps.steps

    def _step_numbers(self, events: np.ndarray) -> pd.arrays.IntegerArray:
        steps = find_steps(self.kt)
        if steps.whole_trace:
            return ids(np.full(np.asarray(events).shape, -1))
        numbers = np.array([s.number for s in steps.steps], dtype=np.int64)
        pos = step_of_events(self.kt, steps)[np.asarray(events, dtype=np.int64)]
        return ids_where(numbers[np.maximum(pos, 0)], pos < 0)

    # ------------------------------------------------------------------ tables
    def _events(self) -> pd.DataFrame:
        kt = self.kt
        n = kt.n_events
        ev = np.arange(n, dtype=np.int64)
        lane = kt.lane_of.astype(np.int64)
        return frame({
            "event": ev,
            "kind": coded(kt.kind, _KIND_NAMES),
            "name": coded(kt.name_id, kt.names),
            "category": coded(kt.cat_id, kt.cats),
            "lane": lane_text(kt.lanes, lane, "label"),
            "pid": lane_text(kt.lanes, lane, "pid"),
            "tid": lane_text(kt.lanes, lane, "tid"),
            "device": ids(kt.device),
            "stream": ids(kt.stream),
            "ts_us": kt.ts,
            "dur_us": kt.dur,
            "end_us": kt.ts + kt.dur,
            "external_id": ids(kt.external_id),
            "correlation": ids(kt.correlation),
            "rf_id": ids(kt.rf_id, none_below=1),
            "seq": ids(kt.seq),
            "parent_event": parent_ids(kt.parent[:n], n),
            "depth": kt.depth[:n].astype(np.int64),
            "step": self._step_numbers(ev),
            "launch_event": ids(kt.launch_of),
            "cpu_op_event": ids(kt.cpu_op_of[:n]),
            "fwd_op_event": ids(kt.fwd_of),
            "et_node": self._et_node_of(ev),
        })

    def _kernels(self) -> pd.DataFrame:
        """The rows of ``gpu_events`` that are kernels: a count of ``kernels`` is a count of
        kernels, never of memcpys and memsets too (the status line's "GPU events (kernels)")."""
        rows = self._gpu_events()
        return rows[(rows["kind"] == Kind.KERNEL.name.lower()).to_numpy()].reset_index(drop=True)

    def _gpu_events(self) -> pd.DataFrame:
        if self._gpu_rows is None:  # built once: a query naming kernels and gpu_events pays once
            self._gpu_rows = self._build_gpu_events()
        return self._gpu_rows

    def _build_gpu_events(self) -> pd.DataFrame:
        g = self._gpu_frame()
        kt = self.kt
        ev = g["event"].to_numpy(dtype=np.int64)
        launch = g["launch"].to_numpy(dtype=np.int64)
        op = g["op"].to_numpy(dtype=np.int64)
        top = g["top_op"].to_numpy(dtype=np.int64)
        pct, limiter = self._occupancy(g)
        return frame({
            "event": ev,
            "kind": g["kind"].astype(str).astype("category").array,
            "name": self._name_of(ev),
            "category": text_codes(g["kernel_category"].to_numpy()),
            "device": ids(kt.device[ev]),
            "stream": ids(kt.stream[ev]),
            "ts_us": g["ts"].to_numpy(),
            "dur_us": g["dur"].to_numpy(),
            "end_us": g["end"].to_numpy(),
            "correlation": ids(g["correlation"].to_numpy()),
            "external_id": ids(g["external_id"].to_numpy()),
            "launch_event": ids(launch),
            "launch_name": self._name_of(launch),
            "launch_ts_us": g["launch_ts"].to_numpy(),
            "launch_dur_us": g["launch_dur"].to_numpy(),
            "op_event": ids(op),
            "op_name": self._name_of(op),
            "top_op_event": ids(top),
            "top_op_name": self._name_of(top),
            "grid": text_codes(g["grid"].to_numpy()),
            "block": text_codes(g["block"].to_numpy()),
            "registers_per_thread": g["registers"].to_numpy(),
            "shared_memory_bytes": g["shared_mem"].to_numpy(),
            "blocks_per_sm": g["blocks_per_sm"].to_numpy(),
            "warps_per_sm": g["warps_per_sm"].to_numpy(),
            "est_occupancy_pct": g["occupancy"].to_numpy(),
            "theoretical_occupancy_pct": pct,
            "occupancy_limiter": limiter,
            "bytes": g["bytes"].to_numpy(),
            "step": self._step_numbers(ev),
        })

    def _occupancy(self, g: pd.DataFrame) -> tuple[np.ndarray, pd.Categorical]:
        """Theoretical occupancy (%) and its limiter per row, computed once per distinct
        (device, block, registers, shared memory) of the kernels (``analysis/occupancy.py``)."""
        n = len(g)
        pct = np.full(n, np.nan)
        if not n:
            return pct, text_codes([])
        keys = g[["device", "block", "registers", "shared_mem"]].astype(object)
        group = keys.groupby(list(keys.columns), dropna=False, sort=False).ngroup().to_numpy()
        first = pd.Series(np.arange(n)).groupby(group).first().to_numpy()
        occ = occupancy_of_rows(self.kt, *(list(keys[c].to_numpy()[first]) for c in keys.columns))
        upct = np.array([np.nan if o.pct is None else o.pct for o in occ], dtype=np.float64)
        ulim = [o.limiter for o in occ]
        is_kernel = (g["kind"].astype(str) == "kernel").to_numpy()
        pct = np.where(is_kernel, upct[group], np.nan)
        lim_codes, lim_texts = pd.factorize(pd.Series(ulim, dtype=object))
        codes = np.where(is_kernel, lim_codes[group], -1)
        return pct, coded(codes, [str(t) for t in lim_texts])

    def _ops(self) -> pd.DataFrame:
        o = cpu_ops_frame(self.kt)
        ev = o["event"].to_numpy(dtype=np.int64)
        parent = o["parent_op"].to_numpy(dtype=np.int64)
        return frame({
            "event": ev,
            "name": self._name_of(ev),
            "lane": text_codes(o["lane"].to_numpy()),
            "ts_us": o["ts"].to_numpy(),
            "dur_us": o["dur"].to_numpy(),
            "end_us": o["end"].to_numpy(),
            "depth": o["depth"].to_numpy(),
            "parent_op_event": ids(parent),
            "external_id": ids(o["external_id"].to_numpy()),
            "seq": ids(o["seq"].to_numpy()),
            "rf_id": ids(self.kt.rf_id[ev], none_below=1),
            "input_dims": text_codes(o["input_dims"].to_numpy()),
            "input_types": text_codes(o["input_types"].to_numpy()),
            "gpu_events_direct": o["n_direct_gpu"].to_numpy(),
            "gpu_direct_us": o["direct_gpu_us"].to_numpy(),
            "gpu_subtree_us": o["subtree_gpu_us"].to_numpy(),
            "step": self._step_numbers(ev),
            "et_node": self._et_node_of(ev),
        })

    def _links(self) -> pd.DataFrame:
        kt = self.kt
        parts: list[dict[str, Any]] = []
        gpu = gpu_work_events(kt)
        launch = kt.launch_of[gpu].astype(np.int64)
        ok = launch >= 0
        g, lch = gpu[ok], launch[ok]
        parts.append({"kind": "launch", "src": lch, "et": np.full(g.size, -1), "dst": g,
                      "method": np.where(kt.correlation[g] >= 0, "correlation", "flow"), "heuristic": False})
        bwd = np.flatnonzero(kt.fwd_of >= 0)
        parts.append({"kind": "fwd_bwd", "src": kt.fwd_of[bwd].astype(np.int64), "et": np.full(bwd.size, -1),
                      "dst": bwd, "method": np.full(bwd.size, "sequence number", dtype=object), "heuristic": False})
        link, et = self.linked.link, self.linked.et
        if link is not None and et is not None:
            pos = np.flatnonzero(link.et_to_kineto >= 0)
            methods, heur = et_link_methods(link, pos)
            parts.append({"kind": "et", "src": np.full(pos.size, -1), "et": np.asarray(et.ids, np.int64)[pos],
                          "dst": link.et_to_kineto[pos].astype(np.int64), "method": methods, "heuristic": heur})

        def cat(key: str) -> np.ndarray:
            return np.concatenate([np.broadcast_to(np.asarray(p[key]), (len(p["dst"]),)) for p in parts])
        kinds = np.concatenate([np.full(len(p["dst"]), p["kind"], dtype=object) for p in parts])
        return frame({
            "kind": text_codes(kinds),
            "src_event": ids(cat("src")),
            "et_node": ids(cat("et")),
            "dst_event": cat("dst").astype(np.int64),
            "method": text_codes(cat("method")),
            "heuristic": cat("heuristic").astype(bool),
        })


    def _gaps(self) -> pd.DataFrame:
        gp = idle_gaps(self.kt, self._gpu_frame())
        col = {c: gp[c].to_numpy() for c in gp.columns}
        return frame({
            "device": text_codes(col["device"]),
            "stream": text_codes(col["stream"]),
            "start_us": col["start"].astype(np.float64),
            "end_us": col["end"].astype(np.float64),
            "dur_us": col["dur"].astype(np.float64),
            "idle_class": text_codes(col["idle_class"]),
            "prev_event": ids(col["prev_event"]),
            "next_event": ids(col["next_event"]),
            "next_name": self._name_of(col["next_event"]),
            "next_launch_event": ids(col["next_launch"]),
            "launch_ts_us": col["launch_ts"].astype(np.float64),
            "next_op_event": ids(col["next_op"]),
            "next_op_name": self._name_of(col["next_op"]),
            "host_event": ids(col["host_event"]),
            "host_event_name": self._name_of(col["host_event"]),
            "host_op_event": ids(col["host_op"]),
            "host_op_name": self._name_of(col["host_op"]),
        })

    def _steps(self) -> pd.DataFrame:
        steps = self._found_steps()
        events = np.array([s.event for s in steps], dtype=np.int64)
        ts = np.array([s.ts for s in steps], dtype=np.float64)
        end = np.array([s.end for s in steps], dtype=np.float64)
        st = step_table(self.kt, launch_frame(self.kt, self._gpu_frame()), events)
        return frame({
            "step": np.array([s.number for s in steps], dtype=np.int64),
            "event": events,
            "name": self._name_of(events),
            "ts_us": ts,
            "dur_us": end - ts,
            "end_us": end,
            "kernel_launches": st["kernel_launches"].to_numpy(dtype=np.int64),
            "graph_launches": st["graph_launches"].to_numpy(dtype=np.int64),
            "gpu_events": st["gpu_events"].to_numpy(dtype=np.int64),
            "gpu_us": st["gpu_us"].to_numpy(dtype=np.float64),
        })

    def _counters(self) -> pd.DataFrame:
        c = counters_of(self.kt)
        return frame({
            "event": c.event,
            "series": coded(c.series, c.series_names),
            "name": self._name_of(c.event),
            "ts_us": c.ts,
            "dur_us": c.dur,
            "value": c.value,
        })

    def _args(self) -> pd.DataFrame:
        """One row per event with args: ``event`` and ``args`` (the JSON text as in the file);
        the engine unnests it into (event, key, value, type) with DuckDB's JSON functions."""
        kt = self.kt
        offs = kt.args_offsets
        ev = np.flatnonzero(offs[1:] > offs[:-1])
        blob = kt.args_blob
        texts = [blob[a:b].decode("utf-8", "replace") for a, b in zip(offs[ev].tolist(), offs[ev + 1].tolist())]
        return frame({"event": ev.astype(np.int64), "args": np.array(texts, dtype=object)})
