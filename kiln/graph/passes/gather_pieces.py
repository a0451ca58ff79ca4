"""Slice gradients gathered: a sum of pieces, each placed into zeros, becomes one array.

The gradient of a slice of x is the slice's gradient placed into zeros of x's shape
(slice_assign onto zeros). A value used as pieces (an LSTM's four gates are four slices of
one matmul, attention heads are slices of one projection) gets back a sum of such
placements: each fills a whole array of zeros, and the sum reads them all. When the pieces
lie side by side along one axis without overlapping, that sum is their concatenation (zeros
where no piece lies), added to the sum's other terms: one write of every element instead of
a zero fill, a copy and an add per piece. Values are unchanged: the terms a placement adds
outside its piece are exact zeros.
"""
import numpy as _np

from ..._core.ir import Graph, Node
from .fold import MAX_FOLDED_ELEMENTS
from ..._core.symdim import difference, has_symbolic, provably


def _is_zeros(node):
    if node.op == "const":
        return node.size > 0 and not _np.any(node.value)
    return node.op == "full" and node.attrs.get("value") == 0


def _placement_axis(node, shape, dtype):
    """The axis along which `node` places a whole-width piece into zeros, else None."""
    if (node.op != "slice_assign" or tuple(node.shape) != shape or node.dtype != dtype
            or not _is_zeros(node.inputs[0])):
        return None
    a = node.attrs
    if any(s != 1 for s in a["step"]):
        return None
    partial = [k for k, (b, e, d) in enumerate(zip(a["begin"], a["end"], shape))
               if (b, e) != (0, d)]
    if len(partial) != 1:
        return None
    k = partial[0]
    b, e = a["begin"][k], a["end"][k]
    value = node.inputs[1]
    if not (0 <= b < e <= shape[k]) or value.dtype != dtype or \
            tuple(value.shape) != shape[:k] + (e - b,) + shape[k + 1:]:
        return None
    return k


def _gathered(root, leaves):
    """The sum of `leaves` (all of root's shape and dtype) with its placements gathered into
    one concatenation, or None when fewer than two placements share an axis."""
    shape, dtype = tuple(root.shape), root.dtype
    by_axis = {}
    for leaf in leaves:
        k = _placement_axis(leaf, shape, dtype)
        if k is not None:
            by_axis.setdefault(k, []).append(leaf)
    if not by_axis:
        return None
    axis, placed = max(by_axis.items(), key=lambda kv: len(kv[1]))
    if len(placed) < 2:
        return None
    placed.sort(key=lambda p: p.attrs["begin"][axis])
    pieces, at = [], 0
    for p in placed:
        begin, end = p.attrs["begin"][axis], p.attrs["end"][axis]
        if begin < at:
            return None                       # overlapping pieces add up: leave the sum
        if begin > at:
            pieces.append(_zeros(shape, axis, begin - at, dtype))
        pieces.append(p.inputs[1])
        at = end
    if at < shape[axis]:
        pieces.append(_zeros(shape, axis, shape[axis] - at, dtype))
    total = Node("concatenate", tuple(pieces), {"axis": axis}, shape, dtype)
    for leaf in leaves:
        if not any(leaf is p for p in placed):
            total = Node("add", (leaf, total), {}, shape, dtype)
    return total


def _zeros(shape, axis, width, dtype):
    gap = shape[:axis] + (difference(width, 0),) + shape[axis + 1:]
    # filled when the program runs, not baked in: large, or of a run-time size
    if has_symbolic(gap) or _np.prod(gap) > MAX_FOLDED_ELEMENTS:
        return Node("full", (), {"shape": gap, "value": 0, "dtype": dtype}, gap, dtype)
    value = _np.zeros(gap, dtype)
    value.setflags(write=False)
    return Node("const", (), {}, gap, dtype, value=value)


def gather_pieces(graph):
    users = {}
    for n in graph.nodes:
        for i in n.inputs:
            users.setdefault(id(i), []).append(n)
    for o in graph.outputs:
        users.setdefault(id(o), []).append(None)

    def inner(n):
        """An add whose only use is a same-shaped add: part of that add's sum."""
        use = users.get(id(n), [])
        return (n.op == "add" and len(use) == 1 and use[0] is not None and use[0].op == "add"
                and use[0].shape == n.shape and use[0].dtype == n.dtype)

    def leaves(n):
        out = []
        for i in n.inputs:
            out += leaves(i) if inner(i) else [i]
        return out

    mapping = {id(n): n for n in graph.inputs + graph.params}
    for n in graph.nodes:
        if id(n) in mapping:
            continue
        got = None
        if n.op == "add" and not inner(n):
            terms = leaves(n)
            # sizes equal at every call (a term broadcast at some sizes only is left as is)
            if all(len(t.shape) == len(n.shape) and t.dtype == n.dtype and
                   all(provably(a, "==", b) for a, b in zip(t.shape, n.shape)) for t in terms):
                got = _gathered(n, [mapping[id(t)] for t in terms])
        if got is None:
            new_inputs = tuple(mapping[id(i)] for i in n.inputs)
            got = n if all(a is b for a, b in zip(new_inputs, n.inputs)) else Node(
                n.op, new_inputs, n.attrs, n.shape, n.dtype, name=n.name, value=n.value)
        mapping[id(n)] = got
    return Graph(graph.inputs, graph.params, [mapping[id(o)] for o in graph.outputs],
                 graph.name)
