"""int8 quantization of a traced graph (kiln.contrib.quantization).

Finds the layers: Dense, `matmul(x, transpose(W))` [+ bias], and convolutions,
`conv(x, W)` [+ reshape(b)], with W a parameter, [then ReLU]; and puts in their place one
int8 node (dense_int8 / conv_int8, kiln/ops/quantized.py) that quantizes x with the
layer's calibrated scale (or per call: dynamic), multiplies in int8 with the weight
quantized once per output channel (a constant of the graph, as are its scales), and
dequantizes with the bias and ReLU applied in the same pass.

`layers` maps a layer's weight parameter name to what its node needs:
    {"weight": (wq, wscale), "x_scale": float or None, "dtype": "int8" | "uint8"}
Layers not in it (excluded, or not calibrated) stay float32.
"""
import numpy as _np

from ..._core.ir import Node, rewrite


def layer_weight(node):
    """The weight parameter of a quantizable layer node (matmul or conv), or None."""
    if node.op == "matmul" and len(node.inputs) == 2 and node.inputs[0].dtype == "float32":
        w = node.inputs[1]
        if w.op == "transpose" and w.ndim == 2 and w.inputs[0].op == "param":
            return w.inputs[0]
    if node.op == "conv" and node.inputs[1].op == "param" and node.dtype == "float32" \
            and not node.attrs.get("channels_last"):
        return node.inputs[1]
    return None


def _bias_of(node, consumer):
    """consumer's bias operand when consumer adds a per-output-channel bias to node."""
    if consumer is None or consumer.op != "add" or consumer.shape != node.shape:
        return None
    other = consumer.inputs[1] if consumer.inputs[0] is node else consumer.inputs[0]
    if node.op == "matmul" and other.op == "param" and other.shape == (node.shape[-1],):
        return other
    if node.op == "conv" and other.op == "reshape" and other.inputs[0].op == "param" \
            and other.inputs[0].shape == (node.shape[1],):
        return other.inputs[0]
    return None


def _const(value):
    return Node("const", (), {}, value.shape, value.dtype, value=value)


def quantize_layers(graph, layers):
    """`graph` with the layers named in `layers` (by weight name) in int8."""
    users = {}
    for n in graph.nodes:
        for i in n.inputs:
            users.setdefault(id(i), []).append(n)
    outputs = {id(o) for o in graph.outputs}

    def sole_user(node):
        u = users.get(id(node), [])
        return u[0] if len(u) == 1 and id(node) not in outputs else None

    plan = {}       # id(a layer's last node) -> (layer, bias param, relu?, spec); None for
                    # the layer's other nodes
    for n in graph.nodes:
        w = layer_weight(n)
        spec = layers.get(w.name) if w is not None else None
        if spec is None:
            continue
        tail, bias = n, _bias_of(n, sole_user(n))
        if bias is not None:
            tail = sole_user(n)
        relu = sole_user(tail)
        relu = relu if relu is not None and relu.op == "relu" else None
        for absorbed in (n, tail):
            plan.setdefault(id(absorbed), None)
        plan[id(relu if relu is not None else tail)] = (n, bias, relu is not None, spec)

    if not any(v is not None for v in plan.values()):
        return graph
    activation = {}     # id(layer) -> its rewritten input x

    def replace(node, inputs):
        if node.op in ("matmul", "conv") and id(node) in plan:
            activation[id(node)] = inputs[0]
        entry = plan.get(id(node))
        if entry is None:
            return None     # not a layer's last node: kept (dead once its user is replaced)
        layer, bias, relu, spec = entry
        wq, wscale = spec["weight"]
        bias_node = bias if bias is not None else _const(_np.zeros(wq.shape[0], _np.float32))
        attrs = {"x_scale": spec["x_scale"], "dtype": spec["dtype"], "relu": relu}
        op = "dense_int8" if layer.op == "matmul" else "conv_int8"
        if op == "conv_int8":
            attrs.update({k: layer.attrs[k] for k in ("stride", "dilation", "pad")},
                         groups=layer.attrs.get("groups", 1))
        return Node(op, (activation[id(layer)], _const(wq), _const(wscale), bias_node), attrs,
                    node.shape, _np.float32, name=layer.name)

    return rewrite(graph, replace)
