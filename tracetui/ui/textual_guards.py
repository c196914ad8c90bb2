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
"""

from __future__ import annotations

from functools import wraps

from textual.widgets import OptionList

_INSTALLED = False


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


def install_guards() -> None:
    """Install every guard (idempotent)."""
    global _INSTALLED
    if _INSTALLED:
        return
    _guard_move_page()
    _INSTALLED = True
