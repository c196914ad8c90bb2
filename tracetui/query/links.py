"""How each ET -> Kineto link was found, read from the link itself (``link/et_kineto.py``).

The one place the ``links`` table learns a link's method: a link that carries a method per
ET node (``ETLink.methods``: a name per node, "" for none) is read as it is; otherwise
every exact link has the link's method (``stats.method``, "rf_id") and every heuristic one
(name-and-order alignment) is "order".
"""

from __future__ import annotations

from typing import Any

import numpy as np


def et_link_methods(link: Any, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(method name, heuristic flag) of the links of ET node positions ``pos``."""
    pos = np.asarray(pos, dtype=np.int64)
    heur = np.asarray(link.heuristic, dtype=bool)[pos]
    per_node = getattr(link, "methods", None)
    if per_node is not None:
        return np.asarray(per_node, dtype=object)[pos], heur
    exact = str(link.stats.method)
    return np.where(heur, "order", exact).astype(object), heur
