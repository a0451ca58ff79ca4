"""int8 quantization of a traced graph (kiln.contrib.quantization).

Finds the layers: Dense, `matmul(x, transpose(W))` [+ bias] [then ReLU], and
convolutions, `conv(x, W)` with W a parameter; and puts in their place one int8 node
(dense_int8 / conv_int8, kiln/ops/quantized.py) that quantizes x with the layer's
calibrated scale (or per call: dynamic), multiplies in int8 with the weight quantized once
per output channel (a constant of the graph, as are its scales), and dequantizes with the
bias and ReLU applied in the same pass.

A convolution takes more with it (`conv_chain`): the per-channel affine ops after it (its
bias, an inference BatchNorm: adds, subtracts, multiplies and divides by values computed
from parameters only), folded into its weight and bias by kiln.contrib.quantization before
the weight is quantized; then a residual add (oneDNN's sum post-op) and a ReLU. And a chain
stays int8 from one convolution to the next: a convolution whose readers are all
quantized convolutions taking it as input with one scale (or as their residual) writes its
output requantized on that scale (`out_scale`), which is exactly what each reader would
have computed from the float32 value: quantize -> float op -> dequantize, once.

`layers` maps a layer's weight parameter name to what its node needs:
    {"weight": (wq, wscale), "x_scale": float or None, "dtype": "int8" | "uint8"}
and for a convolution folded with its affine ops, also "bias" (float32 (F,)) and
"affine" (how many ops were folded). Layers not in it (excluded, or not calibrated) stay
float32.
"""
import numpy as _np

from ..._core.ir import Node, rewrite

AFFINE = ("add", "subtract", "multiply", "divide")


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


def _dense_bias(node, consumer):
    """consumer's bias operand when consumer adds a per-unit bias param to matmul node."""
    if consumer is None or consumer.op != "add" or consumer.shape != node.shape:
        return None
    other = consumer.inputs[1] if consumer.inputs[0] is node else consumer.inputs[0]
    if other.op == "param" and other.shape == (node.shape[-1],):
        return other
    return None


class _Constants:
    """Which nodes are computed from parameters and constants only."""

    def __init__(self):
        self.known = {}

    def __call__(self, node):
        got = self.known.get(id(node))
        if got is None:
            if node.op in ("param", "const"):
                got = True
            elif node.op == "input" or not node.inputs:
                got = False
            else:
                got = all(self(i) for i in node.inputs)
            self.known[id(node)] = got
        return got


def _per_channel(c, conv):
    """Does c broadcast against conv's output along its channel axis (1) only?"""
    if c.ndim > conv.ndim or c.dtype != conv.dtype:
        return False
    shape = (1,) * (conv.ndim - c.ndim) + tuple(c.shape)
    return all(d == 1 or (i == 1 and d == conv.shape[1]) for i, d in enumerate(shape))


def conv_chain(conv, sole_user, constant):
    """(affine ops [(node, operand)], residual add or None, its other operand, relu or None)
    after a conv node: the per-channel affine ops on its sole-user path, then an add of a
    full-size float32 tensor, then a ReLU."""
    affine, tail = [], conv
    while True:
        u = sole_user(tail)
        if u is None or u.op not in AFFINE or u.shape != conv.shape or len(u.inputs) != 2:
            break
        k = 0 if u.inputs[0] is tail else 1
        other = u.inputs[1 - k]
        if other is tail or not constant(other) or not _per_channel(other, conv) or (
                k == 1 and u.op in ("subtract", "divide")):
            break
        affine.append((u, other))
        tail = u
    residual, rest, u = None, None, sole_user(tail)
    if u is not None and u.op == "add" and u.shape == conv.shape:
        other = u.inputs[1] if u.inputs[0] is tail else u.inputs[0]
        if other is not tail and other.shape == conv.shape and other.dtype == conv.dtype:
            residual, rest, tail = u, other, u
    u = sole_user(tail)
    return affine, residual, rest, (u if u is not None and u.op == "relu" else None)


def fold_affine(values, ops, channels):
    """(scale, shift) per channel, float64: the affine ops (their op names, with the
    values of their constant operands) as y = conv * scale + shift."""
    scale, shift = _np.ones(channels), _np.zeros(channels)
    for op, value in zip(ops, values):
        c = _np.broadcast_to(_np.asarray(value, _np.float64).reshape(-1), (channels,)) \
            if _np.size(value) in (1, channels) else None
        if op == "add":
            shift = shift + c
        elif op == "subtract":
            shift = shift - c
        elif op == "multiply":
            scale, shift = scale * c, shift * c
        else:
            scale, shift = scale / c, shift / c
    return scale, shift


def users_of(graph):
    """(users: id -> readers, sole_user(node): its one reader unless it is an output)."""
    users = graph.consumers()
    outputs = {id(o) for o in graph.outputs}

    def sole_user(node):
        u = users.get(id(node), [])
        return u[0] if len(u) == 1 and id(node) not in outputs else None
    return users, outputs, sole_user


def _const(value):
    return Node("const", (), {}, value.shape, value.dtype, value=value)


class _Layer:
    def __init__(self, node, spec, absorbed, bias=None, residual=None, rest=None,
                 relu=False):
        self.node, self.spec, self.absorbed = node, spec, absorbed
        self.bias, self.residual, self.rest, self.relu = bias, residual, rest, relu
        self.end = absorbed[-1]
        self.out = None         # (scale, dtype) when the output is requantized


def _plan(graph, layers):
    users, outputs, sole_user = users_of(graph)
    constant = _Constants()
    plan, claimed = [], set()      # the nodes a layer took (a residual add has two convs)
    for n in graph.nodes:
        w = layer_weight(n)
        spec = layers.get(w.name) if w is not None else None
        if spec is None:
            continue
        if n.op == "matmul":
            bias = _dense_bias(n, sole_user(n))
            tail = sole_user(n) if bias is not None else n
            relu = sole_user(tail)
            relu = relu if relu is not None and relu.op == "relu" else None
            absorbed = [n] + ([tail] if bias is not None else []) + ([relu] if relu else [])
            plan.append(_Layer(n, spec, absorbed, bias=bias, relu=relu is not None))
            continue
        affine, residual, rest, relu = conv_chain(n, sole_user, constant)
        if "bias" not in spec or spec.get("affine") != len(affine):
            continue        # the graph is not the one quantize_net folded: stays float32
        if residual is not None and id(residual) in claimed:
            residual = rest = relu = None
        absorbed = [n] + [a for a, _ in affine] + ([residual] if residual else []) + (
            [relu] if relu else [])
        claimed.update(id(a) for a in absorbed)
        plan.append(_Layer(n, spec, absorbed, residual=residual, rest=rest,
                           relu=relu is not None))
    _requantize(plan, users, outputs)
    return plan


def _requantize(plan, users, outputs):
    """Set layer.out for the conv layers whose readers all take int8 on one scale."""
    by_input, by_residual = {}, {}
    for layer in plan:
        if layer.node.op == "conv" and layer.spec.get("x_scale") is not None:
            by_input.setdefault(id(layer.node.inputs[0]), []).append(layer)
        if layer.residual is not None:
            by_residual.setdefault(id(layer.rest), []).append(layer)
    for layer in plan:
        end = layer.end
        if layer.node.op != "conv" or id(end) in outputs:
            continue
        readers = by_input.get(id(end), [])
        taking = {id(r.node) for r in readers} | {id(r.residual) for r in
                                                  by_residual.get(id(end), [])}
        grids = {(float(r.spec["x_scale"]), r.spec["dtype"]) for r in readers}
        if readers and len(grids) == 1 and all(id(u) in taking for u in users[id(end)]):
            layer.out = grids.pop()


def quantize_layers(graph, layers):
    """`graph` with the layers named in `layers` (by weight name) in int8."""
    plan = _plan(graph, layers)
    if not plan:
        return graph
    by_end = {id(layer.end): layer for layer in plan}
    out_of = {id(layer.end): layer.out for layer in plan}
    firsts = {id(layer.node): layer for layer in plan}
    residuals = {id(layer.residual): layer for layer in plan if layer.residual is not None}
    activation, rest = {}, {}

    def replace(node, inputs):
        if id(node) in firsts:
            activation[id(node)] = inputs[0]
        if id(node) in residuals:
            layer = residuals[id(node)]
            rest[id(layer.node)] = inputs[1] if node.inputs[0] is not layer.rest else inputs[0]
        layer = by_end.get(id(node))
        if layer is None:
            return None     # not a layer's last node: kept (dead once its user is replaced)
        return _int8_node(layer, activation[id(layer.node)], rest.get(id(layer.node)),
                          out_of)

    return rewrite(graph, replace)


def _int8_node(layer, x, residual, out_of):
    n, spec = layer.node, layer.spec
    wq, wscale = spec["weight"]
    attrs = {"x_scale": spec["x_scale"], "dtype": spec["dtype"], "relu": layer.relu}
    if n.op == "matmul":
        bias = layer.bias if layer.bias is not None else _const(
            _np.zeros(wq.shape[0], _np.float32))
        return Node("dense_int8", (x, _const(wq), _const(wscale), bias), attrs,
                    layer.end.shape, _np.float32, name=n.name)
    attrs.update({k: n.attrs[k] for k in ("stride", "dilation", "pad")},
                 groups=n.attrs.get("groups", 1))
    inputs = [x, _const(wq), _const(wscale), _const(_np.asarray(spec["bias"], _np.float32))]
    if residual is not None:
        inputs.append(residual)
        made = out_of.get(id(layer.rest))
        if made is not None:
            attrs["residual_scale"] = made[0]
    dtype = _np.float32
    if layer.out is not None:
        attrs.update(out_scale=layer.out[0], out_dtype=layer.out[1])
        dtype = _np.dtype(layer.out[1])
    return Node("conv_int8", tuple(inputs), attrs, layer.end.shape, dtype, name=n.name)
