"""The ET <-> Kineto link kept in the cache, so that reopening a pair does no linking.

One file per pair, ``link-<hash of both files' identities>.ttl`` in the cache folder, in
the format of every cache entry (:mod:`tracetui.io.colfile`, kind ``"link"``: a CRC-32
per section, read back into private memory): the link's three arrays (``et_to_kineto``,
``kineto_to_et``, ``found_by``), its statistics and its warnings.  It is used only when
its key still matches exactly: both files' identities (path, size, mtime, CRC-32 of every
byte), the tracetui version, the link format and the code fingerprint -- the caller
(:mod:`tracetui.store.traces`) builds it -- and when the arrays fit the two traces
(lengths, value ranges).  Anything else -- stale, unreadable -- means the link is computed
again and the file rewritten atomically; a damaged file (a checksum differs, it is cut
short) is removed and the link carries a warning saying so.  A folder that cannot be
written only means no cache (logged at debug level).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path

import numpy as np

from ..errors import LoadWarning
from ..io.colfile import CacheCorruptError, CacheFormatError, load_fields, save_fields
from ..link import ETLink, LinkStats, link_et_kineto
from ..link.et_evidence import FOUND_BY_NAMES

log = logging.getLogger(__name__)

#: bumped whenever what a link file holds changes
LINK_FORMAT = 2
SUFFIX = ".ttl"
KIND = "link"
_CLASSES: dict[str, type] = {c.__name__: c for c in (LinkStats, LoadWarning)}


def link_entry_path(folder: Path, key: dict[str, object]) -> Path:
    """The cache file of the pair named by ``key``: its two files' identities, the version,
    the link format and the code fingerprint all name the file, so two tracetui versions
    sharing a cache folder keep one file each instead of reading each other's as damaged."""
    ident = json.dumps(key, sort_keys=True, default=str)
    digest = hashlib.blake2b(ident.encode("utf-8", "surrogateescape"), digest_size=16).hexdigest()
    return folder / f"link-{digest}{SUFFIX}"


def linked_with_cache(et, kt, folder: Path, key: dict[str, object]) -> ETLink:
    """The link of ``et`` and ``kt``: from the cache entry when it matches ``key``, else
    computed by :func:`~tracetui.link.link_et_kineto` and stored."""
    key = dict(key, link_format=LINK_FORMAT)
    path = link_entry_path(folder, key)
    damaged: list[LoadWarning] = []
    got = read_link(path, key, et, kt, damaged)
    if got is not None:
        return got
    link = link_et_kineto(et, kt)
    write_link(path, key, link)
    link.warnings += damaged  # after the write: the new entry must not keep saying it
    return link


def read_link(path: Path, key: dict[str, object], et, kt, damaged: list[LoadWarning] | None = None) -> ETLink | None:
    """The stored link if ``path`` holds one for ``key`` that fits the traces, else None; a
    damaged file is removed and a warning appended to ``damaged``."""
    try:
        _, values = load_fields(path, {KIND: _CLASSES}, expect=key)
        e2k, k2e, found = values["et_to_kineto"], values["kineto_to_et"], values["found_by"]
        stats, warnings = values["stats"], values["warnings"]
        if not all(isinstance(a, np.ndarray) for a in (e2k, k2e, found)) or not isinstance(stats, LinkStats):
            raise CacheCorruptError("not a link")
        n_et, n_k = len(et.ids), kt.n_events
        if (e2k.shape != (n_et,) or found.shape != (n_et,) or k2e.shape != (n_k,)
                or (e2k.size and not (-1 <= e2k.min() and e2k.max() < n_k))
                or (k2e.size and not (-1 <= k2e.min() and k2e.max() < n_et))
                or (found.size and found.max() >= len(FOUND_BY_NAMES))):
            return None
        if not isinstance(warnings, list) or not all(isinstance(w, LoadWarning) for w in warnings):
            raise CacheCorruptError("warnings are not warnings")
        link = ETLink(e2k.astype(np.int32), k2e.astype(np.int32), found.astype(np.uint8), stats, warnings)
    except FileNotFoundError:
        return None
    except CacheCorruptError as exc:  # a checksum differs, cut short: damaged
        log.debug("tracetui cache: the link entry %s is damaged: %s", path, exc)
        try:
            os.unlink(path)
        except OSError:
            pass
        if damaged is not None:
            damaged.append(LoadWarning("cache", f"the cached ET <-> Kineto link was damaged ({exc}): it was removed "
                                                "and the traces linked again"))
        return None
    except Exception as exc:  # stale, unreadable: link again
        log.debug("tracetui cache: not using the link entry %s: %s", path, exc)
        return None
    try:
        os.utime(path)  # recency for pruning
    except OSError:
        pass
    return link


def write_link(path: Path, key: dict[str, object], link: ETLink) -> bool:
    """Store ``link`` at ``path`` (temp file + rename); False (logged) when it cannot."""
    fields = {"et_to_kineto": link.et_to_kineto, "kineto_to_et": link.kineto_to_et, "found_by": link.found_by,
              "stats": link.stats, "warnings": list(link.warnings)}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        save_fields(path, KIND, fields, classes=_CLASSES, extra=key)
        return True
    except (OSError, CacheFormatError) as exc:
        log.debug("tracetui cache: cannot write the link entry %s: %s", path, exc)
        return False
