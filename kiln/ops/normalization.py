"""Normalization over the last axis as primitives: layer normalization and the softmax
family, each computed as the composite users write does it.

    layer_norm(x, gamma, beta, eps)
        mean = sum(x) / n;  d = x - mean;  var = sum(d * d) / n
        out = d / sqrt(var + eps) * gamma + beta              (npx.layer_norm, axis -1)
    softmax(x, log)
        e = exp(x - max(x));  out = e / sum(e)                 (npx.softmax, axis -1)
        log: s = x - max(x);  out = s - log(sum(exp(s)))       (npx.log_softmax)

with n the length of the last axis and gamma, beta of shape () or (n,). The functions
keep tracing to their composites; graph/passes/normalization.py rewrites the composites
into these ops where the C backend runs them, one pass over each row
(kiln/backend/c/normalization.py). The gradient rules are written with the primitives:
    layer_norm  xhat = d / sqrt(var + eps),  gg = g * gamma,
                dx = (gg - mean(gg) - xhat * mean(gg * xhat)) / sqrt(var + eps),
                dgamma = sum(g * xhat),  dbeta = sum(g)   (summed to gamma's, beta's shape)
    softmax     dx = out * (g - sum(g * out))
    log_softmax dx = g - exp(out) * sum(g)
"""
import numpy as _np

from .registry import register
from .util import sum_to
from .._core.base import op_error
from .._core.bfloat16 import is_floating


def _float_rows(op, x):
    if x.ndim < 1 or not is_floating(x.dtype):
        raise op_error(op, f"the data must be a float array of at least 1 dimension, got "
                           f"shape {tuple(x.shape)} ({x.dtype})")


def _layer_norm_shape(x, gamma, beta, eps):
    _float_rows("layer_norm", x)
    n = x.shape[-1]
    for name, a in (("gamma", gamma), ("beta", beta)):
        if tuple(a.shape) not in ((), (n,)) or a.dtype != x.dtype:
            raise op_error("layer_norm", f"{name} must be a {x.dtype} scalar or vector of the "
                                         f"last axis' length {n}, got shape {tuple(a.shape)} "
                                         f"({a.dtype})")
    return tuple(x.shape), x.dtype


def _statistics(x, eps, np):
    """(d, the deviation from the row's mean, and sqrt(var + eps)) the composite's way,
    with `np` NumPy (the eager kernel) or the primitives (the gradient rule)."""
    n = x.shape[-1]
    axis = x.ndim - 1
    mean = np.sum(x, axis) / _np.asarray(n, x.dtype)
    d = x - mean
    var = np.sum(d * d, axis) / _np.asarray(n, x.dtype)
    return d, np.sqrt(var + _np.asarray(eps, x.dtype))


class _NumPy:
    @staticmethod
    def sum(x, axis):
        return _np.sum(x, axis=axis, keepdims=True)

    sqrt = staticmethod(_np.sqrt)


class _Compose:
    @staticmethod
    def sum(x, axis):
        from .reduce import sum_
        return sum_(x, axis=(axis,), keepdims=True)

    @staticmethod
    def sqrt(x):
        from .elementwise import sqrt
        return sqrt(x)


def _layer_norm_grad(g, out, x, gamma, beta, eps):
    from .._core.autograd import input_needed
    d, std = _statistics(x, eps, _Compose)
    xhat = d / std
    axis = x.ndim - 1
    n = _np.asarray(x.shape[-1], x.dtype)
    dx = dgamma = dbeta = None
    if input_needed(0):
        gg = g * gamma
        dx = (gg - _Compose.sum(gg, axis) / n - xhat * (_Compose.sum(gg * xhat, axis) / n)) / std
    if input_needed(1):
        dgamma = sum_to(g * xhat, gamma)
    if input_needed(2):
        dbeta = sum_to(g, beta)
    return dx, dgamma, dbeta


@register("layer_norm", _layer_norm_shape, _layer_norm_grad)
def layer_norm(x, gamma, beta, eps):
    with _np.errstate(all="ignore"):
        d, std = _statistics(x, eps, _NumPy)
        return (d / std * gamma + beta).astype(x.dtype, copy=False)


def _softmax_shape(x, log):
    _float_rows("softmax", x)
    return tuple(x.shape), x.dtype


def _softmax_grad(g, out, x, log):
    from .elementwise import exp
    from .reduce import sum_
    axis = (x.ndim - 1,)
    if log:
        return (g - exp(out) * sum_(g, axis=axis, keepdims=True),)
    return (out * (g - sum_(g * out, axis=axis, keepdims=True)),)


@register("softmax", _softmax_shape, _softmax_grad)
def softmax(x, log):
    with _np.errstate(all="ignore"):
        shifted = x - _np.max(x, axis=-1, keepdims=True) if x.shape[-1] else x
        if log:
            total = _np.sum(_np.exp(shifted), axis=-1, keepdims=True)
            return (shifted - _np.log(total)).astype(x.dtype, copy=False)
        e = _np.exp(shifted)
        return (e / _np.sum(e, axis=-1, keepdims=True)).astype(x.dtype, copy=False)
