"""Elementwise fusion grouping: chains of elementwise ops, plus epilogues after matmul.

The pass does not change the graph's values; it records `graph.fusion_groups`, lists of
nodes that a backend may run as one kernel (one loop, one pass over memory). A node joins
its producer's group when the producer is elementwise (or a matmul heading the group), the
producer's only consumer is this node, and the shapes agree (no broadcast inside a loop).
A matmul's epilogue keeps the matmul's dtype: the matmul writes into the group's output
buffer and the epilogue then updates it element by element in place, which is only sound
when both read and write elements of one size (a cast to float64 or a comparison after a
float32 matmul starts a group of its own).

A slice read only by an elementwise node of its shape joins that node's group too (not
a matmul's): the loop reads the sliced input where the slice's items lie, so an LSTM
step's four gate slices cost no copies. Its steps are positive, so the loop's output
never overlaps what it still has to read through the slice.
"""
from ..._core.symdim import same_at_every_size
from ...ops.registry import REGISTRY


def _elementwise(node):
    return not node.is_source and REGISTRY[node.op].elementwise


def _read_in_a_loop(node, users):
    """A slice with positive steps whose one reader is elementwise and of its shape."""
    if node.op != "slice" or any(step <= 0 for step in node.attrs["step"]):
        return False
    readers = users[id(node)]
    return (len(readers) == 1 and _elementwise(readers[0])
            and same_at_every_size(readers[0].shape, node.shape))


def _mergeable(a, b):
    """One loop for groups a and b: not a slice read in a matmul's epilogue."""
    def has(group, op):
        return any(n.op == op for n in group)
    return not (has(a, "matmul") and has(b, "slice") or has(a, "slice") and has(b, "matmul"))


def group_elementwise(graph):
    users = graph.consumers()
    outputs = {id(o) for o in graph.outputs}
    group_of = {}
    groups = []
    for node in graph.nodes:
        if node.is_source:
            continue
        if not _elementwise(node):
            if node.op == "matmul" or _read_in_a_loop(node, users):
                group_of[id(node)] = len(groups)
                groups.append([node])
            continue
        joined = None
        for i in node.inputs:
            gid = group_of.get(id(i))
            if gid is None or not same_at_every_size(i.shape, node.shape) or id(i) in outputs:
                continue
            if len(users[id(i)]) != 1:
                continue
            if groups[gid][0].op == "matmul" and node.dtype != groups[gid][0].dtype:
                continue
            if joined is not None and not _mergeable(groups[joined], groups[gid]):
                continue
            if joined is None:
                joined = gid
            elif joined != gid:
                if groups[gid][0].op == "matmul" and groups[joined][0].op == "matmul":
                    continue   # one matmul per kernel: its epilogue is the rest
                if groups[gid][0].op == "matmul":
                    # the matmul heads what it merges with (`0.9 * m + x.T @ dy`): merged
                    # under the other group's head, the group was not lowerable as one
                    # kernel, and each of its nodes ran alone
                    joined, gid = gid, joined
                groups[joined].extend(groups[gid])
                for n in groups[gid]:
                    group_of[id(n)] = joined
                groups[gid] = []
        if joined is None:
            joined = len(groups)
            groups.append([])
        groups[joined].append(node)
        group_of[id(node)] = joined
    # in node order, but a matmul first: nothing else in its group feeds it (a group's
    # nodes other than its last have one consumer, inside the group)
    order = {id(n): k for k, n in enumerate(graph.nodes)}
    graph.fusion_groups = [sorted(g, key=lambda n: (n.op != "matmul", order[id(n)]))
                           for g in groups if len(g) > 1]
    return graph
