"""What the kiln.np modules share: operands as arrays, NumPy's `out=`, the default float
for float-only math, and the constant-index gather and slice along one axis that many
composed functions are made of."""
import numpy as _np

from .._core.base import DEFAULT_FLOAT, normalize_axis
from .._core.dispatch import to_operands
from .._core.ndarray import ndarray
from ..ops import REGISTRY as _R
from ..ops.rules import is_float


def _arr(x):
    return x if isinstance(x, ndarray) else to_operands([x])[0]


def _out(result, out):
    if out is None:
        return result
    out[...] = result
    return out


def _float(x):
    return x if is_float(x.dtype) else x.astype(DEFAULT_FLOAT)


def _gather(a, flat_index, axis):
    """a's entries at a constant index array along `axis` (a differentiable gather)."""
    idx = ndarray._wrap(_np.asarray(flat_index, dtype=_np.int64))
    return _R["take"](a, idx, axis=normalize_axis("take", axis, a.ndim), mode="clip")


def _slice_axis(a, axis, start, stop):
    begin = [0] * a.ndim
    end = list(a.shape)
    begin[axis], end[axis] = start, stop
    return _R["slice"](a, begin=tuple(begin), end=tuple(end), step=(1,) * a.ndim)
