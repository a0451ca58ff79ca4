"""Data-movement primitives: reshape, transpose, broadcast, slicing, concatenation, gather."""
import math

import numpy as _np

from .registry import register
from .util import sum_to
from .._core.base import op_error, normalize_axis, KilnError
from .._core.symdim import difference, is_symbolic, provably
from .rules import broadcast_shapes


# ---- reshape / transpose / broadcast -------------------------------------------------------

def _reshape_rule(x, shape):
    total = 1
    for d in x.shape:
        total *= d
    target = 1
    for d in shape:
        target *= d
    if total != target:
        raise op_error("reshape", f"cannot reshape array of shape {tuple(x.shape)} "
                       f"(size {total}) into shape {tuple(shape)}")
    return tuple(shape), x.dtype


@register("reshape", _reshape_rule, lambda g, out, x, shape: (reshape(g, shape=tuple(x.shape)),))
def reshape(x, shape):
    return _np.reshape(x, shape)


def _transpose_rule(x, axes):
    if sorted(axes) != list(range(x.ndim)):
        raise op_error("transpose", f"axes {axes} are not a permutation of the "
                       f"{x.ndim} dimensions of shape {tuple(x.shape)}")
    return tuple(x.shape[a] for a in axes), x.dtype


def _transpose_grad(g, out, x, axes):
    return (transpose(g, axes=tuple(int(i) for i in _np.argsort(axes))),)


@register("transpose", _transpose_rule, _transpose_grad)
def transpose(x, axes):
    return _np.transpose(x, axes)


def _broadcast_rule(x, shape):
    if len(shape) < x.ndim or broadcast_shapes("broadcast_to", x.shape, shape) != tuple(shape):
        raise op_error("broadcast_to", f"cannot broadcast shape {tuple(x.shape)} to {tuple(shape)}")
    return tuple(shape), x.dtype


@register("broadcast_to", _broadcast_rule, lambda g, out, x, shape: (sum_to(g, x),))
def broadcast_to(x, shape):
    return _np.broadcast_to(x, shape)


# ---- basic slicing -------------------------------------------------------------------------
# A slice is given per dimension as (begin, end, step), already normalized to concrete,
# in-range values by the indexing front end (kiln/_core/indexing.py).

def slice_len(size, begin, end, step):
    """How many items x[begin:end:step] has on an axis of `size` (end < 0: to the end),
    clamped as NumPy clamps. The whole of a symbolic axis keeps its symbol; any other
    slice of one needs its value (a guard, see _core/symdim.py)."""
    if step == 1 and isinstance(begin, int) and begin == 0 and end is size:
        return size
    if step == 1 and is_symbolic(size) and provably(0, "<=", begin) and \
            provably(begin, "<=", end) and provably(end, "<=", size):
        return difference(end, begin)   # a window inside the axis at every size (scan's pieces)
    if is_symbolic(size) and step > 0 and isinstance(begin, int) and isinstance(end, int) \
            and begin >= 0:
        # guards on ranges of the size, not on its value: every size from `end` up gives
        # the same length, and a shorter axis is clamped, as NumPy clamps
        if 0 <= end <= size:
            return len(range(begin, end, step))
        return (size - begin + step - 1) // step if size > begin else 0
    stop = None if end < 0 else end
    return len(range(*slice(begin, stop, step).indices(size)))


def slice_start(size, begin, end, step):
    """The first index x[begin:end:step] reads on an axis of `size`, clamped as NumPy clamps
    (a begin past the end of a reversed slice starts at the last item); 0 for an empty
    slice. A begin already inside the axis is kept as it is (a symbolic size's window)."""
    if is_symbolic(size) or not (isinstance(begin, int) and isinstance(end, int)):
        return begin
    r = range(*slice(begin, None if end < 0 else end, step).indices(size))
    return r.start if len(r) else 0


def _slice_rule(x, begin, end, step):
    if not len(begin) == len(end) == len(step) == x.ndim:
        raise op_error("slice", f"expected {x.ndim} (begin, end, step) triples")
    return tuple(slice_len(d, b, e, s)
                 for d, b, e, s in zip(x.shape, begin, end, step)), x.dtype


def _slices(begin, end, step):
    return tuple(slice(b, (None if e < 0 else e), s) for b, e, s in zip(begin, end, step))


def _slice_grad(g, out, x, begin, end, step):
    from .creation import full
    zero = full(shape=tuple(x.shape), value=0, dtype=x.dtype)
    return (slice_assign(zero, g, begin=begin, end=end, step=step),)


@register("slice", _slice_rule, _slice_grad)
def slice_(x, begin, end, step):
    return x[_slices(begin, end, step)]


def _slice_assign_rule(x, v, begin, end, step):
    target, _ = _slice_rule(x, begin, end, step)
    if broadcast_shapes("slice_assign", v.shape, target) != target:
        raise op_error("slice_assign", f"could not broadcast value of shape {tuple(v.shape)} "
                       f"into a slice of shape {target}")
    return tuple(x.shape), x.dtype


def _slice_assign_grad(g, out, x, v, begin, end, step):
    from .creation import full
    target, _ = _slice_rule(x, begin, end, step)
    hole = full(shape=target, value=0, dtype=g.dtype)
    gx = slice_assign(g, hole, begin=begin, end=end, step=step)
    gv = sum_to(slice_(g, begin=begin, end=end, step=step), v)
    return gx, gv


@register("slice_assign", _slice_assign_rule, _slice_assign_grad)
def slice_assign(x, v, begin, end, step):
    out = _np.array(x, copy=True)
    out[_slices(begin, end, step)] = v
    return out


# ---- concatenation -------------------------------------------------------------------------

def _concat_rule(*xs, axis):
    if not xs:
        raise op_error("concatenate", "need at least one array")
    ax = normalize_axis("concatenate", axis, xs[0].ndim)
    first = tuple(xs[0].shape)
    for x in xs[1:]:
        if x.ndim != len(first) or any(
                d != e for i, (d, e) in enumerate(zip(x.shape, first)) if i != ax):
            raise op_error("concatenate", "all input array dimensions except the concatenation "
                           f"axis must match, got shapes {[tuple(v.shape) for v in xs]}")
    shape = list(first)
    shape[ax] = sum(x.shape[ax] for x in xs)
    return tuple(shape), _np.result_type(*[x.dtype for x in xs])


def _concat_grad(g, out, *xs, axis):
    ax = normalize_axis("concatenate", axis, xs[0].ndim)
    grads, start = [], 0
    for x in xs:
        begin = [0] * g.ndim
        end = list(g.shape)
        begin[ax], end[ax] = start, start + x.shape[ax]
        start += x.shape[ax]
        gx = slice_(g, begin=tuple(begin), end=tuple(end), step=(1,) * g.ndim)
        grads.append(sum_to(gx, x))
    return tuple(grads)


@register("concatenate", _concat_rule, _concat_grad)
def concatenate(*xs, axis):
    return _np.concatenate(xs, axis=axis)


# ---- gather / scatter ----------------------------------------------------------------------

def _check_int(op, idx):
    if idx.dtype.kind not in "iub":
        raise op_error(op, f"indices must be integers, got {idx.dtype}", KilnError)


def _take_rule(x, idx, axis, mode="clip"):
    _check_int("take", idx)
    ax = normalize_axis("take", axis, x.ndim)
    if x.shape[ax] == 0 and idx.size != 0:     # taking nothing from nothing is empty (NumPy)
        raise op_error("take", f"cannot take from an empty axis {ax} of shape {tuple(x.shape)}")
    return tuple(x.shape[:ax]) + tuple(idx.shape) + tuple(x.shape[ax + 1:]), x.dtype


def _take_grad(g, out, x, idx, axis, mode="clip"):
    return scatter_add(g, idx, axis=axis, size=int(x.shape[axis]), mode=mode), None


@register("take", _take_rule, _take_grad)
def take(x, idx, axis, mode="clip"):
    return _np.take(x, idx.astype(_np.int64, copy=False), axis=axis, mode=mode)


def _scatter_rule(g, idx, axis, size, mode="clip"):
    _check_int("scatter_add", idx)
    ax = normalize_axis("scatter_add", axis, g.ndim - idx.ndim + 1)
    middle = tuple(g.shape[ax:ax + idx.ndim])
    if len(middle) != idx.ndim or math.prod(middle) != idx.size:
        # (the kernels read one slice of g per index: a g of other sizes was read short)
        raise op_error("scatter_add", f"g of shape {tuple(g.shape)} has no slice per index "
                       f"of the {tuple(idx.shape)} indices at axis {ax}")
    shape = tuple(g.shape[:ax]) + (size,) + tuple(g.shape[ax + idx.ndim:])
    return shape, g.dtype


def _scatter_grad(gg, out, g, idx, axis, size, mode="clip"):
    return take(gg, idx, axis=axis, mode=mode), None


def _fix_index(idx, size, mode):
    idx = idx.astype(_np.int64, copy=False)
    return _np.clip(idx, 0, size - 1) if mode == "clip" else _np.mod(idx, size)


@register("scatter_add", _scatter_rule, _scatter_grad)
def scatter_add(g, idx, axis, size, mode="clip"):
    """Adjoint of take: add the slices of g into a zero array at the given indices."""
    shape, _ = _scatter_rule(g, idx, axis, size, mode)
    out = _np.zeros(shape, g.dtype)
    flat = _fix_index(idx, size, mode).reshape(-1)
    src = g.reshape(g.shape[:axis] + (flat.size,) + g.shape[axis + idx.ndim:])
    if axis == 0 and out.ndim > 1:
        # rows (an embedding's gradient): NumPy's add.at is twice as fast on one flat
        # index per element as on row slices, and adds in the same order
        inner = out[0].size
        cells = (flat[:, None] * inner + _np.arange(inner)).reshape(-1)
        _np.add.at(out.reshape(-1), cells, src.reshape(-1))
        return out
    _np.add.at(_np.moveaxis(out, axis, 0), flat, _np.moveaxis(src, axis, 0))
    return out
