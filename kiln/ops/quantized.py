"""int8 primitives: what quantization (kiln.contrib.quantization) puts in a graph.

    quantize_int8(x, scale, dtype)      x / scale rounded to nearest even and saturated to
                                        int8 [-128, 127] or uint8 [0, 255]
    dense_int8(x, wq, wscale, bias, x_scale, dtype, relu)
                                        Dense on int8: xq = quantize_int8(x, x_scale) (or,
                                        x_scale None, with the scale max|x| / 127 of this
                                        call: dynamic quantization), then
                                        y = float32(xq @ wq.T, exact in int32)
                                            * float32(x_scale * wscale[n]) + bias[n],
                                        ReLU when relu. wq (N, K) int8 and wscale (N,) are
                                        the weight quantized once per output channel
                                        (symmetric: wscale = max|w[n]| / 127).
    conv_int8(x, wq, wscale, bias, [residual], x_scale, dtype, relu, stride, dilation,
              pad, groups, residual_scale, out_scale, out_dtype, channels_last)
                                        the same for a convolution (NCHW, wq (F, C, *k);
                                        (N, *S, C) activations when channels_last), and
                                        what keeps a chain of them in int8: x may come
                                        quantized already (int8/uint8 of dtype, on the
                                        grid of x_scale); a residual (float32, or int8/
                                        uint8 times residual_scale) is added before the
                                        ReLU (oneDNN's sum post-op); with out_scale the
                                        output is requantized to out_dtype: y times
                                        float32(1 / out_scale), rounded to nearest even,
                                        saturated (as oneDNN writes int8)

The reference computation is the definition: a quantized graph equals quantize -> the
integer op -> dequantize. oneDNN's int8 matmul (backend/dnnl/lowp.py, registered as the
eager kernel) computes it with VNNI instructions where the CPU has them. Gradients are
not defined: quantized graphs are for inference.
"""
import numpy as _np

from . import channels_last as cl
from .conv import conv as conv_op, _conv_rule as _float_conv_rule
from .registry import register
from .._core.base import op_error

_F32 = _np.dtype(_np.float32)
RANGES = {"int8": (-128, 127), "uint8": (0, 255)}


def quantize_values(x, scale, dtype):
    lo, hi = RANGES[dtype]
    q = _np.rint(_np.asarray(x, _F32) / _np.float32(scale))
    return _np.clip(q, lo, hi).astype(dtype)


def dynamic_scale(x):
    """A call's activation scale for dynamic quantization: max|x| / 127 (1 for zeros)."""
    m = float(_np.max(_np.abs(x))) if x.size else 0.0
    return _np.float32(m / 127.0) if m > 0 and _np.isfinite(m) else _np.float32(1.0)


def _check_dtype(op, dtype):
    if dtype not in RANGES:
        raise op_error(op, f"dtype must be 'int8' or 'uint8', got {dtype!r}")


def _quantize_rule(x, scale, dtype="int8"):
    _check_dtype("quantize_int8", dtype)
    return x.shape, _np.dtype(dtype)


@register("quantize_int8", _quantize_rule, elementwise=True)
def quantize_int8(x, scale, dtype="int8"):
    return quantize_values(x, scale, dtype)


def _check_weights(op, x, wq, wscale, bias, out_channels):
    if x.dtype != _F32 or wq.dtype != _np.int8 or wscale.dtype != _F32 or bias.dtype != _F32:
        raise op_error(op, f"expected float32 x, int8 weight, float32 scales and bias, got "
                       f"{x.dtype}, {wq.dtype}, {wscale.dtype}, {bias.dtype}")
    if tuple(wscale.shape) != (out_channels,) or tuple(bias.shape) != (out_channels,):
        raise op_error(op, f"weight scales and bias must have shape ({out_channels},), got "
                       f"{tuple(wscale.shape)} and {tuple(bias.shape)}")


def _dense_rule(x, wq, wscale, bias, x_scale=None, dtype="int8", relu=False):
    _check_dtype("dense_int8", dtype)
    if len(wq.shape) != 2 or len(x.shape) < 1 or x.shape[-1] != wq.shape[1]:
        raise op_error("dense_int8", f"x {tuple(x.shape)} and weight {tuple(wq.shape)} do "
                       "not fit (weight: (units, in_units))")
    _check_weights("dense_int8", x, wq, wscale, bias, wq.shape[0])
    return tuple(x.shape[:-1]) + (wq.shape[0],), _F32


def _dequantize(acc, x_scale, wscale, bias, relu, channel_axis):
    shape = [1] * acc.ndim
    shape[channel_axis] = -1
    scale = (_np.float32(x_scale) * wscale).astype(_F32).reshape(shape)
    y = acc.astype(_F32) * scale + bias.reshape(shape)
    return _np.maximum(y, 0, out=y) if relu else y


@register("dense_int8", _dense_rule)
def dense_int8(x, wq, wscale, bias, x_scale=None, dtype="int8", relu=False):
    scale = dynamic_scale(x) if x_scale is None else _np.float32(x_scale)
    rows = x.reshape(-1, x.shape[-1])
    xq = quantize_values(rows, scale, dtype)
    fast = dense_int8.lowerings.get("eager")
    if fast is not None:
        y = fast.matmul_int8(xq, wq.T, (scale * wscale).astype(_F32), bias, relu)
        if y is not None:
            return y.reshape(x.shape[:-1] + (wq.shape[0],))
    acc = xq.astype(_np.int32) @ wq.T.astype(_np.int32)
    return _dequantize(acc, scale, wscale, bias, relu, -1).reshape(
        x.shape[:-1] + (wq.shape[0],))


_INT_TYPES = (_np.dtype(_np.int8), _np.dtype(_np.uint8))


def _conv_rule(x, wq, wscale, bias, residual=None, x_scale=None, dtype="int8", relu=False,
               stride=(1, 1), dilation=(1, 1), pad=(0, 0, 0, 0), groups=1,
               residual_scale=None, out_scale=None, out_dtype=None):
    _check_dtype("conv_int8", dtype)
    if x.dtype in _INT_TYPES:
        if x.dtype != _np.dtype(dtype) or x_scale is None:
            raise op_error("conv_int8", f"an already quantized x must be {dtype} with its "
                           f"x_scale, got {x.dtype} with x_scale {x_scale!r}")
        x = _Float(x)
    _check_weights("conv_int8", x, wq, wscale, bias, wq.shape[0])
    shape, _ = _float_conv_rule(x, _Float(wq), stride, dilation, pad, groups)
    out = _F32
    if out_scale is not None:
        _check_dtype("conv_int8", out_dtype)
        out = _np.dtype(out_dtype)
    if residual is not None:
        if tuple(residual.shape) != tuple(shape):
            raise op_error("conv_int8", f"the residual must have the output's shape {shape}, "
                           f"got {tuple(residual.shape)}")
        if residual.dtype in _INT_TYPES and residual_scale is None:
            raise op_error("conv_int8", "a quantized residual needs its residual_scale")
        if residual.dtype not in _INT_TYPES + (_F32,):
            raise op_error("conv_int8", f"expected a float32, int8 or uint8 residual, got "
                           f"{residual.dtype}")
    return shape, out


class _Float:
    """An array's shape as the float32 convolution's shape rule reads it."""

    def __init__(self, w):
        self.shape, self.dtype, self.ndim = tuple(w.shape), _F32, len(w.shape)


def dequantized(a, scale):
    """An int8/uint8 array's float32 values (a float32 array as it is)."""
    if a.dtype in _INT_TYPES:
        return a.astype(_F32) * _np.float32(scale)
    return a


def requantized(y, out_scale, out_dtype):
    """float32 y onto out_dtype's grid of step out_scale, as oneDNN writes an int8 output:
    times the float32 reciprocal of the scale, rounded to nearest even, saturated."""
    lo, hi = RANGES[out_dtype]
    inverse = _np.float32(1.0) / _np.float32(out_scale)
    return _np.clip(_np.rint(y * inverse), lo, hi).astype(out_dtype)


@register("conv_int8", cl.rule((0, 4), True)(_conv_rule))
@cl.kernel((0, 4), True)
def conv_int8(x, wq, wscale, bias, residual=None, x_scale=None, dtype="int8", relu=False,
              stride=(1, 1), dilation=(1, 1), pad=(0, 0, 0, 0), groups=1,
              residual_scale=None, out_scale=None, out_dtype=None):
    if x.dtype in _INT_TYPES:
        scale, xq = _np.float32(x_scale), x
    else:
        scale = dynamic_scale(x) if x_scale is None else _np.float32(x_scale)
        xq = quantize_values(x, scale, dtype)
    fast = conv_int8.lowerings.get("eager")
    if fast is not None:
        y_shape = _float_conv_rule(_Float(x), _Float(wq), stride, dilation, pad, groups)[0]
        y = fast.conv_int8(xq, wq, (scale * wscale).astype(_F32), bias, y_shape, stride,
                           dilation, pad, groups, relu, residual, residual_scale, out_scale,
                           out_dtype)
        if y is not None:
            return y
    # integer products summed in float64: exact (|sum| < 2^53), so this is the int32 sum
    acc = conv_op.impl(xq.astype(_np.float64), wq.astype(_np.float64), stride=stride,
                       dilation=dilation, pad=pad, groups=groups)
    y = _dequantize(_np.rint(acc), scale, wscale, bias, False, 1)
    if residual is not None:
        y = y + dequantized(residual, residual_scale)
    if relu:
        y = _np.maximum(y, 0, out=y)
    return y if out_scale is None else requantized(y, out_scale, out_dtype)
