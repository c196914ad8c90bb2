"""tracetui: a keyboard-driven terminal browser for PyTorch profiler traces."""

__version__ = "0.1.0"
