"""Shape/dtype rules shared by families of primitives."""
import numpy as _np

from .._core.base import DEFAULT_FLOAT, DTypeError, KilnError, op_error, normalize_axes
from .._core import bfloat16

_FLOATS = (_np.dtype(_np.float16), _np.dtype(_np.float32), _np.dtype(_np.float64))


def is_float(dtype):
    dt = _np.dtype(dtype)
    return dt in _FLOATS or bfloat16.is_bfloat16(dt)


def broadcast_shapes(op, *shapes):
    # (ranks first: comparing a symbolic size with a fixed one would record a guard)
    if len(shapes) == 2 and len(shapes[0]) == len(shapes[1]) and shapes[0] == shapes[1]:
        return tuple(shapes[0])     # the common case, on most binary ops: nothing to do
    ndim = max(len(s) for s in shapes)
    out = []
    for i in range(ndim):
        dims = [s[i - (ndim - len(s))] for s in shapes if i - (ndim - len(s)) >= 0]
        if len(dims) == 1:      # one operand has this axis: its size, whatever it is
            out.append(dims[0])
            continue
        size = 1
        for d in dims:
            if d == 1:
                continue
            if size != 1 and d != size:
                raise op_error(op, "operands could not be broadcast together with shapes "
                               + " ".join(str(tuple(s)) for s in shapes))
            size = d
        out.append(size)
    return tuple(out)


_UFUNC_LOOPS = {}


def ufunc_loop_error(uf, dtypes, resolve=True):
    """NumPy's message when ufunc `uf` has no loop for `dtypes`, else None. resolve=False
    runs the ufunc on one element instead of asking resolve_dtypes, which NumPy < 1.24
    (the NumPy MXNet 1.9 runs on) has not got."""
    try:
        if resolve:
            uf.resolve_dtypes(tuple(dtypes) + (None,) * uf.nout)
        else:
            with _np.errstate(all="ignore"):
                uf(*[_np.zeros(1, d) for d in dtypes])
    except TypeError as exc:
        return str(exc)
    return None


def check_ufunc_loop(name, *dtypes):
    """Raise where NumPy's ufunc of this name has no loop for these dtypes (bool - bool,
    -bool): the shape rule runs while tracing too, so compiled code raises where eager
    does (the kernel alone would only fail eagerly)."""
    # bfloat16 operands run in float32 (_core/bfloat16.run_in_float32): float32's loops
    dtypes = tuple(_np.dtype(_np.float32) if bfloat16.is_bfloat16(d) else d for d in dtypes)
    key = (name,) + dtypes
    ok = _UFUNC_LOOPS.get(key)
    if ok is None:
        uf = getattr(_np, name, None)
        ok = True
        if isinstance(uf, _np.ufunc):
            ok = ufunc_loop_error(uf, dtypes, hasattr(uf, "resolve_dtypes"))
            ok = True if ok is None else ok
        _UFUNC_LOOPS[key] = ok
    if ok is not True:
        raise op_error(name, f"TypeError: {ok}", KilnError)


def unary_same(name):
    def rule(x):
        check_ufunc_loop(name, x.dtype)
        return x.shape, x.dtype
    rule.__name__ = f"{name}_shape"
    return rule


def unary_float(name):
    """Elementwise math that needs a float: ints are promoted to the default float."""
    def rule(x):
        return x.shape, (x.dtype if is_float(x.dtype) else DEFAULT_FLOAT)
    rule.__name__ = f"{name}_shape"
    return rule


_RESULT_TYPES = {}


def result_type(a, b):
    """NumPy's promotion of two dtypes, remembered: it is asked on every binary op."""
    key = (a, b)
    dt = _RESULT_TYPES.get(key)
    if dt is None:
        if bfloat16.is_bfloat16(a) or bfloat16.is_bfloat16(b):
            dt = _RESULT_TYPES[key] = bfloat16.promote(a, b)
        else:
            dt = _RESULT_TYPES[key] = _np.result_type(a, b)
    return dt


def binary_promote(name):
    def rule(a, b):
        check_ufunc_loop(name, a.dtype, b.dtype)
        return broadcast_shapes(name, a.shape, b.shape), result_type(a.dtype, b.dtype)
    rule.__name__ = f"{name}_shape"
    return rule


def binary_float(name):
    def rule(a, b):
        dt = result_type(a.dtype, b.dtype)
        return broadcast_shapes(name, a.shape, b.shape), (dt if is_float(dt) else DEFAULT_FLOAT)
    rule.__name__ = f"{name}_shape"
    return rule


def binary_bool(name):
    def rule(a, b):
        return broadcast_shapes(name, a.shape, b.shape), _np.dtype(_np.bool_)
    rule.__name__ = f"{name}_shape"
    return rule


def reduce_shape(op, shape, axis, keepdims):
    if not shape and axis is not None and axis != ():
        # NumPy's reductions refuse any axis of a 0-d array (normalize_axis lets 0 pass)
        raise op_error(op, f"axis {axis} is out of bounds for an array of 0 dimensions")
    axes = normalize_axes(op, axis, len(shape))
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def require_float(op, dtype):
    if not is_float(dtype):
        raise op_error(op, f"expected a floating-point array, got {_np.dtype(dtype)}", DTypeError)
