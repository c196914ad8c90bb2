"""The entry points that the rest of the suite reaches only in child processes or with torch:
``python -m tracetui`` and the size checks of ``tracetui record --ranks`` (made before torch is
needed)."""

from __future__ import annotations

import runpy

import pytest

from tracetui.cli.record_ranks import record_job


def test_python_dash_m_tracetui_runs_the_cli(monkeypatch, capsys):
    monkeypatch.setattr("sys.argv", ["tracetui", "--help"])
    with pytest.raises(SystemExit) as done:
        runpy.run_module("tracetui", run_name="__main__")
    assert done.value.code == 0 and "usage: tracetui" in capsys.readouterr().out


@pytest.mark.parametrize(("ranks", "steps", "straggler", "problem"), [
    (1, 2, None, "--ranks must be at least 2, got 1"),
    (4, 0, None, "steps must be at least 1, got 0"),
    (4, 2, 4, "--straggler must be a rank in 0..3, got 4"),
])
def test_record_ranks_refuses_bad_sizes_before_it_needs_torch(tmp_path, ranks, steps, straggler, problem):
    with pytest.raises(ValueError, match=problem.replace(".", r"\.")):
        record_job(tmp_path, ranks, steps=steps, straggler=straggler)
    assert not list(tmp_path.iterdir())  # nothing written
