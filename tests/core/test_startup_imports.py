"""The core modules the browser's first screen needs import nothing heavy (issue 26, item 2):
not pandas, not Dask or the job machinery, not the driver-call reader, not the Execution
Trace loader, not the Nsight Systems reader or sqlite3 (the list of formats imports its
recognition only); each loads when first used.  Checked in a fresh interpreter, after importing
the modules and after running what the first screen runs (the load through the cache, the
detail pane's numbers), then once more after a table is built, where pandas must be there.

The browser's own modules (tracetui/ui) are not imported here (core tests stay headless);
``bench/bench_startup.py`` prints which heavy modules are loaded when the tree is shown."""

from __future__ import annotations

import subprocess
import sys

from shared_traces import REPO, SAMPLES

from tracetui.driver.synthetic import write_driver_trace
from tracetui.kineto import load_kineto

#: what ``tracetui TRACE`` and the first screen import from the core
FIRST_SCREEN_CORE = (
    "tracetui", "tracetui.cli.entry", "tracetui.crash", "tracetui.errors", "tracetui.session",
    "tracetui.store.traces", "tracetui.kineto", "tracetui.link", "tracetui.driver", "tracetui.driver.trace",
    "tracetui.driver.schema", "tracetui.driver.pipeline", "tracetui.driver.pairing", "tracetui.job",
    "tracetui.job.nav", "tracetui.analysis.node_stats", "tracetui.analysis.occupancy",
    "tracetui.analysis.roofline", "tracetui.analysis.categories", "tracetui.analysis.intervals",
    "tracetui.analysis.frames", "tracetui.analysis.gaps", "tracetui.analysis.launches",
    "tracetui.analysis.tables", "tracetui.analysis.driver", "tracetui.findings", "tracetui.findings.spec",
    "tracetui.findings.fmt", "tracetui.query", "tracetui.query.cells",
)
#: modules the first screen must not load: name -> what it is
HEAVY = {"pandas": "pandas", "dask": "Dask", "tracetui.job.job": "the job machinery",
         "tracetui.job.executor": "the job machinery", "tracetui.driver.loader": "the driver-call reader",
         "tracetui.driver.lines": "the driver-call reader", "tracetui.et.loader": "the ET loader",
         "tracetui.export.report": "the export", "tracetui.findings.engine": "the findings' rules",
         "tracetui.query.engine": "the SQL engine", "duckdb": "DuckDB",
         "tracetui.nsys.loader": "the Nsight Systems reader", "tracetui.nsys.reader": "the Nsight Systems reader",
         "sqlite3": "sqlite3 (the Nsight Systems reader's)"}

_CHECK = """
import sys
heavy = {heavy!r}
def loaded():
    return sorted(f"{{m}} ({{what}})" for m, what in heavy.items() if m in sys.modules)
"""


def _run(code: str, tmp_path) -> None:
    env_code = _CHECK.format(heavy=HEAVY) + code
    proc = subprocess.run([sys.executable, "-c", env_code], cwd=REPO, capture_output=True, text=True, timeout=180,
                          env={"TRACETUI_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin",
                               "HOME": str(tmp_path)})
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_importing_the_first_screen_core_loads_nothing_heavy(tmp_path):
    imports = "; ".join(f"import {m}" for m in FIRST_SCREEN_CORE)
    _run(imports + "\nassert not loaded(), loaded()\nassert 'pandas' not in sys.modules\n", tmp_path)


def test_first_screen_work_loads_nothing_heavy_until_a_table(tmp_path):
    sample = SAMPLES / "h100_bert_inference.json.gz"
    code = f"""
from tracetui.job import looks_like_job
from tracetui.store.traces import load_cached
from tracetui.analysis.categories import get_categorizer
from tracetui.analysis.node_stats import gpu_work_summary, lane_activity
from tracetui.analysis.occupancy import kernel_occupancy
from tracetui.analysis.roofline import op_roofline
assert not looks_like_job([{str(sample)!r}])
for _ in range(2):  # cold (writes the cache entry), then warm (maps it)
    kt = load_cached([{str(sample)!r}]).kineto
get_categorizer()
op = next(n for n in kt.find_by_external_id(49) if kt.name(n) == "aten::addmm")
kernel = int(kt.gpu_events_of(op)[0])
assert op_roofline(kt, op) is not None and kernel_occupancy(kt, kernel).pct == 31.25
import numpy as np
assert gpu_work_summary(kt, kt.gpu_events_of(op), 5) is not None
lane_activity(kt, 0, np.ones(kt.n_events, dtype=bool))
assert not loaded(), loaded()
from tracetui.analysis.frames import gpu_events_frame
from tracetui.analysis.tables import kernel_table
table = kernel_table(gpu_events_frame(kt))
assert int(table["count"].sum()) == 61  # 60 kernels + 1 memcpy (sample_traces/README.md)
assert "pandas" in sys.modules  # loaded when first used
"""
    _run(code, tmp_path)


def test_the_job_package_loads_its_machinery_when_asked(tmp_path):
    _run("""
import tracetui.job
assert "tracetui.job.job" not in sys.modules
from tracetui.job import open_job, job_summary, Job, RankResult
assert "tracetui.job.job" in sys.modules and open_job.__module__ == "tracetui.job.job"
import tracetui.driver
assert "tracetui.driver.loader" not in sys.modules
from tracetui.driver import load_driver
assert load_driver.__module__ == "tracetui.driver.loader"
""", tmp_path)


def test_the_command_line_start_imports_no_numpy(tmp_path):
    """What ``tracetui TRACE`` runs before it opens the browser (the argument parser, the
    error boundary, the whole-job test on the files) stays free of numpy too, so a loading
    screen can paint before the loader's imports."""
    sample = SAMPLES / "h100_bert_inference.json.gz"
    driver = tmp_path / "bert_driver.jsonl"
    write_driver_trace(load_kineto(sample), driver)
    _run(f"""
import tracetui.cli.entry, tracetui.crash
from tracetui.cli.entry import build_parser
from tracetui.job import looks_like_job
build_parser().parse_args(["open", {str(sample)!r}])
assert not looks_like_job([{str(sample)!r}]) and not looks_like_job([{str(sample)!r}, {str(driver)!r}])
assert "numpy" not in sys.modules and not loaded(), sorted(m for m in sys.modules if m.startswith("tracetui"))
""", tmp_path)
