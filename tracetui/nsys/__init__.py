"""Nsight Systems SQLite exports (``nsys export --type sqlite``) in the Kineto model: NVTX
ranges, CUDA runtime/driver calls, kernels, memcpys, memsets and synchronisations of every
process and GPU of a report become one :class:`~tracetui.kineto.trace.KinetoTrace` with
Kineto's categories and arg names (docs/formats.md).

``load_nsys`` loads on first use, so the content test every start of ``tracetui`` runs
(``sniff``: the standard library only) imports neither sqlite3 nor numpy."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_names

if TYPE_CHECKING:
    from .loader import load_nsys

__all__ = ["load_nsys"]

__getattr__ = lazy_names(__name__, {"load_nsys": ".loader"})
