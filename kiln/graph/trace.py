"""The tracing context: while it is active, ops on symbolic arrays add graph nodes."""
from ..base import KilnError
from .ir import Node


class TraceContext:
    def __init__(self, name="graph"):
        self.name = name
        self.nodes = []
        self._consts = {}     # id(numpy value) -> (node, value): one node per captured array
        self.params = {}      # id(Parameter) -> node

    def add(self, node):
        self.nodes.append(node)
        return node

    def param_array(self, param, value):
        """The symbolic array standing for a Parameter in this trace (one node per parameter)."""
        from ..ndarray import ndarray
        hit = self.params.get(id(param))
        if hit is None:
            node = self.add(Node("param", (), {}, value.shape, value.dtype,
                                 name=getattr(param, "name", None)))
            hit = self.params[id(param)] = (param, ndarray._from_node(node))
        return hit[1]

    def constant(self, value):
        hit = self._consts.get(id(value))
        if hit is not None:
            return hit[0]
        node = self.add(Node("const", (), {}, value.shape, value.dtype, value=value))
        self._consts[id(value)] = (node, value)   # keep value alive so its id stays unique
        return node


_stack = []


def current():
    return _stack[-1] if _stack else None


class suspended:
    """Run eagerly inside a trace (parameter initialization, for instance)."""

    def __enter__(self):
        _stack.append(None)

    def __exit__(self, *exc):
        _stack.pop()


def push(ctx):
    _stack.append(ctx)


def pop():
    return _stack.pop()


def add_node(prim, arrays, attrs, shape, dtype):
    ctx = current()
    if ctx is None:
        raise KilnError(f"{prim.name}: a symbolic array was used outside of the hybridize "
                        "trace that made it (was a traced value stored and reused later?)")
    inputs = []
    for a in arrays:
        if a._node is not None:
            inputs.append(a._node)
        else:
            inputs.append(ctx.constant(a._data))
    return ctx.add(Node(prim.name, inputs, attrs, shape, dtype))
