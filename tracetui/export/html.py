"""Self-contained HTML export: one file, inline CSS and a small inline script, no network access.

Every table sorts by a column when its header is clicked (first click: largest first; again:
the other way; numbers sort as numbers, empty cells last), by :data:`_SORT_JS` (plain
JavaScript in the page; without JavaScript the tables keep the report's order).

Every text node (title, header, headings, notes, cells: what the sort reads too) is trace
text made safe to show (:func:`tracetui.errors.one_line`: control, bidi and invisible
characters escaped visibly, so a browser shows ``\\u200b`` where a name hides one and
``cat`` of the file shows nothing a terminal acts on), then escaped for HTML."""

from __future__ import annotations

from html import escape

from ..errors import one_line
from .figures import Figure, report_figures
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
figure { margin: 0.8em 0; } figure svg { max-width: calc(100vw - 4em); height: auto; }
th.sortable { cursor: pointer; user-select: none; }
th[aria-sort="descending"]::after { content: " \\25BC"; }
th[aria-sort="ascending"]::after { content: " \\25B2"; }
"""

#: click a header to sort its table by that column (numbers as numbers, empty cells last)
_SORT_JS = """
(function () {
  function key(cell) {
    var t = cell.textContent.trim();
    if (t === "") return null;
    var n = t.replace(/,/g, "");
    return /^-?(\\d+\\.?\\d*|\\.\\d+)$/.test(n) ? parseFloat(n) : t.toLowerCase();
  }
  function sortBy(th) {
    var table = th.closest("table"), body = table.tBodies[0], col = th.cellIndex;
    var dir = th.getAttribute("aria-sort") === "descending" ? 1 : -1;
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
    var rows = Array.prototype.map.call(body.rows, function (r, i) { return [key(r.cells[col]), i, r]; });
    rows.sort(function (a, b) {
      var x = a[0], y = b[0];
      if (x === null || y === null) return x === y ? a[1] - b[1] : (x === null ? 1 : -1);
      if (typeof x !== typeof y) return typeof x === "number" ? -1 : 1;
      return x < y ? -dir : x > y ? dir : a[1] - b[1];
    });
    rows.forEach(function (r) { body.appendChild(r[2]); });
  }
  Array.prototype.forEach.call(document.querySelectorAll("th.sortable"), function (th) {
    th.title = "sort by this column";
    th.addEventListener("click", function () { sortBy(th); });
  });
})();
"""


def text_node(text: str) -> str:
    """Trace text as a text node: made safe to show, then escaped for HTML."""
    return escape(one_line(text))


def _is_num(text: str) -> bool:
    t = text.replace(",", "").replace(".", "", 1).lstrip("-")
    return t.isdigit()


def render_html(rep: SubtreeReport, max_rows: int = DEFAULT_MAX_ROWS) -> str:
    """The whole report as one HTML page (each table cut at ``max_rows``), its plots
    (:mod:`.figures`) as inline SVG after the header."""
    return html_document(rep.title, header_lines(rep), build_sections(rep, max_rows), report_figures(rep))


def html_document(title: str, header: list[str], sections: list[Section], figures: list[Figure] | None = None) -> str:
    """A titled page: the header lines as a list, the figures (static SVG), then each section's
    notes and table."""
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>tracetui report: {text_node(title)}</title>", f"<style>{_CSS}</style>", "</head><body>",
           f"<h1>tracetui report: {text_node(title)}</h1>", "<ul>"]
    out += [f"<li>{text_node(x)}</li>" for x in header]
    out.append("</ul>")
    if figures:
        out.append("<h2>Plots</h2>")
        for fig in figures:
            out.append(f'<figure><figcaption><strong>{text_node(fig.title)}</strong></figcaption>{fig.svg}'
                       f'<p class="note">{text_node(fig.note)}</p></figure>')
    for sec in sections:
        out.append(f"<h2>{text_node(sec.title)}</h2>")
        out += [f'<p class="note">{text_node(x)}</p>' for x in sec.lines]
        if not sec.rows:
            out.append("<p><em>none</em></p>")
            continue
        out.append("<table><thead><tr>" + "".join(f'<th class="sortable">{text_node(c)}</th>' for c in sec.columns)
                   + "</tr></thead><tbody>")
        for row in sec.rows:
            cells = []
            for c, v in zip(sec.columns, row):
                if c in sec.code and v:
                    cells.append(f"<td><code>{text_node(v)}</code></td>")
                elif _is_num(v):
                    cells.append(f'<td class="num">{text_node(v)}</td>')
                else:
                    cells.append(f"<td>{text_node(v)}</td>")
            out.append("<tr>" + "".join(cells) + "</tr>")
        out.append("</tbody></table>")
        if sec.omitted:
            out.append(f'<p class="note">{sec.omitted:,} more rows not shown '
                       "(export as csv or json for every row).</p>")
    out.append(f"<script>{_SORT_JS}</script>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"
