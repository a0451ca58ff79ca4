"""The softmax family (softmax, log_softmax, masked_softmax, with lengths and temperature)
and scaled dot-product attention.

softmax and log_softmax are composites of registry primitives; eagerly they take a shortcut
with one rule of their own (fused_softmax.py). attention is one primitive
(kiln/ops/attention.py), which graph/passes/attention.py also makes from the composites.
"""
import math

import numpy as _np

from .._core.base import normalize_axis, normalize_dtype
from .._core.ndarray import ndarray
from ..ops import REGISTRY as _R
from .. import np as knp
from . import fused_softmax
from .nn import _arr


def _masked_fill(x, length, axis, value):
    steps = knp.arange(x.shape[axis], dtype=length.dtype)
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    steps = knp.reshape(steps, tuple(shape))
    ax = axis % x.ndim
    if length.ndim == x.ndim - 1:     # MXNet's: the data's shape without the axis
        lead = list(length.shape[:ax]) + [1] + list(length.shape[ax:])
    else:
        lead = list(length.shape) + [1] * (x.ndim - length.ndim)
    mask = steps < knp.reshape(length, tuple(lead))
    return knp.where(mask, x, value), mask


def softmax(data, axis=-1, length=None, temperature=None, use_length=False, dtype=None):
    """The softmax of `data` along `axis` (after dividing by `temperature`); with `use_length`,
    only the first `length` entries along the axis count."""
    x = _arr(data)
    if temperature is not None and temperature != 1.0:
        x = x / temperature
    axis = normalize_axis("softmax", axis, x.ndim)
    mask = None
    if use_length and length is not None:
        x, mask = _masked_fill(x, _arr(length), axis, -_np.inf)
    elif fused_softmax.concrete_float(x):
        out = fused_softmax.apply("softmax", x, axis)
        return out if dtype is None else out.astype(normalize_dtype(dtype))
    e = knp.exp(x - knp.max(x, axis=axis, keepdims=True).detach())
    if mask is not None:
        e = knp.where(mask, e, 0)
    out = e / knp.sum(e, axis=axis, keepdims=True)
    return out if dtype is None else out.astype(normalize_dtype(dtype))


def log_softmax(data, axis=-1, length=None, temperature=None, use_length=False, dtype=None):
    """The logarithm of the softmax of `data` along `axis`, computed stably."""
    x = _arr(data)
    if temperature is not None and temperature != 1.0:
        x = x / temperature
    axis = normalize_axis("log_softmax", axis, x.ndim)
    if fused_softmax.concrete_float(x):
        out = fused_softmax.apply("log_softmax", x, axis)
        return out if dtype is None else out.astype(normalize_dtype(dtype))
    shifted = x - knp.max(x, axis=axis, keepdims=True).detach()
    out = shifted - knp.log(knp.sum(knp.exp(shifted), axis=axis, keepdims=True))
    return out if dtype is None else out.astype(normalize_dtype(dtype))


def masked_softmax(data, mask, axis=-1, temperature=1.0, normalize=True):
    """The softmax of `data` along `axis` over the entries where `mask` is true; masked entries get
    0."""
    x = _arr(data) / temperature
    m = _arr(mask).astype(_np.bool_)
    x = knp.where(m, x, -_np.inf)
    e = knp.where(m, knp.exp(x - knp.max(x, axis=axis, keepdims=True).detach()), 0)
    return e / knp.maximum(knp.sum(e, axis=axis, keepdims=True), 1e-30)


def attention(query, key, value, mask=None, scale=None):
    """softmax(query keyᵀ * scale) value over the last two axes, as one op (kiln/ops/
    attention.py): the C backend runs it in blocks without a whole score matrix.

    query (..., Tq, d), key (..., Tk, d), value (..., Tk, dv) -> (..., Tq, dv); scale
    defaults to 1 / sqrt(d). mask: True where a query may attend to a key, broadcast to
    (..., Tq, Tk); the probabilities of masked keys are 0, and a query with no key left
    gets zeros (as npx.masked_softmax gives)."""
    q, k, v = _arr(query), _arr(key), _arr(value)
    if scale is None:
        scale, divide = math.sqrt(q.shape[-1]), True
    else:
        scale, divide = float(scale), False
    if mask is None:
        m = ndarray._wrap(_np.ones((), dtype=_np.bool_))
        fill, zero_masked, floor = -_np.inf, False, 0.0
    else:
        m = _arr(mask).astype(_np.bool_)
        fill, zero_masked, floor = -_np.inf, True, 1e-30
    return _R["attention"](q, k, v, m, scale=scale, divide=divide, fill=fill,
                           zero_masked=zero_masked, floor=floor)
