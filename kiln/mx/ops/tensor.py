"""MXNet 1.x's tensor operators (arithmetic, scalar ops, reductions, shapes, indexing) by
their MXNet names, mapped onto kiln.np / kiln.npx; see kiln/mx/ops for the table."""
import numpy as _np

from ... import np as knp, npx as knpx
from ..._core.base import KilnError
from .table import _op, _DTYPE_FLAGS, binary as _binary


# ---- arithmetic ----------------------------------------------------------------------------

_binary("elemwise_add _plus _add broadcast_add broadcast_plus _npi_add", knp.add)
_binary("elemwise_sub _minus _sub broadcast_sub broadcast_minus _npi_subtract", knp.subtract)
_binary("elemwise_mul _mul broadcast_mul _npi_multiply", knp.multiply)
_binary("elemwise_div _div broadcast_div _npi_true_divide _scatter_elemwise_div", knp.divide)
_binary("_power broadcast_power _npi_power", knp.power)
_binary("_maximum broadcast_maximum _npi_maximum", knp.maximum)
_binary("_minimum broadcast_minimum _npi_minimum", knp.minimum)


def _scalar(names, fn):
    _op(names, same_shape=True)(lambda data, scalar=0.0, **_: fn(data, float(scalar)))


_scalar("_plus_scalar _PlusScalar _npi_add_scalar _scatter_plus_scalar", lambda x, s: x + s)
_scalar("_minus_scalar _MinusScalar _npi_subtract_scalar _scatter_minus_scalar",
        lambda x, s: x - s)
_scalar("_rminus_scalar _RMinusScalar _npi_rsubtract_scalar", lambda x, s: s - x)
_scalar("_mul_scalar _MulScalar _npi_multiply_scalar", lambda x, s: x * s)
_scalar("_div_scalar _DivScalar _npi_true_divide_scalar", lambda x, s: x / s)
_scalar("_rdiv_scalar _RDivScalar _npi_rtrue_divide_scalar", lambda x, s: s / x)
_scalar("_power_scalar _PowerScalar _npi_power_scalar", lambda x, s: x ** s)
_scalar("_rpower_scalar _RPowerScalar _npi_rpower_scalar", lambda x, s: s ** x)
_scalar("_maximum_scalar", knp.maximum)
_scalar("_minimum_scalar", knp.minimum)

for _name in ("relu sigmoid".split()):
    _op(_name, same_shape=True)(lambda data, _f=getattr(knpx, _name), **_: _f(data))
for _name in ("tanh exp log sqrt square abs negative sin cos floor ceil sign "
              "reciprocal log1p expm1".split()):
    _op(_name + " _npi_" + _name, same_shape=True)(
        lambda data, _f=getattr(knp, _name), **_: _f(data))


@_op("rsqrt", same_shape=True)
def rsqrt(data, **_):
    return 1.0 / knp.sqrt(data)


@_op("_copy identity _np_copy", same_shape=True)
def _copy(data, **_):
    return data + 0


@_op("BlockGrad stop_gradient", same_shape=True)
def BlockGrad(data, **_):
    return knpx.stop_gradient(data)


@_op("clip", same_shape=True)
def clip(data, a_min=None, a_max=None, **_):
    return knp.clip(data, a_min, a_max)


@_op("Cast cast", same_shape=True)
def Cast(data, dtype="float32", **_):
    return data.astype(_DTYPE_FLAGS.get(str(dtype), dtype))


@_op("add_n ElementWiseSum", variadic=True, same_shape=True)
def add_n(*args, **_):
    out = args[0]
    for a in args[1:]:
        out = out + a
    return out


# ---- reductions and shapes -----------------------------------------------------------------

def _axis(axis):
    if axis is None or axis == ():
        return None
    return tuple(axis) if isinstance(axis, (tuple, list)) else int(axis)


def _reduce(names, fn):
    def run(data, axis=None, keepdims=False, exclude=False, **_):
        ax = _axis(axis)
        if exclude and ax is not None:
            drop = {a % data.ndim for a in (ax if isinstance(ax, tuple) else (ax,))}
            ax = tuple(i for i in range(data.ndim) if i not in drop)
        out = fn(data, axis=ax, keepdims=bool(keepdims))
        return knp.reshape(out, (1,)) if out.ndim == 0 else out    # 1.x: never 0-d
    _op(names)(run)


def _nan_as(value, fn):
    """fn over the data with NaN counted as `value` (nansum: 0, nanprod: 1)."""
    def reduce(data, axis=None, keepdims=False):
        clean = knp.where(knp.isnan(data), knp.full((), value, dtype=data.dtype), data)
        return fn(clean, axis=axis, keepdims=keepdims)
    return reduce


_reduce("sum sum_axis _np_sum", knp.sum)
_reduce("mean _npi_mean", knp.mean)
_reduce("max max_axis _np_max", knp.max)
_reduce("min min_axis _np_min", knp.min)
_reduce("prod _np_prod", knp.prod)
_reduce("nansum", _nan_as(0.0, knp.sum))
_reduce("nanprod", _nan_as(1.0, knp.prod))
_reduce("_square_sum", lambda data, axis=None, keepdims=False: knp.sum(
    data * data, axis=axis, keepdims=keepdims))        # MXNet's sum(square(x)) of one op


@_op("argmax")
def argmax(data, axis=None, keepdims=False, **_):
    out = knp.argmax(data, axis=axis, keepdims=keepdims).astype("float32")
    return knp.reshape(out, (1,)) if out.ndim == 0 else out


@_op("dot", ("lhs", "rhs"))
def dot(lhs, rhs, transpose_a=False, transpose_b=False, **_):
    a = knp.transpose(lhs) if transpose_a else lhs
    b = knp.transpose(rhs) if transpose_b else rhs
    if a.ndim > 2 or b.ndim > 2:   # MXNet: last axis of a against first axis of b
        return knp.tensordot(a, b, axes=1)
    return knp.dot(a, b)


@_op("batch_dot", ("lhs", "rhs"))
def batch_dot(lhs, rhs, transpose_a=False, transpose_b=False, **_):
    return knpx.batch_dot(lhs, rhs, transpose_a, transpose_b)


def mx_reshape_target(in_shape, shape, reverse=False):
    """MXNet 1.x Reshape's special codes: 0 copy, -1 infer, -2 copy the rest, -3 merge two,
    -4 split one into the next two. The target keeps -1 where the size is inferred (reshape
    does that), and where an input size is -1, not known yet (partial_shapes.py)."""
    src, spec = list(in_shape), [int(d) for d in shape]
    if reverse:
        src, spec = src[::-1], spec[::-1]
    out, i, k = [], 0, 0
    while k < len(spec):
        s = spec[k]
        if s == 0:
            out.append(src[i])
            i += 1
        elif s == -1:
            out.append(-1)
            i += 1
        elif s == -2:
            out.extend(src[i:])
            i = len(src)
        elif s == -3:
            a, b = src[i], src[i + 1]
            out.append(a * b if a >= 0 and b >= 0 else -1)
            i += 2
        elif s == -4:
            whole, a, b = src[i], spec[k + 1], spec[k + 2]
            if whole >= 0:
                a = whole // b if a == -1 else a
                b = whole // a if b == -1 else b
            out.extend([a, b])
            i += 1
            k += 2
        else:
            out.append(s)
            i += 1
        k += 1
    return tuple(out[::-1] if reverse else out)


def mx_legacy_target(in_shape, target, keep_highest=False):
    """Reshape's deprecated target_shape: one 0 is inferred from the size; keep_highest
    keeps the first size of the input."""
    out = [int(d) for d in target]
    if keep_highest:
        out[0] = in_shape[0]
    zeros = [k for k in range(1 if keep_highest else 0, len(out)) if out[k] == 0]
    if len(zeros) == 1:
        rest = int(_np.prod([d for k, d in enumerate(out) if k != zeros[0]]))
        out[zeros[0]] = int(_np.prod(in_shape)) // rest if rest else 0
    return tuple(out)


@_op("Reshape reshape")
def Reshape(data, shape=None, reverse=False, target_shape=None, keep_highest=False, **_):
    if not shape and target_shape:
        return knp.reshape(data, mx_legacy_target(data.shape, target_shape, keep_highest))
    return knp.reshape(data, mx_reshape_target(data.shape, shape, reverse))


@_op("_npx_reshape _np_reshape")
def _np_reshape(data, newshape=None, reverse=False, order="C", **_):
    return knp.reshape(data, mx_reshape_target(data.shape, newshape, reverse))


@_op("transpose _np_transpose")
def transpose(data, axes=None, **_):
    return knp.transpose(data, _axis(axes))


@_op("expand_dims")
def expand_dims(data, axis=0, **_):
    return knp.expand_dims(data, int(axis))


@_op("squeeze _np_squeeze")
def squeeze(data, axis=None, **_):
    return knp.squeeze(data, _axis(axis))


@_op("Concat concat _npi_concatenate", variadic=True)
def Concat(*args, dim=1, axis=None, num_args=None, **_):
    return knp.concatenate(list(args), axis=int(dim if axis is None else axis))


@_op("stack _npi_stack", variadic=True)
def stack(*args, axis=0, num_args=None, **_):
    return knp.stack(list(args), axis=int(axis))


@_op("slice_axis")
def slice_axis(data, axis=0, begin=0, end=None, **_):
    index = [slice(None)] * data.ndim
    index[int(axis)] = slice(int(begin), None if end is None else int(end))
    return data[tuple(index)]


@_op("slice crop")
def slice_(data, begin=(), end=(), step=(), **_):
    # an int (or None) stands for a tuple of one, as MXNet reads it: the first axis
    begin, end, step = ((v,) if v is None or isinstance(v, (int, _np.integer)) else v
                        for v in (begin, end, step))
    return knpx.slice(data, begin, end, step)


def _slice_key(ndim, begin, end, step):
    begin, end, step = ((v,) if v is None or isinstance(v, (int, _np.integer)) else tuple(v)
                        for v in (begin, end, step))
    key = [slice(b, e, step[k] if k < len(step) else None) for k, (b, e) in
           enumerate(zip(begin, end))]
    return tuple(key) + (slice(None),) * (ndim - len(key))


@_op("_slice_assign _crop_assign", ("lhs", "rhs"))
def _slice_assign(lhs, rhs, begin=(), end=(), step=(), **_):
    """lhs with its region begin:end:step replaced by rhs (a new array, as MXNet's op)."""
    out = knp.array(lhs, copy=True)
    out[_slice_key(lhs.ndim, begin, end, step)] = rhs
    return out


@_op("_slice_assign_scalar _crop_assign_scalar")
def _slice_assign_scalar(data, scalar=0.0, begin=(), end=(), step=(), **_):
    """data with its region begin:end:step set to `scalar` (a new array)."""
    out = knp.array(data, copy=True)
    out[_slice_key(data.ndim, begin, end, step)] = scalar
    return out


@_op("broadcast_to")
def broadcast_to(data, shape=(), **_):
    if len(shape) != data.ndim:   # MXNet: same rank; 0 keeps the input's size
        raise KilnError(f"broadcast_to: shape {tuple(shape)} has {len(shape)} dimensions, "
                        f"the input of shape {tuple(data.shape)} has {data.ndim}")
    target = tuple(d if t == 0 else t for d, t in zip(data.shape, shape))
    return knp.broadcast_to(data, target)


@_op("broadcast_like", ("lhs", "rhs"))
def broadcast_like(lhs, rhs, lhs_axes=None, rhs_axes=None, **_):
    """lhs broadcast to rhs's shape; with lhs_axes/rhs_axes, only those axes of lhs (of
    size 1) take the sizes of rhs's paired axes, as in MXNet."""
    if lhs_axes is None and rhs_axes is None:
        return knp.broadcast_to(lhs, rhs.shape)
    lhs_axes, rhs_axes = _axes_tuple(lhs_axes), _axes_tuple(rhs_axes)
    if not lhs_axes or len(lhs_axes) != len(rhs_axes):
        raise KilnError(f"broadcast_like: lhs_axes and rhs_axes must be non-empty and of equal "
                        f"length, got {lhs_axes} and {rhs_axes}")
    target = list(lhs.shape)
    for a, b in zip(lhs_axes, rhs_axes):
        a, b = a % lhs.ndim, b % rhs.ndim
        if target[a] != 1:
            raise KilnError(f"broadcast_like: lhs axis {a} of size {target[a]} cannot be "
                            f"broadcast to {rhs.shape[b]}")
        target[a] = rhs.shape[b]
    return knp.broadcast_to(lhs, tuple(target))


def _axes_tuple(axes):
    return () if axes is None else (int(axes),) if isinstance(axes, int) else tuple(
        int(a) for a in axes)


@_op("zeros_like")
def zeros_like(data, **_):
    return knp.zeros_like(data)


@_op("ones_like")
def ones_like(data, **_):
    return knp.ones_like(data)


@_op("where", ("condition", "x", "y"))
def where(condition, x, y, **_):
    """x where condition is nonzero, else y; a vector condition picks whole rows (1.x)."""
    if condition.ndim == 1 and x.ndim > 1:
        condition = knp.reshape(condition, (-1,) + (1,) * (x.ndim - 1))
    return knp.where(condition != 0, x, y)


@_op("take", ("a", "indices"))
def take(a, indices, axis=0, mode="clip", **_):
    if mode == "raise" and indices._node is None:
        size, idx = a.shape[int(axis)], indices.asnumpy()
        if idx.size and (idx.min() < 0 or idx.max() >= size):
            raise KilnError(f"take: an index is out of range for axis {int(axis)} of size "
                            f"{size} (mode='raise')")
    return knp.take(a, indices.astype("int64"), axis=int(axis), mode=mode)


@_op("pick", ("data", "index"))
def pick(data, index, axis=-1, keepdims=False, mode="clip", **_):
    return knpx.pick(data, index, axis=axis, keepdims=keepdims, mode=mode)


@_op("one_hot", ("indices",))
def one_hot(indices, depth=1, on_value=1.0, off_value=0.0, dtype="float32", **_):
    return knpx.one_hot(indices.astype("int64"), int(depth), on_value, off_value, dtype)


@_op("tile")
def tile(data, reps=(), **_):
    reps = tuple(int(r) for r in reps)
    if any(r < 1 for r in reps):
        raise KilnError(f"tile: every rep must be positive, got {reps}")
    return knp.tile(data, reps)


@_op("repeat")
def repeat(data, repeats=1, axis=None, **_):
    return knp.repeat(data, int(repeats), axis=None if axis is None else int(axis))


@_op("reverse flip")
def reverse(data, axis=0, **_):
    return knp.flip(data, axis=_axis(axis))


@_op("smooth_l1")
def smooth_l1(data, scalar=1.0, **_):
    return knpx.smooth_l1(data, scalar=float(scalar))


@_op("_kiln_constant", ())
def _kiln_constant(value=0.0, shape=(), dtype="float32", **_):
    """sym.Constant: a value stored in the symbol itself."""
    return knp.array(_np.asarray(value, dtype=dtype).reshape(tuple(shape)))


# ---- creation: the nodes of sym.zeros / ones / full / arange (MXNet's _zeros, ...) --------

def _creation_dtype(dtype):
    return _DTYPE_FLAGS.get(str(dtype), dtype or "float32")


@_op("_zeros", ())
def _zeros(shape=(), dtype="float32", **_):
    return knp.zeros(tuple(int(s) for s in shape), dtype=_creation_dtype(dtype))


@_op("_ones", ())
def _ones(shape=(), dtype="float32", **_):
    return knp.ones(tuple(int(s) for s in shape), dtype=_creation_dtype(dtype))


@_op("_full", ())
def _full(shape=(), value=0.0, dtype="float32", **_):
    return knp.full(tuple(int(s) for s in shape), float(value), dtype=_creation_dtype(dtype))


@_op("_arange", ())
def _arange(start=0.0, stop=None, step=1.0, repeat=1, infer_range=False, dtype="float32",
            **_):
    out = knp.arange(float(start), None if stop is None else float(stop), float(step),
                     dtype=_creation_dtype(dtype))
    return knp.repeat(out, int(repeat)) if int(repeat) > 1 else out


@_op("_eye", ())
def _eye(N=0, M=0, k=0, dtype="float32", **_):
    return knp.eye(int(N), int(M) or None, int(k), dtype=_creation_dtype(dtype))


@_op("reshape_like", ("lhs", "rhs"))
def reshape_like(lhs, rhs, lhs_begin=None, lhs_end=None, rhs_begin=None, rhs_end=None, **_):
    """lhs with lhs.shape[lhs_begin:lhs_end] replaced by rhs.shape[rhs_begin:rhs_end]
    (the whole shapes by default); negative bounds count from the end."""
    def bounds(shape, begin, end):
        n = len(shape)
        b = 0 if begin is None else int(begin) % n if n else 0
        e = n if end is None else (int(end) + n if int(end) < 0 else int(end))
        return b, e
    lb, le = bounds(lhs.shape, lhs_begin, lhs_end)
    rb, re = bounds(rhs.shape, rhs_begin, rhs_end)
    target = tuple(lhs.shape[:lb]) + tuple(rhs.shape[rb:re]) + tuple(lhs.shape[le:])
    if int(_np.prod(target, dtype=_np.int64)) != lhs.size:
        raise KilnError(f"reshape_like: cannot reshape lhs of shape {tuple(lhs.shape)} into "
                        f"{target} (rhs shape {tuple(rhs.shape)})")
    return knp.reshape(lhs, target)
