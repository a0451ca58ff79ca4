"""bfloat16 mixed precision (AMP): the float32 products of a graph run in bfloat16.

Each float32 node whose op is in `allow` (matmul and conv by default) becomes its
bfloat16 primitive: conv -> conv_bf16, matmul -> matmul_bf16 (operands rounded to bfloat16, float32
accumulation and result: oneDNN's bfloat16 matmul, bfloat16 in and float32 out, so no
cast node and no pass over a bfloat16 result). A matmul reading a transposed matrix
(Dense's weight.T) reads it where it lies (transpose_b), so the weight is converted once
and kept. Everything else stays float32: softmax, normalization statistics, losses and
reductions are not in `allow`, and in a training step the optimizer reads float32 master
weights and gradients. `deny` (op names, the names of the nodes' layers, or of a layer's
weight parameter: how a SymbolBlock's layers are known) keeps chosen nodes in float32, as
MXNet's fp32_ops and excluded_sym_names do.

Transposes are read where they lie rather than copied, since the bfloat16 kernel converts
its operands anyway: a transpose of a transpose is the matrix itself (the weight of
Dense's input gradient, W.T.T), a transposed first operand is read in place (transpose_a:
attention's gradients, P.T @ dO), and the transposed product Dense's weight gradient is,
(X.T @ G).T, becomes G.T @ X, so neither X.T nor the product is copied.

A bfloat16 product's epilogue runs in oneDNN's kernel as post-ops (matmul_bf16's scale,
gelu and residual attributes) rather than as float32 passes over its result: a scale by a
constant (attention's scores / sqrt(d): a divisor only when its reciprocal is exact), npx.gelu
of the product when nothing else reads its pieces (inference; a training step keeps them for
the gradient), and a float32 tensor of the product's shape added to it (a residual
connection); each when the product has no other reader, in that order.

In a training step traced forward and backward together the gradient products are
matmuls too, and run in bfloat16 like PyTorch's autocast runs them; so are the halves of a
convolution's gradient (conv_grad_data, conv_grad_weight: bf16=True, operands rounded to
bfloat16, float32 out), which oneDNN runs as bfloat16 backward kernels. The weight
gradient is float32, for the float32 master weight.
"""
import math

import numpy as np

from ..._core.ir import Node, rewrite
from ..._core.primitive import REGISTRY
from .quantize import layer_weight

BF16_OPS = {"matmul": "matmul_bf16", "conv": "conv_bf16"}
DEFAULT_ALLOW = frozenset(BF16_OPS)
CONV_GRADS = ("conv_grad_data", "conv_grad_weight")     # run in bfloat16 when conv is


def _swaps_last_two(node):
    axes = node.attrs.get("axes")
    n = len(node.shape)
    return node.op == "transpose" and n >= 2 and tuple(axes) == tuple(range(n - 2)) + (
        n - 1, n - 2)


def _reads_in_place(a, b):
    """Does the bfloat16 kernel read a transposed `a` through its strides with this b (both
    matrices, or stacks with the same batch dims: backend/c/lowp.py's geometry)?"""
    return a.ndim == b.ndim == 2 or (a.ndim == b.ndim >= 3 and a.shape[:-2] == b.shape[:-2])


def _transposed_product(node, inputs, made, users, outputs):
    """matmul_bf16(G, X, transpose_a) for transpose(matmul_bf16(X, G, transpose_a)): a
    weight gradient's (X.T @ G).T is G.T @ X, the product read by the transpose only."""
    if not _swaps_last_two(node):
        return None
    mm = inputs[0]
    original = made.get(id(mm))
    if original is None or len(mm.inputs) != 2 or mm.attrs != {"transpose_a": True} or \
            len(users[id(original)]) != 1 or id(original) in outputs:
        return None
    x, g = mm.inputs
    if not _reads_in_place(g, x):
        return None
    new = Node("matmul_bf16", (g, x), {"transpose_a": True}, node.shape, node.dtype,
               name=mm.name)
    made[id(new)] = node
    return new


def _bias_add(node, inputs, made, users, outputs):
    """matmul_bf16(a, b, bias) for add(matmul, bias) with the matmul one this pass made,
    read by the add only, and bias a float32 vector along its last axis (Dense's)."""
    if node.op != "add" or len(inputs) != 2:
        return None
    for k in (0, 1):
        mm, bias = inputs[k], inputs[1 - k]
        original = made.get(id(mm))
        if (original is not None and len(mm.inputs) == 2 and mm.shape == node.shape
                and not mm.attrs.get("transpose_a")
                and not any(mm.attrs.get(k) for k in EPILOGUE)
                and len(users[id(original)]) == 1 and id(original) not in outputs
                and bias.dtype == "float32" and bias.shape == (node.shape[-1],)):
            new = Node("matmul_bf16", mm.inputs + (bias,), mm.attrs, node.shape, node.dtype,
                       name=mm.name)
            made[id(new)] = node
            return new
    return None


EPILOGUE = ("scale", "gelu", "residual")     # matmul_bf16's post-ops, in their order
GELU_C = float(np.float32(1.0 / math.sqrt(2.0)))     # npx.gelu's 1/sqrt(2), as it traces


def _sole_product(mm, made, users, outputs, after=(), readers=1):
    """Is mm (a node of the new graph) a matmul_bf16 this pass made, read by `readers`
    nodes of the graph (the ones being fused) and not an output, with none of the epilogue
    that would have to come after the part being fused (`after`)?"""
    original = made.get(id(mm))
    return (original is not None and len(users[id(original)]) == readers
            and id(original) not in outputs and not mm.attrs.get("transpose_a")
            and not any(mm.attrs.get(k) for k in after))


def _scalar(n):
    if n.op != "const" or n.value is None or n.value.size != 1:
        return None
    return float(n.value.reshape(()))


def _with_epilogue(node, mm, attrs, made, extra=()):
    new = Node("matmul_bf16", mm.inputs + extra, dict(mm.attrs, **attrs), node.shape,
               node.dtype, name=mm.name)
    made[id(new)] = node
    return new


def _scaled(node, inputs, made, users, outputs):
    """matmul_bf16(..., scale=s) for the product times or divided by a scalar constant
    (attention's scores / sqrt(d)); a divisor only when 1/c is exact (a power of two), so
    the values are the graph's own."""
    if node.op not in ("multiply", "divide") or len(inputs) != 2:
        return None
    for k in ((0, 1) if node.op == "multiply" else (0,)):
        mm, c = inputs[k], _scalar(inputs[1 - k])
        if c is None or not _sole_product(mm, made, users, outputs, EPILOGUE[1:]) \
                or mm.shape != node.shape or c == 0.0:
            continue
        if node.op == "divide":
            mantissa, _ = math.frexp(c)
            if abs(mantissa) != 0.5:
                return None
            c = 1.0 / c
        scale = float(np.float32(mm.attrs.get("scale", 1.0) * c))
        return _with_epilogue(node, mm, {"scale": scale}, made)
    return None


def _gelu_input(node):
    """h when `node` (of the original graph) is npx.gelu(h) as it traces: (0.5 * h) *
    (1 + erf(h * (1/sqrt 2))), either way round; else None."""
    if node.op != "multiply" or len(node.inputs) != 2:
        return None
    for half, rest in (node.inputs, node.inputs[::-1]):
        if half.op != "multiply" or rest.op != "add":
            continue
        h = [i for i in half.inputs if _scalar(i) != 0.5]
        one = [i for i in rest.inputs if _scalar(i) == 1.0]
        e = [i for i in rest.inputs if i.op == "erf"]
        if len(h) != 1 or len(half.inputs) != 2 or not one or not e:
            continue
        arg = e[0].inputs[0]
        if arg.op == "multiply" and h[0] in arg.inputs and any(
                _scalar(i) is not None and abs(_scalar(i) - GELU_C) < 1e-7
                for i in arg.inputs):
            return h[0], (half, rest, e[0], arg)
    return None


def _gelu(node, inputs, made, users, outputs, mapping):
    """matmul_bf16(..., gelu=True) for npx.gelu of a product whose pieces nothing else reads
    (inference: a training step keeps them for the gradient)."""
    found = _gelu_input(node)
    if found is None:
        return None
    h, pieces = found
    mm = mapping.get(id(h))
    if mm is None or not _sole_product(mm, made, users, outputs, EPILOGUE[1:], readers=2) \
            or any(len(users[id(p)]) != 1 or id(p) in outputs for p in pieces):
        return None
    return _with_epilogue(node, mm, {"gelu": True}, made)


def _residual(node, inputs, made, users, outputs):
    """matmul_bf16(..., r, residual=True) for r + product, r float32 of the sum's shape
    (a transformer's residual connection)."""
    if node.op != "add" or len(inputs) != 2:
        return None
    for k in (0, 1):
        mm, r = inputs[k], inputs[1 - k]
        if _sole_product(mm, made, users, outputs, EPILOGUE[2:]) and r is not mm \
                and mm.shape == node.shape == r.shape and r.dtype == "float32":
            return _with_epilogue(node, mm, {"residual": True}, made, (r,))
    return None


def _weight_name(node):
    weight = layer_weight(node)
    return weight.name if weight is not None else None


def to_bfloat16(graph, allow=DEFAULT_ALLOW, deny=()):
    """`graph` with its float32 nodes of the ops in `allow` (and not in `deny`, by op or
    node name) run in bfloat16; a bias added to a bfloat16 matmul becomes its argument."""
    deny = frozenset(deny)
    users, outputs = graph.consumers(), {id(o) for o in graph.outputs}
    made = {}       # id(a matmul_bf16 made here) -> the node of the graph it stands for
    mapping = {}

    def replace(node, inputs):
        fused = _bias_add(node, inputs, made, users, outputs) or \
            _transposed_product(node, inputs, made, users, outputs) or \
            _scaled(node, inputs, made, users, outputs) or \
            _gelu(node, inputs, made, users, outputs, mapping) or \
            _residual(node, inputs, made, users, outputs)
        if fused is not None:
            return fused
        if node.op in CONV_GRADS and "conv" in allow and "conv" not in deny \
                and node.name not in deny and not node.attrs.get("bf16") \
                and node.dtype == "float32" and all(i.dtype == "float32" for i in inputs):
            return Node(node.op, inputs, dict(node.attrs, bf16=True), node.shape, node.dtype,
                        name=node.name)
        if node.op not in allow or node.op not in BF16_OPS or node.op in deny \
                or node.name in deny or _weight_name(node) in deny:
            return None
        if node.dtype != "float32" or any(i.dtype != "float32" for i in inputs):
            return None
        if node.op == "conv":
            if node.attrs.get("channels_last"):
                return None
            return Node("conv_bf16", inputs, node.attrs, node.shape, node.dtype, name=node.name)
        a, b = inputs
        attrs = {}
        if _swaps_last_two(b) and _swaps_last_two(b.inputs[0]):
            b = b.inputs[0].inputs[0]               # W.T.T: W itself
        elif _swaps_last_two(b):
            b, attrs = b.inputs[0], {"transpose_b": True}
        if _swaps_last_two(a) and _swaps_last_two(a.inputs[0]):
            a = a.inputs[0].inputs[0]
        elif _swaps_last_two(a) and _reads_in_place(a.inputs[0], b):
            a, attrs = a.inputs[0], dict(attrs, transpose_a=True)
        new = Node(BF16_OPS[node.op], (a, b), attrs, node.shape, node.dtype, name=node.name)
        made[id(new)] = node
        return new

    if not any((n.op in allow and n.op in BF16_OPS) or (n.op in CONV_GRADS and "conv" in allow)
               for n in graph.nodes):
        return graph
    return rewrite(graph, replace, mapping)


def eager_substitute(allow=DEFAULT_ALLOW, deny=()):
    """What amp.init does to eager code (kiln/_core/dispatch.py's set_eager_substitute): a
    float32 call of an op in `allow` (and not in `deny`) runs as its bfloat16 primitive,
    the values a hybridized block's graph computes after this pass."""
    deny = frozenset(deny)

    def substitute(prim, arrays, attrs):
        op = "conv" if prim.name == "conv_bias" else prim.name    # eager Conv2D's, fused
        if op not in BF16_OPS or op not in allow or op in deny or \
                attrs.get("channels_last") or any(a.dtype != "float32" for a in arrays):
            return None
        return REGISTRY[BF16_OPS[op]], attrs
    return substitute
