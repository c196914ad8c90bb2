"""A restricted reader of CUDA memory snapshots (``torch.cuda.memory._dump_snapshot``), for tests.

A snapshot is a pickle of plain data (dicts, lists, tuples, strings, numbers, booleans, None;
``../shared/FORMATS.md``, "CUDA memory snapshots").  ``pickle.load`` would run whatever a file
asks for, so tests never call it: :func:`load_plain` walks the opcodes (``pickletools.genops``
parses them, nothing is executed) and builds only plain values.  Every opcode that names a
global, calls or builds an object (``GLOBAL``, ``STACK_GLOBAL``, ``REDUCE``, ``BUILD``, ``INST``,
``OBJ``, ``NEWOBJ``, ``EXT*``, persistent ids, out-of-band buffers) is refused with
``ValueError``.  Independent of tracetui (issue 39 adds tracetui's own snapshot reader; tests
compare it to this one).
"""

from __future__ import annotations

import pickletools
from pathlib import Path

_MARK = object()

#: opcodes that push a value given as their argument
_VALUE = {"BININT", "BININT1", "BININT2", "LONG1", "LONG4", "INT", "LONG", "BINFLOAT", "FLOAT",
          "SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE",
          "SHORT_BINBYTES", "BINBYTES", "BINBYTES8"}
_CONST = {"NONE": None, "NEWTRUE": True, "NEWFALSE": False}
_TUPLE_N = {"TUPLE1": 1, "TUPLE2": 2, "TUPLE3": 3}


def _pop_mark(stack: list) -> list:
    """The items above the topmost mark (the mark removed)."""
    for k in range(len(stack) - 1, -1, -1):
        if stack[k] is _MARK:
            items = stack[k + 1:]
            del stack[k:]
            return items
    raise ValueError("no MARK on the stack")


def load_plain(data: bytes):
    """The plain value a pickle holds; ``ValueError`` for any opcode that is not plain data."""
    stack: list = []
    memo: dict[int, object] = {}
    for op, arg, pos in pickletools.genops(data):
        name = op.name
        if name in ("PROTO", "FRAME"):
            continue
        if name == "STOP":
            if len(stack) != 1:
                raise ValueError(f"STOP at byte {pos} with {len(stack)} values on the stack")
            return stack[0]
        if name in _VALUE:
            stack.append(arg)
        elif name in _CONST:
            stack.append(_CONST[name])
        elif name == "MARK":
            stack.append(_MARK)
        elif name == "EMPTY_DICT":
            stack.append({})
        elif name == "EMPTY_LIST":
            stack.append([])
        elif name == "EMPTY_TUPLE":
            stack.append(())
        elif name == "EMPTY_SET":
            stack.append(set())
        elif name == "TUPLE":
            stack.append(tuple(_pop_mark(stack)))
        elif name in _TUPLE_N:
            n = _TUPLE_N[name]
            items = tuple(stack[-n:])
            del stack[-n:]
            stack.append(items)
        elif name == "LIST":
            stack.append(_pop_mark(stack))
        elif name == "DICT":
            items = _pop_mark(stack)
            stack.append(dict(zip(items[::2], items[1::2])))
        elif name == "FROZENSET":
            stack.append(frozenset(_pop_mark(stack)))
        elif name == "APPEND":
            value = stack.pop()
            stack[-1].append(value)
        elif name == "APPENDS":
            items = _pop_mark(stack)
            stack[-1].extend(items)
        elif name == "SETITEM":
            value = stack.pop()
            key = stack.pop()
            stack[-1][key] = value
        elif name == "SETITEMS":
            items = _pop_mark(stack)
            stack[-1].update(zip(items[::2], items[1::2]))
        elif name == "ADDITEMS":
            items = _pop_mark(stack)
            stack[-1].update(items)
        elif name == "MEMOIZE":
            memo[len(memo)] = stack[-1]
        elif name in ("PUT", "BINPUT", "LONG_BINPUT"):
            memo[int(arg)] = stack[-1]
        elif name in ("GET", "BINGET", "LONG_BINGET"):
            stack.append(memo[int(arg)])
        elif name == "POP":
            stack.pop()
        elif name == "POP_MARK":
            _pop_mark(stack)
        elif name == "DUP":
            stack.append(stack[-1])
        else:  # GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ(_EX), EXT1/2/4, (BIN)PERSID, buffers ...
            raise ValueError(f"opcode {name} at byte {pos}: not plain data, refused")
    raise ValueError("no STOP opcode: the pickle is cut short")


def read_snapshot(path: str | Path) -> dict:
    snap = load_plain(Path(path).read_bytes())
    if not isinstance(snap, dict) or "segments" not in snap:
        raise ValueError(f"{path}: not a CUDA memory snapshot (no 'segments')")
    return snap
