"""ONNX export: the same inference graph the symbol file holds, as an ONNX model.

Most primitives map one-to-one (kiln_ops -> onnx_ops.LOWERINGS). Convolution and pooling
are compositions in kiln (windows -> reshape -> matmul; windows -> max/sum), so they are
recognized here and emitted as Conv / MaxPool / AveragePool, which ONNX runtimes run far
faster than a generic im2col; a `windows` that fits no pattern still exports generically.
onnx is an optional dependency, imported only when an export runs.
"""
import os

import numpy as _np

from .._core.base import KilnError
from .._core.symdim import ShapeEnv, SymInt, building
from .onnx_ops import lowering
from .onnx_sizes import SizeTensors, dim_param, reshape_target

# ONNX IR version per opset that onnxruntime accepts (IR 8 covers opsets up to 17)
_IR_FOR_OPSET = [(17, 8), (20, 9), (21, 10)]
MIN_OPSET = 13


def require_onnx():
    try:
        import onnx
        from onnx import helper, numpy_helper
    except ImportError:
        raise KilnError("ONNX export needs the 'onnx' package: "
                        "python -m pip install 'kiln[onnx]' (or: pip install onnx)") from None
    return onnx, helper, numpy_helper


class Emitter:
    def __init__(self, opset):
        self.onnx, self.helper, self.numpy_helper = require_onnx()
        self.opset = opset
        self.nodes, self.initializers = [], []
        self._count = 0
        self.sizes = None     # onnx_sizes.SizeTensors of the graph being emitted

    def fresh(self, hint):
        self._count += 1
        return f"{hint}_{self._count}"

    def onnx_type(self, dtype):
        return self.helper.np_dtype_to_tensor_dtype(_np.dtype(dtype))

    def const(self, array, name=None):
        name = name or self.fresh("const")
        self.initializers.append(self.numpy_helper.from_array(_np.asarray(array), name))
        return name

    def op(self, op_type, inputs, **attrs):
        out = self.fresh(op_type.lower())
        self.nodes.append(self.helper.make_node(op_type, list(inputs), [out], **attrs))
        return out


# ---- patterns ------------------------------------------------------------------------------

def _sole_user(users, node, outputs):
    u = users[id(node)]
    return u[0] if len(u) == 1 and id(node) not in outputs else None


def _kernel_axes(win):
    nsp = len(win.attrs["kernel"])
    return list(range(2 + nsp, 2 + 2 * nsp))


def find_patterns(graph):
    """{id(node): (kind, windows node, extra)} for the nodes that patterns replace;
    the windows and reshape nodes they absorb map to ('skip',)."""
    users = graph.consumers()
    outputs = {id(o) for o in graph.outputs}
    found = {}
    for w in graph.nodes:
        if w.op != "windows":
            continue
        a = w.attrs
        pad_value = float(a.get("pad_value", 0.0))
        user = _sole_user(users, w, outputs)
        if user is None:
            continue
        if user.op == "reshape" and pad_value == 0.0 and user.ndim == 2:
            mm = _sole_user(users, user, outputs)
            k = int(_np.prod(a["kernel"])) * w.inputs[0].shape[1]
            # (a reshape keeps the size: a last axis of k makes the first size // k)
            if (mm is not None and mm.op == "matmul" and mm.inputs[0] is user
                    and mm.inputs[1] is not user and mm.inputs[1].ndim == 2
                    and not isinstance(k, SymInt) and not isinstance(user.shape[1], SymInt)
                    and user.shape[1] == k):
                found[id(w)] = found[id(user)] = ("skip",)
                found[id(mm)] = ("conv", w, None)
        elif user.op in ("max", "sum") and not user.attrs.get("keepdims", False):
            axis = user.attrs.get("axis")
            axes = sorted(x % w.ndim for x in ((axis,) if isinstance(axis, int) else axis or ()))
            if axes != _kernel_axes(w):
                continue
            if user.op == "max" and pad_value == -_np.inf:
                found[id(w)] = ("skip",)
                found[id(user)] = ("maxpool", w, None)
            elif (user.op == "sum" and pad_value == 0.0 and set(a["dilation"]) == {1}
                  and user.dtype == w.dtype):
                found[id(w)] = ("skip",)
                found[id(user)] = ("sumpool", w, None)
    return found


def _pool_attrs(w):
    a = w.attrs
    nsp = len(a["kernel"])
    pads = [a["pad"][2 * i] for i in range(nsp)] + [a["pad"][2 * i + 1] for i in range(nsp)]
    return dict(kernel_shape=list(a["kernel"]), strides=list(a["stride"]), pads=pads)


def _channels_last(em, name, nsp):
    """(N, C, *spatial) -> (N, *spatial, C), the layout kiln's windows ops produce."""
    return em.op("Transpose", [name], perm=[0] + list(range(2, 2 + nsp)) + [1])


def emit_pattern(em, kind, w, node, names):
    nsp = len(w.attrs["kernel"])
    x = names[id(w.inputs[0])]
    attrs = _pool_attrs(w)
    if kind == "conv":
        b = node.inputs[1]                          # (C*prod(kernel), O)
        out_ch, in_ch = b.shape[1], w.inputs[0].shape[1]
        wt = em.op("Transpose", [names[id(b)]], perm=[1, 0])
        wk = em.op("Reshape", [wt, em.const(_np.array((out_ch, in_ch) + tuple(w.attrs["kernel"]),
                                                      _np.int64))])
        y = em.op("Conv", [x, wk], dilations=list(w.attrs["dilation"]), **attrs)
        y = _channels_last(em, y, nsp)
        return em.op("Reshape", [y, reshape_target(em, None, node.shape)])
    if kind == "maxpool":
        y = em.op("MaxPool", [x], dilations=list(w.attrs["dilation"]), **attrs)
        return _channels_last(em, y, nsp)
    # sum pooling = average pooling (padding counted) times the window size
    y = em.op("AveragePool", [x], count_include_pad=1, **attrs)
    scale = em.const(_np.array(float(_np.prod(w.attrs["kernel"])), node.dtype))
    return _channels_last(em, em.op("Mul", [y, scale]), nsp)


# ---- the model -----------------------------------------------------------------------------

def graph_to_onnx(graph, param_values, opset=17, name="kiln"):
    """An onnx.ModelProto for `graph`; param_values: {id(param node): NumPy array}.

    A graph with symbolic sizes (graph.shape_env: its symbols and guards) gives named
    dimensions and computes its size-valued attributes in-graph (onnx_sizes.py). Making
    the ONNX graph may not need any size's value beyond what the guards say: a lowering
    that would is an error, not a file that only serves the traced sizes."""
    if opset < MIN_OPSET:
        raise KilnError(f"ONNX export: opset {opset} is too old; use {MIN_OPSET} or newer")
    known = getattr(graph, "shape_env", None)
    env = ShapeEnv()
    if known is not None:
        env.symbols, env.guards = dict(known.symbols), list(known.guards)
    with building(env):
        model = _graph_to_onnx(graph, param_values, opset, name)
    seen = {(g.lhs, g.op, g.rhs) for g in (known.guards if known is not None else ())}
    new = [g for g in env.guards if (g.lhs, g.op, g.rhs) not in seen]
    if new:
        raise KilnError("ONNX export: the ONNX graph would serve only the sizes where "
                        + "; ".join(repr(g) for g in new[:5]) + " (ONNX files check no "
                        "conditions); export with fixed sizes (dynamic_axes={}) instead")
    return model


def _graph_to_onnx(graph, param_values, opset, name):
    from ..graph.passes.pipeline import run_pipeline
    # the heavy ops other than conv and pool have no ONNX op
    graph = run_pipeline("onnx", graph, takes=lambda n: n.op in ("conv", "pool"))
    em = Emitter(opset)
    helper = em.helper
    names, graph_inputs = {}, []
    for n in graph.inputs:
        names[id(n)] = n.name
        graph_inputs.append(helper.make_tensor_value_info(
            n.name, em.onnx_type(n.dtype), [dim_param(d) for d in n.shape]))
    em.sizes = SizeTensors(em, graph.inputs, names)
    for n in graph.params:
        names[id(n)] = em.const(param_values[id(n)], name=n.name)
    patterns = find_patterns(graph)
    for node in graph.nodes:
        if id(node) in names:
            continue
        if node.op == "const":
            names[id(node)] = em.const(node.value)
            continue
        hit = patterns.get(id(node))
        if hit is not None and hit[0] == "skip":
            continue
        if hit is not None:
            names[id(node)] = emit_pattern(em, hit[0], hit[1], node, names)
            continue
        ins = [names[id(i)] for i in node.inputs]
        names[id(node)] = lowering(node.op)(em, node, ins)
    outputs = []
    for k, n in enumerate(graph.outputs):
        out = f"output{k}"
        em.nodes.append(helper.make_node("Identity", [names[id(n)]], [out]))
        outputs.append(helper.make_tensor_value_info(out, em.onnx_type(n.dtype),
                                                     [dim_param(d) for d in n.shape]))
    g = helper.make_graph(em.nodes, name, graph_inputs, outputs, initializer=em.initializers)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="kiln")
    model.ir_version = next((ir for top, ir in _IR_FOR_OPSET if opset <= top), 10)
    em.onnx.checker.check_model(model)
    return model


def _source_graph(source, example_inputs, dynamic_axes=None):
    """(graph, {id(param node): value}) from a block or a symbol file."""
    if not isinstance(source, (str, os.PathLike, tuple, list)):    # a block
        from .block_export import inference_graph
        graph, _, cap = inference_graph(source, example_inputs, dynamic_axes=dynamic_axes)
        values = {id(p): cap.params[id(p)].data()._concrete("onnx export") for p in graph.params}
        return graph, values
    from .loaded import load_model, to_graph
    if isinstance(source, (tuple, list)):
        sym_file, par_file = source
    else:
        sym_file = os.fspath(source)
        if not sym_file.endswith("-symbol.json"):
            raise KilnError(f"ONNX export: expected a block, a PATH-symbol.json file or a "
                            f"(symbol file, params file) pair, got {source!r}")
        par_file = sym_file[:-len("-symbol.json")] + "-0000.params"
    if dynamic_axes is not None:
        raise KilnError("ONNX export: a symbol file's sizes were chosen when it was "
                        "exported; dynamic_axes= applies to a block")
    model = load_model(sym_file, par_file)
    graph = to_graph(model)
    values = {id(p): model.params[p.name] for p in graph.params}
    if example_inputs is not None:
        shapes = [tuple(_np.shape(x)) for x in example_inputs]
        declared = [n.shape for n in graph.inputs]
        if len(shapes) != len(declared) or not all(
                len(s) == len(d) and all(isinstance(a, SymInt) or a == b
                                         for a, b in zip(d, s))
                for s, d in zip(shapes, declared)):
            raise KilnError(f"ONNX export: example inputs have shapes {shapes}, the symbol "
                            f"file was exported for {declared}")
    return graph, values


def export(block_or_symbol_file, example_inputs, path, opset=17, dynamic_axes=None):
    """Write an ONNX model of a hybridizable block (traced on example_inputs, in predict
    mode) or of an exported symbol file; returns `path`.

    Sizes: as HybridBlock.export's (kiln/export/block_export.py): symbolic where the
    block's programs are (hybridize(dynamic=True), dynamic_axes=, or sizes that varied),
    or as `dynamic_axes` says: {input name or position: {axis: symbol name}} (the
    argument of torch.onnx.export; {} fixes every size). A symbolic size is a named
    dimension (dim_param) of the ONNX inputs and outputs."""
    if example_inputs is not None and not isinstance(example_inputs, (list, tuple)):
        example_inputs = [example_inputs]
    graph, values = _source_graph(block_or_symbol_file, example_inputs, dynamic_axes)
    model = graph_to_onnx(graph, values, opset, name=graph.name)
    data = model.SerializeToString()
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
    return path
