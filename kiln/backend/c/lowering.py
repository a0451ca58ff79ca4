"""How the C backend lowers a primitive: the lowering objects backend modules register into
the primitive (`prim.lowerings["c"]`), and the one lookup codegen makes per node.

Each module that writes one kind of C registers the ops it lowers when it is imported
(kiln/backend/c/__init__.py imports them all):
  elementwise.py, special_ops.py  Elementwise  one C expression per element, fused with its
                                               elementwise neighbours into one loop nest
  kernels.py                      Kernel       reductions, data movement, gathers, windows;
                                               a transpose only matmuls read is a view
                                  VIEW         reshape: no code, it reads its input's storage
  slice_views.py                  Kernel       slice: a copy, or a window (a pointer into
                                               its input) when its items lie contiguously
                                  MATMUL       a gemm (codegen writes it with what it absorbs)
  batchnorm.py, collective.py     Kernel
  heavy.py, lowp.py, int8.py      Heavy        a call into the oneDNN shim
  control.py, scan.py             Control      subgraphs as static functions
  codegen.py                      DRAWN        random ops, drawn by Python before each call

A lowering names the kind of step codegen makes of a node (steps.Step.kind) through
`step_for(node, users, outputs)`, None when this node (its dtypes, its attributes, the
machine) cannot be lowered after all. What else it carries depends on that kind:
  Elementwise.expression(node, args)   the C expression of one element
  Kernel.code(node, ptr, em)           C statements
  Heavy.emit(em, node, storage, weight_ok)   C statements
  Control.group(em, node, members)     the object writing one control-flow group's C
"""
import numpy as _np

from ...ops.registry import REGISTRY
from ...ops.subgraph import CONTROL_OPS
from .loops import ctype


class NotLowerable(Exception):
    """The graph uses something the C backend does not generate code for."""


def register(ops, lowering):
    """Make `lowering` the C lowering of each primitive named in `ops`."""
    for name in ops:
        REGISTRY[name].lowerings["c"] = lowering


def lowering_of(node):
    """The C lowering of node's primitive, or None when the backend has none."""
    return REGISTRY[node.op].lowerings.get("c")


class Lowering:
    """A lowering whose node always makes one kind of step, and whose code codegen writes
    itself (VIEW, MATMUL, DRAWN)."""

    def __init__(self, step):
        self.step = step

    def step_for(self, node, users, outputs):
        return self.step


VIEW = Lowering("alias")
MATMUL = Lowering("matmul")
DRAWN = Lowering("random")


class Args:
    """What an elementwise rule reads: the op, its argument expressions (each in its own C
    type), their dtypes, the result's dtype and the node's attributes; and, derived, the
    result's C type T, its float suffix f ("f" for float32), whether it is a float, the
    first two arguments cast to T (a, b), and per argument the value of a one-element
    constant, else None (consts: a rule may take a cheaper exact form for it)."""

    def __init__(self, op, args, in_dtypes, out_dtype, attrs, consts=()):
        self.op, self.args, self.in_dtypes, self.out_dtype, self.attrs = (
            op, args, in_dtypes, out_dtype, attrs)
        self.consts = tuple(consts) or (None,) * len(args)
        self.T = ctype(out_dtype)
        self.f = "f" if _np.dtype(out_dtype) == _np.float32 else ""
        self.float = _np.dtype(out_dtype).kind == "f"
        self.a = f"(({self.T}){args[0]})" if args else None
        self.b = f"(({self.T}){args[1]})" if len(args) > 1 else None


def _scalar_const(node):
    if node.op == "const" and node.size == 1:
        return float(_np.asarray(node.value).reshape(-1)[0])
    return None


class Elementwise:
    """rule(Args) -> the C expression of one element, or None when the op has none for
    these dtypes."""

    def __init__(self, rule):
        self.rule = rule

    def expression(self, node, args):
        return self.rule(Args(node.op, args, [i.dtype for i in node.inputs], node.dtype,
                              node.attrs, [_scalar_const(i) for i in node.inputs]))

    def lowers(self, node):
        """Has the op an expression for node's dtypes?"""
        return self.expression(node, [f"x{k}" for k in range(len(node.inputs))]) is not None

    def step_for(self, node, users, outputs):
        return "fused" if self.lowers(node) else None


def elementwise_rule(*ops):
    """Decorator: register the function as the expression rule of `ops`."""
    def wrap(rule):
        for name in ops:
            if not REGISTRY[name].elementwise:
                raise ValueError(f"{name} is not an elementwise primitive")
        register(ops, Elementwise(rule))
        return rule
    return wrap


class Kernel:
    """C statements of its own: emit(node, ptr), or emit(node, ptr, em) with_emitter (for
    table slots or buffers of its own). view_when(node, users, outputs): when true, the
    node costs nothing, its readers read its input in place: an 'alias' step (the input's
    own pointer), or with view_kind='window' a 'window' step (a pointer into the input,
    window_offset(node) elements on: slice_views.py)."""

    def __init__(self, emit, with_emitter=False, view_when=None, view_kind="alias"):
        self.emit, self.with_emitter, self.view_when = emit, with_emitter, view_when
        self.view_kind = view_kind

    def step_for(self, node, users, outputs):
        if self.view_when is not None and self.view_when(node, users, outputs):
            return self.view_kind
        return "op"

    def code(self, node, ptr, em):
        return self.emit(node, ptr, em) if self.with_emitter else self.emit(node, ptr)


def register_kernels(table, with_emitter=False):
    """Register each emit function of {op name: emit} as that op's Kernel."""
    for name, emit in table.items():
        register((name,), Kernel(emit, with_emitter))


class Heavy:
    """A call into the oneDNN shim, for the nodes accepts(node) takes."""

    def __init__(self, emit, accepts):
        self.emit, self.accepts = emit, accepts

    def step_for(self, node, users, outputs):
        return "heavy" if self.accepts(node) else None


class Control:
    """An op with subgraphs. Its nodes with one group.key(node) (the same operands and
    subgraphs) form one group (ControlFlow), whose C group(em, node, members)
    writes, once."""

    def __init__(self, group):
        self.group = group

    def step_for(self, node, users, outputs):
        return "control"


class ControlFlow:
    """The control-flow groups of one emitted graph. The IR has one node per result of a
    construct; the nodes with one group key (same operands and subgraphs) form one group,
    whose C (its Control lowering's group, control.py and scan.py) runs once, at its first
    node in the schedule."""

    def __init__(self, em, graph):
        self.em = em
        self.members = {}
        for n in graph.nodes:
            if n.op in CONTROL_OPS:
                self.members.setdefault(_group_key(n), []).append(n)
        self.groups = {}
        self.emitted = set()

    def _group(self, node):
        key = _group_key(node)
        g = self.groups.get(key)
        if g is None:
            make = lowering_of(node).group
            g = self.groups[key] = make(self.em, node, self.members[key])
        return g

    def output_slot(self, node):
        return self._group(node).output_slot(node)

    def emit(self, node, storage):
        key = _group_key(node)
        if key in self.emitted:
            return ""
        self.emitted.add(key)
        return "\n".join(["  int rc;"] + self._group(node).code(storage))


def _group_key(node):
    return lowering_of(node).group.key(node)
