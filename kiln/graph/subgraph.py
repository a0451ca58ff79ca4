"""Subgraphs: the bodies of control-flow ops (`cond` branches, `while_loop` condition/body).

A subgraph is an ordinary kiln Graph with no parameters: everything it reads from the
enclosing trace (a parameter, an outer symbolic value) becomes one of its inputs. Subgraphs
are immutable once built and compared by identity (CSE keys on the object), so results
derived from one -- its gradient graph, its NumPy program -- are cached on the object.

  SubTraceContext   traces a Python function inside an outer trace, capturing outer symbols
  replay            re-applies a subgraph's nodes through the registry (eagerly or traced)
  vjp_graph         the gradient of a subgraph, built by tracing its backward with autograd
  run               evaluates a subgraph on NumPy values (cached NumpyProgram)
"""
import threading

from .._core import autograd
from .._core.ndarray import ndarray
from .._core import trace
from .._core.ir import Graph, Node

# the ops whose attributes hold subgraphs
CONTROL_OPS = ("cond", "while_loop", "while_loop_grad", "scan", "scan_grad")


class Subgraph(Graph):
    """A control-flow body. Prints as a short reference inside its parent graph's listing;
    str() gives the full listing."""

    def __repr__(self):
        return (f"<subgraph {self.name}: {len(self.inputs)} inputs, {len(self.outputs)} "
                f"outputs, {len(self.ops)} ops>")


class SubTraceContext(trace.TraceContext):
    """A trace nested in another one. An operand that belongs to an enclosing trace is
    replaced by a fresh input node of this subgraph; `captured` remembers the outer array
    (with its autograd tape position) so the control-flow node can take it as an operand."""

    def __init__(self, parent, name):
        super().__init__(name)
        self.parent = parent
        self.owned = set()
        self.captured = {}    # id(outer node) -> (outer array alias, local input node)

    def add(self, node):
        self.owned.add(id(node))
        self.nodes.append(node)
        return node

    def new_input(self, shape, dtype, name):
        return self.add(Node("input", (), {}, shape, dtype, name=name))

    def symbol_input(self, array):
        node = array._node
        if id(node) in self.owned:
            return node
        hit = self.captured.get(id(node))
        if hit is None:
            local = self.new_input(node.shape, node.dtype, f"captured{len(self.captured)}")
            hit = self.captured[id(node)] = (array._alias(), local)
        return hit[1]

    def param_array(self, param, value):
        # the parameter belongs to the outermost graph; here it is a captured outer symbol
        return self.parent.param_array(param, value)

    def node_of(self, value):
        """The local node for a value returned by the traced function."""
        if isinstance(value, ndarray):
            if value._node is not None:
                return self.symbol_input(value)
            return self.constant(value._data)
        from .._core.ndarray import as_array
        return self.constant(as_array(value)._data)


def trace_in_subcontext(fn, args, name, inputs=None):
    """Run fn(*args) in a new SubTraceContext (autograd off: the control-flow node is what
    goes on the tape). Returns (context, result)."""
    ctx = SubTraceContext(trace.current(), name)
    if inputs is not None:
        for node in inputs:
            ctx.add(node)
    trace.push(ctx)
    try:
        with autograd._scope(False, None):
            result = fn(*args)
    finally:
        trace.pop()
    return ctx, result


def union_captures(contexts):
    """One operand list for several subtraces: (outer arrays, per-context input lists)."""
    order, outer = [], {}
    for ctx in contexts:
        for key, (array, _) in ctx.captured.items():
            if key not in outer:
                outer[key] = array
                order.append(key)
    per_ctx = []
    for ctx in contexts:
        nodes = []
        for key in order:
            hit = ctx.captured.get(key)
            if hit is not None:
                nodes.append(hit[1])
            else:   # this subgraph does not read it: an unused input keeps signatures equal
                a = outer[key]
                nodes.append(Node("input", (), {}, a.shape, a.dtype, name="unused"))
        per_ctx.append(nodes)
    return [outer[k] for k in order], per_ctx


# ---- using a subgraph ----------------------------------------------------------------------
def replay(graph, arrays, known=None):
    """Apply graph's nodes to kiln arrays through the registry (so it traces or records).

    known: {id(node): symbolic array} -- nodes whose value is given (a loop's forward kept
    it): the op is still recorded, so gradients flow through it, but later nodes read the
    given value, and the recomputation is dead code unless a gradient rule needs it."""
    from .._core.dispatch import apply
    from ..ops.registry import REGISTRY
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


def _cache(graph):
    cache = graph.__dict__.get("_kiln_derived")
    if cache is None:
        cache = graph.__dict__["_kiln_derived"] = {}
    return cache


def run(graph, values, index=None):
    """Evaluate graph on NumPy values: all outputs, or only output `index` (pruned)."""
    cache = _cache(graph)
    key = ("program", index)
    hit = cache.get(key)
    if hit is None:
        from ..backend.numpy_exec import NumpyProgram
        from .passes import optimize
        outputs = graph.outputs if index is None else [graph.outputs[index]]
        program = NumpyProgram(optimize(Graph(graph.inputs, [], outputs, graph.name)))
        # a program reuses its buffers: one caller at a time (threads share compiled code)
        hit = cache.setdefault(key, (program, threading.Lock()))
    program, lock = hit
    with lock:
        results = program(list(values), [])
    return results if index is None else results[0]


def vjp_graph(graph, out_indices, known=()):
    """Graph (inputs..., one gradient per selected output) -> gradient of every input.

    Built by replaying `graph` on symbolic leaves and running kiln's autograd backward on
    symbols, exactly as hybridize traces a model's backward; the result has no tape.
    known: nodes of `graph` whose forward values become extra inputs, after the graph's
    inputs and before the gradients, instead of being recomputed (see replay)."""
    cache = _cache(graph)
    key = ("vjp", tuple(out_indices), tuple(id(n) for n in known))
    hit = cache.get(key)
    if hit is not None:
        return hit
    from ..ops.creation import full
    ctx = trace.TraceContext(graph.name + "_vjp")
    ins = [ctx.add(Node("input", (), {}, n.shape, n.dtype, name=n.name)) for n in graph.inputs]
    kins = [ctx.add(Node("input", (), {}, n.shape, n.dtype, name=f"known_{n.name}"))
            for n in known]
    gins = [ctx.add(Node("input", (), {}, graph.outputs[k].shape, graph.outputs[k].dtype,
                         name=f"grad_out{k}")) for k in out_indices]
    syms = []
    for node in ins:
        s = ndarray._from_node(node)
        if node.dtype.kind == "f":
            s._tape = autograd.Leaf(s)
        syms.append(s)
    trace.push(ctx)
    try:
        with autograd._scope(True, None):
            outs = replay(graph, syms, {id(n): ndarray._from_node(k)
                                        for n, k in zip(known, kins)})
        heads, head_grads = [], []
        for k, gnode in zip(out_indices, gins):
            if outs[k]._tape is not None and gnode.dtype.kind == "f":
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
