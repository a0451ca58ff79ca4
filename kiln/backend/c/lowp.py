"""The low-precision primitives in generated C. matmul_bf16: a call into the oneDNN
shim's bfloat16 matmul (backend/dnnl/lowp.c), float32 in and out. The op's reorders round
the activation to bfloat16 on every call and the weight once: a parameter the program
does not write gets kiln's weight stamp (heavy.py), so its bfloat16 copy in oneDNN's
packed layout is kept between calls. Dense's weight is read where it lies (transpose_b:
other strides).

Registered as the op's C lowering (lowering.Heavy) for the nodes oneDNN takes with a real
kernel; the others (no oneDNN, shapes it does not take, a CPU without bfloat16 kernels)
are expanded into casts through bfloat16 and a float32 matmul (graph/passes/
expand_heavy.py), the same values.
"""
import math

import numpy as _np

from .heavy import DNNL_FAILED
from .loops import contiguous_strides
from .lowering import Heavy, elementwise_rule, register
from ..dnnl import lowp as dnnl_lowp
from ..dnnl.library import available

_taken = {}         # geometry -> does oneDNN make it with a real kernel


def geometry(node):
    """(a dims, a strides, b dims, b strides) as the shim takes node's operands (2 or 3
    dims: batch dims collapsed into one), or None."""
    a, b = node.inputs
    k = a.shape[-1]
    stored = b.shape                    # b as it lies (transposed when transpose_b)
    if b.ndim == 2 and a.ndim >= 2:
        ad = (math.prod(a.shape[:-1]), k)
    elif a.ndim == 3 and b.ndim == 3 and (a.shape[0] == b.shape[0] or 1 in (a.shape[0],
                                                                           b.shape[0])):
        ad = a.shape
    elif a.ndim == b.ndim > 3 and a.shape[:-2] == b.shape[:-2]:
        batch = math.prod(a.shape[:-2])
        ad, stored = (batch,) + a.shape[-2:], (batch,) + b.shape[-2:]
    else:
        return None
    strides = contiguous_strides(stored)
    if node.attrs.get("transpose_b"):
        bd = stored[:-2] + (stored[-1], stored[-2])
        bs = tuple(strides[:-2]) + (strides[-1], strides[-2])
    else:
        bd, bs = stored, tuple(strides)
    if 0 in ad or 0 in bd:
        return None
    return tuple(ad), tuple(contiguous_strides(ad)), tuple(bd), bs


def _maker(geo):
    return lambda lib: dnnl_lowp.make_matmul(lib, *geo, dnnl_lowp.BF16, dnnl_lowp.F32,
                                             False, False)


def lowerable(node):
    geo = geometry(node) if node.op == "matmul_bf16" else None
    if geo is None or not available():
        return False
    ok = _taken.get(geo)
    if ok is None:
        lib = dnnl_lowp._lib()
        op = _maker(geo)(lib)
        ok = _taken[geo] = bool(op)
        if op:
            lib.kd_free(op)
        else:
            dnnl_lowp._note_refusal(("bfloat16 matmul",) + geo, lib.kd_error().decode())
    return ok


def emit(em, node, storage, weight_ok):
    a, b = node.inputs
    op = em.add_slot(("dnnl_op", _maker(geometry(node))))
    stamp = "kiln_weight_stamp()" if weight_ok(b) else "0"
    return "\n".join([
        "  {", f"    void *a[3] = {{P[{storage(a)}], P[{storage(b)}], P[{storage(node)}]}};",
        f"    int64_t s[3] = {{0, {stamp}, 0}};",
        f"    if (kiln_dnnl_run(P[{op}], a, s) != 0) return {DNNL_FAILED};", "  }"])


register(["matmul_bf16"], Heavy(emit, accepts=lowerable))


# ---- int8 layers: the activation quantized by a loop here, the product on oneDNN --------

_RANGES = {"int8": ("int8_t", -128, 127), "uint8": ("uint8_t", 0, 255)}


def _int8_maker(node):
    x, wq = node.inputs[0], node.inputs[1]
    a = node.attrs
    in_type = dnnl_lowp.S8 if a.get("dtype", "int8") == "int8" else dnnl_lowp.U8
    if node.op == "dense_int8":
        rows = math.prod(x.shape[:-1])
        k, n = wq.shape[1], wq.shape[0]
        return lambda lib: dnnl_lowp.make_matmul(lib, (rows, k), (k, 1), (k, n), (1, k),
                                                 in_type, dnnl_lowp.F32, True,
                                                 bool(a.get("relu")))
    stride, dilation, pad = _conv_geometry(node)
    return lambda lib: dnnl_lowp.make_conv(lib, x.shape, wq.shape, node.shape, stride,
                                           dilation, pad, a.get("groups", 1), in_type, True,
                                           bool(a.get("relu")))


def _conv_geometry(node):
    """(stride, dilation, pad) of an int8 conv node, its primitive's defaults filled in."""
    nsp = node.inputs[0].ndim - 2
    a = node.attrs
    return (tuple(a.get("stride", (1,) * nsp)), tuple(a.get("dilation", (1,) * nsp)),
            tuple(a.get("pad", (0,) * (2 * nsp))))


def int8_lowerable(node):
    if node.op not in ("dense_int8", "conv_int8") or not available():
        return False
    if dnnl_lowp.isa() not in dnnl_lowp.VNNI_ISAS:
        return False
    if node.op == "conv_int8" and not 1 <= node.inputs[0].ndim - 2 <= 3:
        return False
    a = node.attrs
    key = (node.op, node.inputs[0].shape, node.inputs[1].shape, node.shape,
           tuple(sorted((k, str(v)) for k, v in a.items() if k != "x_scale")))
    ok = _taken.get(key)
    if ok is None:
        lib = dnnl_lowp._lib()
        op = _int8_maker(node)(lib)
        ok = _taken[key] = bool(op)
        if op:
            lib.kd_free(op)
    return ok


def int8_emit(em, node, storage, weight_ok):
    """Quantize x (the layer's scale, or max|x| / 127 of this call) into a buffer of the
    op's own, make the per-channel scales (x's times the weight's), call oneDNN."""
    x, wq, wscale, bias = node.inputs
    a = node.attrs
    T, lo, hi = _RANGES[a.get("dtype", "int8")]
    n, channels = x.size, wq.shape[0]
    q, sc = em.new_buffer(max(n, 64)), em.new_buffer(max(4 * channels, 64))
    op = em.add_slot(("dnnl_op", _int8_maker(node)))
    xs = f"((const float *)P[{storage(x)}])"
    lines = ["  {"]
    if a.get("x_scale") is None:
        lines += ["    float m = 0.0f;",
                  f"    for (int64_t i = 0; i < {n}; i++) {{ float v = fabsf({xs}[i]); "
                  "if (v > m) m = v; }",
                  "    float s = (m > 0.0f && isfinite(m)) ? (float)((double)m / 127.0) : 1.0f;"]
    else:
        lines.append(f"    float s = {float(_np.float32(a['x_scale']))!r}f;")
    lines += [f"    {T} *q = ({T} *)P[{q}];",
              f"    for (int64_t i = 0; i < {n}; i++) {{",
              f"      float r = rintf({xs}[i] / s);",
              f"      q[i] = ({T})(r < {lo} ? {lo} : (r > {hi} ? {hi} : r));",
              "    }",
              f"    float *sc = (float *)P[{sc}];",
              f"    const float *ws = (const float *)P[{storage(wscale)}];",
              f"    for (int64_t c = 0; c < {channels}; c++) sc[c] = s * ws[c];",
              f"    void *a[5] = {{P[{q}], P[{storage(wq)}], P[{storage(bias)}], "
              f"P[{storage(node)}], P[{sc}]}};",
              # the int8 weight is a constant of the program: its packed copy is kept
              "    int64_t st[5] = {0, 1, 0, 0, 0};",
              f"    if (kiln_dnnl_run(P[{op}], a, st) != 0) return {DNNL_FAILED};", "  }"]
    return "\n".join(lines)


register(["dense_int8", "conv_int8"], Heavy(int8_emit, accepts=int8_lowerable))


@elementwise_rule("quantize_int8")
def _quantize(x):
    T, lo, hi = _RANGES[x.attrs.get("dtype", "int8")]
    s = float(_np.float32(x.attrs["scale"]))
    return f"(({T})fminf(fmaxf(rintf((float)({x.args[0]}) / {s!r}f), {lo}.0f), {hi}.0f))"


def _conv_maker(node):
    x, w = node.inputs
    a = node.attrs
    return lambda lib: dnnl_lowp.make_conv(lib, x.shape, w.shape, node.shape, a["stride"],
                                           a["dilation"], a["pad"], a.get("groups", 1),
                                           dnnl_lowp.BF16, False, False)


def conv_lowerable(node):
    if node.op != "conv_bf16" or not available() or not 1 <= len(node.attrs["stride"]) <= 3:
        return False
    a = node.attrs
    key = ("conv", node.inputs[0].shape, node.inputs[1].shape, node.shape, a["stride"],
           a["dilation"], a["pad"], a.get("groups", 1))
    ok = _taken.get(key)
    if ok is None:
        lib = dnnl_lowp._lib()
        op = _conv_maker(node)(lib)
        ok = _taken[key] = bool(op)
        if op:
            lib.kd_free(op)
        else:
            dnnl_lowp._note_refusal(("bfloat16 conv",) + key[1:], lib.kd_error().decode())
    return ok


def conv_emit(em, node, storage, weight_ok):
    x, w = node.inputs
    op = em.add_slot(("dnnl_op", _conv_maker(node)))
    stamp = "kiln_weight_stamp()" if weight_ok(w) else "0"
    return "\n".join([
        "  {", f"    void *a[3] = {{P[{storage(x)}], P[{storage(w)}], P[{storage(node)}]}};",
        f"    int64_t s[3] = {{0, {stamp}, 0}};",
        f"    if (kiln_dnnl_run(P[{op}], a, s) != 0) return {DNNL_FAILED};", "  }"])


register(["conv_bf16"], Heavy(conv_emit, accepts=conv_lowerable))
