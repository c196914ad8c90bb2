"""Driver-call traces: JSON Lines written by eBPF (bpftrace, BCC) and LD_PRELOAD tracers of
``libcuda`` and ``nvidia.ko``, in the same columnar model as Kineto traces.

The package's names load when first asked for: ``load_driver`` (the reader: ``loader``,
``lines``, ``rows``, ``pairing``, ``build``), ``DriverTrace`` (the model, with numpy) and
``What``.  So the content test every start of ``tracetui`` runs (``sniff``, msgspec only)
costs nothing more, and a browser that opens a Kineto trace never imports the reader."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .loader import load_driver
    from .schema import What
    from .trace import DriverTrace

__all__ = ["DriverTrace", "What", "load_driver"]

_HOME = {"DriverTrace": ".trace", "What": ".schema", "load_driver": ".loader"}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home, __name__), name)
