"""Emitting a `scan` node while tracing: step(x_t, states) -> (y_t, new_states) traced once
as the loop body over the leading axis of `xs` (kiln/ops/scan.py has the op)."""
from .._core.ndarray import ndarray, as_array
from .._core.base import ControlFlowError
from .control_trace import _has_random, _where
from .._core.ir import Node
from ..ops.subgraph import Subgraph
from .subgraph import trace_in_subcontext, union_captures


def _input(value, name, drop_axis=False):
    shape = tuple(value.shape[1:]) if drop_axis else tuple(value.shape)
    return Node("input", (), {}, shape, value.dtype, name=name)


def _products(body):
    """The values backward should not recompute: each matmul's result, taken after the
    additions that follow it (a bias, the input projection), which the C backend computes
    in the matmul's own loop. Step outputs already are kept."""
    users = body.consumers()
    outputs = {id(o) for o in body.outputs}
    found = []
    for node in body.nodes:
        if node.op != "matmul":
            continue
        while (id(node) not in outputs and len(users[id(node)]) == 1
               and users[id(node)][0].op == "add" and users[id(node)][0].shape == node.shape):
            node = users[id(node)][0]
        if id(node) not in outputs and all(node is not f for f in found):
            found.append(node)
    return found


def emit_scan(step, xs, states, reverse=False, what="recurrent time loop"):
    """(ys stacked along axis 0, final states) as slices of one traced `scan` node."""
    from ..ops.registry import REGISTRY
    from ..ops.scan import unpack
    where = _where()
    xs, states = as_array(xs), [as_array(s) for s in states]
    n = len(states)
    carried_in = [_input(s, f"state{k}") for k, s in enumerate(states)]
    x_in = _input(xs, "x_t", drop_axis=True)

    def body(*args):
        y, new = step(args[n], list(args[:n]))
        return [y] + list(new)

    args = [ndarray._from_node(node) for node in carried_in + [x_in]]
    ctx, result = trace_in_subcontext(body, args, "scan_body", carried_in + [x_in])
    y, new = result[0], result[1:]
    if len(new) != n:
        raise ControlFlowError(f"{what}: the step returned {len(new)} states for {n}{where}")
    for k, (old, value) in enumerate(zip(states, new)):
        if not isinstance(value, ndarray) or value.shape != old.shape \
                or value.dtype != old.dtype:
            raise ControlFlowError(f"{what}: state {k} enters the loop as {old.dtype}"
                                   f"{list(old.shape)} but the step makes it "
                                   f"{getattr(value, 'dtype', type(value).__name__)}"
                                   f"{list(getattr(value, 'shape', ()))}{where}")
    if not isinstance(y, ndarray) or any(y.dtype != s.dtype for s in states):
        raise ControlFlowError(f"{what}: the step output must be an array of the states' "
                               f"dtype{where}")
    invariants, (inv_in,) = union_captures([ctx])
    outputs = [ctx.node_of(v) for v in new] + [ctx.node_of(y)]
    body = Subgraph(carried_in + [x_in] + inv_in, [], outputs, "scan_body")
    saved = _products(body)
    graph = Subgraph(body.inputs, [], outputs + saved, "scan_body")
    if _has_random(graph):
        raise ControlFlowError(f"{what}: a random op (dropout) inside the loop body is not "
                               f"compiled{where}")
    flat = REGISTRY["scan"](*states, xs, *invariants, body=graph, n_carried=n, n_xs=1,
                            reverse=bool(reverse), n_saved=len(saved))
    values = unpack(flat, graph, n, xs.shape[0])
    return values[n], values[:n]
