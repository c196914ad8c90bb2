"""How each ET -> Kineto link was found, read from the link itself (``link/et_kineto.py``).

The one place the ``links`` table learns a link's method: ``ETLink.found_by`` (a code per
ET node, named by ``ETLink.found_by_name``: ``rf_id``, ``sequence number``, ``order``) and
``ETLink.heuristic`` (every link not found by rf_id).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..link.et_evidence import FOUND_BY_NAMES


def et_link_methods(link: Any, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(method name, heuristic flag) of the links of ET node positions ``pos``."""
    pos = np.asarray(pos, dtype=np.int64)
    names = np.asarray(FOUND_BY_NAMES, dtype=object)
    return names[np.asarray(link.found_by)[pos]], np.asarray(link.heuristic, dtype=bool)[pos]
