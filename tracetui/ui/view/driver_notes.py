"""What the jumps across the driver link say (``>``/``<`` in a Kineto trace opened with
``--driver``): the note above the detail pane and the one-line toast.  Pure: ``Text`` and
``str`` out (names are trace data, never markup); the screen shows them.
"""

from __future__ import annotations

import numpy as np
from rich.text import Text

from ...driver.facts import call_contents, is_driver_event, link_quality, linked_kineto
from ...kineto.kinds import Kind
from ...names import shown
from .trace_row_source import KIND_STYLES

_GPU_WORDS = {Kind.KERNEL: "the kernel", Kind.MEMCPY: "the memcpy", Kind.MEMSET: "the memset"}


def _style(kt, ev: int) -> str:
    return KIND_STYLES.get(Kind(int(kt.kind[ev])), "")


def next_after_hop(kt, gpu: np.ndarray) -> str:
    """Where ``>`` goes from the driver call: ``> again: the kernel``."""
    if not gpu.size:
        return "< back: its runtime call launched no GPU work"
    if gpu.size == 1:
        return "> again: " + _GPU_WORDS.get(Kind(int(kt.kind[int(gpu[0])])), "its GPU event")
    return f"> again: its {gpu.size:,} GPU events"


def _op_part(kt, runtime: int) -> str:
    op = int(kt.cpu_op_of[runtime])
    return f" (op {shown(kt.name(op))})" if 0 <= op != runtime else ""


def hop_texts(kt, runtime: int, call: int, gpu: np.ndarray) -> tuple[Text, str]:
    """(note, toast) for ``>`` from ``runtime`` to its linked driver ``call``."""
    inner = call_contents(kt, call).short()
    where = next_after_hop(kt, gpu)
    note = Text("> driver call ", style="bold")
    note.append(shown(kt.name(call)), style=_style(kt, call))
    if inner:
        note.append(f" ({inner})")
    note.append("\n  linked to ")
    note.append(shown(kt.name(runtime)), style=_style(kt, runtime))
    op = _op_part(kt, runtime)
    if op:
        note.append(op, style="cyan")
    note.append(f" · {link_quality(kt)}", style="yellow")
    note.append(f"   ({where}, < back)", style="dim")
    message = f"driver call {shown(kt.name(call))}" + (f" ({inner})" if inner else "") + f" · {where}"
    return note, message


def back_texts(kt, runtime: int, call: int) -> tuple[Text, str]:
    """(note, toast) for ``<`` from driver ``call`` (or its ioctl/record) to ``runtime``."""
    op = _op_part(kt, runtime)
    note = Text("< runtime call ", style="bold")
    note.append(shown(kt.name(runtime)), style=_style(kt, runtime))
    if op:
        note.append(op, style="cyan")
    note.append("\n  linked to the driver call ")
    note.append(shown(kt.name(call)), style=_style(kt, call))
    note.append(f" · {link_quality(kt)}", style="yellow")
    note.append("   (< again: the op, > the driver call)" if op else "   (> the driver call)", style="dim")
    message = f"runtime call {shown(kt.name(runtime))}{op} · {link_quality(kt)}"
    return note, message


def driver_link_note(kt, origin: int) -> Text | None:
    """`` via cudaLaunchKernel (heuristic link)`` when a ``>`` cycle starts at a driver node
    whose GPU events are its linked runtime call's; None otherwise."""
    if not is_driver_event(kt, origin) or getattr(kt, "link", None) is None:
        return None
    k = linked_kineto(kt, origin)
    if k < 0:
        return Text(" via the linked runtime calls (heuristic link)", style="yellow")
    text = Text(" via ")
    text.append(shown(kt.name(k)), style=_style(kt, k))
    text.append(" (heuristic link)", style="yellow")
    return text
