"""C for the attention primitive (kiln/ops/attention.py): csrc/attention.h's blocked kernel,
one task per matrix on the runtime's pool; registered as the
primitive's C lowering (lowering.Kernel).

The operands are read where they lie, contiguous (..., T, d); a mask that is one true
value (the unmasked form) is no mask at all. The kernel is put into a program once, with
the first attention node.
"""
import math

import numpy as _np

from . import fixed_source
from .kernels import c_literal
from .loops import broadcast_strides, ctype
from .lowering import NotLowerable, register, Kernel
from .sizes import maybe_nonempty

ATTENTION_FAILED = -71        # kiln_run's return code when a task cannot allocate


def _always_true(mask):
    return mask.op == "const" and mask.size == 1 and bool(_np.asarray(mask.value).reshape(-1)[0])


def emit(node, ptr, em):
    q, k, v, mask = node.inputs
    T = ctype(node.dtype)
    if T not in ("float", "double"):
        raise NotLowerable(f"attention in {node.dtype}")
    kernel = fixed_source.text("attention.h")
    if kernel not in em.functions:         # once per program, however many attentions
        em.functions.append(kernel)
    lead = tuple(q.shape[:-2])
    if len(lead) > 8:
        raise NotLowerable("attention over more than 8 leading dims")
    Tq, Tk, d, dv = q.shape[-2], k.shape[-2], q.shape[-1], v.shape[-1]
    # a product of run-time sizes stays an expression the C computes per call (no keys or
    # queries at run time: the kernel's tasks write zeros or nothing)
    matrices = math.prod(lead)
    if not maybe_nonempty(node.size):
        return ""
    a = node.attrs
    if _always_true(mask) or not maybe_nonempty(Tk):
        mask_ptr, strides = "0", [0] * (len(lead) + 2)
    else:
        mask_ptr = f"((const uint8_t *){ptr(mask)})"
        strides = broadcast_strides(mask.shape, lead + (Tq, Tk))
    lead_c = ", ".join(str(x) for x in lead) or "0"
    mask_lead_c = ", ".join(str(x) for x in strides[:-2]) or "0"
    fields = [f"{ptr(q)}", f"{ptr(k)}", f"{ptr(v)}", mask_ptr, f"{ptr(node)}",
              str(Tq), str(Tk), str(d), str(dv),
              c_literal(a["scale"], node.dtype), c_literal(a["fill"], node.dtype),
              c_literal(a["floor"], node.dtype), str(int(a["divide"])),
              str(int(a["zero_masked"])), str(strides[-2]), str(strides[-1]), str(len(lead)),
              f"{{{lead_c}}}", f"{{{mask_lead_c}}}", "&failed"]
    tasks = matrices
    return "\n".join([
        "  {",
        "    int failed = 0;",
        f"    kiln_attention_{T} args = {{{', '.join(fields)}}};",
        f"    if (kiln_parallel_ptr) kiln_parallel_ptr(kiln_attention_task_{T}, &args, {tasks});",
        f"    else for (int64_t t = 0; t < {tasks}; t++) kiln_attention_task_{T}(&args, t);",
        f"    if (failed) return {ATTENTION_FAILED};",
        "  }"])


register(("attention",), Kernel(emit, with_emitter=True))
