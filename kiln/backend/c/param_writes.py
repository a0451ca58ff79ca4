"""Writing a parameter's new value straight into the parameter (a whole training step).

A compiled step returns each updated parameter as a graph output, which the caller copied
back into the parameter: two full copies of every weight per step, about a tenth of an MLP
step. When it is safe, the loop computing the new value stores into the parameter itself,
and the program returns None for that output.

It is safe when the new value is computed by an elementwise loop (alone or as a matmul's
epilogue) that reads the parameter only at the index it writes, and nothing runs after
that loop, or is returned, that still needs the old value. Later steps may read the new
value (SGD's new momentum, added to the weight next): they read it from the parameter,
which saves a copy of the whole state per step.
"""
from collections import Counter

from .slice_views import viewed


def param_writes(graph, steps, storage, param_slots):
    """{id(output node): table slot of the parameter it may be written into}.

    steps: the emission order (steps.build_steps, sorted); storage(node) -> table slot;
    param_slots: the slot of each graph.params entry."""
    if not graph.state_outputs or any(s.kind == "control" for s in steps):
        return {}
    output_count = Counter(id(o) for o in graph.outputs)
    position = {id(s.sink): k for k, s in enumerate(steps)}
    readers = {}    # slot -> positions of the steps reading it (other than as a gemm input)
    inside = {}     # a window's slot -> the slot it points into (slice_views.py)
    for k, s in enumerate(steps):
        if s.kind == "alias":
            continue
        if s.kind == "window":
            inside[storage(s.sink)] = storage(s.sink.inputs[0])
        for i in s.inputs:
            slot = storage(i)
            while slot is not None:     # a read through a window reads what it points into
                readers.setdefault(slot, []).append(k)
                slot = inside.get(slot)
    written = {}
    for out_index, param_index in sorted(graph.state_outputs.items()):
        node = graph.outputs[out_index]
        slot = param_slots[param_index]
        k = position.get(id(node))
        if k is None or node.size == 0 or slot in written.values() \
                or output_count[id(node)] != 1:
            continue
        step = steps[k]
        if not _writes_elementwise(step, graph.params[param_index], storage, slot):
            continue
        if any(r > k for r in readers.get(slot, ())):
            continue      # a later step still reads the old value
        if any(storage(o) == slot for o in graph.outputs if o is not node):
            continue      # the caller reads the parameter (or a view of it) after the run
        written[id(node)] = slot
    return written


def _writes_elementwise(step, param, storage, slot):
    """The step's final store is an elementwise loop that reads the parameter, if at all,
    only as itself at the written index (a matmul heading the step has finished reading
    before its epilogue starts)."""
    if step.kind == "fused":
        loop_nodes = step.nodes
    elif step.kind == "matmul" and len(step.nodes) > 1:
        loop_nodes = step.nodes[1:]
    else:
        return False
    if step.sink.shape != param.shape or step.sink.dtype != param.dtype:
        return False
    members = {id(n) for n in step.nodes}
    for n in loop_nodes:
        for i in n.inputs:
            if id(i) in members:
                continue
            if storage(i) == slot and (i is not param or i.shape != step.sink.shape):
                return False
            if i is not param and any(storage(v) == slot for v in viewed(i)):
                return False      # a window (slice_views.py) or a reshape of one into it
    return True
