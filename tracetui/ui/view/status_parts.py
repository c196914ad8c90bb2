"""The status line: what is loaded, how well it linked, the browser's state, and the
warnings cue, fitted to ONE terminal line.

The line is a list of :class:`Part` s.  Each part has forms from longest to shortest;
when the line is wider than the terminal, :func:`fit_status` shortens, then leaves out,
the least important parts (the order is :data:`PRIORITY`).  Parts in :data:`ALWAYS_SHOWN`
are never dropped: the warnings cue (``⚠ N warnings (w)``), the filter flag (rows are
hidden) and the "different runs" alarm, because without them the screen would hide that
data is missing or suspect.  The trace title is never dropped either, only cut with ``…``
when nothing else is left to take away.  The links between files (:data:`KEPT_SHORT`: the ET
link, the driver link) keep their shortest form (``ET ✓``, ``ET 97%``, ``ET ~✓`` when found by
heuristics) before the other parts take the room.  When a part is left out the line says so
(``+2 more (?)``, ``+2 (?)`` or ``(?)``: help, ``?``, shows the whole line, :func:`status_whole`),
but for :data:`UNCOUNTED` parts.
:class:`~tracetui.ui.browser.status_line.StatusLine` draws them and re-fits on every resize.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from rich.cells import cell_len
from rich.text import Text

from ... import formats, units
from ...analysis.launches import lacks_launch_records
from ...driver.facts import driver_of
from ...driver.trace import event_counts
from ...errors import one_line
from ...names import shown_text

SEPARATOR = " · "

#: Most important first.  The least important part is shortened, then dropped, first.
#: ``more``, the count of the parts left out, takes room from the parts after it, never from those before.
PRIORITY = ("warnings", "filter", "mismatch", "rank", "title", "format", "no_launch", "steps", "search", "path",
            "findings", "sort", "matches", "export", "more", "driver_link", "driver", "counts", "gpu_link", "et_link",
            "skipped", "devices", "python")
#: Never dropped (their shortest form stays), whatever the width.
ALWAYS_SHOWN = frozenset({"warnings", "filter", "mismatch", "rank"})
#: Kept in their shortest form, where it fits, before the parts after ``more`` (:data:`PRIORITY`)
#: take the room: how well the files linked is a fact about the data (``ET ✓``), not a detail
KEPT_SHORT = ("et_link", "driver_link")
#: Left out without the count saying so: the tree shows whether python rows are hidden, the toast
#: said where the export went
UNCOUNTED = frozenset({"python", "export"})
#: Left-to-right order on screen.
DISPLAY_ORDER = ("rank", "title", "format", "steps", "matches", "driver", "devices", "counts", "skipped", "gpu_link",
                 "no_launch", "driver_link", "et_link", "mismatch", "search", "path", "filter", "sort", "python",
                 "export", "findings", "warnings", "more")


@dataclass(frozen=True)
class Part:
    """One piece of the status line: ``key`` (a name in :data:`PRIORITY`) and its forms,
    longest first.  The first ``late`` forms are tried only after every part has its place
    (a long detail that must not crowd out other parts)."""

    key: str
    forms: tuple[Text, ...]
    late: int = 0


def _part(key: str, *forms: str, style: str = "", late: int = 0) -> Part:
    return Part(key, tuple(Text(one_line(shown_text(f)), style=style) for f in forms), late)


def _devices(kt) -> tuple[str, ...]:
    """Device names with their count (``NVIDIA B200 ×8``), then ``8 GPUs``."""
    names = Counter(str(d.get("name")) for d in kt.device_properties if isinstance(d, dict) and d.get("name"))
    if not names:
        return ()
    full = ", ".join(name + (f" ×{n}" if n > 1 else "") for name, n in sorted(names.items()))
    total = sum(names.values())
    return (full, f"{total} GPU{'s' if total != 1 else ''}")


def _driver_parts(drv) -> list[Part]:
    """A driver-call trace alone: its layout, its events by what they are, and the lines of
    the file that are not events (banners, heartbeats, bad lines: ``w`` says which)."""
    layouts = " + ".join(drv.layouts) or "driver"
    counts = event_counts(drv)  # the events of the file (phases are derived): as summary and info say
    calls, ioctls, records, in_file = counts.calls, counts.ioctls, counts.records, counts.driver
    kinds = ", ".join(f"{n:,} {word}{'s' if n != 1 else ''}" for n, word in ((calls, "call"), (ioctls, "ioctl"),
                                                                            (records, "record")))
    parts = [_part("driver", f"{layouts} driver-call trace", layouts, late=1),
             _part("counts", f"{in_file:,} events: {kinds}", kinds, f"{in_file:,} events")]
    st = drv.lines
    if st.skipped_total:
        parts.append(_part("skipped", f"{st.skipped_total:,} of {st.total:,} lines skipped",
                           f"{st.skipped_total:,} lines skipped", style="yellow"))
    return parts


def _driver_link_part(drv) -> Part:
    """``driver link 86/86, offset ±0.0 µs``: Kineto calls linked to driver calls (of those
    that can be), and the uncertainty of the clock offset."""
    link = drv.link
    body = f"driver link {link.linked:,}/{link.kineto_calls:,}"
    spread = f"±{link.uncertainty_us:,.1f} {units.US}" if link.linked else "no offset"
    style = "" if link.linked else "yellow"
    return _part("driver_link", f"{body}, offset {spread} (heuristic)", f"{body}, offset {spread}",
                 f"driver {link.linked:,}/{link.kineto_calls:,}", style=style, late=1)


def _gpu_link_part(kt, g) -> Part:
    """``GPU→launch 850/850``; ``no launch records`` when a trace of another format holds GPU
    work but no launch call at all (:func:`~tracetui.analysis.launches.lacks_launch_records`)."""
    if lacks_launch_records(kt):  # a caveat on every number: kept longer than the counts
        return _part("no_launch", f"no launch records (0/{g.gpu_events:,} GPU events linked)", "no launch records",
                     "no launches", style="yellow")
    return _part("gpu_link", f"GPU→launch {g.linked:,}/{g.gpu_events:,}", f"launch {_share(g.linked, g.gpu_events)}")


def device_work_text(kt) -> str:
    """``850 GPU events (768 kernels)``; ``1,313 device events`` (MTIA: not kernels)."""
    c = kt.device_work_counts()
    text = f"{c['events']:,} {c['called']}"
    return text + (f" ({c['kernels']:,} kernels)" if c["kernels"] is not None else "")


def trace_parts(linked) -> list[Part]:
    """The fixed parts: title (file names), devices, event counts, GPU launch links,
    ET link statistics, the different-runs alarm and the warning count (``w`` lists them).
    A driver-call trace alone: its layout, counts and skipped lines; linked to a Kineto
    trace: the Kineto counts and the driver link."""
    kt = linked.kineto
    parts = [_part("title", linked.title, style="bold")]
    other = formats.other_format(kt) if kt is not None else None
    if other is not None:  # not a PyTorch profiler trace: say what it is
        parts.append(_part("format", other.title, other.spec.name, style="cyan"))
    drv = driver_of(kt)
    if drv is not None and drv.link is None:
        parts += _driver_parts(drv)
    elif kt is not None:
        devices = _devices(kt)
        if devices:
            parts.append(_part("devices", *devices))
        n_kineto = event_counts(kt).kineto  # linked to a driver-call trace: the Kineto trace's own events
        parts.append(_part("counts", f"{n_kineto:,} events, {device_work_text(kt)}", f"{n_kineto:,} events"))
        g = kt.gpu_stats
        if g.gpu_events:
            parts.append(_gpu_link_part(kt, g))
        if drv is not None:
            parts.append(_driver_link_part(drv))
    if linked.link is not None:
        s = linked.link.stats
        full = Text(f"ET link {s.method}: {s.linked:,}/{s.et_ops:,}")
        if s.heuristic:
            full.append(f" ({s.heuristic:,} heuristic)", style="yellow")
        full.append(f", ET-only {s.et_only:,}")
        parts.append(Part("et_link", (full, Text(f"ET {s.linked:,}/{s.et_ops:,}"),
                                      Text(f"ET {'~' if s.heuristic else ''}{_share(s.linked, s.et_ops)}"))))
        if s.suspect_mismatch:
            parts.append(_part("mismatch", "ET and Kineto look like different runs", "ET≠Kineto run?",
                               style="bold red"))
    n_warn = len(linked.all_warnings())
    if n_warn:
        parts.append(warnings_part(n_warn))
    return parts


def _share(linked: int, total: int) -> str:
    """``✓`` when every one linked, else the share linked (``97%``; never 100% unless all are)."""
    if linked >= total:
        return "✓"
    return units.pct_text(min(99, int(linked * 100 / total)) if total else 0, "d")


def more_part(n: int) -> Part:
    """``+2 more (?)``, else ``+2 (?)``, else ``(?)``: parts of the line left out at this width
    (help, ``?``, shows the whole line)."""
    return _part("more", f"+{n} more (?)", f"+{n} (?)", "(?)", style="dim")


def warnings_part(n: int) -> Part:
    """``⚠ N warnings (w)``: the cue that ``w`` lists what could not be read or linked."""
    return _part("warnings", f"⚠ {n} warning{'s' if n != 1 else ''} (w)", style="bold yellow")


def rank_part(rank: int, world_size: int) -> Part:
    """``rank R/N`` of a whole job (R the rank shown, N the world size)."""
    return _part("rank", f"rank {rank}/{world_size}", style="bold cyan")


def _clip(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def state_parts(*, python_hidden: bool | None = None, query: str | None = None, n_matches: int = 0,
                filtered: bool = False, exported: str | None = None, noun: str | None = None,
                path: tuple[str, str] | None = None, order: str | None = None) -> list[Part]:
    """The browser's state: python rows hidden or shown (None: no Kineto trace), the search
    and its match count (``noun``: the matches are a summary row's occurrences or a
    finding's evidence, ``query`` names them), with the order n/N follow when it is not tree
    order, a critical path shown (its long and short forms), the filter flag, and the last
    export's absolute path."""
    parts = []
    if python_hidden is not None:
        parts.append(_part("python", "python hidden" if python_hidden else "python shown",
                           "py hidden" if python_hidden else "py shown", style="dim"))
    how = f", {order}" if order else ""
    if query is not None and noun is not None:
        parts.append(_part("search", f"{query}: {n_matches:,} {noun}{'s' if n_matches != 1 else ''}{how}",
                           f"{_clip(query, 16)}: {n_matches:,}",
                           style="dim"))
    elif query is not None:
        parts.append(_part("search", f"search {query!r}: {n_matches:,} matches{how}",
                           f"/{_clip(query, 16)}: {n_matches:,}", style="dim"))
    if path is not None:
        parts.append(_part("path", *path, style="red"))
    if filtered:
        parts.append(_part("filter", "FILTERED", style="bold"))
    if exported is not None:
        name = exported.rstrip("/").rsplit("/", 1)[-1]
        parts.append(_part("export", f"saved {exported}", f"saved {name}", style="green", late=1))
    return parts


def findings_part(counts: dict[str, int] | None, *, failed: bool = False, job: bool = False) -> Part:
    """The findings count by severity (``F`` lists them): ``findings: 1 error, 7 warnings,
    1 info (F)``, else ``F: 1E 7W 1I``; ``findings: checking…`` while the worker runs
    (``counts`` None), ``findings failed (F)`` when it failed.  The long forms are ``late``:
    they take only the room the other parts leave."""
    what = "job findings" if job else "findings"
    if failed:
        return _part("findings", f"{what} failed (F)", "F: failed", style="red", late=1)
    if counts is None:
        return _part("findings", f"{what}: checking…", "F: …", style="dim", late=1)
    shown = [(n, word) for word, n in counts.items() if n]
    if not shown:
        return _part("findings", f"{what}: none (F)", "F: none", style="green", late=1)
    full = ", ".join(f"{n:,} {word}" + ("s" if n != 1 and word != "info" else "") for n, word in shown)
    short = " ".join(f"{n:,}{word[0].upper()}" for n, word in shown)
    style = "bold red" if counts.get("error") else "yellow" if counts.get("warning") else ""
    return _part("findings", f"{what}: {full} (F)", f"F: {short}", style=style, late=1)


def _priority(key: str) -> int:
    return PRIORITY.index(key) if key in PRIORITY else len(PRIORITY)


def _join(parts: list[Part], level: dict[str, int]) -> Text:
    shown = sorted((p for p in parts if level[p.key] < len(p.forms)),
                   key=lambda p: DISPLAY_ORDER.index(p.key) if p.key in DISPLAY_ORDER else len(DISPLAY_ORDER))
    text = Text(no_wrap=True, overflow="ellipsis", end="")
    for i, p in enumerate(shown):
        if i:
            text.append(SEPARATOR, style="dim")
        text.append_text(p.forms[level[p.key]])
    return text


def fit_status(parts: list[Part], width: int) -> Text:
    """The parts joined by `` · ``, at most ``width`` cells wide.

    The parts in :data:`ALWAYS_SHOWN` and the title start in their shortest form (the title
    cut with ``…`` if even that is too wide); then, most important first (:data:`PRIORITY`), each
    part takes its longest form that still fits beside the parts placed before it, or is left
    out (the links, :data:`KEPT_SHORT`, first in their shortest form where ``more`` ranks); last,
    the ``late`` forms get what room is left.  So the least important parts are the ones shortened
    or left out.  When some are, a last part says how many (:func:`more_part`): the parts are
    fitted again in the width less the count's room; of the count's forms that leave every part
    more important than the count (:data:`PRIORITY`) as it was and the links shown, the one that gives the most
    important parts their longest forms (then the longest count).  None: no count."""
    fitted, level = _fit(parts, width)
    text = _join(fitted, level)
    if text.cell_len > width:  # narrower than the parts that are always shown
        if width <= 0:
            return Text(no_wrap=True, end="")
        text.truncate(width, overflow="ellipsis")
        return text
    if not _left_out(fitted, level):
        return text
    before = [p.key for p in parts if _priority(p.key) < _priority("more")]
    links = [p.key for p in fitted if p.key in KEPT_SHORT and level[p.key] < len(p.forms)]  # shown: they stay
    best: tuple[tuple[int, ...], Text] | None = None
    for form in range(len(more_part(0).forms)):
        n = 1
        for _ in range(3):  # the count's room depends on the count (a digit more): settle it
            room = width - cell_len(SEPARATOR) - more_part(n).forms[form].cell_len
            again, lv = _fit(parts, room)
            left = _left_out(again, lv)
            if len(left) <= n:
                break
            n = len(left)
        if not left or any(a is not b for a, b in zip(again, parts)) or any(lv[k] > level[k] for k in before) \
                or any(p.key in links and lv[p.key] >= len(p.forms) for p in again):
            continue  # none left out, the title cut, a part more important than the count shortened, a link gone
        more = more_part(len(left))
        lv[more.key] = form
        line = _join([*again, more], lv)
        rank = (*(lv[p.key] for p in sorted(again, key=lambda p: _priority(p.key))), form)
        if line.cell_len <= width and (best is None or rank < best[0]):
            best = (rank, line)
    return text if best is None else best[1]


def _left_out(parts: list[Part], level: dict[str, int]) -> list[Part]:
    """The parts left out that the count of :func:`more_part` counts (not :data:`UNCOUNTED`)."""
    return [p for p in parts if p.key not in UNCOUNTED and level[p.key] >= len(p.forms)]


def _fit(parts: list[Part], width: int) -> tuple[list[Part], dict[str, int]]:
    """:func:`fit_status` but the count of parts left out: (the parts, the title maybe cut;
    each part's form, ``len(forms)`` when left out)."""
    level = {p.key: len(p.forms) - 1 if p.key in ALWAYS_SHOWN or p.key == "title" else len(p.forms)
             for p in parts}
    text = _join(parts, level)
    title = next((p for p in parts if p.key == "title"), None)
    if text.cell_len > width and title is not None:
        room = max(1, title.forms[-1].cell_len - (text.cell_len - width))
        cut = title.forms[-1].copy()
        cut.truncate(room, overflow="ellipsis")
        parts = [Part(p.key, p.forms[:-1] + (cut,), p.late) if p is title else p for p in parts]
        text = _join(parts, level)
    if text.cell_len > width:  # narrower than the parts that are always shown: _join cuts the line
        return parts, level

    def fits(part: Part, form: int) -> bool:
        old, level[part.key] = level[part.key], form
        if _join(parts, level).cell_len <= width:
            return True
        level[part.key] = old
        return False

    by_priority = sorted(parts, key=lambda p: _priority(p.key))
    kept = False
    for p in by_priority:
        if not kept and _priority(p.key) > _priority("more"):  # the links in their shortest form first
            kept = True
            for link in parts:
                if link.key in KEPT_SHORT:
                    fits(link, len(link.forms) - 1)
        for form in range(min(p.late, level[p.key]), level[p.key]):
            if fits(p, form):
                break
    for p in by_priority:  # then the late forms, if there is room left
        for form in range(min(p.late, level[p.key])):
            if fits(p, form):
                break
    return parts, level


def status_whole(parts: list[Part]) -> Text:
    """Every part at full length (help shows it: the line on screen may leave some out)."""
    return _join(parts, {p.key: 0 for p in parts})


def trace_summary(linked) -> Text:
    """The fixed part of the status line at full length (no width limit)."""
    return status_whole(trace_parts(linked))
