"""Sliding windows (im2col) and their adjoint; convolution and pooling are built on these.

windows(x) turns (N, C, *spatial) into (N, *out_spatial, C, *kernel): every output position
gets the input patch it reads, laid out so that a convolution is one reshape and a matmul.
unwindows is the adjoint (col2im): it adds each patch back where it came from. Each is the
other's gradient, so convolution and pooling get gradients of any order without rules of
their own.
"""
import numpy as _np

from .registry import register
from .._core.base import op_error


def window_out_size(size, k, stride, dilation, pad_lo, pad_hi):
    span = dilation * (k - 1) + 1
    return (size + pad_lo + pad_hi - span) // stride + 1


def _check(op, x_shape, kernel, stride, dilation, pad):
    nsp = len(kernel)
    if len(x_shape) != nsp + 2:
        raise op_error(op, f"expected input of {nsp + 2} dimensions (N, C, {nsp} spatial), "
                       f"got shape {tuple(x_shape)}")
    if not (len(stride) == len(dilation) == nsp and len(pad) == 2 * nsp):
        raise op_error(op, "kernel, stride, dilation and pad do not agree in length")
    out = []
    for i in range(nsp):
        if kernel[i] < 1 or stride[i] < 1 or dilation[i] < 1:
            raise op_error(op, f"kernel, stride and dilation must be positive, got "
                           f"kernel={kernel}, stride={stride}, dilation={dilation}")
        o = window_out_size(x_shape[2 + i], kernel[i], stride[i], dilation[i], pad[2 * i],
                            pad[2 * i + 1])
        if o < 1:
            raise op_error(op, f"kernel {tuple(kernel)} (dilation {tuple(dilation)}) is larger "
                           f"than the padded input {tuple(x_shape[2:])}")
        out.append(o)
    return tuple(out)


def _windows_rule(x, kernel, stride, dilation, pad, pad_value=0.0):
    out = _check("windows", x.shape, kernel, stride, dilation, pad)
    return (x.shape[0],) + out + (x.shape[1],) + tuple(kernel), x.dtype


def _windows_grad(g, out, x, kernel, stride, dilation, pad, pad_value=0.0):
    return (unwindows(g, in_shape=tuple(x.shape[2:]), kernel=kernel, stride=stride,
                      dilation=dilation, pad=pad),)


@register("windows", _windows_rule, _windows_grad)
def windows(x, kernel, stride, dilation, pad, pad_value=0.0):
    nsp = len(kernel)
    widths = [(0, 0), (0, 0)] + [(pad[2 * i], pad[2 * i + 1]) for i in range(nsp)]
    xp = _np.pad(x, widths, constant_values=pad_value) if any(pad) else x
    out = _check("windows", x.shape, kernel, stride, dilation, pad)
    s = xp.strides
    shape = (x.shape[0],) + out + (x.shape[1],) + tuple(kernel)
    strides = (s[0],) + tuple(s[2 + i] * stride[i] for i in range(nsp)) + (s[1],) + tuple(
        s[2 + i] * dilation[i] for i in range(nsp))
    view = _np.lib.stride_tricks.as_strided(xp, shape, strides, writeable=False)
    return _np.ascontiguousarray(view)


def _unwindows_rule(g, in_shape, kernel, stride, dilation, pad):
    nsp = len(kernel)
    if g.ndim != 2 + 2 * nsp:
        raise op_error("unwindows", f"expected {2 + 2 * nsp} dimensions, got {g.ndim}")
    return (g.shape[0], g.shape[1 + nsp]) + tuple(in_shape), g.dtype


def _unwindows_grad(gg, out, g, in_shape, kernel, stride, dilation, pad):
    return (windows(gg, kernel=kernel, stride=stride, dilation=dilation, pad=pad),)


@register("unwindows", _unwindows_rule, _unwindows_grad)
def unwindows(g, in_shape, kernel, stride, dilation, pad):
    nsp = len(kernel)
    n, out_sp, c = g.shape[0], g.shape[1:1 + nsp], g.shape[1 + nsp]
    padded = tuple(in_shape[i] + pad[2 * i] + pad[2 * i + 1] for i in range(nsp))
    acc = _np.zeros((n,) + padded + (c,), g.dtype)     # channels last while accumulating
    for offset in _np.ndindex(*kernel):
        target = tuple(slice(offset[i] * dilation[i],
                             offset[i] * dilation[i] + (out_sp[i] - 1) * stride[i] + 1,
                             stride[i]) for i in range(nsp))
        acc[(slice(None),) + target] += g[(Ellipsis,) + offset]
    crop = tuple(slice(pad[2 * i], pad[2 * i] + in_shape[i]) for i in range(nsp))
    return _np.ascontiguousarray(_np.moveaxis(acc[(slice(None),) + crop], -1, 1))
