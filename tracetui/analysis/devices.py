"""Peak throughput of GPUs (the roofline's ceilings), from a packaged TOML table with user
overrides, as the kernel categories do (``analysis/categories.py``).

The packaged ``default_devices.toml`` lists H100, H200, B200, A100, V100, MI300X, MI250X, MI250,
MI210 and common RTX cards: peak DRAM bandwidth in GB/s and dense peak TFLOP/s per compute
type (``fp64``, ``fp32`` (vector units), ``tf32``, ``bf16``, ``fp16``, ``fp8``, ``int8``), each
with its source.  A user file (``$TRACETUI_DEVICES``, else
``$XDG_CONFIG_HOME/tracetui/devices.toml``) of the same format is tried first; with
``replace_defaults = true`` it replaces the table.  A device is found by the first entry whose
``match`` regex is searched (case-insensitively) in the trace's deviceProperties ``name``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..config import load_packaged_toml, load_toml, user_file
from ..errors import TraceFormatError

ENV_VAR = "TRACETUI_DEVICES"
#: compute types a device entry may give a peak for
COMPUTE_TYPES = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8")
_RESOURCE = "default_devices.toml"
_KEYS = frozenset({"name", "match", "memory_gbps", "tflops", "source"})


@dataclass(frozen=True)
class DevicePeaks:
    """One device's ceilings: ``memory_gbps`` (GB/s) and ``tflops`` per compute type."""

    name: str
    match: str
    memory_gbps: float
    tflops: dict[str, float] = field(default_factory=dict)
    source: str = ""

    def peak_tflops(self, compute_type: str) -> tuple[float, str] | None:
        """(peak TFLOP/s, the type used) for ``compute_type``; a type the device lacks falls
        back to ``fp32`` (the vector units); None when neither is known."""
        for t in (compute_type, "fp32"):
            if t in self.tflops:
                return self.tflops[t], t
        return None


def _parse(data: dict[str, Any], where: str) -> tuple[list[DevicePeaks], bool]:
    unknown = set(data) - {"device", "replace_defaults"}
    if unknown:
        raise TraceFormatError(where, f"unknown top-level key {sorted(unknown)[0]!r} (expected [[device]] entries)")
    out = []
    for n, d in enumerate(data.get("device", []), 1):
        if not isinstance(d, dict):
            raise TraceFormatError(where, f"device {n}: not a table")
        bad = set(d) - _KEYS
        if bad:
            raise TraceFormatError(where, f"device {n}: unknown key {sorted(bad)[0]!r}")
        for key in ("name", "match", "memory_gbps"):
            if key not in d:
                raise TraceFormatError(where, f"device {n}: missing {key!r}")
        try:
            re.compile(str(d["match"]))
        except re.error as exc:
            raise TraceFormatError(where, f"device {n}: bad regex in 'match': {exc}") from exc
        tf = d.get("tflops", {})
        if not isinstance(tf, dict) or set(tf) - set(COMPUTE_TYPES):
            raise TraceFormatError(where, f"device {n}: tflops keys must be among {', '.join(COMPUTE_TYPES)}")
        vals = [d["memory_gbps"], *tf.values()]
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in vals):
            raise TraceFormatError(where, f"device {n}: memory_gbps and tflops must be positive numbers")
        out.append(DevicePeaks(str(d["name"]), str(d["match"]), float(d["memory_gbps"]),
                               {k: float(v) for k, v in tf.items()}, str(d.get("source", ""))))
    return out, bool(data.get("replace_defaults", False))


def load_device_file(path: str | os.PathLike[str]) -> tuple[list[DevicePeaks], bool]:
    """(entries, replace_defaults) of a user devices file; one-line errors naming the file."""
    return _parse(load_toml(path, "devices file"), os.fspath(path))


@lru_cache(maxsize=1)
def default_devices() -> tuple[DevicePeaks, ...]:
    return tuple(_parse(*load_packaged_toml(__package__, _RESOURCE))[0])


def user_devices_location() -> Path | None:
    """``$TRACETUI_DEVICES`` if set, else ``$XDG_CONFIG_HOME/tracetui/devices.toml`` if it exists."""
    return user_file(ENV_VAR, "devices.toml")


class DeviceTable:
    """Ordered device entries; :meth:`find` gives the first whose regex matches a name."""

    def __init__(self, entries: list[DevicePeaks] | tuple[DevicePeaks, ...]):
        self.entries = tuple(entries)
        self._re = [re.compile(e.match, re.IGNORECASE) for e in self.entries]

    def find(self, device_name: str | None) -> DevicePeaks | None:
        if not device_name:
            return None
        for e, rx in zip(self.entries, self._re):
            if rx.search(device_name):
                return e
        return None


def get_device_table(user_path: str | os.PathLike[str] | None = None) -> DeviceTable:
    """The user's entries (explicit path, else :func:`user_devices_location`) then the defaults."""
    path = Path(user_path) if user_path is not None else user_devices_location()
    if path is None:
        return DeviceTable(default_devices())
    user, replace = load_device_file(path)
    return DeviceTable(user if replace else [*user, *default_devices()])
