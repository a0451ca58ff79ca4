"""Scaled dot-product attention as one primitive:

    attention(q, k, v, mask, scale, divide, fill, zero_masked, floor)

over matrices stacked along equal leading dims, q: (..., Tq, d), k: (..., Tk, d),
v: (..., Tk, dv) -> (..., Tq, dv), computed as the composite users write does it:

    s = q kᵀ / scale   (divide)   or   q kᵀ * scale   (not divide)
    s = where(mask, s, fill)            mask: bool, broadcast to (..., Tq, Tk)
    e = exp(s - max(s, last axis))
    e = where(mask, e, 0)               when zero_masked
    p = e / maximum(sum(e, last axis), floor)      (no maximum when floor is 0)
    out = p v

With mask all true (a bool scalar) this is npx.softmax's form; with fill -inf,
zero_masked and floor 1e-30 npx.masked_softmax's (a row with nothing left gives zeros);
with fill -1e6 d2l's sequence_mask form. graph/passes/attention.py rewrites those
composites into this op where the C backend can run it; npx.attention calls it directly.
The C backend runs it blocked, never holding a whole score matrix
(kiln/backend/c/attention.py). Its gradient rule is the composite's, written with the
primitives: the probabilities are computed again, and q, k, v get
    dv = pᵀ g,  ds = p (g vᵀ - rowsum(p g vᵀ)) masked,  dq = ds k / scale,  dk = dsᵀ q / scale
"""
import numpy as _np

from .registry import register
from .util import sum_to
from .._core.base import op_error
from .._core.bfloat16 import is_floating


def _shape(q, k, v, mask, scale, divide, fill, zero_masked, floor):
    for name, a in (("query", q), ("key", k), ("value", v)):
        if a.ndim < 2 or not is_floating(a.dtype):
            raise op_error("attention", f"{name} must be a float array of at least 2 "
                           f"dimensions, got shape {tuple(a.shape)} ({a.dtype})")
    if not (q.dtype == k.dtype == v.dtype):
        raise op_error("attention", f"query, key and value differ in dtype: {q.dtype}, "
                       f"{k.dtype}, {v.dtype}")
    if q.shape[:-2] != k.shape[:-2] or k.shape[:-1] != v.shape[:-1] \
            or q.shape[-1] != k.shape[-1]:
        raise op_error("attention", f"query {tuple(q.shape)}, key {tuple(k.shape)} and value "
                       f"{tuple(v.shape)} do not fit (..., Tq, d), (..., Tk, d), (..., Tk, dv)")
    scores = tuple(q.shape[:-1]) + (k.shape[-2],)
    if mask.dtype != _np.bool_ or mask.ndim > len(scores) or any(
            m not in (1, s) for m, s in zip(mask.shape[::-1], scores[::-1])):
        raise op_error("attention", f"the mask must be a bool array broadcasting to the "
                       f"scores' shape {scores}, got shape {tuple(mask.shape)} ({mask.dtype})")
    return tuple(q.shape[:-1]) + (v.shape[-1],), q.dtype


def probabilities(q, k, mask, scale, divide, fill, zero_masked, floor, np):
    """The attention weights p, with `np` the array functions to compute them with: NumPy
    (the eager kernel) or ops/compose.py's primitives (the gradient rule)."""
    s = np.matmul(q, np.swapaxes(k, -1, -2))
    s = s / scale if divide else s * scale
    s = np.where(mask, s, fill)
    if s.shape[-1] == 0:        # no keys: no weights, and p v is an empty sum (zeros)
        return s
    e = np.exp(s - np.max(s, axis=-1, keepdims=True))
    if zero_masked:
        e = np.where(mask, e, 0)
    total = np.sum(e, axis=-1, keepdims=True)
    if floor:
        total = np.maximum(total, floor)
    return e / total


class _Compose:
    """The few array functions `probabilities` uses, on primitives (for the gradient)."""

    @staticmethod
    def matmul(a, b):
        from .linalg import matmul
        return matmul(a, b)

    @staticmethod
    def swapaxes(x, a, b):
        from . import compose
        axes = list(range(x.ndim))
        axes[a], axes[b] = axes[b], axes[a]
        return compose.transpose(x, axes)

    @staticmethod
    def where(c, a, b):
        from . import compose
        return compose.where(c, a, b)

    @staticmethod
    def exp(x):
        from .elementwise import exp
        return exp(x)

    @staticmethod
    def max(x, axis, keepdims):
        from .reduce import max_
        return max_(x, axis=(x.ndim - 1,), keepdims=True)

    @staticmethod
    def sum(x, axis, keepdims):
        from .reduce import sum_
        return sum_(x, axis=(x.ndim - 1,), keepdims=True)

    @staticmethod
    def maximum(x, floor):
        from .elementwise import maximum
        return maximum(x, floor)


def _grad(g, out, q, k, v, mask, scale, divide, fill, zero_masked, floor):
    from .._core.autograd import input_needed
    from . import compose
    from .linalg import matmul
    from .reduce import sum_
    np = _Compose
    p = probabilities(q, k, mask, scale, divide, fill, zero_masked, floor, np)
    dv = matmul(np.swapaxes(p, -1, -2), g) if input_needed(2) else None
    if not (input_needed(0) or input_needed(1)):
        return None, None, dv, None
    dp = matmul(g, np.swapaxes(v, -1, -2))
    ds = p * (dp - sum_(dp * p, axis=(p.ndim - 1,), keepdims=True))
    ds = compose.where(mask, ds, 0)
    ds = ds / scale if divide else ds * scale
    dq = matmul(ds, k) if input_needed(0) else None
    dk = matmul(np.swapaxes(ds, -1, -2), q) if input_needed(1) else None
    return (sum_to(dq, q) if dq is not None else None,
            sum_to(dk, k) if dk is not None else None, dv, None)


@register("attention", _shape, _grad)
def attention(q, k, v, mask, scale, divide, fill, zero_masked, floor):
    with _np.errstate(all="ignore"):
        p = probabilities(q, k, mask, scale, divide, fill, zero_masked, floor, _np)
        return _np.matmul(p, v).astype(q.dtype, copy=False)
