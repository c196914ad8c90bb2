"""Driver-call traces: JSON Lines written by eBPF (bpftrace, BCC) and LD_PRELOAD tracers of
``libcuda`` and ``nvidia.ko``, in the same columnar model as Kineto traces.

``load_driver`` (the reader: ``loader``, ``lines``, ``rows``, ``pairing``, ``build``) is
imported when first asked for, so that the model (``DriverTrace``, ``What``) and the content
test (``sniff``) cost a browser that opens a Kineto trace nothing more."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .schema import What
from .trace import DriverTrace

if TYPE_CHECKING:
    from .loader import load_driver

__all__ = ["DriverTrace", "What", "load_driver"]


def __getattr__(name: str) -> Any:
    if name == "load_driver":
        from .loader import load_driver

        return load_driver
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
