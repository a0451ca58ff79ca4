"""Low-precision primitives: what mixed precision (AMP) puts in a graph.

    matmul_bf16(a, b, [bias], [r], transpose_b=False, transpose_a=False, scale=1.0,
                gelu=False, residual=False)
                        np.matmul of a and b (b's last two axes swapped when transpose_b:
                        Dense's weight, read where it lies; a's when transpose_a: a weight
                        gradient's activation, read where it lies) rounded to bfloat16 (to nearest
                        even), accumulated and returned in float32: a bfloat16 x bfloat16 ->
                        float32 product, as oneDNN's bfloat16 matmul computes it (bfloat16
                        in, float32 out, so no pass widens a bfloat16 result); plus the
                        float32 bias (N,) when given (oneDNN's bias argument: Dense's add
                        is no pass of its own). The epilogue the AMP pass folds in, oneDNN's
                        post-ops, in this order: times `scale` (attention's 1/sqrt(d)),
                        npx.gelu's erf form when `gelu`, plus the float32 r of the result's
                        shape when `residual` (the last input): no pass of their own either

    conv_bf16(x, w, [b], stride, dilation, pad, groups, relu, channels_last)
                        the convolution of x and w rounded to bfloat16, in float32, plus
                        the bias b (F,) and then ReLU when given (conv_epilogue.py fuses
                        them: oneDNN's bias and post-op); its gradients are
                        conv_grad_data / conv_grad_weight with bf16=True

The AMP pass (kiln/graph/passes/amp.py) puts them in place of float32 matmuls and
convolutions. The oneDNN layer registers its eager kernel (`lowerings["eager"].matmul_bf16`,
backend/dnnl/lowp.py) and its C lowering; a backend without one runs the decomposition
below (the same rounding as two casts, then a float32 matmul). matmul_bf16's gradient is
the float32 matmul's (conv_bf16's the bfloat16 conv gradients, also float32 out): the
rounding passes gradients through unchanged, as PyTorch's autocast does for the cast it
inserts, so the master weights and their gradients stay float32.
"""
import math

import numpy as _np

from . import channels_last as cl
from .conv import _attrs, conv, conv_grads, _conv_rule
from .conv_bias import conv_bias, conv_bias_grad, _rule as _conv_bias_rule
from .elementwise import add, cast, erf, exp, multiply, relu as relu_op, relu_grad
from .linalg import matmul, _matmul_grad, _matmul_rule, _swap_last as swap_last_axes
from .registry import register
from .util import sum_to
from .._core.base import Shaped, bfloat16_dtype, op_error
from .._core.bfloat16 import round_to_bfloat16

_F32 = _np.dtype(_np.float32)


class _Swapped(Shaped):
    """An operand's shape and dtype as the product reads it (for the shape rule)."""
    __slots__ = ("shape", "dtype")

    def __init__(self, b):
        self.shape = tuple(b.shape[:-2]) + (b.shape[-1], b.shape[-2])
        self.dtype = b.dtype


_SQRT_HALF = _np.float32(1.0 / math.sqrt(2.0))     # npx.gelu's constants, as it traces them
_INV_SQRT_2PI = _np.float32(1.0 / math.sqrt(2.0 * math.pi))


def _bias_and_residual(extra, residual):
    """(bias or None, r or None) from the inputs after a and b."""
    if residual:
        return (extra[0] if len(extra) == 2 else None), extra[-1]
    return (extra[0] if extra else None), None


def _rule(a, b, *extra, transpose_b=False, transpose_a=False, scale=1.0, gelu=False,
          residual=False):
    bias, r = _bias_and_residual(extra, residual)
    if a.dtype != _F32 or b.dtype != _F32:
        raise op_error("matmul_bf16", f"expected float32 operands, got {a.dtype} and {b.dtype}")
    if transpose_b and len(b.shape) < 2:
        raise op_error("matmul_bf16", f"transpose_b needs a matrix, got shape {tuple(b.shape)}")
    if transpose_a and len(a.shape) < 2:
        raise op_error("matmul_bf16", f"transpose_a needs a matrix, got shape {tuple(a.shape)}")
    shape, dtype = _matmul_rule(_Swapped(a) if transpose_a else a,
                                _Swapped(b) if transpose_b else b)
    if bias is not None and (bias.dtype != _F32 or tuple(bias.shape) != (shape[-1],)):
        raise op_error("matmul_bf16", f"the bias must be float32 ({shape[-1]},), got "
                       f"{bias.dtype} {tuple(bias.shape)}")
    if residual and (r is None or r.dtype != _F32 or tuple(r.shape) != tuple(shape)):
        raise op_error("matmul_bf16", f"the residual must be float32 {tuple(shape)}, got "
                       f"{None if r is None else (r.dtype, tuple(r.shape))}")
    return shape, dtype


def _gelu_slope(z):
    """d/dz of z * Phi(z): Phi(z) + z * phi(z)."""
    cdf = multiply(add(erf(multiply(z, _SQRT_HALF)), _np.float32(1.0)), _np.float32(0.5))
    pdf = multiply(exp(multiply(multiply(z, z), _np.float32(-0.5))), _INV_SQRT_2PI)
    return add(cdf, multiply(z, pdf))


def _grad(g, out, a, b, *extra, transpose_b=False, transpose_a=False, scale=1.0, gelu=False,
          residual=False):
    bias, r = _bias_and_residual(extra, residual)
    gz = g
    if gelu:        # the product before GELU, computed again
        z = matmul_bf16(a, b, *(() if bias is None else (bias,)), transpose_b=transpose_b,
                        transpose_a=transpose_a, scale=scale)
        gz = multiply(g, _gelu_slope(z))
    if scale != 1.0:
        gz = multiply(gz, _np.float32(scale))
    ga, gb = _matmul_grad(gz, out, swap_last_axes(a) if transpose_a else a,
                          swap_last_axes(b) if transpose_b else b)
    if transpose_a and ga is not None:
        ga = swap_last_axes(ga)
    if transpose_b and gb is not None:
        gb = swap_last_axes(gb)
    grads = (ga, gb) + (() if bias is None else (sum_to(gz, bias),))
    return grads + ((sum_to(g, r),) if residual else ())


def _epilogue_f32(y, scale, gelu, r):
    """The epilogue on NumPy values, as the graph's own primitives compute it."""
    if scale != 1.0:
        y = y * _np.float32(scale)
    if gelu:
        y = (_np.float32(0.5) * y) * (_np.float32(1.0) + erf.impl(y * _SQRT_HALF))
    return y if r is None else y + r


@register("matmul_bf16", _rule, _grad)
def matmul_bf16(a, b, *extra, transpose_b=False, transpose_a=False, scale=1.0, gelu=False,
                residual=False):
    bias, r = _bias_and_residual(extra, residual)
    if transpose_b:
        b = _np.swapaxes(b, -1, -2)
    if transpose_a:
        a = _np.swapaxes(a, -1, -2)
    fast = matmul_bf16.lowerings.get("eager")
    out = None if fast is None else fast.matmul_bf16(a, b, bias, scale, gelu, r)
    if out is not None:
        return out
    out = _np.matmul(round_to_bfloat16(a), round_to_bfloat16(b)).astype(_F32, copy=False)
    out = out if bias is None else out + bias
    return _epilogue_f32(out, scale, gelu, r)


def _decomposed(a, b, *extra, transpose_b=False, transpose_a=False, scale=1.0, gelu=False,
                residual=False):
    """The same values from primitives every backend has: casts through bfloat16."""
    bias, r = _bias_and_residual(extra, residual)
    bf16 = bfloat16_dtype()
    b = swap_last_axes(b) if transpose_b else b
    a = swap_last_axes(a) if transpose_a else a
    y = matmul(cast(cast(a, dtype=bf16), dtype=_F32), cast(cast(b, dtype=bf16), dtype=_F32))
    y = y if bias is None else y + bias
    if scale != 1.0:
        y = multiply(y, _np.float32(scale))
    if gelu:
        y = multiply(multiply(y, _np.float32(0.5)),
                     add(erf(multiply(y, _SQRT_HALF)), _np.float32(1.0)))
    return y if r is None else add(y, r)


def _conv_bf16_rule(x, w, b=None, stride=(1, 1), dilation=(1, 1), pad=(0, 0, 0, 0), groups=1,
                    relu=False):
    if any(v.dtype != _F32 for v in (x, w) + ((b,) if b is not None else ())):
        raise op_error("conv_bf16", f"expected float32 operands, got {x.dtype} and {w.dtype}"
                       + ("" if b is None else f" and bias {b.dtype}"))
    if b is not None:
        return _conv_bias_rule(x, w, b, stride, dilation, pad, groups)
    return _conv_rule(x, w, stride, dilation, pad, groups)


def _conv_bf16_grad(g, out, x, w, b=None, stride=(1, 1), dilation=(1, 1), pad=(0, 0, 0, 0),
                    groups=1, relu=False, channels_last=False):
    if b is not None:
        return conv_bias_grad(g, out, x, w, b, stride, dilation, pad, groups, relu,
                              channels_last, bf16=True)
    g = relu_grad(g, out) if relu else g
    return conv_grads(g, x, w, dict(_attrs(stride, dilation, pad, groups, channels_last),
                                    bf16=True))


@register("conv_bf16", cl.rule((0,), True)(_conv_bf16_rule), _conv_bf16_grad)
@cl.kernel((0,), True)
def conv_bf16(x, w, b=None, stride=(1, 1), dilation=(1, 1), pad=(0, 0, 0, 0), groups=1,
              relu=False):
    fast = conv_bf16.lowerings.get("eager")
    if fast is not None and b is None and not relu:
        shape = _conv_rule(x, w, stride, dilation, pad, groups)[0]
        y = fast.conv_bf16(x, w, shape, stride, dilation, pad, groups)
        if y is not None:
            return y
    a = dict(stride=stride, dilation=dilation, pad=pad, groups=groups)
    x, w = round_to_bfloat16(x), round_to_bfloat16(w)
    if b is not None:
        return conv_bias.impl(x, w, b, relu=relu, **a)
    y = conv.impl(x, w, **a)
    return _np.maximum(y, 0, out=y) if relu else y


def _conv_decomposed(x, w, b=None, stride=(1, 1), dilation=(1, 1), pad=(0, 0, 0, 0), groups=1,
                     relu=False):
    bf16 = bfloat16_dtype()
    x, w = cast(cast(x, dtype=bf16), dtype=_F32), cast(cast(w, dtype=bf16), dtype=_F32)
    a = dict(stride=stride, dilation=dilation, pad=pad, groups=groups)
    if b is not None:
        return conv_bias(x, w, b, relu=relu, **a)
    y = conv(x, w, **a)
    return relu_op(y) if relu else y


DECOMPOSITIONS = {"matmul_bf16": _decomposed,
                  "conv_bf16": cl.kernel((0,), True)(_conv_decomposed)}
