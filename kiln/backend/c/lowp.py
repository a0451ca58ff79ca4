"""The bfloat16 primitives in generated C (the int8 ones are in int8.py). matmul_bf16: a
call into the oneDNN shim's bfloat16 matmul (backend/dnnl/lowp.c), float32 in and out.
The op's reorders round the activation to bfloat16 on every call and the weight once: a
parameter the program does not write gets kiln's weight stamp (heavy.py), so its bfloat16
copy in oneDNN's packed layout is kept between calls. Dense's weight is read where it lies
(transpose_b: other strides), as is a weight gradient's activation (transpose_a); its
bias, when the AMP pass gave the node one, is the primitive's bias argument, and its
epilogue (scale, GELU, a residual added) the primitive's post-ops.

Registered as the op's C lowering (lowering.Heavy) for the nodes oneDNN takes with a real
kernel; the others (no oneDNN, shapes it does not take, a CPU without bfloat16 kernels)
are expanded into casts through bfloat16 and a float32 matmul (graph/passes/
expand_heavy.py), the same values.
"""
import math

from .heavy import DNNL_FAILED, op_slot
from .loops import contiguous_strides
from .lowering import Heavy, register
from ..dnnl import lowp as dnnl_lowp
from ..dnnl.library import available



def geometry(node):
    """(a dims, a strides, b dims, b strides, with a bias) as the shim takes node's
    operands (2 or 3 dims: batch dims collapsed into one; a transposed a or b read in place
    through its strides), or None."""
    a, b = node.inputs[:2]
    if node.attrs.get("transpose_a"):   # a read transposed where it lies: a matrix, or a
        k, m = a.shape[-2:]             # stack with b's batch dims
        if a.ndim == b.ndim == 2:
            geo = _dims_and_strides(node, (m, k), b.shape)
            return None if geo is None else (geo[0], (1, m)) + geo[2:]
        if a.ndim != b.ndim or a.ndim < 3 or a.shape[:-2] != b.shape[:-2]:
            return None
        batch = math.prod(a.shape[:-2])
        geo = _dims_and_strides(node, (batch, m, k), (batch,) + b.shape[-2:])
        return None if geo is None else (geo[0], (m * k, 1, m)) + geo[2:]
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
    return _dims_and_strides(node, ad, stored)


def _dims_and_strides(node, ad, stored):
    strides = contiguous_strides(stored)
    if node.attrs.get("transpose_b"):
        bd = stored[:-2] + (stored[-1], stored[-2])
        bs = tuple(strides[:-2]) + (strides[-1], strides[-2])
    else:
        bd, bs = stored, tuple(strides)
    if 0 in ad or 0 in bd:
        return None
    attrs = node.attrs
    bias = len(node.inputs) - bool(attrs.get("residual")) == 3
    act = dnnl_lowp.ACT_GELU if attrs.get("gelu") else dnnl_lowp.ACT_NONE
    return (tuple(ad), tuple(contiguous_strides(ad)), tuple(bd), bs, bias, act,
            float(attrs.get("scale", 1.0)), bool(attrs.get("residual")))


def _maker(geo):
    return lambda lib: dnnl_lowp.make_matmul(lib, *geo[:4], dnnl_lowp.BF16, dnnl_lowp.F32,
                                             *geo[4:])


def lowerable(node):
    geo = geometry(node) if node.op == "matmul_bf16" else None
    if geo is None or not available():
        return False
    return dnnl_lowp.makes(("matmul_bf16",) + geo, _maker(geo), "bfloat16 matmul")


def emit(em, node, storage, weight_ok):
    # the shim's order: a, b, [bias], y, [residual]
    ins = [f"P[{storage(i)}]" for i in node.inputs]
    late = 1 if node.attrs.get("residual") else 0
    args = ins[:len(ins) - late] + [f"P[{storage(node)}]"] + ins[len(ins) - late:]
    op = op_slot(em, _maker(geometry(node)), node)
    stamps = ["0", "kiln_weight_stamp()" if weight_ok(node.inputs[1]) else "0"] + \
        ["0"] * (len(args) - 2)
    return "\n".join([
        "  {", f"    void *a[{len(args)}] = {{{', '.join(args)}}};",
        f"    int64_t s[{len(args)}] = {{{', '.join(stamps)}}};",
        f"    if (kiln_dnnl_run(P[{op}], a, s) != 0) return {DNNL_FAILED};", "  }"])


register(["matmul_bf16"], Heavy(emit, accepts=lowerable))
