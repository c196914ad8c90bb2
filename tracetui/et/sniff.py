"""Is this file a PyTorch Execution Trace?  Recognition reads only the head
(:mod:`tracetui.io.jsonkind`)."""

from __future__ import annotations

from ..io.formats import Head, Recognition
from ..io.jsonkind import head_kind, json_kind

#: the format's name (``tracetui.formats``), also the kind of its cache entries
FORMAT_NAME = "et"


def recognise(head: Head) -> Recognition:
    """YES when the first keys say ET (``nodes`` + ``schema``); MAYBE when a head that does
    not decode shows ``nodes`` first, or only an ET's header keys (a file cut in its header)."""
    if head_kind(head.text) == "et":
        return Recognition.YES
    return Recognition.MAYBE if json_kind(head) == "et" else Recognition.NO
