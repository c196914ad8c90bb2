"""Hostile copies of shared traces (issue 24): every string a trace can carry that tracetui
shows -- op, kernel and runtime names, categories, arg keys and values, thread and process
names, device names, ``distributedInfo``, ET node names and attrs, driver-call probe names,
and the file name itself -- with terminal control sequences appended.

The payload is what an attacker would send: OSC 52 (writes the user's clipboard), OSC 2
(sets the window title), terminal *queries* (``ESC [ 6 n`` cursor position, ``ESC [ c``
device attributes, ``ESC P $ q`` DECRQSS: the terminal types its reply into the app), the
8-bit C1 forms of CSI, OSC and ST, BEL, CR, BS, DEL, NUL and a bidi override, then the
invisible and bidi characters of issue 40 (:data:`INVISIBLE`: a name that hides one prints
like another).  The files are written with ``json.dumps`` (control characters as
``\\u001b`` escapes, as a real profiler writes them), so the loader decodes the raw
characters.

The checks: :func:`unsafe_characters` (what of a text is a control, bidi or invisible
character, from the Unicode categories of the standard library, not from tracetui's own
list) and :func:`terminal_residue` (what is left of a terminal's input once the sequences
tracetui's own front ends may write, SGR colours and cursor positioning, are removed): it
must hold no such character but newline.
"""

from __future__ import annotations

import gzip
import json
import re
import unicodedata
from pathlib import Path

from shared_traces import ET_DIR, kineto_path

#: the attack, appended to every string a trace shows
PAYLOAD = ("\x1b]52;c;cHduZWQ=\x1b\\"  # OSC 52: "pwned" into the clipboard
           "\x1b]2;pwned\x07"  # OSC 2: the window title, BEL-terminated
           "\x1b[6n\x1b[c"  # queries: cursor position report, device attributes
           "\x1bP$qm\x1b\\"  # DCS DECRQSS query
           "\x9b6n\x9d0;t\x9c"  # C1 CSI query, C1 OSC title with C1 ST
           "\x07\r\x08\x7f\x00\u202e!")  # BEL, CR, BS, DEL, NUL, right-to-left override
#: invisible characters and bidi marks (issue 40): zero width space, non-joiner and joiner,
#: LRM, RLM, ALM, word joiner, the invisible operators, BOM, soft hyphen, Mongolian vowel
#: separator, combining grapheme joiner, Hangul fillers, two tag characters, the four bidi
#: isolates, an embedding and its pop, VS16 (after an emoji), the line and paragraph separators
INVISIBLE = ("\u200b\u200c\u200d\u200e\u200f\u061c\u2060\u2061\u2062\u2063\u2064\ufeff\u00ad\u180e\u034f"
             "\u115f\u3164\U000e0041\U000e007f\u2066\u2067\u2068\u2069\u202a\u202c\u2764\ufe0f\u2028\u2029")
PAYLOAD += INVISIBLE
#: a file name an attacker can choose (the file system allows ESC, BEL and U+200B in names)
EVIL_NAME = "evil\x1b]2;title\x07\x1b[6n\u200b"

#: what tracetui may write itself: SGR colours and styles, cursor moves (absolute, relative)
_OWN_SEQUENCES = re.compile(r"\x1b\[[0-9;]*m|\x1b\[[0-9]+;[0-9]+H|\x1b\[[0-9]*[ABCDGJK]")
#: what a terminal acts on: C0 but newline, DEL, C1
CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")

#: format characters (Cf) that draw a glyph of their own (the prepended concatenation marks
#: and their kin): shown as they are
_VISIBLE_FORMAT = {*range(0x0600, 0x0606), 0x06DD, 0x070F, 0x0890, 0x0891, 0x08E2, 0x110BD, 0x110CD}
#: invisible characters of other categories: the fillers (Lo), the combining grapheme joiner,
#: the Khmer inherent vowels and the variation selectors (Mn), the Mongolian free variation
#: selectors
_INVISIBLE_OTHER = {0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, *range(0x180B, 0x1810), 0x3164, 0xFFA0,
                    *range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0)}


def is_unsafe(ch: str) -> bool:
    """Whether ``ch`` must never reach an output as it is (issue 40): a control (Cc), a format
    character (Cf: bidi controls and marks, zero-width characters, tags ...) but those with a
    glyph, a line or paragraph separator, a surrogate, or another invisible character."""
    cp = ord(ch)
    cat = unicodedata.category(ch)
    if cat == "Cf":
        return cp not in _VISIBLE_FORMAT
    return cat in ("Cc", "Zl", "Zp", "Cs") or cp in _INVISIBLE_OTHER or 0xE0000 <= cp <= 0xE0FFF


def unsafe_characters(text: str, allow: str = "\n") -> list[str]:
    """Every distinct character of ``text`` that :func:`is_unsafe` (but those of ``allow``),
    as ``U+XXXX``; [] is clean."""
    return sorted(f"U+{ord(c):04X}" for c in set(text) if c not in allow and is_unsafe(c))


def evil(text: str) -> str:
    return f"{text}{PAYLOAD}"


def terminal_residue(output: str) -> list[str]:
    """The control, bidi and invisible characters left in ``output`` (what a program wrote to
    a terminal) once tracetui's own escape sequences are removed, each with a little context;
    [] is clean."""
    rest = _OWN_SEQUENCES.sub("", output)
    if not unsafe_characters(rest):
        return []
    return [repr(rest[max(0, i - 12):i + 5]) for i, c in enumerate(rest) if c != "\n" and is_unsafe(c)][:10]


def _hostile_args(args: dict) -> dict:
    out = {k: (evil(v) if isinstance(v, str) else v) for k, v in args.items()}
    out[evil("key")] = evil("value")
    return out


def hostile_kineto_doc(name: str | Path = "a100_event_sync_multistream.json.gz") -> dict:
    """The shared Kineto trace ``name`` (in the shared kineto folder, or a path) with the
    payload in every shown string."""
    doc = json.loads(gzip.open(name if isinstance(name, Path) else kineto_path(name)).read())
    for ev in doc["traceEvents"]:
        if not isinstance(ev, dict):
            continue
        if isinstance(ev.get("name"), str) and ev.get("ph") != "M" and ev["name"] != "[memory]":
            ev["name"] = evil(ev["name"])  # the profiler's fixed [memory] name kept: those events are read
        if isinstance(ev.get("args"), dict):
            ev["args"] = _hostile_args(ev["args"])  # thread_name / process_name values too
    # one event whose category, pid and tid are hostile strings too
    doc["traceEvents"].append({"ph": "X", "cat": evil("cat"), "name": evil("odd"), "pid": evil("pid"),
                               "tid": evil("tid"), "ts": doc["traceEvents"][-1].get("ts", 0), "dur": 1.0})
    for dev in doc.get("deviceProperties") or []:
        dev["name"] = evil(str(dev.get("name", "gpu")))
    doc["distributedInfo"] = {**(doc.get("distributedInfo") or {}), "backend": evil("nccl")}
    return doc


def write_hostile_kineto(folder: Path, name: str | Path = "a100_event_sync_multistream.json.gz",
                         file_name: str | None = None) -> Path:
    path = folder / (file_name or f"{EVIL_NAME}.json")
    path.write_text(json.dumps(hostile_kineto_doc(name)))
    return path


def write_hostile_pair(folder: Path, pair: str = "hta_simple_add_cuda_pair") -> tuple[Path, Path]:
    """(ET, Kineto) of a shared pair, both hostile (ET node names and string attrs too)."""
    kt = json.loads(gzip.open(ET_DIR / pair / "kineto.json.gz").read())
    for ev in kt["traceEvents"]:
        if isinstance(ev, dict) and isinstance(ev.get("name"), str) and ev.get("ph") != "M":
            ev["name"] = evil(ev["name"])
        if isinstance(ev, dict) and isinstance(ev.get("args"), dict):
            ev["args"] = _hostile_args(ev["args"])
    et = json.loads(gzip.open(ET_DIR / pair / "et.json.gz").read())
    for node in et["nodes"]:
        if not node.get("name", "").startswith("[pytorch|profiler|execution_"):
            node["name"] = evil(node["name"])
        for attr in node.get("attrs") or []:
            if isinstance(attr, dict) and isinstance(attr.get("value"), str):
                attr["value"] = evil(attr["value"])
    et_path, k_path = folder / f"{EVIL_NAME}_et.json", folder / f"{EVIL_NAME}_kineto.json"
    et_path.write_text(json.dumps(et))
    k_path.write_text(json.dumps(kt))
    return et_path, k_path


def write_hostile_driver(folder: Path) -> Path:
    """The UI tests' bpftrace file with the payload in every probe name and text line."""
    from driver_ui_files import write_bpftrace

    plain = write_bpftrace(folder / "plain.jsonl").read_text().splitlines()
    out = []
    for line in plain:
        try:
            obj = json.loads(line) if line.startswith("{") else None
        except ValueError:  # the file's deliberately broken line stays as it is
            obj = None
        if isinstance(obj, dict):
            for k in ("name", "comm", "path", "func"):
                if isinstance(obj.get(k), str):
                    obj[k] = evil(obj[k])
            out.append(json.dumps(obj))
        else:
            out.append(evil(line) if line else line)
    path = folder / f"{EVIL_NAME}.jsonl"
    path.write_text("\n".join(out) + "\n")
    return path


#: the masquerade pairs (issue 40): names that differ only by a zero width space
LOOKALIKE_OPS = ("aten::mm", "aten::mm\u200b")
LOOKALIKE_KERNELS = ("mm_kernel", "mm_kernel\u200b")
#: the kernel of h100_bert_inference renamed (17 launches)
_BERT_GEMM = "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>"


def write_lookalike_kineto(folder: Path) -> Path:
    """h100_bert_inference with its 26 ``aten::addmm`` ops named, in turn, by the two names of
    :data:`LOOKALIKE_OPS` (13 each) and its 17 cutlass wmma GEMM kernels by those of
    :data:`LOOKALIKE_KERNELS` (9 and 8): two rows of every table that a terminal would show
    alike unless the invisible character is escaped."""
    doc = json.loads(gzip.open(kineto_path("h100_bert_inference.json.gz")).read())
    ops = kernels = 0
    for ev in doc["traceEvents"]:
        if not isinstance(ev, dict):
            continue
        if ev.get("cat") == "cpu_op" and ev.get("name") == "aten::addmm":
            ev["name"] = LOOKALIKE_OPS[ops % 2]
            ops += 1
        elif ev.get("cat") == "kernel" and str(ev.get("name", "")).startswith(_BERT_GEMM):
            ev["name"] = LOOKALIKE_KERNELS[kernels % 2]
            kernels += 1
    assert (ops, kernels) == (26, 17), "h100_bert_inference as the manifest counts it"
    path = folder / "lookalike.json"
    path.write_text(json.dumps(doc))
    return path
