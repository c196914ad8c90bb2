"""Give freed heap memory back to the operating system after a big load.

glibc's allocator keeps memory freed by many small objects (a load's decoded structs,
interned-value lists, per-chunk bytes) mapped in its arenas; the process's RSS stays at
the load's high-water mark although Python no longer uses it.  ``malloc_trim(0)`` returns
those pages.  On the 10x tiling of v100x2_nccl_216k (2.16M events) the RSS held after
``load_kineto`` drops from 850 to 456 MB; the columns themselves are ~410 MB.
"""

from __future__ import annotations

import ctypes
from functools import lru_cache

__all__ = ["release_freed_memory"]


@lru_cache(maxsize=1)
def _malloc_trim():
    try:
        return ctypes.CDLL(None).malloc_trim  # glibc; absent on macOS and musl
    except (OSError, AttributeError):
        return None


def release_freed_memory() -> None:
    """``malloc_trim(0)`` where the C library has it; nothing elsewhere."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
