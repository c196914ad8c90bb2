"""What the raw-args screen (``a``) lists for an event: its own fields, every key of its
``args`` as the file has it, and for GPU work its launch call's args (and, in a trace linked
to a driver-call trace, the linked Kineto call's).  Values stay trace data."""

from __future__ import annotations

from typing import Any

from ... import units
from ...driver.facts import is_driver_event, linked_kineto
from ...names import shown


def event_sections(kt: Any, node: int) -> list[tuple[str, dict[str, Any]]]:
    """(section title, {name: value}) of a Kineto node: its fields, its args, and for GPU
    work its launch call's args (the calls named cut: :func:`tracetui.names.shown`; the event's
    own ``name`` field whole, for copying)."""
    if node >= kt.n_events:
        lane = kt.lane_of_node(node)
        return [("lane", {"label": lane.label, "pid": lane.pid, "tid": lane.tid})] if lane is not None else []
    fields = {"name": kt.name(node), "cat": kt.category(node), "ph": chr(int(kt.ph[node])), "pid": kt.pids[node],
              "tid": kt.tids[node], f"ts ({units.US}, from the trace start)": float(kt.ts[node]),
              f"ts ({units.US}, as in the file)": kt.abs_ts_us(node), f"dur ({units.US})": float(kt.dur[node])}
    if is_driver_event(kt, node):  # the driver file's own clock (in µs; its lines give ms or s)
        del fields[f"ts ({units.US}, as in the file)"]
        own_clock = kt.abs_ts_us(node) - (kt.link.offset_us if kt.link else 0.0)
        fields[f"ts ({units.US}, the driver file's clock)"] = own_clock
    out = [("event", fields), ("args", kt.args(node))]
    launch = int(kt.launch_of[node]) if kt.is_gpu_work(node) else -1
    if launch >= 0:
        out.append((f"launch call args ({shown(kt.name(launch))})", kt.args(launch)))
    runtime = linked_kineto(kt, node)
    if runtime >= 0:
        out.append((f"linked Kineto call args ({shown(kt.name(runtime))})", kt.args(runtime)))
    return out
