"""A trace whose names are huge (issue 40): a small real Kineto trace with one CPU op and one
kernel renamed to 10 MB names (the file holds 20 MB of JSON, gzipped to about 70 kB).

A 10 MB name is hostile input of size, not of bytes: before issue 40 one key of the browser
took minutes on it and ``summary`` up to two (``bench/bench_long_names.py``).  The names are
realistic in shape (a C++ template that goes on and on, an op name with a long suffix), so
the kernel category rules run on text that looks like what they were written for.  Each ends
with a word found nowhere else (:data:`OP_END`, :data:`KERNEL_END`), so a test sees whether
an output holds a name whole.

:func:`write_twins` writes the same trace with two kernels whose names agree on their first
:data:`~tracetui.names.NAME_WORK_CHARS` characters and differ after them: grouping by name
must keep them apart.

:data:`COMMANDS` and :data:`KEY_WALK` are what the tests and the bench run on the file: every
command, and every key of the browser the issue names, in an order that reaches the long
names.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from shared_traces import kineto_path

#: the shared trace the long names are put into (149 events: 6 ops, 3 kernels, their launches)
BASE = "a100_event_sync_multistream.json.gz"
#: how long each long name is (characters, ASCII: 10 MB)
LONG = 10_000_000
#: the op renamed is the first ``aten::mm``, the kernel the first kernel (the one it launches)
OP_PREFIX = "aten::mm_long_"
KERNEL_PREFIX = "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_"
#: the last words of the long names (nowhere else in the file)
OP_END = " END_OF_OP"
KERNEL_END = ">(float*) END_OF_KERNEL"
_CHUNK = "at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl<float>>, "


def long_text(prefix: str, length: int = LONG, end: str = "") -> str:
    """``prefix``, a template argument list repeated up to ``length`` characters, then ``end``."""
    body = length - len(prefix) - len(end)
    return prefix + (_CHUNK * (body // len(_CHUNK) + 1))[:body] + end


def long_op_name(length: int = LONG) -> str:
    return long_text(OP_PREFIX, length, OP_END)


def long_kernel_name(length: int = LONG) -> str:
    return long_text(KERNEL_PREFIX, length, KERNEL_END)


def renamed_doc(op_names: list[str], kernel_names: list[str]) -> dict:
    """:data:`BASE` with its first ``aten::mm`` ops and its first kernels renamed, in file order."""
    doc = json.loads(gzip.open(kineto_path(BASE)).read())
    ops, kernels = list(op_names), list(kernel_names)
    for ev in doc["traceEvents"]:
        if not isinstance(ev, dict):
            continue
        if ops and ev.get("cat") == "cpu_op" and ev.get("name") == "aten::mm":
            ev["name"] = ops.pop(0)
        elif kernels and ev.get("cat") == "kernel":
            ev["name"] = kernels.pop(0)
    assert not ops and not kernels, BASE
    return doc


def _write(folder: Path, file_name: str, doc: dict) -> Path:
    path = Path(folder) / file_name
    with gzip.open(path, "wt", compresslevel=6) as out:
        json.dump(doc, out)
    return path


def write_long_names(folder: Path, length: int = LONG, file_name: str = "long_names.json.gz") -> Path:
    """:data:`BASE` with its first ``aten::mm`` and its first kernel renamed to names of
    ``length`` characters (:func:`long_op_name`, :func:`long_kernel_name`), gzipped."""
    return _write(folder, file_name, renamed_doc([long_op_name(length)], [long_kernel_name(length)]))


def twin_names(length: int = 6_000) -> tuple[str, str]:
    """Two kernel names of ``length`` characters that differ only in their last character."""
    base = long_text(KERNEL_PREFIX, length - 1)
    return base + "A", base + "B"


def write_twins(folder: Path, length: int = 6_000) -> Path:
    """:data:`BASE` with its first two kernels renamed to :func:`twin_names` (the third keeps
    its name, ``ampere_sgemm_128x64_nn``)."""
    return _write(folder, "twins.json.gz", renamed_doc([], list(twin_names(length))))


#: every command on the file (``{trace}``: the file, ``{out}``: a folder for what it writes)
COMMANDS: dict[str, list[str]] = {
    "info": ["info", "{trace}"],
    "summary": ["summary", "{trace}"],
    "summary --json": ["summary", "--json", "{trace}"],
    "check": ["check", "{trace}"],
    "query": ["query", "{trace}", "SELECT name, dur_us FROM kernels"],
    "tree": ["tree", "{trace}"],
    "export md": ["export", "{trace}", "-f", "md", "-o", "{out}/export.md"],
    "export html": ["export", "{trace}", "-f", "html", "-o", "{out}/export.html"],
    "export csv": ["export", "{trace}", "-f", "csv", "-o", "{out}/export.csv"],
    "export json": ["export", "{trace}", "-f", "json", "-o", "{out}/export.json"],
    "export chrome": ["export", "{trace}", "-f", "chrome", "-o", "{out}/export.chrome.json"],
    "critical-path": ["critical-path", "{trace}"],
    "slice": ["slice", "{trace}", "--window", "0:100000", "-o", "{out}/slice.json"],
    "diff": ["diff", "{trace}", "{trace}"],
}


def command_argv(name: str, trace: Path | str, out: Path | str) -> list[str]:
    return [a.format(trace=trace, out=out) for a in COMMANDS[name]]


#: (key, what it does) pressed in this order after the browser opened at 80x24: the tree down
#: to the long op (row 3 once expanded) and its long kernel, the raw args and a copy of the
#: long name, every summaries tab, a search (next, previous, order, filter), the panes (detail,
#: maximize, Python rows, pages), the query bar, memory, the palette, the export dialog, help,
#: warnings, findings, the critical path, the timeline (lanes, zoom, pan, fit, CPU threads),
#: quit: every key of the single-trace browser (a job's keys, r, x and X, need several ranks)
KEY_WALK: tuple[tuple[str, str], ...] = (
    ("asterisk", "expand all"), ("j", "down"), ("j", "down to the long op"), ("k", "up"),
    ("j", "down to the long op"), ("enter", "fold"), ("enter", "unfold"), (">", "its long kernel"),
    ("<", "back to the op"),
    ("i", "icicle of the long op"), ("j", "largest callee"), ("k", "caller"), ("l", "next cell"),
    ("h", "previous cell"),
    ("enter", "descend"), ("backspace", "climb"), ("v", "GPU time"), ("v", "Python time"), ("v", "CPU time"),
    ("b", "bottom-up"), ("j", "down"), ("i", "icicle again"), ("q", "close"),
    ("b", "bottom-up of the long op"), ("j", "down"), ("enter", "unfold"), ("q", "close"),
    ("a", "every arg"), ("down", "its name"), ("c", "copy the long name"), ("escape", "close"),
    ("s", "summaries"), *(("tab", f"summaries tab {i + 2}") for i in range(7)), ("escape", "close"),
    ("slash", "search"), *((ch, "type") for ch in "long"), ("enter", "search"), ("n", "next match"),
    ("N", "previous match"), ("o", "longest first"), ("o", "time order"), ("f", "filter to the matches"),
    ("escape", "clear search and filter"),
    ("d", "hide the detail pane"), ("d", "show it"), ("m", "maximize a pane"), ("m", "restore"),
    ("full_stop", "Python rows"), ("full_stop", "Python rows back"), ("pagedown", "page down"), ("pageup", "page up"),
    ("colon", "query bar"), ("escape", "close"), ("M", "memory (none here: a toast)"), ("escape", "nothing to close"),
    ("circumflex_accent", "memory peak (a toast)"), ("ctrl+p", "command palette"), ("escape", "close"),
    ("e", "export dialog"), ("escape", "close"), ("question_mark", "help"), ("escape", "close"),
    ("w", "warnings"), ("escape", "close"), ("F", "findings"), ("escape", "close"),
    ("P", "critical path"), ("n", "next segment"), ("escape", "close"),
    ("t", "timeline"), ("j", "next lane"), ("j", "next lane"), ("k", "lane up"),
    ("right_square_bracket", "zoom in"), ("left_square_bracket", "zoom out"), ("right_curly_bracket", "pan right"),
    ("left_curly_bracket", "pan left"), ("z", "zoom to the selection"), ("Z", "the whole trace"),
    ("c", "CPU threads in the timeline"), ("c", "CPU threads back"), ("t", "tree"),
    ("q", "quit"),
)
