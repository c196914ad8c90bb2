"""Is this file a Chrome trace JSON that is not a PyTorch profiler trace?  Light: msgspec only.

The test, from the head only (:class:`~tracetui.io.formats.Head`), says YES only when sure:

* the document is a Chrome trace (an object with ``traceEvents`` that is no Execution
  Trace, or a bare array of events: :func:`tracetui.io.jsonkind.head_kind`);
* no top-level key only the PyTorch profiler writes (``schemaVersion``, ``deviceProperties``,
  ``distributedInfo``, ``baseTimeNanoseconds``, ``traceName`` ...: :data:`~.schema.PYTORCH_KEYS`)
  is in the head;
* the head shows at least one event (a ``"ph"`` key), and no event category the PyTorch
  profiler writes (``cpu_op``, ``kernel``, ``cuda_runtime``, ``python_function``,
  ``user_annotation``, ``ac2g`` ...: :data:`~.schema.PYTORCH_CATEGORIES`).

Anything else is NO, and the Kineto format (after this one in the list) reads it as before.
Every shared PyTorch trace carries ``schemaVersion`` or ``distributedInfo`` before its events
(``tests/core/test_chrome_generic.py`` checks each stays a PyTorch trace).
"""

from __future__ import annotations

from ..io.formats import Head, Recognition
from ..io.jsonkind import head_kind
from .schema import CAT_VALUE, PH_KEY, PYTORCH_CATEGORIES, PYTORCH_KEYS

#: the format's name (``tracetui.formats``); a trace read from such a file says so
FORMAT_NAME = "chrome"


def recognise(head: Head) -> Recognition:
    """YES for a Chrome trace JSON that shows no sign of the PyTorch profiler (module doc)."""
    text = head.text
    if head_kind(text) != "kineto":
        return Recognition.NO
    if any(k in text for k in PYTORCH_KEYS):
        return Recognition.NO
    if PH_KEY.search(text) is None:
        return Recognition.NO
    for m in CAT_VALUE.finditer(text):
        cats = m.group(1).decode("utf-8", "replace").split(",")
        if any(c in PYTORCH_CATEGORIES for c in cats):
            return Recognition.NO
    return Recognition.YES
