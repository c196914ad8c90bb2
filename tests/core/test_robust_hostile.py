"""Trace text is data (issues 24 and 40): nothing from a trace reaches a terminal, on any path.

Every command of the CLI runs on hostile copies of shared traces (:mod:`hostile`: OSC 52,
OSC 2, terminal queries, C1 controls, BEL, CR, BS, DEL, NUL, bidi controls and marks and
invisible characters appended to every string the trace shows, in a file whose name holds
ESC, BEL and U+200B too) twice: with its output on a pseudo-terminal, as a user sees it, and
into a pipe (``| head``, a file), where nothing is skipped.  The bytes must hold no control,
bidi or invisible character but newline (once a terminal's own colour sequences are
removed), the hostile names must be shown escaped (``\\x1b``, ``\\u200b``), not dropped,
and JSON outputs must read back the exact strings.  Exports written to files: the same.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import tty

import pytest
from findings_traces import write_barrier_job
from hostile import (
    CONTROL,
    EVIL_NAME,
    INVISIBLE,
    PAYLOAD,
    evil,
    terminal_residue,
    unsafe_characters,
    write_hostile_driver,
    write_hostile_kineto,
    write_hostile_pair,
)
from rich.text import Text
from shared_traces import SHARED

from tracetui.errors import LoadWarning, TraceError, one_line, printable_lines
from tracetui.io.jsonout import dumps, loads
from tracetui.io.terminal import safe_renderable, safe_text

#: how the payload reads once escaped (a part of it): shown, not dropped
VISIBLE = r"\x1b]52;c;cHduZWQ=\x1b\\x1b]2;pwned\x07\x1b[6n"


def test_one_line_escapes_c0_c1_del_and_passes_printable_unicode():
    assert one_line("a\x1b[6nb") == r"a\x1b[6nb"
    assert one_line("\x9b6n\x9d0;t\x9c\x7f\x00\x07\r\x08") == r"\x9b6n\x9d0;t\x9c\x7f\x00\x07\r\x08"
    assert one_line("line\nnext\u2028\u202eX") == r"line\nnext\u2028\u202eX"
    assert one_line("\udc80name") == r"\udc80name"  # an undecodable file name: writable everywhere
    plain = "aten::addmm void at::native::Kernel<float> 漢字 é µs ✗ ▁▂ [bold]"
    assert one_line(plain) == plain
    assert not CONTROL.search(one_line(PAYLOAD))
    assert printable_lines("a\nb\tc\x1bd") == "a\nb\tc\\x1bd"
    # errors and warnings are one line with nothing a terminal acts on, C1 included
    err = TraceError(f"/tmp/{EVIL_NAME}\x9b.json", "bad" + PAYLOAD, position="byte 1\x9b")
    assert not CONTROL.search(str(err)) and err.path.endswith("\x9b.json")
    assert not CONTROL.search(LoadWarning("x", PAYLOAD).message)


def test_one_line_escapes_bidi_marks_and_invisible_characters():
    """Issue 40: the invisible and bidi-mark characters are escaped as Python writes them in a
    string literal, so two names that differ only by one never read alike."""
    assert one_line("aten::mm\u200b") == r"aten::mm\u200b" != one_line("aten::mm")
    assert one_line(INVISIBLE) == (r"\u200b\u200c\u200d\u200e\u200f\u061c\u2060\u2061\u2062\u2063\u2064\ufeff"
                                   r"\xad\u180e\u034f\u115f\u3164\U000e0041\U000e007f\u2066\u2067\u2068\u2069"
                                   r"\u202a\u202c❤\ufe0f\u2028\u2029")  # VS16 too, after an emoji
    assert unsafe_characters(one_line(PAYLOAD), allow="") == []
    assert printable_lines("a\nb\u200b\tc\ufeff") == "a\nb\\u200b\tc\\ufeff"
    assert str(TraceError(f"/tmp/{EVIL_NAME}.json", "bad")).endswith(r"\x1b[6n\u200b.json: bad")


def test_the_escaped_characters_are_the_controls_bidi_and_invisible_ones_of_unicode():
    """Every assigned code point of this Python's Unicode database (and the unassigned ones the
    escape list names): escaped exactly when :func:`hostile.is_unsafe` says so from its
    category (controls, format characters but those with a glyph, separators, surrogates)
    and the invisible letters and marks (fillers, grapheme joiner, variation selectors)."""
    import unicodedata

    from hostile import is_unsafe

    wrong = []
    for cp in range(0x110000):
        ch = chr(cp)
        escaped = one_line(ch) != ch
        if unicodedata.category(ch) == "Cn":  # unassigned here: only the ranges Unicode reserves as ignorable
            if escaped != (cp == 0x2065 or 0xFFF0 <= cp <= 0xFFF8 or 0x13430 <= cp <= 0x1343F
                           or 0xE0000 <= cp <= 0xE0FFF):
                wrong.append(f"U+{cp:04X} (unassigned)")
        elif escaped != is_unsafe(ch):
            wrong.append(f"U+{cp:04X}")
    assert wrong == []
    # the form: a C0 or C1 control as \xNN, the rest as \uXXXX or \UXXXXXXXX (one character each)
    assert [one_line(c) for c in "\x1b\x9b\xad\u200b\U000e0001\n\t\r"] == [
        r"\x1b", r"\x9b", r"\xad", r"\u200b", r"\U000e0001", r"\n", r"\t", r"\r"]


def test_styled_text_keeps_its_styles_on_the_same_characters():
    t = Text("ab\x1b]2;x\x9bcd\nef")
    t.stylize("bold", 1, 4)  # "b\x1b]"
    t.stylize("red", 7, 9)  # "\x9bc"
    safe_text(t, keep_lines=True)
    assert t.plain == "ab\\x1b]2;x\\x9bcd\nef"
    assert [t.plain[s.start:s.end] for s in t.spans] == ["b\\x1b]", "\\x9bc"]
    from rich.console import Group
    from rich.table import Table

    table = Table("name")
    table.add_row(Text("k\x1b[6n"))
    group = safe_renderable(Group(Text("x\x1b]52;c;eA==\x07"), table))
    assert [r.plain for r in group.renderables[:1]] == ["x\\x1b]52;c;eA=="]  # BEL: Rich drops it itself
    assert table.columns[0]._cells[0].plain == "k\\x1b[6n"


def test_json_output_escapes_raw_c1_and_del_and_reads_back_the_same():
    value = {"name": "a\x9b6n\x7f\u202e\x1b"}
    out = dumps(value)
    assert out == b'{"name":"a\\u009b6n\\u007f\\u202e\\u001b"}' and loads(out) == value
    # the invisible characters too (a tag beyond the BMP as a surrogate pair): the same strings
    value = {"name": "aten::mm" + INVISIBLE, INVISIBLE: 1}
    out = dumps(value)
    assert unsafe_characters(out.decode(), allow="") == [] and b"aten::mm\\u200b" in out
    assert loads(out) == value and json.loads(out) == value


def _on_terminal(args: list[str], env: dict[str, str]) -> tuple[int, str]:
    """Run ``tracetui args`` with stdout and stderr on a pseudo-terminal (raw: no newline
    translation); return (exit status, what the terminal received)."""
    master, slave = pty.openpty()
    tty.setraw(slave)
    proc = subprocess.Popen([sys.executable, "-m", "tracetui", *args], stdout=slave, stderr=slave,
                            stdin=subprocess.DEVNULL, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 1 << 16)
        except OSError:  # the other side closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    return proc.wait(timeout=300), b"".join(chunks).decode("utf-8", "replace")


@pytest.fixture(scope="module")
def hostile_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile")
    et, kineto = write_hostile_pair(d)
    job = d / "job"
    job.mkdir()
    for r in (0, 1):  # two ranks of the shared job, hostile
        write_hostile_kineto(job, SHARED / "multirank" / "param_dlrm_8ranks" / f"rank{r}_kineto.json.gz",
                             file_name=f"rank{r}_{EVIL_NAME}.json")
    # a job whose straggler runs a hostile op before every barrier: `check` names it in its verdict
    strag = write_barrier_job(d / "strag", slow_name=evil("slow_logging"))
    memory = write_hostile_kineto(d, "h100_bert_inference.json.gz", file_name=f"{EVIL_NAME}_memory.json")
    return {"kineto": write_hostile_kineto(d), "memory": memory, "et": et, "pair_kineto": kineto,
            "driver": write_hostile_driver(d), "dir": d, "job": job, "strag": strag,
            "rank0": job / f"rank0_{EVIL_NAME}.json", "rank1": job / f"rank1_{EVIL_NAME}.json"}


def _env(tmp_path) -> dict[str, str]:
    return dict(os.environ, TRACETUI_CACHE_DIR=str(tmp_path / "cache"), COLUMNS="140",
                TRACETUI_CODE_FINGERPRINT="tests")


COMMANDS = {
    "info": ["info", "{kineto}"],
    "info --json": ["info", "--json", "{kineto}"],
    "tree": ["tree", "{kineto}"],
    "summary": ["summary", "{kineto}"],
    "summary --json": ["summary", "--json", "{kineto}"],
    "export md": ["export", "{kineto}", "-f", "md", "-o", "-"],
    "export csv": ["export", "{kineto}", "-f", "csv", "-o", "-"],
    "export html": ["export", "{kineto}", "-f", "html", "-o", "-"],
    "export json": ["export", "{kineto}", "-f", "json", "-o", "-"],
    "export chrome": ["export", "{kineto}", "-f", "chrome", "-o", "-"],
    "memory": ["memory", "{memory}"],
    "memory --json": ["memory", "--json", "{memory}"],
    "memory summary": ["summary", "{memory}"],
    "pair info": ["info", "{pair_kineto}", "{et}"],
    "pair tree": ["tree", "{pair_kineto}", "{et}"],
    "pair summary": ["summary", "{pair_kineto}", "{et}"],
    "driver info": ["info", "{driver}"],
    "driver tree": ["tree", "{driver}"],
    "driver summary": ["summary", "{driver}"],
    "et info": ["info", "{et}"],
    "et tree": ["tree", "{et}"],
    "et summary": ["summary", "{et}"],
    "job summary": ["summary", "{job}", "--workers", "1"],
    "check": ["check", "{kineto}"],
    "check --json": ["check", "--json", "{kineto}"],
    "pair check": ["check", "{pair_kineto}", "{et}"],
    "driver check": ["check", "{driver}"],
    "job check": ["check", "{job}", "--workers", "1", "--evidence", "50"],
    "straggler check": ["check", "{strag}", "--workers", "1"],
    "straggler check --json": ["check", "--json", "{strag}", "--workers", "1"],
    "query": ["query", "{kineto}", "SELECT name, lane, count(*) FROM events GROUP BY ALL ORDER BY 3 DESC LIMIT 40"],
    "query csv": ["query", "{kineto}", "SELECT name, category FROM events LIMIT 200", "--csv"],
    "query json": ["query", "{kineto}", "SELECT name, category FROM events LIMIT 200", "--json"],
    "query pivot": ["query", "{kineto}", "PIVOT (SELECT name FROM kernels LIMIT 5) ON name USING count(*)"],
    "query error": ["query", "{kineto}", "SELECT CAST(name AS INTEGER) FROM events WHERE name LIKE '%\x1b%'"],
    "job query": ["query", "{job}", "SELECT rank, name FROM events WHERE name LIKE '%\x1b%' LIMIT 5",
                  "--workers", "1"],
    "critical-path": ["critical-path", "{kineto}", "--segments", "400"],
    "critical-path --json": ["critical-path", "--json", "{kineto}"],
    "critical-path --method hta": ["critical-path", "{kineto}", "--method", "hta", "--segments", "400"],
    "pair critical-path": ["critical-path", "{pair_kineto}", "{et}"],
    "job critical-path": ["critical-path", "{job}", "--workers", "1"],
    "slice": ["slice", "{kineto}", "--window", "0:1000000", "-o", "{dir}/slice_\x1b]2;x\x07\u200b.json"],
    "diff --text": ["diff", "--text", "{rank0}", "{rank1}"],
    "et export md": ["export", "{et}", "-f", "md", "-o", "-"],
    "et export csv": ["export", "{et}", "-f", "csv", "-o", "-"],
}
#: the commands whose run into a pipe stays in the quick loop (each run is a process and a load)
QUICK_PIPES = ("summary", "tree", "query csv", "export md", "export json")


def _args(command: str, files: dict) -> list[str]:
    return [a.format(**{k: str(v) for k, v in files.items()}) for a in COMMANDS[command]]


def _strings(value) -> list[str]:
    """Every string of a JSON value, keys included."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [*value.keys(), *(s for v in value.values() for s in _strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_writes_no_control_character_to_the_terminal(command, hostile_files, tmp_path):
    code, shown = _on_terminal(_args(command, hostile_files), _env(tmp_path))
    assert code == (2 if command == "query error" else 0), shown[-2000:]
    assert terminal_residue(shown) == [], command
    assert "\\u200b" in shown  # the invisible character of the names (or the file name), shown
    if command == "check --json":  # no finding on the hostile copy (its sync calls have other names)
        assert "\\u001b]2;title" in shown  # the file name, with JSON's own escapes
    elif "json" in command or "chrome" in command:
        assert "\\u001b]52;c;" in shown  # JSON's own escapes: the document means the same
    else:
        assert "\\x1b]" in shown  # names (or the file name) are shown, escaped, not dropped
        if command in ("tree", "pair tree", "driver tree"):
            assert VISIBLE in shown
        if command == "straggler check":  # the straggler's op in the verdict (wrapped: lines joined)
            assert VISIBLE in "".join(line.strip() for line in shown.splitlines())


def test_a_second_run_from_the_cache_is_as_clean(hostile_files, tmp_path):
    env = _env(tmp_path)
    for _ in range(2):  # the second answers from the cached trace and the stored summary
        code, shown = _on_terminal(["summary", str(hostile_files["kineto"])], env)
        assert code == 0 and terminal_residue(shown) == []


@pytest.mark.parametrize("name", ["missing\x1b]2;x\x07\x9b6n.json", "bad\x1b[6n\x9d.json"])
def test_the_error_line_names_a_hostile_file_without_its_controls(name, hostile_files, tmp_path):
    path = hostile_files["dir"] / name
    if name.startswith("bad"):
        path.write_text("this is no trace")
    code, shown = _on_terminal(["info", str(path)], _env(tmp_path))
    assert code == 2 and terminal_residue(shown) == []
    assert shown.count("\n") == 1 and shown.startswith("tracetui: ") and "\\x1b" in shown and "\\x9" in shown


@pytest.mark.parametrize("command", [c if c in QUICK_PIPES else pytest.param(c, marks=pytest.mark.slow)
                                     for c in COMMANDS])
def test_every_command_writes_no_control_character_into_a_pipe(command, hostile_files, tmp_path):
    """Issue 40: piped (``| head``, ``> file``) the output is as safe as on a terminal: no
    control, bidi or invisible character at all (no colours either), names escaped; JSON
    documents read back the exact strings."""
    env = {k: v for k, v in _env(tmp_path).items() if k != "COLUMNS"}  # as a shell pipes it
    proc = subprocess.run([sys.executable, "-m", "tracetui", *_args(command, hostile_files)], capture_output=True,
                          stdin=subprocess.DEVNULL, env=env, timeout=300)
    out, err = proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8")  # (strict: valid UTF-8)
    assert proc.returncode == (2 if command == "query error" else 0), err[-2000:]
    assert unsafe_characters(out) == [] and unsafe_characters(err) == [], command
    if command == "query error":
        assert err.count("\n") == 1 and "\\x1b" in err
    elif "json" in command or "chrome" in command:
        strings = _strings(json.loads(out))
        wanted = EVIL_NAME if command == "check --json" else PAYLOAD  # (no finding there: the file name)
        assert any(wanted in x for x in strings), "the exact strings read back"
    else:
        assert "\\x1b]" in out and "\\u200b" in out  # shown, escaped, not dropped


#: how the formats show the payload: md/csv/html escaped; json/chrome exact (read back)
EXPORTS = ["md", "csv", "html", "json", "chrome", "md.gz", "et md", "et csv", "et html", "et json"]


@pytest.mark.parametrize("export", EXPORTS)
def test_export_files_hold_no_control_character_and_json_keeps_the_exact_names(export, hostile_files, tmp_path):
    """``tracetui export -o report.<fmt>`` then the bytes of the file (``cat report.md`` is
    what a user does next): md, csv and html hold every name and the file name escaped;
    json and chrome hold the exact strings (written with JSON's ``\\u`` escapes)."""
    import gzip
    import html

    from tracetui.cli.entry import main

    alone, fmt = export.startswith("et "), export.removeprefix("et ")
    target = tmp_path / f"report.{fmt}"
    assert main(["export", str(hostile_files["et" if alone else "kineto"]), "-f", fmt.split(".")[0],
                 "-o", str(target)]) == 0
    data = target.read_bytes()
    text = (gzip.decompress(data) if fmt.endswith(".gz") else data).decode("utf-8")  # (strict: valid UTF-8)
    assert unsafe_characters(text) == []
    if fmt in ("json", "chrome"):
        strings = _strings(json.loads(text))
        assert any(PAYLOAD in x for x in strings) and any(EVIL_NAME in x for x in strings)
        return
    shown = html.unescape(text) if fmt == "html" else text
    assert VISIBLE in shown and "\\u200b" in shown
    if fmt != "csv":  # (a CSV is rows only)
        assert one_line(EVIL_NAME) in shown  # the file name in the header, escaped the same way


def test_piped_lines_are_never_folded_inside_a_path(tmp_path):
    """Piped, a line is as long as its content: a path longer than 80 columns (CI's was) came out
    folded in the middle of an escape (``\\u2`` / ``00b``), which grep and a reader both miss."""
    deep = tmp_path / ("a-folder-name-long-enough-to-push-the-path-past-eighty-columns-" * 2) / "x\u200by"
    deep.mkdir(parents=True)
    trace = deep / "bert.json.gz"
    trace.symlink_to(SHARED / "kineto" / "h100_bert_inference.json.gz")
    env = {k: v for k, v in _env(tmp_path).items() if k != "COLUMNS"}
    proc = subprocess.run([sys.executable, "-m", "tracetui", "info", str(trace)], capture_output=True,
                          stdin=subprocess.DEVNULL, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    lines = proc.stdout.decode().splitlines()
    assert any(str(deep).replace("\u200b", "\\u200b") in line for line in lines)


@pytest.mark.parametrize("command", [["info"], ["summary"], ["memory"], ["tree", "--depth", "2"]])
def test_a_reader_that_goes_away_ends_the_command_quietly(command, tmp_path):
    """``| head`` reads what it wants and closes the pipe: the command ends with status 0 and
    says nothing (rich's consoles exited with 1, which ``set -o pipefail`` reads as a failure).
    Here nobody reads at all, so the first write already meets the closed pipe."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run([sys.executable, "-m", "tracetui", *command, str(SHARED / "kineto" /
                               "h100_bert_inference.json.gz")], stdout=write_end, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, env=_env(tmp_path), timeout=300)
    finally:
        os.close(write_end)
    assert (proc.returncode, proc.stderr.decode()) == (0, "")
