"""``tracetui check``: every shared trace, pair and the multirank job; the text at 80 columns,
the JSON document, the CI gate's exit status, the rules file and its errors."""

from __future__ import annotations

import json
import re

import pytest
from findings_traces import KTrace
from shared_traces import ET_DIR, KINETO, SHARED, load_shared_kineto, load_shared_pair

from tracetui.cli import main
from tracetui.cli.check import render_text
from tracetui.errors import TraceFormatError
from tracetui.findings import default_specs, rule_configs, run_checks
from tracetui.findings.engine import CHECKS
from tracetui.session import LinkedTrace

JOB = SHARED / "multirank" / "param_dlrm_8ranks"
PAIRS = sorted(p.name for p in ET_DIR.glob("*_pair"))


def _lines_fit(text: str, width: int = 80) -> None:
    long = [ln for ln in text.splitlines() if len(ln) > width]
    assert not long, long


#: the shared traces whose check takes over ~1.5 s here: in the full suite only (slow)
HEAVY = {"v100x2_nccl_216k.json.gz", "a100_cudagraph_nccl_rank0.json.gz", "v100_old_flow_format_cudagraph.json.gz"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in HEAVY else n
                                  for n in sorted(p.name for p in KINETO.glob("*.json.gz"))])
def test_check_every_shared_trace(name):
    rep = run_checks(LinkedTrace(load_shared_kineto(name)))
    kt = load_shared_kineto(name)
    for f in rep.findings:
        assert f.verdict and "\n" not in f.verdict and f.hint
        assert all(0 <= e < kt.n_events for e in f.evidence.tolist())
        assert f.time_at_stake_us is None or f.time_at_stake_us >= 0
        json.dumps(f.as_json())
    _lines_fit(render_text(rep, width=80))


@pytest.mark.parametrize("pair", PAIRS)
def test_check_every_shared_pair(pair):
    linked = load_shared_pair(pair)
    rep = run_checks(linked)
    _lines_fit(render_text(rep, width=80))
    assert all(0 <= e < linked.kineto.n_events for f in rep.findings for e in f.evidence.tolist())


@pytest.mark.slow
def test_check_the_multirank_job_cli(capsys):
    assert main(["check", str(JOB), "--json", "--workers", "1", "--no-cache"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ranks"] == list(range(8)) and doc["errors"] == []
    assert doc["findings"] and all(f["rank"] in range(8) for f in doc["findings"])
    # each rank's exposed send_recv (the all_to_all of DLRM): one finding per rank at least
    assert {f["rank"] for f in doc["findings"] if f["rule"] == "exposed_comm" and f["check"] == "send_recv"} \
        == set(range(8))
    stakes = [f["time_at_stake_us"] for f in doc["findings"] if f["time_at_stake_us"] is not None]
    assert stakes == sorted(stakes, reverse=True)


@pytest.mark.slow
def test_text_json_and_exit_status(capsys, tmp_path):
    trace = str(KINETO / "a100_cudagraph_nccl_rank0.json.gz")
    assert main(["check", trace]) == 0
    out = capsys.readouterr().out
    _lines_fit(out)
    assert out.startswith("tracetui check: a100_cudagraph_nccl_rank0.json.gz")
    assert re.search(r"^WARNING +exposed_comm \(send_recv\) +~185 ms at stake$", out, re.M)
    assert main(["check", trace, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    first = doc["findings"][0]
    assert {"rule", "severity", "count", "time_at_stake_us", "value", "evidence", "hint"} <= set(first)
    assert doc["counts"] == {"error": 0, "warning": 7, "info": 1}
    assert [r["id"] for r in doc["rules"]] == list(default_specs())
    # the CI gate
    assert main(["check", trace, "--fail-on", "warning"]) == 1
    assert main(["check", trace, "--fail-on", "error"]) == 0
    rules = tmp_path / "rules.toml"
    rules.write_text('[blocking_sync]\nseverity = "error"\nmin_idle_us = 1e9\n[pageable_copy]\nseverity = "error"\n')
    capsys.readouterr()
    assert main(["check", trace, "--fail-on", "error", "--rules", str(rules), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert [f["rule"] for f in doc["findings"] if f["severity"] == "error"] == ["pageable_copy"]
    assert "blocking_sync" not in {f["rule"] for f in doc["findings"]}


def test_bad_input_exits_2(capsys, tmp_path):
    et_only = str(ET_DIR / "torch_cpu_pair" / "et.json.gz")
    assert main(["check", et_only, "--no-cache"]) == 2
    assert "needs a Kineto trace" in capsys.readouterr().err
    rules = tmp_path / "bad.toml"
    rules.write_text("[no_such_rule]\nx = 1\n")
    trace = KTrace().write(tmp_path / "t.json")
    assert main(["check", str(trace), "--rules", str(rules)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown rule 'no_such_rule'" in err and str(rules) in err


@pytest.mark.parametrize("text, problem", [
    ("[scalar_sync]\nmin_idle_us = 'x'\n", "'min_idle_us' must be a float"),
    ("[scalar_sync]\nmin_calls = 3\n", "unknown key 'min_calls'"),
    ("[scalar_sync]\nseverity = 'fatal'\n", "must be one of info, warning, error"),
    ("[scalar_sync]\nenabled = 1\n", "'enabled' must be true or false"),
    ("[input_stall]\npattern = '(['\n", "bad regex"),
    ("scalar_sync = 3\n", "must be a table"),
    ("[scalar_sync\n", "not valid TOML"),
])
def test_rules_file_errors_name_the_file_and_rule(tmp_path, text, problem):
    path = tmp_path / "rules.toml"
    path.write_text(text)
    with pytest.raises(TraceFormatError) as exc:
        rule_configs(path)
    assert problem in str(exc.value) and str(path) in str(exc.value)


def test_rules_file_from_the_environment(tmp_path, monkeypatch):
    path = tmp_path / "f.toml"
    path.write_text("[recompute]\nenabled = false\nmin_gpu_us = 5\n")
    monkeypatch.setenv("TRACETUI_FINDINGS", str(path))
    cfg = rule_configs()
    assert cfg["recompute"].enabled is False and cfg["recompute"]["min_gpu_us"] == 5.0
    monkeypatch.setenv("TRACETUI_FINDINGS", "")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "none"))
    assert rule_configs()["recompute"].enabled is True


def test_every_rule_is_data_plus_one_function():
    specs = default_specs()
    assert set(CHECKS) == {r for r, s in specs.items() if s.scope == "trace"}
    for s in specs.values():
        assert s.title and s.method and s.time_at_stake and s.hint
        assert all(t.doc and t.unit for t in s.thresholds)


def test_docs_list_every_rule_as_the_defaults_say():
    from shared_traces import REPO

    from tracetui.findings.spec import rules_markdown

    # regenerate with: python scripts/findings_doc.py
    assert rules_markdown() in (REPO / "docs" / "findings.md").read_text(encoding="utf-8")


def test_a_long_heading_wraps_within_80_columns():
    import numpy as np

    from tracetui.findings.engine import FindingsReport
    from tracetui.findings.spec import Finding, Severity

    f = Finding(rule="exposed_comm", title="t", severity=Severity.WARNING, verdict="v " * 60, count=1, value=1.0,
                unit="x", time_at_stake_us=185000.0, stake_label="estimate", evidence=np.arange(3), hint="h",
                check="multimem_all_reduce_kernel<c10::BFloat16, 1…", rank=1234)
    text = render_text(FindingsReport("s", [f], []), width=80)
    _lines_fit(text)
    assert "~185 ms at stake" in text and "rank 1234" in text
