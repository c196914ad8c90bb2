"""The answers of a driver-call trace as tabs of the summaries screen (``s``): the
questions the tracing guide asks (``Answers``), calls by name, pipeline phases, ioctl
commands and transfers.  The numbers are ``analysis/driver.driver_summary``'s (the same as
``tracetui summary --json``'s ``driver``); Enter on a row goes to the events it counts.
No Textual here: the tables are built in the summaries worker thread.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import units
from ...analysis.driver import driver_summary
from ...driver import DriverTrace, What
from ...driver.pipeline import CallClass, call_class
from ...driver.schema import DIRECTION_CODES
from .summary_table import MAX_ROWS, SummaryTable


def _events(trace: DriverTrace, *whats: What) -> np.ndarray:
    sel = np.isin(trace.what, [int(w) for w in whats])
    return trace.first + np.flatnonzero(sel)


def _named(trace: DriverTrace, events: np.ndarray, names: set[str]) -> np.ndarray:
    ids = [k for k, nm in enumerate(trace.names) if nm in names]
    return events[np.isin(trace.name_id[events], ids)]


def _of_class(trace: DriverTrace, events: np.ndarray, classes: set[CallClass]) -> np.ndarray:
    cls = np.array([call_class(nm) in classes for nm in trace.names] or [False])
    return events[cls[trace.name_id[events]]]


_n = units.plural


def _ms(us: Any) -> float | None:
    return None if us is None else float(us) / 1e3


def _answers(trace: DriverTrace, d: dict[str, Any]) -> SummaryTable:
    t = SummaryTable("d-answers", "Answers", [("question", False), ("answer", False)],
                     note="a driver-call trace's questions (docs/driver.md); Enter goes to the events counted")
    calls = _events(trace, What.CALL, What.ENTRY)
    t.add(("CUDA calls", f"{len(calls):,} ({_n(len(d['calls']), 'function')})"), "CUDA calls", calls)
    loading = [p for p in d["phases"] if p["name"] in ("initialisation", "weight loading")]
    if loading:
        phases = _named(trace, _events(trace, What.PHASE), {f"phase: {p['name']}" for p in loading})
        n = sum(int(p["calls"]) for p in loading)
        t.add(("Calls while loading the model", f"{n:,} (initialisation and weight loading)"),
              "model loading phases", phases)
    src = "launch records" if d["kernel_launches_from"] == "launch records" else "launch calls"
    launches = _events(trace, What.LAUNCH) if src == "launch records" else \
        _of_class(trace, calls, {CallClass.LAUNCH, CallClass.GRAPH_LAUNCH})
    t.add(("Kernel launches", f"{int(d['kernel_launches']):,} (from {src})"), "kernel launches", launches)
    it = d["iterations"]
    syncs = _of_class(trace, calls, {CallClass.SYNC})
    if it["count"]:
        t.add(("Kernels per inference iteration",
               f"{it['launches_per_iteration']:,g} (median of {_n(it['count'], 'iteration')}; min {it['min']:,}, "
               f"max {it['max']:,})"), "synchronize calls", syncs)
    s = d["sync"]
    t.add(("Time in synchronize calls", f"{s['total_us'] / 1e3:,.3f} {units.MS} in {_n(s['count'], 'call')}"),
          "synchronize calls", syncs)
    idle = d["idle_after_sync"]
    t.add(("GPU idle after a synchronize",
           f"{_n(idle['count'], 'gap')}, {idle['total_us'] / 1e3:,.3f} {units.MS}, longest "
           f"{idle['max_us'] / 1e3:,.3f} {units.MS}"), "synchronize calls", syncs)
    cvt = d["compute_vs_transfer"]
    ratio = "" if cvt["ratio"] is None else f" (ratio {cvt['ratio']:,.2f})"
    t.add(("Compute vs transfer",
           f"{cvt['compute_us'] / 1e3:,.3f} {units.MS} vs {cvt['transfer_us'] / 1e3:,.3f} {units.MS}{ratio}"),
          "transfers", _events(trace, What.TRANSFER))
    a = d["allocations"]
    size = ("" if a["bytes"] is None else
            f", {units.bytes_exact(a['bytes'])} (peak {units.bytes_exact(a['peak_bytes'] or 0)})")
    t.add(("Allocations", f"{int(a['count']):,}{size}"), "allocations", _events(trace, What.ALLOC))
    n_ioctl = sum(int(x["count"]) for x in d["ioctls"])
    t.add(("ioctls into the driver", f"{n_ioctl:,} ({_n(len(d['ioctls']), 'command')})"), "ioctls",
          _events(trace, What.IOCTL))
    ln = d["lines"]
    t.add(("Lines read", f"{ln['json']:,} of {ln['total']:,} ({ln['skipped']:,} skipped: see w)"), "lines",
          np.zeros(0, np.int64))
    return t


def _calls(trace: DriverTrace, d: dict[str, Any]) -> SummaryTable:
    t = SummaryTable("d-calls", "Calls", [("name", False), ("api", False), ("count", True), (f"total {units.MS}", True),
                                          (f"mean {units.US}", True), ("errors", True)],
                     note="API calls by name; errors: a non-zero return value")
    events = _events(trace, What.CALL, What.ENTRY)
    by_name = _group_by_name(trace, events)
    for c in d["calls"][:MAX_ROWS]:
        t.add((c["name"], c.get("api", ""), int(c["count"]), _ms(c["total_us"]), c["mean_us"], int(c["errors"])),
              f"calls {c['name']}", by_name.get(c["name"], np.zeros(0, np.int64)))
    return t


def _phases(trace: DriverTrace, d: dict[str, Any]) -> SummaryTable:
    t = SummaryTable("d-phases", "Phases", [("phase", False), ("pid", False), (f"start {units.MS}", True),
                                            (f"dur {units.MS}", True),
                                            ("calls", True), ("launches", True), ("syncs", True), ("ioctls", True)],
                     note="pipeline phases by the rules of docs/driver.md; Enter goes to the phase on each thread")
    spans = _group_by_name(trace, _events(trace, What.PHASE))
    for p in d["phases"]:
        t.add((p["name"], "" if p["pid"] is None else str(p["pid"]), _ms(p["start_us"]), _ms(p["dur_us"]),
               int(p["calls"]), int(p["launches"]), int(p["syncs"]), int(p["ioctls"])), f"phase {p['name']}",
              spans.get(f"phase: {p['name']}", np.zeros(0, np.int64)))
    return t


def _ioctls(trace: DriverTrace, d: dict[str, Any]) -> SummaryTable:
    t = SummaryTable("d-ioctls", "ioctls", [("command", False), ("count", True), (f"total {units.US}", True),
                                            (f"mean {units.US}", True), ("errors", True)],
                     note="kernel-space ioctls by command (hex)")
    ev = _events(trace, What.IOCTL)
    cmd = trace.ioctl_cmd[ev - trace.first]
    for r in d["ioctls"][:MAX_ROWS]:
        want = int(r["cmd"], 16) if r["cmd"] else -1
        t.add((r["cmd"] or "(none)", int(r["count"]), r["total_us"], r.get("mean_us"), int(r.get("errors", 0))),
              f"ioctl {r['cmd']}", ev[cmd == want])
    return t


def _transfers(trace: DriverTrace, d: dict[str, Any]) -> SummaryTable:
    t = SummaryTable("d-transfers", "Transfers", [("direction", False), ("count", True), ("bytes", True),
                                                  (f"total {units.MS}", True), (units.GBPS, True)],
                     note=f"from {d['transfers_from']}")
    rec = _events(trace, What.TRANSFER)
    code = {name: k for k, name in DIRECTION_CODES.items()}
    for direction, r in d["transfers"].items():
        if not r["count"]:
            continue
        nodes = rec[trace.direction[rec - trace.first] == code.get(direction, 0)]
        t.add((direction, int(r["count"]), r["bytes"], _ms(r["total_us"]), r.get("gb_per_s")),
              f"transfers {direction}", nodes)
    return t


def _group_by_name(trace: DriverTrace, events: np.ndarray) -> dict[str, np.ndarray]:
    ids = trace.name_id[events]
    order = np.argsort(ids, kind="stable")
    uniq, start = np.unique(ids[order], return_index=True)
    bounds = np.append(start, order.size)
    return {trace.names[int(u)]: events[order[bounds[k]:bounds[k + 1]]] for k, u in enumerate(uniq.tolist())}


def driver_tables(trace: DriverTrace) -> list[SummaryTable]:
    """The driver tabs of a driver-call trace (alone or linked to a Kineto trace)."""
    d = driver_summary(trace)
    return [_answers(trace, d), _calls(trace, d), _phases(trace, d), _ioctls(trace, d), _transfers(trace, d)]
