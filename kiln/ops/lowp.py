"""Low-precision primitives: what mixed precision (AMP) puts in a graph.

    matmul_bf16(a, b, transpose_b=False)
                        np.matmul of a and b (b's last two axes swapped when transpose_b:
                        Dense's weight, read where it lies) rounded to bfloat16 (to nearest
                        even), accumulated and returned in float32: a bfloat16 x bfloat16 ->
                        float32 product, as oneDNN's bfloat16 matmul computes it (bfloat16
                        in, float32 out, so no pass widens a bfloat16 result)

    conv_bf16(x, w, stride, dilation, pad, groups)
                        the convolution of x and w rounded to bfloat16, in float32 (NCHW)

The AMP pass (kiln/graph/passes/amp.py) puts them in place of float32 matmuls and
convolutions. The oneDNN
layer registers its eager kernel (`lowerings["eager"].matmul_bf16`, backend/dnnl/lowp.py)
and its C lowering; a backend without one runs the decomposition below (the same
rounding as two casts, then a float32 matmul). The gradient is the float32 matmul's
(the rounding passes gradients through unchanged, as PyTorch's autocast does for the
cast it inserts), so the master weights and their gradients stay float32.
"""
import numpy as _np

from .conv import conv, _conv_grad, _conv_rule
from .elementwise import cast
from .linalg import matmul, _matmul_grad, _matmul_rule, _swap_last as swap_last_axes
from .registry import register
from .._core.base import Shaped, bfloat16_dtype, op_error

_F32 = _np.dtype(_np.float32)


def round_to_bfloat16(x):
    """float32 values rounded to the nearest bfloat16 (ties to even), still as float32;
    NaN stays NaN. Bit arithmetic: no ml_dtypes needed."""
    x = _np.ascontiguousarray(x, dtype=_F32)
    bits = x.view(_np.uint32)
    rounded = (bits + (_np.uint32(0x7FFF) + ((bits >> 16) & 1))) & _np.uint32(0xFFFF0000)
    rounded = _np.where((bits & 0x7FFFFFFF) > 0x7F800000, bits | 0x00400000, rounded)
    return rounded.astype(_np.uint32).view(_F32)


class _Swapped(Shaped):
    """b's shape and dtype as the product reads it (for the shape rule)."""
    __slots__ = ("shape", "dtype")

    def __init__(self, b):
        self.shape = tuple(b.shape[:-2]) + (b.shape[-1], b.shape[-2])
        self.dtype = b.dtype


def _rule(a, b, transpose_b=False):
    if a.dtype != _F32 or b.dtype != _F32:
        raise op_error("matmul_bf16", f"expected float32 operands, got {a.dtype} and {b.dtype}")
    if transpose_b and len(b.shape) < 2:
        raise op_error("matmul_bf16", f"transpose_b needs a matrix, got shape {tuple(b.shape)}")
    return _matmul_rule(a, _Swapped(b) if transpose_b else b)


def _grad(g, out, a, b, transpose_b=False):
    if not transpose_b:
        return _matmul_grad(g, out, a, b)
    ga, gb = _matmul_grad(g, out, a, swap_last_axes(b))
    return ga, (None if gb is None else swap_last_axes(gb))


@register("matmul_bf16", _rule, _grad)
def matmul_bf16(a, b, transpose_b=False):
    if transpose_b:
        b = _np.swapaxes(b, -1, -2)
    fast = matmul_bf16.lowerings.get("eager")
    out = None if fast is None else fast.matmul_bf16(a, b)
    if out is not None:
        return out
    return _np.matmul(round_to_bfloat16(a), round_to_bfloat16(b)).astype(_F32, copy=False)


def _decomposed(a, b, transpose_b=False):
    """The same values from primitives every backend has: casts through bfloat16."""
    bf16 = bfloat16_dtype()
    b = swap_last_axes(b) if transpose_b else b
    return matmul(cast(cast(a, dtype=bf16), dtype=_F32), cast(cast(b, dtype=bf16), dtype=_F32))


def _conv_bf16_rule(x, w, stride, dilation, pad, groups=1):
    if x.dtype != _F32 or w.dtype != _F32:
        raise op_error("conv_bf16", f"expected float32 operands, got {x.dtype} and {w.dtype}")
    return _conv_rule(x, w, stride, dilation, pad, groups)


def _conv_bf16_grad(g, out, x, w, stride, dilation, pad, groups=1):
    return _conv_grad(g, out, x, w, stride, dilation, pad, groups)


@register("conv_bf16", _conv_bf16_rule, _conv_bf16_grad)
def conv_bf16(x, w, stride, dilation, pad, groups=1):
    fast = conv_bf16.lowerings.get("eager")
    if fast is not None:
        shape = _conv_rule(x, w, stride, dilation, pad, groups)[0]
        y = fast.conv_bf16(x, w, shape, stride, dilation, pad, groups)
        if y is not None:
            return y
    return conv.impl(round_to_bfloat16(x), round_to_bfloat16(w), stride=stride,
                     dilation=dilation, pad=pad, groups=groups)


def _conv_decomposed(x, w, stride, dilation, pad, groups=1):
    bf16 = bfloat16_dtype()
    return conv(cast(cast(x, dtype=bf16), dtype=_F32), cast(cast(w, dtype=bf16), dtype=_F32),
                stride=stride, dilation=dilation, pad=pad, groups=groups)


DECOMPOSITIONS = {"matmul_bf16": _decomposed, "conv_bf16": _conv_decomposed}
