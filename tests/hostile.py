"""Hostile copies of shared traces (issue 24): every string a trace can carry that tracetui
shows -- op, kernel and runtime names, categories, arg keys and values, thread and process
names, device names, ``distributedInfo``, ET node names and attrs, driver-call probe names,
and the file name itself -- with terminal control sequences appended.

The payload is what an attacker would send: OSC 52 (writes the user's clipboard), OSC 2
(sets the window title), terminal *queries* (``ESC [ 6 n`` cursor position, ``ESC [ c``
device attributes, ``ESC P $ q`` DECRQSS: the terminal types its reply into the app), the
8-bit C1 forms of CSI, OSC and ST, BEL, CR, BS, DEL, NUL and a bidi override.  The files
are written with ``json.dumps`` (control characters as ``\\u001b`` escapes, as a real
profiler writes them), so the loader decodes the raw characters.

:func:`terminal_residue` is the check: what is left of a terminal's input once the
sequences tracetui's own front ends may write (SGR colours, cursor positioning) are removed;
it must hold no C0 control but newline and no C1 control or DEL.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

from shared_traces import ET_DIR, kineto_path

#: the attack, appended to every string a trace shows
PAYLOAD = ("\x1b]52;c;cHduZWQ=\x1b\\"  # OSC 52: "pwned" into the clipboard
           "\x1b]2;pwned\x07"  # OSC 2: the window title, BEL-terminated
           "\x1b[6n\x1b[c"  # queries: cursor position report, device attributes
           "\x1bP$qm\x1b\\"  # DCS DECRQSS query
           "\x9b6n\x9d0;t\x9c"  # C1 CSI query, C1 OSC title with C1 ST
           "\x07\r\x08\x7f\x00\u202e!")  # BEL, CR, BS, DEL, NUL, right-to-left override
#: a file name an attacker can choose (the file system allows ESC and BEL in names)
EVIL_NAME = "evil\x1b]2;title\x07\x1b[6n"

#: what tracetui may write itself: SGR colours and styles, cursor moves (absolute, relative)
_OWN_SEQUENCES = re.compile(r"\x1b\[[0-9;]*m|\x1b\[[0-9]+;[0-9]+H|\x1b\[[0-9]*[ABCDGJK]")
#: what must never reach a terminal from trace data: C0 but newline, DEL, C1
CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")


def evil(text: str) -> str:
    return f"{text}{PAYLOAD}"


def terminal_residue(output: str) -> list[str]:
    """The control characters left in ``output`` (what a program wrote to a terminal) once
    tracetui's own escape sequences are removed, each with a little context; [] is clean."""
    rest = _OWN_SEQUENCES.sub("", output)
    return [repr(rest[max(0, m.start() - 12):m.end() + 4]) for m in CONTROL.finditer(rest)][:10]


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
