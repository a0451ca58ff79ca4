"""Elementwise math, reductions and products, mapped onto registry primitives."""
import builtins as _b

import numpy as _np

from .._core.base import (DEFAULT_FLOAT, normalize_dtype, normalize_axes, normalize_axis,
    op_error)
from .._core.dispatch import apply, to_operands
from .._core.ndarray import ndarray
from ..ops import REGISTRY as _R
from ..ops.rules import is_float
from .manipulation import reshape, moveaxis, transpose, nonzero

_P = _R  # primitives by name


def _arr(x):
    return x if isinstance(x, ndarray) else to_operands([x])[0]


def _out(result, out):
    if out is None:
        return result
    out[...] = result
    return out


def _unary(name, public=None):
    prim = _R[name]

    def fn(x, out=None, **kwargs):
        return _out(prim(_arr(x)), out)
    fn.__name__ = public or name
    fn.__doc__ = f"Elementwise {public or name} (primitive `{name}`)."
    return fn


def _binary(name, public=None):
    prim = _R[name]

    def fn(x1, x2, out=None, **kwargs):
        return _out(apply(prim, (x1, x2), {}), out)
    fn.__name__ = public or name
    fn.__doc__ = f"Elementwise {public or name} with broadcasting (primitive `{name}`)."
    return fn


negative = _unary("negative")
exp = _unary("exp")
log = _unary("log")
sqrt = _unary("sqrt")
abs = absolute = _unary("abs")
sign = _unary("sign")
sin = _unary("sin")
cos = _unary("cos")
tanh = _unary("tanh")
arcsin = _unary("arcsin")
arccos = _unary("arccos")
arctan = _unary("arctan")
floor = _unary("floor")
ceil = _unary("ceil")
rint = _unary("round", "rint")
logical_not = _unary("logical_not")

add = _binary("add")
subtract = _binary("subtract")
multiply = _binary("multiply")
divide = true_divide = _binary("divide")
power = _binary("power")
maximum = _binary("maximum")
minimum = _binary("minimum")
mod = remainder = _binary("mod")
equal = _binary("equal")
not_equal = _binary("not_equal")
less = _binary("less")
less_equal = _binary("less_equal")
greater = _binary("greater")
greater_equal = _binary("greater_equal")
logical_and = _binary("logical_and")
logical_or = _binary("logical_or")
logical_xor = _binary("logical_xor")


# ---- composites ----------------------------------------------------------------------------

def square(x, out=None):
    x = _arr(x)
    return _out(x * x, out)


def reciprocal(x, out=None):
    return _out(1.0 / _float(_arr(x)), out)


def _float(x):
    return x if is_float(x.dtype) else x.astype(DEFAULT_FLOAT)


def log2(x, out=None):
    return _out(log(x) * (1.0 / _np.log(2.0)), out)


def log10(x, out=None):
    return _out(log(x) * (1.0 / _np.log(10.0)), out)


def log1p(x, out=None):
    return _out(_R["log1p"](_float(_arr(x))), out)


def expm1(x, out=None):
    return _out(_R["expm1"](_float(_arr(x))), out)


def tan(x, out=None):
    return _out(sin(x) / cos(x), out)


def sinh(x, out=None):
    e = exp(x)
    return _out((e - 1.0 / e) * 0.5, out)


def cosh(x, out=None):
    e = exp(x)
    return _out((e + 1.0 / e) * 0.5, out)


def floor_divide(x1, x2, out=None):
    x1, x2 = to_operands([x1, x2])
    q = floor(divide(x1, x2))
    dt = _np.result_type(x1.dtype, x2.dtype)
    if dt.kind in "iub":
        # NumPy's integer x // 0 is 0; the float quotient would be inf or nan, whose cast
        # to an integer is undefined (and differs between NumPy and C)
        q = where(x2 == 0, 0, q)
    return _out(q if q.dtype == dt else q.astype(dt), out)


def round(x, decimals=0, out=None):
    x = _arr(x)
    if decimals == 0:
        return _out(rint(x), out)
    scale = 10.0 ** decimals
    return _out(rint(x * scale) / scale, out)


around = round


def clip(a, a_min=None, a_max=None, out=None):
    a = _arr(a)
    if a_min is not None:
        a = maximum(a, a_min)
    if a_max is not None:
        a = minimum(a, a_max)
    return _out(a, out)


def where(condition, x=None, y=None):
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


def isnan(x, out=None):
    x = _arr(x)
    return _out(x != x, out)


def isinf(x, out=None):
    x = _arr(x)
    return _out(abs(x) == _np.inf, out)


def isfinite(x, out=None):
    x = _arr(x)
    return _out(logical_not(logical_or(isnan(x), isinf(x))), out)


def sigmoid(x):
    return _R["sigmoid"](_arr(x))


# ---- reductions ----------------------------------------------------------------------------

def _axes(op, a, axis):
    if axis is None:
        return None
    return normalize_axes(op, axis, a.ndim)


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, **kwargs):
    a = _arr(a)
    if dtype is not None:
        a = a.astype(normalize_dtype(dtype))
    r = _R["sum"](a, axis=_axes("sum", a, axis), keepdims=bool(keepdims))
    if initial is not None:
        r = r + initial
    return _out(r, out)


def _count(a, axis):
    axes = normalize_axes("mean", axis, a.ndim)
    n = 1
    for i in axes:
        n *= a.shape[i]
    return n


def mean(a, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
    a = _arr(a)
    dt = normalize_dtype(dtype) if dtype is not None else (
        a.dtype if is_float(a.dtype) else DEFAULT_FLOAT)
    s = sum(a.astype(dt) if a.dtype != dt else a, axis=axis, keepdims=keepdims)
    n = _count(a, axis)
    return _out(s / n if n else s * _np.nan, out)


average = mean


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    a = _float(_arr(a))
    mu = mean(a, axis=axis, keepdims=True)
    d = a - mu
    n = _count(a, axis)
    return _out(sum(d * d, axis=axis, keepdims=keepdims) / _b.max(n - ddof, 0), out)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    return _out(sqrt(var(a, axis=axis, ddof=ddof, keepdims=keepdims)), out)


def max(a, axis=None, out=None, keepdims=False):
    a = _arr(a)
    return _out(_R["max"](a, axis=_axes("max", a, axis), keepdims=bool(keepdims)), out)


def min(a, axis=None, out=None, keepdims=False):
    a = _arr(a)
    return _out(_R["min"](a, axis=_axes("min", a, axis), keepdims=bool(keepdims)), out)


amax, amin = max, min


def prod(a, axis=None, dtype=None, out=None, keepdims=False):
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
    return _out(_arg("argmax", a, axis, keepdims), out)


def argmin(a, axis=None, out=None, keepdims=False):
    return _out(_arg("argmin", a, axis, keepdims), out)


def all(a, axis=None, out=None, keepdims=False):
    a = _arr(a)
    # a count, not min/max: NumPy's all() of an empty array is True, not an error
    return _out(sum((a == 0).astype(_np.int32), axis=axis, keepdims=keepdims) == 0, out)


def any(a, axis=None, out=None, keepdims=False):
    a = _arr(a)
    return _out(sum((a != 0).astype(_np.int32), axis=axis, keepdims=keepdims) > 0, out)


def count_nonzero(a, axis=None, keepdims=False):
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


# ---- products ------------------------------------------------------------------------------

def matmul(a, b, out=None):
    a, b = to_operands([a, b])
    if a.ndim == 0 or b.ndim == 0:
        raise op_error("matmul", "matmul does not take 0-d arrays; use multiply")
    pa, pb = a.ndim == 1, b.ndim == 1
    if pa:
        a = reshape(a, (1, a.shape[0]))
    if pb:
        b = reshape(b, (b.shape[0], 1))
    r = _R["matmul"](a, b)
    if pa or pb:
        shape = r.shape[:-2] + (() if pa else (r.shape[-2],)) + (() if pb else (r.shape[-1],))
        r = reshape(r, shape)
    return _out(r, out)


def dot(a, b, out=None):
    """NumPy's dot: matmul for 1-D/2-D, a sum over a's last and b's second-to-last axis else."""
    a, b = to_operands([a, b])
    if a.ndim == 0 or b.ndim == 0:
        return _out(a * b, out)
    if b.ndim <= 2:
        if a.shape[-1] != b.shape[0]:
            raise op_error("dot", f"shapes {a.shape} and {b.shape} not aligned: "
                           f"{a.shape[-1]} (dim {a.ndim - 1}) != {b.shape[0]} (dim 0)")
        if a.ndim <= 2:
            return _out(matmul(a, b), out)
        lead = a.shape[:-1]
        r = matmul(reshape(a, (-1, a.shape[-1])), b)
        return _out(reshape(r, lead + b.shape[1:]), out)
    return _out(tensordot(a, b, axes=([a.ndim - 1], [b.ndim - 2])), out)


def tensordot(a, b, axes=2):
    a, b = to_operands([a, b])
    if isinstance(axes, (int, _np.integer)):
        axes_a = list(range(a.ndim - axes, a.ndim))
        axes_b = list(range(axes))
    else:
        axes_a, axes_b = axes
        axes_a = [axes_a] if isinstance(axes_a, int) else list(axes_a)
        axes_b = [axes_b] if isinstance(axes_b, int) else list(axes_b)
    axes_a = [normalize_axis("tensordot", x, a.ndim) for x in axes_a]
    axes_b = [normalize_axis("tensordot", x, b.ndim) for x in axes_b]
    for i, j in zip(axes_a, axes_b):
        if a.shape[i] != b.shape[j]:
            raise op_error("tensordot", f"shape mismatch for sum: {a.shape} and {b.shape} "
                           f"along axes {axes_a} and {axes_b}")
    free_a = [i for i in range(a.ndim) if i not in axes_a]
    free_b = [i for i in range(b.ndim) if i not in axes_b]
    k = int(_np.prod([a.shape[i] for i in axes_a]))
    at = reshape(transpose(a, free_a + axes_a), (-1, k))
    bt = reshape(transpose(b, axes_b + free_b), (k, -1))
    shape = tuple(a.shape[i] for i in free_a) + tuple(b.shape[i] for i in free_b)
    return reshape(matmul(at, bt), shape)


def vdot(a, b):
    return dot(reshape(_arr(a), (-1,)), reshape(_arr(b), (-1,)))


def inner(a, b):
    a, b = to_operands([a, b])
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    return tensordot(a, b, axes=([a.ndim - 1], [b.ndim - 1]))


def outer(a, b):
    return multiply(reshape(_arr(a), (-1, 1)), reshape(_arr(b), (1, -1)))
