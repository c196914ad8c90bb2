"""Guards against Textual defects that a user can trigger with ordinary keys.

Each guard names the defect, the keys that reach it and the Textual versions seen, and
changes nothing but the failing case.  :func:`install_guards` is called once by the
browser app (the headless core never imports this module).

* ``OptionList._move_page`` (PgUp/PgDn) indexes the list's line map before the list has
  been laid out and raises ``KeyError``: ``ctrl+p`` then ``pagedown`` in the command
  palette, or ``enter`` on the export format then ``pagedown`` typed ahead before the
  dropdown is painted (Textual 8.0.0 and 8.2.8; found by the monkey test, reported
  upstream by others for ``SelectOverlay``).  A page move in a list that shows nothing
  has nothing to do, so it returns.
* ``Timer`` with a negative delay never fires and spins the event loop at 100 % CPU:
  its catch-up arithmetic (``count = int((now - start) / interval + 1)``) lands on the
  same past deadline forever, so the browser freezes.  The caller is ``Toast._on_mount``:
  a toast mounted after its notification's time ran out (a toast re-shown when a screen
  closes) asks for a negative delay.  Seen in long monkey runs (-0.104 s and -0.011 s,
  Textual 8.2.8).  Such a timer fires after :data:`MIN_TIMER_S` instead, and
  :data:`clamped_timers` records where it was created (the monkey bench prints it).
* ``ResultCallback.__call__`` sets its future's result even when a first dismissal already
  set it, and raises ``InvalidStateError``: the command palette dismissed twice, when a
  second ``enter`` arrives before the first one's dismissal has popped the palette
  (typed-ahead keys; the monkey test on a 2-core CI box, Textual 8.2.8).  The first
  result was delivered; the second call is ignored.
* ``CommandPalette._gather_commands`` (the palette's search worker) looks up its
  ``CommandList`` with ``query_one`` and raises ``NoMatches`` when the palette has already
  been closed and emptied: ``ctrl+p``, a few typed characters and ``esc`` in quick
  succession on a busy machine (the monkey test, Textual 8.0.0, twice in full runs at load
  4-6; again on Textual 8.0.0 with the palette still the active screen while it was being
  emptied).  The worker's error ends the whole app.  A palette that is no longer the active
  screen, or holds no ``CommandList`` (closing, or not yet composed), has nothing to show, so
  the search ends quietly; on an active palette that has its list the error stays.
* ``Select``'s mount handler sets its value, whose watcher looks up the ``#label`` of its
  ``SelectCurrent`` with ``query_one`` and raises ``NoMatches`` when the screen holding the
  select was closed before it mounted: ``e`` (the export dialog) then ``esc`` typed ahead
  (tests/ui/test_ui_screen_closed_at_once.py; Textual 8.0.0 and 8.2.8).  A select whose
  label is already gone has nothing to show, so the update returns.
* ``Strip.render`` writes the text of its segments to the terminal as it is, so a control
  character that reaches a segment is acted on by the terminal: ``ESC ] 52`` writes the
  clipboard, ``ESC ] 2`` sets the window title, ``ESC [ 6 n`` makes the terminal type a
  reply into the app (Textual 8.0.0 and 8.2.8; Rich's ``Text`` drops only BEL, BS, VT, FF
  and CR).  The browser escapes trace text visibly where it becomes a ``Text``
  (:func:`tracetui.errors.one_line`, :mod:`tracetui.io.terminal`); this guard is the last
  line behind that: a strip whose text still holds a character the sanitiser escapes
  (:data:`tracetui.errors.UNSAFE_RANGES`: C0 and C1 controls, DEL, bidi controls and marks,
  invisible characters) is written with each replaced by as many spaces as the cells it
  takes (none for most: the layout is unchanged), so no bidi override reorders a line either.
"""

from __future__ import annotations

import re
import traceback
from functools import wraps

from rich.cells import cell_len
from rich.segment import Segment
from textual.strip import Strip
from textual.timer import Timer
from textual.widgets import OptionList

from ..errors import UNSAFE

_INSTALLED = False

#: The delay given to a timer created with a negative or zero delay, in seconds.
MIN_TIMER_S = 0.001

#: (delay asked for, name, creation stack) of every timer clamped by the guard; the stack
#: is kept for the first :data:`STACKS_KEPT` only (a long session must not grow by a
#: traceback per re-shown toast)
clamped_timers: list[tuple[float, str | None, str]] = []
STACKS_KEPT = 20


def _guard_move_page() -> None:
    original = getattr(OptionList, "_move_page", None)
    if original is None:  # a Textual without the defective method
        return

    @wraps(original)
    def _move_page(self: OptionList, direction) -> None:
        if not self.scrollable_content_region:
            return
        highlighted = self.highlighted or 0
        if self.option_count and highlighted not in self._index_to_line:
            return
        original(self, direction)

    OptionList._move_page = _move_page  # type: ignore[method-assign]


def _guard_negative_timers() -> None:
    original = Timer.__init__

    @wraps(original)
    def __init__(self: Timer, event_target, interval: float, *args, **kwargs) -> None:
        if interval <= 0:
            stack = "".join(traceback.format_stack(limit=8)[:-1]) if len(clamped_timers) < STACKS_KEPT else ""
            clamped_timers.append((interval, kwargs.get("name"), stack))
            interval = MIN_TIMER_S
        original(self, event_target, interval, *args, **kwargs)

    Timer.__init__ = __init__  # type: ignore[method-assign]


def _guard_double_dismiss() -> None:
    from textual import screen as textual_screen

    cls = getattr(textual_screen, "ResultCallback", None)
    if cls is None:  # a Textual without it
        return
    original = cls.__call__

    @wraps(original)
    def __call__(self, result) -> None:
        future = getattr(self, "future", None)
        if future is not None and future.done():
            return
        original(self, result)

    cls.__call__ = __call__  # type: ignore[method-assign]


def _guard_palette_search() -> None:
    from textual import work
    from textual.app import ScreenStackError
    from textual.command import CommandList, CommandPalette
    from textual.css.query import NoMatches

    decorated = getattr(CommandPalette, "_gather_commands", None)
    body = getattr(decorated, "__wrapped__", None)  # the coroutine under @work
    group = getattr(CommandPalette, "_GATHER_COMMANDS_GROUP", None)
    if body is None or group is None:  # a Textual without the defective worker
        return

    @work(exclusive=True, group=group)
    @wraps(body)
    async def _gather_commands(self: CommandPalette, search_value: str) -> None:
        try:
            await body(self, search_value)
        except NoMatches:
            # closed, emptied while it closes, or not yet composed: no list to fill
            try:  # (ui.shown.top_screen, which this layer may not import)
                shown = self.is_attached and self.app.screen is self
            except ScreenStackError:  # the app exiting: no screen left
                shown = False
            if shown and self.query(CommandList):
                raise

    CommandPalette._gather_commands = _gather_commands  # type: ignore[method-assign]


def _guard_select_label() -> None:
    from textual.widgets._select import SelectCurrent

    update = SelectCurrent.update

    @wraps(update)
    def guarded_update(self: SelectCurrent, label) -> None:
        if not self.query("#label"):  # removed with its closed screen
            return
        update(self, label)

    SelectCurrent.update = guarded_update  # type: ignore[method-assign]


def _blank(m: re.Match[str]) -> str:
    return " " * cell_len(m.group())


def _guard_control_output() -> None:
    original = Strip.render

    @wraps(original)
    def render(self: Strip, console) -> str:
        if self._render_cache is None:
            segments = list(self)
            text = "".join([seg.text for seg in segments])
            if not (text.isascii() and text.isprintable()) and UNSAFE.search(text):
                clean = Strip([Segment(UNSAFE.sub(_blank, seg.text), seg.style, seg.control) for seg in segments],
                              self.cell_length)
                self._render_cache = original(clean, console)
        return original(self, console)

    Strip.render = render  # type: ignore[method-assign]


def _guard_monochrome_unstyled() -> None:
    """``NO_COLOR`` makes Textual pass every line through its ``Monochrome`` filter, which reads
    ``style.color`` of each segment and fails on a segment without a style (Rich renders plain
    text as such): the browser crashed on its first frame.  An unstyled segment is given the
    null style, which the filter turns into itself."""
    from rich.style import Style
    from textual.filter import Monochrome

    original = Monochrome.apply

    @wraps(original)
    def apply(self: Monochrome, segments: list[Segment], background):
        if any(seg.style is None for seg in segments):
            null = Style.null()
            segments = [seg if seg.style is not None else Segment(seg.text, null, seg.control) for seg in segments]
        return original(self, segments, background)

    Monochrome.apply = apply  # type: ignore[method-assign]


def install_guards() -> None:
    """Install every guard (idempotent)."""
    global _INSTALLED
    if _INSTALLED:
        return
    _guard_move_page()
    _guard_negative_timers()
    _guard_double_dismiss()
    _guard_palette_search()
    _guard_select_label()
    _guard_control_output()
    _guard_monochrome_unstyled()
    _INSTALLED = True
