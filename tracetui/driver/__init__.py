"""Driver-call traces: JSON Lines written by eBPF (bpftrace, BCC) and LD_PRELOAD tracers of
``libcuda`` and ``nvidia.ko``, in the same columnar model as Kineto traces.

The package's names load when first asked for: ``load_driver`` (the reader: ``loader``,
``lines``, ``rows``, ``pairing``, ``build``), ``DriverTrace`` (the model, with numpy) and
``What``.  So the content test every start of ``tracetui`` runs (``sniff``, msgspec only)
costs nothing more, and a browser that opens a Kineto trace never imports the reader."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_names

if TYPE_CHECKING:
    from .loader import load_driver
    from .schema import What
    from .trace import DriverTrace

__all__ = ["DriverTrace", "What", "load_driver"]

__getattr__ = lazy_names(__name__, {"DriverTrace": ".trace", "What": ".schema", "load_driver": ".loader"})
