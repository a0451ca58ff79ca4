"""Folding a convolution's bias add and ReLU into the convolution (op conv_bias).

    conv(x, w) -> add(., reshape(b))  [-> relu]      becomes     conv_bias(x, w, b, relu)

when the conv's only reader is the add and b is a per-channel vector shaped along the
conv's channel axis. A bfloat16 conv (conv_bf16, mixed precision) takes them the same
way: conv_bf16(x, w, b, relu). The ReLU folds in too when the add's other readers are only
`greater(add, 0)` (the mask of ReLU's own gradient): those read the ReLU's output
instead, which is positive exactly where its input is. The library then writes the
output once, instead of a conv output, a sum and a ReLU in turn.
"""
from ..._core.ir import Node, rewrite

CONVS = ("conv", "conv_bf16")


def _channel_axis(conv):
    return conv.ndim - 1 if conv.attrs.get("channels_last") else 1


def _bias_of(conv, other):
    """b when `other` is reshape(b) with b (F,) along conv's channel axis, else None."""
    if other.op != "reshape" or other.dtype != conv.dtype or other.ndim != conv.ndim:
        return None
    b = other.inputs[0]
    f = conv.shape[_channel_axis(conv)]
    want = tuple(f if i == _channel_axis(conv) else 1 for i in range(conv.ndim))
    return b if b.shape == (f,) and other.shape == want else None


def _is_zero(n):
    return n.op == "const" and n.ndim == 0 and float(n.value) == 0.0


def fuse_conv_epilogues(graph, takes=lambda node: True):
    users = graph.consumers()
    outputs = {id(o) for o in graph.outputs}
    plan = {}       # id(node to replace) -> (id(add), with relu)
    for add in graph.nodes:
        if add.op != "add" or id(add) in outputs:
            continue
        for k in (0, 1):
            conv, other = add.inputs[k], add.inputs[1 - k]
            if (conv.op in CONVS and takes(conv) and id(conv) not in outputs
                    and len(users[id(conv)]) == 1 and conv.shape == add.shape
                    and _bias_of(conv, other) is not None):
                break
        else:
            continue
        readers = users[id(add)]
        relus = [r for r in readers if r.op == "relu"]
        masks = [r for r in readers if r.op == "greater" and r.inputs[0] is add
                 and _is_zero(r.inputs[1])]
        if len(relus) == 1 and len(relus) + len(masks) == len(readers):
            plan[id(relus[0])] = (id(add), True)
            for m in masks:
                plan[id(m)] = (id(add), "mask")
        else:
            plan[id(add)] = (id(add), False)
    if not plan:
        return graph
    adds = {p[0] for p in plan.values()}
    add_inputs, fused = {}, {}

    def make(add_id, relu):
        """The conv_bias node for one add, made once from its rewritten inputs."""
        if add_id not in fused:
            conv, other = add_inputs[add_id]
            if conv.op not in CONVS:
                conv, other = other, conv
            x, w = conv.inputs
            fused[add_id] = Node("conv_bias" if conv.op == "conv" else conv.op,
                                 (x, w, other.inputs[0]), dict(conv.attrs, relu=relu),
                                 conv.shape, conv.dtype)
        return fused[add_id]

    def replace(node, inputs):
        if id(node) in adds:
            add_inputs[id(node)] = inputs
        step = plan.get(id(node))
        if step is None:
            return None
        if step[1] == "mask":
            return Node("greater", (make(step[0], True), inputs[1]), node.attrs, node.shape,
                        node.dtype)
        return make(step[0], step[1])

    return rewrite(graph, replace)
