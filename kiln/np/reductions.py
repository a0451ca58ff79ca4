"""Sums, products and differences along axes: the reductions (sum, prod, max, min, argmax,
argmin, all, any, count_nonzero), cumsum, trace, diff, ediff1d and trapz, over registry
primitives (cumsum is a product with a triangular matrix, so it is differentiable)."""
import builtins as _b

import numpy as _np

from .._core.base import normalize_dtype, normalize_axes, normalize_axis, op_error, KilnError
from .._core.ndarray import ndarray
from ..ops import REGISTRY as _R
from ._base import _arr, _float, _out, _slice_axis
from .indexing import diagonal
from .manipulation import reshape, moveaxis, concatenate, broadcast_to
from .products import matmul


def _axes(op, a, axis):
    if axis is None:
        return None
    return normalize_axes(op, axis, a.ndim)


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, **kwargs):
    """The sum of the elements of `a` over `axis` (all axes when None)."""
    a = _arr(a)
    if dtype is not None:
        a = a.astype(normalize_dtype(dtype))
    r = _R["sum"](a, axis=_axes("sum", a, axis), keepdims=bool(keepdims))
    if dtype is not None and r.dtype != a.dtype:    # the primitive widens small ints, as
        r = r.astype(a.dtype)                       # NumPy does only when no dtype is given
    if initial is not None:
        r = r + initial
    return _out(r, out)


def max(a, axis=None, out=None, keepdims=False):
    """The maximum of `a` over `axis` (all axes when None); `amax` is the same."""
    a = _arr(a)
    return _out(_R["max"](a, axis=_axes("max", a, axis), keepdims=bool(keepdims)), out)


def min(a, axis=None, out=None, keepdims=False):
    """The minimum of `a` over `axis` (all axes when None); `amin` is the same."""
    a = _arr(a)
    return _out(_R["min"](a, axis=_axes("min", a, axis), keepdims=bool(keepdims)), out)


amax, amin = max, min


def prod(a, axis=None, dtype=None, out=None, keepdims=False):
    """The product of the elements of `a` over `axis` (all axes when None); `product` is the same.
    """
    a = _arr(a)
    if dtype is not None:
        a = a.astype(normalize_dtype(dtype))
    return _out(_R["prod"](a, axis=_axes("prod", a, axis), keepdims=bool(keepdims)), out)


def _arg(name, a, axis, keepdims):
    a = _arr(a)
    if axis is not None:
        axis = normalize_axis(name, axis, a.ndim)
    return _R[name](a, axis=axis, keepdims=bool(keepdims))


def argmax(a, axis=None, out=None, keepdims=False):
    """The indices of the maximum values of `a` along `axis` (of the flattened array when None)."""
    return _out(_arg("argmax", a, axis, keepdims), out)


def argmin(a, axis=None, out=None, keepdims=False):
    """The indices of the minimum values of `a` along `axis` (of the flattened array when None)."""
    return _out(_arg("argmin", a, axis, keepdims), out)


def all(a, axis=None, out=None, keepdims=False):
    """Whether every element over `axis` is nonzero (True for an empty array); `alltrue` is the
    same."""
    a = _arr(a)
    # a count, not min/max: NumPy's all() of an empty array is True, not an error
    return _out(sum((a == 0).astype(_np.int32), axis=axis, keepdims=keepdims) == 0, out)


def any(a, axis=None, out=None, keepdims=False):
    """Whether any element over `axis` is nonzero; `sometrue` is the same."""
    a = _arr(a)
    return _out(sum((a != 0).astype(_np.int32), axis=axis, keepdims=keepdims) > 0, out)


def count_nonzero(a, axis=None, keepdims=False):
    """The number of nonzero elements of `a` over `axis` (all axes when None)."""
    return sum((_arr(a) != 0).astype(_np.int64), axis=axis, keepdims=keepdims)


def cumsum(a, axis=None, dtype=None, out=None):
    """Cumulative sum as a product with a triangular matrix, so it is differentiable."""
    a = _arr(a)
    if dtype is not None:
        a = a.astype(normalize_dtype(dtype))
    if axis is None:
        a, axis = reshape(a, (-1,)), 0
    axis = normalize_axis("cumsum", axis, a.ndim)
    n = a.shape[axis]
    tri = ndarray._wrap(_np.triu(_np.ones((n, n), dtype=a.dtype)))
    moved = moveaxis(a, axis, -1)
    if moved.ndim == 1:
        moved = reshape(moved, (1, n))
        return _out(reshape(matmul(moved, tri), (n,)), out)
    return _out(moveaxis(matmul(moved, tri), -1, axis), out)


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """The sum along the diagonal with `offset` of the 2-D sub-arrays over `axis1` and `axis2`."""
    return sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


# ---- differences and integrals --------------------------------------------------------

def diff(a, n=1, axis=-1, prepend=None, append=None):
    """The `n`-th discrete difference along `axis` (`a[1:] - a[:-1]`, applied `n` times), after
    `prepend` and `append`."""
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
    """The differences between consecutive elements of the flattened array, with `to_begin` and
    `to_end` added."""
    flat = diff(reshape(_arr(ary), (-1,)))
    parts = [reshape(_arr(x), (-1,)) for x in (to_begin,) if x is not None]
    parts += [flat] + [reshape(_arr(x), (-1,)) for x in (to_end,) if x is not None]
    return concatenate(parts) if len(parts) > 1 else flat


def trapz(y, x=None, dx=1.0, axis=-1):
    """The integral of `y` along `axis` by the trapezoidal rule, at sample points `x` or spacing
    `dx`."""
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
