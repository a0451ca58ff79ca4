"""Absent output gradients are zeros that are never multiplied.

Eager backward() visits only the tape entries its heads reach: an output that no loss
uses contributes nothing, so `0 * inf` never happens there. A compiled backward graph takes
one incoming gradient per output; feeding zeros for the unused ones would compute
`0 * inf = nan` through that output's chain (an argument divided by zero and left unused,
say). Given the gradient inputs that are absent, this pass replaces every node that
depends on them alone with zeros, before any arithmetic: a backward graph is linear in its
incoming gradients, so such a node is exactly zero in eager's sense. A node that also reads
other values reads constant zeros for the absent ones, which simplification folds away.
"""
from ..._core.ir import Node, rewrite


def prune_zero_cotangents(graph, cotangents, absent):
    """graph: a backward graph; cotangents: its incoming-gradient input nodes; absent: the
    subset that is zero. Returns a graph with the same inputs and outputs."""
    grads = {id(n) for n in cotangents}
    zero = {id(n) for n in absent}
    depends = set(grads)
    for n in graph.nodes:
        if n.is_source:
            continue
        touched = [i for i in n.inputs if id(i) in depends]
        if touched:
            depends.add(id(n))
            if all(id(i) in zero for i in touched):
                zero.add(id(n))

    absent_ids = {id(n) for n in absent}

    def zeros(node):
        return Node("full", (), {"shape": node.shape, "value": 0, "dtype": node.dtype},
                    node.shape, node.dtype)

    def replace(node, inputs):
        if id(node) in zero and not node.is_source:
            return zeros(node)
        if any(id(i) in absent_ids for i in inputs):
            # a node that also reads other values reads zeros for the absent gradient, so
            # simplification drops `0 + x` (a scan step's gradient of an unused output)
            inputs = tuple(zeros(i) if id(i) in absent_ids else i for i in inputs)
            return Node(node.op, inputs, node.attrs, node.shape, node.dtype, name=node.name,
                        value=node.value)
        return None

    pruned = rewrite(graph, replace)
    # an output that is an absent input itself
    outputs = [zeros(o) if id(o) in absent_ids else o for o in pruned.outputs]
    from ..._core.ir import Graph
    return Graph(graph.inputs, graph.params, outputs, graph.name)
