"""MXNet 1.x's `nd.linalg` (also `nd.linalg_gemm`, ...): BLAS/LAPACK-style operators on
the last two axes, batched over the leading ones.

The products and the diagonal/triangle helpers (gemm, gemm2, trmm, syrk, sumlogdiag,
extractdiag, makediag, extracttrian, maketrian) are compositions of registry primitives,
so they differentiate and trace. The factorizations and solves (potrf, potri, trsm,
inverse, det, slogdet, gelqf, syevd) compute eagerly in NumPy with MXNet's gradients
(linalg_solvers.py). As in 1.x, a scalar result of one matrix has shape (1,).
"""
import numpy as _np

from ... import np as knp
from ..._core.base import KilnError
from ..._core.ndarray import ndarray
from ...ops import REGISTRY as _R


def _t(x):
    return knp.swapaxes(x, -1, -2)


def _one(x):
    return knp.reshape(x, (1,)) if x.ndim == 0 else x


def _check(op, a, square=True):
    if a.ndim < 2 or square and a.shape[-1] != a.shape[-2]:
        raise KilnError(f"linalg.{op}: expected a (stack of) {'square ' if square else ''}"
                        f"matrices, got shape {tuple(a.shape)}")


def gemm(A, B, C, transpose_a=False, transpose_b=False, alpha=1.0, beta=1.0, axis=-2, **_):
    """`alpha * op(A) @ op(B) + beta * C` over the last two axes, `op` transposing when asked."""
    return gemm2(A, B, transpose_a, transpose_b, alpha, axis) + C * float(beta)


def gemm2(A, B, transpose_a=False, transpose_b=False, alpha=1.0, axis=-2, **_):
    """`alpha * op(A) @ op(B)` over the last two axes, `op` transposing when asked."""
    if axis != -2:
        A, B = knp.moveaxis(A, axis, -2), knp.moveaxis(B, axis, -2)
    out = knp.matmul(_t(A) if transpose_a else A, _t(B) if transpose_b else B) * float(alpha)
    return knp.moveaxis(out, -2, axis) if axis != -2 else out


def _triangle(A, lower):
    n = A.shape[-1]
    mask = _np.tril(_np.ones((n, n))) if lower else _np.triu(_np.ones((n, n)))
    return A * ndarray._wrap(mask.astype(A.dtype))


def trmm(A, B, transpose=False, rightside=False, lower=True, alpha=1.0, **_):
    """alpha * op(A) B (or B op(A)), A triangular."""
    _check("trmm", A)
    tri = _triangle(A, lower)
    tri = _t(tri) if transpose else tri
    return (knp.matmul(B, tri) if rightside else knp.matmul(tri, B)) * float(alpha)


def syrk(A, transpose=False, alpha=1.0, **_):
    """alpha * A A^T (or A^T A)."""
    return (knp.matmul(_t(A), A) if transpose else knp.matmul(A, _t(A))) * float(alpha)


def sumlogdiag(A, **_):
    """The sum of the logarithms of the diagonal of each square matrix."""
    _check("sumlogdiag", A)
    return _one(knp.sum(knp.log(knp.diagonal(A, 0, -2, -1)), axis=-1))


def extractdiag(A, offset=0, **_):
    """The diagonal with `offset` of each matrix, as a vector."""
    _check("extractdiag", A, square=False)
    return knp.diagonal(A, int(offset), -2, -1)


def makediag(A, offset=0, **_):
    """Square matrices with A's last axis on the diagonal `offset`."""
    k = int(offset)
    m = A.shape[-1]
    n = m + abs(k)
    i = _np.arange(m)
    pos = (i + max(0, -k)) * n + i + max(0, k)
    flat = _R["scatter_add"](A, ndarray._wrap(pos), axis=A.ndim - 1, size=n * n)
    return knp.reshape(flat, A.shape[:-1] + (n, n))


def _trian_positions(n, offset, lower):
    rows, cols = (_np.tril_indices(n, offset) if lower else _np.triu_indices(n, offset))
    return rows * n + cols


def extracttrian(A, offset=0, lower=True, **_):
    """The lower (upper) triangle from diagonal `offset`, row by row."""
    _check("extracttrian", A)
    n, k = A.shape[-1], int(offset)
    flat = knp.reshape(A, A.shape[:-2] + (n * n,))
    # MXNet: `lower` matters only on the main diagonal; offset < 0 is lower, > 0 upper
    return knp.take(flat, _trian_positions(n, k, lower if k == 0 else k < 0), axis=-1)


def maketrian(A, offset=0, lower=True, **_):
    """extracttrian's inverse: a packed triangle back into square matrices."""
    size, k = A.shape[-1], int(offset)
    # the triangle of an n x n matrix from diagonal k (k <= 0 lower, k >= 0 upper) holds
    # m (m + 1) / 2 entries, m = n - |k|
    m = int(round((_np.sqrt(8 * size + 1) - 1) / 2))
    if m * (m + 1) // 2 != size:
        raise KilnError(f"linalg.maketrian: {size} entries are no triangle")
    n = m + abs(k)
    pos = _trian_positions(n, k, lower if k == 0 else k < 0)
    flat = _R["scatter_add"](A, ndarray._wrap(pos), axis=A.ndim - 1, size=n * n)
    return knp.reshape(flat, A.shape[:-1] + (n, n))


from .linalg_solvers import (potrf, potri, trsm, inverse, det, slogdet,  # noqa: E402,F401
                             gelqf, syevd)

NAMES = ("gemm gemm2 trmm syrk sumlogdiag extractdiag makediag extracttrian maketrian potrf "
         "potri trsm inverse det slogdet gelqf syevd").split()
