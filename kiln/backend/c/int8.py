"""The int8 primitives in generated C (kiln/ops/quantized.py): quantize_int8 as an
elementwise expression; dense_int8 and conv_int8 as calls into the oneDNN shim's int8
matmul and convolution (backend/dnnl/lowp.c), the activation quantized by a loop here.

A convolution always runs channels-last on oneDNN (its int8 kernels work on (N, *S, C)
in place, and only there add a residual): a node the layout pass left NCHW has its
activation quantized (or copied, when it comes quantized) into a channels-last buffer
and its output copied back, by the same loops. The residual is put into the output
before the call (dequantized into a float32 output; as it lies into an int8 one), and
oneDNN adds it (its sum post-op); a float32 residual of an int8 output is an argument
oneDNN reads (a binary post-op). A requantized output (out_scale) is oneDNN's: scaled,
rounded to nearest even, saturated.
"""
import math

import numpy as _np

from .heavy import DNNL_FAILED, op_slot
from .lowering import Heavy, elementwise_rule, register
from ..dnnl import lowp as dnnl_lowp
from ..dnnl.library import available
from ..dnnl.ops import channels_first

RANGES = {"int8": ("int8_t", -128, 127), "uint8": ("uint8_t", 0, 255)}
TYPES = {"int8": dnnl_lowp.S8, "uint8": dnnl_lowp.U8}



def _nchw(shape, last):
    return channels_first(shape) if last else tuple(shape)


def _conv_geometry(node):
    """(stride, dilation, pad) of an int8 conv node, its primitive's defaults filled in."""
    nsp = node.inputs[0].ndim - 2
    a = node.attrs
    return (tuple(a.get("stride", (1,) * nsp)), tuple(a.get("dilation", (1,) * nsp)),
            tuple(a.get("pad", (0,) * (2 * nsp))))


_BINARY = "binary"


def _sum_type(node):
    """The type code of what a conv_int8 node's output holds when oneDNN runs (its
    residual; an int8 residual of a float32 output is dequantized into it), _BINARY for
    a float32 residual of an int8 output (an argument of its own), or None."""
    if len(node.inputs) < 5:
        return None
    if node.attrs.get("out_scale") is None:
        return dnnl_lowp.F32
    if node.inputs[4].dtype == _np.float32:
        return _BINARY
    return TYPES[str(node.inputs[4].dtype)]


def _maker(node):
    x, wq = node.inputs[0], node.inputs[1]
    a = node.attrs
    in_type = TYPES[a.get("dtype", "int8")]
    if node.op == "dense_int8":
        rows = math.prod(x.shape[:-1])
        k, n = wq.shape[1], wq.shape[0]
        return lambda lib: dnnl_lowp.make_matmul(lib, (rows, k), (k, 1), (k, n), (1, k),
                                                 in_type, dnnl_lowp.F32, True,
                                                 bool(a.get("relu")))
    stride, dilation, pad = _conv_geometry(node)
    last = bool(a.get("channels_last"))
    xs, ys = _nchw(x.shape, last), _nchw(node.shape, last)
    out_type = dnnl_lowp.F32 if a.get("out_scale") is None else TYPES[a["out_dtype"]]
    sum_type = _sum_type(node)
    sum_scale = 1.0 if sum_type in (None, dnnl_lowp.F32, _BINARY) else float(
        _np.float32(a["residual_scale"]))
    sum_type = dnnl_lowp.F32 if sum_type == _BINARY else sum_type
    return lambda lib: dnnl_lowp.make_conv(lib, xs, wq.shape, ys, stride, dilation, pad,
                                           a.get("groups", 1), in_type, True,
                                           bool(a.get("relu")), True, out_type, sum_type,
                                           sum_scale)


def lowerable(node):
    if node.op not in ("dense_int8", "conv_int8") or not available():
        return False
    if dnnl_lowp.isa() not in dnnl_lowp.VNNI_ISAS:
        return False
    if node.op == "conv_int8" and not 1 <= node.inputs[0].ndim - 2 <= 3:
        return False
    a = node.attrs
    key = (node.op, node.inputs[0].shape, node.inputs[1].shape, node.shape,
           tuple(i.dtype.str for i in node.inputs),
           tuple(sorted((k, str(v)) for k, v in a.items() if k != "x_scale")))
    return dnnl_lowp.makes(key, _maker(node))


def _scale_line(a):
    return f"    float s = {float(_np.float32(a['x_scale']))!r}f;"


def _dynamic_scale(n, xs):
    """C setting s to max|x| / 127 of this call (1 for zeros)."""
    return ["    float m = 0.0f;",
            f"    for (int64_t i = 0; i < {n}; i++) {{ float v = fabsf({xs}[i]); "
            "if (v > m) m = v; }",
            "    float s = (m > 0.0f && isfinite(m)) ? (float)((double)m / 127.0) : 1.0f;"]


def _quantize(T, lo, hi, value):
    return [f"      float r = rintf({value} / s);",
            f"      (({T} *)q)[j] = ({T})(r < {lo} ? {lo} : (r > {hi} ? {hi} : r));"]


def _each(shape, last, body):
    """A C loop over an activation (NCHW dims `shape`) with i its index as the node
    stores it and j its index channels-last; body: lines using i and j."""
    if last:
        return ["    for (int64_t i = 0; i < %d; i++) {" % math.prod(shape),
                "      int64_t j = i;"] + body + ["    }"]
    n, c, s = shape[0], shape[1], math.prod(shape[2:])
    return [f"    for (int64_t b = 0; b < {n}; b++) for (int64_t c = 0; c < {c}; c++)",
            f"    for (int64_t p = 0; p < {s}; p++) {{",
            f"      int64_t i = (b * {c} + c) * {s} + p, j = (b * {s} + p) * {c} + c;"] + \
        body + ["    }"]


def _conv_lines(em, node, storage, sc):
    """The C of one conv_int8 node up to its oneDNN call; returns (lines, x, y, residual):
    the buffers oneDNN reads and writes (residual: a float32 one it reads, or None)."""
    x, a = node.inputs[0], node.attrs
    last = bool(a.get("channels_last"))
    T, lo, hi = RANGES[a.get("dtype", "int8")]
    xs = f"P[{storage(x)}]"
    lines = []
    if x.dtype != _np.float32:              # quantized by the layer before
        lines.append(_scale_line(a))
        q = storage(x)
        if not last:
            q = em.new_buffer(max(x.size, 64))
            lines += [f"    void *q = P[{q}];"] + _each(
                _nchw(x.shape, last), last, [f"      (({T} *)q)[j] = (({T} *){xs})[i];"])
    else:
        q = em.new_buffer(max(x.size, 64))
        lines += _dynamic_scale(x.size, f"((const float *){xs})") if a.get("x_scale") is None \
            else [_scale_line(a)]
        lines += [f"    void *q = P[{q}];"] + _each(
            _nchw(x.shape, last), last, _quantize(T, lo, hi, f"((const float *){xs})[i]"))
    lines += [f"    float *sc = (float *)P[{sc}];",
              f"    const float *ws = (const float *)P[{storage(node.inputs[2])}];",
              f"    for (int64_t c = 0; c < {node.inputs[1].shape[0]}; c++) sc[c] = s * ws[c];"]
    y = storage(node) if last else em.new_buffer(max(node.size * node.dtype.itemsize, 64))
    extra = None
    if len(node.inputs) == 5:
        r = node.inputs[4]
        rs = f"P[{storage(r)}]"
        RT = "float" if r.dtype == _np.float32 else RANGES[str(r.dtype)][0]
        value = f"(({RT} *){rs})[i]"
        if _sum_type(node) == _BINARY:      # float32, an argument of its own
            extra = storage(r)
            if not last:
                extra = em.new_buffer(max(4 * r.size, 64))
                lines += _each(r.shape, False, [f"      ((float *)P[{extra}])[j] = {value};"])
            return lines, q, y, extra
        if a.get("out_scale") is None and r.dtype != _np.float32:      # dequantized
            value = f"(float){value} * {float(_np.float32(a['residual_scale']))!r}f"
        YT = "float" if a.get("out_scale") is None else RANGES[a["out_dtype"]][0]
        lines += _each(_nchw(r.shape, last), last, [f"      (({YT} *)P[{y}])[j] = {value};"])
    return lines, q, y, extra


def emit(em, node, storage, weight_ok):
    """Quantize x (the layer's scale, or max|x| / 127 of this call) into a buffer of the
    op's own unless it comes quantized, make the per-channel scales (x's times the
    weight's), call oneDNN."""
    a = node.attrs
    sc = em.new_buffer(max(4 * node.inputs[1].shape[0], 64))
    op = op_slot(em, _maker(node), node)
    extra = None
    if node.op == "conv_int8":
        lines, q, y, extra = _conv_lines(em, node, storage, sc)
    else:
        x = node.inputs[0]
        T, lo, hi = RANGES[a.get("dtype", "int8")]
        q, y = em.new_buffer(max(x.size, 64)), storage(node)
        xs = f"((const float *)P[{storage(x)}])"
        lines = _dynamic_scale(x.size, xs) if a.get("x_scale") is None else [_scale_line(a)]
        lines += [f"    void *q = P[{q}];", f"    for (int64_t i = 0; i < {x.size}; i++) {{",
                  "      int64_t j = i;"] + _quantize(T, lo, hi, f"{xs}[i]") + ["    }"]
        lines += [f"    float *sc = (float *)P[{sc}];",
                  f"    const float *ws = (const float *)P[{storage(node.inputs[2])}];",
                  f"    for (int64_t c = 0; c < {node.inputs[1].shape[0]}; c++) "
                  "sc[c] = s * ws[c];"]
    args = [f"P[{q}]", f"P[{storage(node.inputs[1])}]", f"P[{storage(node.inputs[3])}]",
            f"P[{y}]"] + ([f"P[{extra}]"] if extra is not None else []) + [f"P[{sc}]"]
    if a.get("out_scale") is not None:
        lines.append(f"    float ds[1] = {{{float(_np.float32(a['out_scale']))!r}f}};")
        args.append("ds")
    # the int8 weight is a constant of the program: its packed copy is kept
    stamps = ["0", "1"] + ["0"] * (len(args) - 2)
    lines += [f"    void *a[{len(args)}] = {{{', '.join(args)}}};",
              f"    int64_t st[{len(args)}] = {{{', '.join(stamps)}}};",
              f"    if (kiln_dnnl_run(P[{op}], a, st) != 0) return {DNNL_FAILED};"]
    if node.op == "conv_int8" and not a.get("channels_last"):     # back to NCHW
        YT = "float" if a.get("out_scale") is None else RANGES[a["out_dtype"]][0]
        lines += _each(node.shape, False, [f"      (({YT} *)P[{storage(node)}])[i] = "
                                           f"(({YT} *)P[{y}])[j];"])
    return "\n".join(["  {"] + lines + ["  }"])


register(["dense_int8", "conv_int8"], Heavy(emit, accepts=lowerable))


@elementwise_rule("quantize_int8")
def _quantize_rule(x):
    T, lo, hi = RANGES[x.attrs.get("dtype", "int8")]
    s = float(_np.float32(x.attrs["scale"]))
    return f"(({T})fminf(fmaxf(rintf((float)({x.args[0]}) / {s!r}f), {lo}.0f), {hi}.0f))"
