"""Names a package offers but imports only when first asked for (a module ``__getattr__``).

Importing the package then costs nothing until one of the names is used: the browser's first
frame imports ``tracetui.driver``, ``tracetui.et`` and ``tracetui.job`` for their light parts
(the content tests, the model the cache reads) without their readers or the job machinery,
and ``tracetui.ui.app`` without the browser's screens (``tests/core/test_startup_imports.py``,
``tests/ui/test_ui_first_minutes.py``).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any


def lazy_names(module: str, homes: dict[str, str], anchor: str | None = None) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``module``: ``name`` comes from module ``homes[name]`` (relative to
    ``anchor`` when it starts with a dot; default: ``module``, a package), imported the first
    time it is asked for and then kept in ``module``'s namespace."""

    def __getattr__(name: str) -> Any:  # noqa: N807 -- a module's __getattr__
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home, anchor or module), name)
        setattr(sys.modules[module], name, value)
        return value

    return __getattr__
