"""The detail pane of the events of a driver-call trace (``tracetui/driver``): calls, ioctls,
the tracers' records (kernel launch, allocation, transfer, syscall ...) and the pipeline
phases; in a trace linked to its Kineto trace, the runtime call each driver call is linked
to (and, on the Kineto side, :func:`kineto_call_rows`: the driver call a runtime call made).

The key facts come first, so an 80x24 pane shows them unscrolled.  A non-zero return
value is an error, shown in red.  Names, probe strings and file names are trace data:
always ``Text``, never markup.  Times are µs, sizes bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from rich.console import RenderableType
from rich.text import Text

from ... import units
from ...driver import schema as dschema
from ...driver.facts import (
    DIRECTION_WORDS,
    PHASE_PREFIX,
    PHASE_RULES,
    WHAT_TITLES,
    allocation_total,
    call_contents,
    driver_of,
    enclosing_call,
    enclosing_phase,
    flag_words,
    ioctl_number,
    ioctl_short,
    layout_title,
    link_quality,
    linked_driver,
    linked_gpu_events,
    linked_kineto,
    owning_call,
    return_words,
    what_of,
)
from ...driver.pairing import Flag
from ...driver.pipeline import CallClass, call_class
from ...driver.schema import BCC, What
from ...driver.trace import CALL_WHATS, DriverTrace
from ...kineto import schema
from ...kineto.kinds import Kind
from ...units import bytes_text, duration_exact, format_duration_us
from .detail_section import DetailSection, cell, grid
from .keep_text import KeepText
from .kernel_rows import xyz
from .trace_row_source import KIND_STYLES

#: Kineto calls of these classes can be linked to a driver call (link/driver_kineto.py)
_LINKABLE = {CallClass.LAUNCH, CallClass.GRAPH_LAUNCH, CallClass.COPY, CallClass.MEMSET, CallClass.SYNC,
             CallClass.ALLOC, CallClass.FREE}
ERROR_STYLE = "bold red"
NAME_CELLS = 60  #: a kernel name in a row is cut here (its own row has it whole)


def _style(kt: DriverTrace, ev: int) -> str:
    return KIND_STYLES.get(Kind(int(kt.kind[ev])), "")


def _gbps(nbytes: float, us: float) -> float:
    """Bytes per µs -> GB/s (10^9 bytes per second)."""
    return nbytes / (us * 1e3)


class DriverDetail:
    """Detail sections of driver events of ``kt``; ``start(ev)`` formats an event's start and
    ``op_line(ev)`` names a Kineto event with its duration (:class:`~.trace_detail.TraceDetail`'s own helpers)."""

    def __init__(self, kt: DriverTrace, start: Callable[[int], str], op_line: Callable[[int], Text]) -> None:
        self.kt = kt
        self.start = start
        self.op_line = op_line

    # ------------------------------------------------------------------ entry
    def sections(self, ev: int) -> list[DetailSection]:
        """The detail of driver event ``ev``: its head section, and what a call holds."""
        kt = self.kt
        what = what_of(kt, ev)
        if what in CALL_WHATS:
            return self._call(ev, what)
        if what == What.IOCTL:
            return [DetailSection(None, self._ioctl(ev))]
        if what == What.PHASE:
            return [DetailSection(None, self._phase(ev))]
        return [DetailSection(None, self._record(ev, what))]

    # ------------------------------------------------------------------ helpers
    def _head(self, ev: int, what: What, facts: list[str] | None = None) -> list[RenderableType]:
        kt = self.kt
        lane = kt.lane_of_node(ev)
        layout = kt.layout_name(ev) if what != What.PHASE else ""  # phases are derived, from no line
        sub = " · ".join(x for x in (WHAT_TITLES[what], lane.label if lane else "", layout) if x)
        parts: list[RenderableType] = []
        if facts:
            parts.append(KeepText(" · ".join(facts), style="dim"))
        parts += [KeepText(kt.name(ev), style=f"bold {_style(kt, ev)}".strip(), overflow="fold"),
                  KeepText(sub, style="dim")]
        return parts

    def _lines(self, ev: int) -> Text:
        """Where the event is in the file: ``22 (begin) → 26 (end) of trace.jsonl``."""
        kt = self.kt
        begin, end = kt.value(kt.line_no, ev), kt.value(kt.end_line_no, ev)
        text = KeepText("")
        what = what_of(kt, ev)
        if what in CALL_WHATS or what == What.IOCTL:
            if begin is not None and end is not None and begin != end:
                text.append(f"{begin:,} (begin) → {end:,} (end)")
            elif end is not None and begin == end:  # an end line alone
                text.append(f"{end:,} (end; no begin line)")
            elif begin is not None:
                text.append(f"{begin:,} (begin; no end line)" if what != What.ENTRY else f"{begin:,}")
        elif begin is not None:
            text.append(f"{begin:,}")
        name = kt.driver_path.rsplit("/", 1)[-1]
        if name and text.plain:
            text.append(f" of {name}")
        return text

    def _thread(self, ev: int) -> str:
        kt = self.kt
        pid, tid = kt.pids[ev], kt.tids[ev]
        return f"{tid}" + (f" (pid {pid})" if pid is not None else "")

    def _return(self, ev: int, what: What) -> Text | None:
        kt = self.kt
        value = kt.value(kt.retval, ev)
        if value is None:
            if what == What.ENTRY:
                return None
            return cell("none in the file" + (" (no end line)" if kt.value(kt.end_line_no, ev) is None else ""),
                        "dim")
        words, error = return_words(what, kt.name(ev), value)
        if not error:
            return cell(words)
        text = KeepText(words, style=ERROR_STYLE)
        text.append(": the call failed" if what != What.IOCTL else ": the driver refused the request",
                    style=ERROR_STYLE)
        return text

    def _returned_pointer(self, ev: int) -> Text | None:
        """The pointer an LD_PRELOAD end line gives (``result_ptr``), as the file writes it."""
        end = self.kt.args(ev).get("end")
        ptr = end.get(dschema.RESULT_PTR) if isinstance(end, dict) else None
        return cell(ptr) if isinstance(ptr, str) and ptr else None

    def _flag_rows(self, ev: int) -> list[tuple[str, Any]]:
        return [("Flags" if i == 0 else "", cell(w, "yellow")) for i, w in enumerate(flag_words(self.kt, ev))]

    def _probe(self, ev: int) -> str | None:
        """The probe string as the file gives it, when it says more than the name."""
        args = self.kt.args(ev)
        for part in (args.get("begin"), args.get("end"), args):
            if isinstance(part, dict):
                probe = part.get(dschema.NAME) if isinstance(part.get(dschema.NAME), str) else part.get(dschema.FUNC)
                if isinstance(probe, str) and probe and probe != self.kt.name(ev):
                    return probe
        return None

    def _link_rows(self, ev: int) -> list[tuple[str, Any]]:
        """The runtime call a driver call (or its ioctl/record's call) is linked to, its GPU
        work and where the jumps go; [] in a driver-call trace alone."""
        kt = self.kt
        if kt.link is None:
            return []
        k = linked_kineto(kt, ev)
        if k < 0:
            call = owning_call(kt, ev)
            why = ("not linked to a Kineto call (the link pairs launch, copy, memset, sync, alloc and free "
                   "calls by their order)") if call >= 0 else "belongs to no call"
            return [("Runtime call", cell(why, "dim"))]
        text = KeepText(kt.name(k), style=_style(kt, k))
        op = int(kt.cpu_op_of[k])
        if op >= 0 and op != k:
            text.append(" (op ")
            text.append(kt.name(op), style="cyan")
            text.append(")")
        text.append(f" · {link_quality(kt)}", style="yellow")
        # a runtime call (cudaLaunchKernel), or a driver call the profiler recorded too (cuda_driver)
        rows: list[tuple[str, Any]] = [("Runtime call" if int(kt.kind[k]) == int(Kind.RUNTIME) else "Kineto call",
                                        text)]
        gpu = kt.gpu_events_of(k)
        if gpu.size:
            g = KeepText(f"{gpu.size:,} GPU event{'s' if gpu.size != 1 else ''}, "
                         f"{format_duration_us(float(kt.dur[gpu].sum()))}: ")
            name = kt.name(int(gpu[0]))
            g.append(name if len(name) <= NAME_CELLS else name[:NAME_CELLS - 1] + "…", style=_style(kt, int(gpu[0])))
            rows.append(("GPU work", g))
            rows.append(("Jump", cell("> goes to the GPU work, < to the runtime call", "dim")))
        else:
            rows.append(("Jump", cell("< goes to the runtime call (it launched no GPU work)", "dim")))
        return rows

    # ------------------------------------------------------------------ calls
    def _call(self, ev: int, what: What) -> list[DetailSection]:
        kt = self.kt
        dur = float(kt.dur[ev])
        rows: list[tuple[str, Any]] = []
        if what == What.ENTRY:
            rows.append(("Duration", cell("none: the sidecar writes entries only", "dim")))
        else:
            d = KeepText(duration_exact(dur))
            if flag_words(kt, ev) and kt.value(kt.end_line_no, ev) is None:
                d.append("  (inferred: no end line)", style="yellow")
            rows.append(("Duration", d))
        rows += [("Start", self.start(ev)), ("Return value", self._return(ev, what)),
                 ("Returned pointer", self._returned_pointer(ev)), ("Lines", self._lines(ev))]
        rows += self._flag_rows(ev)
        rows += [("Probe", self._probe(ev)), ("Layout", layout_title(kt, ev)), ("Thread", self._thread(ev)),
                 ("Phase", enclosing_phase(kt, ev))]
        outer = enclosing_call(kt, ev)
        if outer >= 0:
            rows.append(("Inside call", self._driver_line(outer)))
        rows += self._link_rows(ev)
        return [DetailSection(None, self._head(ev, what) + [grid(rows)])] + self._contents(ev)

    def _driver_line(self, ev: int) -> Text:
        kt = self.kt
        text = KeepText(kt.name(ev), style=_style(kt, ev))
        text.append(f"  {format_duration_us(float(kt.dur[ev]))}", style="dim")
        return text

    def _contents(self, call: int) -> list[DetailSection]:
        """The ioctls, nested calls and records the call holds, one line each kind/record."""
        kt = self.kt
        c = call_contents(kt, call)
        lines: list[RenderableType] = []
        if c.ioctls:
            line = KeepText(f"{c.ioctls:,} ioctl{'s' if c.ioctls != 1 else ''}", style="bold")
            line.append(f"  {format_duration_us(c.ioctl_us)}  ")
            line.append(", ".join(ioctl_short(cmd) + (f" ×{n:,}" if n > 1 else "")
                                  for cmd, n in c.commands.most_common(3)))
            if len(c.commands) > 3:
                line.append(f" and {len(c.commands) - 3:,} other commands", style="dim")
            lines.append(line)
        if c.calls:
            lines.append(KeepText(f"{c.calls:,} nested call{'s' if c.calls != 1 else ''}", style="bold"))
        for name, evs in c.records.items():
            for rec in evs[:4]:
                line = KeepText(name, style="bold")
                facts = self._record_facts(rec)
                if facts:
                    line.append("  " + " · ".join(facts))
                lines.append(line)
            if len(evs) > 4:
                lines.append(KeepText(f"… and {len(evs) - 4:,} more {name} records", style="dim"))
        if not lines:
            return []
        return [DetailSection("Inside this call", lines)]

    def _record_facts(self, rec: int) -> list[str]:
        """Short facts of a record: grid and block of a launch, bytes of an allocation or
        transfer, the command of a syscall."""
        kt = self.kt
        what = what_of(kt, rec)
        loc = rec - kt.first
        facts: list[str] = []
        if what == What.LAUNCH:
            g, b = kt.grid[loc].tolist(), kt.block[loc].tolist()
            if min(g) >= 0:
                facts.append(f"grid {xyz(g)}")
            if min(b) >= 0:
                facts.append(f"block {xyz(b)}")
            if min(g + b) >= 0:
                facts.append(f"{_prod(g) * _prod(b):,} threads")
        elif what in (What.ALLOC, What.KERNEL_MEMORY, What.TRANSFER):
            size = kt.value(kt.size, rec)
            if size is not None:
                facts.append(bytes_text(size))
            if what == What.TRANSFER and size is not None and float(kt.dur[rec]) > 0:
                facts.append(f"in {format_duration_us(float(kt.dur[rec]))}, "
                             f"{_gbps(size, float(kt.dur[rec])):,.2f} {units.GBPS}")
            if what == What.ALLOC:
                total = allocation_total(kt, rec)
                if total is not None:
                    facts.append(f"total {bytes_text(total[0])}")
        elif what == What.SYSCALL:
            cmd = kt.value(kt.ioctl_cmd, rec)
            if cmd is not None:
                facts.append(f"cmd {ioctl_short(cmd)}")
        return facts

    # ------------------------------------------------------------------ ioctls
    def _ioctl(self, ev: int) -> list[RenderableType]:
        kt = self.kt
        cmd = kt.value(kt.ioctl_cmd, ev)
        num = ioctl_number(cmd) if cmd is not None else None
        facts = [ioctl_short(cmd)] if cmd is not None else []
        facts.append(format_duration_us(float(kt.dur[ev])))
        rows: list[tuple[str, Any]] = self._command_rows(ev, cmd, num)
        rows += [("Duration", duration_exact(float(kt.dur[ev]))), ("Start", self.start(ev)),
                 ("Return value", self._return(ev, What.IOCTL)), ("Lines", self._lines(ev))]
        rows += self._flag_rows(ev)
        rows += [("Thread", self._thread(ev)), ("Layout", layout_title(kt, ev))]
        call = owning_call(kt, ev)
        rows.append(("Call", self._driver_line(call) if call >= 0 else cell("none (no call was open)", "dim")))
        rows += self._link_rows(ev)
        return self._head(ev, What.IOCTL, facts) + [grid(rows)]

    def _command_rows(self, ev: int, cmd: int | None, num) -> list[tuple[str, Any]]:
        kt = self.kt
        if cmd is None:
            if kt.layout_name(ev) == BCC:
                why = " (BCC's ioctl lines carry none)"
            elif Flag(int(kt.flags[ev - kt.first])) & Flag.NO_BEGIN:
                why = " (it is on the begin line, which is missing)"
            else:
                why = ""
            return [("Command", cell("not in the file" + why, "dim"))]
        if num is None:
            return [("Command", cell(f"{cmd} (not a 32-bit ioctl request number)"))]
        rows: list[tuple[str, Any]] = [("Command", KeepText(f"{num.hex}  ({cmd:,})")),
                                       ("Decoded", num.words())]
        if num.nvidia:
            rows.append(("NVIDIA escape", f"{num.nvidia} (nr 0x{num.nr:02x} on /dev/nvidia*)"))
        return rows

    # ------------------------------------------------------------------ records
    def _record(self, ev: int, what: What) -> list[RenderableType]:
        kt = self.kt
        loc = ev - kt.first
        args = kt.args(ev)
        rows: list[tuple[str, Any]] = []
        if what == What.LAUNCH:
            g, b = kt.grid[loc].tolist(), kt.block[loc].tolist()
            rows += [("Grid", xyz(g) if min(g) >= 0 else None), ("Block", xyz(b) if min(b) >= 0 else None)]
            if min(g) >= 0:
                rows.append(("Blocks", f"{_prod(g):,}"))
            if min(b) >= 0:
                rows.append(("Threads/block", f"{_prod(b):,}"))
            threads = args.get(dschema.THREADS)
            if min(g + b) >= 0:
                total = _prod(g) * _prod(b)
                t = KeepText(f"{total:,} (grid × block)")
                if isinstance(threads, int) and threads != total:
                    t.append(f"; the file says {threads:,}", style="yellow")
                rows.append(("Threads", t))
            elif isinstance(threads, int):
                rows.append(("Threads", f"{threads:,}"))
            rows.append(("Kernel", cell("not in this record: a launch probe sees the grid and block, not the "
                                        "kernel's name or stream", "dim")))
            rows += self._kernel_rows(ev, g, b)
        elif what in (What.ALLOC, What.KERNEL_MEMORY):
            size = kt.value(kt.size, ev)
            rows.append(("Size", bytes_text(size) if size is not None else cell("not in the file", "dim")))
            if what == What.ALLOC:
                total = allocation_total(kt, ev)
                if total is not None:
                    rows.append(("Running total", f"{bytes_text(total[0])}"
                                 + ("" if total[1] else "  (the sum of the sizes so far: the file gives no total)")))
            else:
                rows.append(("What", "memory the driver allocated in the kernel (not the process's allocation)"))
        elif what == What.TRANSFER:
            rows += self._transfer_rows(ev, args)
        elif what == What.SYSCALL:
            fd, cmd = args.get(dschema.FD), kt.value(kt.ioctl_cmd, ev)
            call_name = args.get(dschema.NAME)
            rows.append(("System call", cell(call_name if isinstance(call_name, str) else "ioctl")))
            rows.append(("fd", fd if fd is not None else cell("not in the file", "dim")))
            rows += self._command_rows(ev, cmd, ioctl_number(cmd) if cmd is not None else None)
        elif what == What.SCHEDULER:
            rows.append(("What", "work the driver queued in the kernel (nv_schedule_work)"))
        else:
            rows.append(("What", cell("a record of a type tracetui does not know (counted in the warnings, w); "
                                      "a shows its line", "dim")))
        rows += [("Start", self.start(ev)), ("Line", self._lines(ev)), ("Thread", self._thread(ev)),
                 ("Layout", layout_title(kt, ev)), ("Phase", enclosing_phase(kt, ev))]
        call = owning_call(kt, ev)
        within = units.us_text(dschema.RECORD_SLACK_US, "g")
        rows.append(("Call", self._driver_line(call) if call >= 0 else
                     cell(f"none: no call of its thread was open within {within}", "dim")))
        rows += self._link_rows(ev)
        return self._head(ev, what, self._record_facts(ev)) + [grid(rows)]

    def _transfer_rows(self, ev: int, args: dict) -> list[tuple[str, Any]]:
        kt = self.kt
        direction = kt.direction_name(ev)
        size = kt.value(kt.size, ev)
        dur = float(kt.dur[ev])
        rows: list[tuple[str, Any]] = [
            ("Direction", f"{direction} ({DIRECTION_WORDS[direction]})" if direction else cell("not in the file",
                                                                                               "dim")),
            ("Bytes", bytes_text(size) if size is not None else cell("not in the file", "dim")),
            ("Duration", duration_exact(dur) if dur > 0 else cell("not in the file (no duration_ms)", "dim"))]
        said = args.get(dschema.BANDWIDTH_GBPS)
        bw = KeepText("")
        if size is not None and dur > 0:
            bw.append(f"{_gbps(size, dur):,.2f} {units.GBPS} (bytes ÷ duration)")
        if isinstance(said, (int, float)) and not isinstance(said, bool):
            if bw.plain:
                bw.append("; ")
            bw.append(f"the file says {said:,.2f} {units.GBPS}", style="dim")
        rows.append(("Bandwidth", bw if bw.plain else None))
        return rows

    def _kernel_rows(self, ev: int, grid_: list[int], block: list[int]) -> list[tuple[str, Any]]:
        """In a linked trace: the kernel the linked runtime call launched, and whether its
        grid and block agree with the record's (a confirmed link)."""
        kt = self.kt
        k = linked_kineto(kt, ev)
        if k < 0:
            return []
        gpu = kt.gpu_events_of(k)
        kernels = [int(g) for g in gpu.tolist() if int(kt.kind[g]) == int(Kind.KERNEL)]
        if not kernels:
            return []
        a = kt.args(kernels[0])
        line = self.op_line(kernels[0])
        same = a.get(schema.GRID) == grid_ and a.get(schema.BLOCK) == block
        line.append("  same grid and block: the link is confirmed" if same else
                    f"  its grid {xyz(a.get(schema.GRID))}, block {xyz(a.get(schema.BLOCK))} differ",
                    style="green" if same else "yellow")
        return [("Kineto kernel", line)]

    # ------------------------------------------------------------------ phases
    def _phase(self, ev: int) -> list[RenderableType]:
        kt = self.kt
        name = kt.name(ev)
        phase = name[len(PHASE_PREFIX):] if name.startswith(PHASE_PREFIX) else name
        sub = kt.subtree(ev)
        sub = sub[(sub >= kt.first) & (sub < kt.first + kt.n_driver)]
        is_call = np.isin(kt.what[sub - kt.first], [int(w) for w in CALL_WHATS])
        ids, counts = np.unique(kt.name_id[sub[is_call]], return_counts=True)
        top = np.argsort(-counts, kind="stable")[:5]
        calls_text = KeepText(f"{int(is_call.sum()):,} on this thread")
        if top.size:
            calls_text.append(": " + ", ".join(f"{kt.names[int(ids[i])]} ×{int(counts[i]):,}" for i in top.tolist()))
        rows: list[tuple[str, Any]] = [
            ("Duration", duration_exact(float(kt.dur[ev]))), ("Start", self.start(ev)), ("Calls", calls_text),
            ("Rule", PHASE_RULES.get(phase, cell("a phase tracetui does not describe", "dim"))),
            ("", cell("Phases come from what each call of the process does (its name: launch, copy, "
                      "synchronize, allocate, free, set-up, tear-down); each thread's span runs from its "
                      "first to its last call in the phase.", "dim")),
            ("Thread", self._thread(ev))]
        if kt.link is not None:
            gpu = linked_gpu_events(kt, ev, sub).size
            if gpu:
                rows.append(("GPU work", f"{gpu:,} GPU events of the linked runtime calls (> goes to them)"))
        return self._head(ev, What.PHASE) + [grid(rows)]


def _prod(v: list[int]) -> int:
    out = 1
    for x in v:
        out *= int(x)
    return out


def kineto_call_rows(kt: Any, k: int) -> list[tuple[str, Any]]:
    """Rows of a Kineto runtime/driver call in a trace linked to a driver-call trace: the
    driver call it made (``cuLaunchKernel (2 ioctls, 5.20µs)``), its return value when it
    is an error, and where ``>`` goes.  [] without a driver link."""
    drv = driver_of(kt)
    if drv is None or drv.link is None or not 0 <= k < drv.first:
        return []
    d = linked_driver(drv, k)
    if d < 0:
        if call_class(drv.name(k)) in _LINKABLE:
            return [("Driver call", cell("none linked (the link pairs calls by their order; heuristic)", "dim"))]
        return []
    text = KeepText(drv.name(d), style=_style(drv, d))
    inner = call_contents(drv, d).short()
    text.append(f" ({inner + ', ' if inner else ''}{format_duration_us(float(drv.dur[d]))})")
    text.append(f" · {link_quality(drv)}", style="yellow")
    rows: list[tuple[str, Any]] = [("Driver call", text)]
    value = drv.value(drv.retval, d)
    if value is not None:
        words, error = return_words(What.CALL, drv.name(d), value)
        if error:
            rows.append(("Driver return", KeepText(words + ": the driver call failed", style=ERROR_STYLE)))
    rows.append(("Jump", cell("> goes to the driver call, > again to the GPU work", "dim")))
    return rows
