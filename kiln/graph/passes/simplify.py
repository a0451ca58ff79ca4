"""Algebraic simplification: identities that remove work without changing a value.

x*1, 1*x, x+0, 0+x, x-0, x/1, x**1, -(-x), transpose of transpose, reshape of reshape,
reshape/broadcast/cast/transpose that change nothing, and (A B)^T = B^T A^T for 2-D
matrices, which turns a weight gradient's transposed product into one matmul whose
operand transposes backends read for free.
"""
import numpy as _np

from ..._core.ir import Node, rewrite
from ..._core.symdim import provably


def _is_const(node, value):
    return node.op == "const" and node.size > 0 and bool(_np.all(node.value == value))


def _same_shape(a, b):
    """Shapes equal at every size (a symbolic size compared without a guard: where that
    is not proved, the op stays, which is right at every size too)."""
    return len(a) == len(b) and all(provably(x, "==", y) for x, y in zip(a, b))


def _same(node, x):
    """x can stand in for node: the identity did not broadcast or change the dtype."""
    return _same_shape(x.shape, node.shape) and x.dtype == node.dtype


def _transposed(m):
    """m^T for a 2-D node, cancelling a transpose instead of stacking a second one."""
    if m.op == "transpose" and m.attrs["axes"] == (1, 0):
        return m.inputs[0]
    return Node("transpose", (m,), {"axes": (1, 0)}, (m.shape[1], m.shape[0]), m.dtype)


def simplify(graph):
    users = {}
    for n in graph.nodes:
        for i in n.inputs:
            users[id(i)] = users.get(id(i), 0) + 1
    for o in graph.outputs:
        users[id(o)] = users.get(id(o), 0) + 1

    def replace(node, inputs):
        op = node.op
        if op in ("multiply", "add", "subtract", "divide", "power"):
            a, b = inputs
            neutral = 1 if op in ("multiply", "divide", "power") else 0
            if _is_const(b, neutral) and _same(node, a):
                return a
            if op in ("multiply", "add") and _is_const(a, neutral) and _same(node, b):
                return b
        elif op == "negative" and inputs[0].op == "negative":
            return inputs[0].inputs[0]
        elif op == "transpose":
            (x,) = inputs
            axes = node.attrs["axes"]
            if (axes == (1, 0) and x.op == "matmul" and x.ndim == 2
                    and users.get(id(node.inputs[0]), 0) == 1):
                a, b = x.inputs
                return Node("matmul", (_transposed(b), _transposed(a)), {}, node.shape,
                            node.dtype)
            if x.op == "transpose":
                inner = x.attrs["axes"]
                axes = tuple(inner[a] for a in axes)
                x = x.inputs[0]
            if axes == tuple(range(len(axes))):
                return x
            if x is not inputs[0]:
                return Node("transpose", (x,), {"axes": axes}, node.shape, node.dtype)
        elif op == "reshape":
            (x,) = inputs
            while x.op == "reshape":
                x = x.inputs[0]
            if _same_shape(x.shape, node.shape):
                return x
            if x is not inputs[0]:
                return Node("reshape", (x,), node.attrs, node.shape, node.dtype)
        elif op in ("broadcast_to", "cast"):
            if _same(node, inputs[0]):
                return inputs[0]
        return None
    return rewrite(graph, replace)
