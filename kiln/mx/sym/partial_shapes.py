"""Shape and dtype inference over a Symbol's graph, as MXNet's InferShape pass does it.

Every value (a variable, an op's output) has a shape that may be partly unknown: -1 for a
size, None for a rank (MXNet's encoding; legacy mode's 0 and () are converted where users
give shapes). Sweeps go forward and backward over the nodes until nothing changes. At
each node:
- the op's own partial rule (kiln/mx/ops/partial_shapes.py: Reshape, transpose, slice,
  FullyConnected, the creation ops), or for an elementwise op (MXOp.same_shape) one shape
  for every input and output, fills in what the known sizes say, in both directions;
- the shapes of the weights the op reads (MXOp.param_shapes) follow from its data;
- once every input is known, the node is computed exactly by tracing it alone with kiln's
  own shape rules (an eager-only op runs on zeros), giving its outputs and their dtypes.
So a Reshape's unknown input size is learned from the output a later elemwise_add fixed,
and sym.ones(shape=(-1, -1)) from its reader (`attrs_of` gives its resolved shape).
"""
import numpy as _np

from ..._core import autograd, trace
from ..._core.base import KilnError, SymbolicValueError, where_in_user_code
from ..._core.ir import Node
from ..._core.ndarray import ndarray
from ...npx.io import MAX_TENSOR_ELEMENTS
from ..ops import find
from ..ops.partial_shapes import ShapeConflict, elementwise, known, merge, \
    unknown_as_minus_one
from ..ops.table import SHAPE_RUN
from .symbol import BLOCK_OP, KILN_PREFIX, nodes_of

_PROBES = (1009, 1013)     # sizes standing for an unknown one while a weight shape is read


def _entry(node):
    if node.is_var or node.op.startswith(KILN_PREFIX) or node.grad_of is not None or \
            node.op == BLOCK_OP:
        return None
    return find(node.op)


def _unresolved(node, attrs):
    """Whether a creation node's shape attribute has sizes only inference can give."""
    entry = _entry(node)
    return not node.inputs and "shape" in attrs and entry is not None and \
        entry.partial_shape is not None and not known(unknown_as_minus_one(attrs["shape"]))


def has_unknown_attrs(nodes):
    return any(not n.is_var and _unresolved(n, n.attrs) for n in nodes)


class ShapeInference:
    """The shapes and dtypes of a symbol's values for the given variable shapes; run()
    sweeps to the fixed point. call_node(node, arrays, attrs) computes one node (the
    evaluation's), var_dtype(node) gives a variable's dtype."""

    def __init__(self, heads, shapes, call_node, var_dtype, declared_shape):
        self.nodes = nodes_of(heads)
        self._call_node = call_node
        self.shapes, self.dtypes, self._traced = {}, {}, set()
        for node in self.nodes:
            if node.is_var:
                given = shapes.get(node.name)
                shape = declared_shape(node) if given is None else given
                self.shapes[(id(node), 0)] = shape
                self.dtypes[(id(node), 0)] = var_dtype(node)

    def shape(self, node, k=0):
        return self.shapes.get((id(node), k))

    def dtype(self, node, k=0):
        return self.dtypes.get((id(node), k))

    def run(self):
        ops = [n for n in self.nodes if not n.is_var]
        changed = True
        while changed:
            changed = False
            for node in ops + ops[::-1]:
                changed |= self._visit(node)
        return self

    def attrs_of(self, node):
        """The node's attributes, a creation op's shape given as inferred."""
        if node.inputs or "shape" not in node.attrs:
            return node.attrs
        out = self.shape(node)
        return dict(node.attrs, shape=out) if known(out) else node.attrs

    def _visit(self, node):
        ins = [self.shape(src, k) for src, k in node.inputs]
        outs = [self.shape(node, k) for k in range(node.num_outputs)]
        entry = _entry(node)
        if node.inputs and self._computable(node):
            entry = None      # computed exactly below (kiln's rules also take what
        try:                  # broadcasts, as kiln's elemwise_add does)
            if entry is not None and entry.partial_shape is not None:
                ins, outs = entry.partial_shape(node.attrs, ins, outs)
            elif entry is not None and entry.same_shape:
                ins, outs = elementwise(node.attrs, ins, outs)
            if entry is not None and entry.param_shapes is not None and ins and \
                    ins[0] is not None:
                ins = self._with_params(node, entry, ins)
        except ShapeConflict as exc:
            raise KilnError(f"symbol node {node.name!r} ({node.op}): shapes are inconsistent "
                            f"({exc})" + where_in_user_code()) from None
        changed = self._store(node, ins, outs)
        if id(node) not in self._traced and self._computable(node):
            self._traced.add(id(node))
            outs = self._exact(node)
            changed |= self._store(node, [self.shape(s, k) for s, k in node.inputs],
                                   [tuple(o.shape) for o in outs])
            for k, o in enumerate(outs):
                self.dtypes[(id(node), k)] = o.dtype
        return changed

    def _computable(self, node):
        """Every input known, and a creation op's shape too."""
        if not node.inputs and _unresolved(node, self.attrs_of(node)):
            return False
        return all(known(self.shape(s, k)) and self.dtype(s, k) is not None
                   for s, k in node.inputs)

    def _store(self, node, ins, outs):
        changed = False
        places = [(src, k) for src, k in node.inputs] + \
            [(node, k) for k in range(node.num_outputs)]
        for (src, k), shape in zip(places, list(ins) + list(outs)):
            old = self.shape(src, k)
            try:
                new = merge(old, shape)
            except ShapeConflict as exc:
                raise KilnError(f"symbol node {node.name!r} ({node.op}): shapes are "
                                f"inconsistent ({exc})" + where_in_user_code()) from None
            if new != old:
                self.shapes[(id(src), k)] = new
                changed = True
        return changed

    def _with_params(self, node, entry, ins):
        """The weight shapes the op reads off its data; sizes read from an unknown data
        size are unknown (two probe sizes give different answers for them)."""
        data = ins[0]
        probes = []
        for p in (_PROBES if not known(data) else _PROBES[:1]):
            try:
                shapes = entry.param_shapes(node.attrs, tuple(d if d >= 0 else p
                                                              for d in data))
                probes.append({k: tuple(int(d) for d in v) for k, v in shapes.items()})
            except Exception as exc:  # attributes missing or of the wrong kind
                if not known(data):
                    return ins
                raise KilnError(f"symbol node {node.name!r} ({node.op}): cannot infer its "
                                f"weight shapes from attributes {node.attrs} "
                                f"({type(exc).__name__}: {exc})" + where_in_user_code()) \
                    from None
        learned = {k: tuple(d if all(len(q[k]) == len(v) and q[k][i] == d for q in probes)
                            else -1 for i, d in enumerate(v))
                   for k, v in probes[0].items()}
        names = entry.input_names(node.attrs)
        ins = list(ins)
        for i, name in enumerate(names[:len(ins)]):
            if name in learned:
                ins[i] = merge(ins[i], learned[name])
        return ins

    def _exact(self, node):
        arrays_in = [(self.shape(s, k), self.dtype(s, k)) for s, k in node.inputs]
        attrs = self.attrs_of(node)
        ctx = trace.TraceContext("symbol")
        trace.push(ctx)
        try:
            with autograd._scope(False, False):
                arrays = [ndarray._from_node(Node("input", (), {}, shape, dtype))
                          for shape, dtype in arrays_in]
                out = self._call_node(node, arrays, attrs)
                outs = list(out) if isinstance(out, (tuple, list)) else [out]
                return [o if o._node is None else o._node for o in outs]   # constants: arrays
        except SymbolicValueError:
            pass            # an eager-only op (sort, topk): run it on zeros below
        finally:
            trace.pop()
            for n in ctx.nodes:
                check_size(n.name, n.shape)
        SHAPE_RUN.active = True
        try:
            with autograd._scope(False, False):
                arrays = [ndarray._wrap(_np.zeros(shape, dtype)) for shape, dtype in arrays_in]
                out = self._call_node(node, arrays, attrs)
        finally:
            SHAPE_RUN.active = False
        return list(out) if isinstance(out, (tuple, list)) else [out]


def check_size(name, shape):
    size = 1
    for d in shape:
        if not isinstance(d, (int, _np.integer)) or d < 0:
            raise KilnError(f"{name!r}: bad shape {tuple(shape)[:8]}" + where_in_user_code())
        size *= int(d)
    if size > MAX_TENSOR_ELEMENTS:
        raise KilnError(f"{name!r}: shape {tuple(shape)[:8]} has more than "
                        f"{MAX_TENSOR_ELEMENTS} elements (kiln's cap)" + where_in_user_code())
