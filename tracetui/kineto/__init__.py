"""Kineto (PyTorch profiler / Chrome trace JSON) loading and the linked event model.

The names load when first asked for, each from its module: the list of formats
(:mod:`tracetui.formats`) imports the package for its light recognition (``sniff``, ``format``)
on every start of ``tracetui``, before the loader and numpy are needed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_names

if TYPE_CHECKING:
    from .kinds import Kind, LaunchClass, launch_class_of_name
    from .lanes import Lane
    from .loader import load_kineto
    from .trace import GpuLinkStats, KinetoTrace

__all__ = ["Kind", "LaunchClass", "Lane", "GpuLinkStats", "KinetoTrace", "launch_class_of_name", "load_kineto"]

__getattr__ = lazy_names(__name__, {
    "Kind": ".kinds", "LaunchClass": ".kinds", "launch_class_of_name": ".kinds", "Lane": ".lanes",
    "load_kineto": ".loader", "GpuLinkStats": ".trace", "KinetoTrace": ".trace"})
