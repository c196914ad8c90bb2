"""The plot model (``ui/view/plot.py``), headless: each column the highest value of its span,
bars in eighths of a cell, a line series, the cursor, marks and the axis labels."""

from __future__ import annotations

import numpy as np

from tracetui.ui.view.plot import BLOCKS, CURSOR, LINE, PlotModel, Series


def _model(**kw) -> PlotModel:
    alloc = Series("allocated", np.array([0.0, 10, 20, 30]), np.array([2.0, 8.0, 4.0, 1.0]), 0.0, "s0")
    res = Series("reserved", np.array([0.0, 25]), np.array([6.0, 8.0]), 0.0, "s1")
    return PlotModel([alloc, res], 0.0, 40.0, **kw)


def test_each_column_shows_the_highest_value_of_its_span():
    m = _model()
    # 4 columns of 10: [0,10) holds 2, [10,20) 8, [20,30) 4, [30,40] 1; the top is 8 (both series)
    assert m.levels(4, 2)[0].tolist() == [4, 16, 8, 2]
    # a peak shorter than a column is kept: 2 columns of 20
    assert m.levels(2, 2)[0].tolist() == [16, 8]


def test_bars_lines_and_cursor():
    m = _model(cursor=15.0, marks=[(10.0, "^")])
    rows = m.grid(4, 2)
    text = ["".join(g for g, _ in r) for r in rows]
    assert text[1][0] == BLOCKS[4] and text[1][1] == BLOCKS[8] and text[0][1] == BLOCKS[8]
    assert [s for _, s in rows[0]][1] == "s0 on-s1 cursor"  # the cursor column over the bar, reserved in it
    assert text[0][0] == LINE  # reserved (6 of 8) above the 2/8 bar: its line in the top cell
    assert m.axis(4)[1] == ("^", "mark")
    empty = PlotModel([Series("x", np.array([0.0]), np.array([0.0]))], 0, 10, cursor=5.0)
    assert CURSOR in "".join(g for g, _ in empty.grid(3, 1)[0])


def test_labels():
    m = _model()
    assert m.y_labels(5)[0].strip() == "8 B" and m.y_labels(5)[-1].strip() == "0 B"
    lines = m.text(40, 3).splitlines()
    assert len(lines) == 5 and lines[-1].split() == ["0.000", "ms", "0.040", "ms"]
