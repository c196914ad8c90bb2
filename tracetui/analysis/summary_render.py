"""Rich tables for ``tracetui summary`` (from :func:`tracetui.analysis.summary.build_summary`).

Trace-derived strings (kernel, op and file names) are always wrapped in
:class:`rich.text.Text`, never parsed as markup: a kernel named ``[bold]`` prints as is.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

NAME_WIDTH = 60
_TL_ROWS = (("total_ms", "total span"), ("computation_ms", "computation"), ("exposed_comm_ms", "exposed communication"),
            ("exposed_memcpy_ms", "exposed memcpy"), ("busy_ms", "busy"), ("idle_ms", "idle"),
            ("total_comm_ms", "all communication"), ("total_memcpy_ms", "all memcpy"))


def _name(s: Any) -> Text:
    return Text("" if s is None else str(s), overflow="ellipsis", no_wrap=True)


def _n(v: Any, digits: int = 3) -> str:
    if v is None:
        return ""
    if isinstance(v, int):
        return f"{v:,}"
    return f"{float(v):,.{digits}f}"


def _table(title: str, *cols: tuple[str, bool]) -> Table:
    t = Table(title=Text(title, style="italic"), title_justify="left", show_edge=False, pad_edge=False)
    for header, is_num in cols:
        if is_num:  # numbers are never cut: the name columns give way
            t.add_column(header, justify="right", no_wrap=True, min_width=min(max(len(header), 5), 12))
        else:
            t.add_column(header, max_width=NAME_WIDTH, min_width=8, no_wrap=True, overflow="ellipsis")
    return t


def _console() -> Console:
    """A console on stdout; piped output (no terminal, no $COLUMNS) is 120 columns wide."""
    import os
    import sys

    if not sys.stdout.isatty() and not os.environ.get("COLUMNS"):
        return Console(width=120)
    return Console()


def print_summary(s: dict[str, Any], console: Console | None = None) -> None:
    """Print every section of a summary dict."""
    con = console or _console()
    tr = s["trace"]
    con.print(Text(s["source"], style="bold"))
    con.print(Text(f"{tr['events']:,} events, {tr['gpu_events']:,} GPU events "
                   f"({tr['gpu_events_unlinked']:,} without a launch), {tr['cpu_ops']:,} cpu_ops; "
                   f"devices: {', '.join(str(d) for d in tr['devices']) or 'none listed'}"))
    tl = s["gpu_timeline"]
    tot = tl["total_ms"] or 1.0
    t = _table("GPU timeline (unions over all streams)", ("", False), ("ms", True), ("% of total", True))
    for key, label in _TL_ROWS:
        t.add_row(label, _n(tl[key]), _n(100.0 * tl[key] / tot, 2))
    con.print(t)
    if len(s["gpu_timeline_by_device"]) > 1:
        t = _table("GPU timeline per device (ms)", ("device", False), *((lbl, True) for _, lbl in _TL_ROWS[:6]))
        for d in s["gpu_timeline_by_device"]:
            t.add_row(_name(d["device"]), *(_n(d[k]) for k, _ in _TL_ROWS[:6]))
        con.print(t)
    t = _table("Kernel categories", ("category", False), ("count", True), ("total ms", True), ("%", True))
    for r in s["kernel_categories"]:
        t.add_row(_name(r["category"]), _n(r["count"]), _n(r["total_ms"]), _n(r["percent"], 2))
    con.print(t)
    t = _table("Top kernels", ("name", False), ("category", False), ("count", True), ("total ms", True),
               ("mean µs", True), ("%", True))
    for r in s["kernels"]:
        t.add_row(_name(r["name"]), _name(r["kernel_category"]), _n(r["count"]), _n(r["total_us"] / 1e3),
                  _n(r["mean_us"]), _n(r["percent"], 2))
    con.print(t)
    t = _table("Top ops (GPU direct: its own launches; subtree: everything under it)", ("name", False),
               ("count", True), ("host ms", True), ("GPU direct ms", True), ("GPU subtree ms", True), ("%", True))
    for r in s["ops"]:
        t.add_row(_name(r["name"]), _n(r["count"]), _n(r["host_us"] / 1e3), _n(r["direct_gpu_us"] / 1e3),
                  _n(r["subtree_gpu_us"] / 1e3), _n(r["percent"], 2))
    con.print(t)
    t = _table("Streams (ms; idle = gaps between its events)", ("device:stream", False), ("events", True),
               ("busy", True), ("idle", True), ("host wait", True), ("kernel-to-kernel", True), ("other", True))

    def ms(v: Any) -> str:
        return "" if v is None else _n(v / 1e3)

    for r in s["streams"]:
        t.add_row(_name(f"{r['device']}:{r['stream']}"), _n(r["count"]), ms(r["busy_us"]), ms(r.get("idle_us")),
                  ms(r.get("host_wait_us")), ms(r.get("kernel_to_kernel_us")), ms(r.get("other_us")))
    con.print(t)
    t = _table("Idle gaps by class", ("class", False), ("gaps", True), ("total ms", True), ("mean µs", True),
               ("max µs", True), ("%", True))
    for r in s["idle"]["by_class"]:
        t.add_row(_name(r["idle_class"]), _n(r["count"]), _n(r["total_us"] / 1e3), _n(r["mean_us"]),
                  _n(r["max_us"]), _n(r["percent"], 2))
    con.print(t)
    _print_launches(con, s["launches"])
    for w in s["warnings"]:
        con.print(Text(f"warning: {w}", style="yellow"))


def _print_launches(con: Console, la: dict[str, Any]) -> None:
    t = _table("Launch calls (µs; delay = first GPU start - call start)", ("class", False), ("count", True),
               ("call mean", True), ("call p90", True), ("delay med", True), ("delay p90", True), ("delay max", True))
    for cls, d in la["launch_delay"].items():
        c = la["call_duration"].get(cls, {})
        t.add_row(_name(cls), _n(d["count"]), _n(c.get("mean_us")), _n(c.get("p90_us")), _n(d["median_us"]),
                  _n(d["p90_us"]), _n(d["max_us"]))
    con.print(t)
    sync = la["sync"]
    con.print(Text(f"Synchronisation: {sync['blocking_calls']:,} host-blocking calls, {sync['blocking_us']:,.3f} µs; "
                   f"{sync['cuda_sync_events']:,} cuda_sync events"))
    t = _table("Synchronisation calls", ("call", False), ("count", True), ("total µs", True))
    for name, d in sync["by_name"].items():
        t.add_row(_name(name), _n(d["count"]), _n(d["total_us"]))
    con.print(t)
    if la["copies"]:
        t = _table("Copies", ("direction", False), ("count", True), ("bytes", True), ("total µs", True),
                   ("GB/s", True))
        for r in la["copies"]:
            t.add_row(_name(r["direction"]), _n(r["count"]), _n(r["bytes"]), _n(r["total_us"]), _n(r["gb_per_s"], 2))
        con.print(t)
    al = la["allocations"]
    if al["by_device"] or al["malloc_calls"]:
        con.print(Text(f"Allocation calls: {al['malloc_calls']:,} malloc, {al['malloc_us']:,.3f} µs"))
        t = _table("Allocations ([memory] events)", ("where", False), ("allocs", True), ("bytes", True),
                   ("frees", True), ("peak allocated", True))
        for where, d in al["by_device"].items():
            t.add_row(_name(where), _n(d["allocs"]), _n(d["alloc_bytes"]), _n(d["frees"]),
                      _n(d["peak_allocated_bytes"]))
        con.print(t)
    if la["steps"]:
        t = _table("Profiler steps", ("step", False), ("host ms", True), ("kernel launches", True),
                   ("graph launches", True), ("GPU events", True), ("GPU ms", True))
        for r in la["steps"]:
            t.add_row(_name(r["step"]), _n(r["dur"] / 1e3), _n(r["kernel_launches"]), _n(r["graph_launches"]),
                      _n(r["gpu_events"]), _n(r["gpu_us"] / 1e3))
        con.print(t)
    ratio = la.get("compute_memcpy_ratio")
    con.print(Text("compute / memcpy time: " + (f"{ratio:,.2f}" if ratio is not None else "no memcpy")))
