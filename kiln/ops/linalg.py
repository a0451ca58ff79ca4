"""Matrix multiplication, batched with NumPy broadcasting over the leading dimensions."""
import numpy as _np

from .registry import register
from .rules import broadcast_shapes
from .util import sum_to
from ..base import op_error


def _matmul_rule(a, b):
    if a.ndim < 2 or b.ndim < 2:
        raise op_error("matmul", f"expected arrays of at least 2 dimensions, got shapes "
                       f"{tuple(a.shape)} and {tuple(b.shape)}")
    if a.shape[-1] != b.shape[-2]:
        raise op_error("matmul", f"shapes {tuple(a.shape)} and {tuple(b.shape)} not aligned: "
                       f"{a.shape[-1]} (dim {a.ndim - 1}) != {b.shape[-2]} (dim {b.ndim - 2})")
    batch = broadcast_shapes("matmul", a.shape[:-2], b.shape[:-2])
    return batch + (a.shape[-2], b.shape[-1]), _np.result_type(a.dtype, b.dtype)


def _swap_last(x):
    from .shape import transpose
    axes = tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2)
    return transpose(x, axes=axes)


def _matmul_grad(g, out, a, b):
    return sum_to(matmul(g, _swap_last(b)), a), sum_to(matmul(_swap_last(a), g), b)


@register("matmul", _matmul_rule, _matmul_grad)
def matmul(a, b):
    from ..backend.c import eager_gemm
    out = eager_gemm.matmul(a, b)
    return _np.matmul(a, b) if out is None else out
