"""Open traces through an on-disk cache of parsed columns (see issue: reopen instantly).

For now the cache is a pass-through: ``load_cached`` loads and links the files.
"""

from __future__ import annotations

from collections.abc import Callable

from .model import LinkedTrace, open_traces


def load_cached(paths: list[str], *, use_cache: bool = True,
                progress: Callable[[str, float], None] | None = None) -> LinkedTrace:
    """Load (and link) the given trace files."""
    return open_traces(paths, progress)
