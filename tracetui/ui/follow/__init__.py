"""The follow screen (``tracetui follow DIR``, ``tracetui DIR --follow``; docs/follow.md): the cycles
of a run as their traces are written, a cycle in the browser, two in the diff browser; and a
growing driver-call trace read again as it grows (``tracetui FILE.jsonl --follow``)."""
