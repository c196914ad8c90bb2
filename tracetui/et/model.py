"""Per-node objects of an Execution Trace, built on demand: ETNode, ETArg, ETTensor.

An ET records each op's arguments as three (from schema 1.1.1: four) parallel lists: values,
shapes, types (and strides).  A tensor value is ``[tensor_id, storage_id, offset, numel,
itemsize, device]`` with a type such as ``Tensor(float)``; lists nest as ``GenericList[...]``
or ``Tuple[...]`` with the element types between the brackets; None is the string ``"<None>"``.
Shapes and strides mirror the nesting of the values but may be missing or shorter: every
accessor here tolerates that (the missing part is None).  Sizes are in elements (shape, numel,
offset, stride) or bytes (itemsize, nbytes).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

__all__ = ["ETArg", "ETNode", "ETTensor", "build_args", "split_type"]

NONE_VALUE = "<None>"


@dataclass(frozen=True, slots=True)
class ETTensor:
    """One tensor argument.

    ``tensor_id`` is reused when the allocator reuses the memory; ``storage_id`` identifies
    the underlying storage (views share it).  ``offset`` and ``numel`` are in elements,
    ``itemsize`` in bytes; ``dtype`` comes from the type string (``"float"``,
    ``"c10::BFloat16"``; ``""`` when the type names none).
    """

    tensor_id: int
    storage_id: int
    offset: int
    numel: int
    itemsize: int
    device: str
    shape: tuple[int, ...] | None
    stride: tuple[int, ...] | None
    dtype: str

    @property
    def nbytes(self) -> int:
        """Bytes the tensor's elements occupy (numel * itemsize)."""
        return self.numel * self.itemsize


@dataclass(slots=True)
class ETArg:
    """One input or output of an op.

    ``type``: the ET type string (``"Tensor(float)"``, ``"GenericList[Tensor(float),Int]"``,
    ``"Int"``, ``"None"`` ...).  ``value``: an :class:`ETTensor` for a tensor, a list of ETArg
    for a GenericList/Tuple (nested as in the file), None for ``"<None>"``, otherwise the
    scalar as recorded (int, float, bool, str).  ``shape``/``stride``: as recorded for this
    argument with lists turned into tuples (nested for lists of tensors); None when missing.
    """

    type: str
    value: Any
    shape: Any = None
    stride: Any = None


@dataclass(slots=True)
class ETNode:
    """Everything the ET records about one node, decoded on demand by ``ETTrace.node``.

    ``parent_id`` is the parent's node id as written in the file (``ctrl_deps`` in the nested
    layout, ``parent`` in the flat one; the process root names itself); ``ctrl_deps`` repeats
    it under the nested layout's name.  ``tid`` is the small RecordFunction thread number,
    not an OS thread id.  ``attrs`` holds every attribute by name (for the flat layout: the
    fields that the nested layout keeps in attrs).
    """

    pos: int
    id: int
    name: str
    rf_id: int
    parent_id: int
    ctrl_deps: int
    op_schema: str
    tid: int
    fw_tid: int
    seq_id: int
    fw_parent: int
    scope: int
    attrs: dict[str, Any] = field(default_factory=dict)
    inputs: list[ETArg] = field(default_factory=list)
    outputs: list[ETArg] = field(default_factory=list)


@lru_cache(maxsize=4096)
def split_type(type_str: str) -> tuple[str, str, tuple[str, ...]]:
    """Split an ET type string into (base, parenthesised part, bracketed element types).

    ``"Tensor(c10::BFloat16)"`` -> ``("Tensor", "c10::BFloat16", ())``;
    ``"GenericList[Tensor(float),Int]"`` -> ``("GenericList", "", ("Tensor(float)", "Int"))``.
    """
    base_end = len(type_str)
    for i, c in enumerate(type_str):
        if c in "([":
            base_end = i
            break
    base = type_str[:base_end]
    rest = type_str[base_end:]
    if rest.startswith("("):
        close = rest.rfind(")")
        return base, rest[1 : close if close > 0 else len(rest)], ()
    if not rest.startswith("["):
        return base, "", ()
    inner = rest[1 : rest.rfind("]")] if rest.rfind("]") > 0 else rest[1:]
    parts: list[str] = []
    depth = 0
    start = 0
    for i, c in enumerate(inner):
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(inner[start:i].strip())
            start = i + 1
    if inner.strip():
        parts.append(inner[start:].strip())
    return base, "", tuple(parts)


def _tupled(x: Any) -> Any:
    """Recorded shape/stride with lists turned into (nested) tuples."""
    if isinstance(x, list):
        return tuple(_tupled(v) for v in x)
    return x


def _int_tuple(x: Any) -> tuple[int, ...] | None:
    if isinstance(x, list) and all(type(v) is int for v in x):
        return tuple(x)
    return None


def _tensor(value: Any, dtype: str, shape: Any, stride: Any) -> ETTensor | None:
    if not isinstance(value, list) or len(value) < 5:
        return None
    head = value[:5]
    if not all(type(v) is int for v in head):
        return None
    device = value[5] if len(value) > 5 else ""
    return ETTensor(
        tensor_id=head[0],
        storage_id=head[1],
        offset=head[2],
        numel=head[3],
        itemsize=head[4],
        device=device if isinstance(device, str) else str(device),
        shape=_int_tuple(shape),
        stride=_int_tuple(stride),
        dtype=dtype,
    )


def _at(seq: Any, i: int) -> Any:
    if isinstance(seq, list) and i < len(seq):
        return seq[i]
    return None


def make_arg(type_str: str, value: Any, shape: Any, stride: Any) -> ETArg:
    """Decode one recorded argument (see :class:`ETArg`)."""
    if not isinstance(type_str, str):
        type_str = str(type_str)
    arg = ETArg(type_str, value, _tupled(shape), _tupled(stride))
    if value == NONE_VALUE:
        arg.value = None
        return arg
    base, inside, elem_types = split_type(type_str)
    if base == "Tensor":
        tensor = _tensor(value, inside, shape, stride)
        if tensor is not None:
            arg.value = tensor
        return arg
    if isinstance(value, list) and "[" in type_str:
        items = []
        for j, v in enumerate(value):
            if j < len(elem_types):
                t = elem_types[j]
            else:
                t = elem_types[0] if len(elem_types) == 1 else ""
            items.append(make_arg(t, v, _at(shape, j), _at(stride, j)))
        arg.value = items
    return arg


def build_args(values: Any, shapes: Any, types: Any, strides: Any) -> list[ETArg]:
    """ETArg list from the parallel recorded lists; shorter/missing lists give None parts."""
    if not isinstance(values, list):
        return []
    return [
        make_arg(_at(types, i) or "", v, _at(shapes, i), _at(strides, i))
        for i, v in enumerate(values)
    ]
