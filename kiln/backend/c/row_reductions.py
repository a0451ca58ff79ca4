"""Sums and max/min over a contiguous row of floats (the reduced axes innermost: a softmax's
or a layer norm's statistics written out, as a training step's forward keeps them) as
vector loops, for kernels.reduction. A scalar loop over the row is one loop-carried chain
that waits a whole add or compare per element.
"""
import math

from .loops import ctype


def contiguous_row(node, x, axes):
    """The length of the contiguous run of floats a sum or max/min reads per result (the
    reduced axes are the innermost ones), when it is known at compile time; else None."""
    if node.op not in ("sum", "max", "min") or node.dtype.kind != "f" or \
            x.dtype.kind != "f" or axes != tuple(range(x.ndim - len(axes), x.ndim)):
        return None
    sizes = [x.shape[d] for d in axes]
    if not all(isinstance(n, int) for n in sizes):
        return None
    return math.prod(sizes)


def emit(node, ptr, o, n, acc_t, init):
    """One result of a sum or max/min over a contiguous row of n floats, as a vector loop
    (a loop-carried scalar chain otherwise waits a full add or compare per element). The
    sum's order changes (lanes of double partial sums, as exact as the scalar double chain
    within float rounding). max/min give exactly the scalar loop's result: the first NaN
    when there is one, and among equal zeros the first, both found by the scalar loop on
    the rows where they matter (a NaN, or an extreme of zero)."""
    x, out, T = ptr(node.inputs[0]), ptr(node), ctype(node.dtype)
    at = f"{x}[{o[1]} + j]"
    if node.op == "sum":
        return [f"{acc_t} acc = {init};", "#pragma omp simd reduction(+:acc)",
                f"for (int64_t j = 0; j < {n}; j++) acc += ({acc_t}){at};",
                f"{out}[{o[0]}] = ({T})acc;"]
    cmp, red = (">", "max") if node.op == "max" else ("<", "min")
    return [f"{T} acc = {x}[{o[1]}];", "int nan = 0;",
            f"#pragma omp simd reduction({red}:acc) reduction(|:nan)",
            f"for (int64_t j = 0; j < {n}; j++) {{ {T} v = {at}; "
            f"acc = v {cmp} acc ? v : acc; nan |= v != v; }}",
            "if (nan || acc == 0) {",
            f"  acc = {x}[{o[1]}];",
            f"  for (int64_t j = 0; j < {n}; j++) {{ {T} v = {at}; "
            "if (v " + cmp + " acc || (v != v && acc == acc)) acc = v; }",
            "}", f"{out}[{o[0]}] = acc;"]
