"""Kineto (PyTorch profiler / Chrome trace JSON) loading and the linked event model."""

from .kinds import Kind, LaunchClass, launch_class_of_name
from .lanes import Lane
from .loader import load_kineto
from .trace import GpuLinkStats, KinetoTrace

__all__ = ["Kind", "LaunchClass", "Lane", "GpuLinkStats", "KinetoTrace", "launch_class_of_name", "load_kineto"]
