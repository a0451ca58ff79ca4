"""Low precision on an MXNet 1.x symbol without shapes: a rewrite of its graph, node by
node, as MXNet's own passes do (quantize_graph_pass, low_precision_pass). It serves the
Symbol flows when the data's shape is unknown (no calib_data, no `__shape__` on the data
variable), so kiln cannot trace the model; everything that needs shapes waits for bind.

- `quantize_dynamic`: quantize_model with calib_mode='none'. Each Convolution (2-D,
  channels first) and FullyConnected layer becomes kiln's int8 node (conv_int8, dense_int8)
  with its weight quantized now and its input quantized per call on the call's own range
  (dynamic). Unlike the traced flow, a BatchNorm after a convolution is not folded into it
  (folding needs to know which ops follow); it runs in float32 after the int8 layer.
- `amp_casts`: amp.convert_model to bfloat16: the inputs of the listed ops are cast to
  bfloat16 (MXNet's amp_cast) and their outputs back to float32.
"""
import json

import numpy as _np

from ...export import attrs as tattrs
from ...hybrid import calibrate
from ..ops.table import parse_attr
from ..sym.mxnet_json import from_dict
from .quantize_net import SMART_MIN_REDUCTION



class _Graph:
    """The rewritten graph's nodes, appended in topological order (MXNet's JSON)."""

    def __init__(self):
        self.nodes = []

    def add(self, op, name, inputs=(), attrs=None):
        self.nodes.append({"op": op, "name": name, "attrs": attrs or {},
                           "inputs": [list(e) for e in inputs]})
        return [len(self.nodes) - 1, 0, 0]

    def var(self, name, value):
        return self.add("null", name, attrs={"__shape__": str(tuple(value.shape)),
                                             "__dtype__": value.dtype.name})

    def name_of(self, entry):
        return self.nodes[entry[0]]["name"]


def _rewrite(symbol, replace):
    """`symbol` with each node for which replace(node, attrs, inputs, graph) returns the
    entries of its outputs (having added nodes to graph) replaced by them; the others are
    kept. Variables no node reads any more drop out (a Symbol is what its heads reach)."""
    doc = json.loads(symbol.tojson())
    graph, moved = _Graph(), []

    def entry(e):
        got = moved[e[0]]
        return got[e[1]] if isinstance(got, list) else [got, e[1], 0]

    for node in doc["nodes"]:
        inputs = [entry(e) for e in node.get("inputs", [])]
        kiln_op = node["op"].startswith("kiln:")
        attrs = {} if kiln_op else {k: parse_attr(v) for k, v in
                                    node.get("attrs", {}).items()}
        got = None if node["op"] == "null" or kiln_op else replace(node, attrs, inputs,
                                                                    graph)
        if got is None:
            graph.nodes.append(dict(node, inputs=inputs))
            moved.append(len(graph.nodes) - 1)
        else:
            moved.append(got)
    return from_dict({"nodes": graph.nodes, "heads": [entry(h) for h in doc["heads"]],
                      "attrs": doc.get("attrs", {})})


def weight_range(scale):
    """float32 max |w| per channel whose float32 division by 127 is `scale` (the value
    calibrate.quantize_weight divided), so the graph's `max / 127` gives back its scale:
    scale * 127, or the float32 neighbour of it that divides back exactly."""
    scale = _np.asarray(scale, _np.float32)
    seven = _np.float32(127)
    best = scale * seven
    up = down = best
    for _ in range(2):
        up, down = _np.nextafter(up, _np.float32(_np.inf)), _np.nextafter(down, _np.float32(0))
        for guess in (up, down):
            best = _np.where((best / seven != scale) & (guess / seven == scale), guess, best)
    return best.astype(_np.float32)


def _free_name(name, taken):
    while name in taken:
        name = "_" + name
    return name


def quantize_dynamic(symbol, arg_params, excluded_sym_names, excluded_op_names,
                     quantize_mode, channel_wise):
    """(qsym, qarg_params): `symbol`'s layers in int8, quantized dynamically; the int8
    weights and their ranges are named as quantization_symbol.mxnet_names names them."""
    from .. import nd
    args = dict(arg_params)
    taken = set(symbol.list_arguments()) | set(symbol.list_auxiliary_states())
    excluded, ops = set(excluded_sym_names or ()), set(excluded_op_names or ())

    def replace(node, attrs, inputs, graph):
        op = node["op"]
        if op not in ("Convolution", "FullyConnected") or op in ops or \
                node["name"] in excluded or len(inputs) < 2:
            return None
        if op == "Convolution" and (len(attrs.get("kernel", ())) != 2 or attrs.get(
                "layout") not in (None, "NCHW")):
            return None
        weight = graph.name_of(inputs[1])
        if weight not in args:
            return None
        w = args[weight].asnumpy().astype(_np.float32)
        if quantize_mode == "smart" and int(_np.prod(w.shape[1:])) < SMART_MIN_REDUCTION:
            return None
        wq, scale = calibrate.quantize_weight(w, channel_wise)
        wq_name = _free_name(weight + "_quantize", taken)
        top_name = _free_name(weight + "_quantize_max", taken)
        taken.update((wq_name, top_name))
        values = {wq_name: wq, top_name: weight_range(scale)}
        top = graph.var(top_name, values[top_name])
        scale_entry = graph.add("_div_scalar", node["name"] + "_weight_scale", [top],
                                {"scalar": "127.0"})
        if attrs.get("no_bias", False) or len(inputs) < 3:
            base = weight[:-len("weight")] if weight.endswith("weight") else weight + "_"
            bias_name = _free_name(base + "bias", taken)
            taken.add(bias_name)
            values[bias_name] = _np.zeros(w.shape[0], _np.float32)
            bias = graph.var(bias_name, values[bias_name])
        else:       # the layer's own bias: declared, since no op infers its shape now
            bias = inputs[2]
            graph.nodes[bias[0]].setdefault("attrs", {}).setdefault("__shape__", str((w.shape[0],)))
        x = inputs[0]
        typed = {"x_scale": None, "dtype": "int8", "relu": False}
        if op == "FullyConnected":
            if attrs.get("flatten", True):
                x = graph.add("Flatten", node["name"] + "_flatten", [x])
            kiln_op = "kiln:dense_int8"
        else:
            kiln_op = "kiln:conv_int8"
            pad = tuple(attrs.get("pad") or (0, 0))
            typed.update(stride=tuple(attrs.get("stride") or (1, 1)),
                         dilation=tuple(attrs.get("dilate") or (1, 1)),
                         pad=(pad[0], pad[0], pad[1], pad[1]),
                         groups=int(attrs.get("num_group", 1)))
        for name, value in values.items():
            args[name] = nd.array(value, dtype=value.dtype)
        wq_entry = graph.var(wq_name, wq)
        return [graph.add(kiln_op, node["name"], [x, wq_entry, scale_entry, bias],
                          {k: tattrs.encode(v) for k, v in typed.items()})]

    qsym = _rewrite(symbol, replace)
    used = set(qsym.list_arguments())
    return qsym, {k: v for k, v in args.items() if k in used}


def amp_casts(symbol, arg_params, target_ops, fp32_ops, excluded_sym_names):
    """`symbol` with the inputs of the ops in target_ops (MXNet names) cast to bfloat16 and
    their outputs cast back to float32. A parameter read through a cast gets its shape
    declared (from arg_params), since the op no longer infers it."""
    skip = set(fp32_ops or ())
    excluded = set(excluded_sym_names or ())

    def replace(node, attrs, inputs, graph):
        if node["op"] not in target_ops or node["op"] in skip or node["name"] in excluded:
            return None
        for e in inputs:
            source = graph.nodes[e[0]]
            if source["op"] == "null" and source["name"] in (arg_params or {}):
                source.setdefault("attrs", {}).setdefault(
                    "__shape__", str(tuple(arg_params[source["name"]].shape)))
        cast = [graph.add("amp_cast", f"{node['name']}_amp_cast{k}", [e],
                          {"dtype": "bfloat16"}) for k, e in enumerate(inputs)]
        out = graph.add(node["op"], node["name"], cast, node.get("attrs", {}))
        return [graph.add("amp_cast", node["name"] + "_amp_cast_out", [out],
                          {"dtype": "float32"})]

    return _rewrite(symbol, replace)
