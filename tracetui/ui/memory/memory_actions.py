"""Memory in the browser: the memory keys of the main screen.

:class:`MemoryActions` gives the browser screen ``M`` (the memory screen,
:class:`~.memory_screen.MemoryScreen`, computed in a worker thread) and ``^`` (the peak of
allocated bytes: the op open on the allocating thread at the peak is selected, the detail
pane says the peak and its two parts; ``^`` again goes to the next device's peak).  A trace
without ``[memory]`` events gets a note saying how to record them.

With a CUDA memory snapshot (alone: opened at once; beside the trace: ``tracetui TRACE
SNAPSHOT``) ``M`` is its screen (:class:`~.memory_snapshot_screen.MemorySnapshotScreen`: the
timeline with a cursor, the blocks live there by owner, their stacks), whose ``t`` comes back to
the op open in the trace when a block was allocated; ``^`` beside a trace without ``[memory]``
events goes to the op open at the snapshot's peak.
"""

from __future__ import annotations

from typing import Any

from ... import units
from ...analysis.memory import memory_events, memory_model
from ..notify import show_note
from ..shown import show_when_computed
from ..view.keep_text import KeepText
from ..view.memory_view import NO_MEMORY, PeakTarget, memory_views, peak_targets
from .memory_screen import MemoryScreen
from .memory_snapshot_screen import MemorySnapshotScreen


class MemoryActions:
    """Mixin for the browser screen: the memory keys (see the module docstring)."""

    _peak_at: tuple[int, int | None] = (-1, None)  #: (index of the last peak gone to, node selected)
    _has_memory: bool | None = None
    #: the memory keys' actions: they do something only with a snapshot or ``[memory]`` events
    MEMORY_ACTIONS = frozenset({"memory", "memory_peak"})

    def memory_key_applies(self) -> bool:
        """Do ``M`` and ``^`` do something here (a CUDA memory snapshot, or a trace with
        ``[memory]`` events)?  Found once."""
        if self._has_memory is None:
            kt = self.linked.kineto
            self._has_memory = getattr(self.linked, "snapshot_trace", None) is not None or (
                kt is not None and bool(memory_events(kt).size))
        return self._has_memory

    def _memory_trace(self) -> Any:
        kt = self.linked.kineto
        if kt is None:
            show_note(self, "memory needs a Kineto trace", severity="warning")
            return None
        if not memory_model(kt).n_rows:
            show_note(self, NO_MEMORY, severity="warning")
            return None
        return kt

    def action_memory(self) -> None:
        """``M``: the memory screen (peaks, owners at the peak, top allocating ops per device; a
        snapshot's timeline and live blocks)."""
        linked = self.linked
        if linked.snapshot_trace is not None:
            from ..view.memsnap_view import SnapshotView

            show_when_computed(self, lambda: SnapshotView(linked),
                               lambda view: self.app.push_screen(MemorySnapshotScreen(view), self._snapshot_choice),
                               "memory")
            return
        kt = self._memory_trace()
        if kt is None:
            return
        linked = self.linked
        show_when_computed(self, lambda: memory_views(linked),
                           lambda views: self.app.push_screen(MemoryScreen(f"{kt.name_of_file}: memory", views),
                                                              self._memory_choice), "memory")

    def _memory_choice(self, choice: tuple[str, Any] | None) -> None:
        if choice is None or not self.is_attached:
            return
        what, value = choice
        if what == "peak":
            self.go_to_peak(value)
        else:
            self.show_occurrences(value, first_given=True)

    def _snapshot_choice(self, choice: tuple[str, Any] | None) -> None:
        if choice is None or not self.is_attached:
            return
        node = int(choice[1])
        self.select(node, KeepText(f"the op open when the block was allocated: {self.linked.kineto.name(node)}"))

    def open_snapshot_at_start(self) -> None:
        """A snapshot opened alone: its memory screen at once (the trace's tree is its lanes)."""
        if self.linked.memory is None and self.linked.snapshot_trace is not None:
            self.action_memory()

    def action_memory_peak(self) -> None:
        """``^``: the peak of allocated bytes of the first device; again: of the next one."""
        if self.linked.memory is not None and not memory_model(self.linked.kineto).n_rows:
            self._snapshot_peak_op()
            return
        kt = self._memory_trace()
        if kt is None:
            return
        targets = peak_targets(kt)
        last, node = self._peak_at
        i = (last + 1) % len(targets) if last >= 0 and node == self.current else 0
        self.go_to_peak(targets[i], f"   (^ next: {targets[(i + 1) % len(targets)].device})"
                        if len(targets) > 1 else "")
        self._peak_at = (i, self.source.visible_ancestor(targets[i].node) if targets[i].node >= 0 else None)

    def _snapshot_peak_op(self) -> None:
        """Beside a trace without ``[memory]`` events: the op open at the snapshot's peak."""
        from ..view.memsnap_view import SnapshotView, at_ms

        view = SnapshotView(self.linked)
        v = next((v for v in view.devices if v.peak is not None), None)
        if v is None:
            show_note(self, "the snapshot has no allocation in its history", severity="warning")
            return
        why = view.op_note(v.peak.row)
        if why:
            show_note(self, f"^ peak of {v.device.name} (snapshot) at {at_ms(v.peak.ts)}: {why}", severity="warning")
            return
        node = view.op_node(v.peak.row)
        self.select(node, KeepText(f"^ peak of {v.device.name} (snapshot): {units.bytes_text(v.peak.value)} allocated "
                                   f"at {at_ms(v.peak.ts)}; the op open then: {self.linked.kineto.name(node)}"))

    def go_to_peak(self, target: PeakTarget, more: str = "") -> None:
        """Select the op open at ``target``'s peak (its thread's row when none) and say the peak."""
        note = KeepText("^ ", style="bold")
        note.append_text(target.note)
        if more:
            note.append(more, style="dim")
        if target.node < 0:
            show_note(self, note.plain + " (on no thread of the tree)")
            self.timeline.follow(target.ts, target.ts)
            return
        self.select(target.node, note)
