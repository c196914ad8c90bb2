"""How much of a name tracetui works on (issue 40): names cost what their first few KB cost.

A name from a trace (an op, a kernel, a thread, an ET node) can be any length: a generated
Triton or template kernel runs to a few KB, a hostile or broken file to megabytes.  Before
this bound a trace with two 10 MB names took over 80 s of CPU for ``summary`` and up to six
minutes for one key of the browser (``bench/bench_long_names.py``): every regex, search,
wrap and width calculation walked the whole name, many of them once per line drawn.  So
every piece of work *per name* looks at a bounded prefix, :data:`NAME_WORK_CHARS`
characters, and no more:

* **matching**: the kernel category rules (``analysis/categories.py``) and the name search
  (``/`` in the browser, ``analysis/search.py``) run on :func:`head`: a match that starts
  beyond the first :data:`NAME_WORK_CHARS` characters is not found;
* **drawing**: everything that shows a name on a screen or a terminal (tree rows, tables,
  the status line, timeline labels, summaries, the detail pane, diff tables, findings text,
  text tables of the command line) shows :func:`shown`: the head, then where it was cut and
  how much was left out, ``… (+10 MB)`` (:func:`cut_mark`, in bytes of UTF-8,
  :func:`tracetui.units.bytes_brief`);
* **the full name is kept** in the model (``trace.names``) and goes, whole, where a file
  is written or a program reads it: ``summary --json``, ``query`` as CSV or JSON, every
  export (md, csv, html, json, chrome), slices; in the browser the raw-args panel (``a``)
  copies it whole (``c``/``C``) and the detail pane says its full length;
* **grouping stays exact**: names are interned (one id per distinct full name), so tables
  group by id; two names that differ only after the head stay two rows.

A name of at most :data:`NAME_WORK_CHARS` characters is never changed (the functions
return the same object).  The screens' guards (the detail pane, the status line), which see
texts that may hold several names already cut, cut at :data:`TEXT_WORK_CHARS`
(:func:`shown_text`).
"""

from __future__ import annotations

import re

from . import units

#: characters of a name that matching, searching and drawing look at (4 KB).  Real names fit:
#: the longest in the shared traces, a 5,123-character PyTorch kernel template in
#: a100_cupti_counters, is the only one longer (drawn cut, ``… (+1.03 kB)``; its category,
#: ``elementwise``, is found in its first 53 characters).  The detail pane wraps what is drawn
#: of a name: at 8 KB the critical path key (``P``) on a 10 MB name took 160 ms of CPU, at
#: 4 KB 105 ms (the same key on the trace without long names: 85 ms)
NAME_WORK_CHARS = 4096
#: characters of one text drawn that may hold a few names already cut (a status line part, a
#: line of the detail pane): what the guards of the screens cut at (:func:`shown_text`)
TEXT_WORK_CHARS = 4 * NAME_WORK_CHARS
#: characters of a name the detail panes draw as their title (a 40-column pane: 26 lines of
#: it; wrapping the whole head, twice when a second pane shows the same event, was most of the
#: critical path screen's key on a 10 MB name); the pane also says the full length, and the raw
#: view (``a``) and the exports hold the whole name
PANE_NAME_CHARS = 1024
#: what stands where a name was cut, before the size of what was left out
CUT = "…"
#: a cut mark at the end of a text (:func:`mark_start`)
_MARK_AT_END = re.compile(re.escape(CUT) + r" \(\+[0-9.,]+ [kMGT]?B\)$")


def is_cut(name: str) -> bool:
    """Whether ``name`` is longer than the bound (and so is cut when drawn)."""
    return len(name) > NAME_WORK_CHARS


def head(name: str, keep: int = NAME_WORK_CHARS) -> str:
    """The first ``keep`` characters of ``name`` (``name`` itself when it is no longer):
    what rules and searches match on."""
    return name if len(name) <= keep else name[:keep]


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def left_out_bytes(name: str, keep: int = NAME_WORK_CHARS) -> int:
    """Bytes (UTF-8) of ``name`` after its first ``keep`` characters (0 when none).  Constant
    time for an ASCII name; a name with other characters is encoded once (in C, about 1 ms per
    MB: not cached, a cache would keep every long text it saw alive)."""
    if len(name) <= keep:
        return 0
    if name.isascii():  # constant time in CPython: one byte per character
        return len(name) - keep
    return _utf8_len(name) - _utf8_len(name[:keep])


def cut_mark(name: str, keep: int = NAME_WORK_CHARS) -> str:
    """What follows the head of a cut name: ``… (+10 MB)`` ("" when nothing is cut)."""
    left = left_out_bytes(name, keep)
    return f"{CUT} (+{units.bytes_brief(left)})" if left else ""


def shown(name: str, keep: int = NAME_WORK_CHARS) -> str:
    """``name`` as drawn: itself when it has at most ``keep`` characters (or is already
    shown cut there: ``shown(shown(x)) == shown(x)``), else its first ``keep`` characters
    and :func:`cut_mark`."""
    if len(name) <= keep or mark_start(name) == keep:
        return name
    return name[:keep] + cut_mark(name, keep)


def shown_in_pane(name: str) -> str:
    """``name`` as a detail pane's title draws it: cut at :data:`PANE_NAME_CHARS`."""
    return shown(name, PANE_NAME_CHARS)


def shown_text(text: str) -> str:
    """A text that may hold names already cut (a status line part, a line of the detail
    pane) cut at :data:`TEXT_WORK_CHARS` characters: the guard of a screen, which leaves the
    marks of the names in it alone."""
    return shown(text, TEXT_WORK_CHARS)


def length_text(name: str) -> str:
    """``10,000,000 characters (10 MB)``: the full length of a name, for the detail pane."""
    return f"{units.plural(len(name), 'character')} ({units.bytes_brief(left_out_bytes(name, 0))})"


def mark_start(text: str) -> int:
    """Where a :func:`cut_mark` ending ``text`` starts (-1: ``text`` does not end with one), so
    a label narrower than its name can keep the mark in view."""
    found = _MARK_AT_END.search(text, max(0, len(text) - 24))
    return found.start() if found else -1
