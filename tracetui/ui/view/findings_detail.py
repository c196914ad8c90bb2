"""What the findings screen's detail pane shows (a :class:`~.detail_section.DetailModel` over
a :class:`~.findings_row_source.FindingsRowSource`).

A finding: its verdict, the time at stake (an estimate, and how it was estimated), the
evidence (the first events, and what Enter and ``n``/``N`` do), the details rows, the rule's
method with the thresholds in force, and the fix.  An evidence event: which finding it is
evidence of and what is at stake for it, then (an event of the trace on screen) the trace's
own detail of the event.  Trace strings (verdicts, names, details) are sanitised and never
markup; numbers go through :mod:`tracetui.units`.  This module does not import textual.
"""

from __future__ import annotations

import re
from typing import Any

from rich.table import Table
from rich.text import Text

from ... import units
from ...errors import one_line
from ...findings import Finding, RuleConfig, default_specs
from .detail_section import DetailModel, DetailSection, cell, grid
from .findings_row_source import FindingsRowSource, finding_heading, stake_text
from .keep_text import KeepText
from .table_fit import SMALL, cut_names

#: evidence events listed under a finding (the rest: expand the row, or n/N)
EVIDENCE_LISTED = 5
#: cells left of an evidence name in the list (its number and the gaps)
EVIDENCE_INDENT = 4
#: details rows shown (the largest first, as the rule sorted them)
DETAILS_ROWS = 12


def paragraphs(text: str) -> list[Text]:
    """``text`` (a rule's method, as wrapped in its TOML) as one ``Text`` per paragraph."""
    return [KeepText(" ".join(p.split())) for p in re.split(r"\n\s*\n", text.strip()) if p.strip()]


def _header(key: str) -> str:
    """A details key as a column header: ``gpu_idle_after_us`` -> ``gpu idle after µs``."""
    words = key.split("_")
    return " ".join(units.US if w == units.US_ASCII else units.PCT if w == "pct" else w for w in words)


def _value(v: Any) -> Text:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return Text("" if v is None else one_line(str(v)))
    return Text(units.number(v, 1), justify="right")


def details_table(rows: list[dict[str, Any]]) -> Table:
    """A finding's details rows (JSON-ready dicts) as a table, kept whole (the pane scrolls
    sideways when it is narrower)."""
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    table = Table(box=None, padding=(0, 1), show_edge=False, header_style="bold")
    for k in keys:
        numeric = all(isinstance(r.get(k), (int, float)) and not isinstance(r.get(k), bool)
                      for r in rows if r.get(k) is not None)
        # headers wrap at their spaces; a number has none, so it stays whole
        table.add_column(_header(k), justify="right" if numeric else "left", overflow="fold")
    for r in rows:
        table.add_row(*(_value(r.get(k)) for k in keys))
    table.keep_whole = True  # type: ignore[attr-defined]
    return table


def value_text(value: float, unit: str) -> str:
    """A finding's value in its unit: a time in µs as a duration (``160 ms host``), anything
    else as a number (``29.0 % of kernel time``)."""
    if unit == units.US or unit.startswith(units.US + " "):
        return units.duration_text(value) + unit[len(units.US):]
    return f"{units.number(int(value) if float(value).is_integer() else value, 1)} {unit}"


class FindingsDetail:
    """The detail of a findings screen node (see the module docstring).  ``configs``: the
    rules as they ran (their thresholds); ``event_detail``: the trace's detail model, for
    evidence events of the trace on screen."""

    def __init__(self, source: FindingsRowSource, configs: dict[str, RuleConfig] | None = None,
                 event_detail: DetailModel | None = None) -> None:
        self.source = source
        self.configs = configs or {}
        self.event_detail = event_detail

    def sections(self, node: int | None, width: int) -> list[DetailSection]:
        src = self.source
        if node is None or not src.n:
            return self._empty()
        i, k = src.finding_of(node)
        f = src.findings[i]
        return self._evidence(f, k, width) if k >= 0 else self._finding(f, width)

    def _empty(self) -> list[DetailSection]:
        report = self.source.report
        ran = [r for r in report.rules if r["enabled"]]
        if self.source.n:
            return [DetailSection(None, [KeepText("Nothing selected.", style="dim")])]
        head = KeepText(f"No findings: the {len(ran)} rules that ran found nothing above their thresholds.",
                        style="bold green")
        rows = [(r["id"], r["title"] + ("" if r["enabled"] else " (disabled)")) for r in report.rules]
        return [DetailSection(None, [head]), DetailSection.of_rows("Rules", rows)]

    def _finding(self, f: Finding, width: int) -> list[DetailSection]:
        title = finding_heading(f)
        title.append(f"  {f.title}")
        where = [("Rank", str(f.rank))] if f.rank is not None else []
        value = None if f.value is None else value_text(f.value, f.unit)
        if f.time_at_stake_us is None:
            stake = Text(f.stake_label, style="dim")
        else:
            stake = KeepText.assemble((stake_text(f.time_at_stake_us), "bold"), (f"  ({f.stake_label})", "dim"))
        head = DetailSection(None, [title, grid([*where, ("Verdict", KeepText(one_line(f.verdict))),
                                                 ("At stake", stake), ("Count", f"{f.count:,}"), ("Value", value)])])
        out = [head, self._evidence_list(f, width)]
        if f.details:
            more = f" (first {DETAILS_ROWS} of {len(f.details):,})" if len(f.details) > DETAILS_ROWS else ""
            out.append(DetailSection(f"Details{more}", [details_table(f.details[:DETAILS_ROWS])]))
        cfg = self.configs.get(f.rule)
        spec = cfg.spec if cfg is not None else default_specs().get(f.rule)
        if spec is not None:
            out.append(DetailSection("Method", paragraphs(spec.method)))
            if spec.time_at_stake:
                out.append(DetailSection("How the time at stake is estimated", paragraphs(spec.time_at_stake)))
            if spec.thresholds:
                values = cfg.values if cfg is not None else {}
                rows = [(t.name, Text.assemble(f"{values.get(t.name, t.default)} {t.unit}".rstrip(),
                                               (f"  {t.doc}" if t.doc else "", "dim")))
                        for t in spec.thresholds]
                out.append(DetailSection("Thresholds", [grid(rows)]))
        out.append(DetailSection("Fix", paragraphs(f.hint)))
        return out

    def _evidence_list(self, f: Finding, width: int) -> DetailSection:
        """The first evidence events, their names cut in the middle to the pane's width, two
        different names never to the same (:func:`~.table_fit.cut_names`, the rule of every table)."""
        src = self.source
        n = f.evidence.size
        if not n:
            return DetailSection("Evidence", [KeepText("No evidence events (a whole-trace measure).", style="dim")])
        body: list[Any] = []
        if src.on_screen(f):
            how = "Enter: the first in the tree, then n/N cycle them (here and in the tree)"
        else:
            how = f"Enter: switch to rank {f.rank} and go to the first, then n/N cycle them"
        body.append(KeepText(f"{n:,} event{'s' if n != 1 else ''}, in time order. {how}.", style="dim"))
        rows = []
        listed = [src.event_label(f, int(f.evidence[k])) for k in range(min(n, EVIDENCE_LISTED))]
        stakes = [f"  {stake_text(float(f.evidence_us[k]))}" if f.evidence_us is not None else ""
                  for k in range(len(listed))]
        room = max(SMALL, width - EVIDENCE_INDENT - max(map(len, stakes)))
        for k, (t, cut) in enumerate(zip(listed, cut_names([t.plain for t in listed], room))):
            label = KeepText(cut, style=t.spans[0].style if t.spans else t.style)
            label.append(stakes[k], style="dim")
            rows.append((f"{k + 1}", label))
        if n > EVIDENCE_LISTED:
            rows.append(("", Text(f"… {n - EVIDENCE_LISTED:,} more (expand the row: space)", style="dim")))
        body.append(grid(rows))
        return DetailSection("Evidence", body)

    def _evidence(self, f: Finding, k: int, width: int) -> list[DetailSection]:
        src = self.source
        event = int(f.evidence[k])
        title = Text(f"Evidence {k + 1:,} of {f.evidence.size:,} of ", style="bold")
        title.append_text(finding_heading(f))
        rows = [("Event", src.event_label(f, event)), ("Node id", str(event))]
        if f.rank is not None:
            rows.append(("Rank", str(f.rank)))
        if f.evidence_us is not None:
            rows.append(("At stake", KeepText(f"{stake_text(float(f.evidence_us[k]))} (this event's share)")))
        how = "Enter: go to it in the tree" if src.on_screen(f) else f"Enter: switch to rank {f.rank} and go to it"
        out = [DetailSection(None, [title, grid(rows), cell(how, "dim")])]
        if self.event_detail is not None and src.on_screen(f) and 0 <= event < src.kt.n_events:
            event_sections = self.event_detail.sections(event, width)
            if event_sections:  # the trace's head block, under a heading of its own
                out += [DetailSection("The event", event_sections[0].body), *event_sections[1:]]
        return out
