"""Pooling as two primitives: pool and its gradient in x.

    pool(x, kind)          x (N, C, *S) -> (N, C, *O); kind is 'max', 'avg' (dividing by the
                           window size, padding included) or 'avg_valid' (by the number of
                           input elements in the window)
    pool_grad(g, x, kind)  the gradient in x; max pooling sends each output's gradient to
                           the first maximum of its window (as oneDNN and PyTorch do)

Max pooling skips NaN, as oneDNN's kernel and MXNet's do: a window's maximum is over its
numbers, and a window of NaN alone gives the dtype's lowest finite value (PyTorch and
NumPy's max would give NaN there; kiln keeps one answer on every backend).

Like conv.py: the eager kernel a backend registers (oneDNN) where it takes the call, else
the decomposition into `windows`, which is also what backends without a pooling kernel
run. `pad` is (lo, hi) per spatial dimension; the padding never wins a max and counts in
'avg' only.
"""
import numpy as _np

from . import channels_last as cl, compose
from .registry import register
from .rules import is_float
from .._core.bfloat16 import finfo
from .reduce import argmax
from .window import _check, windows, unwindows
from .conv import _eval, recording
from .._core.base import op_error
from .._core.ndarray import ndarray

KINDS = ("max", "avg", "avg_valid")


def _pool_rule(x, kind, kernel, stride, pad):
    if kind not in KINDS:
        raise op_error("pool", f"kind must be one of {KINDS}, got {kind!r}")
    if not is_float(x.dtype):
        raise op_error("pool", f"expected a floating-point input, got {x.dtype}")
    out = _check("pool", x.shape, kernel, stride, (1,) * len(kernel), pad)
    # a window wholly in the padding has no cell to take a max or a valid average of
    if kind != "avg" and any(pad[2 * i + j] >= kernel[i] for i in range(len(kernel))
                             for j in (0, 1)):
        what = "max pooling" if kind == "max" else "average pooling over valid cells"
        raise op_error("pool", f"{what} needs each pad smaller than the kernel, got "
                       f"pad {pad} for kernel {kernel}")
    return tuple(x.shape[:2]) + out, x.dtype


def _pool_grad(g, out, x, kind, kernel, stride, pad, channels_last=False):
    layout = {"channels_last": True} if channels_last else {}
    return (pool_grad(g, x, kind=kind, kernel=kernel, stride=stride, pad=pad, **layout),)


@register("pool", cl.rule((0,), True)(_pool_rule), _pool_grad)
@cl.kernel((0,), True)
def pool(x, kind, kernel, stride, pad):
    shape = _pool_rule(x, kind, kernel, stride, pad)[0]
    fast = pool.lowerings.get("eager")
    y = None if fast is None else fast.pool_forward(x, kind, shape, kernel, stride, pad,
                                                    training=recording())
    if y is None:
        y = _eval(pool_by_windows, x, kind=kind, kernel=kernel, stride=stride, pad=pad)
    return y


def _pool_grad_rule(g, x, kind, kernel, stride, pad):
    want = _pool_rule(x, kind, kernel, stride, pad)[0]
    if tuple(g.shape) != want:
        raise op_error("pool_grad", f"gradient of shape {tuple(g.shape)} does not fit the "
                       f"pooled shape {want}")
    return tuple(x.shape), x.dtype


def _pool_grad_grad(c, out, g, x, kind, kernel, stride, pad, channels_last=False):
    """pool_grad is linear in g; for 'max' its adjoint picks c at each window's maximum."""
    if channels_last:
        c, x = compose.moveaxis(c, -1, 1), compose.moveaxis(x, -1, 1)
        first = _pool_grad_grad(c, None, None, x, kind, kernel, stride, pad)
        return (compose.moveaxis(first[0], 1, -1), None)
    if kind != "max":
        return (pool(c, kind=kind, kernel=kernel, stride=stride, pad=pad), None)
    picked = compose.sum(_window_columns(c, kernel, stride, pad, 0.0)
                         * _first_max_mask(x, kernel, stride, pad), axis=-1)
    return (compose.moveaxis(picked, -1, 1), None)


@register("pool_grad", cl.rule((0, 1), True)(_pool_grad_rule), _pool_grad_grad)
@cl.kernel((0, 1), True)
def pool_grad(g, x, kind, kernel, stride, pad):
    _pool_grad_rule(g, x, kind, kernel, stride, pad)
    fast = pool_grad.lowerings.get("eager")
    gx = None if fast is None else fast.pool_backward(g, x, kind, kernel, stride, pad)
    if gx is None:
        gx = _eval(pool_grad_by_windows, g, x, kind=kind, kernel=kernel, stride=stride, pad=pad)
    return gx


# ---- decompositions into windows --------------------------------------------------------

def _window_columns(x, kernel, stride, pad, fill):
    """(N, *O, C, prod(kernel)): every output position's window, flattened."""
    cols = windows(x, kernel=tuple(kernel), stride=stride, dilation=(1,) * len(kernel),
                   pad=pad, pad_value=fill)
    return compose.reshape(cols, tuple(cols.shape[:-len(kernel)]) + (-1,))


def _max_columns(x, kernel, stride, pad):
    """Window columns for max pooling: padding is -inf and NaN the lowest finite value, so
    neither wins over a number (see the module docstring)."""
    cols = _window_columns(x, kernel, stride, pad, -_np.inf)
    return compose.where(cols != cols, float(finfo(x.dtype).min), cols)


def _first_max_mask(x, kernel, stride, pad):
    """1 at the first maximum of each window, 0 elsewhere, shaped like _window_columns."""
    cols = _max_columns(x.detach(), kernel, stride, pad)
    first = argmax(cols, axis=-1, keepdims=True)
    slots = ndarray._wrap(_np.arange(cols.shape[-1]).astype(first.dtype))
    return (slots == first).astype(x.dtype)


def _valid_counts(x, kernel, stride, pad):
    """(1, *O, 1): how many input elements each window covers (padding excluded)."""
    ones = ndarray._wrap(_np.ones((1, 1) + tuple(x.shape[2:]), x.dtype))
    return compose.sum(_window_columns(ones, kernel, stride, pad, 0.0), axis=-1)


def pool_by_windows(x, kind, kernel, stride, pad):
    if kind == "max":
        y = compose.max(_max_columns(x, kernel, stride, pad), axis=-1)
    else:
        y = compose.sum(_window_columns(x, kernel, stride, pad, 0.0), axis=-1)
        y = y / (_valid_counts(x, kernel, stride, pad) if kind == "avg_valid"
                 else int(_np.prod(kernel)))
    return compose.moveaxis(y, -1, 1)


def pool_grad_by_windows(g, x, kind, kernel, stride, pad):
    nsp = len(kernel)
    gm = compose.expand_dims(compose.moveaxis(g, 1, -1), -1)     # (N, *O, C, 1)
    if kind == "max":
        cols = gm * _first_max_mask(x, kernel, stride, pad)
    else:
        scale = (1.0 / _valid_counts(x, kernel, stride, pad) if kind == "avg_valid"
                 else 1.0 / int(_np.prod(kernel)))
        if kind == "avg_valid":
            scale = compose.expand_dims(scale, -1)
        cols = compose.broadcast_to(gm * scale, tuple(gm.shape[:-1]) + (int(_np.prod(kernel)),))
    cols = compose.reshape(cols, tuple(cols.shape[:-1]) + tuple(kernel))
    return unwindows(cols, in_shape=tuple(x.shape[2:]), kernel=tuple(kernel), stride=stride,
                     dilation=(1,) * nsp, pad=pad)


DECOMPOSITIONS = {"pool": cl.kernel((0,), True)(pool_by_windows),
                  "pool_grad": cl.kernel((0, 1), True)(pool_grad_by_windows)}
