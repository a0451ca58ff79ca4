"""MXNet's npx conversions: cast (to another dtype) and shape_array (an array's shape as an
int64 array)."""
import numpy as _np

from .._core.ndarray import ndarray
from ..np._base import _arr


def shape_array(data):
    """The shape of `data` as a 1-D int64 array."""
    return ndarray._wrap(_np.asarray(_arr(data).shape, dtype=_np.int64))


def cast(data, dtype):
    """`data` converted to `dtype` (`data.astype(dtype)`)."""
    return _arr(data).astype(dtype)
