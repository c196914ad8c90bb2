"""``tracetui info TRACE [--et ET] [--json]``: what is in a trace and how well it linked (one rank's
files; a job's input is told what is wrong with it)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text

from .. import units
from ..errors import one_line
from ..io import jsonout
from .common import add_inputs, load
from .fit_table import stdout_console

if TYPE_CHECKING:
    from ..session import LinkedTrace

NAME = "info"


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(NAME, help="event counts, GPU link and ET link statistics, warnings")
    add_inputs(p)
    p.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace) -> int:
    linked = load(args)
    return print_info(linked, as_json=args.json)


def trace_info(linked: LinkedTrace) -> dict:
    from .. import formats
    from ..analysis.et_summary import et_counts
    from ..analysis.launches import lacks_launch_records
    from ..driver.trace import DriverTrace, event_counts

    out: dict = {"files": [t.path for t in (linked.kineto, linked.et) if t is not None]}
    kt = linked.kineto
    other = formats.other_format(kt) if kt is not None else None
    if other is not None:
        out["format"] = {"name": other.spec.name, "title": other.title}
    if kt is not None:
        out["kineto"] = {
            "events": event_counts(kt).kineto,
            "lanes": [lane.label for lane in kt.lanes],
            "kinds": kt.kind_counts(),
            "categories": kt.category_counts(),
            "device_work": kt.device_work_counts(),
            "gpu_links": dict(kt.gpu_stats.__dict__, unlinked=kt.gpu_stats.unlinked),
            "devices": [d.get("name") for d in kt.device_properties if isinstance(d, dict)],
            "distributed": kt.distributed_info,
        }
        if lacks_launch_records(kt):  # said only where it is so
            out["kineto"]["no_launch_records"] = True
    if linked.et is not None:
        out["et"] = et_counts(linked.et)
    if linked.link is not None:
        out["et_link"] = linked.link.stats.as_dict()
    if isinstance(kt, DriverTrace):
        if kt.link is not None:
            out["files"].append(kt.driver_path)
        st = kt.lines
        counts = event_counts(kt)
        out["driver"] = {"file": kt.driver_path, "events": counts.driver, "phases": counts.phases,
                         "layouts": kt.layouts,
                         "lines": {"total": st.total, "json": st.json, "skipped": st.skipped_total}}
        if kt.link is not None:
            out["driver_link"] = kt.link.as_dict()
    if linked.snapshot_trace is not None:
        out.update(_snapshot_info(linked))
    out["warnings"] = [w.message for w in linked.all_warnings()]
    return out


def _snapshot_info(linked: LinkedTrace) -> dict:
    """The ``memory_snapshot`` key (what the file holds) and, beside a trace, ``memory_link``."""
    st = linked.snapshot_trace
    snap = st.snapshot
    out: dict = {"memory_snapshot": {
        "file": st.path, "protocol": snap.protocol, "file_size": snap.file_size, "entries": snap.history.n,
        "actions": snap.action_counts(), "devices": snap.n_devices, "segments": snap.segments.n,
        "blocks": snap.blocks.n, "frames": snap.frames.n, "stacks": snap.stacks.n,
        "annotations": snap.annotations.n, "other_keys": snap.other_keys}}
    if linked.memory is not None:
        from ..link.memsnap_kineto import link_clocks

        out["files"] = [*([linked.kineto.path] if linked.kineto else []), *([linked.et.path] if linked.et else []),
                        st.path]
        c = link_clocks(linked.kineto, snap)
        out["memory_link"] = None if c is None else {
            "offset_us": c.offset_us, "pairs": c.pairs, "names": c.names, "spread_us": c.spread_us,
            "clock_difference_us": c.clock_difference_us}
    return out


def print_info(linked: LinkedTrace, *, as_json: bool = False) -> int:
    info = trace_info(linked)
    if as_json:
        sys.stdout.write(jsonout.dumps(info, indent=True).decode() + "\n")
        return 0
    con, _ = stdout_console()
    for f in info["files"]:
        con.print(Text(one_line(f), style="bold"))
    if "format" in info:
        con.print(Text(f"{info['format']['title']} (in the Kineto model: the same categories and args)"))
    if "kineto" in info:
        k = info["kineto"]
        t = Table(title=f"{info['format']['title']} events by category" if "format" in info
                  else "Kineto events by category")
        t.add_column("category")
        t.add_column("events", justify="right")
        for c, v in sorted(k["categories"].items(), key=lambda kv: -kv[1]):
            t.add_row(Text(one_line(str(c))), f"{v:,}")
        con.print(t)
        g, w = k["gpu_links"], k["device_work"]
        parts = ([f"{w['kernels']:,} kernels"] if w["kernels"] is not None else []) + [
            f"{w['memcpy']:,} memcpy", f"{w['memset']:,} memset"]
        called = w["called"][:1].upper() + w["called"][1:]
        con.print(Text(f"{called} {w['events']:,} ({', '.join(parts)}): linked to launch "
                       f"{g['linked']:,}, "
                       f"launch not in trace {g['launch_missing']:,}, no correlation {g['no_correlation']:,}, "
                       f"graph launches {g['graph_launches']:,} owning {g['graph_kernels']:,}"))
        if k.get("no_launch_records"):
            con.print(Text("No launch records: the trace holds no runtime or driver call, so none of its "
                           f"{w['called']} is linked to what launched it (each is listed under its stream)",
                           style="yellow"))
    if "et" in info:
        e = info["et"]
        threads = ", ".join(f"tid {t['tid']}: {t['ops']:,}" for t in e["threads"])
        con.print(Text(one_line(f"Execution Trace (schema {e['schema']}, {e['layout']} layout, pid {e['pid']}, "
                                f"{e['time']}): {e['nodes']:,} nodes, {e['ops']:,} ops on "
                                f"{len(e['threads']):,} threads "
                                f"({threads}); ops with rf_id {e['ops_with_rf_id']:,}, with seq_id "
                                f"{e['ops_with_seq_id']:,}")))
    if "et_link" in info:
        s = info["et_link"]
        con.print(Text(one_line(f"ET link ({s['method']}): linked {s['linked']:,} of {s['et_ops']:,} ET ops (by rf_id "
                                f"{s['by_rf_id']:,}, by sequence number {s['by_sequence']:,}, by order "
                                f"{s['by_order']:,}; heuristic {s['heuristic']:,}), ET-only {s['et_only']:,}, "
                                f"Kineto-only {s['kineto_only']:,}"
                                + (f"; iteration: {s['window']}" if s.get("window") else ""))))
    if "driver" in info:
        d = info["driver"]
        ln = d["lines"]
        con.print(Text(f"Driver-call trace: {d['events']:,} events from {ln['json']:,} JSON lines of {ln['total']:,} "
                       f"({ln['skipped']:,} skipped), {d['phases']:,} phases derived from them; layouts: "
                       + ", ".join(f"{k} {v:,}" for k, v in d["layouts"].items())))
    if "driver_link" in info:
        s = info["driver_link"]
        con.print(Text(f"Driver link ({s['method']}): linked {s['linked']:,} of {s['kineto_calls']:,} Kineto calls "
                       f"({s['confirmed']:,} launches confirmed by grid and block), {s['driver_calls']:,} driver "
                       f"calls; clock offset {s['offset_us']:+,.1f} {units.US} ± "
                       f"{s['uncertainty_us']:,.1f} {units.US}; heuristic"))
    if "memory_snapshot" in info:
        m = info["memory_snapshot"]
        con.print(Text(one_line(f"CUDA memory snapshot (pickle protocol {m['protocol']}): {m['entries']:,} history "
                                f"entries on {m['devices']:,} device(s) ("
                                + ", ".join(f"{k} {v:,}" for k, v in m["actions"].items())
                                + f"), {m['segments']:,} segments with {m['blocks']:,} blocks, {m['frames']:,} "
                                  f"distinct frames in {m['stacks']:,} stacks, {m['annotations']:,} annotation "
                                  "marks")))
    if "memory_link" in info:
        c = info["memory_link"]
        con.print(Text("Memory snapshot clock: not linked (no profiler annotation in common)" if c is None else
                       f"Memory snapshot clock: linked by {c['pairs']:,} annotation marks ({c['names']:,} names), "
                       f"the farthest {c['spread_us']:,.1f} {units.US} off"))
    for w in info["warnings"]:
        con.print(Text(one_line("warning: " + w), style="yellow"))
    return 0
