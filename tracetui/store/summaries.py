"""Stored summaries: ``tracetui summary`` on an unchanged trace answers from the cache.

The summary of a 2.16M-event trace takes ~3.5 s to compute even when the trace itself
comes from the cache in 0.1 s (GPU event frame with args, launch and gap analysis, plus
importing pandas).  Its result is a small JSON object, so it is stored next to the trace
entry (``summary-<hash>.json`` in :func:`tracetui.store.traces.cache_dir`) and served as is when
everything it was computed from still matches:

* the input paths as given (messages may quote them) and the identity of every input file
  (absolute path, size, ``mtime_ns``, hash of the first and last 64 KiB:
  :func:`tracetui.store.traces.file_identity`), in the order given;
* the kernel category rules in force (the ``--rules`` file or the user's rules file, by
  path and content; the built-in rules through the source fingerprint);
* ``top``;
* the tracetui version and a fingerprint of the loader's and the analysis' source files.

The documents of ``tracetui diff`` are stored the same way, under :func:`diff_key` (both
sides' inputs, the rules, and the diff's options), and the part of a rank's summary a job
reads under :func:`rank_summary_key`.

Anything else -- missing, stale, unreadable, corrupt -- means computing the summary again
and rewriting the entry atomically.  Failing to write only means no stored summary.
Pruned together with the trace entries (:func:`tracetui.store.traces.prune_if_due`).
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path
from typing import Any

import orjson

from .. import __version__
from ..analysis.categories import user_rules_location
from ..errors import TraceError
from ..io import jsonout
from ..io.files import write_atomically
from .traces import cache_dir, code_fingerprint, file_identity

log = logging.getLogger(__name__)

#: bump when the stored layout changes (2: the ``memory`` key)
SUMMARY_FORMAT = 2


def summary_key(paths: list[str], rules: str | None, top: int) -> dict[str, Any] | None:
    """Everything a stored summary must match; None when an input cannot be read (no caching)."""
    try:
        inputs = [file_identity(p) for p in paths]
        rules_path = Path(rules) if rules is not None else user_rules_location()
        rules_id = None
        if rules_path is not None:
            data = rules_path.read_bytes()
            rules_id = {"path": os.path.abspath(rules_path), "hash": hashlib.blake2b(data, digest_size=16).hexdigest()}
    except (OSError, TraceError):  # unreadable, or not a regular file: the loader says what is wrong
        return None
    return {"format": SUMMARY_FORMAT, "given": list(paths), "inputs": inputs, "rules": rules_id, "top": top,
            "version": __version__, "code": code_fingerprint()}


def rank_summary_key(paths: list[str], rules: str | None) -> dict[str, Any] | None:
    """Everything a stored rank summary (a job's keys of a rank's summary:
    :func:`tracetui.analysis.summary.rank_summary`) must match; None when an input cannot be read."""
    key = summary_key(paths, rules, 0)
    if key is not None:
        key.update(kind="rank")
    return key


def diff_key(paths_a: list[str], paths_b: list[str], rules: str | None, options: dict[str, Any]
             ) -> dict[str, Any] | None:
    """Everything a stored ``tracetui diff`` document must match (``options``: steps, top ...);
    None when an input cannot be read."""
    key = summary_key(list(paths_a) + list(paths_b), rules, 0)
    if key is None:
        return None
    key.update(kind="diff", sides=[len(paths_a), len(paths_b)], options=options)
    return key


def summary_path(key: dict[str, Any], folder: Path | None = None) -> Path:
    digest = hashlib.blake2b(orjson.dumps(key, option=orjson.OPT_SORT_KEYS), digest_size=16).hexdigest()
    return (folder or cache_dir()) / f"summary-{digest}.json"


def read_summary(key: dict[str, Any]) -> dict[str, Any] | None:
    """The stored summary for ``key``, or None (never raises)."""
    target = summary_path(key)
    try:
        entry = jsonout.loads(target.read_bytes())
    except FileNotFoundError:
        return None
    except Exception as exc:  # unreadable or corrupt: compute again
        log.debug("tracetui cache: not using %s: %s", target, exc)
        return None
    if not isinstance(entry, dict) or entry.get("key") != key or not isinstance(entry.get("summary"), dict):
        return None
    try:
        os.utime(target)  # recency for pruning
    except OSError:
        pass
    return entry["summary"]


def write_summary(key: dict[str, Any], summary: dict[str, Any]) -> bool:
    """Store ``summary`` under ``key`` (temp file + rename); False (logged) when it cannot."""
    from .traces import prune_if_due

    try:
        folder = cache_dir()
        folder.mkdir(parents=True, exist_ok=True)
        target = summary_path(key, folder)
        write_atomically(target, [jsonout.dumps({"key": key, "summary": summary})], private=True)
        prune_if_due(target)
        return True
    except Exception as exc:
        log.debug("tracetui cache: cannot store the summary: %s", exc)
        return False
