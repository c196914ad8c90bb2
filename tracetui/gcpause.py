"""``gc_paused()``: the cyclic garbage collector off while a loader builds millions of objects.

Decoding a 2M-event trace allocates tens of millions of short-lived containers; each
allocation burst triggers collections that walk every tracked object again, which cost
2.5 s of a 13 s load of a 2.16M-event trace (``bench/profile_load.py --phases``, GC on vs
off).  The loaders create no reference cycles, so pausing the collector loses nothing;
the previous state is restored on exit, also on errors, and nested pauses are fine.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Disable the cyclic GC inside the block; re-enable it after only if it was enabled."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
