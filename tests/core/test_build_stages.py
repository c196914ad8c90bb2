"""The two trace builders read as named stages (issue 37, formats as plug-ins): ``build_trace``
(Kineto) and ``build_driver_trace`` are short drivers, and every function of the build
modules is at most 80 lines, with a docstring saying what it takes and gives when it is more
than a few lines."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "tracetui"
#: the build and its stage groups
BUILD_MODULES = ["kineto/build.py", "kineto/event_columns.py", "kineto/placement.py", "kineto/gpu_links.py",
                 "driver/build.py"]
MAX_STAGE_LINES = 80
#: a driver that calls the stages: its stage calls and the model's constructor, no more
MAX_DRIVER_LINES = 50


def _functions(rel: str) -> dict[str, int]:
    """name -> lines of each module-level function of ``tracetui/<rel>`` (docstring included)."""
    tree = ast.parse((PACKAGE / rel).read_text())
    return {n.name: n.end_lineno - n.lineno + 1 for n in tree.body if isinstance(n, ast.FunctionDef)}


@pytest.mark.parametrize("rel", BUILD_MODULES)
def test_every_stage_is_short_and_documented(rel):
    tree = ast.parse((PACKAGE / rel).read_text())
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert functions
    long = {f.name: f.end_lineno - f.lineno + 1 for f in functions if f.end_lineno - f.lineno + 1 > MAX_STAGE_LINES}
    assert not long, f"stages over {MAX_STAGE_LINES} lines in {rel}: {long}"
    bare = [f.name for f in functions if f.end_lineno - f.lineno + 1 > 5 and ast.get_docstring(f) is None]
    assert not bare, f"functions without a docstring in {rel}: {bare}"


@pytest.mark.parametrize(("rel", "name"), [("kineto/build.py", "build_trace"),
                                           ("driver/build.py", "build_driver_trace")])
def test_the_builders_are_short_drivers(rel, name):
    assert _functions(rel)[name] <= MAX_DRIVER_LINES


def test_the_public_build_names_stay():
    """New format loaders call ``build_trace``; the driver builder and others nest with
    ``nest_host_events`` / ``nest_by_time`` from ``kineto.build``."""
    import inspect

    from tracetui.kineto import build

    assert list(inspect.signature(build.build_trace).parameters) == [
        "path", "dec", "progress", "extra_warnings", "bytes_lost", "plain_categories"]
    assert list(inspect.signature(build.nest_host_events).parameters) == [
        "host", "lane_of", "ts", "dur", "kind", "n", "parent", "nopy_parent", "depth"]
    assert list(inspect.signature(build.nest_by_time).parameters) == [
        "host_sorted", "lane_of", "ts", "end", "kind", "n", "parent", "nopy_parent", "depth"]
