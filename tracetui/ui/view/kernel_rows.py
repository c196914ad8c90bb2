"""Kernel launch facts for the detail pane, stated so that they do not mislead.

* ``grid``: CUDA and most HIP launches give it in blocks; ``hipExtModuleLaunchKernel`` (and
  the older ``hipHccModuleLaunchKernel``) take the *global work size*, so Kineto's ``grid``
  for their kernels counts work-items.  For those the pane says so and shows the blocks:
  ``ceil(grid / block)`` per dimension (HIP allows a last, partial block: MIOpen's
  ``transpose_*`` kernels in ``mi300_resnet_train_checkpointing`` have grid x = 784 with
  block x = 256, i.e. 4 blocks).
* ``blocks per SM`` / ``warps per SM`` share one number format (:func:`format_number`).
* ``est. achieved occupancy %`` is Kineto's estimate (from the launch configuration, not a
  measurement): the value says so (in the value, so the key column stays as narrow as before).
* ``External id``: in older traces a runtime call's and its kernel's ``External id`` equal
  their own correlation (:func:`is_correlation_ext`), which is not the launching op's id.
"""

from __future__ import annotations

from typing import Any

from ...analysis.occupancy import Occupancy
from ...kineto import schema

#: Launch calls whose ``grid`` argument is the global work size (work-items).
WORK_ITEM_LAUNCHES = frozenset({"hipExtModuleLaunchKernel", "hipHccModuleLaunchKernel"})


def format_number(v: Any) -> str | None:
    """A count as given, with thousands separators: ``1,106.2125``, ``0.05``, ``4``."""
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    return format(v, ",")


def xyz(v: Any) -> str | None:
    """``[40, 2, 1]`` -> ``40 × 2 × 1``."""
    if isinstance(v, list) and v:
        return " × ".join(str(x) for x in v)
    return None if v is None else str(v)


def blocks_of(grid: Any, block: Any) -> list[int] | None:
    """Blocks per dimension of a work-item grid: ``ceil(grid / block)``; None when either is
    not a list of positive ints of the same length."""
    if not (isinstance(grid, list) and isinstance(block, list) and grid and len(grid) == len(block)):
        return None
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in grid + block) or min(block) <= 0:
        return None
    return [-(-g // b) for g, b in zip(grid, block)]


def grid_facts(args: dict[str, Any], launch_name: str | None) -> tuple[list[str], list[tuple[str, Any]]]:
    """(short facts for the summary line, (label, value) rows) for a kernel's grid and block."""
    grid, block = args.get(schema.GRID), args.get(schema.BLOCK)
    facts: list[str] = []
    rows: list[tuple[str, Any]] = []
    if launch_name in WORK_ITEM_LAUNCHES and grid is not None:
        blocks = blocks_of(grid, block)
        if blocks is not None:
            facts.append(f"blocks {xyz(blocks)}")
        facts.append(f"work-items {xyz(grid)}")
        rows.append(("Grid (work-items)", f"{xyz(grid)}  ({launch_name} gives the grid in work-items, not blocks)"))
        if blocks is not None:
            partial = any(g % b for g, b in zip(grid, block))
            rows.append(("Blocks", f"{xyz(blocks)}  (work-items ÷ block{', rounded up' if partial else ''})"))
    elif grid is not None:
        facts.append(f"grid {xyz(grid)}")
        rows.append(("Grid", xyz(grid)))
    if block is not None:
        facts.append(f"block {xyz(block)}")
        rows.append(("Block", xyz(block)))
    return facts, rows


def occupancy_rows(args: dict[str, Any], theoretical: Occupancy | None = None) -> list[tuple[str, Any]]:
    """Blocks/SM, Warps/SM (same format), the occupancy marked as Kineto's estimate and,
    beside it, the theoretical occupancy of the launch configuration with its limiting
    factor (analysis/occupancy.py), or why it cannot be computed."""
    occ = args.get(schema.EST_OCCUPANCY)
    rows = [("Blocks/SM", format_number(args.get(schema.BLOCKS_PER_SM))),
            ("Warps/SM", format_number(args.get(schema.WARPS_PER_SM))),
            ("Occupancy", f"{format_number(occ)} % (Kineto's estimate)" if occ is not None else None)]
    if theoretical is not None and theoretical.computable:
        rows.append(("Theoretical occ.", f"{theoretical.pct:.4g} % ({theoretical.active_blocks} "
                                         f"block{'' if theoretical.active_blocks == 1 else 's'}, "
                                         f"{theoretical.active_warps}/{theoretical.max_warps} warps per SM; "
                                         f"limited by {theoretical.limiter})"))
    elif theoretical is not None and (args.get(schema.BLOCK) is not None or occ is not None):
        rows.append(("Theoretical occ.", f"not computable: {theoretical.reason}"))
    return rows


def is_correlation_ext(kt: Any, ev: int) -> bool:
    """True when event ``ev``'s ``External id`` is its own correlation (older traces), not
    the id of the op that launched it: it equals the correlation and differs from the
    enclosing op's External id (or there is no enclosing op)."""
    ext = int(kt.external_id[ev])
    if ext < 0 or ext != int(kt.correlation[ev]):
        return False
    op = int(kt.cpu_op_of[ev])
    return op < 0 or op == ev or int(kt.external_id[op]) != ext
