"""The graph IR: nodes with an op name, inputs, typed attributes, shape and dtype."""
import itertools

import numpy as _np

# ops that are not computations: graph inputs, parameters and constants
SOURCE_OPS = ("input", "param", "const")

_ids = itertools.count()


class Node:
    __slots__ = ("op", "inputs", "attrs", "shape", "dtype", "name", "value", "id", "__weakref__")

    def __init__(self, op, inputs, attrs, shape, dtype, name=None, value=None):
        self.op = op                    # a registry primitive name, or one of SOURCE_OPS
        self.inputs = tuple(inputs)
        self.attrs = dict(attrs)
        self.shape = tuple(int(d) for d in shape)
        self.dtype = _np.dtype(dtype)
        self.value = value              # the NumPy value of a const node
        self.id = next(_ids)
        self.name = name or f"{op}{self.id}"

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

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
