"""kiln.np.linalg."""
import numpy as _np

from ..base import op_error, KilnError
from ..ndarray import ndarray
from .math import sqrt, sum, abs, max, _arr, _float


def norm(x, ord=None, axis=None, keepdims=False):
    x = _float(_arr(x))
    if ord is None or ord == 2 and (axis is not None and not isinstance(axis, tuple)) or \
            ord == "fro":
        return sqrt(sum(x * x, axis=axis, keepdims=keepdims))
    if ord == 1 and (axis is not None and not isinstance(axis, tuple) or x.ndim == 1):
        return sum(abs(x), axis=axis, keepdims=keepdims)
    if ord in (_np.inf, "inf") and (x.ndim == 1 or axis is not None and
                                    not isinstance(axis, tuple)):
        return max(abs(x), axis=axis, keepdims=keepdims)
    if x.ndim == 1 and isinstance(ord, (int, float)):
        return sum(abs(x) ** ord, axis=axis, keepdims=keepdims) ** (1.0 / ord)
    raise op_error("linalg.norm", f"ord={ord!r} with axis={axis!r} is not supported", KilnError)


def _eager(name, fn):
    def wrapper(a, *args, **kwargs):
        res = fn(_arr(a)._concrete(f"linalg.{name}()"), *args, **kwargs)
        if isinstance(res, tuple):
            return tuple(ndarray._wrap(_np.asarray(r)) for r in res)
        return ndarray._wrap(_np.asarray(res))
    wrapper.__name__ = name
    wrapper.__doc__ = f"NumPy's linalg.{name}, eager only (no gradient)."
    return wrapper


inv = _eager("inv", _np.linalg.inv)
det = _eager("det", _np.linalg.det)
svd = _eager("svd", _np.linalg.svd)
eigh = _eager("eigh", _np.linalg.eigh)
eig = _eager("eig", _np.linalg.eig)
qr = _eager("qr", _np.linalg.qr)
cholesky = _eager("cholesky", _np.linalg.cholesky)
pinv = _eager("pinv", _np.linalg.pinv)
matrix_rank = _eager("matrix_rank", _np.linalg.matrix_rank)


def solve(a, b):
    return ndarray._wrap(_np.linalg.solve(_arr(a)._concrete("linalg.solve()"),
                                          _arr(b)._concrete("linalg.solve()")))
