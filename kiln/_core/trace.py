"""The tracing context: while it is active, ops on symbolic arrays add graph nodes.

The stack of active traces is per thread: a thread tracing a model does not make another
thread's ops (its eager calls of the same model, say) land in its graph. So is the set of
hybridized objects whose own Python code hybridize is running on a thread (body_of).
"""
import threading

import numpy as _np

from .base import KilnError
from .ir import Node
from . import alias_paths, layouts


class ParamEntry:
    __slots__ = ("param", "array", "node", "leaf")

    def __init__(self, param, array, node, leaf):
        self.param, self.array, self.node, self.leaf = param, array, node, leaf


class TraceContext:
    def __init__(self, name="graph", differentiate=False):
        self.name = name
        self.differentiate = differentiate  # parameters become autograd leaves
        self.nodes = []
        self._consts = {}     # id(numpy value) -> (node, value): one node per captured array
        self.params = {}      # id(Parameter) -> ParamEntry
        self.pre_call = []    # functions to run before every call of the compiled program
        # the precision pipelines (mixed precision, int8) of the hybridized blocks called
        # inside this trace: a compiled training step runs its net's over the whole step
        self.precisions = []

    def add(self, node):
        self.nodes.append(node)
        return node

    def param_array(self, param, value):
        """The symbolic array standing for a Parameter in this trace (one node per parameter).

        The same array object is returned on every call, so an in-place write to it inside
        the traced code (BatchNorm's running statistics) is visible to later reads and is
        found after tracing as a state update.
        """
        from .ndarray import ndarray
        hit = self.params.get(id(param))
        if hit is None:
            node = self.add(Node("param", (), {}, value.shape, value.dtype,
                                 name=getattr(param, "name", None)))
            array = ndarray._from_node(node)
            leaf = None
            # a parameter with a gradient is a leaf, so a backward() traced inside the
            # function (a whole training step) reaches it
            if getattr(value, "_tape", None) is not None:
                from .autograd import Leaf
                leaf = array._tape = Leaf(array)
                array._grad_req = "write"
            hit = self.params[id(param)] = ParamEntry(param, array, node, leaf)
        return hit.array

    def symbol_input(self, array):
        """The node a symbolic operand contributes (a control-flow subtrace captures outer
        symbols here; see kiln/graph/subgraph.py)."""
        return array._node

    def constant(self, value):
        """The node of an eager array the trace reads. The node keeps a read-only copy, so
        a later in-place write into the array (eager code in the traced function) cannot
        change what was read before it; an array read again after such a write gets a new
        node."""
        hit = self._consts.get(id(value))
        if hit is not None and _np.array_equal(hit[2], value, equal_nan=hit[2].dtype.kind in "fc"):
            return hit[0]
        snapshot = _np.array(value, copy=True)
        snapshot.setflags(write=False)
        node = self.add(Node("const", (), {}, value.shape, value.dtype, value=snapshot))
        # keep value alive so its id stays unique
        self._consts[id(value)] = (node, value, snapshot)
        return node


class _ThreadTraces(threading.local):
    """This thread's tracing state. kiln_fastcall's BlockCall reads both attributes on every
    hybridized block call (backend/c/csrc/fastdispatch.c)."""

    def __init__(self):
        self.stack = []       # active trace contexts, innermost last; None: suspended
        self.bodies = set()   # id() of the hybridized objects in body_of on this thread


_local = _ThreadTraces()


def current():
    stack = _local.stack
    return stack[-1] if stack else None


def active():
    """Is this thread inside a trace (even one suspended for eager work)?"""
    return bool(_local.stack)


class suspended:
    """Run eagerly inside a trace (parameter initialization, for instance)."""

    def __enter__(self):
        _local.stack.append(None)

    def __exit__(self, *exc):
        _local.stack.pop()


def push(ctx):
    _local.stack.append(ctx)


def pop():
    stack = _local.stack
    ctx = stack.pop()
    if not stack:        # the outermost trace ended: its path-dependent records with it
        alias_paths.clear()
        layouts.clear()
    return ctx


class body_of:
    """While hybridize runs `obj`'s own Python code on this thread (tracing it, or running
    it eagerly where it could not be compiled), calls of obj on this thread go to that
    code rather than back to its compiled programs. Other threads keep calling those."""
    __slots__ = ("key", "entered")

    def __init__(self, obj):
        self.key = id(obj)
        self.entered = False

    def __enter__(self):
        bodies = _local.bodies
        self.entered = self.key not in bodies
        bodies.add(self.key)

    def __exit__(self, *exc):
        if self.entered:
            _local.bodies.discard(self.key)


def in_body_of(obj):
    """Is hybridize running obj's own code on this thread (see body_of)?"""
    bodies = _local.bodies
    return bool(bodies) and id(obj) in bodies


def add_node(prim, arrays, attrs, shape, dtype):
    ctx = current()
    if ctx is None:
        raise KilnError(f"{prim.name}: a symbolic array was used outside of the hybridize "
                        "trace that made it (was a traced value stored and reused later?)")
    inputs = []
    for a in arrays:
        if a._node is not None:
            inputs.append(ctx.symbol_input(a))
        else:
            inputs.append(ctx.constant(a._data))
    return ctx.add(Node(prim.name, inputs, attrs, shape, dtype))
