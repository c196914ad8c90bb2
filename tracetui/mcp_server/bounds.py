"""How much one answer of ``tracetui mcp`` may hold, and how a document is cut to fit.

Every cap of the server is here, once.  A tool's answer is the JSON document of the command's
``--json`` (the same numbers, by construction); :func:`bound` cuts it to fit:

1. ``part`` (a dotted path: ``kernels``, ``memory.devices.0.owners_at_peak``) picks one piece
   of the document; ``offset`` pages the list that ``part`` names;
2. every list keeps at most ``rows`` items (:data:`LIST_ROWS` unless asked, at most
   :data:`MAX_ROWS`);
3. while the JSON text is longer than :data:`MAX_CHARS`, the list that takes the most
   characters keeps three quarters of its items; then strings longer than :data:`STRING_CHARS` are cut;
   an answer still too long lists the document's parts and their sizes instead.

Each cut is one entry of the answer's ``truncated`` list: what was cut (its path), how many
items were kept from which offset, of how many, and the call that asks for the next ones.
A query's rows are capped by the query itself (:data:`QUERY_ROWS`, ``more: true``); the same
character bound applies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import TraceError
from ..io import jsonout

#: characters of one answer at most (the compact JSON text an agent reads; about 5,000 tokens)
MAX_CHARS = 20_000
#: items kept of each list of a document unless the call asks for ``rows``
LIST_ROWS = 25
#: the most ``rows`` a call may ask for (the character bound still holds)
MAX_ROWS = 500
#: lines of a tree kept unless the call asks for ``rows``
TREE_LINES = 150
#: rows a query answers at most (more: ``more: true``; page with LIMIT/OFFSET)
QUERY_ROWS = 200
#: a string longer than this is cut when a document is still too long with every list cut
STRING_CHARS = 2_000
#: the key of the cut notes in an answer
NOTE = "truncated"


class BadRequest(TraceError):
    """A request the server cannot answer as asked (an unknown part, an offset without a
    list): one line for the agent."""

    def __init__(self, problem: str) -> None:
        super().__init__("request", problem)


@dataclass
class _Cut:
    start: int
    kept: int
    of: int


def text(value: Any) -> str:
    """The compact JSON text of ``value`` (what the agent reads; controls escaped)."""
    return jsonout.dumps(value).decode()


def rows_asked(rows: int | None, default: int = LIST_ROWS) -> int:
    """The items per list a call gets: ``rows`` when given (1 to :data:`MAX_ROWS`), else ``default``."""
    if rows is None:
        return default
    if not 1 <= rows <= MAX_ROWS:
        raise BadRequest(f"rows={rows}: give 1 to {MAX_ROWS} (items kept of each list)")
    return rows


def split_part(part: str) -> list[str]:
    return [p for p in part.split(".") if p != ""]


def pick(doc: Any, part: str) -> Any:
    """The piece of ``doc`` at the dotted path ``part``: dict keys (a key holding dots is
    matched whole) and list indices."""
    node, rest, done = doc, split_part(part), []
    while rest:
        if isinstance(node, dict):
            for k in range(len(rest), 0, -1):
                key = ".".join(rest[:k])
                if key in node:
                    node, rest, done = node[key], rest[k:], [*done, key]
                    break
            else:
                keys = ", ".join(list(map(str, node))[:40])
                raise BadRequest(f"part={part!r}: no {rest[0]!r} in {'.'.join(done) or 'the answer'} (keys: {keys})")
        elif isinstance(node, list):
            if not rest[0].isdigit() or int(rest[0]) >= len(node):
                raise BadRequest(f"part={part!r}: {'.'.join(done) or 'the answer'} is a list of {len(node)} items: "
                                 f"give an index from 0 to {len(node) - 1}")
            node, done = node[int(rest[0])], [*done, rest[0]]
            rest = rest[1:]
        else:
            raise BadRequest(f"part={part!r}: {'.'.join(done)} is a single value, it has no parts")
    return node


def bound(doc: Any, *, tool: str, part: str | None = None, offset: int = 0, rows: int | None = None,
          default_rows: int = LIST_ROWS) -> dict[str, Any]:
    """``doc`` (a command's JSON document) cut to fit one answer (see the module docstring).
    The answer is the document itself, or ``{"part": part, "value": piece}``; a ``truncated``
    list says what was cut and how to ask for the rest."""
    per_list = rows_asked(rows, default_rows)
    if offset < 0:
        raise BadRequest(f"offset={offset}: give 0 or more")
    base: list[str] = []
    if part:
        piece = pick(doc, part)
        if offset and not isinstance(piece, list):
            raise BadRequest(f"offset={offset}: part={part!r} is not a list (offset pages the list part names)")
        base = split_part(part)
        doc = {"part": part, "value": piece}
        root: tuple = ("value",)
    elif offset:
        raise BadRequest(f'offset={offset}: give part too, the list to page (the notes under "{NOTE}" name it)')
    else:
        root = ()
    cuts: dict[tuple, _Cut] = {}
    strings: dict[tuple, int] = {}
    out = _cut_lists(doc, (), root, per_list, offset, cuts)

    def noted() -> tuple[Any, str]:
        notes = [_note(tool, _where(base, root, path), c, per_list) for path, c in cuts.items()]
        notes += [{"what": _where(base, root, path), "cut": "string", "kept": STRING_CHARS, "of": n}
                  for path, n in strings.items()]
        answer = {**out, NOTE: notes} if notes and isinstance(out, dict) and NOTE not in out else out
        return answer, text(answer)

    answer, body = noted()
    while len(body) > MAX_CHARS and _halve_biggest_list(out, cuts, root, offset):
        answer, body = noted()
    if len(body) > MAX_CHARS:
        out = _cut_strings(out, (), strings)
        answer, body = noted()
    if len(body) > MAX_CHARS:
        return _parts_only(tool, doc if not part else doc["value"], part)
    return answer


def _where(base: list[str], root: tuple, path: tuple) -> str:
    rel = path[len(root):] if root and path[:len(root)] == root else path
    return ".".join([*base, *(str(p) for p in rel)])


def _note(tool: str, where: str, c: _Cut, per_list: int) -> dict[str, Any]:
    nxt = c.start + c.kept
    ask = (f'call {tool} again with part="{where}" offset={nxt}' if nxt < c.of else
           f"the rest is before offset {c.start}")
    if c.kept < per_list and nxt < c.of:
        ask += f" (this answer kept {c.kept} to stay under {MAX_CHARS:,} characters; a part alone fits more)"
    elif nxt < c.of:
        ask += f" (rows= up to {MAX_ROWS} items a call)"
    return {"what": where, "kept": c.kept, "from": c.start, "of": c.of, "ask": ask}


def _cut_lists(node: Any, path: tuple, root: tuple, rows: int, offset: int, cuts: dict[tuple, _Cut]) -> Any:
    if isinstance(node, dict):
        return {k: _cut_lists(v, (*path, k), root, rows, offset, cuts) for k, v in node.items()}
    if isinstance(node, list):
        start = offset if path == root else 0
        kept = node[start:start + rows]
        if start or len(node) > start + rows:
            cuts[path] = _Cut(start, len(kept), len(node))
        return [_cut_lists(x, (*path, start + i), root, rows, offset, cuts) for i, x in enumerate(kept)]
    return node


def _lists(node: Any, path: tuple, found: list[tuple[int, tuple, list]], root: tuple, offset: int) -> int:
    """Every list under ``node`` with the characters it takes (paths as :func:`_cut_lists`
    names them: the paged list's items from ``offset``); returns ``node``'s characters."""
    if isinstance(node, dict):
        return 2 + sum(len(text(k)) + 1 + _lists(v, (*path, k), found, root, offset) + 1 for k, v in node.items())
    if isinstance(node, list):
        start = offset if path == root else 0
        size = 2 + sum(_lists(x, (*path, start + i), found, root, offset) + 1 for i, x in enumerate(node))
        found.append((size, path, node))
        return size
    return len(text(node))


def _halve_biggest_list(doc: Any, cuts: dict[tuple, _Cut], root: tuple, offset: int) -> bool:
    """Keep three quarters of the items of the list that takes the most characters (of those
    with two or more); False when none is left to cut."""
    found: list[tuple[int, tuple, list]] = []
    _lists(doc, (), found, root, offset)
    found = [f for f in found if len(f[2]) > 1]
    if not found:
        return False
    _, path, lst = max(found, key=lambda f: f[0])
    c = cuts.get(path)
    if c is None:
        c = cuts[path] = _Cut(0, len(lst), len(lst))
    del lst[max(1, len(lst) * 3 // 4):]
    c.kept = len(lst)
    return True


def _cut_strings(node: Any, path: tuple, cut: dict[tuple, int]) -> Any:
    if isinstance(node, dict):
        return {k: _cut_strings(v, (*path, k), cut) for k, v in node.items()}
    if isinstance(node, list):
        return [_cut_strings(x, (*path, i), cut) for i, x in enumerate(node)]
    if isinstance(node, str) and len(node) > STRING_CHARS:
        cut[path] = len(node)
        return node[:STRING_CHARS] + "…"
    return node


def _parts_only(tool: str, doc: Any, part: str | None) -> dict[str, Any]:
    """The answer when even a cut document is too long: its parts and their sizes."""
    where = f"part {part!r}" if part else "the answer"
    if isinstance(doc, dict):
        sizes = {str(k): len(text(v)) for k, v in doc.items()}
        keys = sorted(sizes, key=lambda k: -sizes[k])[:100]
        return {NOTE: [{"what": part or "", "kept": 0, "of": len(doc),
                        "ask": f"{where} is too long for one answer even cut down ({MAX_CHARS:,} characters at most): "
                               f"call {tool} again with part=<one of parts>"}],
                "parts": {k: sizes[k] for k in keys}}
    return {NOTE: [{"what": part or "", "kept": 0, "of": 1,
                    "ask": f"{where} is too long for one answer ({MAX_CHARS:,} characters at most)"}]}
