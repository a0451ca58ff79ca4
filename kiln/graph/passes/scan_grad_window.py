"""A scan's incoming gradient passed as the window where it is not zero.

scan returns one flat array (final carried values, step outputs, histories) that callers
slice, so the gradient scan_grad receives is mostly a placement into zeros: an LSTM layer's
loss reaches only its step outputs, and the histories (kept for backward) get no gradient.
Building that array costs a fill of the whole result's size and a copy of the piece, and
the loop then adds the zeros of the histories' gradient into its carried gradients at every
step. When the incoming gradient is slice_assign(zeros, piece) and the piece covers whole
pieces of scan's layout, scan_grad takes the piece itself with g_window=(begin, end): the
C backend reads every piece of the layout inside the window from it and treats the others
as zero; the eager kernel rebuilds the full array.
"""
from ...ops.scan import layout
from ..._core.ir import Node, rewrite
from ..._core.symdim import provably
from .gather_pieces import _is_zeros


def _piece_bounds(node):
    """[start, end) of each piece of the scan_grad's layout, in elements."""
    a = node.attrs
    operands = node.inputs[:-2]
    length = operands[a["n_carried"]].shape[0]      # (a run-time length stays symbolic)
    bounds, at = [], 0
    for shape in layout(a["body"], a["n_carried"], length):
        size = 1
        for d in shape:
            size = size * d
        bounds.append((at, at + size))
        at = at + size
    return bounds


def _outside(s, e, begin, end):
    """The piece [s, e) is empty or outside the window at every size."""
    return provably(e, "<=", s) or provably(e, "<=", begin) or provably(end, "<=", s)


def _inside(s, e, begin, end):
    return provably(begin, "<=", s) and provably(e, "<=", end)


def scan_grad_window(graph):
    def replace(node, inputs):
        if node.op != "scan_grad" or node.attrs.get("g_window") is not None:
            return None
        g = inputs[-1]
        if g.op != "slice_assign" or g.ndim != 1 or not _is_zeros(g.inputs[0]) \
                or g.attrs["step"] != (1,) or g.inputs[1].shape != (g.attrs["end"][0]
                                                                    - g.attrs["begin"][0],):
            return None
        begin, end = g.attrs["begin"][0], g.attrs["end"][0]
        # (decided where it holds at every size: a run-time length needs no guard)
        if not all(_outside(s, e, begin, end) or _inside(s, e, begin, end)
                   for s, e in _piece_bounds(node)):
            return None           # the window cuts a piece: keep the whole array
        return Node("scan_grad", inputs[:-1] + (g.inputs[1],),
                    dict(node.attrs, g_window=(begin, end)), node.shape, node.dtype,
                    name=node.name)
    return rewrite(graph, replace)
