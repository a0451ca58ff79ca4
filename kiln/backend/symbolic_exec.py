"""Running a graph with symbolic dimensions on NumPy: one program for every size.

The symbols' values come from the call's input shapes; an op attribute that mentions a
symbol (a reshape's target, a slice's bounds) is evaluated with them before the op runs.
Buffers are not planned (their sizes vary), each op's eager kernel allocates its result.
Every result's shape is checked against the node's shape evaluated for the call, so a
size the trace got wrong is an error, never a wrong answer.
"""
import threading

import numpy as _np

from .._core.base import KilnError
from .._core.ir import Graph, Node
from .._core.symdim import SymInt, active_env, concrete_value, hinted, mentions_symbolic
from ..ops.registry import REGISTRY


def bind_symbols(graph, inputs):
    """{symbol: size} from the inputs' shapes; a symbol met twice must have one size."""
    bindings = {}
    for node, value in zip(graph.inputs, inputs):
        shape = _np.shape(value)
        if len(shape) != len(node.shape):
            raise KilnError(f"{graph.name}: input {node.name} expected {len(node.shape)} "
                            f"dimensions, got shape {shape}")
        for dim, size in zip(node.shape, shape):
            if isinstance(dim, SymInt) and dim.expr[0] == "sym":
                name = dim.expr[1]
                if bindings.setdefault(name, size) != size:
                    raise KilnError(f"{graph.name}: the dimensions named {name!r} differ "
                                    f"({bindings[name]} and {size})")
    missing = {s for n in graph.nodes for d in n.shape if isinstance(d, SymInt)
               for s in d.symbols()} - set(bindings)
    if missing:
        raise KilnError(f"{graph.name}: the sizes {sorted(missing)} are not sizes of its "
                        "inputs, so a call cannot give them")
    for node, value in zip(graph.inputs, inputs):
        expected = concrete_value(node.shape, bindings)
        if tuple(_np.shape(value)) != tuple(expected):
            raise KilnError(f"{graph.name}: input {node.name} expected shape {node.shape}, "
                            f"got {_np.shape(value)}")
    return bindings


class SymbolicNumpyProgram:
    """A graph with symbolic dimensions, prepared for repeated execution on NumPy."""

    backend = "numpy"

    def __init__(self, graph):
        self.graph = graph
        slot = {}
        self.consts = {}
        steps = []
        for node in graph.inputs + graph.params + graph.nodes:
            if id(node) in slot:
                continue
            slot[id(node)] = len(slot)
            if node.op == "const":
                self.consts[slot[id(node)]] = node.value
            elif not node.is_source:
                if _holds_subgraph(node.attrs) and active_env() is not None:
                    _pin_sizes(node)
                symbolic_attrs = mentions_symbolic(node.attrs)
                steps.append((REGISTRY[node.op].impl, tuple(slot[id(i)] for i in node.inputs),
                              slot[id(node)], node.attrs, symbolic_attrs, node))
        self.n_slots = len(slot)
        self.input_slots = [slot[id(n)] for n in graph.inputs]
        self.param_slots = [slot[id(n)] for n in graph.params]
        self.output_slots = [slot[id(o)] for o in graph.outputs]
        self.steps = steps
        self._per_shape = {}      # input shapes -> _sizes_for's answer
        self._lock = threading.Lock()

    def __call__(self, inputs, params):
        sizes = self._sizes_for(tuple(_np.shape(v) for v in inputs), inputs)
        vals = [None] * self.n_slots
        for s, v in self.consts.items():
            vals[s] = v
        for s, v in zip(self.input_slots, inputs):
            vals[s] = v
        for s, v in zip(self.param_slots, params):
            vals[s] = v
        for (impl, ins, out, _, _, node), (attrs, expected) in zip(self.steps, sizes):
            value = _np.asarray(impl(*[vals[i] for i in ins], **attrs))
            if value.dtype != node.dtype:
                value = value.astype(node.dtype)
            if value.shape != expected:
                raise KilnError(f"{self.graph.name}: {node.op} ({node.name}) computed shape "
                                f"{value.shape}, its symbolic shape {node.shape} is "
                                f"{expected} for this call")
            vals[out] = value
        return [_np.array(vals[s], copy=True) for s in self.output_slots]

    def _sizes_for(self, shapes, inputs):
        """Per step, (attributes, result shape) for these input shapes: worked out once
        per shape and kept (a bounded number of them)."""
        found = self._per_shape.get(shapes)
        if found is None:
            bindings = bind_symbols(self.graph, inputs)
            found = [(concrete_value(attrs, bindings) if symbolic_attrs else attrs,
                      tuple(concrete_value(node.shape, bindings)))
                     for _, _, _, attrs, symbolic_attrs, node in self.steps]
            with self._lock:
                if len(self._per_shape) >= 256:
                    self._per_shape.clear()
                self._per_shape[shapes] = found
        return found

def _holds_subgraph(value):
    if isinstance(value, Graph):
        return True
    if isinstance(value, (tuple, list)):
        return any(_holds_subgraph(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_subgraph(v) for v in value.values())
    return False


def _pin_sizes(node):
    """A control-flow op's subgraphs run at the sizes of this trace: every symbolic size
    of its operands, results and subgraphs takes its traced value (a guard each), until
    subgraphs are traced with symbols themselves."""
    for n in (node,) + node.inputs:
        _pin(n.shape)
    for graph in _subgraphs(node.attrs):
        for n in graph.nodes:
            _pin(n.shape)
            _pin(n.attrs)
            if _holds_subgraph(n.attrs):
                _pin_sizes(n)


def _pin(value):
    if isinstance(value, SymInt):
        value.concrete()
    elif isinstance(value, (tuple, list)):
        for v in value:
            _pin(v)
    elif isinstance(value, dict):
        for v in value.values():
            _pin(v)


def _subgraphs(value):
    if isinstance(value, Graph):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _subgraphs(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _subgraphs(v)


def with_traced_sizes(graph):
    """A copy of a subgraph whose symbolic sizes all hold their traced values (pinned,
    see _pin_sizes) with those values in place, for the NumPy executor's planner."""
    mapping = {}

    def copy(n):
        hit = mapping.get(id(n))
        if hit is None:
            hit = mapping[id(n)] = Node(n.op, [copy(i) for i in n.inputs], hinted(n.attrs),
                                        hinted(n.shape), n.dtype, name=n.name, value=n.value)
        return hit
    for n in graph.nodes:
        copy(n)
    return Graph([copy(n) for n in graph.inputs], [copy(n) for n in graph.params],
                 [copy(n) for n in graph.outputs], graph.name)
