"""Indexing and selection routines: where, take, take_along_axis, choose, select, compress,
extract; the indices of non-zero entries; diagonals (diag, diagonal, diagflat,
diag_indices_from).

The differentiable ones gather or scatter with index arrays known from the shapes or read
eagerly from the condition, so gradients and compiled graphs come from those primitives;
nonzero and argwhere, whose result shape depends on the values, are eager.
"""
import builtins as _b

import numpy as _np

from .._core.base import normalize_axis, op_error, KilnError
from .._core.dispatch import to_operands
from .._core.symdim import has_symbolic, is_symbolic
from .._core.ndarray import ndarray
from ..ops import REGISTRY as _R
from ._base import _arr, _gather
from .manipulation import reshape, transpose, moveaxis, broadcast_to


def where(condition, x=None, y=None):
    """Elements of `x` where `condition` is true, else of `y` (broadcast together); with only
    `condition`, the same as `nonzero(condition)`."""
    if x is None and y is None:
        return nonzero(condition)
    c = _arr(condition)
    if isinstance(x, ndarray) or not isinstance(y, ndarray):
        x, y = to_operands([x, y])
    else:
        y, x = to_operands([y, x])  # a scalar x takes y's dtype
    if c.dtype != _np.bool_:
        c = c != 0
    return _R["where"](c, x, y)


def take(a, indices, axis=None, mode="clip", out=None):
    """Elements of `a` at `indices` along `axis` (of the flattened array when `axis` is None);
    out-of-range indices are clipped (`mode='clip'`, MXNet's default; `'raise'` clips too)
    or wrapped (`mode='wrap'`)."""
    a = _arr(a)
    idx = indices if isinstance(indices, ndarray) else ndarray._wrap(
        _np.asarray(indices, dtype=_np.int64))
    if idx.dtype.kind not in "iu":
        idx = idx.astype(_np.int64)
    if axis is None:
        a, axis = reshape(a, (-1,)), 0
    if mode not in ("clip", "wrap", "raise"):
        raise op_error("take", f"mode must be 'clip', 'wrap' or 'raise', got {mode!r}", KilnError)
    r = _R["take"](a, idx, axis=normalize_axis("take", axis, a.ndim),
                   mode="clip" if mode == "raise" else mode)
    if out is not None:
        out[...] = r
        return out
    return r


def take_along_axis(arr, indices, axis):
    """Gather along one axis (pick_along)."""
    return pick_along(_arr(arr), _arr(indices), axis)


def pick_along(data, index, axis):
    """take_along_axis: out[..., j, ...] = data[..., index[..., j, ...], ...] along `axis`,
    one take of the flattened data, so its gradient is take's (npx.pick uses it too)."""
    axis = normalize_axis("pick", axis, data.ndim)
    if index.ndim != data.ndim:
        raise op_error("take_along_axis", f"index has {index.ndim} dimensions, data has "
                       f"{data.ndim}")
    x = moveaxis(data, axis, -1)
    idx = moveaxis(index, axis, -1)
    lead = x.shape[:-1]
    n = x.shape[-1]
    idx = broadcast_to(idx, lead + (idx.shape[-1],))
    if has_symbolic(lead) and not is_symbolic(n) and x.dtype.kind == "f":
        clipped = _R["minimum"](_R["maximum"](idx.astype(_np.int64), 0), n - 1)
        return moveaxis(_pick_by_mask(x, clipped, n), -1, axis)
    base = _np.arange(int(_np.prod(lead, dtype=_np.int64)), dtype=_np.int64).reshape(
        lead + (1,)) * n
    clipped = _R["minimum"](_R["maximum"](idx.astype(_np.int64), 0), n - 1)   # np.clip's ops
    flat = ndarray._wrap(base) + clipped
    out = _R["take"](reshape(x, (-1,)), flat, axis=0, mode="clip")
    return moveaxis(out, -1, axis)


def _pick_by_mask(x, idx, n):
    """pick_along's result where the rows are a symbolic size (a batch that varies): the
    row offsets of one flat take would be a constant of the traced row count, so each
    index selects its element by comparing with 0..n-1 instead, and the row sums of the
    selection are the picked values exactly (one element and zeros; NaN and inf kept).
    It does n times the work of a take, about what a softmax over those n costs."""
    shape = tuple(idx.shape) + (n,)
    hit = _R["equal"](broadcast_to(reshape(idx, tuple(idx.shape) + (1,)), shape),
                      broadcast_to(ndarray._wrap(_np.arange(n, dtype=_np.int64)), shape))
    values = broadcast_to(reshape(x, tuple(x.shape[:-1]) + (1, n)), shape)
    zero = broadcast_to(ndarray._wrap(_np.zeros((), x.dtype)), shape)
    return _R["sum"](_R["where"](hit, values, zero), axis=-1)


def choose(a, choices, mode="raise"):
    """An array built by picking, for each element of the index array `a`, the element of
    `choices[a]` at that position."""
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


def select(condlist, choicelist, default=0):
    """The first choice whose condition holds, elementwise (differentiable in the choices)."""
    if len(condlist) != len(choicelist):
        raise op_error("select", "list of cases must be same length as list of conditions",
                       KilnError)
    out = _arr(default)
    for cond, choice in zip(reversed(condlist), reversed(choicelist)):
        out = where(cond, choice, out)
    return out


def compress(condition, a, axis=None):
    """The slices of `a` along `axis` (or elements of the flattened `a`) where `condition` is true;
    the condition is read eagerly."""
    a = _arr(a)
    cond = _np.asarray(condition._concrete("compress()") if isinstance(condition, ndarray)
                       else condition).astype(bool)
    if axis is None:
        a, axis = reshape(a, (-1,)), 0
    return _gather(a, _np.nonzero(cond)[0], axis)


def extract(condition, arr):
    """The elements of `arr` where `condition` is true, as a 1-D array; the condition is read
    eagerly."""
    cond = condition._concrete("extract()") if isinstance(condition, ndarray) else condition
    return compress(_np.ravel(cond), reshape(_arr(arr), (-1,)))


def nonzero(a):
    """A tuple of index arrays, one per dimension, of the nonzero elements of `a`; computed eagerly
    (its shape depends on the values)."""
    a = _arr(a)
    return tuple(ndarray._wrap(i) for i in _np.nonzero(a._concrete("nonzero()")))


def argwhere(a):
    """The indices of the nonzero elements of `a`, one row per element; computed eagerly."""
    return ndarray._wrap(_np.argwhere(_arr(a)._concrete("argwhere()")))


def flatnonzero(a):
    """The indices of the nonzero elements of the flattened `a`; computed eagerly."""
    return ndarray._wrap(_np.flatnonzero(_arr(a)._concrete("flatnonzero()")))


# ---- diagonals ---------------------------------------------------------------------------

def diag(v, k=0):
    """The `k`-th diagonal of a 2-D array, or a 2-D array with the 1-D `v` on its `k`-th diagonal.
    """
    a = _arr(v)
    if k == 0 and a.ndim == 1:
        return ndarray._wrap(_np.eye(a.shape[0], dtype=a.dtype)) * a
    if k == 0 and a.ndim == 2:
        idx = _np.arange(_b.min(a.shape))
        return a[idx, idx]
    return ndarray._wrap(_np.diag(a._concrete("diag()"), k))


def diagonal(a, offset=0, axis1=0, axis2=1):
    """The diagonal with `offset` of the 2-D sub-arrays over `axis1` and `axis2`, as the last axis
    of the result."""
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


def diagflat(v, k=0):
    """A 2-D array with the flattened `v` on its `k`-th diagonal."""
    v = reshape(_arr(v), (-1,))
    n = v.shape[0] + _b.abs(k)
    i = _np.arange(v.shape[0])
    pos = (i + _b.max(0, -k)) * n + i + _b.max(0, k)
    flat = _R["scatter_add"](v, ndarray._wrap(pos), axis=0, size=n * n)
    return reshape(flat, (n, n))


def diag_indices_from(arr):
    """The index arrays of the main diagonal of `arr`, whose dimensions must all be equal."""
    a = _arr(arr)
    if a.ndim < 2 or len(set(a.shape)) != 1:
        raise op_error("diag_indices_from", f"input must be at least 2-d with all dimensions "
                       f"equal, got shape {a.shape}", KilnError)
    idx = ndarray._wrap(_np.arange(a.shape[0]))
    return (idx,) * a.ndim
