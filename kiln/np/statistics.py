"""Statistics: averages and variances (mean, average, var, std), ptp, cov, corrcoef and
correlate, composed of reductions, matmuls and gathers, so they differentiate and
compile."""
import builtins as _b

import numpy as _np

from .._core.base import DEFAULT_FLOAT, normalize_dtype, normalize_axes, op_error, KilnError
from ..ops import REGISTRY as _R
from ..ops.rules import is_float
from ._base import _arr, _float, _gather, _out
from .indexing import diagonal
from .manipulation import reshape, transpose, concatenate, atleast_2d, flip
from .math import sqrt
from .products import matmul
from .reductions import sum, max, min


def _count(a, axis):
    axes = normalize_axes("mean", axis, a.ndim)
    n = 1
    for i in axes:
        n *= a.shape[i]
    return n


def mean(a, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
    """The arithmetic mean of `a` over `axis` (all axes when None); `average` is the same function
    (no weights)."""
    a = _arr(a)
    dt = normalize_dtype(dtype) if dtype is not None else (
        a.dtype if is_float(a.dtype) else DEFAULT_FLOAT)
    s = sum(a.astype(dt) if a.dtype != dt else a, axis=axis, keepdims=keepdims)
    n = _count(a, axis)
    return _out(s / n if n else s * _np.nan, out)


average = mean


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """The variance of `a` over `axis`, `mean(abs(a - a.mean())**2)`, divided by `N - ddof`."""
    a = _float(_arr(a))
    mu = mean(a, axis=axis, keepdims=True)
    d = a - mu
    n = _count(a, axis)
    return _out(sum(d * d, axis=axis, keepdims=keepdims) / _b.max(n - ddof, 0), out)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """The standard deviation of `a` over `axis`: the square root of `var`."""
    return _out(sqrt(var(a, axis=axis, ddof=ddof, keepdims=keepdims)), out)


def ptp(a, axis=None, keepdims=False):
    """The range of values (maximum minus minimum) of `a` over `axis`."""
    return max(a, axis=axis, keepdims=keepdims) - min(a, axis=axis, keepdims=keepdims)


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None,
        dtype=None):
    """The covariance matrix of the variables in `m` (rows are variables unless `rowvar=False`),
    and of `y` when given."""
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
    """The Pearson correlation coefficients of the variables in `x` (and `y`): the covariance
    normalized by the standard deviations."""
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
