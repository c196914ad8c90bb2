"""FLOPs, bytes and roofline of ops (analysis/flops.py, roofline.py, devices.py) on real ops of
the shared traces; every expected number is worked out from the op's Input Dims below."""

from __future__ import annotations

import numpy as np
import pytest
from shared_traces import load_shared_kineto

from tracetui.analysis.devices import DeviceTable, get_device_table, load_device_file
from tracetui.analysis.flops import op_cost
from tracetui.analysis.roofline import (
    op_costs,
    op_roofline,
    roofline_point,
    roofline_table,
)
from tracetui.errors import TraceFormatError
from tracetui.kineto.kinds import Kind


def _op(kt, name: str, dims) -> int:
    for i in np.flatnonzero(kt.kind == int(Kind.CPU_OP)).tolist():
        if kt.name(i) == name and kt.args(i).get("Input Dims") == dims:
            return i
    raise AssertionError(f"no {name} {dims}")


def test_mm_flops_are_2mnk_from_its_shapes():
    # h100_qwen_chat_inference: aten::mm [8944, 1024] x [1024, 2816] in bf16
    kt = load_shared_kineto("h100_qwen_chat_inference.json.gz")
    i = _op(kt, "aten::mm", [[8944, 1024], [1024, 2816]])
    c = op_costs(kt, np.array([i]))[0]
    m, k, n = 8944, 1024, 2816
    assert c.flops == 2 * m * n * k == 51_581_550_592
    assert c.bytes == (m * k + k * n + m * n) * 2  # bf16: A and B read, C written
    assert c.compute_type == "bf16" and c.family == "gemm"


def test_addmm_adds_mn_for_the_bias():
    # h100_bert_inference: aten::addmm(bias [512], x [141, 512], W [512, 512]): 2·141·512·512 + 141·512
    kt = load_shared_kineto("h100_bert_inference.json.gz")
    i = _op(kt, "aten::addmm", [[512], [141, 512], [512, 512], [], []])
    c, r = op_roofline(kt, i)
    assert c.flops == 2 * 141 * 512 * 512 + 141 * 512 == 73_996_800
    assert c.bytes == (512 + 141 * 512 + 512 * 512 + 141 * 512) * 2
    # its GPU time is its kernels' summed duration; the H100 entry's bf16 peak is the ceiling
    gpu = kt.gpu_events_of(i)
    us = float(kt.dur[gpu].sum())
    assert r.gpu_us == pytest.approx(us)
    assert r.tflops_per_s == pytest.approx(c.flops / (us * 1e-6) / 1e12)
    assert (r.device, r.compute_type, r.peak_tflops, r.peak_gbps) == ("H100 SXM", "bf16", 989.5, 3350.0)
    assert r.bound == "memory"  # intensity ~97 FLOP/B < ridge 989.5e12 / 3350e9 = 295


def test_convolution_forward_and_backward():
    # mi300_resnet_train_checkpointing: miopen_convolution(x [10, 256, 14, 14], w [512, 256, 3, 3],
    # bias None, padding [1, 1], stride [2, 2], dilation [1, 1], groups 1):
    # out = (14 + 2 - 2 - 1) // 2 + 1 = 7 -> 2·10·512·7·7·256·3·3 = 1,156,055,040
    kt = load_shared_kineto("mi300_resnet_train_checkpointing.json.gz")
    i = _op(kt, "aten::miopen_convolution", [[10, 256, 14, 14], [512, 256, 3, 3], [], [], [], [], [], [], []])
    assert op_costs(kt, np.array([i]))[0].flops == 2 * 10 * 512 * 49 * 256 * 9 == 1_156_055_040
    # convolution_backward(grad_out [10, 512, 7, 7], x [10, 512, 7, 7], w [512, 512, 3, 3], ...,
    # output_mask [True, True, False]): grad input + grad weight, each 2·10·512·49·512·9
    j = _op(kt, "aten::convolution_backward",
            [[10, 512, 7, 7], [10, 512, 7, 7], [512, 512, 3, 3], [], [], [], [], [], [], [], []])
    assert kt.args(j)["Concrete Inputs"][10] == "[True, True, False]"
    assert op_costs(kt, np.array([j]))[0].flops == 2 * (2 * 10 * 512 * 49 * 512 * 9)


def test_flash_attention_forward():
    # h100_bert_inference: _flash_attention_forward(q, k, v [1, 141, 8, 64] = B, S, H, D):
    # 4·B·H·S_q·S_k·D = 4·1·8·141·141·64
    kt = load_shared_kineto("h100_bert_inference.json.gz")
    i = next(i for i in np.flatnonzero(kt.kind == int(Kind.CPU_OP)).tolist()
             if kt.name(i) == "aten::_flash_attention_forward")
    c = op_costs(kt, np.array([i]))[0]
    assert c.flops == 4 * 8 * 141 * 141 * 64 and c.family == "attention"


def test_small_formulas():
    bf = "c10::BFloat16"
    assert op_cost("aten::bmm", [[4, 8, 16], [4, 16, 32]], [bf, bf]).flops == 2 * 4 * 8 * 32 * 16
    assert op_cost("aten::baddbmm", [[4, 8, 32], [4, 8, 16], [4, 16, 32], [], []],
                   [bf, bf, bf, "Scalar", "Scalar"]).flops == 2 * 4 * 8 * 32 * 16 + 4 * 8 * 32
    assert op_cost("aten::linear", [[2, 3, 16], [32, 16], [32]], [bf, bf, bf]).flops == 2 * 6 * 32 * 16 + 6 * 32
    assert op_cost("aten::matmul", [[5, 8, 16], [16, 32]], ["float", "float"]).flops == 2 * 5 * 8 * 32 * 16
    assert op_cost("aten::add", [[2, 3], [3], []], ["float", "float", "Scalar"]).flops == 6
    assert op_cost("aten::_softmax", [[4, 10], [], []], ["float", "Scalar", "Scalar"]).flops == 5 * 40
    assert op_cost("aten::mm", [[2, 3], [4, 5]], ["float", "float"]) is None  # K does not match
    assert op_cost("aten::unknown_op", [[2, 3]], ["float"]) is None


def test_roofline_point_bounds():
    h100 = get_device_table().find("NVIDIA H100 80GB HBM3")
    # 1e12 FLOPs in 1 ms = 1000 TFLOP/s; 1e9 bytes -> intensity 1000 >= ridge 295: compute bound
    r = roofline_point(10**12, 10**9, 1000.0, "bf16", h100)
    assert r.bound == "compute" and r.tflops_per_s == pytest.approx(1000.0)
    assert r.pct_of_peak == pytest.approx(100 * 1000 / 989.5)
    # intensity 1: the roof is 1 x 3,350 GB/s = 3.35 TFLOP/s
    r = roofline_point(10**9, 10**9, 1000.0, "fp32", h100)
    assert r.bound == "memory" and r.pct_of_peak == pytest.approx(100 * 1.0 / 3.35)


def test_device_table_names_and_user_overrides(tmp_path, monkeypatch):
    t = get_device_table()
    for name, entry in [("NVIDIA H100 80GB HBM3", "H100 SXM"), ("NVIDIA B200", "B200"),
                        ("NVIDIA A100-SXM4-80GB", "A100 SXM 80GB"), ("NVIDIA A100-PG509-200", "A100 40GB"),
                        ("Tesla V100-SXM2-32GB", "V100 SXM2"), ("AMD Instinct MI300X", "MI300X"),
                        ("AMD Instinct MI210", "MI210"), ("NVIDIA GeForce RTX 4090", "RTX 4090")]:
        assert t.find(name).name == entry
    assert t.find("AMD Radeon Graphics") is None
    f = tmp_path / "devices.toml"
    f.write_text('[[device]]\nname = "my H100"\nmatch = "H100"\nmemory_gbps = 3000\n[device.tflops]\nbf16 = 800\n')
    monkeypatch.setenv("TRACETUI_DEVICES", str(f))
    assert get_device_table().find("NVIDIA H100 80GB HBM3").name == "my H100"
    assert get_device_table().find("NVIDIA B200").name == "B200"  # defaults follow
    f.write_text('[[device]]\nname = "x"\nmatch = "("\nmemory_gbps = 1\n')
    with pytest.raises(TraceFormatError, match="bad regex"):
        load_device_file(f)


def test_roofline_table_on_qwen():
    kt = load_shared_kineto("h100_qwen_chat_inference.json.gz")
    df = roofline_table(kt, DeviceTable(get_device_table().entries))
    top = df.iloc[0]
    # the largest GPU time: 48 aten::mm [8944, 1024] x [1024, 2816], compute bound on the H100
    assert (top["name"], top["input_dims"], top["count"], top["bound"]) == \
        ("aten::mm", "8944×1024, 1024×2816", 48, "compute")
    assert top["gflops"] == pytest.approx(48 * 51_581_550_592 / 1e9)


def test_json_export_and_api_carry_flops():
    import json

    from tracetui import api
    from tracetui.export import export_bytes
    from tracetui.session import LinkedTrace

    kt = load_shared_kineto("h100_bert_inference.json.gz")
    i = _op(kt, "aten::addmm", [[512], [141, 512], [512, 512], [], []])
    doc = json.loads(export_bytes(LinkedTrace(kineto=kt), None, "json"))
    row = next(o for o in doc["ops"] if o["node"] == i)
    assert row["flops"] == 73_996_800 and row["bytes_moved"] == (512 + 2 * 141 * 512 + 512 * 512) * 2
    assert row["tflops_per_s"] == pytest.approx(73_996_800 / (row["gpu_subtree_us"] * 1e-6) / 1e12)
    assert all(o["flops"] is None for o in doc["ops"] if o["kind"] != "cpu_op")
    r = api.op_roofline_metrics(i, kt)
    assert (r.flops, r.bound, r.device) == (73_996_800, "memory", "H100 SXM")
    assert api.op_roofline_metrics(int(kt.gpu_events_of(i)[0]), kt) is None  # a kernel is not an op


@pytest.mark.slow
def test_et_shapes_when_kineto_has_none():
    # param_linear_cuda_pair (RTX 2080 Ti): the Kineto trace has no Input Dims; the linked ET op
    # aten::linear has x [512, 1024], W [1024, 1024], bias [1024] (float):
    # 2·512·1024·1024 + 512·1024 FLOPs, measured against the 2080 Ti's fp32 peak
    from shared_traces import load_shared_pair

    from tracetui import api

    lt = load_shared_pair("param_linear_cuda_pair")
    et, kt, link = lt.et, lt.kineto, lt.link
    pos = next(p for p in range(len(et.ids)) if et.node(p).name == "aten::linear" and link.et_to_kineto[p] >= 0)
    k = int(link.et_to_kineto[pos])
    assert "Input Dims" not in kt.args(k)
    assert op_roofline(kt, k) is None
    c, r = op_roofline(kt, k, et_node=et.node(pos))
    assert c.flops == 2 * 512 * 1024 * 1024 + 512 * 1024
    assert c.bytes == (512 * 1024 + 1024 * 1024 + 1024 + 512 * 1024) * 4
    assert (r.device, r.compute_type) == ("RTX 2080 Ti", "fp32")
    assert api.op_roofline_metrics(k, lt).flops == c.flops
