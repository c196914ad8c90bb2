"""This process's resident-memory high-water mark, as the bench scripts report it.

``VmHWM`` (``/proc/self/status``) is read rather than ``ru_maxrss`` alone: Linux carries
``ru_maxrss`` across ``execve`` from the (v)forking parent, so a child of a big parent would
report the parent's peak.  ``ru_maxrss`` is the fallback where ``/proc`` is missing.
"""

from __future__ import annotations

import resource


def peak_rss_bytes() -> int:
    """This process's RSS high-water mark in bytes."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def peak_rss_mb() -> float:
    """The same in MB (2^20 bytes)."""
    return peak_rss_bytes() / 2**20
