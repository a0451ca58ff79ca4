"""HybridBlock.export: the block's inference graph as a symbol file plus a params file.

What is exported is the *raw traced* graph in predict mode (through the block's precision
pipeline, for a block converted by kiln.contrib.amp or quantization) (outputs only, so state
updates and dropout's training branch are gone), not the optimized one: it holds nothing
but registry primitives exactly as the user's forward produced them, it is stable across
changes to kiln's optimization passes, and every reader optimizes it again anyway
(SymbolBlock when hybridized, build-c before generating C). The ONNX exporter's pattern
matching (windows -> reshape -> matmul = Conv) also relies on this unrewritten form.

Sizes: a block whose programs have symbolic sizes (hybridize(dynamic=True), dynamic_axes=,
or the default policy once sizes varied) exports its graph with those sizes symbolic,
traced afresh, and the guards that trace recorded; `dynamic_axes=` names
the symbolic axes for one export (torch.onnx.export's argument), `{}` fixes every size. A
named axis that the trace had to pin to one value is an error naming the line that pinned
it; an axis kiln made symbolic by itself just stays fixed then.
"""
import warnings

import numpy as _np

from .._version import __version__
from .._core.base import KilnError, where_in_user_code
from .._core.ir import Graph
from .._core.symdim import building
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


def inference_graph(block, example_inputs=None, dynamic_axes="fixed"):
    """(Graph of the predict-mode forward, {id(param node): structural name}, Capture).

    Without example inputs, the signature of the block's latest hybridized call is used.
    dynamic_axes: "fixed" (every size as traced), None (symbolic where the block's own
    programs are: see the module's docstring), or {input: {axis: symbol name}} (an input
    by forward's argument name, its exported name, or position; {} fixes every size).
    A graph with symbolic sizes has .shape_env (its symbols and guards), else None."""
    from ..graph.tree import unflatten
    from .._core.ndarray import ndarray
    if example_inputs is not None:
        cached, args = _as_args(block, example_inputs)
    else:
        cached, structure, avals = _latest_signature(block)
        examples = [ndarray._wrap(_np.zeros(shape, dtype)) for shape, dtype in avals]
        args = unflatten(structure, examples)
    entry, _ = cached.entry_for(args, training=False)
    axes = _symbolic_axes(cached, entry, dynamic_axes)
    symbolic = _symbolic_capture(block, cached, args, *axes) if axes is not None else None
    if symbolic is not None:
        cap, env = symbolic
    else:
        env = None
        if entry.symbolic is not None:
            # this export records fixed sizes: trace these sizes on their own
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
    if env is None:
        graph = cached.with_precision(graph)
    else:
        with building(env):
            graph = cached.with_precision(graph)
    graph.shape_env = env
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


def _symbolic_axes(cached, entry, request):
    """(axes, named by the user?) of an export, or None for fixed sizes; axes is "all" or
    {input: {axis: name}}."""
    if isinstance(request, str) and request == "fixed":
        return None
    if request is not None:
        if not isinstance(request, dict):
            raise KilnError(f"export: dynamic_axes must be a dict {{input: {{axis: name}}}}, "
                            f"got {type(request).__name__}{where_in_user_code()}")
        return (_by_position(entry, request), True) if request else None
    policy = cached.policy
    if policy.mode == "static":
        return None
    if policy.dynamic_axes:
        return _by_position(entry, policy.dynamic_axes), True
    if policy.mode == "dynamic":
        return "all", False
    if entry.symbolic is not None:
        return _axes_of(entry.symbolic.positions), False
    return None


def _by_position(entry, axes):
    """dynamic_axes with the exported input names ('data') turned into positions; a list of
    axes (torch's short form) gets names of kiln's choosing."""
    exported = {n.name: k for k, n in enumerate(entry.cap.graph.inputs[:entry.cap.n_inputs])}
    found = {}
    for key, spec in axes.items():
        if isinstance(spec, (list, tuple)):
            spec = {axis: None for axis in spec}
        if not isinstance(spec, dict):
            raise KilnError(f"export: dynamic_axes[{key!r}] must be {{axis: name}} or a list "
                            f"of axes, got {spec!r}{where_in_user_code()}")
        found[exported.get(key, key) if isinstance(key, str) else key] = dict(spec)
    return found


def _axes_of(positions):
    axes = {}
    for (k, axis), name in positions.items():
        axes.setdefault(k, {})[axis] = name
    return axes


def _symbolic_capture(block, cached, args, axes, named):
    """(Capture of the predict-mode forward with `axes` symbolic, its ShapeEnv), or None
    when no size can stay symbolic. Only the trace's guards bind the exported graph (no
    pass or compile runs), so it serves every size the user's code does."""
    from .._core import autograd, trace
    from ..graph.capture import capture
    from ..graph.tree import flatten
    from ..hybrid.dynamic import ShapePolicy
    shapes = [a.shape for a in flatten(tuple(args))[0]]
    names = cached.param_names() if cached.param_names is not None else None
    while True:
        policy = ShapePolicy("dynamic") if axes == "all" else ShapePolicy("auto", axes)
        plan = policy.plan(block, None, shapes, True)
        if plan is None:
            return None
        try:
            with building(plan.env), trace.body_of(block), autograd.predict_mode():
                cap = capture(block, args, cached.name, names, note_side_effects=False,
                              input_shapes=plan.shapes)
        except Exception as exc:  # a rule or a line of forward that needs a concrete size
            why = f"{type(exc).__name__}: {exc}"
            if named:
                raise KilnError(f"export: {type(block).__name__} cannot be exported with "
                                f"symbolic sizes {plan.positions}: {why}") from exc
            warnings.warn(f"export: {type(block).__name__} is exported with fixed sizes; "
                          f"its trace with symbolic sizes failed: {why}", stacklevel=4)
            return None
        env, positions = plan.env, plan.positions
        pins = _pins(env)
        pinned = set(pins) & set(positions.values())
        if not pinned:
            return cap, env
        if named:
            why = "\n  ".join(repr(pins[name]) for name in sorted(pinned))
            raise KilnError(f"export: the sizes {sorted(pinned)} cannot stay symbolic: the "
                            f"trace needed their values here:\n  {why}")
        # sizes kiln chose itself: the pinned ones stay fixed, the others symbolic
        axes = _axes_of({p: n for p, n in positions.items() if n not in pinned})


def _pins(env):
    """{symbol: the guard that fixes it to one value} (`s == 7` held, or `s != 7` did not)."""
    found = {}
    for g in env.guards:
        if g.op in ("==", "!=") and (g.op == "==") == bool(g.outcome) \
                and g.lhs[0] == "sym" and g.rhs[0] == "const":
            found.setdefault(g.lhs[1], g)
    return found


def _specialized(block, cached):
    """A fresh cache for block that keeps every size fixed (its own entries untouched)."""
    from ..hybrid.cached import CachedFunction
    from ..hybrid.dynamic import ShapePolicy
    fixed = CachedFunction(block, cached.name, backend="numpy", param_names=cached.param_names,
                           shape_policy=ShapePolicy("static"))
    fixed.quiet = True
    return fixed


def export_block(block, path, epoch=0, dynamic_axes=None):
    """Write `path-symbol.json` and `path-%04d.params`; return both file names.
    dynamic_axes: see inference_graph (None: symbolic where the block's programs are)."""
    graph, param_names, cap = inference_graph(block, dynamic_axes=dynamic_axes)
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
