"""The graph IR: nodes with an op name, inputs, typed attributes, shape and dtype."""
import itertools

import numpy as _np

from .base import Shaped, postorder
from .symdim import SymInt

# ops that are not computations: graph inputs, parameters and constants
SOURCE_OPS = ("input", "param", "const")

_ids = itertools.count()


class Node(Shaped):
    __slots__ = ("op", "inputs", "attrs", "shape", "dtype", "name", "value", "id", "__weakref__")

    def __init__(self, op, inputs, attrs, shape, dtype, name=None, value=None):
        self.op = op                    # a registry primitive name, or one of SOURCE_OPS
        self.inputs = tuple(inputs)
        self.attrs = dict(attrs)
        # a size is an int, or a SymInt for a symbolic dimension (symdim.py)
        self.shape = tuple(d if isinstance(d, SymInt) else int(d) for d in shape)
        self.dtype = _np.dtype(dtype)
        self.value = value              # the NumPy value of a const node
        self.id = next(_ids)
        self.name = name or f"{op}{self.id}"

    @property
    def is_source(self):
        return self.op in SOURCE_OPS

    def key(self):
        """Structural identity used by common-subexpression elimination."""
        if self.op == "const":
            return ("const", self.dtype.str, self.shape, self.value.tobytes())
        if self.op in ("input", "param"):
            return (self.op, self.id)
        return (self.op, tuple(id(i) for i in self.inputs), _freeze(self.attrs))

    def describe(self):
        return f"symbol {self.name}, shape {self.shape}, dtype {self.dtype}"

    def symbol(self):
        return _SymbolView(self)

    def __repr__(self):
        return f"<Node {self.name}: {self.op} {self.shape} {self.dtype}>"


class _SymbolView:
    """How a symbolic array prints: like MXNet's `<_Symbol name>`, with shape and dtype."""
    __slots__ = ("node",)

    def __init__(self, node):
        self.node = node

    def __repr__(self):
        n = self.node
        return f"<_Symbol {n.name} shape={n.shape} dtype={n.dtype}>"


def _freeze(value):
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, _np.dtype):
        return ("dtype", value.str)
    if isinstance(value, float) and value != value:
        return ("nan",)
    return value


class Graph:
    """A dataflow program: named inputs and parameters, nodes, and outputs.

    `nodes` is a topological order of everything the outputs reach. Passes never mutate a
    graph; they return a new one (see `rewrite`).
    """

    def __init__(self, inputs, params, outputs, name="graph"):
        self.inputs = list(inputs)        # Nodes with op 'input', in call order
        self.params = list(params)        # Nodes with op 'param' (name = structural name)
        self.outputs = list(outputs)
        self.name = name
        self.nodes = topological(self.outputs)
        self.memory_plan = None
        self.fusion_groups = []
        # {output index: param index}: outputs that are the new value of a parameter, which
        # the caller writes back; a backend may write them into the parameter in place
        self.state_outputs = {}

    @property
    def ops(self):
        """The op names of the compute nodes (inputs, parameters and constants excluded)."""
        return [n.op for n in self.nodes if not n.is_source]

    def consumers(self):
        users = {id(n): [] for n in self.nodes}
        for n in self.nodes:
            for i in n.inputs:
                users[id(i)].append(n)
        return users

    def __str__(self):
        names = {}
        lines = [f"graph {self.name}("
                 + ", ".join(f"{n.name}: {_aval(n)}" for n in self.inputs) + ")"]
        if self.params:
            lines.append("  params: " + ", ".join(f"{n.name}: {_aval(n)}" for n in self.params))
        for k, n in enumerate(self.nodes):
            names[id(n)] = n.name if n.op in ("input", "param") else f"%{k}"
            if n.op in ("input", "param"):
                continue
            if n.op == "const":
                body = (f"const {n.value.reshape(-1)[:4].tolist()}{'...' if n.size > 4 else ''}"
                        if n.size else "const []")
            else:
                args = ", ".join(names[id(i)] for i in n.inputs)
                attrs = ", ".join(f"{k2}={_fmt(v)}" for k2, v in n.attrs.items())
                body = f"{n.op}({args}{', ' if args and attrs else ''}{attrs})"
            lines.append(f"  {names[id(n)]} = {body} : {_aval(n)}")
        lines.append("  return " + ", ".join(names[id(n)] for n in self.outputs))
        return "\n".join(lines)

    __repr__ = __str__

    def to_dot(self):
        """Graphviz source for this graph."""
        out = [f'digraph "{self.name}" {{', "  rankdir=TB;", '  node [fontname="Helvetica"];']
        for n in self.nodes:
            shape = {"input": "invhouse", "param": "box", "const": "note"}.get(n.op, "ellipse")
            label = f"{n.name if n.is_source else n.op}\\n{_aval(n)}"
            out.append(f'  n{n.id} [label="{label}", shape={shape}];')
            for i in n.inputs:
                out.append(f"  n{i.id} -> n{n.id};")
        for k, n in enumerate(self.outputs):
            out.append(f'  out{k} [label="output {k}", shape=house];')
            out.append(f"  n{n.id} -> out{k};")
        out.append("}")
        return "\n".join(out)


def topological(outputs):
    return postorder(list(outputs), lambda n: n.inputs)


def rewrite(graph, replace, mapping=None):
    """Rebuild `graph` bottom-up. replace(node, new_inputs) returns a Node to use instead,
    or None to keep an (input-remapped) copy of the node. `mapping` (id(old node) -> its
    node in the new graph), if given, is filled as it goes, so replace can look up the
    rewritten form of any earlier node."""
    mapping = {} if mapping is None else mapping
    for n in graph.inputs + graph.params:
        mapping[id(n)] = n
    for n in graph.nodes:
        if id(n) in mapping:
            continue
        new_inputs = tuple(mapping[id(i)] for i in n.inputs)
        got = replace(n, new_inputs)
        if got is None:
            if all(a is b for a, b in zip(new_inputs, n.inputs)):
                got = n
            else:
                got = Node(n.op, new_inputs, n.attrs, n.shape, n.dtype, name=n.name,
                           value=n.value)
        mapping[id(n)] = got
    g = Graph(graph.inputs, graph.params, [mapping[id(o)] for o in graph.outputs], graph.name)
    return g


def _aval(n):
    return f"{n.dtype}{list(n.shape)}"


def _fmt(v):
    if isinstance(v, _np.dtype):
        return str(v)
    return repr(v)
