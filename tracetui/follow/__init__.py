"""Follow a run while it trains: the traces a profiler writes into a folder, each read once it is
complete and compared with the cycle before it (``tracetui follow``, docs/follow.md).

Headless (no Textual): :class:`Follower` (one look at the folder per :meth:`~Follower.poll`), the
completeness rules (:mod:`.complete`), the poll of stat tuples (:mod:`.watch`), a cycle's numbers
and the regression rule (:mod:`.cycle`), a growing file's reload rule (:mod:`.growth`).  Names
load on first use, so the command line's parser imports none of it.
"""

from __future__ import annotations

from ..lazy import lazy_names

_WHERE = {"Cycle": "cycle", "Follower": "follower", "FollowRequest": "follower", "Growth": "growth",
          "Note": "follower", "POLL_S": "watch", "Watcher": "watch"}

__all__ = sorted(_WHERE)

__getattr__ = lazy_names(__name__, {name: f".{home}" for name, home in _WHERE.items()})
