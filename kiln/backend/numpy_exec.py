"""The NumPy executor: runs an optimized graph with preallocated buffers.

Planning happens once per graph: every computed node gets a fixed view into a planned
buffer, and its kernel writes there with `out=`. A call then fills the input and parameter
slots and runs one flat loop of prepared steps: no autograd bookkeeping, no shape rules,
no dispatch.

It is also how control-flow ops evaluate their subgraphs eagerly: run_subgraph is
registered into kiln/ops/subgraph.py when this module is imported.
"""
import functools
import threading

import numpy as _np

from .._core.ir import Graph
from .._core.bfloat16 import any_bfloat16, run_in_float32
from ..ops import subgraph
from ..ops.registry import REGISTRY
from ..graph.passes import plan_memory, run_pipeline
from .._core.symdim import graph_is_symbolic
from .symbolic_exec import with_traced_sizes

# ops computed as NumPy views of their first input: free, and never written through
VIEW_OPS = frozenset(("reshape", "transpose", "broadcast_to", "slice"))

_UFUNCS = {
    "negative": _np.negative, "exp": _np.exp, "log": _np.log, "sqrt": _np.sqrt,
    "abs": _np.abs, "sign": _np.sign, "sin": _np.sin, "cos": _np.cos, "tanh": _np.tanh,
    "arcsin": _np.arcsin, "arccos": _np.arccos, "arctan": _np.arctan,
    "floor": _np.floor, "ceil": _np.ceil, "round": _np.rint, "logical_not": _np.logical_not,
    "add": _np.add, "subtract": _np.subtract, "multiply": _np.multiply,
    "maximum": _np.maximum, "minimum": _np.minimum, "equal": _np.equal,
    "not_equal": _np.not_equal, "less": _np.less, "less_equal": _np.less_equal,
    "greater": _np.greater, "greater_equal": _np.greater_equal,
    "logical_and": _np.logical_and, "logical_or": _np.logical_or,
    "logical_xor": _np.logical_xor,
}


def _relu(x, out):
    _np.maximum(x, 0, out=out)


def _sigmoid(x, out):
    # 1 / (1 + exp(-x)); exp overflow gives inf and then exactly 0, the right limit
    with _np.errstate(over="ignore"):
        _np.negative(x, out=out)
        _np.exp(out, out=out)
    out += 1
    _np.reciprocal(out, out=out)


def _divide(a, b, out):
    with _np.errstate(divide="ignore", invalid="ignore"):
        _np.true_divide(a, b, out=out)


def _matmul(a, b, out):
    _np.matmul(a, b, out=out)


def _copy_into(x, out):
    _np.copyto(out, x, casting="unsafe")


def _cast(x, out):
    _np.copyto(out, x, casting="unsafe")


def _reduction(fn):
    def factory(axis=None, keepdims=False):
        def run(x, out):
            fn(x, axis=axis, keepdims=keepdims, out=out)
        return run
    return factory


_FIXED = {"relu": _relu, "sigmoid": _sigmoid, "divide": _divide, "matmul": _matmul,
          "cast": lambda x, out: _cast(x, out)}
_FACTORIES = {"sum": _reduction(_np.sum), "max": _reduction(_np.max),
              "min": _reduction(_np.min), "prod": _reduction(_np.prod)}


_FLOAT_MATH = frozenset(("exp", "log", "sqrt", "sin", "cos", "tanh", "arcsin", "arccos",
                         "arctan", "floor", "ceil", "round"))


def out_kernel(node):
    """A function (*inputs, out) that writes node's value into `out`, or None."""
    if any_bfloat16(node.inputs) or any_bfloat16((node,)):
        return None     # computed in float32 and rounded once, as eagerly (_alloc_step)
    kernel = _out_kernel(node)
    if kernel is not None and REGISTRY[node.op].elementwise and not _accepts(kernel, node):
        return None
    return kernel


def _accepts(kernel, node):
    """Whether the out-kernel runs on the node's input dtypes (sigmoid's -x has no bool
    loop, say): elementwise kernels are tried on one element; else the eager kernel
    computes that node, as it does eagerly."""
    try:
        kernel(*[_np.zeros(1, i.dtype) for i in node.inputs], out=_np.empty(1, node.dtype))
    except (TypeError, ValueError):
        return False
    return True


def _out_kernel(node):
    op = node.op
    if op == "round" and node.dtype.kind != "f":
        return _copy_into        # rounding an integer changes nothing
    if op in _FLOAT_MATH and node.dtype.kind == "f":
        uf = _UFUNCS[op]
        # compute in the output's precision: NumPy would pick float16 for int8/uint8 inputs
        return lambda *xs, out: uf(*xs, out=out, dtype=out.dtype)
    if REGISTRY[op].elementwise and not _fits_out(REGISTRY[op].impl, node):
        return None
    if op in _UFUNCS:
        return _UFUNCS[op]
    if op in _FIXED:
        return _FIXED[op]
    if op in _FACTORIES:
        return _FACTORIES[op](**node.attrs)
    return None


def _fits_out(fn, node):
    """Whether the eager kernel's natural result for the node's input dtypes may be
    written into an `out` of the node's dtype (kiln's rules sometimes narrow, as for
    relu(bool) -> bool; then the result is cast like eager's, in a step of its own)."""
    try:
        natural = _np.asarray(fn(*[_np.zeros(1, i.dtype) for i in node.inputs])).dtype
    except (TypeError, ValueError):
        return False
    return natural == node.dtype or _np.can_cast(natural, node.dtype, "same_kind")


def is_view(node):
    return node.op in VIEW_OPS


def writes_into(node):
    if node.size == 0:
        return False
    return out_kernel(node) is not None


class NumpyProgram:
    """A graph prepared for repeated execution on NumPy."""

    backend = "numpy"

    def __init__(self, graph):
        self.graph = graph
        plan = plan_memory(graph, is_view, writes_into)
        graph.memory_plan = plan
        self.buffers = [_np.empty(max(c, 1), _np.uint8) for c in plan.capacities]
        slot = {}
        vals = []

        def new_slot(node, value=None):
            slot[id(node)] = len(vals)
            vals.append(value)
            return slot[id(node)]

        self.input_slots = [new_slot(n) for n in graph.inputs]
        self.param_slots = [new_slot(n) for n in graph.params]
        steps = []
        for node in graph.nodes:
            if id(node) in slot:
                continue
            if node.op == "const":
                new_slot(node, node.value)
                continue
            if node.op in ("input", "param"):
                raise RuntimeError(f"graph node {node.name} is not among the graph's "
                                   "inputs or parameters")
            ins = tuple(slot[id(i)] for i in node.inputs)
            s = new_slot(node)
            buf = plan.buffer_of.get(id(node))
            if is_view(node):
                steps.append(_alloc_step(vals, REGISTRY[node.op].impl, ins, s, node.attrs))
            elif buf is not None:
                nbytes = node.size * node.dtype.itemsize
                view = self.buffers[buf][:nbytes].view(node.dtype).reshape(node.shape)
                vals[s] = view
                steps.append(_out_step(vals, out_kernel(node), ins, view))
            else:
                impl = REGISTRY[node.op].impl
                if any_bfloat16(node.inputs):
                    impl = functools.partial(_in_float32, impl)
                steps.append(_alloc_step(vals, impl, ins, s, node.attrs, node.dtype))
        self.vals = vals
        self.steps = steps
        self._lock = threading.Lock()
        self.output_slots = [slot[id(o)] for o in graph.outputs]

    def __call__(self, inputs, params):
        # the buffers are shared by all calls: one call at a time
        with self._lock:
            return self._call(inputs, params)

    def _call(self, inputs, params):
        from .dnnl import derived
        vals = self.vals
        for s, v in zip(self.input_slots, inputs):
            vals[s] = v
        for s, v in zip(self.param_slots, params):
            vals[s] = v
        # the kernels' inputs include buffers rewritten on every call: what oneDNN derives
        # from an array (derived.py) must not be kept with them
        with derived.suspended():
            for step in self.steps:
                step()
        return [_np.array(vals[s], copy=True) for s in self.output_slots]


def _out_step(vals, kernel, ins, out):
    if len(ins) == 1:
        (a,) = ins
        return lambda: kernel(vals[a], out=out)
    if len(ins) == 2:
        a, b = ins
        return lambda: kernel(vals[a], vals[b], out=out)
    return lambda: kernel(*[vals[i] for i in ins], out=out)


def _alloc_step(vals, impl, ins, s, attrs, dtype=None):
    def step():
        value = impl(*[vals[i] for i in ins], **attrs)
        if dtype is not None and value.dtype != dtype:
            value = _np.asarray(value).astype(dtype)
        vals[s] = value
    return step


def _in_float32(impl, *datas, **attrs):
    return run_in_float32(impl, datas, attrs)


def run_subgraph(graph, values, index=None):
    """Evaluate a subgraph on NumPy values: all outputs, or only output `index` (pruned);
    one program per (subgraph, index), cached on the subgraph."""
    cache = subgraph.derived_cache(graph)
    key = ("program", index)
    hit = cache.get(key)
    if hit is None:
        outputs = graph.outputs if index is None else [graph.outputs[index]]
        pruned = Graph(graph.inputs, [], outputs, graph.name)
        if graph_is_symbolic(pruned):
            # traced with symbolic sizes that the op using it pinned (symbolic_exec.py)
            pruned = with_traced_sizes(pruned)
        program = NumpyProgram(run_pipeline("generic", pruned))
        # a program reuses its buffers: one caller at a time (threads share compiled code)
        hit = cache.setdefault(key, (program, threading.Lock()))
    program, lock = hit
    with lock:
        results = program(list(values), [])
    return results if index is None else results[0]


subgraph.set_runner(run_subgraph)
