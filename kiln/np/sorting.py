"""Sorting: sort, argsort, partition, msort, and unique. The orders come from NumPy
(eagerly); sort and partition are then differentiable, as gathers by that order."""
import numpy as _np

from .._core.ndarray import ndarray
from ..ops import REGISTRY as _R
from ._base import _arr
from .indexing import take_along_axis
from .manipulation import reshape


def sort(a, axis=-1, kind=None, order=None):
    """Sorted values; differentiable, as a gather by the sort order."""
    a = _arr(a)
    order_idx = _np.argsort(a._concrete("sort()"), axis=axis, kind=kind)
    if a.ndim == 1:
        return _R["take"](a, ndarray._wrap(order_idx), axis=0, mode="clip")
    return take_along_axis(a, ndarray._wrap(order_idx), axis)


def argsort(a, axis=-1, kind=None, order=None):
    """The indices that sort `a` along `axis`; computed eagerly (no gradient)."""
    return ndarray._wrap(_np.argsort(_arr(a)._concrete("argsort()"), axis=axis, kind=kind))


def partition(a, kth, axis=-1, kind="introselect", order=None):
    """NumPy's partition, differentiable as a gather by the partition order."""
    a = _arr(a)
    if axis is None:
        a, axis = reshape(a, (-1,)), 0
    idx = _np.argpartition(a._concrete("partition()"), kth, axis=axis)
    return take_along_axis(a, ndarray._wrap(idx), axis)


def msort(a):
    """A copy of `a` sorted along its first axis."""
    return sort(a, axis=0)


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None):
    """The sorted unique elements of `ar` (and, as asked, their first indices, the inverse indices
    and the counts); computed eagerly."""
    res = _np.unique(_arr(ar)._concrete("unique()"), return_index, return_inverse,
                     return_counts, axis)
    if isinstance(res, tuple):
        return tuple(ndarray._wrap(r) for r in res)
    return ndarray._wrap(res)
