"""Links between an Execution Trace (ET) and its Kineto partner."""

from .et_kineto import ETLink, LinkStats, link_et_kineto

__all__ = ["ETLink", "LinkStats", "link_et_kineto"]
