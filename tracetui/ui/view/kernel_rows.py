"""Kernel launch facts for the detail pane, stated so that they do not mislead.

* ``grid``: what it counts (blocks, or work-items for ``hipExtModuleLaunchKernel``) and the
  blocks computed from a work-item grid are :mod:`tracetui.kineto.launch_facts`'s; the pane
  says which and shows both.
* ``blocks per SM`` / ``warps per SM`` share one number format (:func:`tracetui.units.as_given`).
* ``est. achieved occupancy %`` is Kineto's estimate (from the launch configuration, not a
  measurement): the value says so (in the value, so the key column stays as narrow as before).
* ``External id``: in older traces it equals the correlation
  (:func:`tracetui.kineto.launch_facts.external_id_is_correlation`); the pane says so.
"""

from __future__ import annotations

from typing import Any

from ... import units
from ...analysis.occupancy import Occupancy
from ...kineto import schema
from ...kineto.launch_facts import launch_config
from ...units import PCT, as_given


def xyz(v: Any) -> str | None:
    """``[40, 2, 1]`` -> ``40 × 2 × 1``."""
    if isinstance(v, list) and v:
        return " × ".join(str(x) for x in v)
    return None if v is None else str(v)


def grid_facts(args: dict[str, Any], launch_name: str | None) -> tuple[list[str], list[tuple[str, Any]]]:
    """(short facts for the summary line, (label, value) rows) for a kernel's grid and block
    (what the grid counts: :func:`tracetui.kineto.launch_facts.launch_config`)."""
    cfg = launch_config(args, launch_name)
    grid, block = cfg.grid, cfg.block
    facts: list[str] = []
    rows: list[tuple[str, Any]] = []
    if cfg.counts_work_items and grid is not None:
        blocks = cfg.blocks
        if blocks is not None:
            facts.append(f"blocks {xyz(blocks)}")
        facts.append(f"work-items {xyz(grid)}")
        rows.append(("Grid (work-items)", f"{xyz(grid)}  ({launch_name} gives the grid in work-items, not blocks)"))
        if blocks is not None:
            rows.append(("Blocks", f"{xyz(blocks)}  (work-items ÷ block{', rounded up' if cfg.partial else ''})"))
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
    rows = [("Blocks/SM", as_given(args.get(schema.BLOCKS_PER_SM))),
            ("Warps/SM", as_given(args.get(schema.WARPS_PER_SM))),
            ("Occupancy", f"{as_given(occ)} {PCT} (Kineto's estimate)" if occ is not None else None)]
    if theoretical is not None and theoretical.computable:
        rows.append(("Theoretical occ.", f"{theoretical.pct:.4g} {units.PCT} ({theoretical.active_blocks} "
                                         f"block{'' if theoretical.active_blocks == 1 else 's'}, "
                                         f"{theoretical.active_warps}/{theoretical.max_warps} warps per SM; "
                                         f"limited by {theoretical.limiter})"))
    elif theoretical is not None and (args.get(schema.BLOCK) is not None or occ is not None):
        rows.append(("Theoretical occ.", f"not computable: {theoretical.reason}"))
    return rows
