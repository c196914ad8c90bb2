"""Facts about a GPU event's launch that the raw args state misleadingly, stated once for the
detail pane, :func:`tracetui.api.kernel_metadata_scrape` and every export.

* **Grid unit.**  CUDA and most HIP launches give ``grid`` in blocks; ``hipExtModuleLaunchKernel``
  (and the older ``hipHccModuleLaunchKernel``) take the *global work size*, so Kineto's ``grid``
  for their kernels counts work-items (:data:`WORK_ITEM_LAUNCHES`).  Their blocks are
  ``ceil(grid / block)`` per dimension (:func:`blocks_of`; HIP allows a last, partial block:
  MIOpen's ``transpose_*`` kernels in ``mi300_resnet_train_checkpointing`` have grid x = 784
  with block x = 256, i.e. 4 blocks).
* **External id.**  In older traces a runtime call's and its kernel's ``External id`` equal
  their own correlation (:func:`external_id_is_correlation`), which is not the launching
  op's id (``v100_old_flow_format_cudagraph``, ``old_categories_inference``).

Nothing here changes what the trace says: :class:`LaunchConfig` keeps the grid as written
beside its unit and the blocks computed from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from . import schema

#: Launch calls whose ``grid`` argument is the global work size (work-items), not blocks.
WORK_ITEM_LAUNCHES = frozenset({"hipExtModuleLaunchKernel", "hipHccModuleLaunchKernel"})
BLOCKS = "blocks"
WORK_ITEMS = "work-items"


def grid_unit(launch_name: str | None) -> str:
    """What a kernel's ``grid`` counts, from the name of the call that launched it:
    :data:`WORK_ITEMS` for :data:`WORK_ITEM_LAUNCHES`, else :data:`BLOCKS`."""
    return WORK_ITEMS if launch_name in WORK_ITEM_LAUNCHES else BLOCKS


def blocks_of(grid: Any, block: Any) -> list[int] | None:
    """Blocks per dimension of a work-item grid: ``ceil(grid / block)``; None when either is
    not a list of positive ints of the same length."""
    if not (isinstance(grid, list) and isinstance(block, list) and grid and len(grid) == len(block)):
        return None
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in grid + block) or min(block) <= 0:
        return None
    return [-(-g // b) for g, b in zip(grid, block)]


@dataclass(frozen=True)
class LaunchConfig:
    """A kernel's launch configuration as the trace wrote it, and what its grid counts.

    ``grid``/``block`` are the args as written (None when absent); ``grid_unit`` is
    :data:`BLOCKS` or :data:`WORK_ITEMS`; ``blocks`` the blocks per dimension (the grid itself
    when it counts blocks, ``ceil(grid / block)`` when it counts work-items; None when that
    cannot be computed); ``partial`` whether a work-item grid leaves a last, partial block.
    """

    grid: Any
    block: Any
    grid_unit: str
    blocks: list[int] | None
    partial: bool
    launch_name: str | None

    @property
    def counts_work_items(self) -> bool:
        return self.grid_unit == WORK_ITEMS


def launch_config(args: dict[str, Any], launch_name: str | None) -> LaunchConfig:
    """The :class:`LaunchConfig` of a kernel from its ``args`` and its launch call's name."""
    grid, block = args.get(schema.GRID), args.get(schema.BLOCK)
    unit = grid_unit(launch_name)
    if unit == WORK_ITEMS:
        blocks = blocks_of(grid, block)
        partial = blocks is not None and any(g % b for g, b in zip(grid, block))
    else:
        blocks = list(grid) if isinstance(grid, list) else None
        partial = False
    return LaunchConfig(grid, block, unit, blocks, partial, launch_name)


def kernel_launch_config(kt: Any, ev: int) -> LaunchConfig:
    """:func:`launch_config` of event ``ev`` of a Kineto trace (its args, its launch call)."""
    launch = int(kt.launch_of[ev])
    return launch_config(kt.args(ev), kt.name(launch) if launch >= 0 else None)


def external_id_is_correlation(kt: Any, ev: int) -> bool:
    """True when event ``ev``'s ``External id`` is its own correlation (older traces), not
    the id of the op that launched it: it equals the correlation and differs from the
    enclosing op's External id (or there is no enclosing op)."""
    ext = int(kt.external_id[ev])
    if ext < 0 or ext != int(kt.correlation[ev]):
        return False
    op = int(kt.cpu_op_of[ev])
    return op < 0 or op == ev or int(kt.external_id[op]) != ext


def external_ids_are_correlations(kt: Any, events: np.ndarray) -> np.ndarray:
    """:func:`external_id_is_correlation` of each of ``events`` (vectorised)."""
    ev = np.asarray(events, dtype=np.int64)
    ext = kt.external_id[ev]
    op = kt.cpu_op_of[ev].astype(np.int64)
    own = (ext >= 0) & (ext == kt.correlation[ev])
    op_ext = np.where(op >= 0, kt.external_id[np.maximum(op, 0)], -1)
    return own & ((op < 0) | (op == ev) | (op_ext != ext))


def blocks_texts(grid_texts: list[str | None], block_texts: list[str | None],
                 launch_names: list[str | None]) -> tuple[list[str | None], list[str | None]]:
    """(grid unit, blocks as ``x,y,z`` text) per row of a table whose grid and block are
    ``x,y,z`` texts (:func:`~tracetui.analysis.frames.gpu_events_frame`): the grid itself
    where it counts blocks, ``ceil(grid / block)`` where it counts work-items (None when a
    text is not a list of positive ints); both None for a row without a grid."""
    grid_units: list[str | None] = []
    blocks: list[str | None] = []
    for g, b, name in zip(grid_texts, block_texts, launch_names):
        if g is None:
            grid_units.append(None)
            blocks.append(None)
            continue
        unit = grid_unit(name)
        grid_units.append(unit)
        if unit == BLOCKS:
            blocks.append(g)
            continue
        got = blocks_of(_ints(g), _ints(b))
        blocks.append(",".join(map(str, got)) if got is not None else None)
    return grid_units, blocks


def _ints(text: str | None) -> list[int] | None:
    try:
        return [int(x) for x in text.split(",")] if text else None
    except ValueError:
        return None
