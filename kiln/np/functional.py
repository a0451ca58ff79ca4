"""NumPy's functional routines: apply_along_axis and apply_over_axes, which call a Python
function per slice and join the results (so they differentiate through what it computes)."""
from .._core.base import normalize_axis
from ._base import _arr
from .manipulation import reshape, moveaxis, concatenate, expand_dims


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """`func1d` applied to the 1-D slices of `arr` along `axis`; the results are stacked in their
    place."""
    a = _arr(arr)
    axis = normalize_axis("apply_along_axis", axis, a.ndim)
    moved = moveaxis(a, axis, -1)
    lead = moved.shape[:-1]
    rows = reshape(moved, (-1, moved.shape[-1]))
    outs = [_arr(func1d(rows[i], *args, **kwargs)) for i in range(rows.shape[0])]
    stacked = concatenate([expand_dims(o, 0) for o in outs], axis=0)
    res = reshape(stacked, lead + outs[0].shape)
    if outs[0].ndim == 0:
        return res
    return moveaxis(res, -1, axis) if outs[0].ndim == 1 else res


def apply_over_axes(func, a, axes):
    """`func(a, axis)` applied repeatedly over each axis in `axes`, keeping the number of
    dimensions."""
    a = _arr(a)
    for ax in (axes if isinstance(axes, (tuple, list)) else (axes,)):
        res = _arr(func(a, ax))
        a = res if res.ndim == a.ndim else expand_dims(res, ax)
    return a
