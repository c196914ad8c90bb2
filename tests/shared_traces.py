"""Shared test helpers: where the real traces live (read in place, never copied)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "traces"
KINETO = SHARED / "kineto"
ET_DIR = SHARED / "et"
SAMPLES = REPO / "sample_traces"


def kineto_path(name: str) -> Path:
    p = KINETO / name
    if not p.exists():  # pragma: no cover - a broken checkout, not a skip
        pytest.fail(f"shared trace missing: {p} (tests read ../shared/traces in place)")
    return p


@lru_cache(maxsize=None)
def load_shared_kineto(name: str):
    """Load a shared Kineto trace once per test session (read-only use only)."""
    from tracetui.kineto import load_kineto

    return load_kineto(kineto_path(name))


@lru_cache(maxsize=None)
def load_shared_pair(folder: str):
    from tracetui.session import load_pair

    return load_pair(ET_DIR / folder / "et.json.gz", ET_DIR / folder / "kineto.json.gz")


NSYS = SHARED / "nsys"
#: the Nsight Systems SQLite export of the shared traces (two processes on two H100s)
NSYS_SAMPLE_NAME = "h100_2gpu_1s.sqlite"


def nsys_path(name: str = NSYS_SAMPLE_NAME) -> Path:
    p = NSYS / name
    if not p.exists():  # pragma: no cover - a broken checkout, not a skip
        pytest.fail(f"shared trace missing: {p} (tests read ../shared/traces in place)")
    return p


@lru_cache(maxsize=None)
def load_shared_nsys(name: str = NSYS_SAMPLE_NAME):
    """Load a shared Nsight Systems export once per test session (read-only use only)."""
    from tracetui.nsys import load_nsys

    return load_nsys(nsys_path(name))
