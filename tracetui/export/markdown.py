"""Markdown export: GitHub-flavoured tables that paste cleanly into an issue or a review.

Names (kernels, ops) are written as code spans so that template brackets such as
``Kernel2<cutlass_...>`` are not taken for HTML; ``|`` is escaped everywhere.  Every piece of
text (title, header, headings, notes, cells) is trace text made safe to show first
(:func:`tracetui.errors.one_line`: control, bidi and invisible characters escaped visibly),
so the file holds nothing a terminal acts on when it is ``cat``, and every line is a line
of the document.
"""

from __future__ import annotations

from ..errors import one_line
from .report import SubtreeReport
from .sections import DEFAULT_MAX_ROWS, Section, build_sections, header_lines


def md_cell(text: str, code: bool = False) -> str:
    """One table cell (or line of text): made safe to show (:func:`~tracetui.errors.one_line`:
    a newline reads ``\\n``), pipes escaped, names as code spans."""
    t = one_line(text).replace("|", "\\|")
    if not code or not t:
        return t
    fence = "``" if "`" in t else "`"
    pad = " " if t.startswith("`") or t.endswith("`") else ""
    return f"{fence}{pad}{t}{pad}{fence}"


def md_table(sec: Section) -> list[str]:
    cols = sec.columns
    out = ["| " + " | ".join(md_cell(c) for c in cols) + " |",
           "|" + "|".join("---" for _ in cols) + "|"]
    for row in sec.rows:
        out.append("| " + " | ".join(md_cell(v, c in sec.code) for c, v in zip(cols, row)) + " |")
    return out


def render_markdown(rep: SubtreeReport, max_rows: int = DEFAULT_MAX_ROWS) -> str:
    """The whole report as one Markdown document (each table cut at ``max_rows``)."""
    return markdown_document(rep.title, header_lines(rep), build_sections(rep, max_rows))


def markdown_document(title: str, header: list[str], sections: list[Section]) -> str:
    """A titled document: the header lines as a list, then each section's notes and table."""
    lines = [f"# tracetui report: {md_cell(title)}", ""]
    lines += [f"- {md_cell(x)}" for x in header]
    for sec in sections:
        lines += ["", f"## {md_cell(sec.title)}", ""]
        for x in sec.lines:
            lines += [md_cell(x), ""]
        if not sec.rows:
            lines.append("_none_")
            continue
        lines += md_table(sec)
        if sec.omitted:
            lines += ["", f"_{sec.omitted:,} more rows not shown (export as csv or json for every row)._"]
    return "\n".join(lines) + "\n"
