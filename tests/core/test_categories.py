"""Kernel categories on real NVIDIA and AMD kernel names, plus user rule files.

The GPU event names come from the shared Kineto traces (read in place, never copied);
every expectation below was checked by listing each trace's distinct
(name, kind) pairs and reading them.
"""

from __future__ import annotations

import gzip
import os
from collections import Counter
from functools import lru_cache
from pathlib import Path

import orjson
import pytest

from tracetui.analysis.categories import (
    DEFAULT_CATEGORIES,
    ENV_VAR,
    FALLBACK_CATEGORY,
    CategoryRule,
    KernelCategorizer,
    default_rules,
    get_categorizer,
    load_rules,
    normalize_kind,
    user_rules_location,
)
from tracetui.errors import TraceFileError, TraceFormatError

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces" / "kineto"
GPU_CATS = {"kernel": "kernel", "Kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}

needs_traces = pytest.mark.skipif(not TRACES.is_dir(), reason="shared traces not available")


@lru_cache(maxsize=None)
def gpu_events(trace: str) -> Counter[tuple[str, str]]:
    """(name, kind) -> number of GPU events (kernel/memcpy/memset) in a shared trace."""
    data = orjson.loads(gzip.decompress((TRACES / f"{trace}.json.gz").read_bytes()))
    events = data["traceEvents"] if isinstance(data, dict) else data
    return Counter(
        (ev.get("name", ""), GPU_CATS[ev["cat"]]) for ev in events if ev.get("cat") in GPU_CATS
    )


def by_category(trace: str) -> Counter[str]:
    cat = get_categorizer_defaults()
    out: Counter[str] = Counter()
    for (name, kind), n in gpu_events(trace).items():
        out[cat.categorize(name, kind)] += n
    return out


@lru_cache(maxsize=1)
def get_categorizer_defaults() -> KernelCategorizer:
    return KernelCategorizer(default_rules())


@pytest.fixture(autouse=True)
def _no_user_config(monkeypatch, tmp_path):
    """Tests never see the developer's own rule files."""
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))


# (trace, a substring that picks exactly one distinct GPU event name in it, category)
REAL_NAMES = [
    # --- NVIDIA: H100 BERT inference
    ("h100_bert_inference", "cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm", "gemm"),
    ("h100_bert_inference", "s16816gemm_relu_bf16_64x64", "gemm"),
    ("h100_bert_inference", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64", "gemm"),
    ("h100_bert_inference", "pytorch_flash::flash_fwd_kernel", "attention_fwd"),
    ("h100_bert_inference", "vectorized_layer_norm_kernel<c10::BFloat16", "normalization"),
    ("h100_bert_inference", "GeluCUDAKernelImpl", "elementwise"),
    ("h100_bert_inference", "indexSelectLargeIndex", "memory"),
    ("h100_bert_inference", "and_kernel_cuda", "reduction"),
    ("h100_bert_inference", "Memcpy DtoH (Device -> Pinned)", "memory"),
    # --- NVIDIA: H100 Qwen decode
    ("h100_qwen_chat_inference", "Memset (Device)", "memory"),
    ("h100_qwen_chat_inference", "cutlass_80_simt_sgemm_128x32_8x5_nn_align1", "gemm"),
    ("h100_qwen_chat_inference", "bfloat16_copy_kernel_cuda", "memory"),
    ("h100_qwen_chat_inference", "CatArrayBatchedCopy<at::native::(anonymous namespace)::OpaqueType<2u>", "memory"),
    ("h100_qwen_chat_inference", "MeanOps<float, float, float, float>", "reduction"),
    ("h100_qwen_chat_inference", "silu_kernel", "elementwise"),
    # --- NVIDIA: B200 vLLM eager
    ("b200x8_eager", "nvjet_tst_144x128_64x6_2x1_v_bz_bias_TNN", "gemm"),
    ("b200x8_eager", "bmm_MxE4m3_MxE2m1MxE4m3", "gemm"),
    ("b200x8_eager", "fmhaSm100aKernel_QkvE4m3OBfloat16H64PagedKvCausal", "attention_fwd"),
    ("b200x8_eager", "vllm::reshape_and_cache_flash_kernel", "memory"),
    ("b200x8_eager", "multimem_all_reduce_kernel", "communication"),
    ("b200x8_eager", "ncclDevKernel_AllGather_RING_LL", "communication"),
    ("b200x8_eager", "vllm::fused_add_rms_norm_kernel", "normalization"),
    ("b200x8_eager", "vllm::rotary_embedding_kernel", "elementwise"),
    # its parameter list mentions flashinfer:: but it is a quantization kernel, not attention
    ("b200x8_eager", "tensorrt_llm::kernels::quantize_with_block_size", "elementwise"),
    ("b200x8_eager", "triton_poi_fused_add_bitwise_and", "triton"),
    ("b200x8_eager", "vectorized_gather_kernel", "memory"),
    ("b200x8_eager", "FillFunctor<c10::BFloat16>", "memory"),
    # MoE routing: deliberately left in "other" (see docs/categories.md)
    ("b200x8_eager", "routingIndicesHistogramKernel", "other"),
    # --- NVIDIA: A100 CUDA graph + NCCL, DLRM-style
    ("a100_cudagraph_nccl_rank0", "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t", "communication"),
    ("a100_cudagraph_nccl_rank0", "cutlass_80_tensorop_s1688gemm_256x128_32x3_nn_align1", "gemm"),
    ("a100_cudagraph_nccl_rank0", "ampere_sgemm_128x64_nn", "gemm"),
    ("a100_cudagraph_nccl_rank0", "gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 2, 2", "gemm"),
    ("a100_cudagraph_nccl_rank0", "triton__0d1d2d3d4d5d6d7d8d9d10d11d12d13d14", "triton"),
    ("a100_cudagraph_nccl_rank0", "AdamFunctor<float>", "elementwise"),
    ("a100_cudagraph_nccl_rank0", "cub::DeviceScanInitKernel", "reduction"),
    # fbgemm is not GEMM
    ("a100_cudagraph_nccl_rank0", "fbgemm_gpu::permute_2D_lengths_kernel", "memory"),
    ("a100_cudagraph_nccl_rank0", "bounds_check_indices_kernel", "other"),
    ("a100_cudagraph_nccl_rank0", "Memset (Unknown)", "memory"),
    # --- NVIDIA: V100 x2 NCCL
    ("v100x2_nccl_216k", "ncclKernel_AllReduce_RING_LL_Sum_float", "communication"),
    ("v100x2_nccl_216k", "volta_sgemm_128x32_nt", "gemm"),
    ("v100x2_nccl_216k", "epilogue::impl::globalKernel", "gemm"),
    ("v100x2_nccl_216k", "splitKreduce_kernel<float, float, float, float, true, false, false>", "gemm"),
    ("v100x2_nccl_216k", "magma_sgemmEx_kernel", "gemm"),
    ("v100x2_nccl_216k", "WelfordOps", "reduction"),
    ("v100x2_nccl_216k", "sigmoid_backward_kernel_cuda", "elementwise"),
    # --- NVIDIA: V100 cuDNN training (conv, batch norm, softmax)
    ("v100_ns_timestamps_fwdbwd", "cudnn_infer_volta_scudnn_128x64_relu_medium_nn_v1", "conv"),
    ("v100_ns_timestamps_fwdbwd", "winogradForwardData4x4", "conv"),
    ("v100_ns_timestamps_fwdbwd", "cask_cudnn_infer::computeBOffsetsKernel", "conv"),
    ("v100_ns_timestamps_fwdbwd", "wgrad_alg0_engine<float, 128, 6, 7", "conv"),
    ("v100_ns_timestamps_fwdbwd", "cudnn::detail::dgrad_engine", "conv"),
    ("v100_ns_timestamps_fwdbwd", "cudnn::bn_fw_tr_1C11_singleread", "normalization"),
    ("v100_ns_timestamps_fwdbwd", "cudnn::bn_bw_1C11_kernel_new<float, float, float2, 32", "normalization"),
    ("v100_ns_timestamps_fwdbwd", "cudnn::ops::nchwToNhwcKernel", "memory"),
    ("v100_ns_timestamps_fwdbwd", "softmax_warp_forward", "softmax"),
    ("v100_ns_timestamps_fwdbwd", "softmax_warp_backward", "softmax"),
    ("v100_ns_timestamps_fwdbwd", "max_pool_forward_nchw", "reduction"),
    ("v100_old_flow_format_cudagraph", "GammaBetaBackwardCUDAKernel", "normalization"),
    ("v100_old_flow_format_cudagraph", "layer_norm_grad_input_kernel", "normalization"),
    # --- NVIDIA: Triton via cuLaunchKernel
    ("a100_triton", "triton_poi_fused_add_cos_sin_0", "triton"),
    # --- AMD: MI300X ResNet training
    ("mi300_resnet_train_checkpointing", "Cijk_Ailk_Bljk_BBS_BH_MT64x64x64_MI16x16x16x1", "gemm"),
    ("mi300_resnet_train_checkpointing",
     "Cijk_Alik_Bljk_BBS_BH_Bias_HAS_SAV_UserArgs_MT16x16x256_MI16x16x1_SN_LDSB1_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA8_GRVWB8_GSUAMB_", "gemm"),
    ("mi300_resnet_train_checkpointing", "igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1_bt128x128x32", "conv"),
    ("mi300_resnet_train_checkpointing", "igemm_wrw_gtcx3_nhwc_bf16_bx0_ex1_bt64x64x64", "conv"),
    ("mi300_resnet_train_checkpointing", "kernel_grouped_conv_fwd_multiple_abd_xdl_cshuffle", "conv"),
    # CK conv backward-weight (28 + 16 events): "gemm" in the name, but a convolution
    ("mi300_resnet_train_checkpointing", "PassThroughES26_S26_Li64ELi64ELi4ELi32ELi32ELi8ELi2ELi2E", "conv"),
    ("mi300_resnet_train_checkpointing", "PassThroughES26_S26_Li64ELi32ELi4ELi32ELi32ELi8ELi2ELi1E", "conv"),
    ("mi300_resnet_train_checkpointing", "batch_norm_collect_statistics_kernel", "normalization"),
    ("mi300_resnet_train_checkpointing", "batch_norm_update_stats_and_invert", "normalization"),
    ("mi300_resnet_train_checkpointing", "batched_transpose_16x32_half", "memory"),
    ("mi300_resnet_train_checkpointing", "transpose_NCHW2CNHW_V2_2D_WG_off64", "memory"),
    ("mi300_resnet_train_checkpointing", "SubTensorOpWithScalar1d", "elementwise"),
    ("mi300_resnet_train_checkpointing", "ncclDevKernel_Generic", "communication"),
    ("mi300_resnet_train_checkpointing", "Memcpy DtoD (Device -> Device)", "memory"),
    ("mi300_resnet_train_checkpointing", "Memset (Device)", "memory"),
    # --- AMD: MI210 (no cpu_op)
    ("mi210_gpu_only", "igemm_bwd_gtcx2_nhwc_bf16_bx0_ex1_bt128x128x32", "conv"),
    ("mi210_gpu_only", "batched_transpose_64x64_pack_4x4_ediv_4x4_half", "memory"),
    ("mi210_gpu_only", "batch_norm_backward_kernel", "normalization"),
    ("mi210_gpu_only", "Cijk_Ailk_Bjlk_BBS_BH_Bias_HAS_SAV_UserArgs_MT128x64x32", "gemm"),
    # --- AMD: vLLM with HIP graphs
    ("amd_vllm_hipgraph", "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x192x64", "gemm"),
    ("amd_vllm_hipgraph", "Rmsnorm2dFusedAddEnumE1E", "normalization"),
    ("amd_vllm_hipgraph", "kernel_unified_attention_2d", "attention_fwd"),
    ("amd_vllm_hipgraph", "vllm::reshape_and_cache_flash_kernel<__hip_bfloat16", "memory"),
    ("amd_vllm_hipgraph", "triton_poi_fused__to_copy_1", "triton"),
    ("amd_vllm_hipgraph", "_matmul_ogs_NNT_bf16xbf16xmxfp4_128x128x128x1_swiglu", "gemm"),
    ("amd_vllm_hipgraph", "_sum_bitmatrix_rows", "reduction"),
    ("amd_vllm_hipgraph", "_topk_forward", "other"),
]


@pytest.mark.slow
@needs_traces
@pytest.mark.parametrize(("trace", "needle", "expected"), REAL_NAMES, ids=[f"{t}:{n[:40]}" for t, n, _ in REAL_NAMES])
def test_real_names(trace, needle, expected):
    matches = {(name, kind) for name, kind in gpu_events(trace) if needle in name}
    assert len(matches) == 1, f"{needle!r} should pick one distinct name in {trace}, got {len(matches)}"
    ((name, kind),) = matches
    assert get_categorizer().categorize(name, kind) == expected


def test_real_names_cover_both_vendors_and_all_categories():
    amd = {"mi300_resnet_train_checkpointing", "mi210_gpu_only", "amd_vllm_hipgraph"}
    assert sum(t in amd for t, _, _ in REAL_NAMES) >= 20
    assert sum(t not in amd for t, _, _ in REAL_NAMES) >= 20
    seen = {c for _, _, c in REAL_NAMES}
    assert seen >= set(DEFAULT_CATEGORIES) - {"attention_bwd"}  # no backward attention in these traces


@needs_traces
def test_h100_bert_inference_counts_by_category():
    # 61 GPU events: 60 kernels + 1 memcpy.  gemm: 17 wmma + 4 relu + 1 256x128 cutlass,
    # 4 sm90_xmma (cuBLAS); elementwise: 10 add + 5 gelu + 1 compare; 10 layer norms;
    # 4 flash forward; memory: 3 indexSelect (embedding) + 1 memcpy; 1 reduce (all()).
    assert by_category("h100_bert_inference") == Counter(
        {"gemm": 26, "elementwise": 16, "normalization": 10, "attention_fwd": 4, "memory": 4, "reduction": 1}
    )


@needs_traces
def test_mi300_counts_by_category():
    assert by_category("mi300_resnet_train_checkpointing") == Counter(
        {"memory": 1677, "elementwise": 1066, "normalization": 548, "conv": 285, "gemm": 40,
         "reduction": 20, "communication": 17}
    )


# Share of GPU events (kernels + memcpy + memset) that fall into "other", measured.
OTHER_SHARE = [
    ("v100x2_nccl_216k", 22290, 0),
    ("a100_cudagraph_nccl_rank0", 7747, 100),  # cub radix sort, fbgemm TBE embedding kernels
    ("v100_old_flow_format_cudagraph", 15632, 196),  # same DLRM families
    ("v100_ns_timestamps_fwdbwd", 6095, 0),
    ("mi300_resnet_train_checkpointing", 3653, 0),
    ("h100_qwen_chat_inference", 1707, 0),
    ("mi210_gpu_only", 562, 0),
]


@pytest.mark.slow
@needs_traces
@pytest.mark.parametrize(("trace", "total", "other"), OTHER_SHARE, ids=[t for t, _, _ in OTHER_SHARE])
def test_other_is_small_on_large_traces(trace, total, other):
    counts = by_category(trace)
    assert sum(counts.values()) == total
    assert counts[FALLBACK_CATEGORY] == other
    assert other / total < 0.02


@needs_traces
@pytest.mark.parametrize("trace", ["b200x8_eager", "amd_vllm_hipgraph"])
def test_other_on_moe_traces_is_only_moe_routing(trace):
    # 144/929 (b200) and 48/423 (amd vllm) events are MoE routing / top-k / finalize
    # kernels; no default category fits them, so they stay "other" on purpose.
    cat = get_categorizer()
    others = {name for (name, kind) in gpu_events(trace) if cat.categorize(name, kind) == "other"}
    moe = ("moe::dev::routing::", "moe::dev::finalize::", "_topk_forward", "_combined_routing_compute")
    assert others and all(any(m in name for m in moe) for name in others), others
    assert by_category(trace)["other"] == {"b200x8_eager": 144, "amd_vllm_hipgraph": 48}[trace]


# Names that do not occur in the shared traces, written from the libraries' naming schemes.
KNOWN_FAMILIES = [
    ("void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<64, 128, 128, 8, 4, 4, 4, false, false, cutlass::bfloat16_t>, false, false, false>(pytorch_flash::Flash_bwd_params)", "attention_bwd"),
    ("void pytorch_flash::flash_bwd_convert_dq_kernel<Flash_bwd_kernel_traits<64>>(pytorch_flash::Flash_bwd_params)",
     "attention_bwd"),
    ("void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::half_t>>(flash::Flash_fwd_params)", "attention_fwd"),
    ("fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::bfloat16_t, cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)", "attention_fwd"),
    ("fmha_cutlassB_bf16_aligned_64x64_k64_sm80(PyTorchMemEffAttention::AttentionBackwardKernel<cutlass::arch::Sm80, cutlass::bfloat16_t, true, false, true, 64, 64, 64, false>::Params)", "attention_bwd"),
    ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x64x128_4x1x1_kernel0_0", "attention_fwd"),
    ("cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_7_64x128x128_4x1x1_kernel0_0", "attention_bwd"),
    ("_ZN7ck_tile6kentryILi64ENS_13FmhaFwdKernelINS_26BlockFmhaPipelineQRKSVSAsyncE", "attention_fwd"),
    ("_ZN7ck_tile6kentryILi64ENS_19FmhaBwdDQDKDVKernelINS_27BlockFmhaBwdDQDKDVPipelineE", "attention_bwd"),
    ("_ZN5aiter18fmha_bwd_hd128_bf16_a32_psskE", "attention_bwd"),
    ("void flashinfer::BatchPrefillWithPagedKVCacheKernel<128u, 4u, 1u>(flashinfer::Params)", "attention_fwd"),
    ("void vllm::paged_attention_v2_kernel<__nv_bfloat16, 128, 16, 128>(float*)", "attention_fwd"),
    ("sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16_stage4_warpsize2x2x1_g1_tensor16x8x8_kernel", "conv"),
    ("sm86_xmma_wgrad_implicit_gemm_indexed_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize64x64x64_kernel", "conv"),
    ("void implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, false, false, true>(int, int, int, float const*)", "conv"),
    ("void cutlass::Kernel<cutlass_tensorop_h1688dgrad_optimized_f16_128x128_32x2_nhwc>(Params)", "conv"),
    ("MIOpenConvUni", "conv"),
    ("miopenSp3AsmConv_v21_1_3_gfx9_fp32_stride1", "conv"),
    ("MIOpenBatchNormFwdTrainSpatial", "normalization"),
    ("void at::native::(anonymous namespace)::conv_depthwise2d_forward_kernel<3, float, int>(float const*)", "conv"),
    ("void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int, int>>>(Params)",
     "gemm"),
    ("rocblas_gemm_ex_kernel", "gemm"),
    ("void hipblaslt_ext::gemm_kernel<__hip_bfloat16>(Args)", "gemm"),
    ("void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals)", "communication"),
    ("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "communication"),
    ("rcclAllReduceKernel", "communication"),
    ("triton_tem_fused_addmm_0", "triton"),
    ("triton_red_fused_native_layer_norm_0", "triton"),
    ("triton_per_fused__softmax_0", "triton"),
    ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)", "softmax"),
    ("void at::native::(anonymous namespace)::cunn_SoftMaxBackward<4, float, float, float, at::native::(anonymous namespace)::LogSoftMaxBackwardEpilogue>(float*)", "softmax"),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::NormTwoOps<float, float, float>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::NormTwoOps<float, float, float>, unsigned int, float, 4>)", "reduction"),
    ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<1>, at::native::(anonymous namespace)::LpNormFunctor<float, (at::native::(anonymous namespace)::NormType)1, float, float>, float*, int>(int)", "reduction"),
    ("void at::native::(anonymous namespace)::RowwiseMomentsCUDAKernel<float, float>(long, float, float const*, float*, float*)", "normalization"),
    ("void at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel<float, 4, at::native::templates::cuda::normal_and_transform<float, float>>(int)", "elementwise"),
    ("void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel<c10::BFloat16>, true>(c10::BFloat16*)",
     "elementwise"),
    ("void at::native::_scatter_gather_elementwise_kernel<128, 4, at::native::_cuda_scatter_gather_internal_kernel<true, float>>(int)", "memory"),
]


@pytest.mark.parametrize(("name", "expected"), KNOWN_FAMILIES, ids=[n[:50] for n, _ in KNOWN_FAMILIES])
def test_known_families(name, expected):
    assert get_categorizer().categorize(name) == expected


@pytest.mark.parametrize(
    "name",
    [
        "void at::native::(anonymous namespace)::convert_indices_from_coo_to_csr_cuda_kernel<int, long>(int*)",
        "void at::native::vectorized_elementwise_kernel<4, at::native::normal_kernel<float>>(int)",
        "void moe::dev::routing::routingRenormalize::routingIndicesOffsetsKernel<int>(int)",
        "void at::native::vectorized_gather_kernel<16, long>(char*)",
    ],
)
def test_word_traps(name):
    """'convert' is not conv, 'normal' is not a norm layer, 'Renormalize' is not a reduction,
    'vectorized_gather' is not an all-gather."""
    cat = get_categorizer().categorize(name)
    assert cat not in {"conv", "normalization", "reduction", "communication"}


def test_kinds_and_blank_names():
    cat = get_categorizer()
    # memcpy/memset events are memory whatever their name (AMD traces can carry blank names)
    assert cat.categorize("", "memcpy") == "memory"
    assert cat.categorize("", "gpu_memset") == "memory"
    assert cat.categorize("", "kernel") == "other"
    assert cat.categorize("Memcpy HtoD (Pinned -> Device)", "gpu_memcpy") == "memory"
    assert normalize_kind("gpu_memcpy") == "memcpy"
    assert normalize_kind("Kernel") == "kernel"

    class Kind:  # stands in for an enum member such as tracetui.kineto.kinds.Kind.MEMSET
        name = "MEMSET"

    assert normalize_kind(Kind()) == "memset"
    assert cat.categorize("anything", Kind()) == "memory"


def test_first_match_wins_and_kind_restriction():
    cat = KernelCategorizer(
        [
            CategoryRule("a", "foo"),
            CategoryRule("b", "foo|bar"),
            CategoryRule("c", "baz", frozenset({"memcpy"})),
        ]
    )
    assert cat.categorize("xFOOx") == "a"  # case-insensitive search, first rule wins
    assert cat.categorize("bar") == "b"
    assert cat.categorize("baz") == "other"  # rule c only applies to memcpy
    assert cat.categorize("baz", "memcpy") == "c"
    assert cat.categories == ("a", "b", "c", "other")
    assert cat.categorize_many(["foo", "baz", "baz"], ["kernel", "kernel", "memcpy"]) == ["a", "other", "c"]
    with pytest.raises(ValueError):
        cat.categorize_many(["foo"], [])
    with pytest.raises(ValueError, match="rule 1"):
        KernelCategorizer([CategoryRule("x", "(")])


def test_cache_is_per_name_and_kind():
    cat = KernelCategorizer([CategoryRule("m", "x", frozenset({"memset"}))])
    assert cat.categorize("x", "kernel") == "other"
    assert cat.categorize("x", "memset") == "m"
    names = ["x"] * 100_000
    assert set(cat.categorize_many(names, ["memset"] * len(names))) == {"m"}
    assert len(cat._cache) == 2


def test_default_rules_are_packaged_and_valid():
    rules = default_rules()
    assert rules and all(isinstance(r, CategoryRule) for r in rules)
    assert {r.category for r in rules} == set(DEFAULT_CATEGORIES) - {FALLBACK_CATEGORY}
    assert rules[0] == CategoryRule("memory", ".*", frozenset({"memcpy", "memset"}))
    assert get_categorizer().categories == tuple(dict.fromkeys(r.category for r in rules)) + ("other",)


# ---------------------------------------------------------------- user rule files

LAYER_NORM = (
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>"
    "(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)"
)


def write(tmp_path: Path, text: str, name: str = "cats.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@needs_traces
def test_user_rule_goes_before_defaults(tmp_path):
    assert (LAYER_NORM, "kernel") in gpu_events("h100_bert_inference")
    path = write(
        tmp_path,
        """
        [[rule]]
        category = "my_layer_norm"
        pattern = 'layer_norm'
        kinds = ["kernel"]
        """,
    )
    rules = load_rules(path)
    assert rules == [CategoryRule("my_layer_norm", "layer_norm", frozenset({"kernel"}))]
    cat = get_categorizer(path)
    assert cat.categorize(LAYER_NORM) == "my_layer_norm"
    assert cat.rules[1:] == tuple(default_rules())
    counts = Counter()
    for (name, kind), n in gpu_events("h100_bert_inference").items():
        counts[cat.categorize(name, kind)] += n
    assert counts["my_layer_norm"] == 10 and counts["normalization"] == 0 and counts["gemm"] == 26


def test_replace_defaults(tmp_path):
    path = write(
        tmp_path,
        """
        replace_defaults = true
        [[rule]]
        category = "norm"
        pattern = "norm"
        """,
    )
    cat = get_categorizer(str(path))
    assert cat.rules == (CategoryRule("norm", "norm"),)
    assert cat.categorize(LAYER_NORM) == "norm"
    assert cat.categorize("Memcpy DtoD (Device -> Device)", "memcpy") == "other"
    assert cat.categorize("volta_sgemm_128x32_nt") == "other"


def test_env_var_and_xdg_config(tmp_path, monkeypatch):
    assert user_rules_location() is None
    xdg = tmp_path / "xdg"
    (xdg / "tracetui").mkdir(parents=True)
    (xdg / "tracetui" / "categories.toml").write_text('[[rule]]\ncategory = "from_xdg"\npattern = "layer_norm"\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    assert get_categorizer().categorize(LAYER_NORM) == "from_xdg"

    env_file = write(tmp_path, '[[rule]]\ncategory = "from_env"\npattern = "layer_norm"\n', "env.toml")
    monkeypatch.setenv(ENV_VAR, str(env_file))
    assert get_categorizer().categorize(LAYER_NORM) == "from_env"
    # an explicit path beats both
    explicit = write(tmp_path, '[[rule]]\ncategory = "explicit"\npattern = "layer_norm"\n', "explicit.toml")
    assert get_categorizer(explicit).categorize(LAYER_NORM) == "explicit"

    monkeypatch.setenv(ENV_VAR, str(tmp_path / "missing.toml"))
    with pytest.raises(TraceFileError, match="missing.toml"):
        get_categorizer()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[[rule]]\ncategory = "a"\npattern = "ok"\n[[rule]]\ncategory = "b"\npattern = "(unclosed"\n',
         r"at rule 2: bad regex"),
        ('[[rule]]\ncategory = "a"\n', r"at rule 1: missing 'pattern'"),
        ('[[rule]]\npattern = "x"\n', r"at rule 1: missing 'category'"),
        ('[[rule]]\ncategory = "a"\npattern = "x"\nkinds = ["kernels"]\n', r"at rule 1: unknown kind 'kernels'"),
        ('[[rule]]\ncategory = "a"\npattern = "x"\nkinds = "kernel"\n', r"at rule 1: 'kinds' must be"),
        ('[[rule]]\ncategory = "a"\npatern = "x"\n', r"at rule 1: unknown key 'patern'"),
        ('[[rule]]\ncategory = "My Cat"\npattern = "x"\n', r"at rule 1: category 'My Cat' must be a lowercase"),
        ('[[rule]]\ncategory = "a"\npattern = 3\n', r"at rule 1: 'pattern' must be a string"),
        ('replace_defaults = "yes"\n', r"'replace_defaults' must be true or false"),
        ('rule = "x"\n', r"'rule' must be an array of tables"),
        ("[[rule]\ncategory = 'a'\n", r"not valid TOML"),
    ],
)
def test_bad_rule_files(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(TraceFormatError, match=message) as info:
        load_rules(path)
    text_msg = str(info.value)
    assert text_msg.startswith(str(path)) and "\n" not in text_msg
    with pytest.raises(TraceFormatError):
        get_categorizer(path)


def test_missing_and_unreadable_files(tmp_path):
    with pytest.raises(TraceFileError, match="not found"):
        load_rules(tmp_path / "nope.toml")
    with pytest.raises(TraceFileError):
        get_categorizer(tmp_path / "nope.toml")
    with pytest.raises(TraceFormatError, match="not valid TOML"):
        load_rules(_binary(tmp_path))


def _binary(tmp_path: Path) -> Path:
    path = tmp_path / "bin.toml"
    path.write_bytes(b"\xff\xfe\x00garbage")
    return path


def test_empty_file_gives_defaults(tmp_path):
    path = write(tmp_path, "# nothing yet\n")
    assert load_rules(path) == []
    assert get_categorizer(path).rules == tuple(default_rules())


def test_env_var_blank_is_ignored(monkeypatch):
    monkeypatch.setenv(ENV_VAR, "  ")
    assert user_rules_location() is None
    assert get_categorizer().rules == tuple(default_rules())
    assert os.environ[ENV_VAR] == "  "
