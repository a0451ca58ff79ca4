"""MXNet's npx indexing functions: gather_nd (a take on the flattened leading axes, so its
gradient is take's), slice (per-axis begin/end/step) and nonzero (eager: its shape depends
on the values)."""
import builtins

import numpy as _np

from .._core.base import op_error, KilnError
from .._core.ndarray import ndarray
from ..np._base import _arr
from ..np.manipulation import reshape
from ..ops import REGISTRY


def gather_nd(data, indices):
    """`out[i...] = data[indices[0][i...], indices[1][i...], ...]`: the first axis of
    `indices` indexes data's leading axes (MXNet's gather_nd); negative indices wrap."""
    data, idx = _arr(data), _arr(indices)
    if idx.ndim < 1 or idx.shape[0] > data.ndim:
        raise op_error("gather_nd", f"indices of shape {idx.shape} cannot index data of shape "
                       f"{data.shape}: the first axis of indices must be at most {data.ndim}",
                       KilnError)
    m = idx.shape[0]
    lead = data.shape[:m]
    if idx.dtype.kind not in "iu":
        idx = idx.astype(_np.int64)
    flat = None
    for k in range(m):
        part = idx[k] % lead[k]            # MXNet: -1 is the last, as in NumPy
        stride = int(_np.prod(lead[k + 1:], dtype=_np.int64))
        term = part * stride if stride != 1 else part
        flat = term if flat is None else flat + term
    rows = reshape(data, (int(_np.prod(lead, dtype=_np.int64)),) + data.shape[m:])
    return REGISTRY["take"](rows, flat, axis=0, mode="clip")


def slice(data, begin, end, step=None):
    """MXNet's slice: per-axis begin/end/step, None for the whole axis (axes past the
    given ones are taken whole)."""
    data, step = _arr(data), () if step is None else tuple(step)
    index = []
    for k in range(data.ndim):
        b = begin[k] if k < len(begin) else None
        e = end[k] if k < len(end) else None
        st = step[k] if k < len(step) else None
        index.append(builtins.slice(b, e, st))
    return data[tuple(index)]


def nonzero(a):
    """The indices of the non-zero entries, one row per entry: shape (N, a.ndim), int64."""
    return ndarray._wrap(_np.argwhere(_arr(a)._concrete("npx.nonzero()")).astype(_np.int64))
