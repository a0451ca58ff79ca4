"""Applying a primitive: eagerly on NumPy values, or as a graph node while tracing.

Both paths run the primitive's shape rule first, so a bad call gets the same error in both
modes and the traced graph's shapes are exactly the eager ones.

An eager call may be run as another primitive: `set_eager_substitute(fn)` (mixed precision
registers one, kiln/hybrid/cached.py: after amp.init, an eager matmul runs as matmul_bf16
as a hybridized one does); fn(prim, arrays, attrs) gives (primitive, attrs) or None.
"""
import numpy as _np

from . import autograd
from .symdim import mentions_symbolic
from .base import DEFAULT_FLOAT, DEFAULT_INT, KilnError, op_error
from .ndarray import ndarray, as_array
from .primitive import REGISTRY
from . import alias_paths, layouts, trace
from .writes import arrays_written
from .aliasing import VIEW_OPS, note_view
from .bfloat16 import is_floating as _is_floating, any_bfloat16, run_in_float32


def scalar_operand(value, like):
    """A Python scalar takes its dtype from the array it meets (weak typing, as MXNet does)."""
    if isinstance(value, bool):
        dt = like.dtype if like is not None and like.dtype == _np.bool_ else (
            like.dtype if like is not None else _np.dtype(_np.bool_))
    elif isinstance(value, (int, _np.integer)):
        dt = like.dtype if like is not None and like.dtype != _np.bool_ else DEFAULT_INT
    elif isinstance(value, (float, _np.floating)):
        dt = like.dtype if like is not None and _is_floating(like.dtype) else DEFAULT_FLOAT
    else:
        return as_array(value)
    return ndarray._wrap(_np.array(value, dtype=dt))


def to_operands(args):
    for a in args:
        if a.__class__ is not ndarray:
            break
    else:
        return list(args)      # the common case: nothing to convert
    like = None
    for a in args:
        if isinstance(a, ndarray):
            like = a
            break
    # MXNet: an integer (or bool) array meeting a Python float computes in the default float
    # (int64 array * 1.5 is float32, not NumPy's float64)
    promote = like is not None and not _is_floating(like.dtype) and any(
        isinstance(a, (float, _np.floating)) for a in args)
    out = []
    for a in args:
        if isinstance(a, ndarray):
            if promote and not _is_floating(a.dtype):
                a = REGISTRY["cast"](a, dtype=DEFAULT_FLOAT)
            out.append(a)
        elif isinstance(a, (bool, int, float, _np.number)):
            out.append(scalar_operand(a, like))
        else:
            out.append(as_array(a))
    return out


def _is_symbolic(prim, arrays, attrs):
    for a in arrays:
        if a._node is not None:
            return True
    # a random draw inside a trace must stay in the graph, not become a frozen constant;
    # so must an array made to a symbolic size (zeros of a traced shape in a gradient rule)
    # (the trace is asked first: eager calls do not walk their attributes)
    return trace.current() is not None and (prim.random or bool(attrs) and mentions_symbolic(attrs))


_eager_substitute = [None]


def set_eager_substitute(fn):
    """Run eager calls through fn (None: as they are); see the module docstring."""
    _eager_substitute[0] = fn


def apply(prim, args, attrs):
    arrays = to_operands(args)
    if _eager_substitute[0] is not None and not _is_symbolic(prim, arrays, attrs):
        got = _eager_substitute[0](prim, arrays, attrs)
        if got is not None:
            prim, attrs = got
    if _is_symbolic(prim, arrays, attrs):
        shape, dtype = prim.shape(*[x._value for x in arrays], **attrs)
        out = ndarray._from_node(trace.add_node(prim, arrays, attrs, shape, dtype))
        if prim.name not in VIEW_OPS and layouts.strided(arrays):
            layouts.note_result(prim, arrays, attrs, out)   # NumPy keeps their memory order
    else:
        datas = [a._data for a in arrays]
        shape, dtype = prim.shape(*datas, **attrs)
        try:
            if any_bfloat16(datas) and prim.name not in VIEW_OPS:
                value = run_in_float32(prim.impl, datas, attrs)
            else:
                value = prim.impl(*datas, **attrs)
        except KilnError:
            raise
        except (ValueError, TypeError, IndexError, FloatingPointError, MemoryError) as exc:
            raise op_error(prim.name, f"{type(exc).__name__}: {exc}", KilnError) from exc
        if type(value) is not _np.ndarray:
            value = _np.asarray(value)
        if value.dtype != dtype:
            value = value.astype(dtype)
        out = ndarray._wrap(value)
    recording = autograd._state.recording
    if recording and prim.grad is not None:
        for a in arrays:
            if a._tape is not None:
                autograd.record_primitive(prim, arrays, attrs, out)
                break
    if prim.name in VIEW_OPS and (recording or trace.current() is not None):
        note_view(prim, arrays[0], attrs, out)
    return out


def binary(name, a, b):
    return apply(REGISTRY[name], (a, b), {})


def inplace_binary(name, target, other):
    """target op= other, keeping target's identity."""
    result = binary(name, target, other)
    # a gradient leaf (attach_grad) updated outside record() stays a leaf: write in place
    eager_target = target._tape is None or (isinstance(target._tape, autograd.Leaf)
                                            and not autograd._state.recording)
    # the same checks whatever the path below: a traced update must raise where eager does
    if result.dtype != target.dtype and not _np.can_cast(result.dtype, target.dtype,
                                                           "same_kind"):
        raise op_error(name, f"cannot store the {result.dtype} result in place into an "
                       f"array of dtype {target.dtype}")
    # inside record() the tape may hold the target's buffer as a saved input: a write
    # there would change what backward() computes with, so the target is rebound instead
    if (target._node is None and eager_target and result._node is None
            and result._tape is None and target._data.flags.writeable
            and not autograd._state.recording):
        if result.shape != target.shape:
            raise op_error(name, f"in-place result of shape {result.shape} does not fit the "
                           f"target's shape {target.shape}")
        alias_paths.check_write(target)
        target._data[...] = result._data
        alias_paths.after_write(target)     # arrays that are this one on some paths
        arrays_written()
    else:
        if result.shape != target.shape:
            raise op_error(name, f"in-place result of shape {result.shape} does not fit the "
                           f"target's shape {target.shape}")
        if result.dtype != target.dtype:
            result = REGISTRY["cast"](result, dtype=target.dtype)
        target._rebind(result)


def apply_identity(x):
    """A copy that stays on the tape (used by ndarray.copy)."""
    if x._tape is not None and autograd._state.recording:
        return REGISTRY["cast"](x, dtype=x.dtype)
    return ndarray._wrap(_np.array(x._data, copy=True))
