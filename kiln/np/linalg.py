"""kiln.np.linalg."""
import numpy as _np

from .._core.base import op_error, KilnError
from .._core.ndarray import ndarray
from ._base import _arr, _float
from .math import sqrt, abs
from .reductions import sum, max


def norm(x, ord=None, axis=None, keepdims=False):
    """The matrix or vector norm of `x` (Frobenius or 2-norm by default; `ord` and `axis` as in
    NumPy)."""
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
    """The solution `x` of the linear system `a @ x = b`; computed eagerly by NumPy."""
    return ndarray._wrap(_np.linalg.solve(_arr(a)._concrete("linalg.solve()"),
                                          _arr(b)._concrete("linalg.solve()")))


slogdet = _eager("slogdet", _np.linalg.slogdet)
cond = _eager("cond", _np.linalg.cond)
eigvals = _eager("eigvals", _np.linalg.eigvals)
eigvalsh = _eager("eigvalsh", _np.linalg.eigvalsh)
tensorinv = _eager("tensorinv", _np.linalg.tensorinv)


def lstsq(a, b, rcond="warn"):
    """NumPy's lstsq, eager: (solution, residuals, rank, singular values)."""
    rcond = None if rcond == "warn" else rcond
    x, res, rank, sv = _np.linalg.lstsq(_arr(a)._concrete("linalg.lstsq()"),
                                        _arr(b)._concrete("linalg.lstsq()"), rcond=rcond)
    return ndarray._wrap(x), ndarray._wrap(res), int(rank), ndarray._wrap(sv)


def tensorsolve(a, b, axes=None):
    """The solution `x` of the tensor equation `tensordot(a, x, x.ndim) = b`; computed eagerly by
    NumPy."""
    return ndarray._wrap(_np.linalg.tensorsolve(_arr(a)._concrete("linalg.tensorsolve()"),
                                                _arr(b)._concrete("linalg.tensorsolve()"),
                                                axes))


def matrix_power(a, n):
    """a @ a @ ... (n times) by repeated squaring: differentiable for n >= 0."""
    from .products import matmul
    from .creation import eye
    a = _arr(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise op_error("linalg.matrix_power", f"expected a stack of square matrices, got "
                       f"shape {a.shape}", KilnError)
    if n < 0:
        a, n = inv(a), -n
    result, base = None, a
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    if result is None:
        return eye(a.shape[-1], dtype=a.dtype) * ndarray._wrap(_np.ones(a.shape, a.dtype))
    return result


def multi_dot(arrays, out=None):
    """The product of a chain of matrices (first 1-d taken as a row, last as a column),
    multiplied in the order that needs the fewest flops."""
    from .products import dot
    arrays = [_arr(x) for x in arrays]
    if len(arrays) < 2:
        raise op_error("linalg.multi_dot", "expected at least two arrays", KilnError)
    if len(arrays) == 2:
        return dot(arrays[0], arrays[1])
    dims = [x.shape[0] if x.ndim == 2 else 1 for x in arrays[:1]]
    dims += [x.shape[-1] if x.ndim == 2 else 1 for x in arrays[:-1]]
    dims += [arrays[-1].shape[-1] if arrays[-1].ndim == 2 else 1]
    order = _chain_order(dims)

    def product(i, j):
        if i == j:
            return arrays[i]
        k = order[i][j]
        return dot(product(i, k), product(k + 1, j))
    return product(0, len(arrays) - 1)


def _chain_order(dims):
    """Matrix-chain split points (the textbook dynamic programme)."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split
