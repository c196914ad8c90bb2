"""Rich tables for ``tracetui summary`` (from :func:`tracetui.analysis.summary.build_summary`).

Trace-derived strings (kernel, op and file names) are always wrapped in
:class:`rich.text.Text`, never parsed as markup: a kernel named ``[bold]`` prints as is.
Tables fit the terminal (:mod:`tracetui.cli.fit_table`: names fold, numbers and
columns are never dropped); piped output is as wide as its content, names folded at
:data:`NAME_WIDTH` cells.  A trace without GPU
events prints one sentence instead of the GPU tables, and tables without rows are left out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.text import Text

from .. import units
from ..analysis.tables import NESTED_CALLS_RULE
from ..errors import one_line
from .fit_table import Cell, Col, fitted_table, stdout_console
from .memory_render import print_memory_summary

#: console width for piped output: lines are as long as their content
#: widest name column of piped output (cells); longer names fold onto further lines
NAME_WIDTH = 60
_TL_ROWS = (("total_ms", "total span"), ("computation_ms", "computation"), ("exposed_comm_ms", "exposed communication"),
            ("exposed_memcpy_ms", "exposed memcpy"), ("busy_ms", "busy"), ("idle_ms", "idle"),
            ("total_comm_ms", "all communication"), ("total_memcpy_ms", "all memcpy"))


def _name(s: Any) -> Text:
    """A name from the trace: escaped before Rich sees it (Rich would drop BEL and CR)."""
    return Text("" if s is None else one_line(str(s)))


_n = units.number


def _ms(us: Any) -> str:
    """Microseconds as milliseconds table text."""
    return "" if us is None else _n(us / 1e3)


def grouped_devices(names: Sequence[Any]) -> str:
    """Device names with identical ones grouped, in order of first appearance:
    ``8 × NVIDIA B200``; unnamed devices are ``(unnamed)``; "none listed" for no devices."""
    counts = Counter("(unnamed)" if n is None or str(n) == "" else str(n) for n in names)
    return ", ".join(f"{k} × {name}" if k > 1 else name for name, k in counts.items()) or "none listed"


class Out:
    """Prints fitted tables to one console, skipping those without rows."""

    def __init__(self, con: Console, width: int | None) -> None:
        self.con, self.width = con, width

    def table(self, title: str, cols: Sequence[Col], rows: Sequence[Sequence[Cell]]) -> None:
        if not rows:
            return
        table = fitted_table(title, cols, rows, self.width, NAME_WIDTH)
        if self.width is not None:
            self.con.print(table, crop=False)
            return
        # piped: no colours to keep; drop the padding of cells ending a line
        with self.con.capture() as cap:
            self.con.print(table)
        self.con.out("\n".join(ln.rstrip() for ln in cap.get().splitlines()), highlight=False)

    def line(self, text: str, style: str = "") -> None:
        self.con.print(Text(one_line(text), style=style))


def console_out(console: Console | None = None) -> Out:
    """A printer on ``console`` (fitting its width), or on stdout (fitting the terminal)."""
    con, width = (console, console.width) if console is not None else stdout_console()
    return Out(con, width)


def print_summary(s: dict[str, Any], console: Console | None = None) -> None:
    """Print every section of a summary dict (to ``console``, fitting its width, or to stdout)."""
    out = console_out(console)
    out.line(s["source"], "bold")
    if "et" in s and "trace" not in s:  # an Execution Trace alone
        _print_et(out, s["et"])
        for w in s["warnings"]:
            out.line(f"warning: {w}", "yellow")
        return
    tr = s["trace"]
    drv = s.get("driver")
    if drv is not None and not drv["kineto_events"]:  # a driver-call trace alone: no Kineto tables
        _print_driver_head(out, drv)
        _print_driver(out, drv)
        for w in s["warnings"]:
            out.line(f"warning: {w}", "yellow")
        return
    called = tr.get("device_work", {}).get("called", "GPU events")
    kernels = tr.get("device_work", {}).get("kernels")
    out.line(f"{tr['events']:,} events, {tr['gpu_events']:,} {called} "
             + (f"({kernels:,} kernels; " if kernels is not None else "(")
             + f"{tr['gpu_events_unlinked']:,} without a launch), {tr['cpu_ops']:,} cpu_ops")
    out.line(f"devices: {grouped_devices(tr['devices'])}")
    counters = s.get("counters")
    if not tr["gpu_events"]:
        held = (f"{counters['ranges']:,} profiler ranges and " if counters and counters["ranges"] else
                f"{counters['events']:,} counter events and " if counters else "")
        out.line(f"No GPU work in this trace (no kernel, memcpy or memset): it holds {held}{tr['cpu_ops']:,} CPU "
                 f"ops in {tr['events']:,} events, so no GPU tables follow.")
        _print_counters(out, counters)
        _print_ops(out, s)
        _print_host_only(out, s["launches"])
    else:
        _print_gpu(out, s)
        _print_ops(out, s)
        _print_roofline(out, s.get("roofline") or [])
        _print_streams(out, s)
        _print_launches(out, s["launches"])
        _print_counters(out, counters)
    print_memory_summary(out, s.get("memory"))  # absent from stored summaries of older versions
    if drv is not None:
        _print_driver(out, drv)
    for w in s["warnings"]:
        out.line(f"warning: {w}", "yellow")


def _print_gpu(out: Out, s: dict[str, Any]) -> None:
    tl = s["gpu_timeline"]
    tot = tl["total_ms"] or 1.0
    out.table("GPU timeline (unions over all streams)", [Col("", False), Col(units.MS), Col("% of total")],
              [[label, _n(tl[key]), _n(100.0 * tl[key] / tot, 2)] for key, label in _TL_ROWS])
    if len(s["gpu_timeline_by_device"]) > 1:
        out.table(f"GPU timeline per device ({units.MS})", [Col("device", False), *(Col(lbl) for _,
                                                                                    lbl in _TL_ROWS[:6])],
                  [[_name(d["device"]), *(_n(d[k]) for k, _ in _TL_ROWS[:6])] for d in s["gpu_timeline_by_device"]])
    out.table("Kernel categories", [Col("category", False), Col("count"), Col(f"total {units.MS}"), Col("%")],
              [[_name(r["category"]), _n(r["count"]), _n(r["total_ms"]), _n(r["percent"], 2)]
               for r in s["kernel_categories"]])
    out.table("Top kernels", [Col("name", False), Col("category", False), Col("count"), Col(f"total {units.MS}"),
                              Col(f"mean {units.US}"), Col("%")],
              [[_name(r["name"]), _name(r["kernel_category"]), _n(r["count"]), _n(r["total_us"] / 1e3),
                _n(r["mean_us"]), _n(r["percent"], 2)] for r in s["kernels"]])


def _print_ops(out: Out, s: dict[str, Any]) -> None:
    out.table("Top ops (GPU direct: its own launches; subtree: everything under it)",
              [Col("name", False), Col("count"), Col("nested"), Col(f"host {units.MS}"), Col(f"GPU direct {units.MS}"),
               Col(f"GPU subtree {units.MS}"), Col("%")],
              [[_name(r["name"]), _n(r["count"]), _n(r.get("nested_calls", 0)), _n(r["host_us"] / 1e3),
                _n(r["direct_gpu_us"] / 1e3), _n(r["subtree_gpu_us"] / 1e3), _n(r["percent"], 2)] for r in s["ops"]])
    if any(r.get("nested_calls") for r in s["ops"]):
        out.line(NESTED_CALLS_RULE, style="dim")


def _print_et(out: Out, e: dict[str, Any]) -> None:
    """An Execution Trace alone: counts, threads, ops by name and by input shapes."""
    threads = ", ".join(f"tid {t['tid']}: {t['ops']:,}" for t in e["threads"])
    out.line(f"Execution Trace, schema {e['schema']} ({e['layout']} layout): {e['nodes']:,} nodes, {e['ops']:,} ops "
             f"on {len(e['threads']):,} threads ({threads}); ops with rf_id {e['ops_with_rf_id']:,}, with seq_id "
             f"{e['ops_with_seq_id']:,}")
    out.line("An Execution Trace records no times: every number below is a count (give its Kineto trace for times).",
             "dim")
    out.table(f"Ops by name (top {len(e['ops_by_name'])} of {e['op_names']:,} names)",
              [Col("name", False), Col("count"), Col("threads", False)],
              [[_name(r["name"]), _n(r["count"]), _name(r["threads"])] for r in e["ops_by_name"]])
    out.table(f"Ops by input shapes (top {len(e['ops_by_shape'])} of {e['op_signatures']:,})",
              [Col("name", False), Col("input shapes", False), Col("input types", False), Col("count")],
              [[_name(r["name"]), _name(r["input_shapes"]), _name(r["input_types"]), _n(r["count"])]
               for r in e["ops_by_shape"]])


def _print_counters(out: Out, c: dict[str, Any] | None) -> None:
    """Counters (kineto/counters.py): totals per counter, the ranges adding most to each, and
    the ranges by name (CUPTI range profiler: a range per profiled kernel)."""
    if not c:
        return
    out.line(f"Counters: {len(c['series']):,} counters, {c['samples']:,} samples from {c['events']:,} counter events "
             f"({c['ranges']:,} of them ranges, {c.get('range_names', 0):,} range names)")
    out.table("Counters (totals over the trace)",
              [Col("counter", False), Col("samples"), Col("total"), Col("mean"), Col("max")],
              [[_name(r["series"]), _n(r["samples"]), _n(r["sum"], 0), _n(r["mean"], 1), _n(r["max"], 0)]
               for r in c["series"]])
    out.table("Top ranges per counter (by summed value)",
              [Col("counter", False), Col("range", False), Col("ranges"), Col("total"), Col("% of counter")],
              [[_name(r["series"]), _name(_cut(t["name"])), _n(t["ranges"]), _n(t["sum"], 0), _n(t["share"], 1)]
               for r in c["series"] for t in r.get("top_ranges", [])])
    out.table("Ranges by name (most range time first)", [Col("name", False), Col("ranges"), Col(f"total {units.MS}")],
              [[_name(_cut(r["name"])), _n(r["ranges"]), _n(r["total_us"] / 1e3)]
               for r in c.get("ranges_by_name", [])])
    if any(len(r["name"]) > RANGE_NAME_CELLS for r in c.get("ranges_by_name", [])):
        out.line(f"range names cut at {RANGE_NAME_CELLS} characters (summary --json has them whole)", "dim")


#: range names (often whole kernel signatures) are cut to this many characters in the text
RANGE_NAME_CELLS = 120


def _cut(name: str) -> str:
    return name if len(name) <= RANGE_NAME_CELLS else name[:RANGE_NAME_CELLS - 1] + "…"


def _print_roofline(out: Out, rows: list[dict[str, Any]]) -> None:
    """Ops with known FLOPs (analysis/roofline.py); nothing when the trace has no shapes."""
    if not rows:
        return
    out.table(f"Roofline (FLOPs from shapes; % of the roofline at the op's {units.FLOP_PER_BYTE})",
              [Col("name", False), Col("shapes", False), Col("count"), Col(f"GPU {units.MS}"), Col(units.TFLOPS),
               Col(units.GBPS),
               Col("% roof"), Col("bound", False)],
              [[_name(r["name"]), _name(r["input_dims"]), _n(r["count"]), _n(r["gpu_ms"]), _n(r["tflops_per_s"]),
                _n(r["gbps"], 0), _n(r["pct_of_peak"], 1), _name(r["bound"] or "")] for r in rows])
    by_device: dict[str, list[str]] = {}
    for r in rows:
        if r.get("peak"):
            by_device.setdefault(r["device"], [])
            if r["peak"] not in by_device[r["device"]]:
                by_device[r["device"]].append(r["peak"])
    for device, peaks in by_device.items():
        out.line(f"peaks of {device}: " + "; ".join(peaks), "dim")


def _print_streams(out: Out, s: dict[str, Any]) -> None:
    streams = s["streams"]
    out.table(f"Streams ({units.MS}; idle = gaps between its events)",
              [Col("device:stream", False), Col("events"), Col("busy"), Col("idle"), Col("host wait"),
               Col("kernel-to-kernel"), Col("other")],
              [[_name(f"{r['device']}:{r['stream']}"), _n(r["count"]), _ms(r["busy_us"]), _ms(r.get("idle_us")),
                _ms(r.get("host_wait_us")), _ms(r.get("kernel_to_kernel_us")), _ms(r.get("other_us"))]
               for r in streams])
    out.table(idle_title(len(streams)),
              [Col("class", False), Col("gaps"), Col(f"total {units.MS}"), Col(f"mean {units.US}"),
               Col(f"max {units.US}"), Col("% of idle")],
              [[_name(r["idle_class"]), _n(r["count"]), _n(r["total_us"] / 1e3), _n(r["mean_us"]), _n(r["max_us"]),
                _n(r["percent"], 2)] for r in s["idle"]["by_class"]])


def idle_title(n_streams: int) -> str:
    """Title of the idle-gap table: its totals add the gaps of every stream, which overlap in
    time, so with several streams they can exceed the trace's span."""
    if n_streams <= 1:
        return "Idle gaps by class"
    return (f"Idle gaps by class (summed over {n_streams:,} streams; gaps on different streams overlap in time, "
            "so the total can exceed the span)")


def _print_launches(out: Out, la: dict[str, Any]) -> None:
    out.table(f"Launch calls ({units.US}; delay = first GPU start - call start)",
              [Col("class", False), Col("count"), Col("call mean"), Col("call p90"), Col("delay med"),
               Col("delay p90"), Col("delay max")],
              [[_name(cls), _n(d["count"]), _n(la["call_duration"].get(cls, {}).get("mean_us")),
                _n(la["call_duration"].get(cls, {}).get("p90_us")), _n(d["median_us"]), _n(d["p90_us"]),
                _n(d["max_us"])] for cls, d in la["launch_delay"].items()])
    sync = la["sync"]
    out.line(f"Synchronisation: {sync['blocking_calls']:,} host-blocking calls, {sync['blocking_us']:,.3f} {units.US}; "
             f"{sync['cuda_sync_events']:,} cuda_sync events")
    out.table("Synchronisation calls", [Col("call", False), Col("count"), Col(f"total {units.US}")],
              [[_name(name), _n(d["count"]), _n(d["total_us"])] for name, d in sync["by_name"].items()])
    out.table("Copies", [Col("direction", False), Col("count"), Col("bytes"), Col(f"total {units.US}"),
                         Col(units.GBPS)],
              [[_name(r["direction"]), _n(r["count"]), _n(r["bytes"]), _n(r["total_us"]), _n(r["gb_per_s"], 2)]
               for r in la["copies"]])
    _print_host_only(out, la)
    ratio = la.get("compute_memcpy_ratio")
    out.line("compute / memcpy time: " + (f"{ratio:,.2f}" if ratio is not None else "no memcpy"))


def _print_host_only(out: Out, la: dict[str, Any]) -> None:
    """Allocations and profiler steps: host-side facts, printed with or without GPU events."""
    al = la["allocations"]
    if al["malloc_calls"]:
        out.line(f"Allocation calls: {al['malloc_calls']:,} malloc, {al['malloc_us']:,.3f} {units.US}")
    out.table("Profiler steps", [Col("step", False), Col(f"host {units.MS}"), Col("kernel launches"),
                                 Col("graph launches"), Col("GPU events"), Col(f"GPU {units.MS}")],
              [[_name(r["step"]), _n(r["dur"] / 1e3), _n(r["kernel_launches"]), _n(r["graph_launches"]),
                _n(r["gpu_events"]), _n(r["gpu_us"] / 1e3)] for r in la["steps"]])


# ---- driver-call traces (analysis/driver.py, docs/driver.md) ---------------------------------

#: rows of the driver call tables
DRIVER_TOP = 15


def _print_driver_head(out: Out, d: dict[str, Any]) -> None:
    layouts = ", ".join(f"{n:,} {lay}" for lay, n in d["layouts"].items()) or "none"
    c = d["event_counts"]
    out.line(f"{d['events']:,} events of a driver-call trace ({c['calls']:,} calls, {c['ioctls']:,} ioctls, "
             f"{c['records']:,} records; {c['phases']:,} phases derived from them; lines by layout: {layouts}); "
             f"{d['processes']:,} process(es), {d['threads']:,} thread(s), span {d['span_us'] / 1e3:,.3f} {units.MS}")
    out.line("No GPU work in a driver-call trace (its tracer sees the host's calls into libcuda and nvidia.ko, "
             "not kernels on the GPU): the answers below come from those calls.")


def _print_driver(out: Out, d: dict[str, Any]) -> None:
    """The answers of a driver-call trace, table by table."""
    ln = d["lines"]
    reasons = "; ".join(f"{c:,} {r}" for r, c in ln["skipped_by_reason"].items())
    out.line(f"Lines: {ln['total']:,} non-blank, {ln['json']:,} JSON objects, {ln['skipped']:,} skipped"
             + (f" ({reasons})" if reasons else ""))
    _print_driver_calls(out, d)
    _print_driver_pipeline(out, d)
    _print_driver_memory(out, d)
    if d["unfinished_calls"] or d["calls_without_begin"]:
        out.line(f"Calls without an end line: {d['unfinished_calls']:,}; without a begin line: "
                 f"{d['calls_without_begin']:,} (see the warnings)")


def _call_rows(rows: list[dict[str, Any]]) -> list[list[Cell]]:
    return [[_name(r["name"]), _n(r["count"]), _n(r["total_us"] / 1e3), _n(r["mean_us"]), _n(r["errors"])]
            for r in rows[:DRIVER_TOP]]


def _print_driver_calls(out: Out, d: dict[str, Any]) -> None:
    calls = d["calls"]
    cols = [Col("call", False), Col("count"), Col(f"total {units.MS}"), Col(f"mean {units.US}"), Col("errors")]
    more = f" (top {DRIVER_TOP} of {len(calls):,})" if len(calls) > DRIVER_TOP else ""
    out.table(f"API calls by count{more} (errors: a non-zero return value)", cols, _call_rows(calls))
    if len(calls) > DRIVER_TOP:
        by_time = sorted(calls, key=lambda r: (-r["total_us"], -r["count"], r["name"]))
        out.table(f"API calls by time{more}", cols, _call_rows(by_time))
    fams = d["call_families"]
    if any(len(f["names"]) > 1 for f in fams):
        out.table("Call families (_v2, _ptsz ... variants together)",
                  [Col("family", False), Col("count"), Col(f"total {units.MS}"), Col("names", False)],
                  [[_name(f["family"]), _n(f["count"]), _n(f["total_us"] / 1e3), _name(", ".join(f["names"]))]
                   for f in fams[:DRIVER_TOP]])


def _print_driver_pipeline(out: Out, d: dict[str, Any]) -> None:
    phases = d["phases"]
    pids = list(dict.fromkeys(p["pid"] for p in phases))
    moved = any(p["transfers_bytes"] is not None for p in phases)
    cols = [Col("phase", False), Col(f"start {units.MS}"), Col(f"dur {units.MS}"), Col("calls"), Col("launch"),
            Col("sync"),
            Col("alloc"), *([Col("bytes moved")] if moved else [])]
    for pid in pids:  # one table per process
        title = "Pipeline phases (calls by their start)" + (f", pid {pid}" if len(pids) > 1 else "")
        out.table(title, cols, [[_name(p["name"]), _n(p["start_us"] / 1e3), _n(p["dur_us"] / 1e3), _n(p["calls"]),
                                 _n(p["launches"]), _n(p["syncs"]), _n(p["allocations"]),
                                 *([_n(p["transfers_bytes"])] if moved else [])]
                                for p in phases if p["pid"] == pid])
    out.line(f"Kernel launches: {d['kernel_launches']:,} (from {d['kernel_launches_from']}; launch calls "
             f"{d['launch_calls']:,}, graph launch calls {d['graph_launch_calls']:,})")
    by_api = d["launch_calls_by_api"]
    if by_api["driver"] and by_api["runtime"]:
        out.line(f"note: {by_api['runtime']:,} launch calls of the runtime API (cuda*) and {by_api['driver']:,} of the "
                 "driver API (cu*) are all counted; a runtime call the tracer also saw enter libcuda counts twice",
                 "dim")
    out.table("Kernel launch configurations (launch records)",
              [Col("grid", False), Col("block", False), Col("threads"), Col("count")],
              [[_name("x".join(map(str, c["grid"]))), _name("x".join(map(str, c["block"]))), _n(c["threads"]),
                _n(c["count"])] for c in d["launch_configs"]])
    it = d["iterations"]
    if it["count"]:
        out.line(f"Iterations (kernel launches between two synchronize calls of a process): {it['count']:,}; "
                 f"launches per iteration: median {it['launches_per_iteration']:,.1f}, min {it['min']:,}, "
                 f"max {it['max']:,}, mean {it['mean']:,.2f}")
    else:
        out.line("Iterations: none (no synchronize call follows a kernel launch)")
    sy = d["sync"]
    out.line(f"Synchronize calls: {sy['count']:,}, {sy['total_us'] / 1e3:,.3f} {units.MS} of host time")
    out.table("Synchronize calls by name", [Col("call", False), Col("count"), Col(f"total {units.MS}"),
                                            Col(f"max {units.US}")],
              [[_name(r["name"]), _n(r["count"]), _n(r["total_us"] / 1e3), _n(r["max_us"])] for r in sy["by_name"]])
    ia = d["idle_after_sync"]
    out.line(f"GPU idle after synchronize (a synchronize's return to the next launch): {ia['count']:,} gaps, "
             f"{ia['total_us'] / 1e3:,.3f} {units.MS} in all, longest {ia['max_us']:,.3f} {units.US}")
    cv = d["compute_vs_transfer"]
    ratio = f"{cv['ratio']:,.2f}" if cv["ratio"] is not None else "no transfer time"
    out.line(f"Compute vs transfer: compute {cv['compute_us'] / 1e3:,.3f} {units.MS} (sync wait closing iterations "
             f"{cv['sync_wait_us'] / 1e3:,.3f} + launch calls {cv['launch_call_us'] / 1e3:,.3f}), transfer "
             f"{cv['transfer_us'] / 1e3:,.3f} {units.MS} ({d['transfers_from']}); ratio {ratio}")


def _print_driver_memory(out: Out, d: dict[str, Any]) -> None:
    out.table(f"Transfers (from {d['transfers_from']})",
              [Col("direction", False), Col("count"), Col("bytes"), Col(f"total {units.US}"), Col(units.GBPS)],
              [[_name(k), _n(r["count"]), _n(r["bytes"]), _n(r["total_us"]), _n(r["gb_per_s"], 2)]
               for k, r in d["transfers"].items() if r["count"]])
    out.table("Kernel-space ioctls by command", [Col("cmd", False), Col("count"), Col(f"total {units.US}"),
                                                 Col(f"mean {units.US}"),
                                                  Col("errors")],
              [[_name(r["cmd"] or "(none)"), _n(r["count"]), _n(r["total_us"]), _n(r["mean_us"]), _n(r["errors"])]
               for r in d["ioctls"][:DRIVER_TOP]])
    out.table("ioctl system calls by command", [Col("cmd", False), Col("count")],
              [[_name(r["cmd"] or "(none)"), _n(r["count"])] for r in d["syscall_ioctls"][:DRIVER_TOP]])
    al = d["allocations"]
    if al["count"] or al["free_calls"]:
        sizes = (f", {al['bytes']:,} bytes, peak {al['peak_bytes']:,} bytes allocated"
                 if al["bytes"] is not None else " (no sizes: the trace has no allocation records)")
        out.line(f"Allocations: {al['count']:,} (from {al['from']}){sizes}; alloc calls {al['alloc_calls']:,}, "
                 f"free calls {al['free_calls']:,}")
    km = al["kernel_memory"]
    if km["count"]:
        out.line(f"Kernel-space allocations: {km['count']:,}, {km['bytes']:,} bytes")
