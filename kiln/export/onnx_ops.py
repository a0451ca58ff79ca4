"""ONNX lowerings of kiln's registry primitives, one function per op.

Each lowering gets the emitter, the kiln node and the ONNX names of its inputs, and
returns the ONNX name holding the node's value. kiln follows NumPy's broadcasting and
dtype rules; ONNX wants both operands of a binary op in one type, so operands are cast
to the type kiln computes in wherever they differ.
"""
import numpy as _np

from .._core.base import KilnError
from .._core.symdim import SymInt
from . import onnx_lowp
from .onnx_sizes import expand_target, int64s, reshape_target

INT64_MIN = -(1 << 63)


def _cast_to(em, name, have, want):
    if _np.dtype(have) == _np.dtype(want):
        return name
    return em.op("Cast", [name], to=em.onnx_type(want))


def _operands(em, node, ins, dtype):
    return [_cast_to(em, n, i.dtype, dtype) for n, i in zip(ins, node.inputs)]


def _binary(op_type):
    def lower(em, node, ins):
        return em.op(op_type, _operands(em, node, ins, node.dtype))
    return lower


def _compare(op_type, negate=False):
    def lower(em, node, ins):
        dt = _np.result_type(*[i.dtype for i in node.inputs])
        out = em.op(op_type, _operands(em, node, ins, dt))
        return em.op("Not", [out]) if negate else out
    return lower


def _logical(op_type):
    def lower(em, node, ins):
        return em.op(op_type, _operands(em, node, ins, _np.bool_))
    return lower


def _unary(op_type):
    def lower(em, node, ins):
        return em.op(op_type, _operands(em, node, ins, node.dtype))
    return lower


def _mod(em, node, ins):
    a, b = _operands(em, node, ins, node.dtype)
    if node.dtype.kind != "f":
        return em.op("Mod", [a, b], fmod=0)   # sign of the divisor, like NumPy
    # ONNX's float Mod is C fmod; NumPy's takes the divisor's sign: a - floor(a/b)*b
    q = em.op("Floor", [em.op("Div", [a, b])])
    return em.op("Sub", [a, em.op("Mul", [q, b])])


def _where(em, node, ins):
    c = _cast_to(em, ins[0], node.inputs[0].dtype, _np.bool_)
    a, b = [_cast_to(em, n, i.dtype, node.dtype) for n, i in zip(ins[1:], node.inputs[1:])]
    return em.op("Where", [c, a, b])


def _cast(em, node, ins):
    return em.op("Cast", ins, to=em.onnx_type(node.dtype))


def _reshape(em, node, ins):
    return em.op("Reshape", [ins[0], reshape_target(em, node.inputs[0].shape, node.shape)])


def _transpose(em, node, ins):
    return em.op("Transpose", ins, perm=[int(a) for a in node.attrs["axes"]])


def _broadcast_to(em, node, ins):
    return em.op("Expand", [ins[0], expand_target(em, node.inputs[0].shape, node.shape)])


def _slice(em, node, ins):
    a = node.attrs
    # a negative end is NumPy's "before the start"; a symbolic one is a size (>= 0)
    ends = [e if isinstance(e, SymInt) or e >= 0 else INT64_MIN for e in a["end"]]
    if not ends:
        return em.op("Identity", ins)
    return em.op("Slice", [ins[0]] + [int64s(em, v) for v in (
        a["begin"], ends, list(range(len(ends))), a["step"])])


def _concatenate(em, node, ins):
    axis = node.attrs["axis"] % node.ndim
    return em.op("Concat", _operands(em, node, ins, node.dtype), axis=axis)


def _take(em, node, ins):
    x, idx = node.inputs
    axis = node.attrs["axis"] % x.ndim
    n = x.shape[axis]
    i = _cast_to(em, ins[1], idx.dtype, _np.int64)
    clip = node.attrs.get("mode", "clip") == "clip"
    if isinstance(n, SymInt):     # the axis' size, computed in-graph (a 1-element tensor)
        size = int64s(em, [n])
        bound = em.op("Squeeze", [em.op("Sub", [size, em.const(_np.array([1], _np.int64))])]) \
            if clip else size
    else:
        bound = em.const(_np.array(n - 1 if clip else n, _np.int64))
    if clip:
        i = em.op("Clip", [i, em.const(_np.array(0, _np.int64)), bound])
    else:
        i = em.op("Mod", [i, bound], fmod=0)
    return em.op("Gather", [ins[0], i], axis=axis)


def _axes(node):
    x = node.inputs[0]
    axis = node.attrs.get("axis")
    if axis is None:
        return list(range(x.ndim))
    if isinstance(axis, int):
        axis = (axis,)
    return sorted(a % x.ndim for a in axis)


def _reduce(op_type, axes_as_input_since):
    def lower(em, node, ins):
        src = _cast_to(em, ins[0], node.inputs[0].dtype, node.dtype)
        axes = _axes(node)
        keep = int(bool(node.attrs.get("keepdims", False)))
        if not axes:
            return em.op("Identity", [src])
        if em.opset >= axes_as_input_since:
            return em.op(op_type, [src, em.const(_np.array(axes, _np.int64))], keepdims=keep)
        return em.op(op_type, [src], axes=axes, keepdims=keep)
    return lower


def _arg(op_type):
    def lower(em, node, ins):
        x = node.inputs[0]
        keep = bool(node.attrs.get("keepdims", False))
        axis = node.attrs.get("axis")
        if axis is None:
            flat = em.op("Reshape", [ins[0], em.const(_np.array([-1], _np.int64))])
            out = em.op(op_type, [flat], axis=0, keepdims=0)
            return em.op("Reshape", [out, em.const(_np.array(node.shape, _np.int64))])
        return em.op(op_type, ins, axis=axis % x.ndim, keepdims=int(keep))
    return lower


def _full(em, node, ins):
    a = node.attrs
    if any(isinstance(d, SymInt) for d in node.shape):
        value = em.numpy_helper.from_array(_np.full((1,), a["value"], dtype=node.dtype))
        return em.op("ConstantOfShape", [int64s(em, node.shape)], value=value)
    return em.op("Identity", [em.const(_np.full(node.shape, a["value"], dtype=node.dtype))])


def _matmul(em, node, ins):
    return em.op("MatMul", _operands(em, node, ins, node.dtype))


def windows_generic(em, node, x_name):
    """im2col with Pad + one strided Slice per kernel offset (when no Conv/Pool matched)."""
    a = node.attrs
    kernel, stride, dil, pad = a["kernel"], a["stride"], a["dilation"], a["pad"]
    nsp = len(kernel)
    x = node.inputs[0]
    out_sp = node.shape[1:1 + nsp]
    if any(pad):
        pads = [0, 0] + [pad[2 * i] for i in range(nsp)] + [0, 0] + [
            pad[2 * i + 1] for i in range(nsp)]
        x_name = em.op("Pad", [x_name, em.const(_np.array(pads, _np.int64)),
                               em.const(_np.array(a.get("pad_value", 0.0), x.dtype))],
                       mode="constant")
    axes = em.const(_np.arange(2, 2 + nsp, dtype=_np.int64))
    steps = em.const(_np.array(stride, _np.int64))
    pieces = []
    for offset in _np.ndindex(*kernel):
        starts = [offset[i] * dil[i] for i in range(nsp)]
        ends = [starts[i] + (out_sp[i] - 1) * stride[i] + 1 for i in range(nsp)]
        s = em.op("Slice", [x_name, em.const(_np.array(starts, _np.int64)),
                            int64s(em, ends), axes, steps])
        pieces.append(em.op("Unsqueeze", [s, em.const(_np.array([-1], _np.int64))]))
    cat = em.op("Concat", pieces, axis=-1) if len(pieces) > 1 else pieces[0]
    n, c = x.shape[0], x.shape[1]
    full = em.op("Reshape", [cat, reshape_target(em, None, (n, c) + tuple(out_sp) +
                                                 tuple(kernel))])
    perm = [0] + list(range(2, 2 + nsp)) + [1] + list(range(2 + nsp, 2 + 2 * nsp))
    return em.op("Transpose", [full], perm=perm)


def _windows(em, node, ins):
    return windows_generic(em, node, ins[0])


def _pads(pad):
    return list(pad[0::2]) + list(pad[1::2])


def _conv(em, node, ins):
    a = node.attrs
    return em.op("Conv", ins, strides=list(a["stride"]), dilations=list(a["dilation"]),
                 pads=_pads(a["pad"]), group=int(a.get("groups", 1)))


def _pool(em, node, ins):
    a = node.attrs
    attrs = dict(kernel_shape=list(a["kernel"]), strides=list(a["stride"]), pads=_pads(a["pad"]))
    if a["kind"] == "max":
        return em.op("MaxPool", ins, **attrs)
    return em.op("AveragePool", ins, count_include_pad=int(a["kind"] == "avg"), **attrs)


def _log1p(em, node, ins):
    one = em.const(_np.array(1, node.dtype))
    return em.op("Log", [em.op("Add", _operands(em, node, ins, node.dtype) + [one])])


def _expm1(em, node, ins):
    one = em.const(_np.array(1, node.dtype))
    return em.op("Sub", [em.op("Exp", _operands(em, node, ins, node.dtype)), one])


def _unsupported(em, node, ins):
    raise KilnError(f"ONNX export: op {node.op!r} ({node.name}) has no ONNX lowering")


LOWERINGS = {
    "add": _binary("Add"), "subtract": _binary("Sub"), "multiply": _binary("Mul"),
    "divide": _binary("Div"), "power": _binary("Pow"), "maximum": _binary("Max"),
    "minimum": _binary("Min"), "mod": _mod,
    "equal": _compare("Equal"), "not_equal": _compare("Equal", negate=True),
    "less": _compare("Less"), "less_equal": _compare("LessOrEqual"),
    "greater": _compare("Greater"), "greater_equal": _compare("GreaterOrEqual"),
    "logical_and": _logical("And"), "logical_or": _logical("Or"),
    "logical_xor": _logical("Xor"), "logical_not": _logical("Not"),
    "negative": _unary("Neg"), "exp": _unary("Exp"), "log": _unary("Log"),
    "sqrt": _unary("Sqrt"), "abs": _unary("Abs"), "sign": _unary("Sign"),
    "sin": _unary("Sin"), "cos": _unary("Cos"), "tanh": _unary("Tanh"),
    "sigmoid": _unary("Sigmoid"), "relu": _unary("Relu"), "erf": _unary("Erf"),
    "floor": _unary("Floor"), "ceil": _unary("Ceil"), "round": _unary("Round"),
    "arcsinh": _unary("Asinh"), "arccosh": _unary("Acosh"), "arctanh": _unary("Atanh"),
    "log1p": _log1p, "expm1": _expm1,
    "where": _where, "cast": _cast, "reshape": _reshape, "transpose": _transpose,
    "broadcast_to": _broadcast_to, "slice": _slice, "concatenate": _concatenate,
    "take": _take, "sum": _reduce("ReduceSum", 13), "max": _reduce("ReduceMax", 18),
    "min": _reduce("ReduceMin", 18), "prod": _reduce("ReduceProd", 18),
    "argmax": _arg("ArgMax"), "argmin": _arg("ArgMin"), "full": _full,
    "matmul": _matmul, "windows": _windows, "conv": _conv, "pool": _pool,
}


LOWERINGS.update(onnx_lowp.LOWERINGS)     # the int8 layers, as QuantizeLinear/DequantizeLinear


def lowering(op):
    return LOWERINGS.get(op, _unsupported)
