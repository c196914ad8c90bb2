"""JAX/XLA profiles: the XSpace protobuf ``jax.profiler.trace`` and the TensorBoard profile
plugin write (``plugins/profile/<run>/<host>.xplane.pb``), read into the Kineto model
(docs/formats.md, "JAX/XLA XPlane").

``load_xplane`` loads when first asked for, so the content test every start of ``tracetui`` runs
(``sniff``, the standard library only) costs nothing more."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_names

if TYPE_CHECKING:
    from .loader import load_xplane

__all__ = ["load_xplane"]

__getattr__ = lazy_names(__name__, {"load_xplane": ".loader"})
