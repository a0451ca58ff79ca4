"""Subgraphs: the bodies of control-flow ops (`cond` branches, `while_loop` condition/body,
`scan`'s step), and what the ops do with them.

A subgraph is an ordinary kiln Graph with no parameters: everything it reads from the
enclosing trace (a parameter, an outer symbolic value) becomes one of its inputs. Subgraphs
are immutable once built and compared by identity (CSE keys on the object), so results
derived from one -- its gradient graph, its NumPy program, a loop's memo -- are cached on
the object (derived_cache).

  replay            re-applies a subgraph's nodes through the registry (eagerly or traced)
  vjp_graph         the gradient of a subgraph, built by tracing its backward with autograd
  run               evaluates a subgraph on NumPy values, with the runner the NumPy
                    executor registers (set_runner; kiln/backend/numpy_exec.py)

Tracing a Python function into a subgraph is kiln/graph/subgraph.py's.
"""
from .._core import autograd, trace
from .._core.base import KilnError
from .._core.dispatch import apply
from .._core.ir import Graph, Node
from .._core.ndarray import ndarray
from .creation import full
from .registry import REGISTRY
from .rules import is_float

# the ops whose attributes hold subgraphs
CONTROL_OPS = ("cond", "while_loop", "while_loop_grad", "scan", "scan_grad")


class Subgraph(Graph):
    """A control-flow body. Prints as a short reference inside its parent graph's listing;
    str() gives the full listing."""

    def __repr__(self):
        return (f"<subgraph {self.name}: {len(self.inputs)} inputs, {len(self.outputs)} "
                f"outputs, {len(self.ops)} ops>")


def replay(graph, arrays, known=None):
    """Apply graph's nodes to kiln arrays through the registry (so it traces or records).

    known: {id(node): symbolic array} -- nodes whose value is given (a loop's forward kept
    it): the op is still recorded, so gradients flow through it, but later nodes read the
    given value, and the recomputation is dead code unless a gradient rule needs it."""
    env = {id(n): a for n, a in zip(graph.inputs, arrays)}
    known = known or {}
    for n in graph.nodes:
        if id(n) in env:
            continue
        if n.op == "const":
            env[id(n)] = ndarray._wrap(n.value)
        elif n.op in ("input", "param"):
            raise RuntimeError(f"subgraph {graph.name}: {n.name} is not among its inputs")
        else:
            env[id(n)] = apply(REGISTRY[n.op], [env[id(i)] for i in n.inputs], n.attrs)
            given = known.get(id(n))
            if given is not None:
                value = env[id(n)] = env[id(n)]._alias()
                value._node = given._node
    return [env[id(o)] for o in graph.outputs]


def derived_cache(graph):
    """The dict of results derived from `graph`, kept on the graph object."""
    cache = graph.__dict__.get("_kiln_derived")
    if cache is None:
        cache = graph.__dict__["_kiln_derived"] = {}
    return cache


_runner = []     # run(graph, values, index) on NumPy values: the NumPy executor's


def set_runner(fn):
    """Register how subgraphs are evaluated on NumPy values (the NumPy executor does, on
    import): fn(graph, values, index) -> all outputs, or only output `index`."""
    _runner[:] = [fn]


def run(graph, values, index=None):
    """Evaluate graph on NumPy values: all outputs, or only output `index` (pruned)."""
    if not _runner:
        raise KilnError("no subgraph runner is registered (kiln/backend/numpy_exec.py "
                        "registers one when kiln is imported)")
    return _runner[0](graph, values, index)


def vjp_graph(graph, out_indices, known=()):
    """Graph (inputs..., one gradient per selected output) -> gradient of every input.

    Built by replaying `graph` on symbolic leaves and running kiln's autograd backward on
    symbols, exactly as hybridize traces a model's backward; the result has no tape.
    known: nodes of `graph` whose forward values become extra inputs, after the graph's
    inputs and before the gradients, instead of being recomputed (see replay)."""
    cache = derived_cache(graph)
    key = ("vjp", tuple(out_indices), tuple(id(n) for n in known))
    hit = cache.get(key)
    if hit is not None:
        return hit
    ctx = trace.TraceContext(graph.name + "_vjp")
    ins = [ctx.add(Node("input", (), {}, n.shape, n.dtype, name=n.name)) for n in graph.inputs]
    kins = [ctx.add(Node("input", (), {}, n.shape, n.dtype, name=f"known_{n.name}"))
            for n in known]
    gins = [ctx.add(Node("input", (), {}, graph.outputs[k].shape, graph.outputs[k].dtype,
                         name=f"grad_out{k}")) for k in out_indices]
    syms = []
    for node in ins:
        s = ndarray._from_node(node)
        if is_float(node.dtype):
            s._tape = autograd.Leaf(s)
        syms.append(s)
    trace.push(ctx)
    try:
        with autograd._scope(True, None):
            outs = replay(graph, syms, {id(n): ndarray._from_node(k)
                                        for n, k in zip(known, kins)})
        heads, head_grads = [], []
        for k, gnode in zip(out_indices, gins):
            if outs[k]._tape is not None and is_float(gnode.dtype):
                heads.append(outs[k])
                head_grads.append(ndarray._from_node(gnode))
        found = autograd._run_backward(heads, head_grads, retain_graph=False,
                                       create_graph=False) if heads else {}
        grads = []
        for s in syms:
            hit = found.get(id(s._tape)) if isinstance(s._tape, autograd.Leaf) else None
            g = hit[1] if hit is not None else full(shape=s.shape, value=0, dtype=s.dtype)
            grads.append(g._node if g._node is not None else ctx.constant(g._data))
    finally:
        trace.pop()
    result = cache[key] = Subgraph(ins + kins + gins, [], grads, graph.name + "_vjp")
    return result
