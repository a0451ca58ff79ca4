"""A column sum of a scan's sequence gradient that scan_grad already returns, read from it.

An LSTM layer adds its input-side bias outside the time loop (one projection of the whole
sequence) and its recurrent bias inside it. Both biases meet the gate pre-activations the
same way, so their gradients are the same column sum of the gate gradients: scan_grad
returns the recurrent one (an invariant's gradient, summed over the steps), and the graph
sums the sequence's gradient rows a second time for the input-side one. When the body's
gradient graph shows invariant j's gradient is sum(axis=0) of the very node that is
sequence k's gradient, sum(rows of sequence k's gradient) is replaced by invariant j's
piece of the scan_grad result. The summation order may differ (per step, then over steps):
the values agree within float rounding.
"""
from ..._core.ir import Node, rewrite
from ...ops.scan import grad_dtype, saved_nodes
from ...ops.subgraph import vjp_graph


def _grad_pieces(node):
    """[start, end) in elements of each operand's gradient in the scan_grad result, None
    for an operand that gets none (as ScanGradGroup lays them out)."""
    dtype = grad_dtype(node.attrs["body"])
    pieces, at = [], 0
    for x in node.inputs[:-2]:
        if x.dtype == dtype:
            pieces.append((at, at + x.size))
            at = at + x.size
        else:
            pieces.append(None)
    return pieces


def _axes(total):
    """The sum's axes as a tuple (attrs hold None, an int or a sequence)."""
    axis = total.attrs.get("axis")
    if axis is None:
        return tuple(range(total.inputs[0].ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    return tuple(sorted(a % total.inputs[0].ndim for a in axes))


def _shared_sums(node):
    """{xs index k: invariant index j} where invariant j's gradient is sequence k's
    gradient rows summed over axis 0."""
    a = node.attrs
    body, n, nx = a["body"], a["n_carried"], a["n_xs"]
    vjp = vjp_graph(body, tuple(range(len(body.outputs))), saved_nodes(body, a["n_saved"]))
    xs_grads = vjp.outputs[n:n + nx]
    found = {}
    for j, o in enumerate(vjp.outputs[n + nx:]):
        if (o.op == "sum" and o.ndim == 1 and _axes(o) == (0,)
                and not o.attrs.get("keepdims") and o.inputs[0].ndim == 2):
            for k, x in enumerate(xs_grads):
                if x is o.inputs[0] and k not in found:
                    found[k] = j
    return found


def _rows_of_piece(total):
    """(scan_grad node, begin, end) when `total` sums all but the last axis of a reshaped
    slice of a scan_grad result, else None."""
    if total.op != "sum" or total.ndim != 1 or total.attrs.get("keepdims"):
        return None
    rows = total.inputs[0]
    if _axes(total) != tuple(range(rows.ndim - 1)) or rows.op != "reshape":
        return None
    piece = rows.inputs[0]
    if piece.op != "slice" or piece.attrs["step"] != (1,) or piece.inputs[0].op != "scan_grad":
        return None
    return piece.inputs[0], piece.attrs["begin"][0], piece.attrs["end"][0]


def scan_grad_shared_sums(graph):
    cache = {}

    def replace(node, inputs):
        found = _rows_of_piece(node)
        if found is None:
            return None
        sg, begin, end = found
        if id(sg) not in cache:
            cache[id(sg)] = _shared_sums(sg)
        pieces = _grad_pieces(sg)
        n, nx = sg.attrs["n_carried"], sg.attrs["n_xs"]
        for k, j in cache[id(sg)].items():
            xs, inv = sg.inputs[n + k], sg.inputs[n + nx + j]
            if pieces[n + k] != (begin, end) or pieces[n + nx + j] is None \
                    or inv.shape != node.shape or xs.shape[-1:] != node.shape \
                    or inv.dtype != node.dtype:
                continue
            # the sum's input reaches the scan_grad through its (rewritten) reshape and slice
            s, e = pieces[n + nx + j]
            return Node("slice", (inputs[0].inputs[0].inputs[0],),
                        {"begin": (s,), "end": (e,), "step": (1,)}, node.shape, node.dtype,
                        name=node.name)
        return None
    return rewrite(graph, replace)
