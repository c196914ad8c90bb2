"""The SQL tables of a whole job: every single-trace table with a ``rank`` column first,
plus ``collectives`` (one row per collective matched across ranks) and ``collective_ranks``
(one row per collective and rank that ran it).

Per-rank tables are copied into DuckDB rank by rank (each rank loaded through the cache,
its tables built, inserted, dropped), so memory holds one rank's model at a time and DuckDB
keeps the rows in its own compressed columns; name columns become VARCHAR there (the ranks'
string tables differ).  A rank that cannot be loaded is left out and named in the session's
warnings.  ``collectives`` needs every rank's summary (``tracetui summary JOB``; stored
summaries are reused).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..errors import TraceError
from ..job.discover import expand_inputs
from ..job.layout import JobLayout, group_ranks
from ..job.worker import identify
from .columns import ARGS_VIEW
from .kineto_tables import TraceTables

COLLECTIVE_TABLES = ("collectives", "collective_ranks")
_COLL_COLUMNS = ("name", "kind", "group", "seq", "index", "ranks", "start_us", "start_skew_us", "end_skew_us",
                 "min_dur_us", "max_dur_us", "first_rank", "last_rank", "bytes", "algo_bytes", "dtype", "algorithm",
                 "protocol", "busbw_gbps")


def _select_list(df: pd.DataFrame) -> str:
    """Columns of ``df`` for an INSERT, name columns (ENUM) cast to VARCHAR."""
    cols = []
    for c in df.columns:
        q = '"' + c.replace('"', '""') + '"'
        cols.append(f"CAST({q} AS VARCHAR) AS {q}" if isinstance(df[c].dtype, pd.CategoricalDtype) else q)
    return ", ".join(cols)


#: every table of a job
JOB_TABLES = TraceTables.TABLES + COLLECTIVE_TABLES


class JobSource:
    """The tables of a job (a folder, a glob or rank files; docs/jobs.md).  ``job``: the job
    already opened (the browser's), whose layout and collectives are used as they are;
    ``follow_links``: read a folder's files that lead outside it (see ``expand_inputs``)."""

    def __init__(self, inputs: list[str], *, job: Any = None, use_cache: bool = True, workers: int | None = None,
                 scheduler: str | None = None, rules: str | None = None, follow_links: bool = False) -> None:
        self.inputs = list(inputs)
        self.job = job
        self.use_cache = use_cache
        self.workers, self.scheduler, self.rules = workers, scheduler, rules
        self.follow_links = follow_links
        self.warnings: list[str] = []
        if job is not None:
            self.layout: JobLayout = job.layout
        else:
            files = expand_inputs(self.inputs, self.warnings, follow_links)
            if not files:
                raise TraceError(self.inputs[0] if self.inputs else None, "no trace files (*.json, *.json.gz) found")
            self.layout = group_ranks([identify(f) for f in files])
        if not self.layout.ranks:
            raise TraceError(self.inputs[0], "no Kineto trace with a rank among the files of this job")
        self.warnings += self.layout.warnings

    def table_names(self) -> tuple[str, ...]:
        return JOB_TABLES

    def register(self, con: Any, names: list[str]) -> list[str]:
        per_rank = [n for n in names if n not in COLLECTIVE_TABLES]
        if per_rank:
            self._rank_tables(con, per_rank)
        if any(n in COLLECTIVE_TABLES for n in names):
            self._collectives(con)
            return per_rank + list(COLLECTIVE_TABLES)
        return per_rank

    def _rank_tables(self, con: Any, names: list[str]) -> None:
        from ..analysis.categories import get_categorizer
        from ..store.traces import load_cached

        cat = get_categorizer(self.rules)
        created: set[str] = set()
        for rf in self.layout.ranks:
            paths = [rf.kineto] + ([rf.et] if rf.et else [])
            try:
                tables = TraceTables(load_cached(paths, use_cache=self.use_cache), cat)
            except TraceError as exc:
                self.warnings.append(f"rank {rf.rank}: left out: {exc}")
                continue
            for name in names:
                target = "_args_json" if name == "args" else name
                df = tables.build(name)
                con.register("_rank_rows", df)
                verb = f"INSERT INTO {target}" if target in created else f"CREATE TABLE {target} AS"
                con.execute(f"{verb} SELECT CAST({int(rf.rank)} AS BIGINT) AS rank, {_select_list(df)} FROM _rank_rows")
                con.unregister("_rank_rows")
                created.add(target)
            del tables
        for name in names:
            if name == "args":
                if "_args_json" not in created:
                    con.execute("CREATE TABLE _args_json (rank BIGINT, event BIGINT, args VARCHAR)")
                con.execute(ARGS_VIEW.format(rank=", a.rank", raw="_args_json"))
            elif name not in created:
                con.execute(f"CREATE TABLE {name} (rank BIGINT)")  # no rank could be loaded

    def _collectives(self, con: Any) -> None:
        from ..job.job import open_job

        job = self.job or open_job(self.inputs, use_cache=self.use_cache, workers=self.workers,
                                   scheduler=self.scheduler, rules=self.rules, follow_links=self.follow_links)
        self.warnings += [w for w in job.warnings if w not in self.warnings]
        rows, members = [], []
        for i, c in enumerate(job.collectives):
            row = {"collective": i, **{k: c.get(k) for k in _COLL_COLUMNS}}
            row["missing_ranks"] = ",".join(str(r) for r in c.get("missing_ranks") or []) or None
            rows.append(row)
            for rank, m in (c.get("members") or {}).items():
                members.append({"collective": i, "rank": int(rank), "start_us": m.get("start_us"),
                                "end_us": m.get("end_us"), "dur_us": m.get("dur_us"),
                                "kernel_event": m.get("kernel"), "op_event": m.get("op")})
        coll = pd.DataFrame(rows, columns=["collective", *_COLL_COLUMNS, "missing_ranks"])
        mem = pd.DataFrame(members, columns=["collective", "rank", "start_us", "end_us", "dur_us", "kernel_event",
                                             "op_event"])
        for name, df in (("collectives", coll), ("collective_ranks", mem)):
            con.register("_coll_rows", df)
            con.execute(f"CREATE TABLE {name} AS SELECT * FROM _coll_rows")
            con.unregister("_coll_rows")
