"""C text for loops over strided operands, and the start of every program.

Every data-movement or elementwise kernel is "for each position of an index space, read
some operands at (base + sum(i_d * stride_d)) and write one". Strides are element counts:
0 broadcasts, a permutation transposes, a multiple slices. Adjacent dimensions that every
operand walks contiguously are merged, so most loops end up one or two deep and the
innermost one has stride 1 or 0, which the compiler vectorizes.
"""
import numpy as _np

from ..._core.bfloat16 import is_bfloat16
from ..._core.symdim import SymInt, provably

from . import fixed_source

C_TYPES = {
    _np.dtype(_np.float32): "float", _np.dtype(_np.float64): "double",
    _np.dtype(_np.int32): "int32_t", _np.dtype(_np.int64): "int64_t",
    _np.dtype(_np.int8): "int8_t", _np.dtype(_np.uint8): "uint8_t",
    _np.dtype(_np.bool_): "uint8_t",
}


def ctype(dtype):
    dt = _np.dtype(dtype)
    if is_bfloat16(dt):
        return "uint16_t"   # the bits; only casts compute on it (steps._check_dtypes)
    return C_TYPES[dt]


def contiguous_strides(shape):
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d
    return list(reversed(strides))


def broadcast_strides(in_shape, out_shape):
    """Element strides that read an input of in_shape at every position of out_shape."""
    pad = len(out_shape) - len(in_shape)
    base = contiguous_strides(in_shape)
    out = []
    for d in range(len(out_shape)):
        k = d - pad
        # a run-time size is the output's own (had it to be 1, a guard pinned it)
        if k < 0 or not isinstance(in_shape[k], SymInt) and in_shape[k] == 1:
            out.append(0)
        else:
            out.append(base[k])
    return out


class Operand:
    """A pointer expression, a base element offset, and one stride per loop dimension."""
    __slots__ = ("ptr", "base", "strides")

    def __init__(self, ptr, base, strides):
        # base: an element offset, or a C expression (the offset of an enclosing loop)
        # a stride is an int, or a SymInt when it spans a run-time size (sizes.py)
        self.ptr, self.base, self.strides = ptr, base, [
            s if isinstance(s, SymInt) else int(s) for s in strides]


def merge_dims(shape, operands):
    """Drop size-1 dims and merge neighbours that every operand walks contiguously."""
    # a run-time size stays a loop of its own even when it is 1 in some call
    dims = [d for d in range(len(shape)) if isinstance(shape[d], SymInt) or shape[d] != 1]
    new_shape = []
    new_strides = [[] for _ in operands]
    for d in dims:
        # (merged only where that holds at every run-time size, so no guard is needed)
        if new_shape and all(provably(st[-1], "==", op.strides[d] * shape[d])
                             for st, op in zip(new_strides, operands)):
            new_shape[-1] *= shape[d]
            for st, op in zip(new_strides, operands):
                st[-1] = op.strides[d]
            continue
        new_shape.append(shape[d])
        for st, op in zip(new_strides, operands):
            st.append(op.strides[d])
    return new_shape, [Operand(op.ptr, op.base, st) for op, st in zip(operands, new_strides)]


def loop_nest(shape, operands, body, indent="  ", var="i", block=None, independent=False):
    """C for a loop nest over `shape`; body(offset_exprs) returns the innermost statements.

    `var` names the index variables (nests inside nests need distinct names). Vectorizing
    is left to the compiler (-O3; build.FLAGS keeps IEEE semantics, no reassociation).
    block: (C expression of a block number b, number of blocks B): the nest covers only
    block b of B equal parts of its outermost (merged) dimension, for a parallel job.
    independent: the caller knows no element's stores reach another element's loads, so
    the innermost loop says so (`omp simd`): with several stores the compiler would need
    more run-time overlap checks than it makes, and leave the loop scalar.
    """
    if any(not isinstance(d, SymInt) and d == 0 for d in shape):
        return ""       # (a loop of run-time size 0 runs no iteration)
    shape, operands = merge_dims(list(shape), operands)
    lines = []
    depth = len(shape)
    for d, n in enumerate(shape):
        pad = indent * (d + 1)
        if independent and d == depth - 1:
            lines.append(f"{pad}#pragma omp simd")
        if d == 0 and block is not None:
            b, blocks = block
            lines.append(f"{pad}for (int64_t {var}0 = ({b}) * {n} / {blocks}; "
                         f"{var}0 < (({b}) + 1) * {n} / {blocks}; {var}0++) {{")
            continue
        lines.append(f"{pad}for (int64_t {var}{d} = 0; {var}{d} < {n}; {var}{d}++) {{")
    offsets = []
    for op in operands:
        terms = [str(op.base)] if op.base not in (0, "0", "") else []
        for d, s in enumerate(op.strides):
            if isinstance(s, SymInt):
                terms.append(f"{var}{d} * {s}")
            elif s == 1:
                terms.append(f"{var}{d}")
            elif s:
                terms.append(f"{var}{d} * {s}")
        offsets.append(" + ".join(terms) or "0")
    pad = indent * (depth + 1)
    lines += [pad + stmt for stmt in body(offsets)]
    for d in reversed(range(depth)):
        lines.append(indent * (d + 1) + "}")
    return "\n".join(lines)


def pool_job(em, kind, what, blocks, block_code):
    """C running block_code(b) for b < blocks as one job of the runtime's pool (serially
    without one): a static function `kiln_<kind>_blocks<n>` of em reading the table P.
    what: the comment naming the work."""
    name = f"kiln_{kind}_blocks{len(em.functions)}"
    em.functions.append("\n".join([f"/* block b of {blocks} of {what} */",
                                   f"static void {name}(void *ctx, int64_t b) {{",
                                   "  void **P = ctx;", *block_code("b"), "}"]))
    return "\n".join([f"  if (kiln_parallel_ptr) kiln_parallel_ptr({name}, (void *)P, {blocks});",
                      f"  else for (int64_t b = 0; b < {blocks}; b++) {name}((void *)P, b);"])


def prelude():
    """The start of every generated program, csrc/program_prelude.h: the C headers, the ABI
    version, and the scalar functions the elementwise expressions call (elementwise.py,
    special_ops.py)."""
    return fixed_source.text("program_prelude.h")
