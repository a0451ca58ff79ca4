"""Products of arrays: matmul, dot, tensordot, vdot, inner and outer, each one matmul
primitive between reshaped or transposed operands (einsum, built on the same matmuls, is
in einsum.py)."""
import numpy as _np

from .._core.base import normalize_axis, op_error
from .._core.dispatch import to_operands
from ..ops import REGISTRY as _R
from ._base import _arr, _out
from .manipulation import reshape, transpose
from .math import multiply


def matmul(a, b, out=None):
    """The matrix product of `a` and `b` (Python's `@`): batched over leading axes, with NumPy's
    rules for 1-D operands."""
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
    """The sum of products of `a` and `b` over the last `axes` axes of `a` and the first of `b` (or
    the two lists of axes given)."""
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
    """The dot product of `a` and `b`, both flattened to 1-D."""
    return dot(reshape(_arr(a), (-1,)), reshape(_arr(b), (-1,)))


def inner(a, b):
    """The inner product of `a` and `b` over their last axes (an ordinary product when one is a
    scalar)."""
    a, b = to_operands([a, b])
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    return tensordot(a, b, axes=([a.ndim - 1], [b.ndim - 1]))


def outer(a, b):
    """The outer product of `a` and `b`, both flattened: `out[i, j] = a[i] * b[j]`."""
    return multiply(reshape(_arr(a), (-1, 1)), reshape(_arr(b), (1, -1)))
