"""Recognizing attention written out (scores, a softmax, a weighted sum of values) and
rewriting it into the attention primitive (kiln/ops/attention.py), which the C backend
runs blocked, without the score matrix:

    matmul(q, transpose(k)) [/ c or * c] [where(mask, ., fill)] -> softmax -> matmul(., v)

The softmax is any of the forms kiln's functions trace to, over the last axis:
    exp(x - max(x)) / sum(...)                                 npx.softmax
    where(m, x, -inf), exp(. - max), where(m, ., 0), sum, /     npx.softmax(length=...)
    the same with maximum(sum, 1e-30)                          npx.masked_softmax
    where(m, x, -1e6) and the plain softmax                    d2l's sequence_mask form
with reshapes that keep the last axis anywhere between the two matmuls (d2l flattens the
scores to rows; MXNet's interleaved_matmul_selfatt_* scale q before the first matmul, so
their form has no scale node). Everything between the matmuls must be read by nothing
else: in a training step's forward half the probabilities are a residual the backward
reads, and the composite stays.
"""
import numpy as _np

from ..._core.ir import Node, rewrite


def _scalar(node):
    """The value of a one-element constant, else None."""
    if node.op == "const" and node.size == 1:
        return float(_np.asarray(node.value).reshape(-1)[0])
    return None


def _through_reshapes(node, chain):
    """The node under a chain of reshapes that keep the last axis (appended to chain)."""
    while node.op == "reshape" and node.inputs[0].ndim >= 1 and \
            node.inputs[0].shape[-1] == node.shape[-1]:
        chain.append(node)
        node = node.inputs[0]
    return node


def _last_axis(node):
    axis = node.attrs.get("axis")
    return node.attrs.get("keepdims") and axis in ((node.inputs[0].ndim - 1,),
                                                    node.inputs[0].ndim - 1)


def _match(out, users, outputs):
    """(q, k, v, mask or None, mask's reshape target or None, attrs, inner nodes) for the
    second matmul `out` of an attention, else None."""
    if out.op != "matmul" or out.dtype.kind != "f":
        return None
    inner = []
    p, v = out.inputs
    div = _through_reshapes(p, inner)
    if div.op != "divide":
        return None
    inner.append(div)
    e, total = div.inputs
    floor = 0.0
    if total.op == "maximum":
        floor = _scalar(total.inputs[1])
        if floor is None or floor <= 0:
            return None
        inner.append(total)
        total = total.inputs[0]
    if total.op != "sum" or total.inputs[0] is not e or not _last_axis(total):
        return None
    inner.append(total)
    mask = None
    zero_masked = e.op == "where"
    if zero_masked:
        if _scalar(e.inputs[2]) != 0.0:
            return None
        mask = e.inputs[0]
        inner.append(e)
        e = e.inputs[1]
    if e.op != "exp" or e.inputs[0].op != "subtract":
        return None
    sub = e.inputs[0]
    x, top = sub.inputs
    if top.op != "max" or top.inputs[0] is not x or not _last_axis(top):
        return None
    inner += [e, sub, top]
    fill = -_np.inf
    if x.op == "where":
        fill = _scalar(x.inputs[2])
        if fill is None or (mask is not None and x.inputs[0] is not mask):
            return None
        mask = x.inputs[0]
        inner.append(x)
        x = x.inputs[1]
    elif zero_masked:
        return None
    core_shape = x.shape
    s = _through_reshapes(x, inner)
    scale, divide = 1.0, False
    if s.op in ("divide", "multiply"):
        c = _scalar(s.inputs[1])
        mm = s.inputs[0]
        if c is None and s.op == "multiply":
            c, mm = _scalar(s.inputs[0]), s.inputs[1]
        if c is None:
            return None
        scale, divide = c, s.op == "divide"
        inner.append(s)
        s = mm
    if s.op != "matmul" or s.shape != p.shape or s.ndim < 2:
        return None
    inner.append(s)
    q, kt = s.inputs
    if kt.op == "transpose" and kt.attrs["axes"][-2:] == (kt.ndim - 1, kt.ndim - 2) and \
            tuple(kt.attrs["axes"][:-2]) == tuple(range(kt.ndim - 2)):
        k = kt.inputs[0]
    else:
        k = None        # the keys as the matmul has them: transposed back by the rewrite
    lead = q.shape[:-2]
    if not (q.ndim == kt.ndim == v.ndim and kt.shape[:-2] == lead and v.shape[:-2] == lead
            and q.dtype == kt.dtype == v.dtype == out.dtype):
        return None
    if any(id(n) in outputs or any(id(u) not in {id(i) for i in inner} | {id(out)}
                                   for u in users[id(n)]) for n in inner):
        return None
    reshape_mask = None
    if mask is not None and core_shape != s.shape:
        reshape_mask = core_shape
    attrs = dict(scale=scale, divide=divide, fill=fill, zero_masked=zero_masked, floor=floor)
    return q, (k, kt), v, mask, reshape_mask, attrs


def fuse_attention(graph):
    users = graph.consumers()
    outputs = {id(o) for o in graph.outputs}
    found = {}
    for node in graph.nodes:
        got = _match(node, users, outputs)
        if got is not None:
            found[id(node)] = got
    if not found:
        return graph
    now = {}     # old node -> rewritten (filled by rewrite)

    def replace(node, inputs):
        got = found.get(id(node))
        return None if got is None else _attention(node, got, now)

    return rewrite(graph, replace, now)


def _attention(node, match, now):
    q, (k, kt), v, mask, reshape_mask, attrs = match
    q, v = now[id(q)], now[id(v)]
    if k is not None:
        k = now[id(k)]
    else:
        kt = now[id(kt)]
        axes = tuple(range(kt.ndim - 2)) + (kt.ndim - 1, kt.ndim - 2)
        k = Node("transpose", (kt,), {"axes": axes},
                 kt.shape[:-2] + (kt.shape[-1], kt.shape[-2]), kt.dtype)
    score_shape = q.shape[:-1] + (k.shape[-2],)
    if mask is None:
        m = Node("const", (), {}, (), _np.bool_, value=_np.array(True))
    else:
        m = now[id(mask)]
        if reshape_mask is not None:
            if m.shape != reshape_mask:
                m = Node("broadcast_to", (m,), {"shape": reshape_mask}, reshape_mask, _np.bool_)
            m = Node("reshape", (m,), {"shape": score_shape}, score_shape, _np.bool_)
    return Node("attention", (q, k, v, m), attrs, node.shape, node.dtype, name=node.name)
