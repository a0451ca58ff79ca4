"""Tracing the bodies of control-flow ops: a Python function traced into a subgraph
inside an outer trace. (The Subgraph class, its gradient graph and its evaluation are the
ops' own: kiln/ops/subgraph.py.)

  SubTraceContext      traces a Python function inside an outer trace, capturing outer symbols
  trace_in_subcontext  runs a function in a new SubTraceContext
  union_captures       one operand list for several subtraces (a cond's two branches)
"""
from .._core import autograd
from .._core.ndarray import ndarray
from .._core import trace
from .._core.ir import Node


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
