"""The resources of ``tracetui mcp``: what an agent reads to use the tools well.

Each is read from where the fact is defined: the glossary (docs/glossary.md), the query
tables (docs/query.md, from its conventions to its examples, and the table names the engine
builds), the findings rules (the packaged ``findings/default_findings.toml``: titles,
severities, methods, thresholds, hints).  The docs folder is beside the package in a source
checkout (``pip install -e``); an installed wheel has no docs, and the resource says where
they are instead.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

#: where the project's docs are read from (a source checkout)
DOCS = Path(__file__).resolve().parents[2] / "docs"
#: where the docs are when they are not beside the package
DOCS_ELSEWHERE = "the docs/ folder of tracetui's source repository"
#: the sections of docs/query.md the query-tables resource holds: from this heading ...
QUERY_FROM = "## Conventions"
#: ... up to this one
QUERY_TO = "## In the browser"


def _doc(name: str) -> str | None:
    try:
        return (DOCS / name).read_text(encoding="utf-8")
    except OSError:
        return None


def glossary() -> str:
    """docs/glossary.md: the words the answers use (lane, GPU event, kernel, step, exposed ...)."""
    return _doc("glossary.md") or f"docs/glossary.md is not installed with this package: see {DOCS_ELSEWHERE}."


def query_tables() -> str:
    """The tables and columns the query tool reads (docs/query.md), with the names the engine builds."""
    from ..query.driver_tables import TABLES as DRIVER_TABLES
    from ..query.job_tables import COLLECTIVE_TABLES
    from ..query.kineto_tables import TraceTables

    head = (f"Tables of a trace: {', '.join(TraceTables.TABLES)}; a driver-call trace adds "
            f"{', '.join(DRIVER_TABLES)}; a job folder has the trace tables with a rank column, and "
            f"{', '.join(COLLECTIVE_TABLES)}.  The query tool answers at most a page of rows: page with "
            "LIMIT/OFFSET, or aggregate.  Files, the network and DuckDB's settings are out of reach.\n\n")
    text = _doc("query.md")
    if text is None or QUERY_FROM not in text:
        return head + f"docs/query.md is not installed with this package: see {DOCS_ELSEWHERE}."
    body = text[text.index(QUERY_FROM):]
    if QUERY_TO in body:
        body = body[:body.index(QUERY_TO)]
    return head + body.rstrip() + "\n"


def findings_rules() -> str:
    """The rules the check tool runs, as the packaged data defines them."""
    from importlib.resources import files

    return files("tracetui.findings").joinpath("default_findings.toml").read_text(encoding="utf-8")


#: uri -> (name, description, mime type, reader); the session resource is the server's own
RESOURCES: dict[str, tuple[str, str, str, Callable[[], str]]] = {
    "tracetui://glossary": ("glossary", "The words tracetui's answers use: lane, GPU event, kernel, step, exposed "
                            "communication, idle, time at stake ... (docs/glossary.md)", "text/markdown", glossary),
    "tracetui://query-tables": ("query-tables", "The tables and columns the query tool reads, their units and "
                                "conventions, example queries (docs/query.md)", "text/markdown", query_tables),
    "tracetui://findings-rules": ("findings-rules", "The rules the check tool runs: title, severity, method, how "
                                  "the time at stake is estimated, thresholds, the fix to try "
                                  "(findings/default_findings.toml)", "application/toml", findings_rules),
}
