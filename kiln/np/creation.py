"""Array creation. As in MXNet, floats default to float32 and arange/linspace too."""
import numpy as _np

from .._core.base import (DEFAULT_FLOAT, normalize_dtype, op_error, KilnError,
                          UnsupportedError, where_in_user_code)
from .._core.ndarray import ndarray, as_array
from ..ops.creation import full as _full_prim
from .._core.context import check_usable, placed
from .._core.symdim import SymInt


def _size(d):
    """A dimension as an int; a symbolic size (a traced batch) stays symbolic."""
    return d if isinstance(d, SymInt) else int(d)


def _shape(op, shape):
    if isinstance(shape, (int, _np.integer, SymInt)):
        shape = (_size(shape),)
    try:
        if isinstance(shape, str):
            raise TypeError(shape)
        shape = tuple(_size(d) for d in shape)
    except (TypeError, ValueError):
        raise op_error(op, f"shape must be an int or a tuple of ints, got {shape!r}",
                       KilnError) from None
    if any(d < 0 for d in shape):
        raise op_error(op, f"negative dimensions are not allowed, got shape {shape}")
    return shape


def array(object, dtype=None, copy=True, ctx=None, device=None, **kwargs):
    """An array from a list, tuple, NumPy array or kiln array; float32 by default for Python
    floats, as in MXNet (`dtype` overrides)."""
    check_usable(ctx or device, "np.array")
    dt = normalize_dtype(dtype)
    if isinstance(object, ndarray):
        out = object if dt is None or object.dtype == dt else object.astype(dt)
        out = out.copy() if copy and out is object else out
        return out if out is object else placed(out, ctx or device)
    if isinstance(object, (list, tuple)) and any(isinstance(v, ndarray) for v in object):
        from .manipulation import stack
        out = stack([array(v) for v in object])
        return out if dt is None else out.astype(dt)
    out = as_array(object, dt)
    if copy and isinstance(object, _np.ndarray) and out._data is object:
        out = ndarray._wrap(object.copy())
    return placed(out, ctx or device)


def asarray(object, dtype=None, ctx=None, device=None):
    """`object` as a kiln array, without a copy when it already is one of the dtype."""
    return array(object, dtype=dtype, copy=False)


def full(shape, fill_value, dtype=None, order="C", ctx=None, device=None, out=None):
    """A new array of `shape` filled with `fill_value` (float32 unless `dtype` says otherwise)."""
    check_usable(ctx or device, "np.full")
    if isinstance(fill_value, ndarray):
        fill_value = fill_value.item()
    if dtype is None:
        dtype = (_np.dtype(_np.bool_) if isinstance(fill_value, bool) else
                 _np.dtype(_np.int64) if isinstance(fill_value, (int, _np.integer))
                 else DEFAULT_FLOAT)
    result = _full_prim(shape=_shape("full", shape), value=fill_value, dtype=normalize_dtype(dtype))
    return _maybe_out(placed(result, ctx or device), out)


def _c_order(order, what):
    if order != "C":      # MXNet's numpy interface refuses the others too
        raise UnsupportedError(f"{what}: kiln arrays are C-ordered; expected order='C', got "
                               f"{order!r}{where_in_user_code()}")


def zeros(shape, dtype=None, order="C", ctx=None, device=None):
    """A new array of `shape` filled with zeros (float32 by default). `empty` is the same: kiln
    never hands out uninitialized memory."""
    _c_order(order, "np.zeros")
    check_usable(ctx or device, "np.zeros")
    return placed(_full_prim(shape=_shape("zeros", shape), value=0,
                             dtype=normalize_dtype(dtype, DEFAULT_FLOAT)), ctx or device)


def ones(shape, dtype=None, order="C", ctx=None, device=None):
    """A new array of `shape` filled with ones (float32 by default)."""
    _c_order(order, "np.ones")
    check_usable(ctx or device, "np.ones")
    return placed(_full_prim(shape=_shape("ones", shape), value=1,
                             dtype=normalize_dtype(dtype, DEFAULT_FLOAT)), ctx or device)


empty = zeros


def _like(a, value, dtype):
    a = a if isinstance(a, ndarray) else array(a)
    return _full_prim(shape=a.shape, value=value, dtype=normalize_dtype(dtype, a.dtype))


def zeros_like(a, dtype=None, order="C", ctx=None, device=None, out=None):
    """An array of zeros with the shape (and, unless `dtype` is given, the dtype) of `a`;
    `empty_like` is the same."""
    return _maybe_out(_like(a, 0, dtype), out)


def ones_like(a, dtype=None, order="C", ctx=None, device=None, out=None):
    """An array of ones with the shape (and, unless `dtype` is given, the dtype) of `a`."""
    return _maybe_out(_like(a, 1, dtype), out)


def full_like(a, fill_value, dtype=None, order="C", ctx=None, device=None, out=None):
    """An array with the shape (and, unless `dtype` is given, the dtype) of `a`, filled with
    `fill_value`."""
    return _maybe_out(_like(a, fill_value, dtype), out)


empty_like = zeros_like


def _numpy_made(op):
    """Creation functions computed by NumPy directly: its errors come back as kiln errors."""
    def deco(fn):
        def wrapper(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except KilnError:
                raise
            except (ValueError, TypeError) as exc:
                raise op_error(op, f"{type(exc).__name__}: {exc}", KilnError) from None
        wrapper.__name__, wrapper.__doc__ = fn.__name__, fn.__doc__
        return wrapper
    return deco


@_numpy_made("arange")
def arange(start, stop=None, step=1, dtype=None, ctx=None, device=None):
    """Evenly spaced values in `[start, stop)` with `step` (one argument: `[0, start)`); float32 by
    default, as in MXNet."""
    check_usable(ctx or device, "np.arange")
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise op_error("arange", "step must not be zero")
    dtype = normalize_dtype(dtype, DEFAULT_FLOAT)
    return placed(ndarray._wrap(_np.arange(start, stop, step).astype(dtype)), ctx or device)


@_numpy_made("linspace")
def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, ctx=None,
             device=None):
    """`num` evenly spaced values from `start` to `stop` (inclusive unless `endpoint=False`); with
    `retstep=True` also the step."""
    values, step = _np.linspace(start, stop, num, endpoint=endpoint, retstep=True, axis=axis)
    out = ndarray._wrap(values.astype(normalize_dtype(dtype, DEFAULT_FLOAT)))
    return (out, step) if retstep else out


@_numpy_made("logspace")
def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0, ctx=None):
    """`num` values spaced evenly on a log scale, `base ** linspace(start, stop, num)`."""
    values = _np.logspace(start, stop, num, endpoint=endpoint, base=base, axis=axis)
    return ndarray._wrap(values.astype(normalize_dtype(dtype, DEFAULT_FLOAT)))


@_numpy_made("eye")
def eye(N, M=None, k=0, dtype=None, ctx=None, device=None):
    """A 2-D array with ones on the `k`-th diagonal and zeros elsewhere (`N` rows, `M` columns,
    default `N`)."""
    return ndarray._wrap(_np.eye(N, M, k, dtype=normalize_dtype(dtype, DEFAULT_FLOAT)))


def identity(n, dtype=None, ctx=None):
    """The `n` x `n` identity matrix."""
    return eye(n, dtype=dtype)


def meshgrid(*xi, indexing="xy"):
    """Coordinate matrices from coordinate vectors (`indexing='xy'` or `'ij'`); computed eagerly."""
    grids = _np.meshgrid(*[_concrete(x) for x in xi], indexing=indexing)
    return [as_array(g, g.dtype) for g in grids]


def tril(m, k=0):
    """A copy of `m` with the elements above the `k`-th diagonal set to zero (over the last two
    axes)."""
    from .indexing import where
    m = array(m, copy=False)
    mask = _np.tri(m.shape[-2], m.shape[-1], k, dtype=bool)
    return where(ndarray._wrap(mask), m, 0)


def triu(m, k=0):
    """A copy of `m` with the elements below the `k`-th diagonal set to zero (over the last two
    axes)."""
    from .indexing import where
    m = array(m, copy=False)
    mask = _np.tri(m.shape[-2], m.shape[-1], k - 1, dtype=bool)
    return where(ndarray._wrap(mask), 0, m)


def _concrete(x):
    return x._concrete("this function") if isinstance(x, ndarray) else _np.asarray(x)


def _maybe_out(result, out):
    if out is None:
        return result
    out[...] = result
    return out


# ---- windows --------------------------------------------------------------------------------

def _window(name, fn):
    def window(M, dtype=None, ctx=None, device=None):
        return ndarray._wrap(fn(int(M)).astype(dtype or DEFAULT_FLOAT))
    window.__name__ = name
    window.__doc__ = f"NumPy's {name} window, in the default float (MXNet's dtype)."
    return window


hamming = _window("hamming", _np.hamming)
hanning = _window("hanning", _np.hanning)
blackman = _window("blackman", _np.blackman)
