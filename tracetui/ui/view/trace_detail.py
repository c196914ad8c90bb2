"""The detail pane: everything known about the selected row, as Rich renderables.

:func:`build_detail` is pure (model in, renderables out) so it can be tested and timed
without a terminal; :class:`~tracetui.ui.detail.detail_pane.DetailPane` is the scrolling widget that shows it.
Trace strings (names, schemas, args) always go through ``Text`` (as
:class:`~.detail_text.KeepText`, which keeps a number with its unit when wrapping): never markup.
Durations are shown in human units (source values are microseconds).
"""

from __future__ import annotations

from typing import Any

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from ... import units
from ...analysis.node_stats import gpu_work_summary, lane_activity
from ...analysis.occupancy import kernel_occupancy
from ...analysis.roofline import op_roofline
from ...driver.facts import driver_of
from ...kineto import schema
from ...kineto.kinds import GPU_WORK_KINDS, Kind
from ...kineto.launch_facts import external_id_is_correlation
from ...names import shown, shown_in_pane
from ...units import bytes_text, format_duration_us, format_time_us
from ...units import duration_exact as _dur
from .counter_rows import counter_sections
from .detail_section import DetailSection, render_sections
from .detail_section import cell as _t
from .detail_section import grid as _grid
from .driver_detail import DriverDetail, kineto_call_rows
from .format_args import flow_sections, format_args_sections
from .keep_text import WIDE, KeepText, name_length
from .kernel_rows import grid_facts, occupancy_rows
from .memory_rows import memory_sections
from .trace_row_source import ET_ROOT_LABEL, KIND_STYLES, TraceRowSource

TOP_KERNELS = 5


def _table(columns: list[str], right: tuple[str, ...] = (), whole: tuple[str, ...] = ()) -> Table:
    """An argument table.  Columns in ``whole`` (numbers, ids) never wrap; the others wrap
    at spaces.  The table is marked ``keep_whole``: the detail pane renders it at least
    at its minimum width (scrolling sideways when the pane is narrower), so no cell is cut."""
    table = Table(box=None, padding=(0, 1), show_edge=False, header_style="bold")
    for col in columns:
        table.add_column(col, overflow="fold", justify="right" if col in right else "left", no_wrap=col in whole)
    table.keep_whole = True  # type: ignore[attr-defined]
    return table


def _prod(v: Any) -> int | None:
    if isinstance(v, list) and v and all(isinstance(x, int) for x in v):
        out = 1
        for x in v:
            out *= x
        return out
    return None


class TraceDetail:
    """Builds the detail of one node of a :class:`TraceRowSource`."""

    def __init__(self, source: TraceRowSource, categorizer: Any = None) -> None:
        self.src = source
        self.categorizer = categorizer
        self.width = 80  #: cells available; narrower than WIDE gives one line per argument

    # ------------------------------------------------------------------ entry
    def sections(self, node: int | None, width: int | None = None) -> list[DetailSection]:
        """The detail of ``node`` of the row source (:class:`~.section.DetailModel`); with a
        critical path computed (``P``), its section for the row's Kineto event last."""
        out = self._sections(node, width)
        src = self.src
        k = src.kineto_of(node) if node is not None and src.kt is not None else -1
        if 0 <= k < src.kt.n_events and k == node and not (driver_of(src.kt) is not None and src.kt.is_driver_event(k)):
            out = out + format_args_sections(src.kt, k) + flow_sections(src.kt, k)  # another format's
        if src.path is not None and 0 <= k < src.kt.n_events:
            out = out + src.path.sections(k)
        return out

    def _sections(self, node: int | None, width: int | None = None) -> list[DetailSection]:
        if width is not None:
            self.width = width
        src = self.src
        if node is None:
            return [DetailSection(None, [KeepText("Nothing selected.", style="dim")])]
        if node == src.et_root:
            return self._et_root()
        if not src.is_kineto(node):
            return self._et_node(node - src.et_base)
        kt = src.kt
        if node >= kt.n_events:
            return self._lane(node)
        if driver_of(kt) is not None and kt.is_driver_event(node):
            return DriverDetail(kt, self._start, self._op_line).sections(node)
        kind = Kind(int(kt.kind[node]))
        if kind in GPU_WORK_KINDS:
            return self._gpu_work(node, kind)
        if kind in (Kind.RUNTIME, Kind.DRIVER):
            return self._runtime(node, kind)
        if kind == Kind.GPU_ANNOTATION:
            return self._gpu_annotation(node)
        return self._host_op(node, kind) + counter_sections(kt, node)

    def build(self, node: int | None, note: Text | None = None, width: int | None = None) -> RenderableType:
        """The pane's content for ``node`` (its sections after ``note``), e.g. to print it."""
        return render_sections(self.sections(node, width), note)

    # ------------------------------------------------------------------ helpers
    def _title(self, name: str, style: str, what: str) -> list[RenderableType]:
        title = KeepText(shown_in_pane(name), style=f"bold {style}".strip(), overflow="fold")
        return [*name_length(name), title, KeepText(what, style="dim")]

    def _start(self, ev: int) -> str:
        return "+" + format_time_us(float(self.src.kt.ts[ev]))

    def _op_line(self, ev: int) -> Text:
        kt = self.src.kt
        line = KeepText(shown(kt.name(ev)), style=KIND_STYLES.get(Kind(int(kt.kind[ev])), ""))
        line.append(f"  {format_duration_us(float(kt.dur[ev]))}", style="dim")
        ext = int(kt.external_id[ev])
        if ext >= 0 and not external_id_is_correlation(kt, ev):
            line.append(f"  ext {ext}", style="dim")
        return line

    def _ext_row(self, ev: int) -> list[tuple[str, Any]]:
        """The External id row; an old-format id (equal to the correlation) is labelled as such."""
        ext = int(self.src.kt.external_id[ev])
        if ext < 0:
            return []
        if external_id_is_correlation(self.src.kt, ev):
            text = KeepText(f"{ext} ")
            text.append("(equals the correlation, as in older traces: not the launching op's External id)",
                        style="dim")
            return [(schema.EXTERNAL_ID, text)]
        return [(schema.EXTERNAL_ID, ext)]

    def et_ref(self, pos: int) -> Text:
        """``ET node 123 · rf_id 456 · aten::addmm`` (+ heuristic flag)."""
        et, link = self.src.et, self.src.link
        text = KeepText(f"ET node {int(et.ids[pos])} · rf_id {int(et.rf_id[pos])} · ")
        text.append(shown(et.name(pos)), style="bright_cyan")
        if link is not None and bool(link.heuristic[pos]):
            text.append(f"  (heuristic link, found by {link.found_by_name(pos)})", style="yellow")
        return text

    def _ids(self, ev: int) -> list[tuple[str, Any]]:
        kt, src = self.src.kt, self.src
        rows: list[tuple[str, Any]] = self._ext_row(ev)
        if int(kt.rf_id[ev]) > 0:
            rows.append((schema.RECORD_FUNCTION_ID, int(kt.rf_id[ev])))
        if int(kt.seq[ev]) >= 0:
            rows.append((schema.SEQUENCE_NUMBER, int(kt.seq[ev])))
        if int(kt.correlation[ev]) >= 0:
            rows.append(("Correlation", int(kt.correlation[ev])))
        pos = src.et_pos(ev)
        if pos >= 0:
            rows.append(("ET", self.et_ref(pos)))
        elif src.et is not None:
            rows.append(("ET", _t("no linked ET node", "dim")))
        return rows

    def _gpu_summary(self, node: int, jump: str = "> goes to the first GPU event, > again to the next"
                     ) -> list[DetailSection]:
        kt = self.src.kt
        summary = gpu_work_summary(kt, self.src.gpu_events(node), TOP_KERNELS)
        if summary is None:
            return []
        table = Table(box=None, padding=(0, 1), show_edge=False, header_style="bold", expand=True)
        table.add_column("GPU work", overflow="ellipsis", no_wrap=True, ratio=1)
        table.add_column("n", justify="right", no_wrap=True)
        table.add_column("total", justify="right", no_wrap=True)
        for name_id, count, total in summary.top:
            table.add_row(_t(shown(kt.names[name_id])), _t(f"{count:,}"), _t(format_duration_us(total)))
        head = _grid([("GPU events", f"{summary.n_events:,} (kernels {summary.n_kernels:,})"),
                      ("GPU time", _dur(summary.total_us)),
                      ("GPU span", format_duration_us(summary.span_us)),
                      ("Jump", _t(jump, "dim"))])
        return [DetailSection("GPU work launched", [head, table])]

    # ------------------------------------------------------------------ kinds
    def _host_op(self, ev: int, kind: Kind) -> list[DetailSection]:
        src, kt = self.src, self.src.kt
        lane = kt.lane_of_node(ev)
        parts = self._title(kt.name(ev), KIND_STYLES.get(kind, ""), f"{kt.category(ev)} · {lane.label if lane else ''}")
        pos = src.et_pos(ev)
        et_node = src.et.node(pos) if pos >= 0 else None
        rows: list[tuple[str, Any]] = [
            ("Duration", _dur(float(kt.dur[ev]))),
            ("Start", self._start(ev)),
        ]
        if et_node is not None and et_node.op_schema:
            rows.append(("Schema", _t(et_node.op_schema)))
        rows += self._ids(ev)
        fwd = int(kt.fwd_of[ev])
        if fwd >= 0:
            rows.append(("Forward op", self._op_line(fwd)))
        parent_op = int(kt.cpu_op_of[int(kt.parent[ev])]) if int(kt.parent[ev]) >= 0 else -1
        if parent_op >= 0 and parent_op != ev:
            rows.append(("Inside op", self._op_line(parent_op)))
        parts.append(_grid(rows))
        out = [DetailSection(None, parts)]
        args = kt.args(ev)
        used_et = et_node is not None and bool(et_node.inputs or et_node.outputs)
        if used_et:
            out += self._et_args(et_node)
        else:
            out += self._kineto_args(args)
        concrete = args.get(schema.CONCRETE_INPUTS)
        if used_et and isinstance(concrete, list) and any(c not in ("", None) for c in concrete):
            out[-1].body.append(_grid([(schema.CONCRETE_INPUTS,
                                        _t(", ".join(repr(c) if c != "" else "·" for c in concrete)))]))
        if kind == Kind.CPU_OP:
            out += self._roofline(ev, et_node)
        out += self._gpu_summary(ev)
        return out + memory_sections(kt, ev)

    def _roofline(self, ev: int, et_node: Any = None) -> list[DetailSection]:
        """FLOPs and bytes from the op's shapes (Kineto's, else its ET node's) and where its GPU
        time puts it on the device's roofline (analysis/roofline.py); nothing when the op's
        FLOPs are not known."""
        got = op_roofline(self.src.kt, ev, et_node=et_node)
        if got is None:
            return []
        c, r = got
        rows: list[tuple[str, Any]] = [("FLOPs", f"{c.flops:,}  ({c.formula})"),
                                       ("Bytes moved", bytes_text(c.bytes) + "  (tensors read + written once)")]
        if r.intensity is not None:
            rows.append(("Intensity", f"{r.intensity:,.2f} {units.FLOP_PER_BYTE}"))
        if r.tflops_per_s is None:
            rows.append(("Throughput", _t("no GPU time under this op", "dim")))
            return [DetailSection.of_rows("Cost (from the shapes)", rows)]
        rows.append(("Throughput", f"{r.tflops_per_s:,.3f} {units.TFLOPS} · {r.gbps:,.1f} {units.GBPS} over "
                                   f"{format_duration_us(r.gpu_us)} of GPU time"))
        if r.peak_tflops is not None:
            rows.append(("Peak", f"{r.device}: {r.compute_type} {r.peak_tflops:g} {units.TFLOPS}, "
                                 f"{r.peak_gbps:g} {units.GBPS}"))
            if r.pct_of_peak is not None:
                rows.append(("Roofline",
                             f"{r.pct_of_peak:.1f} {units.PCT} of the roof at this intensity · {r.bound} bound"))
        else:
            rows.append(("Peak", _t("device not in the peak table (see docs/roofline.md)", "dim")))
        return [DetailSection.of_rows("Cost (from the shapes)", rows)]

    def _kineto_args(self, args: dict[str, Any]) -> list[DetailSection]:
        dims, types, strides = args.get(schema.INPUT_DIMS), args.get(schema.INPUT_TYPE), args.get(schema.INPUT_STRIDES)
        concrete = args.get(schema.CONCRETE_INPUTS)
        if not isinstance(dims, list) and not isinstance(types, list):
            return []
        n = max(len(x) for x in (dims, types, strides, concrete) if isinstance(x, list))

        def at(seq: Any, i: int) -> str:
            if isinstance(seq, list) and i < len(seq):
                v = seq[i]
                return "" if v in ("", None) else str(v)
            return ""

        rows = [(str(i), at(dims, i), at(strides, i), at(types, i), at(concrete, i)) for i in range(n)]
        has_concrete = any(r[4] for r in rows)
        heading = "Inputs (Kineto record_shapes)"
        if self.width >= WIDE:
            table = _table(["#", "shape", "strides", "dtype"] + (["concrete"] if has_concrete else []), whole=("#",))
            for r in rows:
                table.add_row(*(_t(x) for x in (r if has_concrete else r[:4])))
            return [DetailSection(heading, [table])]
        lines: list[RenderableType] = []
        for i, shape, stride, dtype, conc in rows:
            line = KeepText(f"{i:>2} ", style="bold")
            line.append(" ".join(x for x in (dtype, shape) if x))
            if stride:
                line.append(f" strides {stride}", style="dim")
            if conc:
                line.append(f" = {conc}")
            lines.append(line)
        return [DetailSection(heading, lines)]

    def _et_args(self, node: Any) -> list[DetailSection]:
        out: list[DetailSection] = []
        wide = self.width >= WIDE
        for title, args in (("Inputs (ET)", node.inputs), ("Outputs (ET)", node.outputs)):
            if not args:
                continue
            parts: list[RenderableType] = []
            out.append(DetailSection(title, parts))
            scalars: list[RenderableType] = []  # wide: listed under the tensor table, not squeezed into it
            rows: list[tuple[str, ...]] = []
            for label, arg in _flatten_args(args):
                v = arg.value
                tensor = hasattr(v, "tensor_id")
                scalar = f"{arg.type or '?'} = {v!r}" if v is not None else f"{arg.type or 'None'}"
                if wide and tensor:
                    rows.append((label, _shape(v.shape), _shape(v.stride), str(v.dtype), str(v.device),
                                 str(v.tensor_id), str(v.storage_id), f"{v.nbytes:,} {units.B}"))
                elif tensor:
                    line = KeepText(f"{label:>2} ", style="bold")
                    line.append(f"{v.dtype} {_shape(v.shape)} {v.device} {v.nbytes:,} {units.B}")
                    line.append(f"\n   strides {_shape(v.stride) or '?'} · tensor {v.tensor_id} · "
                                f"storage {v.storage_id}", style="dim")
                    parts.append(line)
                else:
                    line = KeepText(f"{label:>2} ", style="bold")
                    line.append(scalar)
                    (scalars if wide else parts).append(line)
            if rows:
                parts.append(_tensor_table(rows))
            parts += scalars
        return out

    def _runtime(self, ev: int, kind: Kind) -> list[DetailSection]:
        kt = self.src.kt
        lane = kt.lane_of_node(ev)
        parts = self._title(kt.name(ev), KIND_STYLES.get(kind, ""), f"{kt.category(ev)} · {lane.label if lane else ''}")
        rows: list[tuple[str, Any]] = [("Duration", _dur(float(kt.dur[ev]))), ("Start", self._start(ev))]
        rows += self._ids(ev)
        cbid = kt.args(ev).get(schema.CBID)
        if cbid is not None:
            rows.append((schema.CBID, cbid))
        op = int(kt.cpu_op_of[ev])
        if op >= 0:
            rows.append(("Called by op", self._op_line(op)))
        driver = kineto_call_rows(kt, ev)  # a trace linked to a driver-call trace: the driver call it made
        rows += driver
        parts.append(_grid(rows))
        return [DetailSection(None, parts)] + self._gpu_summary(
            ev, "> goes to the driver call first, then to the GPU events" if any(key == "Jump" for key, _ in driver)
            else "> goes to the first GPU event, > again to the next")

    def _gpu_work(self, ev: int, kind: Kind) -> list[DetailSection]:
        src, kt = self.src, self.src.kt
        args = kt.args(ev)
        dev = int(kt.device[ev]) if int(kt.device[ev]) >= 0 else args.get(schema.DEVICE, kt.pids[ev])  # MTIA: no arg
        category = None
        if self.categorizer is not None:
            try:
                category = self.categorizer.categorize(kt.name(ev), kind.name.lower())
            except Exception:  # a user rule that fails must not break the pane
                category = None
        dur = float(kt.dur[ev])
        # one line with the key facts first, so a short pane (80x24) shows them unscrolled
        facts = [kt.category(ev), format_duration_us(dur)]
        launch = int(kt.launch_of[ev])
        grid_f, grid_rows = grid_facts(args, kt.name(launch) if launch >= 0 else None)
        if kind == Kind.KERNEL:
            facts += grid_f
        elif isinstance(args.get(schema.BYTES), (int, float)):
            facts.append(bytes_text(args[schema.BYTES]).split(" (")[0])
        if category:
            facts.append(f"category {category}")
        parts = [KeepText(" · ".join(f for f in facts if f), style="dim"), *name_length(kt.name(ev)),
                 KeepText(shown_in_pane(kt.name(ev)), style=f"bold {KIND_STYLES.get(kind, '')}".strip(),
                          overflow="fold")]
        rows: list[tuple[str, Any]] = [("Duration", _dur(dur)), ("Start", self._start(ev))]
        if kind == Kind.KERNEL:
            rows += grid_rows + [
                ("Threads/block", _prod(args.get(schema.BLOCK))),
                ("Registers/thread", args.get(schema.REGISTERS_PER_THREAD)),
                ("Shared memory", bytes_text(args[schema.SHARED_MEMORY]) if schema.SHARED_MEMORY in args else None),
            ] + occupancy_rows(args, kernel_occupancy(kt, ev))
        else:
            nbytes = args.get(schema.BYTES)
            bw = args.get(schema.MEMORY_BANDWIDTH)
            if bw is None and isinstance(nbytes, (int, float)) and dur > 0:
                bw = nbytes / (dur * 1e3)
            rows += [("Kind", shown(kt.name(ev))), ("Bytes", bytes_text(nbytes) if nbytes is not None else None),
                     ("Bandwidth", f"{bw:.4g} {units.GBPS}" if isinstance(bw, (int, float)) else None)]
        dname = kt.device_name(dev) if isinstance(dev, int) else None
        rows.append(("Device", f"{dev}" + (f" · {dname}" if dname else "")))
        rows.append(("Stream", int(kt.stream[ev]) if int(kt.stream[ev]) >= 0 else args.get(schema.STREAM)))
        if int(kt.correlation[ev]) >= 0:
            rows.append(("Correlation", int(kt.correlation[ev])))
        rows += self._ext_row(ev)
        if launch >= 0:
            rows.append(("Launch call", self._op_line(launch)))
            delay = float(kt.ts[ev] - kt.ts[launch])
            rows.append(("Launch→start", f"{format_duration_us(delay)} after the launch call began"))
        else:
            rows.append(("Launch call", _t("none in the trace (GPU-only event)", "dim")))
        op = int(kt.cpu_op_of[ev])
        if op >= 0:
            rows.append(("Launched by op", self._op_line(op)))
            pos = src.et_pos(op)
            if pos >= 0:
                rows.append(("ET op", self.et_ref(pos)))
            rows.append(("Jump", _t("< goes to the launching op", "dim")))
        parts.append(_grid(rows))
        return [DetailSection(None, parts)]

    def _gpu_annotation(self, ev: int) -> list[DetailSection]:
        kt = self.src.kt
        parts = self._title(kt.name(ev), KIND_STYLES[Kind.GPU_ANNOTATION], kt.category(ev))
        parts.append(_grid([("Duration", _dur(float(kt.dur[ev]))), ("Start", self._start(ev)),
                            ("Device", kt.pids[ev]), ("Stream", kt.tids[ev])] + self._ids(ev)))
        return [DetailSection(None, parts)]

    def _lane(self, node: int) -> list[DetailSection]:
        src, kt = self.src, self.src.kt
        lane = kt.lanes[node - kt.n_events]
        busy_mask = src.gpu_work if lane.is_gpu else (kt.kind != int(Kind.INSTANT))
        act = lane_activity(kt, lane.index, busy_mask)
        parts: list[RenderableType] = [KeepText(shown(lane.label), style="bold", overflow="fold"),
                                       KeepText("GPU stream" if lane.is_gpu else "CPU thread", style="dim")]
        rows: list[tuple[str, Any]] = []
        if lane.is_gpu:
            dname = kt.device_name(lane.pid) if isinstance(lane.pid, int) else None
            rows.append(("Device", f"{lane.pid}" + (f" · {dname}" if dname else "")))
            rows.append(("Stream", lane.tid))
        else:
            rows += [("Process", lane.pid), ("Thread", lane.tid)]
        counts = ", ".join(f"{k.name.lower()} {c:,}" for k, c in act.kind_counts.items())
        rows.append(("Events", counts or "none"))
        if act.span_us is not None and act.busy_us is not None and act.start_us is not None:
            span, busy = act.span_us, act.busy_us
            rows += [("Span", f"{format_duration_us(span)} (from +{format_time_us(act.start_us)})"),
                     ("Busy",
                      f"{format_duration_us(busy)} ({100 * busy / span:.1f}{units.PCT} of span)" if span > 0 else
                      format_duration_us(busy)),
                     ("Idle", format_duration_us(act.idle_us) if act.idle_us is not None else None)]
        if not lane.is_gpu and int(src.gpu_count[node]):
            rows.append(("GPU work launched", f"{int(src.gpu_count[node]):,} events, "
                                              f"{format_duration_us(float(src.gpu_time[node]))}"))
        parts.append(_grid(rows))
        return [DetailSection(None, parts)] + memory_sections(kt, node)

    def _et_root(self) -> list[DetailSection]:
        s = self.src.link.stats
        return [DetailSection(None, [KeepText(ET_ROOT_LABEL, style="bold"),
                KeepText("ET threads with ops that have no Kineto event (ET records every thread; "
                     "Kineto only the profiled ones).", style="dim"),
                _grid([("Link method", s.method), ("ET ops", f"{s.et_ops:,}"), ("Linked", f"{s.linked:,}"),
                       ("by rf_id", f"{s.by_rf_id:,}"), ("by sequence number", f"{s.by_sequence:,}"),
                       ("by order", f"{s.by_order:,}"), ("Heuristic", f"{s.heuristic:,}"),
                       ("Iteration", s.window or None), ("ET-only", f"{s.et_only:,}"),
                       ("Kineto-only", f"{s.kineto_only:,}")])])]

    def _et_node(self, pos: int) -> list[DetailSection]:
        src = self.src
        et = src.et
        node = et.node(pos)
        parts = self._title(node.name, "bright_cyan", "Execution Trace node")
        rows: list[tuple[str, Any]] = [("ET id", node.id), ("rf_id", node.rf_id), ("Schema", _t(node.op_schema)),
                                       ("Thread (ET tid)", node.tid),
                                       ("Sequence id", node.seq_id if node.seq_id >= 0 else None),
                                       ("Forward parent", node.fw_parent if node.fw_parent > 0 else None),
                                       ("Scope", node.scope)]
        k = int(src.link.et_to_kineto[pos]) if src.link is not None else -1
        if k >= 0:
            line = self._op_line(k)
            how = src.link.found_by_name(pos)
            line.append(f"  (heuristic link, found by {how})" if bool(src.link.heuristic[pos])
                        else f"  (found by {how})", style="yellow" if bool(src.link.heuristic[pos]) else "dim")
            rows.append(("Kineto event", line))
        elif src.kt is not None:
            rows.append(("Kineto event", _t("none (ET-only op)", "dim")))
        for key in ("kernel_backend", "kernel_file", "collective_name", "pg_name"):
            if key in node.attrs:
                rows.append((key, _t(node.attrs[key])))
        parts.append(_grid(rows))
        out = [DetailSection(None, parts)] + self._et_args(node)
        if k >= 0:
            out += self._gpu_summary(k)
        return out


def _tensor_table(rows: list[tuple[str, ...]]) -> Table:
    """ET tensor arguments as a table; a column empty in every row (ET 1.0.x records no
    strides) is left out so the others keep their width."""
    names = ["#", "shape", "strides", "dtype", "device", "tensor", "storage", "bytes"]
    keep = [i for i, name in enumerate(names) if i == 0 or any(r[i] for r in rows)]
    table = _table([names[i] for i in keep], right=("tensor", "storage", "bytes"),
                   whole=("#", "device", "tensor", "storage", "bytes"))
    for r in rows:
        table.add_row(*(_t(r[i]) for i in keep))
    return table


def _shape(v: Any) -> str:
    if v is None:
        return ""
    return "[" + ", ".join(str(x) for x in v) + "]" if isinstance(v, (tuple, list)) else str(v)


def _flatten_args(args: list[Any], prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for i, arg in enumerate(args):
        label = f"{prefix}{i}"
        if isinstance(arg.value, list) and arg.value and all(hasattr(a, "value") for a in arg.value) \
                and any(hasattr(a.value, "tensor_id") for a in arg.value):
            out += _flatten_args(arg.value, label + ".")
        elif isinstance(arg.value, list) and all(hasattr(a, "value") for a in arg.value):
            vals = [a.value for a in arg.value]
            out.append((label, type(arg)(arg.type, vals, arg.shape, arg.stride)))
        else:
            out.append((label, arg))
    return out

__all__ = ["WIDE", "TraceDetail"]
