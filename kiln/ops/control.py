"""Control-flow primitives: `cond`, `while_loop` and the reverse loop `while_loop_grad`.

Their attributes hold subgraphs (kiln Graphs, see kiln/ops/subgraph.py). The IR has one
output per node, so a control-flow construct with several results becomes one node per
result, selected by the `index` attribute; the nodes share their subgraphs. (A `cond`
output evaluates only the part of its branch that output needs.)

Operands: `cond(pred, *operands)` -- both branch graphs take `operands`, one input each.
`while_loop(*carried, *invariants)` -- the condition graph and the body graph take the
carried values followed by the loop invariants (outer values the loop reads); the body
returns the next carried values, with unchanged shapes and dtypes.

Gradients
  cond        the gradient is again a `cond`, over the two branches' gradient graphs
              (`vjp_graph`: the branch's backward traced with kiln's autograd on symbols).
  while_loop  `while_loop_grad` recomputes the forward loop, keeping the carried values of
              every iteration (memory grows with the trip count), then walks them in
              reverse through the body's gradient graph, summing the invariants' gradients.
              Recomputing instead of storing a history output keeps the forward node
              cheap and its output shape static; the price is one extra forward loop in
              backward. Second-order gradients through a loop are not supported.

Eager kernels evaluate subgraphs with the NumPy executor (ops/subgraph.py's run: one
NumpyProgram per subgraph, cached on the graph object). The C backend lowers all three into
the generated source (kiln/backend/c/control.py); what it cannot lower falls back to the
NumPy executor.
"""
import numpy as _np

from .registry import register, REGISTRY
from .rules import is_float
from .subgraph import derived_cache, run, vjp_graph
from .._core.base import KilnError


def _pred_value(pred):
    p = _np.asarray(pred)
    if p.size != 1:
        raise KilnError(f"cond: the condition must have one element, got shape {p.shape}")
    return bool(p.reshape(()))


def _out_aval(graph, index):
    out = graph.outputs[index]
    return out.shape, out.dtype


# ---- cond ----------------------------------------------------------------------------------
def _cond_shape(pred, *operands, then_graph, else_graph, index):
    return _out_aval(then_graph, index)


def _cond_grad(g, out, pred, *operands, then_graph, else_graph, index):
    gthen, gelse = vjp_graph(then_graph, (index,)), vjp_graph(else_graph, (index,))
    grads = [None]
    for j, x in enumerate(operands):
        if not is_float(x.dtype):
            grads.append(None)
            continue
        grads.append(REGISTRY["cond"](pred, *operands, g, then_graph=gthen,
                                      else_graph=gelse, index=j))
    return grads


@register("cond", _cond_shape, _cond_grad)
def cond(pred, *operands, then_graph, else_graph, index):
    """Output `index` of then_graph(*operands) if pred else of else_graph(*operands)."""
    graph = then_graph if _pred_value(pred) else else_graph
    return run(graph, operands, index)


# ---- while_loop ----------------------------------------------------------------------------
def _loop(values, cond_graph, body_graph, n_carried, max_iterations, history=None):
    carried, invariants = list(values[:n_carried]), list(values[n_carried:])
    steps = 0
    while max_iterations is None or steps < max_iterations:
        if not _pred_value(run(cond_graph, carried + invariants, 0)):
            break
        if history is not None:
            history.append(carried)
        carried = run(body_graph, carried + invariants)
        steps += 1
    return carried, invariants


def _memo(graph, kind, values, compute):
    """One remembered result per (body graph, kind): the nodes of one loop (one per carried
    output, one per gradient input) see the same operands one after another, so the loop
    runs once per call of the program instead of once per node."""
    key = tuple((v.shape, v.dtype.str, v.tobytes()) for v in map(_np.asarray, values))
    cache = derived_cache(graph)
    hit = cache.get(("memo", kind))
    if hit is not None and hit[0] == key:
        return hit[1]
    result = compute()
    cache[("memo", kind)] = (key, result)
    return result


def _while_shape(*values, cond_graph, body_graph, n_carried, index, max_iterations):
    return _out_aval(body_graph, index)


def _while_grad(g, out, *values, cond_graph, body_graph, n_carried, index, max_iterations):
    grads = []
    for j, x in enumerate(values):
        if not is_float(x.dtype):
            grads.append(None)
            continue
        grads.append(REGISTRY["while_loop_grad"](
            *values, g, cond_graph=cond_graph, body_graph=body_graph, n_carried=n_carried,
            out_index=index, in_index=j, max_iterations=max_iterations))
    return grads


@register("while_loop", _while_shape, _while_grad)
def while_loop(*values, cond_graph, body_graph, n_carried, index, max_iterations):
    """Carried value `index` after `while cond(*carried, *inv): carried = body(...)`."""
    # copies: a loop that runs no time carries its operands themselves, which the caller
    # may write into later (an argument updated in place), and the memo must not change
    carried = _memo(body_graph, ("forward", id(cond_graph), max_iterations), values,
                    lambda: [_np.array(c, copy=True) for c in _loop(
                        values, cond_graph, body_graph, n_carried, max_iterations)[0]])
    return carried[index].copy()     # the memo keeps its own copy


def _while_grad_shape(*values, cond_graph, body_graph, n_carried, out_index, in_index,
                      max_iterations):
    x = values[in_index]
    return tuple(x.shape), x.dtype


@register("while_loop_grad", _while_grad_shape)
def while_loop_grad(*values, cond_graph, body_graph, n_carried, out_index, in_index,
                    max_iterations):
    """Gradient of while_loop output `out_index` (incoming gradient: the last operand)
    with respect to operand `in_index`: recompute the loop, then run it backward."""
    grads = _memo(body_graph, ("backward", id(cond_graph), max_iterations, out_index),
                  values, lambda: _loop_grads(values, cond_graph, body_graph, n_carried,
                                              out_index, max_iterations))
    return grads[in_index].copy()


def _loop_grads(values, cond_graph, body_graph, n_carried, out_index, max_iterations):
    """Gradients of every operand: recompute the loop keeping each iteration's carried
    values, then apply the body's gradient graph to them in reverse."""
    values, g = values[:-1], values[-1]
    history = []
    carried, invariants = _loop(values, cond_graph, body_graph, n_carried, max_iterations,
                                history)
    vjp = vjp_graph(body_graph, tuple(range(n_carried)))
    g_carried = [_np.zeros_like(c) for c in carried]
    g_carried[out_index] = _np.asarray(g, dtype=carried[out_index].dtype)
    g_inv = [_np.zeros_like(v) for v in invariants]
    for state in reversed(history):
        res = run(vjp, list(state) + invariants + g_carried)
        g_carried = res[:n_carried]
        for k, gi in enumerate(res[n_carried:]):
            g_inv[k] = g_inv[k] + gi
    return g_carried + g_inv
