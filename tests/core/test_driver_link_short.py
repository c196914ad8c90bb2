"""A Kineto trace whose threads hold fewer linkable calls than the link's runs of four codes
(a100_triton: 2 launches) still links to the driver calls of the same run."""

from __future__ import annotations

from shared_traces import kineto_path, load_shared_kineto

from tracetui.driver.synthetic import write_driver_trace
from tracetui.session import open_traces


def test_two_calls_on_a_thread_link(tmp_path):
    kt = load_shared_kineto("a100_triton.json.gz")
    written = write_driver_trace(kt, tmp_path / "drv.jsonl")
    assert len(written) == 2  # the trace's two launches (cuLaunchKernel under cuda_driver)
    link = open_traces([str(kineto_path("a100_triton.json.gz")), str(tmp_path / "drv.jsonl")]).kineto.link
    assert (link.linked, link.kineto_calls) == (2, 2)
    assert all(int(link.kineto_to_driver[k]) >= 0 for k in written)
