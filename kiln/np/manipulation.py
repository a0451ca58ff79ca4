"""Array manipulation: reshaping, transposing, joining, splitting, tiling, flipping and
rolling arrays, and editing them along an axis (append, delete, insert, pad)."""
import builtins as _b
import operator

import numpy as _np

from .._core.base import (normalize_axis, op_error, KilnError, ValueRangeError,
                          where_in_user_code)
from .._core.dispatch import to_operands
from .._core.ndarray import ndarray
from .._core.symdim import SymInt, same_at_every_size
from ..ops import REGISTRY as _R, compose
from ._base import _arr, _gather


def _resolve_shape(op, size, shape):
    if type(shape) is tuple:
        for d in shape:
            if type(d) is not int or d < 0:
                break
        else:
            return shape        # the common case: nothing to resolve (the op checks the size)
    if isinstance(shape, (int, _np.integer)):
        shape = (int(shape),)
    try:
        # a symbolic size (a traced x.shape[0] // 2, say) stays symbolic
        shape = [d if isinstance(d, SymInt) else operator.index(d) for d in shape]
    except TypeError:
        raise op_error(op, f"shape must be a tuple of ints, got {shape!r}", KilnError) from None
    unknown = [i for i, d in enumerate(shape) if d == -1]
    if len(unknown) > 1:
        raise op_error(op, f"can only specify one unknown dimension (-1), got {tuple(shape)}")
    if any(d < -1 for d in shape):
        raise op_error(op, f"invalid shape {tuple(shape)}")
    if unknown:
        known = 1
        for d in shape:
            if d != -1:
                known *= d
        if known == 0 or size % known:
            raise op_error(op, f"cannot reshape array of size {size} into shape {tuple(shape)}")
        shape[unknown[0]] = size // known
    return tuple(shape)


def reshape(a, newshape=None, order="C", shape=None, reverse=False):
    """`a` with a new shape and the same data (one dimension may be -1 and is inferred); `shape=`
    is accepted as MXNet's spelling of `newshape`."""
    a = _arr(a)
    target = _resolve_shape("reshape", a.size, newshape if newshape is not None else shape)
    if same_at_every_size(target, a.shape):
        return a
    return _R["reshape"](a, shape=target)


def ravel(a, order="C"):
    """`a` flattened to one dimension."""
    return reshape(a, (-1,))


def transpose(a, axes=None):
    """`a` with its axes permuted by `axes` (reversed when None)."""
    a = _arr(a)
    if axes is None:
        axes = tuple(range(a.ndim))[::-1]
    return compose.transpose(a, axes)


def swapaxes(a, axis1, axis2):
    """`a` with `axis1` and `axis2` interchanged."""
    a = _arr(a)
    axes = list(range(a.ndim))
    i, j = normalize_axis("swapaxes", axis1, a.ndim), normalize_axis("swapaxes", axis2, a.ndim)
    axes[i], axes[j] = axes[j], axes[i]
    return transpose(a, axes)


def moveaxis(a, source, destination):
    """`a` with the axes `source` (an int or a sequence) moved to the positions
    `destination`, the other axes keeping their order."""
    a = _arr(a)
    src, dst = _axis_list(source, a.ndim), _axis_list(destination, a.ndim)
    if isinstance(source, (int, _np.integer)) and isinstance(destination, (int, _np.integer)):
        return compose.moveaxis(a, src[0], dst[0])
    if len(src) != len(dst):
        raise ValueRangeError(f"moveaxis: source and destination must have the same number "
                              f"of axes, got {len(src)} and {len(dst)}{where_in_user_code()}")
    order = [k for k in range(a.ndim) if k not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(a, tuple(order))


def _axis_list(axes, ndim):
    axes = [axes] if isinstance(axes, (int, _np.integer)) else list(axes)
    out = []
    for ax in axes:
        if not -ndim <= int(ax) < ndim:
            raise ValueRangeError(f"moveaxis: axis {ax} is out of range for {ndim} dimensions"
                                  f"{where_in_user_code()}")
        out.append(int(ax) % ndim)
    if len(set(out)) != len(out):
        raise ValueRangeError(f"moveaxis: repeated axis in {list(axes)}{where_in_user_code()}")
    return out


def expand_dims(a, axis):
    """`a` with a new axis of length one inserted at `axis` (an int or a tuple of ints)."""
    a = _arr(a)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    ndim = a.ndim + len(axes)
    axes = sorted(normalize_axis("expand_dims", x, ndim) for x in axes)
    shape = list(a.shape)
    for x in axes:
        shape.insert(x, 1)
    return reshape(a, tuple(shape))


def squeeze(a, axis=None):
    """`a` without its axes of length one (only those in `axis` when given; naming an axis longer
    than one is an error)."""
    a = _arr(a)
    if axis is None:
        axes = [i for i, d in enumerate(a.shape) if d == 1]
    else:
        axes = [normalize_axis("squeeze", x, a.ndim)
                for x in (axis if isinstance(axis, (tuple, list)) else (axis,))]
        for x in axes:
            if a.shape[x] != 1:
                raise op_error("squeeze", f"cannot select an axis to squeeze out which has "
                               f"size {a.shape[x]} != 1 (axis {x} of shape {a.shape})")
    return reshape(a, tuple(d for i, d in enumerate(a.shape) if i not in axes))


def broadcast_to(array, shape):
    """`array` broadcast to `shape` by NumPy's broadcasting rules."""
    a = _arr(array)
    shape = (int(shape),) if isinstance(shape, (int, _np.integer)) else tuple(
        d if isinstance(d, SymInt) else int(d) for d in shape)    # a symbolic size stays
    if same_at_every_size(shape, a.shape):
        return a
    return _R["broadcast_to"](a, shape=shape)


def broadcast_arrays(*args):
    """The arrays broadcast against each other to one common shape, as a list."""
    from ..ops.rules import broadcast_shapes
    arrays = [_arr(a) for a in args]
    shape = broadcast_shapes("broadcast_arrays", *[a.shape for a in arrays])
    return [broadcast_to(a, shape) for a in arrays]


def concatenate(seq, axis=0, out=None):
    """The arrays of `seq` joined along an existing `axis` (flattened first when `axis` is None)."""
    arrays = to_operands(list(seq))
    if axis is None:
        arrays, axis = [reshape(a, (-1,)) for a in arrays], 0
    if not arrays:
        raise op_error("concatenate", "need at least one array to concatenate")
    ndims = {a.ndim for a in arrays}
    if len(ndims) != 1:
        raise op_error("concatenate", f"all the input arrays must have the same number of "
                       f"dimensions, got shapes {[a.shape for a in arrays]}")
    axis = normalize_axis("concatenate", axis, arrays[0].ndim)
    r = _R["concatenate"](*arrays, axis=axis)
    if out is not None:
        out[...] = r
        return out
    return r


concat = concatenate


def stack(arrays, axis=0, out=None):
    """The arrays, all of one shape, joined along a new `axis`."""
    arrays = to_operands(list(arrays))
    if not arrays:
        raise op_error("stack", "need at least one array to stack")
    shapes = {a.shape for a in arrays}
    if len(shapes) != 1:
        raise op_error("stack", f"all input arrays must have the same shape, got "
                       f"{[a.shape for a in arrays]}")
    axis = normalize_axis("stack", axis, arrays[0].ndim + 1)
    return concatenate([expand_dims(a, axis) for a in arrays], axis=axis, out=out)


def vstack(tup):
    """The arrays stacked vertically (along the first axis; 1-D arrays become rows)."""
    arrays = [_arr(a) for a in tup]
    return concatenate([reshape(a, (1, -1)) if a.ndim == 1 else a for a in arrays], axis=0)


def hstack(tup):
    """The arrays stacked horizontally (along the second axis; along the first for 1-D arrays)."""
    arrays = [_arr(a) for a in tup]
    return concatenate(arrays, axis=0 if arrays[0].ndim == 1 else 1)


def column_stack(tup):
    """1-D arrays as the columns of a 2-D array (2-D arrays are joined along the second axis)."""
    arrays = [_arr(a) for a in tup]
    return concatenate([reshape(a, (-1, 1)) if a.ndim == 1 else a for a in arrays], axis=1)


def dstack(tup):
    """The arrays stacked along the third axis (depth)."""
    arrays = [_arr(a) for a in tup]
    return concatenate([reshape(a, (1, -1, 1)) if a.ndim == 1 else
                        expand_dims(a, 2) if a.ndim == 2 else a for a in arrays], axis=2)


def _take_range(a, axis, start, stop):
    begin = [0] * a.ndim
    end = list(a.shape)
    begin[axis], end[axis] = start, stop
    if start == 0 and stop == a.shape[axis]:
        return a
    return _R["slice"](a, begin=tuple(begin), end=tuple(end), step=(1,) * a.ndim)


def split(ary, indices_or_sections, axis=0):
    """A list of sub-arrays of `ary` along `axis`: `indices_or_sections` equal sections, or the
    split points."""
    a = _arr(ary)
    axis = normalize_axis("split", axis, a.ndim)
    n = a.shape[axis]
    if isinstance(indices_or_sections, (int, _np.integer)):
        k = int(indices_or_sections)
        if k <= 0 or n % k:
            raise op_error("split", f"array split does not result in an equal division: "
                           f"axis {axis} of size {n} into {k} sections")
        bounds = [i * (n // k) for i in range(k + 1)]
    else:
        bounds = [0] + [_b.min(_b.max(int(i), 0), n) for i in indices_or_sections] + [n]
    return [_take_range(a, axis, lo, _b.max(lo, hi)) for lo, hi in zip(bounds[:-1], bounds[1:])]


def array_split(ary, indices_or_sections, axis=0):
    """Like `split`, but a number of sections need not divide the axis evenly."""
    a = _arr(ary)
    if isinstance(indices_or_sections, (int, _np.integer)):
        n, k = a.shape[normalize_axis("array_split", axis, a.ndim)], int(indices_or_sections)
        sizes = [n // k + (1 if i < n % k else 0) for i in range(k)]
        indices_or_sections = list(_np.cumsum(sizes)[:-1])
    return split(a, indices_or_sections, axis)


def hsplit(ary, indices_or_sections):
    """`split` along the second axis (the first for 1-D arrays)."""
    a = _arr(ary)
    return split(a, indices_or_sections, axis=0 if a.ndim == 1 else 1)


def vsplit(ary, indices_or_sections):
    """`split` along the first axis."""
    return split(ary, indices_or_sections, axis=0)


def dsplit(ary, indices_or_sections):
    """`split` along the third axis."""
    return split(ary, indices_or_sections, axis=2)


def flip(m, axis=None):
    """`m` with the order of its elements reversed along `axis` (all axes when None)."""
    a = _arr(m)
    axes = range(a.ndim) if axis is None else (
        axis if isinstance(axis, (tuple, list)) else (axis,))
    key = [slice(None)] * a.ndim
    for x in axes:
        key[normalize_axis("flip", x, a.ndim)] = slice(None, None, -1)
    return a[tuple(key)]


def fliplr(m):
    """`m` with its columns reversed (`flip(m, 1)`)."""
    return flip(m, 1)


def flipud(m):
    """`m` with its rows reversed (`flip(m, 0)`)."""
    return flip(m, 0)


def roll(a, shift, axis=None):
    """`a` with its elements shifted by `shift` along `axis` (of the flattened array when None),
    wrapping around."""
    a = _arr(a)
    if axis is None:
        return reshape(roll(reshape(a, (-1,)), shift, 0), a.shape)
    shifts = shift if isinstance(shift, (tuple, list)) else (shift,)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    for s, ax in zip(shifts, axes):
        ax = normalize_axis("roll", ax, a.ndim)
        n = a.shape[ax]
        if n:
            a = _gather(a, (_np.arange(n) - int(s)) % n, ax)
    return a


def rot90(m, k=1, axes=(0, 1)):
    """`m` rotated by 90 degrees `k` times in the plane of `axes`."""
    m = _arr(m)
    k %= 4
    if k == 0:
        return m
    if k == 2:
        return flip(flip(m, axes[0]), axes[1])
    perm = list(range(m.ndim))
    a0, a1 = (normalize_axis("rot90", x, m.ndim) for x in axes)
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return transpose(flip(m, a1), perm)
    return flip(transpose(m, perm), a1)


def rollaxis(a, axis, start=0):
    """`a` with `axis` moved to before position `start`."""
    a = _arr(a)
    axis = normalize_axis("rollaxis", axis, a.ndim)
    start = start + a.ndim if start < 0 else start
    if axis < start:
        start -= 1
    return moveaxis(a, axis, start) if axis != start else a


def repeat(a, repeats, axis=None):
    """Each element of `a` repeated `repeats` times along `axis` (of the flattened array when
    None)."""
    a = _arr(a)
    if axis is None:
        a, axis = reshape(a, (-1,)), 0
    axis = normalize_axis("repeat", axis, a.ndim)
    idx = _np.repeat(_np.arange(a.shape[axis]), repeats)
    return _R["take"](a, ndarray._wrap(idx), axis=axis, mode="clip")


def tile(A, reps):
    """`A` repeated `reps` times along each axis."""
    a = _arr(A)
    reps = (reps,) if isinstance(reps, (int, _np.integer)) else tuple(reps)
    if len(reps) < a.ndim:
        reps = (1,) * (a.ndim - len(reps)) + reps
    a = reshape(a, (1,) * (len(reps) - a.ndim) + a.shape)
    for axis, r in enumerate(reps):
        if r != 1 and a.shape[axis] > 0:     # an empty axis stays empty
            idx = _np.tile(_np.arange(a.shape[axis]), r)
            a = _R["take"](a, ndarray._wrap(idx), axis=axis, mode="clip")
    return a


def copy(a):
    """A copy of the array `a`."""
    return _arr(a).copy()


def shape(a):
    """The shape of `a`, as a tuple."""
    return _arr(a).shape


def size(a, axis=None):
    """The number of elements of `a` (along `axis` when given)."""
    a = _arr(a)
    return a.size if axis is None else a.shape[axis]


def ndim(a):
    """The number of dimensions of `a`."""
    return _arr(a).ndim


def atleast_1d(*arys):
    """The inputs as arrays of at least one dimension (one array, or a list of them)."""
    res = [reshape(a, (1,)) if _arr(a).ndim == 0 else _arr(a) for a in arys]
    return res[0] if len(res) == 1 else res


def atleast_2d(*arys):
    """The inputs as arrays of at least two dimensions (one array, or a list of them)."""
    res = []
    for a in arys:
        a = _arr(a)
        res.append(reshape(a, (1,) * (2 - a.ndim) + a.shape) if a.ndim < 2 else a)
    return res[0] if len(res) == 1 else res


def atleast_3d(*arys):
    """The inputs as arrays of at least three dimensions (one array, or a list of them)."""
    res = []
    for a in arys:
        a = _arr(a)
        shape = {0: (1, 1, 1), 1: (1,) + a.shape + (1,), 2: a.shape + (1,)}.get(a.ndim, a.shape)
        res.append(reshape(a, shape))
    return res[0] if len(res) == 1 else res


# ---- editing along an axis ------------------------------------------------------------------

def append(arr, values, axis=None):
    """A copy of `arr` with `values` appended along `axis` (both flattened when `axis` is None)."""
    a, v = _arr(arr), _arr(values)
    if axis is None:
        return concatenate([reshape(a, (-1,)), reshape(v, (-1,))])
    return concatenate([a, v], axis=axis)


def _positions(op, obj, n):
    if isinstance(obj, slice):
        return _np.arange(n)[obj]
    if isinstance(obj, ndarray):
        obj = obj._concrete(f"{op}()")
    idx = _np.asarray(obj)
    if idx.dtype == _np.bool_:
        return _np.nonzero(idx)[0]
    idx = idx.astype(_np.int64)
    if ((idx < -n) | (idx >= n)).any() if op == "delete" else ((idx < -n) | (idx > n)).any():
        raise op_error(op, f"index {obj} is out of bounds for axis with size {n}", KilnError)
    return _np.where(idx < 0, idx + n, idx)


def delete(arr, obj, axis=None):
    """A copy of `arr` without the sub-arrays at the indices `obj` along `axis` (of the flattened
    array when None)."""
    a = _arr(arr)
    if axis is None:
        a, axis = reshape(a, (-1,)), 0
    axis = normalize_axis("delete", axis, a.ndim)
    keep = _np.ones(a.shape[axis], dtype=bool)
    keep[_positions("delete", obj, a.shape[axis])] = False
    return _gather(a, _np.nonzero(keep)[0], axis)


def insert(arr, obj, values, axis=None):
    """NumPy's insert; gradients flow to both arr and values."""
    a, v = _arr(arr), _arr(values)
    if axis is None:
        a, axis = reshape(a, (-1,)), 0
    axis = normalize_axis("insert", axis, a.ndim)
    n = a.shape[axis]
    if v.dtype != a.dtype:
        v = v.astype(a.dtype)
    if v.ndim < a.ndim:
        v = reshape(v, (1,) * (a.ndim - v.ndim) + v.shape)
    shape = list(a.shape)
    if isinstance(obj, (int, _np.integer)):
        # NumPy: one index inserts a block, values' first axis laid along `axis`
        v = moveaxis(v, 0, axis)
        shape[axis] = v.shape[axis]
        pos = _np.full(shape[axis], _positions("insert", [obj], n)[0])
    else:
        pos = _positions("insert", obj, n)
        shape[axis] = len(pos)
    v = broadcast_to(v, tuple(shape))
    # an insert at i goes before old element i; inserts at one index keep their order
    keys = _np.concatenate([_np.arange(n) * 2 + 1, pos * 2])
    order = _np.argsort(keys, kind="stable")
    return _gather(concatenate([a, v], axis=axis), order, axis)


def pad(array, pad_width, mode="constant", constant_values=0, **kwargs):
    """`array` padded with `constant_values` by `pad_width` before and after each axis
    (`mode='constant'` only)."""
    a = _arr(array)
    if mode != "constant":
        raise op_error("pad", f"only mode='constant' is supported, got {mode!r}", KilnError)
    widths = _np.broadcast_to(_np.asarray(pad_width, dtype=_np.int64), (a.ndim, 2))
    shape = tuple(int(d + lo + hi) for d, (lo, hi) in zip(a.shape, widths))
    from .creation import full
    base = full(shape, constant_values, dtype=a.dtype)
    key = tuple(slice(int(lo), int(lo) + d) for d, (lo, _) in zip(a.shape, widths))
    base[key] = a
    return base
