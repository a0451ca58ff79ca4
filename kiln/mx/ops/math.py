"""More MXNet 1.x operators by their MXNet names: broadcast comparisons (which return
0/1 in the input's dtype, as 1.x does), broadcast_mod/hypot, special functions, norm,
moments, softmin, hard_sigmoid, khatri_rao, slice_like, batch_take, argmax_channel; see
kiln/mx/ops for the table. All compose kiln.np / kiln.npx functions."""
import numpy as _np

from ... import np as knp, npx as knpx
from ..._core.base import KilnError
from .table import _op, binary


def _as_number(fn):
    """A 1.x comparison: the boolean result as 0/1 in the operands' dtype."""
    def compare(lhs, rhs, **_):
        out = fn(lhs, rhs)
        dt = _np.result_type(*[getattr(x, "dtype", _np.float32) for x in (lhs, rhs)])
        return out.astype(dt if dt != _np.bool_ else _np.float32)
    return compare


for _names, _fn in (("broadcast_equal _equal", knp.equal),
                    ("broadcast_not_equal _not_equal", knp.not_equal),
                    ("broadcast_greater _greater", knp.greater),
                    ("broadcast_greater_equal _greater_equal", knp.greater_equal),
                    ("broadcast_lesser _lesser lesser", knp.less),
                    ("broadcast_lesser_equal _lesser_equal lesser_equal", knp.less_equal),
                    ("broadcast_logical_and _logical_and", knp.logical_and),
                    ("broadcast_logical_or _logical_or", knp.logical_or),
                    ("broadcast_logical_xor _logical_xor", knp.logical_xor)):
    _op(_names, ("lhs", "rhs"))(_as_number(_fn))



def _as_number_scalar(fn):
    """A 1.x comparison with a scalar: 0/1 in the array's dtype."""
    def compare(data, scalar=0.0, **_):
        return fn(data, float(scalar)).astype(data.dtype)
    return compare


for _names, _fn in (("_equal_scalar _EqualScalar", knp.equal),
                    ("_not_equal_scalar _NotEqualScalar", knp.not_equal),
                    ("_greater_scalar _GreaterScalar", knp.greater),
                    ("_greater_equal_scalar _GreaterEqualScalar", knp.greater_equal),
                    ("_lesser_scalar _LesserScalar", knp.less),
                    ("_lesser_equal_scalar _LesserEqualScalar", knp.less_equal),
                    ("_logical_and_scalar", knp.logical_and),
                    ("_logical_or_scalar", knp.logical_or),
                    ("_logical_xor_scalar", knp.logical_xor)):
    _op(_names)(_as_number_scalar(_fn))

_op("_mod_scalar _ModScalar")(lambda data, scalar=0.0, **_: knp.mod(data, float(scalar)))
_op("_rmod_scalar _RModScalar")(lambda data, scalar=0.0, **_: knp.mod(float(scalar), data))
_op("_hypot_scalar _HypotScalar")(
    lambda data, scalar=0.0, **_: knp.hypot(data, float(scalar)))
binary("broadcast_mod _mod modulo", knp.mod)
binary("broadcast_hypot _hypot", knp.hypot)

for _name in "erf erfinv gamma gammaln".split():
    _op(f"{_name} _npx_{_name}")(lambda data, _f=getattr(knpx, _name), **_: _f(data))


@_op("rcbrt")
def rcbrt(data, **_):
    return 1.0 / knp.cbrt(data)


def _axes(axis):
    if axis is None or axis == ():
        return None
    return (int(axis),) if isinstance(axis, (int, _np.integer)) else tuple(int(a) for a in axis)


@_op("norm")
def norm(data, ord=2, axis=None, keepdims=False, **_):
    """MXNet 1.x's norm: L2 (or L1) over `axis`, all axes giving shape (1,)."""
    axes = _axes(axis)
    if int(ord) == 1:
        out = knp.sum(knp.abs(data), axis=axes, keepdims=bool(keepdims))
    elif int(ord) == 2:
        out = knp.sqrt(knp.sum(data * data, axis=axes, keepdims=bool(keepdims)))
    else:
        raise KilnError(f"norm: ord must be 1 or 2, got {ord}")
    return knp.reshape(out, (1,)) if out.ndim == 0 else out


@_op("moments", num_outputs=2)
def moments(data, axes=None, keepdims=False, **_):
    axes = _axes(axes)
    mean = knp.mean(data, axis=axes, keepdims=True)
    var = knp.mean((data - mean) ** 2, axis=axes, keepdims=bool(keepdims))
    if not keepdims:
        mean = knp.mean(data, axis=axes)
    return [mean, var]


@_op("softmin")
def softmin(data, axis=-1, temperature=None, **_):
    scaled = -data if temperature is None else -data / float(temperature)
    return knpx.softmax(scaled, axis=int(axis))


@_op("hard_sigmoid")
def hard_sigmoid(data, alpha=0.2, beta=0.5, **_):
    return knp.clip(data * float(alpha) + float(beta), 0.0, 1.0)


@_op("khatri_rao", variadic=True)
def khatri_rao(*args, **_):
    """Column-wise Kronecker product: rows of the first vary slowest."""
    out = args[0]
    for m in args[1:]:
        if m.shape[1] != out.shape[1]:
            raise KilnError(f"khatri_rao: matrices need the same number of columns, got "
                            f"{out.shape} and {m.shape}")
        rows = out.shape[0] * m.shape[0]
        out = knp.reshape(knp.expand_dims(out, 1) * knp.expand_dims(m, 0), (rows, m.shape[1]))
    return out


@_op("slice_like", ("data", "shape_like"))
def slice_like(data, shape_like, axes=(), **_):
    axes = [int(a) % data.ndim for a in (axes or range(shape_like.ndim))]
    key = [slice(None)] * data.ndim
    for a in axes:
        key[a] = slice(0, shape_like.shape[a])
    return data[tuple(key)]


@_op("batch_take", ("a", "indices"))
def batch_take(a, indices, **_):
    """a[i, indices[i]] for each row i (MXNet's deprecated name for pick on axis 1)."""
    return knpx.pick(a, indices, axis=-1)


@_op("argmax_channel")
def argmax_channel(data, **_):
    return knp.argmax(data, axis=-1).astype("float32")


@_op("shape_array")
def shape_array(data, **_):
    return knpx.shape_array(data)


@_op("size_array")
def size_array(data, **_):
    return knp.array([data.size], dtype="int64")
