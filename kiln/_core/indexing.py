"""x[key] and x[key] = value, for eager, recorded and symbolic arrays alike."""
import operator

import numpy as _np

from . import alias_paths, autograd
from . import trace
from .base import GraphBreak, KilnError, op_error
from .ndarray import ndarray
from .primitive import REGISTRY
from .symdim import difference, is_symbolic, provably, same_at_every_size, same_shape
from .writes import arrays_written

# NumPy 1.x ignores an out-of-bounds index when the result holds no elements (a deprecation
# warning only); NumPy 2 and kiln's compiled code raise, so kiln checks those itself there
_IGNORES_EMPTY_OUT_OF_BOUNDS = _np.lib.NumpyVersion(_np.__version__) < "2.0.0"


class _Plan:
    """A basic index resolved against a shape: one (begin, end, step) per dim, then a reshape."""
    __slots__ = ("begin", "end", "step", "out_shape", "sliced_shape", "identity")


def _is_advanced(k):
    # a tuple inside the key is a sequence of indices, as in NumPy (x[(0, 1), :])
    return isinstance(k, (ndarray, _np.ndarray, list, range, tuple)) and not isinstance(k, bool)


def _is_int(k):
    return isinstance(k, (int, _np.integer)) and not isinstance(k, bool)


def _as_tuple(key):
    return key if isinstance(key, tuple) else (key,)


def basic_plan(shape, key):
    key = _as_tuple(key)
    if sum(k is Ellipsis for k in key) > 1:
        raise op_error("getitem", "an index can only have a single ellipsis ('...')", IndexError)
    used = sum(1 for k in key if k is not None and k is not Ellipsis)
    if used > len(shape):
        raise op_error("getitem", f"too many indices: array has {len(shape)} dimensions, "
                       f"got {used}", IndexError)
    expanded = []
    for k in key:
        if k is Ellipsis:
            expanded.extend([slice(None)] * (len(shape) - used))
        else:
            expanded.append(k)
    expanded.extend([slice(None)] * (len(shape) - sum(1 for k in expanded if k is not None)))
    plan = _Plan()
    begin, end, step, out_shape, sliced = [], [], [], [], []
    dim = 0
    for k in expanded:
        if k is None:
            out_shape.append(1)
            continue
        size = shape[dim]
        if isinstance(k, slice):
            if is_symbolic(size) and k.start is None and k.stop is None and k.step in (None, 1):
                b, e, s, n = 0, size, 1, size     # a whole symbolic axis keeps its symbol
            elif is_symbolic(size) and _window(size, k):
                # a window inside the axis at every size (a scan's pieces of its flat result)
                b, e, s = k.start or 0, k.stop, 1
                n = difference(e, b)
            else:
                b, e, s = k.indices(size)
                n = len(range(b, e, s))
            out_shape.append(n)
        else:
            try:
                i = operator.index(k)   # 1.5 or "a" is not an index
            except (TypeError, ValueError):
                raise op_error("getitem", f"unsupported index {k!r} of type {type(k).__name__}",
                               IndexError) from None
            if not -size <= i < size:
                raise op_error("getitem", f"index {i} is out of bounds for axis {dim} with "
                               f"size {size}", IndexError)
            i %= size
            b, e, s, n = i, i + 1, 1, 1
        begin.append(b)
        end.append(e)
        step.append(s)
        sliced.append(n)
        dim += 1
    plan.begin, plan.end, plan.step = tuple(begin), tuple(end), tuple(step)
    plan.out_shape, plan.sliced_shape = tuple(out_shape), tuple(sliced)
    plan.identity = all(s == 1 for s in step) and same_at_every_size(sliced, shape)
    return plan


def _window(size, k):
    """Is slice k, of step 1, inside an axis of symbolic `size` whatever its value?"""
    if k.step not in (None, 1) or k.stop is None:
        return False
    begin = 0 if k.start is None else k.start
    return provably(0, "<=", begin) and provably(begin, "<=", k.stop) and \
        provably(k.stop, "<=", size)


def _apply_basic(x, plan):
    y = x
    if not plan.identity:
        y = REGISTRY["slice"](x, begin=plan.begin, end=plan.end, step=plan.step)
    if not same_shape(plan.out_shape, plan.sliced_shape):   # (ranks first: no guard)
        y = REGISTRY["reshape"](y, shape=plan.out_shape)
    return y


def _needs_graph(x):
    return x._node is not None or (x._tape is not None and autograd._state.recording)


def _to_index_array(k):
    if isinstance(k, ndarray):
        if k.dtype.kind == "f":
            return k.astype(_np.int64)
        return k
    arr = _np.asarray(list(k) if isinstance(k, range) else k)
    if arr.dtype.kind == "f" and (arr == _np.round(arr)).all():
        # MXNet accepts its float32 default arrays as indices; an empty list is NumPy's
        # float64 array and indexes nothing
        arr = arr.astype(_np.int64)
    if arr.dtype.kind not in "iub":
        raise op_error("getitem", f"arrays used as indices must be of integer or bool type, "
                       f"got {arr.dtype}", IndexError)
    return ndarray._wrap(arr if arr.dtype == _np.bool_ else arr.astype(_np.int64))


def getitem(x, key):
    key_t = _as_tuple(key)
    if not any(_is_advanced(k) for k in key_t):
        # while tracing or recording, views go through the registry so they are linked to
        # their source (aliasing.py): a later write into either is then seen by the other
        if not _needs_graph(x) and not autograd._state.recording and trace.current() is None:
            shape = x._data.shape
            if not (type(key) is int and shape and -shape[0] <= key < shape[0]):
                basic_plan(shape, key_t)  # validates, so errors carry kiln's messages
            # an integer index gives a NumPy scalar: keep it a 0-d array (x[3] is array(3.))
            return ndarray._wrap(_np.asarray(x._data[key]))
        y = _apply_basic(x, basic_plan(x.shape, key_t))
        if y.ndim == 0 and not any(k is Ellipsis for k in key_t):
            y._view = None     # NumPy gives a scalar here, a copy: not a view
            if y._node is None and _np.shares_memory(y._data, x._data):
                # nor memory shared: a concrete array sliced while tracing would otherwise
                # take a later in-place write on the scalar into x (fuzz seed 11, #882)
                y._data = y._data.copy()
        return y
    if not _needs_graph(x) and not autograd._state.recording and trace.current() is None \
            and not any(isinstance(k, ndarray) and _needs_graph(k) for k in key_t):
        # concrete arrays and indices: NumPy's advanced indexing in full (masks anywhere,
        # with None and '...'); the result is a copy, as NumPy's is
        np_key = tuple(_to_index_array(k)._data if _is_advanced(k) else k for k in key_t)
        try:
            return ndarray._wrap(_np.asarray(x._data[_numpy_key(np_key, x.shape)]))
        except (IndexError, ValueError, TypeError) as exc:
            raise op_error("getitem", str(exc), IndexError) from exc
    return _advanced_getitem(x, key_t)


def _advanced_getitem(x, key):
    positions = [i for i, k in enumerate(key) if _is_advanced(k)]
    if any(k is Ellipsis or k is None for k in key):
        x, key = _without_ellipsis_and_none(x, key)
        positions = [i for i, k in enumerate(key) if _is_advanced(k)]
    arrays = [_to_index_array(key[i]) for i in positions]
    if len(arrays) == 1 and arrays[0].dtype == _np.bool_:
        return _mask_getitem(x, key, positions[0], arrays[0])
    spots = [i for i, k in enumerate(key) if _is_advanced(k) or _is_int(k)]
    if spots != list(range(spots[0], spots[0] + len(spots))):
        return _separated_getitem(x, key)
    # basic part first, keeping the advanced dims whole
    basic_key = tuple(slice(None) if i in positions else k for i, k in enumerate(key))
    n_int_before = sum(1 for k in key[:positions[0]] if not isinstance(k, slice))
    y = getitem(x, basic_key)
    axis = positions[0] - n_int_before
    dims = y.shape[axis:axis + len(arrays)]
    if len(arrays) == 1:
        _check_bounds(arrays[0], dims[0])
        return REGISTRY["take"](y, arrays[0], axis=axis, mode="wrap")
    shape = _np.broadcast_shapes(*[a.shape for a in arrays])
    arrays = [REGISTRY["broadcast_to"](a, shape=shape) for a in arrays]
    flat = None
    for a, d in zip(arrays, dims):
        _check_bounds(a, d)
        a = a % d
        flat = a if flat is None else flat * d + a
    merged = y.shape[:axis] + (int(_np.prod(dims)),) + y.shape[axis + len(dims):]
    return REGISTRY["take"](REGISTRY["reshape"](y, shape=merged), flat, axis=axis, mode="clip")


def _axes_taken(k):
    if k is None:
        return 0
    if _is_advanced(k) and _np.asarray(k._data if isinstance(k, ndarray) else k).dtype == \
            _np.bool_:
        return _np.ndim(k._data if isinstance(k, ndarray) else k)
    return 1


def _without_ellipsis_and_none(x, key):
    """(x', key') with '...' spelled out as slices and each None a new length-1 axis of x'
    indexed by a slice: the same result, as NumPy orders it."""
    if sum(k is Ellipsis for k in key) > 1:
        raise op_error("getitem", "an index can only have a single ellipsis ('...')",
                       IndexError)
    if any(k is Ellipsis for k in key):
        at = next(i for i, k in enumerate(key) if k is Ellipsis)
        rest = x.ndim - sum(_axes_taken(k) for k in key if k is not Ellipsis)
        key = key[:at] + (slice(None),) * rest + key[at + 1:]
    shape, axis = [], 0
    for k in key:
        n = _axes_taken(k)
        shape.extend([1] if k is None else x.shape[axis:axis + n])
        axis += n
    shape.extend(x.shape[axis:])
    if len(shape) != x.ndim:
        x = REGISTRY["reshape"](x, shape=tuple(shape))
    return x, tuple(slice(None) if k is None else k for k in key)


def _separated_getitem(x, key):
    """Advanced indices apart from each other (x[i, :, j]): as NumPy does, their broadcast
    dims come first. The indexed axes (integers among them count as indices) move to the
    front, where the indices are next to each other."""
    full = key + (slice(None),) * (x.ndim - len(key))
    moved = [i for i, k in enumerate(full) if _is_advanced(k) or _is_int(k)]
    order = moved + [i for i in range(len(full)) if i not in moved]
    front = REGISTRY["transpose"](x, axes=tuple(order))
    return _advanced_getitem(front, tuple(
        full[i] if _is_advanced(full[i]) or i not in moved else _to_index_array(full[i])
        for i in order))


def _check_bounds(idx, size):
    if idx._node is None and idx.size and (idx._data.min() < -size or idx._data.max() >= size):
        bad = idx._data[(idx._data < -size) | (idx._data >= size)].flat[0]
        raise op_error("getitem", f"index {bad} is out of bounds for an axis of size {size}",
                       IndexError)


def _mask_getitem(x, key, pos, mask):
    if mask._node is not None:
        raise GraphBreak("getitem: a boolean mask computed by the traced code gives a "
                         "data-dependent shape, which a compiled graph cannot have (use "
                         "np.where(mask, x, 0) to stay compiled)", "x[mask]", "unsupported")
    if pos != 0 or len(key) != 1:
        raise op_error("getitem", "a boolean mask index is supported as x[mask] only",
                       IndexError)
    m = mask._data
    if m.shape != x.shape[:m.ndim]:
        raise op_error("getitem", f"boolean index of shape {m.shape} does not match the "
                       f"array's leading dimensions {x.shape[:m.ndim]}", IndexError)
    rest = x.shape[m.ndim:]
    flat_x = REGISTRY["reshape"](x, shape=(int(_np.prod(m.shape)),) + rest)
    return REGISTRY["take"](flat_x, ndarray._wrap(_np.flatnonzero(m)), axis=0, mode="clip")


def setitem(x, key, value):
    key_t = _as_tuple(key)
    value_tracked = isinstance(value, ndarray) and (
        value._node is not None or (value._tape is not None and autograd._state.recording))
    if not _needs_graph(x) and not value_tracked:
        _eager_setitem(x, key, value)
        return
    from .dispatch import to_operands
    v = to_operands([x, value])[1]
    if v.dtype != x.dtype:
        v = REGISTRY["cast"](v, dtype=x.dtype)
    if len(key_t) == 1 and isinstance(key_t[0], ndarray) and key_t[0].dtype == _np.bool_:
        x._rebind(REGISTRY["where"](key_t[0], v, x))
        return
    if any(_is_advanced(k) for k in key_t):
        x._rebind(_advanced_setitem(x, key_t, v))
        return
    plan = basic_plan(x.shape, key_t)
    v = _drop_leading_ones(v, len(plan.out_shape))
    try:
        v = REGISTRY["broadcast_to"](v, shape=plan.out_shape)
    except KilnError:
        raise op_error("setitem", f"could not broadcast input array from shape {v.shape} "
                       f"into shape {plan.out_shape}") from None
    v = REGISTRY["reshape"](v, shape=plan.sliced_shape)
    x._rebind(REGISTRY["slice_assign"](x, v, begin=plan.begin, end=plan.end, step=plan.step))


def _drop_leading_ones(v, ndim):
    """NumPy's assignment drops a value's leading length-1 dims beyond the target's rank
    (x[0] = y[None] works)."""
    k = 0
    while v.ndim - k > ndim and v.shape[k] == 1:
        k += 1
    if k == 0:
        return v
    return REGISTRY["reshape"](v, shape=v.shape[k:])


def _advanced_setitem(x, key, v):
    """x with x[key] = v for an integer-array index known while tracing: NumPy resolves the
    index to flat positions once (last write wins for repeated ones, as NumPy does), and
    the graph gathers v into those positions with take and where, which differentiate."""
    if any(isinstance(k, ndarray) and (k._node is not None or k._tape is not None)
           for k in key):
        raise GraphBreak("assignment through an index array computed by the traced code: "
                         "its positions are data", "x[index_array] = value", "unsupported")
    try:
        selected = _np.arange(x.size, dtype=_np.int64).reshape(x.shape)[_numpy_key(key, x.shape)]
    except (IndexError, ValueError, TypeError) as exc:
        raise op_error("setitem", str(exc), IndexError if isinstance(exc, IndexError)
                       else KilnError) from exc
    v = _drop_leading_ones(v, selected.ndim)
    try:    # checked for an empty selection too, as NumPy checks it
        v = REGISTRY["broadcast_to"](v, shape=selected.shape)
    except KilnError:
        raise op_error("setitem", f"could not broadcast input array from shape {v.shape} "
                       f"into shape {selected.shape}") from None
    if selected.size == 0:
        return x
    source = _np.zeros(x.size, _np.int64)
    source[selected.ravel()] = _np.arange(selected.size)
    mask = _np.zeros(x.size, _np.bool_)
    mask[selected.ravel()] = True
    flat = REGISTRY["reshape"](v, shape=(selected.size,))
    gathered = REGISTRY["take"](flat, ndarray._wrap(source), axis=0,
                    mode="clip")
    return REGISTRY["where"](ndarray._wrap(mask.reshape(x.shape)),
                             REGISTRY["reshape"](gathered, shape=x.shape), x)


def _numpy_key(key, shape):
    """key for NumPy's own indexing of an array of this shape (its integers in bounds)."""
    if isinstance(key, tuple):
        key = tuple(k._concrete("an index") if isinstance(k, ndarray) else k for k in key)
    elif isinstance(key, ndarray):
        key = key._concrete("an index")
    if _IGNORES_EMPTY_OUT_OF_BOUNDS:
        _check_integer_bounds(shape, _as_tuple(key))
    return key


def _check_integer_bounds(shape, key):
    def is_mask(k):
        return isinstance(k, (_np.ndarray, list)) and _np.asarray(k).dtype == _np.bool_

    used = sum(0 if k is None or k is Ellipsis else _np.ndim(k) if is_mask(k) else 1
               for k in key)
    axis = 0
    for k in key:
        if k is None:
            continue
        if k is Ellipsis or is_mask(k):
            axis += len(shape) - used if k is Ellipsis else _np.ndim(k)
            continue
        if not isinstance(k, slice) and axis < len(shape):
            idx = _np.asarray(k)
            size = shape[axis]
            if idx.dtype.kind in "iu" and idx.size and (idx.min() < -size or idx.max() >= size):
                bad = idx[(idx < -size) | (idx >= size)].flat[0]
                raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {size}")
        axis += 1


def _eager_setitem(x, key, value):
    if isinstance(value, ndarray):
        value = value._concrete("setitem")
        if _np.may_share_memory(value, x._data):
            # read the whole value before writing (x[::2] = x[:6]): NumPy would read
            # elements it already overwrote; compiled code has value semantics
            value = value.copy()
    if autograd._state.recording:
        # the tape may hold x's buffer as a saved input: write into a copy and rebind x
        # (through its views and its source: aliasing.py), never into that buffer
        new = ndarray._wrap(_np.array(x._data, copy=True))
        _write(new._data, key, value)
        new._tape, new._tidx = x._tape, x._tidx
        x._rebind(new)
        return
    alias_paths.check_write(x)
    if not x._data.flags.writeable:
        x._data = _np.array(x._data, copy=True)
    try:
        _write(x._data, key, value)
    finally:
        arrays_written()
    alias_paths.after_write(x)      # arrays that are this one on some paths (if/while)


def _write(data, key, value):
    try:
        try:
            data[_numpy_key(key, data.shape)] = value
        except (ValueError, TypeError):     # TypeError: NumPy's for a list such as [v]
            if _np.size(value) != 1 or _np.ndim(value) == 0:
                raise
            # MXNet lets a one-element array fill a scalar slot (`preds[i] = net(x)` with a
            # (1, 1) result); NumPy refuses a sequence there
            data[_numpy_key(key, data.shape)] = _np.reshape(value, ())
    except (IndexError, ValueError, TypeError) as exc:
        raise op_error("setitem", str(exc), IndexError if isinstance(exc, IndexError)
                       else KilnError) from exc
