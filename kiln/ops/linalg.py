"""Matrix multiplication, batched with NumPy broadcasting over the leading dimensions."""
import numpy as _np

from .registry import register
from .rules import broadcast_shapes
from .util import sum_to
from .._core.base import op_error


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


def _rows(x):
    """A stack of matrices (..., r, c) as one matrix (rows, c)."""
    from .shape import reshape
    return reshape(x, shape=(_prod(x.shape[:-1]), x.shape[-1]))


def _prod(dims):
    n = 1
    for d in dims:
        n *= d
    return n


def _matmul_grad(g, out, a, b):
    from .._core.autograd import input_needed
    ga = sum_to(matmul(g, _swap_last(b)), a) if input_needed(0) else None
    if not input_needed(1):
        gb = None
    elif a.ndim > 2 and b.ndim == 2:
        # a matrix applied to a batch (Dense on sequences): one (k x rows) @ (rows x n)
        # product, not a (batch, k, n) stack that is summed over the batch afterwards
        gb = sum_to(matmul(_swap_last(_rows(a)), _rows(g)), b)
    elif _transposed_matrix(a, b):
        # b is a transposed view (Dense's weight.T): its gradient made in that layout, so
        # the transpose's gradient hands the weight a C-ordered array, not a view its
        # store has to copy across the cache (0.3-0.5 s per 4096 x 6400 weight)
        gb = sum_to(_swap_last(matmul(_swap_last(g), a)), b)   # (dtype: None for integers)
    else:
        gb = sum_to(matmul(_swap_last(a), g), b)
    return ga, gb


def _transposed_matrix(a, b):
    return (a.ndim == 2 and b.ndim == 2 and b._node is None
            and b._data.flags.f_contiguous and not b._data.flags.c_contiguous)


def _matmul_2d(a, b):
    # the eager gemm a backend registers (kiln/backend/c/eager_gemm.py: its `matmul` gives
    # None for what it does not take), else NumPy's
    fast = matmul.lowerings.get("eager")
    out = None if fast is None else fast.matmul(a, b)
    return _np.matmul(a, b) if out is None else out


@register("matmul", _matmul_rule, _matmul_grad)
def matmul(a, b):
    if a.ndim > 2 and b.ndim == 2:
        # one gemm over all rows: NumPy's batched matmul loops over the matrices, and
        # without BLAS when they are not contiguous (a swapaxes view: 17x slower)
        rows = a.reshape(_prod(a.shape[:-1]), a.shape[-1])
        return _matmul_2d(rows, b).reshape(a.shape[:-1] + (b.shape[-1],))
    if a.ndim == 2 and b.ndim == 2:
        return _matmul_2d(a, b)
    return _np.matmul(a, b)
