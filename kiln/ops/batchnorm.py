"""Batch normalization as four fused primitives (C = x.shape[axis], M = x.size / C):

    batch_norm_stats(x)                      (2, C): per-channel mean and biased variance
                                             over every axis but `axis`
    batch_norm_train(x, gamma, beta)         x normalized by its own batch statistics,
                                             scaled and shifted
    batch_norm_param_grad(g, x, stats)       (2, C): sum(g) and sum(g * (x - mean))
    batch_norm_data_grad(g, x, stats, pg, gamma)   the gradient of batch_norm_train in x

batch_norm_train keeps nothing full-size for its gradient: the backward pass recomputes
the statistics (one pass over x; in a traced graph CSE shares them with the forward
pass's running-statistic update) and then needs one reduction pass and one output pass.

Float32 NumPy arrays go to the eager kernels the oneDNN layer registers on batch_norm_stats
and batch_norm_train (`prim.lowerings["eager"]`: kiln/backend/dnnl/bnorm.py) where the shim
is loaded: the kernels below, and in eager mode (outside create_graph and tracing)
batch_norm_train's whole gradient as one fused backward (_eager_train_grad).
"""
import math
import threading
import weakref

import numpy as _np

from . import compose
from .elementwise import sqrt
from .registry import register
from .._core import autograd, trace
from .._core.autograd import input_needed
from .._core.base import op_error
from .rules import is_float
from .._core.ndarray import ndarray


def _fast(prim, *arrays):
    """The eager kernels registered on prim (kiln/backend/dnnl/bnorm.py: usable, stats,
    train, infer, backward) when they can take these NumPy arrays (float32, the shim
    loaded), else None."""
    fast = prim.lowerings.get("eager")
    return fast if fast is not None and fast.usable(*arrays) else None


def _layout(op, x, axis):
    """(outer, C, inner) of x viewed around the channel axis."""
    if not isinstance(axis, int) or not 0 <= axis < len(x.shape):
        raise op_error(op, f"axis must be a dimension of the {len(x.shape)}-D input, got {axis!r}")
    if not is_float(x.dtype):
        raise op_error(op, f"expected a floating-point input, got {x.dtype}")
    c = x.shape[axis]
    outer = math.prod(x.shape[:axis])        # a symbolic size stays symbolic (no int())
    inner = math.prod(x.shape[axis + 1:])
    if c == 0:
        raise op_error(op, f"expected at least one channel, got shape {tuple(x.shape)} with "
                       f"channel axis {axis}")
    if outer * inner == 0:
        raise op_error(op, f"batch statistics need at least one element per channel, got "
                       f"shape {tuple(x.shape)} with channel axis {axis}")
    return outer, c, inner


def _per_channel(op, name, v, c, dtype, rows=None):
    want = (c,) if rows is None else (rows, c)
    if tuple(v.shape) != want or v.dtype != dtype:
        raise op_error(op, f"{name} must have shape {want} and dtype {dtype} to match the "
                       f"input, got shape {tuple(v.shape)} and dtype {v.dtype}")


def _same(op, g, x):
    if tuple(g.shape) != tuple(x.shape) or g.dtype != x.dtype:
        raise op_error(op, f"the gradient of shape {tuple(g.shape)} ({g.dtype}) does not fit "
                       f"the input of shape {tuple(x.shape)} ({x.dtype})")


def _bshape(x, axis):
    return tuple(x.shape[axis] if i == axis else 1 for i in range(x.ndim))


def _red(x, axis):
    return tuple(i for i in range(x.ndim) if i != axis)


def _channel_dot(a, b, axis, inner=None):
    """Per-channel sum of a * b (same-shape arrays) without a full-size temporary where
    the rows are long: a dot product per (outer, channel) row, then a sum over the outer.
    inner: the size of the axes after `axis`, when the caller knows it (checked once)."""
    if inner is None:
        inner = _layout("batch_norm", a, axis)[2]
    c, outer = a.shape[axis], math.prod(a.shape[:axis])
    if inner < 16:
        return _np.add.reduce(a * b, axis=_red(a, axis))
    a3, b3 = a.reshape(outer, c, inner), b.reshape(outer, c, inner)
    if not hasattr(_np, "vecdot"):       # NumPy < 2
        return _np.einsum("ocj,ocj->c", a3, b3)
    return _np.add.reduce(_np.vecdot(a3, b3), axis=0)


def _centered_dot(x, mean, g, axis):
    """Per-channel sum of (x - mean) * g, or of (x - mean)**2 when g is None, a few rows
    at a time (the centred rows are a cache-sized temporary, not a full-size one)."""
    inner = _layout("batch_norm", x, axis)[2]
    total = 0
    for rows in _row_blocks(x, axis):
        d = _np.subtract(x[rows], mean)
        total = total + _channel_dot(d, d if g is None else g[rows], axis, inner)
    return total


# ---- batch_norm_stats ---------------------------------------------------------------------

def _stats_rule(x, axis):
    c = _layout("batch_norm_stats", x, axis)[1]
    return (2, c), x.dtype


def _stats_grad(g, out, x, axis):
    m = x.size // x.shape[axis]
    b = _bshape(x, axis)
    gm, gv = compose.reshape(g[0], b), compose.reshape(g[1], b)
    return ((gm + 2 * gv * (x - compose.reshape(out[0], b))) / m,)


@register("batch_norm_stats", _stats_rule, _stats_grad)
def batch_norm_stats(x, axis):
    _stats_rule(x, axis)
    fast = _fast(batch_norm_stats, x)
    if fast is not None:
        return _np.stack(fast.stats(x, _layout("batch_norm_stats", x, axis)))
    red = _red(x, axis)
    m = x.size // x.shape[axis]
    mean = _np.add.reduce(x, axis=red, keepdims=True) / m
    var = _centered_dot(x, mean, None, axis) / m
    return _np.stack([mean.reshape(-1), var]).astype(x.dtype, copy=False)


# ---- batch_norm_train ---------------------------------------------------------------------

def _train_rule(x, gamma, beta, eps, axis):
    c = _layout("batch_norm_train", x, axis)[1]
    _per_channel("batch_norm_train", "gamma", gamma, c, x.dtype)
    _per_channel("batch_norm_train", "beta", beta, c, x.dtype)
    return tuple(x.shape), x.dtype


def _train_grad(g, out, x, gamma, beta, eps, axis):
    eager = _eager_train_grad(g, x, gamma, eps, axis)
    if eager is not None:
        return tuple(v if input_needed(i) else None for i, v in enumerate(eager))
    stats = batch_norm_stats(x, axis=axis)
    pg = batch_norm_param_grad(g, x, stats, axis=axis)
    dx = (batch_norm_data_grad(g, x, stats, pg, gamma, eps=eps, axis=axis)
          if input_needed(0) else None)
    dgamma = pg[1] / sqrt(stats[1] + eps) if input_needed(1) else None
    dbeta = pg[0] if input_needed(2) else None
    return dx, dgamma, dbeta


def _eager_train_grad(g, x, gamma, eps, axis):
    """(dx, dgamma, dbeta) in one fused backward pass on the shim (bnorm.py) for concrete
    float32 arrays outside create_graph and tracing, else None (the rule then composes
    the three recordable primitives)."""
    if (autograd.is_recording() or trace.current() is not None
            or any(a._node is not None for a in (g, x, gamma))):
        return None
    fast = _fast(batch_norm_train, g._data, x._data, gamma._data)
    if fast is None or tuple(g.shape) != tuple(x.shape):
        return None
    view = _layout("batch_norm_train", x._data, axis)
    return tuple(ndarray._wrap(v) for v in fast.backward(x._data, g._data, gamma._data,
                                                          float(eps), view))


def _scale_shift(mean, var, gamma, beta, eps):
    """Per-channel a, b with y = x * a + b."""
    a = gamma / _np.sqrt(var + eps)
    return a, beta - mean * a


@register("batch_norm_train", _train_rule, _train_grad)
def batch_norm_train(x, gamma, beta, eps, axis):
    _train_rule(x, gamma, beta, eps, axis)
    fast = _fast(batch_norm_train, x, gamma, beta)
    if fast is not None:
        y, mean, var = fast.train(x, gamma, beta, float(eps),
                                  _layout("batch_norm_train", x, axis))
        _last_train.stats = (weakref.ref(x), mean, var)
        return y
    red = _red(x, axis)
    m = x.size // x.shape[axis]
    mean = _np.add.reduce(x, axis=red, keepdims=True) / m
    y = _np.subtract(x, mean)
    var = _channel_dot(y, y, axis) / m
    b = _bshape(x, axis)
    scale = (gamma / _np.sqrt(var + eps)).astype(x.dtype, copy=False).reshape(b)
    for rows in _row_blocks(x, axis):
        out = y[rows]
        out *= scale
        out += beta.reshape(b)
    _last_train.stats = (weakref.ref(x), mean, var)
    return y


_last_train = threading.local()


def stats_of_last_train(x):
    """batch_norm_stats(x) as the last batch_norm_train kernel of this thread computed it
    on the NumPy array x (the same object, called just before), else None. Eager
    npx.batch_norm updates its running statistics from them instead of two more passes
    over x."""
    last = getattr(_last_train, "stats", None)
    _last_train.stats = None
    if last is None or last[0]() is not x:
        return None
    return _np.stack([last[1].reshape(-1), last[2]]).astype(x.dtype, copy=False)


def normalize_values(x, mean, var, gamma, beta, eps, axis):
    """(x - mean) / sqrt(var + eps) * gamma + beta with per-channel NumPy vectors, as
    in-place passes over cache-sized row blocks: one trip through memory, not four. The
    centring comes first, so a mean large against the spread does not cancel. On the
    kernels registered for batch_norm_train (their `infer`) where they take the arrays."""
    fast = _fast(batch_norm_train, x, mean, var, gamma, beta)
    if fast is not None:
        return fast.infer(x, mean, var, gamma, beta, float(eps),
                          _layout("batch_norm", x, axis))
    b = _bshape(x, axis)
    mean = mean.reshape(b)
    scale = (gamma / _np.sqrt(var + eps)).astype(x.dtype, copy=False).reshape(b)
    beta = beta.reshape(b)
    y = _np.empty_like(x)
    for rows in _row_blocks(x, axis):
        out = y[rows]
        _np.subtract(x[rows], mean, out=out)
        out *= scale
        out += beta
    return y


# ---- backward ----------------------------------------------------------------------------

def _pg_rule(g, x, stats, axis):
    c = _layout("batch_norm_param_grad", x, axis)[1]
    _same("batch_norm_param_grad", g, x)
    _per_channel("batch_norm_param_grad", "stats", stats, c, x.dtype, rows=2)
    return (2, c), x.dtype


def _pg_grad(c, out, g, x, stats, axis):
    b = _bshape(x, axis)
    c0, c1 = compose.reshape(c[0], b), compose.reshape(c[1], b)
    d = x - compose.reshape(stats[0], b)
    dmean = -compose.sum(c1 * g, axis=_red(x, axis))
    return (c0 + c1 * d, c1 * g, compose.stack([dmean, compose.zeros_like(dmean)]))


@register("batch_norm_param_grad", _pg_rule, _pg_grad)
def batch_norm_param_grad(g, x, stats, axis):
    _pg_rule(g, x, stats, axis)
    red = _red(x, axis)
    b = _bshape(x, axis)
    return _np.stack([_np.add.reduce(g, axis=red),
                      _centered_dot(x, stats[0].reshape(b), g, axis)])


def _dg_rule(g, x, stats, pg, gamma, eps, axis):
    c = _layout("batch_norm_data_grad", x, axis)[1]
    _same("batch_norm_data_grad", g, x)
    _per_channel("batch_norm_data_grad", "stats", stats, c, x.dtype, rows=2)
    _per_channel("batch_norm_data_grad", "param_grad", pg, c, x.dtype, rows=2)
    _per_channel("batch_norm_data_grad", "gamma", gamma, c, x.dtype)
    return tuple(x.shape), x.dtype


def data_grad_coefficients(stats, pg, gamma, eps, m):
    """Per-channel k, a, b with dx = g * k + (x - mean) * a + b (k = gamma / std); the
    mean is subtracted per element, not folded into b, which would cancel when it is large
    against the spread."""
    r = 1.0 / _np.sqrt(stats[1] + eps)
    k = gamma * r
    a = -k * r * r * pg[1] / m
    return k, a, -k * pg[0] / m


def _dg_grad(c, out, g, x, stats, pg, gamma, eps, axis):
    """dx = g * k + (x - mean) * a + cc is linear in g and x; k, a, cc are per-channel
    functions of stats, pg and gamma (data_grad_coefficients), differentiated by hand."""
    b, red, m = _bshape(x, axis), _red(x, axis), x.size // x.shape[axis]
    mean, r = stats[0], 1.0 / sqrt(stats[1] + eps)
    r3 = r * r * r
    k, a = gamma * r, -gamma * r3 * pg[1] / m
    d = x - compose.reshape(mean, b)
    gk, ga_c = compose.sum(c * g, axis=red), compose.sum(c * d, axis=red)
    gc = compose.sum(c, axis=red)
    d_mean = -gc * a
    d_p0, d_p1 = -gc * k / m, -gamma * r3 / m * ga_c
    d_gamma = gk * r - r3 * pg[1] / m * ga_c - gc * r * pg[0] / m
    d_r = gk * gamma - 3 * gamma * r * r * pg[1] / m * ga_c - gc * gamma * pg[0] / m
    d_var = -0.5 * r3 * d_r
    return (c * compose.reshape(k, b), c * compose.reshape(a, b),
            compose.stack([d_mean, d_var]), compose.stack([d_p0, d_p1]), d_gamma)


@register("batch_norm_data_grad", _dg_rule, _dg_grad)
def batch_norm_data_grad(g, x, stats, pg, gamma, eps, axis):
    _dg_rule(g, x, stats, pg, gamma, eps, axis)
    b = _bshape(x, axis)
    k, a, c = (v.reshape(b) for v in data_grad_coefficients(
        stats, pg, gamma, eps, x.size // x.shape[axis]))
    mean = stats[0].reshape(b)
    dx = _np.empty_like(x)
    tmp = None
    # a few rows at a time, so that the temporaries of the five passes stay in cache
    for rows in _row_blocks(x, axis):
        out = dx[rows]
        _np.subtract(x[rows], mean, out=out)
        out *= a
        out += c
        if tmp is None or tmp.shape != out.shape:
            tmp = _np.empty_like(out)
        _np.multiply(g[rows], k, out=tmp)
        out += tmp
    return dx


def _row_blocks(x, axis, nbytes=1 << 18):
    """Slices of the first axis holding about nbytes each (all of it if axis is 0)."""
    if axis == 0 or x.ndim == 0 or x.shape[0] == 0:
        return [slice(None)]
    step = max(1, nbytes // max(1, (x.size // x.shape[0]) * x.itemsize))
    return [slice(i, i + step) for i in range(0, x.shape[0], step)]
