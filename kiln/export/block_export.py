"""HybridBlock.export: the block's inference graph as a symbol file plus a params file.

What is exported is the *raw traced* graph in predict mode (through the block's precision
pipeline, for a block converted by kiln.contrib.amp or quantization) (outputs only, so state
updates and dropout's training branch are gone), not the optimized one: it holds nothing
but registry primitives exactly as the user's forward produced them, it is stable across
changes to kiln's optimization passes, and every reader optimizes it again anyway
(SymbolBlock when hybridized, build-c before generating C). The ONNX exporter's pattern
matching (windows -> reshape -> matmul = Conv) also relies on this unrewritten form.
"""
import numpy as _np

from .._version import __version__
from .._core.base import KilnError, where_in_user_code
from .._core.ir import Graph
from ..ops.registry import REGISTRY
from .params import params_path, write_params
from .symbol import graph_to_json


def _latest_signature(block):
    cached = block.__dict__.get("_kiln_cached")
    if not getattr(block, "_hybrid_active", False) or cached is None or not cached.entries:
        raise KilnError(f"export: {type(block).__name__} must be hybridized and called once "
                        "on an example input before export (net.hybridize(); net(x); "
                        f"net.export(path)), so kiln knows the input shapes"
                        f"{where_in_user_code()}")
    structure, avals, _, _ = list(cached.entries)[-1]
    return cached, structure, avals


def _as_args(block, example_inputs):
    """Hybridize (if needed) and run the block once on the examples, so shapes are known."""
    from .._core import autograd
    from ..hybrid.cached import cached_function_of
    from .._core.ndarray import ndarray, as_array
    args = tuple(a if isinstance(a, ndarray) else as_array(a) for a in example_inputs)
    if not getattr(block, "_hybrid_active", False):
        block.hybridize()
    with autograd.predict_mode():
        block(*args)
    return cached_function_of(block), args


def inference_graph(block, example_inputs=None):
    """(Graph of the predict-mode forward, {id(param node): structural name}, Capture).

    Without example inputs, the signature of the block's latest hybridized call is used."""
    from ..graph.tree import unflatten
    from .._core.ndarray import ndarray
    if example_inputs is not None:
        cached, args = _as_args(block, example_inputs)
    else:
        cached, structure, avals = _latest_signature(block)
        examples = [ndarray._wrap(_np.zeros(shape, dtype)) for shape, dtype in avals]
        args = unflatten(structure, examples)
    entry, _ = cached.entry_for(args, training=False)
    if entry.symbolic is not None:
        # the symbol file records fixed sizes so far: trace these sizes on their own
        from .._core import trace
        with trace.body_of(block):      # the block's own code, not its programs
            entry, _ = _specialized(block, cached).entry_for(args, training=False)
    cap = entry.cap
    if cap.written_args:
        raise KilnError(f"export: {type(block).__name__}.forward updates its input(s) "
                        f"{list(cap.written_args)} in place, which an exported model (outputs "
                        "only) cannot do; compute a new array instead of writing the input")
    raw = cap.graph
    graph = Graph(raw.inputs[:cap.n_inputs], raw.params, raw.outputs[:cap.n_outputs],
                  raw.name)
    # a mixed-precision or quantized block exports its low-precision graph (int8 weights
    # and scales become constants of the graph, in the params file)
    graph = cached.with_precision(graph)
    names = {id(p): n for n, p in block.collect_params().items()}
    param_names = {}
    for node in graph.nodes:
        if node.op == "param":
            param = cap.params[id(node)]
            if id(param) not in names:
                raise KilnError(f"export: the graph reads a parameter ({node.name}) that is "
                                f"not among {type(block).__name__}'s parameters")
            param_names[id(node)] = names[id(param)]
        elif not node.is_source and node.op not in REGISTRY:
            raise KilnError(f"export: op {node.op!r} is not a registry primitive")
    return graph, param_names, cap


def _specialized(block, cached):
    """A fresh cache for block that keeps every size fixed (its own entries untouched)."""
    from ..hybrid.cached import CachedFunction
    from ..hybrid.dynamic import ShapePolicy
    fixed = CachedFunction(block, cached.name, backend="numpy", param_names=cached.param_names,
                           shape_policy=ShapePolicy("static"))
    fixed.quiet = True
    return fixed


def export_block(block, path, epoch=0):
    """Write `path-symbol.json` and `path-%04d.params`; return both file names."""
    graph, param_names, cap = inference_graph(block)
    grad_reqs = {id(n): cap.params[id(n)].grad_req for n in graph.nodes if n.op == "param"}
    text, consts = graph_to_json(graph, param_names, __version__, grad_reqs)
    params = {}
    for node in graph.nodes:
        if node.op == "param":
            param = cap.params[id(node)]
            params[param_names[id(node)]] = param.data()._concrete("export")
    sym_file = f"{path}-symbol.json"
    par_file = params_path(path, epoch)
    _write_text_atomic(sym_file, text)
    write_params(par_file, params, consts)
    return sym_file, par_file


def _write_text_atomic(path, text):
    from ..npx.io import write_bytes_atomic
    write_bytes_atomic(path, text.encode("utf-8"))
