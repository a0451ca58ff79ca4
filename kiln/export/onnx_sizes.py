"""Symbolic sizes in an ONNX graph: dim_param names, and size tensors computed in-graph.

A kiln graph with symbolic sizes (an export with a dynamic batch or length) gives ONNX
inputs and outputs named dimensions (`dim_param`: "batch"). A size-valued attribute (a
reshape's target, an Expand's shape, a slice's bound) becomes an int64 tensor that the
ONNX graph computes from its inputs' shapes: Shape + Gather for each symbol, then
Add/Sub/Mul/Div/Mod nodes built from the size's expression, so the file serves every size
as kiln's program does. Where ONNX's own codes say exactly the same thing they are used
instead: a Reshape target of 0 copies the input's size at that position, -1 the one size
left over (only beside fixed nonzero sizes), an Expand target of 1 keeps the input's size.
"""
import numpy as _np

from .._core.symdim import SymInt, _nonnegative


def dim_param(dim):
    """An ONNX value_info dimension: an int, a symbol's name, or None (an expression: ONNX
    names no such dimension)."""
    if isinstance(dim, SymInt):
        return dim.expr[1] if dim.expr[0] == "sym" else None
    return int(dim)


def _ints(values):
    return _np.array([int(v) for v in values], _np.int64)


class SizeTensors:
    """The int64 tensors of one ONNX graph's symbolic sizes (made once each)."""

    def __init__(self, em, inputs, names):
        self.em = em
        self.sources = {}            # symbol -> (ONNX input name, axis)
        for node in inputs:
            for axis, d in enumerate(node.shape):
                if isinstance(d, SymInt) and d.expr[0] == "sym":
                    self.sources.setdefault(d.expr[1], (names[id(node)], axis))
        self._shapes = {}            # ONNX input name -> its Shape
        self._made = {}              # expression -> 1-element int64 tensor

    def scalar(self, expr):
        """A 1-element int64 tensor holding the size `expr` (a symdim expression tree)."""
        found = self._made.get(expr)
        if found is not None:
            return found
        em, kind = self.em, expr[0]
        if kind == "const":
            found = em.const(_ints([expr[1]]))
        elif kind == "sym":
            source, axis = self.sources[expr[1]]
            shape = self._shapes.get(source)
            if shape is None:
                shape = self._shapes[source] = em.op("Shape", [source])
            found = em.op("Gather", [shape, em.const(_ints([axis]))], axis=0)
        else:
            a, b = self.scalar(expr[1]), self.scalar(expr[2])
            if kind == "//":
                found = self._floor_divide(expr, a, b)
            elif kind == "%":
                found = em.op("Mod", [a, b], fmod=0)    # Python's sign, like kiln's sizes
            else:
                found = em.op({"+": "Add", "-": "Sub", "*": "Mul"}[kind], [a, b])
        self._made[expr] = found
        return found

    def _floor_divide(self, expr, a, b):
        em = self.em
        q = em.op("Div", [a, b])            # ONNX truncates toward zero
        if _nonnegative(expr[1]) and _nonnegative(expr[2]):
            return q
        # floor: one less where the remainder is nonzero and the signs differ
        r = em.op("Sub", [a, em.op("Mul", [q, b])])
        zero = em.const(_ints([0]))
        off = em.op("And", [em.op("Not", [em.op("Equal", [r, zero])]),
                            em.op("Xor", [em.op("Less", [r, zero]), em.op("Less", [b, zero])])])
        return em.op("Sub", [q, em.op("Cast", [off], to=em.onnx_type(_np.int64))])

    def vector(self, values):
        """A 1-D int64 tensor of sizes (ints, SymInts, or ONNX codes as ints)."""
        if not any(isinstance(v, SymInt) for v in values):
            return self.em.const(_ints(values))
        pieces, fixed = [], []
        for v in values:
            if isinstance(v, SymInt):
                if fixed:
                    pieces.append(self.em.const(_ints(fixed)))
                    fixed = []
                pieces.append(self.scalar(v.expr))
            else:
                fixed.append(v)
        if fixed:
            pieces.append(self.em.const(_ints(fixed)))
        return self.em.op("Concat", pieces, axis=0) if len(pieces) > 1 else pieces[0]


def int64s(em, values):
    """1-D int64 tensor of `values`: a constant, or computed in-graph when symbolic."""
    if not any(isinstance(v, SymInt) for v in values):
        return em.const(_ints(values))
    return em.sizes.vector(values)


def _alike(a, b):
    if isinstance(a, SymInt) or isinstance(b, SymInt):
        return isinstance(a, SymInt) and isinstance(b, SymInt) and a.expr == b.expr
    return a == b


def reshape_target(em, in_shape, out_shape):
    """Reshape's shape input for in_shape -> out_shape (in_shape None: unknown)."""
    if not any(isinstance(v, SymInt) for v in out_shape):
        return em.const(_ints(out_shape))
    if any(not isinstance(v, SymInt) and v == 0 for v in out_shape):
        return em.sizes.vector(out_shape)      # a real 0 would read as "copy": no codes
    target = [0 if in_shape is not None and j < len(in_shape) and isinstance(d, SymInt)
              and _alike(d, in_shape[j]) else d for j, d in enumerate(out_shape)]
    left = [j for j, d in enumerate(target) if isinstance(d, SymInt)]
    others_fixed = all(isinstance(d, int) and d > 0 for j, d in enumerate(out_shape)
                       if j not in left)
    if len(left) == 1 and others_fixed:
        target[left[0]] = -1
    return em.sizes.vector(target)


def expand_target(em, in_shape, out_shape):
    """Expand's shape input: 1 where the (right-aligned) input already has the size."""
    if not any(isinstance(v, SymInt) for v in out_shape):
        return em.const(_ints(out_shape))
    lead = len(out_shape) - len(in_shape)
    target = [1 if j >= lead and isinstance(d, SymInt) and _alike(d, in_shape[j - lead])
              else d for j, d in enumerate(out_shape)]
    return em.sizes.vector(target)
