"""More of NumPy's array functions (MXNet's `np.einsum`, `np.diff`, `np.diagonal`, ...).

The differentiable ones are compositions of registry primitives (slices, gathers with
index arrays known from the shapes, matmuls), so gradients and compiled graphs come from
those. Functions whose result shape depends on the values (bincount, histogram, ...)
are eager, in NumPy (numpy_eager.py).
"""
import builtins as _b

import numpy as _np

from .._core.base import normalize_axis, op_error, KilnError
from .._core.dispatch import to_operands
from .._core.ndarray import ndarray
from ..ops import REGISTRY as _R
from .manipulation import (reshape, transpose, moveaxis, concatenate, broadcast_to, split,
                           expand_dims, atleast_2d)
from .math import _arr, _float, sum, matmul, mean, sqrt, max, min, where


def _gather(a, flat_index, axis):
    """a's entries at a constant index array along `axis` (a differentiable gather)."""
    idx = ndarray._wrap(_np.asarray(flat_index, dtype=_np.int64))
    return _R["take"](a, idx, axis=normalize_axis("take", axis, a.ndim), mode="clip")


def _slice_axis(a, axis, start, stop):
    begin = [0] * a.ndim
    end = list(a.shape)
    begin[axis], end[axis] = start, stop
    return _R["slice"](a, begin=tuple(begin), end=tuple(end), step=(1,) * a.ndim)


# ---- differences and diagonals -------------------------------------------------------------

def diff(a, n=1, axis=-1, prepend=None, append=None):
    a = _arr(a)
    if n < 0:
        raise op_error("diff", f"order must be non-negative but got {n}", KilnError)
    axis = normalize_axis("diff", axis, a.ndim)
    parts = []
    for extra in (prepend, a, append):
        if extra is None:
            continue
        e = _arr(extra)
        if e.ndim == 0:
            shape = list(a.shape)
            shape[axis] = 1
            e = broadcast_to(e, tuple(shape))
        parts.append(e)
    a = concatenate(parts, axis=axis) if len(parts) > 1 else a
    for _ in range(n):
        m = a.shape[axis]
        a = _slice_axis(a, axis, 1, m) - _slice_axis(a, axis, 0, _b.max(m - 1, 0))
    return a


def ediff1d(ary, to_end=None, to_begin=None):
    flat = diff(reshape(_arr(ary), (-1,)))
    parts = [reshape(_arr(x), (-1,)) for x in (to_begin,) if x is not None]
    parts += [flat] + [reshape(_arr(x), (-1,)) for x in (to_end,) if x is not None]
    return concatenate(parts) if len(parts) > 1 else flat


def diagonal(a, offset=0, axis1=0, axis2=1):
    a = _arr(a)
    i1 = normalize_axis("diagonal", axis1, a.ndim)
    i2 = normalize_axis("diagonal", axis2, a.ndim)
    if i1 == i2:
        raise op_error("diagonal", "axis1 and axis2 cannot be the same", KilnError)
    rows, cols = a.shape[i1], a.shape[i2]
    moved = transpose(a, [i for i in range(a.ndim) if i not in (i1, i2)] + [i1, i2])
    flat = reshape(moved, moved.shape[:-2] + (rows * cols,))
    r = _np.arange(_b.max(0, -offset), rows)
    r = r[r + offset < cols]
    return _gather(flat, r * cols + r + offset, -1)


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    return sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


def diagflat(v, k=0):
    v = reshape(_arr(v), (-1,))
    n = v.shape[0] + _b.abs(k)
    i = _np.arange(v.shape[0])
    pos = (i + _b.max(0, -k)) * n + i + _b.max(0, k)
    flat = _R["scatter_add"](v, ndarray._wrap(pos), axis=0, size=n * n)
    return reshape(flat, (n, n))


def diag_indices_from(arr):
    a = _arr(arr)
    if a.ndim < 2 or len(set(a.shape)) != 1:
        raise op_error("diag_indices_from", f"input must be at least 2-d with all dimensions "
                       f"equal, got shape {a.shape}", KilnError)
    idx = ndarray._wrap(_np.arange(a.shape[0]))
    return (idx,) * a.ndim


def atleast_3d(*arys):
    res = []
    for a in arys:
        a = _arr(a)
        shape = {0: (1, 1, 1), 1: (1,) + a.shape + (1,), 2: a.shape + (1,)}.get(a.ndim, a.shape)
        res.append(reshape(a, shape))
    return res[0] if len(res) == 1 else res


# ---- editing along an axis ------------------------------------------------------------------

def append(arr, values, axis=None):
    a, v = _arr(arr), _arr(values)
    if axis is None:
        return concatenate([reshape(a, (-1,)), reshape(v, (-1,))])
    return concatenate([a, v], axis=axis)


def _positions(op, obj, n):
    if isinstance(obj, slice):
        return _np.arange(n)[obj]
    if isinstance(obj, ndarray):
        obj = obj._concrete(f"{op}()")
    idx = _np.asarray(obj)
    if idx.dtype == _np.bool_:
        return _np.nonzero(idx)[0]
    idx = idx.astype(_np.int64)
    if ((idx < -n) | (idx >= n)).any() if op == "delete" else ((idx < -n) | (idx > n)).any():
        raise op_error(op, f"index {obj} is out of bounds for axis with size {n}", KilnError)
    return _np.where(idx < 0, idx + n, idx)


def delete(arr, obj, axis=None):
    a = _arr(arr)
    if axis is None:
        a, axis = reshape(a, (-1,)), 0
    axis = normalize_axis("delete", axis, a.ndim)
    keep = _np.ones(a.shape[axis], dtype=bool)
    keep[_positions("delete", obj, a.shape[axis])] = False
    return _gather(a, _np.nonzero(keep)[0], axis)


def insert(arr, obj, values, axis=None):
    """NumPy's insert; gradients flow to both arr and values."""
    a, v = _arr(arr), _arr(values)
    if axis is None:
        a, axis = reshape(a, (-1,)), 0
    axis = normalize_axis("insert", axis, a.ndim)
    n = a.shape[axis]
    if v.dtype != a.dtype:
        v = v.astype(a.dtype)
    if v.ndim < a.ndim:
        v = reshape(v, (1,) * (a.ndim - v.ndim) + v.shape)
    shape = list(a.shape)
    if isinstance(obj, (int, _np.integer)):
        # NumPy: one index inserts a block, values' first axis laid along `axis`
        v = moveaxis(v, 0, axis)
        shape[axis] = v.shape[axis]
        pos = _np.full(shape[axis], _positions("insert", [obj], n)[0])
    else:
        pos = _positions("insert", obj, n)
        shape[axis] = len(pos)
    v = broadcast_to(v, tuple(shape))
    # an insert at i goes before old element i; inserts at one index keep their order
    keys = _np.concatenate([_np.arange(n) * 2 + 1, pos * 2])
    order = _np.argsort(keys, kind="stable")
    return _gather(concatenate([a, v], axis=axis), order, axis)


def roll(a, shift, axis=None):
    a = _arr(a)
    if axis is None:
        return reshape(roll(reshape(a, (-1,)), shift, 0), a.shape)
    shifts = shift if isinstance(shift, (tuple, list)) else (shift,)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    for s, ax in zip(shifts, axes):
        ax = normalize_axis("roll", ax, a.ndim)
        n = a.shape[ax]
        if n:
            a = _gather(a, (_np.arange(n) - int(s)) % n, ax)
    return a


def rot90(m, k=1, axes=(0, 1)):
    from .manipulation import flip
    m = _arr(m)
    k %= 4
    if k == 0:
        return m
    if k == 2:
        return flip(flip(m, axes[0]), axes[1])
    perm = list(range(m.ndim))
    a0, a1 = (normalize_axis("rot90", x, m.ndim) for x in axes)
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return transpose(flip(m, a1), perm)
    return flip(transpose(m, perm), a1)


def rollaxis(a, axis, start=0):
    a = _arr(a)
    axis = normalize_axis("rollaxis", axis, a.ndim)
    start = start + a.ndim if start < 0 else start
    if axis < start:
        start -= 1
    return moveaxis(a, axis, start) if axis != start else a


def compress(condition, a, axis=None):
    a = _arr(a)
    cond = _np.asarray(condition._concrete("compress()") if isinstance(condition, ndarray)
                       else condition).astype(bool)
    if axis is None:
        a, axis = reshape(a, (-1,)), 0
    return _gather(a, _np.nonzero(cond)[0], axis)


def extract(condition, arr):
    cond = condition._concrete("extract()") if isinstance(condition, ndarray) else condition
    return compress(_np.ravel(cond), reshape(_arr(arr), (-1,)))


def flatnonzero(a):
    return ndarray._wrap(_np.flatnonzero(_arr(a)._concrete("flatnonzero()")))


def choose(a, choices, mode="raise"):
    idx = _arr(a)
    opts = to_operands(list(choices))
    if mode == "raise":
        vals = idx._concrete("choose()")
        if ((vals < 0) | (vals >= len(opts))).any():
            raise op_error("choose", f"invalid entry in choice array: indices must be in "
                           f"[0, {len(opts)})", KilnError)
    elif mode == "wrap":
        idx = idx % len(opts)
    else:
        idx = _R["maximum"](_R["minimum"](idx, len(opts) - 1), 0)
    out = opts[-1]
    for k in range(len(opts) - 2, -1, -1):
        out = where(idx == k, opts[k], out)
    return out


def dsplit(ary, indices_or_sections):
    return split(ary, indices_or_sections, axis=2)


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    a = _arr(arr)
    axis = normalize_axis("apply_along_axis", axis, a.ndim)
    moved = moveaxis(a, axis, -1)
    lead = moved.shape[:-1]
    rows = reshape(moved, (-1, moved.shape[-1]))
    outs = [_arr(func1d(rows[i], *args, **kwargs)) for i in range(rows.shape[0])]
    stacked = concatenate([expand_dims(o, 0) for o in outs], axis=0)
    res = reshape(stacked, lead + outs[0].shape)
    if outs[0].ndim == 0:
        return res
    return moveaxis(res, -1, axis) if outs[0].ndim == 1 else res


def apply_over_axes(func, a, axes):
    a = _arr(a)
    for ax in (axes if isinstance(axes, (tuple, list)) else (axes,)):
        res = _arr(func(a, ax))
        a = res if res.ndim == a.ndim else expand_dims(res, ax)
    return a


# ---- statistics -----------------------------------------------------------------------------

def ptp(a, axis=None, keepdims=False):
    return max(a, axis=axis, keepdims=keepdims) - min(a, axis=axis, keepdims=keepdims)


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None,
        dtype=None):
    if fweights is not None or aweights is not None:
        raise op_error("cov", "fweights and aweights are not supported", KilnError)
    x = _float(atleast_2d(_arr(m)))
    if not rowvar and x.shape[0] != 1:
        x = transpose(x)
    if y is not None:
        yy = _float(atleast_2d(_arr(y)))
        if not rowvar and yy.shape[0] != 1:
            yy = transpose(yy)
        x = concatenate([x, yy.astype(x.dtype)], axis=0)
    if dtype is not None:
        x = x.astype(dtype)
    ddof = (0 if bias else 1) if ddof is None else ddof
    centred = x - mean(x, axis=1, keepdims=True)
    c = matmul(centred, transpose(centred)) / float(_b.max(x.shape[1] - ddof, 0))
    return reshape(c, ()) if c.shape == (1, 1) and _arr(m).ndim == 1 and y is None else c


def corrcoef(x, y=None, rowvar=True, dtype=None, **_):
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return c / c
    d = sqrt(diagonal(c))
    r = c / reshape(d, (-1, 1)) / reshape(d, (1, -1))
    return _R["maximum"](_R["minimum"](r, 1.0), -1.0)


def correlate(a, v, mode="valid"):
    """NumPy's correlate of two 1-d arrays: sum_n a[n + k] * v[n]."""
    a, v = (reshape(_arr(t), (-1,)) for t in (a, v))
    n, m = a.shape[0], v.shape[0]
    if n == 0 or m == 0:
        raise op_error("correlate", "inputs cannot be empty", KilnError)
    if m > n:
        # NumPy swaps so the longer comes first, then reverses the result
        from .manipulation import flip
        return flip(correlate(v, a, mode), 0)
    pad = {"valid": (0, 0), "same": (m // 2, (m - 1) // 2), "full": (m - 1, m - 1)}.get(mode)
    if pad is None:
        raise op_error("correlate", f"mode must be 'valid', 'same' or 'full', got {mode!r}",
                       KilnError)
    zeros_lo = _arr(_np.zeros(pad[0], dtype=a.dtype))
    zeros_hi = _arr(_np.zeros(pad[1], dtype=a.dtype))
    padded = concatenate([zeros_lo, a, zeros_hi]) if pad != (0, 0) else a
    k = padded.shape[0] - m + 1
    windows = _gather(padded, _np.arange(k)[:, None] + _np.arange(m)[None, :], 0)
    return matmul(windows, v)


def trapz(y, x=None, dx=1.0, axis=-1):
    y = _float(_arr(y))
    axis = normalize_axis("trapz", axis, y.ndim)
    n = y.shape[axis]
    mid = (_slice_axis(y, axis, 1, n) + _slice_axis(y, axis, 0, n - 1)) * 0.5
    if x is None:
        return sum(mid, axis=axis) * dx
    step = diff(_arr(x), axis=-1 if _arr(x).ndim == 1 else axis)
    if step.ndim == 1 and y.ndim > 1:
        shape = [1] * y.ndim
        shape[axis] = step.shape[0]
        step = reshape(step, tuple(shape))
    return sum(mid * step, axis=axis)


# ---- windows --------------------------------------------------------------------------------

def _window(name, fn):
    def window(M, dtype=None, ctx=None, device=None):
        from .._core.base import DEFAULT_FLOAT
        return ndarray._wrap(fn(int(M)).astype(dtype or DEFAULT_FLOAT))
    window.__name__ = name
    window.__doc__ = f"NumPy's {name} window, in the default float (MXNet's dtype)."
    return window


hamming = _window("hamming", _np.hamming)
hanning = _window("hanning", _np.hanning)
blackman = _window("blackman", _np.blackman)

def select(condlist, choicelist, default=0):
    """The first choice whose condition holds, elementwise (differentiable in the choices)."""
    if len(condlist) != len(choicelist):
        raise op_error("select", "list of cases must be same length as list of conditions",
                       KilnError)
    out = _arr(default)
    for cond, choice in zip(reversed(condlist), reversed(choicelist)):
        out = where(cond, choice, out)
    return out


def partition(a, kth, axis=-1, kind="introselect", order=None):
    """NumPy's partition, differentiable as a gather by the partition order."""
    from .manipulation import take_along_axis
    a = _arr(a)
    if axis is None:
        a, axis = reshape(a, (-1,)), 0
    idx = _np.argpartition(a._concrete("partition()"), kth, axis=axis)
    return take_along_axis(a, ndarray._wrap(idx), axis)


def msort(a):
    from .manipulation import sort
    return sort(a, axis=0)
