"""FLOPs and bytes of a PyTorch op from its input shapes and dtypes (docs/roofline.md).

Input: the op's name and, per input, its shape (Kineto ``Input Dims`` or the ET's input
shapes), its type (``Input type``: ``c10::BFloat16``, ``float``, ``Scalar``, ...) and, where
needed, its value (``Concrete Inputs``: stride, padding, dilation, groups of a convolution).
Output: an :class:`OpCost` (floating-point operations, bytes read + written once each, the
compute type whose peak bounds it), or None when the op is not one of those below or its
shapes are missing.

Counted (multiply-add = 2 FLOPs):

* ``mm`` [M,K]x[K,N]: 2·M·N·K; ``addmm`` adds M·N for the bias; ``bmm`` [B,M,K]x[B,K,N]:
  2·B·M·N·K; ``baddbmm`` adds B·M·N; ``matmul`` (broadcast batch) and ``linear``
  (x [...,K], weight [N,K], bias [N]: 2·rows·N·K (+ rows·N)).
* convolution forward (``convolution``, ``_convolution``, ``conv1d/2d/3d``,
  ``cudnn_convolution``, ``miopen_convolution``): 2·N·C_out·prod(out)·(C_in/groups)·prod(kernel)
  (+ N·C_out·prod(out) with a bias); out = floor((in + 2·pad − dil·(k−1) − 1)/stride) + 1.
  ``convolution_backward``: the same product once per gradient asked for (input, weight) and
  N·C_out·prod(out) for the bias gradient (``output_mask``).
* attention (``scaled_dot_product_attention``, ``_scaled_dot_product_*_attention``,
  ``_flash_attention_forward``, ``_efficient_attention_forward``): 4·B·H·S_q·S_k·D (Q·Kᵀ and
  P·V), backward 2.5x the forward (FlashAttention's convention); causal masks are not halved.
* elementwise ops (add, mul, gelu, silu, ...): 1 FLOP per output element; layer norm 5, RMS
  norm 4, softmax 5 per element (conventions of the roofline literature, not measurements).

Bytes: every tensor input read once and the output written once (no reuse, no cache), so
arithmetic intensity is the ideal one of the op.  Elementwise ops: an ``out=`` tensor (an input
past the functional form's arguments) is written, not read; ``fill_``/``zero_`` only write;
a broadcast (stride-0) dimension of an input is read once.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

#: bytes per element of the Kineto / ET type names
ITEMSIZE = {
    "float": 4, "double": 8, "c10::Half": 2, "c10::BFloat16": 2, "long int": 8, "int": 4, "short int": 2,
    "signed char": 1, "unsigned char": 1, "bool": 1, "c10::Float8_e4m3fn": 1, "c10::Float8_e5m2": 1,
    "c10::Float8_e4m3fnuz": 1, "c10::Float8_e5m2fnuz": 1, "c10::complex<float>": 8, "c10::complex<double>": 16,
    "Half": 2, "BFloat16": 2, "Float": 4, "Double": 8, "Long": 8, "Int": 4, "Bool": 1,
}
#: compute type (device table key) of a matmul-like op by its input dtype
COMPUTE_TYPE = {"float": "fp32", "double": "fp64", "c10::Half": "fp16", "c10::BFloat16": "bf16",
                "c10::Float8_e4m3fn": "fp8", "c10::Float8_e5m2": "fp8", "c10::Float8_e4m3fnuz": "fp8",
                "c10::Float8_e5m2fnuz": "fp8", "signed char": "int8"}


@dataclass(frozen=True)
class OpCost:
    flops: int
    bytes: int  #: read + written, each tensor once
    compute_type: str  #: the device-table key whose peak bounds the op (fp32 for non-matmul ops)
    family: str  #: gemm, conv, attention, elementwise, norm, softmax
    formula: str  #: how ``flops`` was counted, with the numbers


def _base(name: str) -> str:
    """``aten::addmm`` -> ``addmm``; ``_C::fused_add_rms_norm`` -> ``fused_add_rms_norm``."""
    return name.rsplit("::", 1)[-1]


def _is_shape(d: Any) -> bool:
    return isinstance(d, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in d)


def _numel(d: list[int]) -> int:
    return math.prod(d) if d else 1


class _Inputs:
    """Tensor inputs of an op: shapes, types and concrete values, position by position."""

    def __init__(self, dims: Any, types: Any, concrete: Any = None, strides: Any = None):
        self.strides = strides if isinstance(strides, list) else []
        self.dims = dims if isinstance(dims, list) else []
        self.types = types if isinstance(types, list) else []
        self.concrete = concrete if isinstance(concrete, list) else []

    def tensor(self, i: int) -> list[int] | None:
        """Shape of input ``i`` when it is a tensor (a dtype we know), else None."""
        if i >= len(self.dims) or i >= len(self.types) or self.types[i] not in ITEMSIZE:
            return None
        d = self.dims[i]
        return d if _is_shape(d) else None

    def itemsize(self, i: int) -> int:
        return ITEMSIZE.get(self.types[i], 4) if i < len(self.types) else 4

    def nbytes(self, i: int) -> int:
        t = self.tensor(i)
        return 0 if t is None else _numel(t) * self.itemsize(i)

    def read_bytes(self, i: int) -> int:
        """Bytes of input ``i`` a kernel reads: dimensions of stride 0 (expanded, broadcast
        views, per ``Input Strides``) are read once, not once per index."""
        t = self.tensor(i)
        if t is None:
            return 0
        st = self.strides[i] if i < len(self.strides) else None
        if _is_shape(st) and len(st) == len(t):
            return _numel([d for d, s in zip(t, st) if s != 0]) * self.itemsize(i)
        return _numel(t) * self.itemsize(i)

    def tensor_bytes(self) -> int:
        return sum(self.nbytes(i) for i in range(len(self.dims)))

    def dtype(self, i: int = 0) -> str:
        return self.types[i] if i < len(self.types) else ""

    def ints(self, i: int) -> list[int] | None:
        """A concrete int list ("[2, 2]") or int ("1") at position ``i``."""
        if i >= len(self.concrete):
            return None
        v = self.concrete[i]
        if isinstance(v, str):
            nums = re.findall(r"-?\d+", v)
            if not nums or re.search(r"[^\d\s,\[\]-]", v):
                return None
            return [int(x) for x in nums]
        if isinstance(v, int) and not isinstance(v, bool):
            return [v]
        if _is_shape(v):
            return v
        return None

    def flag(self, i: int) -> bool | None:
        v = self.concrete[i] if i < len(self.concrete) else None
        return {"True": True, "False": False, True: True, False: False}.get(v) if not isinstance(v, list) else None


def _ctype(inp: _Inputs, i: int = 0) -> str:
    return COMPUTE_TYPE.get(inp.dtype(i), "fp32")


def _gemm(name: str, inp: _Inputs) -> OpCost | None:
    b = _base(name)
    if b in ("mm", "addmm"):
        off = 1 if b == "addmm" else 0
        a, w = inp.tensor(off), inp.tensor(off + 1)
        if a is None or w is None or len(a) != 2 or len(w) != 2 or a[1] != w[0]:
            return None
        m, k, n = a[0], a[1], w[1]
        fl, txt = 2 * m * n * k, f"2·M·N·K = 2·{m}·{n}·{k}"
        if b == "addmm":
            fl, txt = fl + m * n, txt + f" + M·N (bias) = {m}·{n}"
        out = m * n * inp.itemsize(off)
        return OpCost(fl, inp.tensor_bytes() + out, _ctype(inp, off), "gemm", txt)
    if b in ("bmm", "baddbmm"):
        off = 1 if b == "baddbmm" else 0
        a, w = inp.tensor(off), inp.tensor(off + 1)
        if a is None or w is None or len(a) != 3 or len(w) != 3 or a[2] != w[1]:
            return None
        bs, m, k, n = a[0], a[1], a[2], w[2]
        fl, txt = 2 * bs * m * n * k, f"2·B·M·N·K = 2·{bs}·{m}·{n}·{k}"
        if b == "baddbmm":
            fl, txt = fl + bs * m * n, txt + f" + B·M·N = {bs}·{m}·{n}"
        return OpCost(fl, inp.tensor_bytes() + bs * m * n * inp.itemsize(off), _ctype(inp, off), "gemm", txt)
    if b == "matmul":
        a, w = inp.tensor(0), inp.tensor(1)
        if not a or not w or a[-1] != (w[-2] if len(w) > 1 else w[0]):
            return None
        k = a[-1]
        m = a[-2] if len(a) > 1 else 1
        n = w[-1] if len(w) > 1 else 1
        try:
            batch = _numel(list(_broadcast(a[:-2], w[:-2])))
        except ValueError:
            return None
        fl = 2 * batch * m * n * k
        return OpCost(fl, inp.tensor_bytes() + batch * m * n * inp.itemsize(0), _ctype(inp), "gemm",
                      f"2·batch·M·N·K = 2·{batch}·{m}·{n}·{k}")
    if b == "linear":
        x, w = inp.tensor(0), inp.tensor(1)
        if not x or w is None or len(w) != 2 or x[-1] != w[1]:
            return None
        rows, k, n = _numel(x[:-1]), w[1], w[0]
        fl, txt = 2 * rows * n * k, f"2·rows·N·K = 2·{rows}·{n}·{k}"
        if inp.tensor(2):
            fl, txt = fl + rows * n, txt + f" + rows·N (bias) = {rows}·{n}"
        return OpCost(fl, inp.tensor_bytes() + rows * n * inp.itemsize(0), _ctype(inp), "gemm", txt)
    return None


def _broadcast(a: list[int], b: list[int]) -> list[int]:
    n = max(len(a), len(b))
    a, b = [1] * (n - len(a)) + list(a), [1] * (n - len(b)) + list(b)
    out = []
    for x, y in zip(a, b):
        if x != y and 1 not in (x, y):
            raise ValueError("shapes do not broadcast")
        out.append(max(x, y))
    return out


#: conv forward schemas: name -> (stride, padding, dilation, groups, transposed) argument positions
_CONV_ARGS = {
    "convolution": (3, 4, 5, 8, 6), "_convolution": (3, 4, 5, 8, 6),
    "conv1d": (3, 4, 5, 6, None), "conv2d": (3, 4, 5, 6, None), "conv3d": (3, 4, 5, 6, None),
    "cudnn_convolution": (3, 2, 4, 5, None), "miopen_convolution": (4, 3, 5, 6, None),
}


def _conv(name: str, inp: _Inputs) -> OpCost | None:
    b = _base(name)
    if b == "convolution_backward":
        go, x, w = inp.tensor(0), inp.tensor(1), inp.tensor(2)
        if go is None or x is None or w is None or len(go) < 3 or len(w) != len(go):
            return None
        groups = (inp.ints(9) or [1])[0]
        mask_txt = inp.concrete[10] if len(inp.concrete) > 10 else None
        mask = [m == "True" for m in re.findall(r"True|False", mask_txt)] if isinstance(mask_txt, str) else []
        mask = (mask + [True, True, False])[:3] if mask else [True, True, False]
        one = 2 * go[0] * go[1] * _numel(go[2:]) * (x[1] // max(groups, 1)) * _numel(w[2:])
        fl = one * (int(mask[0]) + int(mask[1])) + (go[0] * go[1] * _numel(go[2:]) if mask[2] else 0)
        return OpCost(fl, inp.tensor_bytes() + inp.nbytes(1) * mask[0] + inp.nbytes(2) * mask[1], _ctype(inp),
                      "conv", f"(grad input {mask[0]}, grad weight {mask[1]}) x 2·N·C_out·out·C_in/g·k = "
                              f"{int(mask[0]) + int(mask[1])} x {one:,}")
    spec = _CONV_ARGS.get(b)
    if spec is None:
        return None
    x, w = inp.tensor(0), inp.tensor(1)
    if x is None or w is None or len(x) < 3 or len(w) != len(x):
        return None
    si, pi, di, gi, ti = spec
    if ti is not None and inp.flag(ti):
        return None  # transposed convolution: not counted
    nsp = len(x) - 2
    stride, pad, dil = inp.ints(si) or [1], inp.ints(pi) or [0], inp.ints(di) or [1]
    groups = (inp.ints(gi) or [1])[0]
    stride, pad, dil = ([v[0]] * nsp if len(v) == 1 else v for v in (stride, pad, dil))
    if not (len(stride) == len(pad) == len(dil) == nsp):
        return None
    out = [(x[2 + i] + 2 * pad[i] - dil[i] * (w[2 + i] - 1) - 1) // stride[i] + 1 for i in range(nsp)]
    if min(out) <= 0:
        return None
    n, c_out = x[0], w[0]
    fl = 2 * n * c_out * _numel(out) * (x[1] // max(groups, 1)) * _numel(w[2:])
    txt = f"2·N·C_out·out·(C_in/g)·k = 2·{n}·{c_out}·{'x'.join(map(str, out))}·{x[1] // max(groups, 1)}·" \
          f"{'x'.join(map(str, w[2:]))}"
    bias = b not in ("cudnn_convolution",) and inp.tensor(2)
    if bias:
        fl += n * c_out * _numel(out)
    return OpCost(fl, inp.tensor_bytes() + n * c_out * _numel(out) * inp.itemsize(0), _ctype(inp), "conv", txt)


_ATTN_FWD_BSHD = {"_flash_attention_forward", "_efficient_attention_forward"}
_ATTN_FWD_BHSD = {"scaled_dot_product_attention", "_scaled_dot_product_flash_attention",
                  "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention",
                  "_scaled_dot_product_attention_math", "_scaled_dot_product_flash_attention_for_cpu"}
_ATTN_BWD = {"_flash_attention_backward": (1, "bshd"), "_efficient_attention_backward": (1, "bshd"),
             "_scaled_dot_product_flash_attention_backward": (1, "bhsd"),
             "_scaled_dot_product_efficient_attention_backward": (1, "bhsd"),
             "_scaled_dot_product_cudnn_attention_backward": (1, "bhsd")}


def _attention(name: str, inp: _Inputs) -> OpCost | None:
    b = _base(name)
    if b in _ATTN_FWD_BSHD or b in _ATTN_FWD_BHSD:
        q0, layout, factor, what = 0, "bshd" if b in _ATTN_FWD_BSHD else "bhsd", 1.0, "forward"
    elif b in _ATTN_BWD:
        q0, layout = _ATTN_BWD[b]
        factor, what = 2.5, "backward = 2.5 x forward"
    else:
        return None
    q, k = inp.tensor(q0), inp.tensor(q0 + 1)
    if q is None or k is None or len(q) != 4 or len(k) != 4:
        return None
    if layout == "bshd":
        bs, sq, h, d = q
        sk = k[1]
    else:
        bs, h, sq, d = q
        sk = k[2]
    fwd = 4 * bs * h * sq * sk * d
    fl = int(fwd * factor)
    out_bytes = bs * h * sq * d * inp.itemsize(q0) if factor == 1.0 else 0
    return OpCost(fl, inp.tensor_bytes() + out_bytes, _ctype(inp, q0), "attention",
                  f"4·B·H·S_q·S_k·D = 4·{bs}·{h}·{sq}·{sk}·{d} ({what})")


#: elementwise ops and the number of inputs of their functional form (self, other, alpha ...):
#: a tensor input past these is the ``out=`` tensor (written, not read)
ELEMENTWISE = {
    "add": 3, "sub": 3, "mul": 2, "div": 2, "neg": 1, "exp": 1, "log": 1, "sqrt": 1, "rsqrt": 1, "pow": 2, "abs": 1,
    "relu": 1, "gelu": 2, "silu": 1, "sigmoid": 1, "tanh": 1, "clamp": 3, "clamp_min": 2, "clamp_max": 2,
    "where": 3, "threshold_backward": 3, "gelu_backward": 3, "silu_backward": 2, "sigmoid_backward": 2,
    "tanh_backward": 2, "maximum": 2, "minimum": 2, "reciprocal": 1, "sin": 1, "cos": 1, "erf": 1, "leaky_relu": 2,
    "hardtanh": 3, "mish": 1, "elu": 4, "addcmul": 4, "addcdiv": 4, "lerp": 3, "square": 1, "fill": 2,
    "masked_fill": 3, "zero": 1,
}
#: in-place ops that only write ``self`` (no read)
_WRITE_ONLY = frozenset({"fill", "zero"})
_NORM = {"native_layer_norm": 5, "layer_norm": 5, "native_layer_norm_backward": 10, "rms_norm": 4,
         "_fused_rms_norm": 4, "fused_add_rms_norm": 5, "native_batch_norm": 5, "_batch_norm_impl_index": 5,
         "cudnn_batch_norm": 5, "miopen_batch_norm": 5}
_SOFTMAX = {"_softmax": 5, "softmax": 5, "_log_softmax": 5, "log_softmax": 5, "_softmax_backward_data": 4}


def _pointwise(name: str, inp: _Inputs) -> OpCost | None:
    b = _base(name)
    stem = b[:-1] if b.endswith("_") and not b.startswith("_") else b
    if stem in ELEMENTWISE:
        arity = ELEMENTWISE[stem]
        reads = [i for i in range(min(arity, len(inp.dims))) if inp.tensor(i) is not None]
        if not reads:
            return None
        try:
            out = inp.tensor(reads[0])
            for i in reads[1:]:
                out = _broadcast(out, inp.tensor(i))
        except ValueError:
            return None
        n = _numel(out)
        inplace = b != stem
        read_bytes = 0 if (inplace and stem in _WRITE_ONLY) else sum(inp.read_bytes(i) for i in reads)
        return OpCost(n, read_bytes + n * inp.itemsize(reads[0]), "fp32", "elementwise",
                      f"1 per output element = {n:,}")
    per = _NORM.get(b) or _SOFTMAX.get(b)
    if per is None:
        return None
    x = inp.tensor(0)
    if x is None:
        return None
    n = _numel(x)
    family = "norm" if b in _NORM else "softmax"
    return OpCost(per * n, inp.tensor_bytes() + n * inp.itemsize(0), "fp32", family,
                  f"{per} per element = {per}·{n:,}")


def op_cost(name: str, dims: Any, types: Any, concrete: Any = None, strides: Any = None) -> OpCost | None:
    """FLOPs and bytes of op ``name`` from its ``Input Dims``, ``Input type``, ``Concrete
    Inputs`` and ``Input Strides`` (lists, one entry per input); None when not counted."""
    inp = _Inputs(dims, types, concrete, strides)
    for f in (_gemm, _conv, _attention, _pointwise):
        try:
            c = f(name, inp)
        except (TypeError, ValueError, IndexError, ZeroDivisionError):
            c = None
        if c is not None:
            return c
    return None
