"""Recognizing `X - c * (A @ B)` (an SGD update) so the gemm accumulates straight into X.

A compiled training step updates each weight as W - lr * (rescale * dW), with dW a matmul.
Computed as written, the gemm writes dW to a buffer and a second loop reads dW and W and
writes W: three passes over the weight. BLAS computes alpha * A B + beta * C in one, so
when the result is stored where X is (the update written into the parameter in place, see
param_writes.py, or a buffer the memory plan shares), the step becomes one gemm call with
alpha = -(lr * rescale) and beta = 1.
"""
from ..._core.symdim import same_shape
from .sizes import is_runtime
from .slice_views import viewed


def accumulate_form(step, storage, ptr):
    """The C expression for alpha when `step` (a matmul heading an elementwise chain)
    computes X + alpha * matmul with X stored where the step's result goes, else None."""
    mm, chain = step.nodes[0], step.nodes[1:]
    if mm.ndim != 2 or not chain or any(n.dtype != mm.dtype for n in chain):
        return None       # a promoting chain (float32 matmul into float64) keeps its loop
    current, scalars = mm, []
    for n in chain[:-1]:
        other = _other_input(n, current)
        if n.op != "multiply" or other is None or not _is_one(other) or other.dtype != n.dtype:
            return None
        scalars.append(other)
        current = n
    last = chain[-1]
    other = _other_input(last, current)
    if other is None:
        return None
    if last.op == "subtract" and last.inputs[1] is current:
        negate = True
    elif last.op == "add":
        negate = False
    else:
        return None
    x = other
    if not same_shape(x.shape, last.shape) or x.dtype != last.dtype or storage(x) != storage(last):
        return None
    if any(storage(i) == storage(x) for i in _gemm_operands(mm)):
        return None       # BLAS may not read the matrix it accumulates into
    factors = [f"{ptr(s)}[0]" for s in scalars] or ["1"]
    product = " * ".join(factors)
    return f"(-({product}))" if negate else f"({product})"


def _other_input(node, current):
    """node's input that is not `current`, when node is binary and uses current once."""
    if len(node.inputs) != 2:
        return None
    a, b = node.inputs
    if (a is current) == (b is current):
        return None
    return b if a is current else a


def _gemm_operands(mm):
    """The nodes whose storage the gemm may read: its operands and what they may be views
    of (a transpose read in place reads its input, a slice may be a window into it)."""
    return [v for i in mm.inputs for v in [i] + viewed(i)]


def _is_one(node):
    """Has node one element? A run-time size is not taken for one."""
    return not is_runtime(node.size) and node.size == 1
