"""Driver-call traces: JSON Lines written by eBPF (bpftrace, BCC) and LD_PRELOAD tracers of
``libcuda`` and ``nvidia.ko``, in the same columnar model as Kineto traces."""

from .loader import load_driver
from .schema import What
from .trace import DriverTrace

__all__ = ["DriverTrace", "What", "load_driver"]
