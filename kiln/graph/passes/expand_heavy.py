"""Expanding heavy ops (conv, pool, their gradients, matmul_bf16) into their
decompositions.

A backend that has no kernel for a heavy op runs its decomposition instead: the same
`windows` + matmul composition the op's eager fallback runs (kiln/ops/conv.py, pool.py).
The expansion is traced like user code, so the new nodes carry the ops' own shape rules.
"""
from ..._core.ir import Graph, Node, rewrite
from ..._core import trace

HEAVY_OPS = {}


def _decompositions():
    if not HEAVY_OPS:
        from ...ops import conv, conv_bias, lowp, pool
        HEAVY_OPS.update(conv.DECOMPOSITIONS)
        HEAVY_OPS.update(lowp.DECOMPOSITIONS)
        HEAVY_OPS.update(conv_bias.DECOMPOSITIONS)
        HEAVY_OPS.update(pool.DECOMPOSITIONS)
    return HEAVY_OPS


def heavy_nodes(graph):
    ops = _decompositions()
    return [n for n in graph.nodes if n.op in ops]


def expand_heavy_ops(graph, keep=lambda node: False):
    """`graph` with every heavy op, but the nodes `keep` accepts, replaced by its
    decomposition; a decomposition may hold heavy ops itself (conv_bf16's holds a conv):
    those are expanded in turn."""
    while True:
        expanded = _expand_once(graph, keep)
        if expanded is graph:
            return graph
        graph = expanded


def _expand_once(graph, keep):
    ops = _decompositions()
    if not any(n.op in ops and not keep(n) for n in graph.nodes):
        return graph
    from ..._core import autograd
    from ..._core.ndarray import ndarray
    ctx = trace.TraceContext(graph.name + "_expanded")

    def replace(node, inputs):
        decomposition = ops.get(node.op)
        if decomposition is None or keep(node):
            return None
        trace.push(ctx)
        try:
            with autograd.pause():
                out = decomposition(*[ndarray._from_node(i) for i in inputs], **node.attrs)
        finally:
            trace.pop()
        if out._node is None:        # every input was constant: keep the folded value
            return Node("const", (), {}, node.shape, node.dtype, value=out._data)
        return out._node

    expanded = rewrite(graph, replace)
    return Graph(expanded.inputs, expanded.params, expanded.outputs, graph.name)
