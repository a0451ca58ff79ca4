"""Tracing a Python callable into a Graph, optionally with its gradient.

The callable runs once with symbolic arrays for its array arguments; parameters read
through Parameter.data() become 'param' nodes. Everything goes through the same registry
as eager execution, so the trace and the eager run cannot drift apart.
"""
import warnings

import numpy as _np

from .._core import autograd
from .._core.base import user_frame
from .._core.ndarray import ndarray, as_array
from .._core import trace
from .._core.ir import Graph, Node
from .._core.symdim import SymInt, active_env
from .tree import flatten, unflatten
from .._core.bfloat16 import is_floating

_warned_side_effects = False


class KilnTraceWarning(UserWarning):
    pass


def _warn_side_effects_once(name):
    global _warned_side_effects
    if _warned_side_effects:
        return
    _warned_side_effects = True
    where = user_frame() or ("<kiln>", 0, "")
    warnings.warn_explicit(
        f"kiln.hybridize traced {name}: its Python code ran once to build a graph. Side "
        "effects such as print() happen only while tracing (again for each new input shape "
        "or mode), not on every call.", KilnTraceWarning, where[0], where[1])


def _numbers_as_arrays(value):
    if isinstance(value, (bool, int, float, _np.number)):
        return as_array(value)
    if isinstance(value, (tuple, list)):
        return type(value)(_numbers_as_arrays(v) for v in value)
    return value


class Capture:
    """The result of one trace."""

    def __init__(self, graph, out_structure, n_outputs, state_params, params, n_inputs,
                 written_args=()):
        self.graph = graph
        self.out_structure = out_structure
        self.n_outputs = n_outputs          # user-visible outputs, then written arguments
        # indices of the array arguments the traced code wrote in place; their new values
        # are the outputs after the user's, and the caller copies them back (as eager does)
        self.written_args = tuple(written_args)
        self.n_user = n_outputs - len(self.written_args)
        self.state_params = state_params    # Parameters written by the trace, in output order
        self.params = params                # id(param node) -> Parameter
        self.n_inputs = n_inputs


def _input_nodes(arrays, name_prefix="data", shapes=None):
    nodes = []
    for k, a in enumerate(arrays):
        name = name_prefix if len(arrays) == 1 else f"{name_prefix}{k}"
        shape = a.shape if shapes is None else shapes[k]
        nodes.append(Node("input", (), {}, shape, a.dtype, name=name))
    return nodes


def capture(fn, args, name, param_names=None, grad_inputs=None, note_side_effects=True,
            input_shapes=None):
    """Trace fn(*args).

    note_side_effects=False: fn is kiln's own code (kiln.fit's step, kiln.explain's copy),
    whose side effects running only while tracing is nothing the user needs told.

    With grad_inputs (one flag per array argument: does it need a gradient?), the backward
    pass is traced too. The graph then takes one extra input per float output (its incoming
    gradient) and returns, after the outputs and state updates, the gradients of the flagged
    inputs and then of every parameter that needs one (`Capture.grad_params`)."""
    with_grad = grad_inputs is not None
    arrays, in_structure = flatten(tuple(args))
    ctx = trace.TraceContext(name, differentiate=with_grad)
    in_nodes = _input_nodes(arrays, shapes=input_shapes)
    symbols = []
    for node in in_nodes:
        ctx.add(node)
        sym = ndarray._from_node(node)
        if with_grad and grad_inputs[len(symbols)] and is_floating(node.dtype):
            sym._tape = autograd.Leaf(sym)
        symbols.append(sym)
    sym_args = unflatten(in_structure, symbols)
    # taken before the call: an in-place update rebinds an argument's tape entry
    leaves = [s._tape for s in symbols]
    trace.push(ctx)
    try:
        with autograd._scope(with_grad, None):
            result = fn(*sym_args)
        outs, out_structure = flatten(_numbers_as_arrays(result))
        outs = [o if isinstance(o, ndarray) else as_array(o) for o in outs]
        written = [k for k, (s, n) in enumerate(zip(symbols, in_nodes)) if s._node is not n]
        outs += [symbols[k] for k in written]
        out_nodes = [_node_of(ctx, o) for o in outs]
        entries = list(ctx.params.values())
        state = [(e.param, e.array) for e in entries if e.array._node is not e.node]
        state_nodes = [_node_of(ctx, a) for _, a in state]
        grad_in_nodes, grad_nodes, grad_params = [], [], []
        if with_grad:
            grad_in_nodes, grad_nodes, grad_params = _trace_backward(ctx, outs, symbols,
                                                                     leaves, entries)
    finally:
        trace.pop()
    if note_side_effects:
        _warn_side_effects_once(name)
    param_nodes = [e.node for e in entries]
    names = param_names or {}
    for e in entries:
        e.node.name = names.get(id(e.param), e.node.name)
    graph = Graph(in_nodes + grad_in_nodes, param_nodes,
                  out_nodes + state_nodes + grad_nodes, name)
    _write_pinned_sizes(graph)
    cap = Capture(graph, out_structure, len(out_nodes), [p for p, _ in state],
                  {id(e.node): e.param for e in entries}, len(in_nodes), written)
    cap.grad_params = grad_params
    cap.connected = getattr(ctx, "connected", None)   # outputs on the tape (with_grad only)
    cap.n_grad_outputs = len(grad_in_nodes)
    cap.pre_call = list(ctx.pre_call)
    cap.precisions = list(ctx.precisions)
    return cap


def _node_of(ctx, array):
    if array._node is not None:
        return array._node
    return ctx.constant(array._data)


def _trace_backward(ctx, outs, symbols, leaves_before, entries):
    heads, head_grads, grad_in_nodes = [], [], []
    for k, o in enumerate(outs):
        if not is_floating(o.dtype):
            continue
        node = ctx.add(Node("input", (), {}, o.shape, o.dtype, name=f"grad_out{k}"))
        grad_in_nodes.append(node)
        # an output whose tape the traced code already consumed (a training step that
        # ran its own loss.backward()) has no gradient to give the outer tape
        if o._tape is not None and getattr(o._tape, "backward", True) is not None:
            heads.append(o)
            head_grads.append(ndarray._from_node(node))
    # outputs that no gradient path joins to a graded input stay off the caller's tape, so
    # a backward() from them raises as it does in eager mode
    ctx.connected = [k for k, o in enumerate(outs) if any(o is h for h in heads)]
    found = autograd._run_backward(heads, head_grads, retain_graph=True,
                                   create_graph=False) if heads else {}
    from ..ops.creation import full
    leaves = [(t, s) for t, s in zip(leaves_before, symbols) if isinstance(t, autograd.Leaf)]
    grad_params = [e.param for e in entries if e.leaf is not None]
    leaves += [(e.leaf, e.leaf.array) for e in entries if e.leaf is not None]
    grad_nodes = []
    for leaf, array in leaves:
        hit = found.get(id(leaf))
        g = hit[1] if hit is not None else full(shape=array.shape, value=0, dtype=array.dtype)
        grad_nodes.append(_node_of(ctx, g))
    return grad_in_nodes, grad_nodes, grad_params


def _write_pinned_sizes(graph):
    """A symbolic size that a guard pinned to one value (`s0 == 1`: this program serves
    only that value) is written as that value in every shape and attribute of the graph,
    so no backend mistakes it for a size that varies: generated C would otherwise lay out
    a broadcast over a symbolic axis that is 1 as a full one."""
    env = active_env()
    pins = {} if env is None else {g.lhs[1]: g.rhs[1] for g in env.guards
                                   if g.kind() == "specialized"}
    if pins:
        _pin_graph(graph, pins, env.symbols, set())


def _pin_graph(graph, pins, hints, seen):
    """_write_pinned_sizes on graph and on the bodies of its control-flow nodes (a scan's
    body sees the pinned sizes too: its generated C has no run-time size for them)."""
    for node in graph.inputs + graph.params + graph.nodes:
        if id(node) in seen:
            continue
        seen.add(id(node))
        node.shape = tuple(_pinned(d, pins, hints) for d in node.shape)
        node.attrs = {k: _pinned(v, pins, hints) for k, v in node.attrs.items()}
        for value in node.attrs.values():
            if isinstance(value, Graph) and id(value) not in seen:
                seen.add(id(value))
                _pin_graph(value, pins, hints, seen)


_ARITHMETIC = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
               "//": lambda a, b: a // b, "%": lambda a, b: a % b}


def _pinned(value, pins, hints):
    """value (a size, an attribute, or tuples/lists/dicts of them) with the pinned symbols
    replaced by their values; what is left of an expression stays symbolic."""
    if isinstance(value, SymInt):
        return _rebuilt(value.expr, pins, hints) if value.symbols() & pins.keys() else value
    if type(value) in (tuple, list):
        return type(value)(_pinned(v, pins, hints) for v in value)
    if isinstance(value, dict):
        return {k: _pinned(v, pins, hints) for k, v in value.items()}
    return value


def _rebuilt(expr, pins, hints):
    kind = expr[0]
    if kind == "sym":
        return pins[expr[1]] if expr[1] in pins else SymInt.symbol(expr[1], hints[expr[1]])
    if kind == "const":
        return expr[1]
    return _ARITHMETIC[kind](_rebuilt(expr[1], pins, hints), _rebuilt(expr[2], pins, hints))
