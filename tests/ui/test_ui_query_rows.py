"""The result table's model and the query bar's state, without an app (ui/view/query_rows.py,
ui/view/query_state.py): widths that keep numbers whole, sorting with NULLs last, the events
of a job's rank, text made safe, completions and history, each query's cancel flag."""

from __future__ import annotations

import pytest
from rich.style import Style
from shared_traces import kineto_path

from tracetui.query import QueryError, QueryResult
from tracetui.session import open_traces
from tracetui.ui.view.query_rows import MAX_TEXT_CELLS, MIN_TEXT_CELLS, QueryRows
from tracetui.ui.view.query_state import QueryState

LONG = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>>" * 2


def rows_of(columns, types, rows) -> QueryRows:
    return QueryRows(QueryResult(columns, types, rows))


def test_numbers_are_never_cut_and_long_names_give_way():
    q = rows_of(["event", "name", "dur_us"], ["BIGINT", "VARCHAR", "DOUBLE"],
                [(2102, LONG, 41.28), (12345678, "x", -0.000012), (7, None, None)])
    assert q.natural == [len("12345678"), MAX_TEXT_CELLS, len("-1.2e-05") + 1]
    assert q.longest[1] == len(LONG)
    # a wide screen gives the name what it has to spare; a narrow one takes from it first
    assert q.widths(400)[1] == len(LONG)
    narrow = q.widths(40)
    assert narrow[0] == 8 and narrow[2] == 9 and narrow[1] == 40 - 8 - 9 - 4
    line = q.row_text(0, 0, 40, None, Style()).plain
    assert len(line) == 40 and line.endswith("41.280") and "…" in line
    # too narrow even with the name at its least: widths kept, the view scrolls by columns
    assert q.widths(8 + 9 + MIN_TEXT_CELLS + 3) == q.natural
    assert [c for c, _ in q.shown_columns(0, 30)] == [0, 1]
    assert q.first_col_showing(2, 0, 30) >= 1 and (2, 9) in q.shown_columns(q.first_col_showing(2, 0, 30), 30)


def test_sorting_keeps_nulls_last_and_text_ignores_case():
    q = rows_of(["name", "n"], ["VARCHAR", "BIGINT"], [("b", 2), ("A", None), (None, 5), ("c", 1)])
    q.sort(1, descending=True)
    assert [q.value(i, 1) for i in range(4)] == [5, 2, 1, None]
    q.sort(1, descending=False)
    assert [q.value(i, 1) for i in range(4)] == [1, 2, 5, None]
    q.sort(0, descending=False)
    assert [q.value(i, 0) for i in range(4)] == ["A", "b", "c", None]
    assert q.default_descending(1) and not q.default_descending(0)
    h = q.header_text(0, 40, 0, Style(), Style()).plain
    assert "name ▲" in h


def test_event_columns_ranks_and_escaped_text():
    q = rows_of(["rank", "event", "name", "next_event"], ["BIGINT", "BIGINT", "VARCHAR", "BIGINT"],
                [(0, 10, "a\x1b]52;c;x\x07", 11), (1, 10, "b", None), (1, 12, "c", 13)])
    assert q.event_at(0) == (0, 10)
    assert q.event_at(0, 3) == (0, 11)  # the cursor on another event column: that one
    assert q.event_at(1, 3) is None  # NULL there
    assert q.event_at(1, 2) == (1, 10)  # a text column: the result's event column
    assert q.events(1).tolist() == [10, 12] and q.events(0).tolist() == [10] and q.events().tolist() == [10, 12]
    assert "\\x1b]52" in q.cell(0, 2) and "\x1b" not in q.row_text(0, 0, 80, None, Style()).plain
    plain = rows_of(["n"], ["BIGINT"], [(1,)])
    assert plain.event_at(0) is None and plain.events().size == 0


def test_suggestions_come_from_history_then_table_and_column_names():
    state = QueryState(lambda: None, ("events", "kernels", "gaps"), serves=None)
    assert state.suggestion("SELECT * FROM ke") == "SELECT * FROM kernels"
    assert state.suggestion("select * from GA") == "select * from GAps"
    assert state.suggestion("SELECT * FROM kernels") is None and state.suggestion("") is None
    state.column_names = ("dur_us", "device")
    assert state.suggestion("SELECT du") == "SELECT dur_us"
    state.remember("SELECT name FROM kernels")
    state.remember("SELECT count(*) FROM gaps")
    state.remember("SELECT name FROM kernels")  # again: it moves to the end
    assert state.history == ["SELECT count(*) FROM gaps", "SELECT name FROM kernels"]
    assert state.suggestion("SELECT") == "SELECT name FROM kernels"  # the newest that starts so
    assert state.suggestion("SELECT c") == "SELECT count(*) FROM gaps"


def test_each_query_has_its_own_cancel_flag():
    """Esc cancels the query sent last; a query sent right after it starts with a clear flag
    while the cancelled one keeps its own (it cannot run on in the background)."""
    state = QueryState.for_trace(open_traces([str(kineto_path("h100_bert_inference.json.gz"))]))
    first = state.begin()
    state.interrupt()
    second = state.begin()
    assert first.is_set() and not second.is_set()
    with pytest.raises(QueryError, match="^query: cancelled$"):
        state.run("SELECT count(*) FROM kernels", cancel=first)
    result, _ = state.run("SELECT count(*) FROM kernels WHERE kind = 'kernel'", cancel=second)
    assert result.rows == [(60,)]  # the trace's kernels (tests/core/test_query.py counts them in the file)
    state.close()
