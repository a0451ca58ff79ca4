"""NumPy-style array functions made of primitives, for the gradient rules and decompositions
of ops/ (the user namespace kiln.np sits above this floor).

Each emits the primitives kiln.np's function of the same name emits for the arguments ops/
passes (kiln arrays, valid axes and shapes), so a rule traces to the same graph either way:
a reshape, transpose or broadcast that changes nothing is skipped, and axes are normalized
as kiln.np normalizes them.
"""
from .._core.base import normalize_axes, normalize_axis, op_error
from .._core.dispatch import to_operands
from .._core.ndarray import ndarray
from .._core.symdim import SymInt, same_at_every_size
from . import reduce as _reduce
from . import shape as _shape
from .creation import full
from .elementwise import where as _where


def reshape(x, shape):
    """x with a new shape; one dimension may be -1 (the size left over)."""
    # a symbolic size stays symbolic (as kiln.np.reshape keeps it)
    shape = tuple(d if isinstance(d, SymInt) else int(d) for d in shape)
    if -1 in shape:
        known = 1
        for d in shape:
            if d != -1:
                known *= d
        if known == 0 or x.size % known:
            raise op_error("reshape", f"cannot reshape array of size {x.size} into shape {shape}")
        shape = tuple(x.size // known if d == -1 else d for d in shape)
    if same_at_every_size(shape, x.shape):
        return x
    return _shape.reshape(x, shape=shape)


def transpose(x, axes):
    axes = tuple(normalize_axis("transpose", a, x.ndim) for a in axes)
    if axes == tuple(range(x.ndim)):
        return x
    return _shape.transpose(x, axes=axes)


def moveaxis(x, source, destination):
    src = normalize_axis("moveaxis", source, x.ndim)
    dst = normalize_axis("moveaxis", destination, x.ndim)
    order = [i for i in range(x.ndim) if i != src]
    order.insert(dst, src)
    return transpose(x, order)


def expand_dims(x, axis):
    """x with a new axis of length 1 at `axis` (of the result)."""
    shape = list(x.shape)
    shape.insert(normalize_axis("expand_dims", axis, x.ndim + 1), 1)
    return reshape(x, shape)


def broadcast_to(x, shape):
    # a symbolic size stays symbolic (as kiln.np.reshape keeps it)
    shape = tuple(d if isinstance(d, SymInt) else int(d) for d in shape)
    if same_at_every_size(shape, x.shape):
        return x
    return _shape.broadcast_to(x, shape=shape)


def sum(x, axis=None):
    return _reduce.sum_(x, axis=None if axis is None else normalize_axes("sum", axis, x.ndim),
                        keepdims=False)


def max(x, axis=None):
    return _reduce.max_(x, axis=None if axis is None else normalize_axes("max", axis, x.ndim),
                        keepdims=False)


def stack(arrays):
    """Same-shaped arrays stacked along a new first axis."""
    arrays = [expand_dims(a, 0) for a in arrays]
    if len(arrays) == 1:
        return arrays[0]
    return _shape.concatenate(*arrays, axis=0)


def zeros_like(x):
    return full(shape=x.shape, value=0, dtype=x.dtype)


def where(condition, x, y):
    """x where the boolean array `condition` holds, else y; a Python scalar takes the dtype
    of the array beside it."""
    if isinstance(x, ndarray) or not isinstance(y, ndarray):
        x, y = to_operands([x, y])
    else:
        y, x = to_operands([y, x])
    return _where(condition, x, y)
