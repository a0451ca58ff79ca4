"""Recognizing layer normalization and the softmax family written out over the last axis,
and rewriting each into its primitive (kiln/ops/normalization.py), which the C backend
runs one row at a time in one pass over memory:

    d = x - sum(x) / n;  d / sqrt(sum(d * d) / n + eps) [* gamma] [+ beta]   layer_norm
    e = exp(x - max(x));  e / sum(e)                                         softmax
    s = x - max(x);  s - log(sum(exp(s)))                                    log_softmax

(the forms npx.layer_norm / nn.LayerNorm, npx.softmax and npx.log_softmax trace to, with
every reduction over the last axis, keepdims). gamma and beta are scalars or vectors of
the last axis' length, reshaped or not. Everything inside a form must be read by nothing
else: in a training step's forward half the statistics are residuals the backward reads,
and the composite stays. A softmax the attention pass took is gone before this one runs.
Only float32 and float64 are rewritten (the kernels' types).
"""
import numpy as _np

from ..._core.ir import Node, rewrite

FLOATS = (_np.dtype(_np.float32), _np.dtype(_np.float64))


def _scalar(node):
    """The value of a one-element constant, else None."""
    if node.op == "const" and node.size == 1:
        return float(_np.asarray(node.value).reshape(-1)[0])
    return None


def _row_reduction(node, op, x):
    """Whether node is `op` of x over its last axis, keepdims."""
    if node.op != op or node.inputs[0] is not x or not node.attrs.get("keepdims"):
        return False
    return node.attrs.get("axis") in ((x.ndim - 1,), x.ndim - 1)


def _row_mean(node, x, inner):
    """Whether node is sum(x over the last axis) / n (appending its nodes to inner)."""
    if node.op != "divide" or _scalar(node.inputs[1]) != x.shape[-1]:
        return False
    total = node.inputs[0]
    if not _row_reduction(total, "sum", x):
        return False
    inner += [node, total]
    return True


def _vector(node, n):
    """The gamma or beta under node, as a node of shape () or (n,), else None."""
    if node.op == "reshape" and node.inputs[0].shape in ((n,), ()) and \
            all(s == 1 for s in node.shape[:-1]):
        return node.inputs[0]
    if node.shape == () or node.shape == (n,):
        return node
    return None


def _match_layer_norm(out):
    """(x, gamma or None, beta or None, eps, inner nodes) when `out` ends a layer norm."""
    inner, node = [], out
    beta = gamma = None
    if node.op == "add" and node.inputs[0].op in ("multiply", "divide"):
        beta, node = node.inputs[1], node.inputs[0]
        inner.append(out)
    if node.op == "multiply" and node.inputs[0].op == "divide":
        gamma, mul = node.inputs[1], node
        node = node.inputs[0]
        inner.append(mul)
    if node.op != "divide" or node.dtype not in FLOATS:
        return None
    inner.append(node)
    d, std = node.inputs
    if d.op != "subtract" or std.op != "sqrt" or std.inputs[0].op != "add":
        return None
    x, mean = d.inputs
    if x.shape != out.shape or x.dtype != out.dtype or not _row_mean(mean, x, inner):
        return None
    shifted = std.inputs[0]
    eps = _scalar(shifted.inputs[1])
    var = shifted.inputs[0]
    if eps is None or var.op != "divide":
        return None
    square = var.inputs[0].inputs[0] if var.inputs[0].op == "sum" else None
    if square is None or square.op != "multiply" or square.inputs[0] is not d or \
            square.inputs[1] is not d or not _row_mean(var, square, inner):
        return None
    inner += [d, std, shifted, square]
    n = x.shape[-1]
    given = [v for v in (gamma, beta) if v is not None]
    gamma, beta = (None if v is None else _vector(v, n) for v in (gamma, beta))
    kept = [v for v in (gamma, beta) if v is not None]
    if len(kept) < len(given) or any(v.dtype != x.dtype for v in kept):
        return None
    return x, gamma, beta, eps, inner


def _shifted(node):
    """x when node is x - max(x over the last axis), else None."""
    if node.op != "subtract":
        return None
    x, top = node.inputs
    return x if _row_reduction(top, "max", x) else None


def _match_softmax(out):
    """(x, log, inner nodes) when `out` ends a softmax or log_softmax."""
    if out.dtype not in FLOATS:
        return None
    if out.op == "divide":
        e, total = out.inputs
        if e.op != "exp" or not _row_reduction(total, "sum", e):
            return None
        x = _shifted(e.inputs[0])
        if x is None:
            return None
        return x, False, [out, e, total, e.inputs[0], e.inputs[0].inputs[1]]
    if out.op == "subtract":
        s, lg = out.inputs
        x = _shifted(s)
        if x is None or lg.op != "log" or lg.inputs[0].op != "sum":
            return None
        total = lg.inputs[0]
        e = total.inputs[0]
        if e.op != "exp" or e.inputs[0] is not s or not _row_reduction(total, "sum", e):
            return None
        return x, True, [out, s, s.inputs[1], lg, total, e]
    return None


def _private(inner, out, users, outputs):
    """Whether nothing outside the form reads its inner nodes."""
    ids = {id(n) for n in inner}
    return not any((n is not out and id(n) in outputs) or
                   any(id(u) not in ids for u in users[id(n)])
                   for n in inner if n is not out)


def fuse_normalization(graph):
    users = graph.consumers()
    outputs = {id(o) for o in graph.outputs}
    found = {}
    for node in graph.nodes:
        got = _match_layer_norm(node)
        if got is not None:
            x, gamma, beta, eps, inner = got
            if _private(inner, node, users, outputs):
                found[id(node)] = ("layer_norm", (x, gamma, beta), {"eps": eps})
            continue
        got = _match_softmax(node)
        if got is not None and _private(got[2], node, users, outputs):
            found[id(node)] = ("softmax", (got[0],), {"log": got[1]})
    # a smaller form inside a larger one (gamma's multiply inside beta's add) is not a
    # form of its own once the larger one is taken
    for node in graph.nodes:
        if id(node) in found and any(id(u) in found for u in users[id(node)]):
            del found[id(node)]
    if not found:
        return graph
    now = {}     # old node -> rewritten (filled by rewrite)

    def replace(node, inputs):
        got = found.get(id(node))
        return None if got is None else _rewritten(node, got, now)

    return rewrite(graph, replace, now)


def _rewritten(node, found, now):
    op, operands, attrs = found
    x = now[id(operands[0])]
    if op == "softmax":
        return Node("softmax", (x,), attrs, node.shape, node.dtype, name=node.name)
    _, gamma, beta = operands
    gamma = now[id(gamma)] if gamma is not None else \
        Node("const", (), {}, (), x.dtype, value=_np.array(1, x.dtype))
    beta = now[id(beta)] if beta is not None else \
        Node("const", (), {}, (), x.dtype, value=_np.array(0, x.dtype))
    return Node("layer_norm", (x, gamma, beta), attrs, node.shape, node.dtype, name=node.name)
