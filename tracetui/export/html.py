"""Self-contained HTML export: one file, inline CSS, no scripts and no network access."""

from __future__ import annotations

from html import escape

from .report import SubtreeReport
from .sections import DEFAULT_MAX_ROWS, Section, build_sections, header_lines

_CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em; color: #1f2328; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.8em; border-bottom: 1px solid #d0d7de; }
table { border-collapse: collapse; margin: 0.6em 0; }
th, td { border: 1px solid #d0d7de; padding: 3px 8px; vertical-align: top; }
th { background: #f6f8fa; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
code { font: 12px ui-monospace, SFMono-Regular, Menlo, monospace; word-break: break-all; }
p.note { color: #59636e; }
"""


def _is_num(text: str) -> bool:
    t = text.replace(",", "").replace(".", "", 1).lstrip("-")
    return t.isdigit()


def render_html(rep: SubtreeReport, max_rows: int = DEFAULT_MAX_ROWS) -> str:
    """The whole report as one HTML page (each table cut at ``max_rows``)."""
    return html_document(rep.title, header_lines(rep), build_sections(rep, max_rows))


def html_document(title: str, header: list[str], sections: list[Section]) -> str:
    """A titled page: the header lines as a list, then each section's notes and table."""
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>tracetui report: {escape(title)}</title>", f"<style>{_CSS}</style>", "</head><body>",
           f"<h1>tracetui report: {escape(title)}</h1>", "<ul>"]
    out += [f"<li>{escape(x)}</li>" for x in header]
    out.append("</ul>")
    for sec in sections:
        out.append(f"<h2>{escape(sec.title)}</h2>")
        out += [f'<p class="note">{escape(x)}</p>' for x in sec.lines]
        if not sec.rows:
            out.append("<p><em>none</em></p>")
            continue
        out.append("<table><thead><tr>" + "".join(f"<th>{escape(c)}</th>" for c in sec.columns)
                   + "</tr></thead><tbody>")
        for row in sec.rows:
            cells = []
            for c, v in zip(sec.columns, row):
                if c in sec.code and v:
                    cells.append(f"<td><code>{escape(v)}</code></td>")
                elif _is_num(v):
                    cells.append(f'<td class="num">{escape(v)}</td>')
                else:
                    cells.append(f"<td>{escape(v)}</td>")
            out.append("<tr>" + "".join(cells) + "</tr>")
        out.append("</tbody></table>")
        if sec.omitted:
            out.append(f'<p class="note">{sec.omitted:,} more rows not shown '
                       "(export as csv or json for every row).</p>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"
