"""Links between an Execution Trace (ET) and its Kineto partner."""

from .et_evidence import FOUND_BY_NAMES, FOUND_ORDER, FOUND_RF_ID, FOUND_SEQUENCE
from .et_kineto import ETLink, LinkStats, link_et_kineto

__all__ = ["ETLink", "FOUND_BY_NAMES", "FOUND_ORDER", "FOUND_RF_ID", "FOUND_SEQUENCE", "LinkStats",
           "link_et_kineto"]
