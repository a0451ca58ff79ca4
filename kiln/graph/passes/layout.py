"""Layout assignment: heavy ops run channels-last, and their tensors stay so in between.

oneDNN's convolutions and poolings read and write (N, *S, C) arrays in place; given NCHW
they copy each argument into a blocked layout and back, which cost a quarter of a ResNet
training step. This pass gives each heavy op the kernel library takes (`takes`) the
attribute channels_last=True, so that its activations (input, output and their
gradients; never the weights) are (N, *S, C), and wraps it in transposes to and from the
caller's NCHW. It then moves those transposes down through the ops that do not care
about layout, so that between two heavy ops they meet and cancel:

  - elementwise ops, when every full-size input is in the same permuted layout (smaller,
    broadcast inputs such as a bias reshaped to (1, C, 1, 1) are permuted themselves);
  - reductions over given axes (the axes are renumbered);
  - the batch-norm primitives, whose channel axis is an attribute.

A transpose left where it meets anything else (a reshape before a dense layer, a graph
output) is the one copy the layout change costs there. Only the permutation this pass
introduces is moved, so the 2-D transposes of weights that matmuls read in place stay.
"""
import os

from ..._core.ir import Node, rewrite
from ..._core.symdim import provably

HEAVY = {   # op -> (positions of activation inputs, is the output an activation)
    "conv": ((0,), True), "conv_bf16": ((0,), True), "conv_grad_data": ((0,), True),
    "conv_grad_weight": ((0, 1), False),
    "pool": ((0,), True), "pool_grad": ((0, 1), True),
    "conv_int8": ((0, 4), True),    # its residual (input 4) too
}
REDUCTIONS = ("sum", "max", "min", "prod")
BATCH_NORM = {  # op -> positions of full-size inputs, is the output full-size
    "batch_norm_stats": ((0,), False), "batch_norm_train": ((0,), True),
    "batch_norm_param_grad": ((0, 1), False), "batch_norm_data_grad": ((0, 1), True),
}
SMALL = 4       # an input this many times smaller than the output is permuted to move past


def to_last(ndim):
    """The axes of transpose(x) that make NCHW channels-last."""
    return (0,) + tuple(range(2, ndim)) + (1,)


def to_first(ndim):
    return (0, ndim - 1) + tuple(range(1, ndim - 1))


def _inverse(perm):
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return tuple(inv)


def assign_layouts(graph, takes=lambda node: True):
    """`graph` with the heavy ops `takes` accepts channels-last and the transposes between
    them cancelled. The graph's inputs and outputs keep their layouts."""
    if not any(n.op in HEAVY and takes(n) and not n.attrs.get("channels_last")
               and n.inputs[0].ndim >= 3 for n in graph.nodes):
        return graph
    made = {}           # (id(x), perm) -> x transposed by perm
    source = {}         # id(a node made here) -> (x, perm) it is the transpose of

    def transpose(x, perm):
        """x transposed by perm, cancelling a transpose it undoes; one node per (x, perm).
        A transpose that moves only axes of length 1 is a reshape (no copy); a run-time size
        counts as 1 only where it is 1 at every size, so the choice pins no size."""
        if id(x) in source:
            inner, first = source[id(x)]
        elif x.op == "transpose":
            inner, first = x.inputs[0], x.attrs["axes"]
        else:
            inner, first = None, None
        if inner is not None:
            perm = tuple(first[p] for p in perm)
            x = inner
        if perm == tuple(range(len(perm))):
            return x
        key = (id(x), perm)
        if key not in made:
            shape = tuple(x.shape[p] for p in perm)
            moved = [p for p in perm if not provably(x.shape[p], "==", 1)]
            if moved == sorted(moved):
                node = Node("reshape", (x,), {"shape": shape}, shape, x.dtype)
            else:
                node = Node("transpose", (x,), {"axes": perm}, shape, x.dtype)
            made[key] = node
            source[id(node)] = (x, perm)
        return made[key]

    def permuted(x):
        """(y, perm) when x is y transposed by a channels-first perm."""
        if id(x) in source:
            y, perm = source[id(x)]
        elif x.op == "transpose":
            y, perm = x.inputs[0], x.attrs["axes"]
        else:
            return None
        return (y, perm) if x.ndim >= 3 and perm == to_first(x.ndim) else None

    def heavy(node, inputs):
        acts, act_out = HEAVY[node.op]
        n = node.inputs[0].ndim
        new = [transpose(x, to_last(n)) if k in acts else x for k, x in enumerate(inputs)]
        shape = tuple(node.shape[p] for p in to_last(n)) if act_out else node.shape
        out = Node(node.op, new, dict(node.attrs, channels_last=True), shape, node.dtype)
        return transpose(out, to_first(n)) if act_out else out

    def elementwise(node, inputs):
        perm = _common_perm(node, inputs, permuted)
        if perm is None:
            return None
        inv = _inverse(perm)
        for x in inputs:
            if not (permuted(x) or _cheap(x, node) or (id(x), inv) in made):
                return None
        new = []
        for x in inputs:
            spread = None
            if _broadcast_small(x, node):
                spread, x = x, x.inputs[0]
            if x.ndim == 0:
                new.append(x)
                continue
            if x.ndim < node.ndim:
                shape = (1,) * (node.ndim - x.ndim) + x.shape
                x = Node("reshape", (x,), {"shape": shape}, shape, x.dtype)
            x = transpose(x, inv)
            if spread is not None:
                shape = tuple(spread.shape[p] for p in inv)
                x = Node("broadcast_to", (x,), {"shape": shape}, shape, x.dtype)
            new.append(x)
        shape = tuple(node.shape[p] for p in inv)
        return transpose(Node(node.op, new, node.attrs, shape, node.dtype), perm)

    def reduction(node, inputs):
        got = permuted(inputs[0])
        axis = node.attrs.get("axis")
        if got is None or axis is None:
            return None
        y, perm = got
        n = len(perm)
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        axes = tuple(sorted(perm[a % n] for a in axes))
        keep = node.attrs.get("keepdims", False)
        shape = tuple(1 if i in axes else d for i, d in enumerate(y.shape)) if keep else \
            tuple(d for i, d in enumerate(y.shape) if i not in axes)
        out = Node(node.op, (y,), dict(node.attrs, axis=axes), shape, node.dtype)
        if keep:
            return transpose(out, perm)
        kept = [p for p in perm if p not in axes]     # y's kept axes in the output's order
        order = sorted(kept)
        return transpose(out, tuple(order.index(p) for p in kept))

    def batch_norm(node, inputs):
        full, full_out = BATCH_NORM[node.op]
        got = [permuted(inputs[k]) for k in full]
        if any(g is None for g in got) or len({g[1] for g in got}) != 1:
            return None
        perm = got[0][1]
        new = list(inputs)
        for k, (y, _) in zip(full, got):
            new[k] = y
        shape = got[0][0].shape if full_out else node.shape
        out = Node(node.op, new, dict(node.attrs, axis=perm[node.attrs["axis"]]), shape,
                   node.dtype)
        return transpose(out, perm) if full_out else out

    from ...ops.registry import REGISTRY

    def replace(node, inputs):
        if node.op in HEAVY and takes(node) and not node.attrs.get("channels_last") \
                and node.inputs[0].ndim >= 3:
            return heavy(node, inputs)
        if node.op in REDUCTIONS:
            return reduction(node, inputs)
        if node.op in BATCH_NORM:
            return batch_norm(node, inputs)
        prim = REGISTRY.get(node.op)
        if prim is not None and prim.elementwise and node.ndim >= 3:
            return elementwise(node, inputs)
        return None

    return rewrite(graph, replace)


def _common_perm(node, inputs, permuted):
    """The channels-first permutation the inputs of an elementwise node that are
    transposes share; None if there is none or they differ."""
    perms = {got[1] for got in (permuted(x) for x in inputs if x.ndim == node.ndim) if got}
    return perms.pop() if len(perms) == 1 else None


def _cheap(x, node):
    """May x be permuted to move a transpose past node: is it small (a bias, a scalar)?"""
    return x.ndim == 0 or x.size * SMALL <= node.size or _broadcast_small(x, node)


def _broadcast_small(x, node):
    """Is x a small array broadcast to node's rank (cheap to permute before spreading)?"""
    return (x.op == "broadcast_to" and x.ndim == node.ndim
            and x.inputs[0].size * SMALL <= node.size)


def channels_last_pays(laid):
    """Is the laid-out graph worth running: do the channel transposes it still copies
    move fewer elements than half those its channels-last heavy ops read and write? Each
    of those would otherwise be a reorder inside the library, which runs about twice as
    fast as a transpose here (a single conv between NCHW edges runs slower laid out)."""
    moved = switched = 0
    for n in laid.nodes:
        if n.op == "transpose" and n.ndim >= 3 and n.attrs["axes"] in (to_first(n.ndim),
                                                                       to_last(n.ndim)):
            moved += n.size
        elif n.op in HEAVY and n.attrs.get("channels_last"):
            acts, act_out = HEAVY[n.op]
            switched += sum(n.inputs[k].size for k in acts if k < len(n.inputs)) + (
                n.size if act_out else 0)
    return 2 * moved < switched


def channels_last_where_it_pays(graph, takes=lambda node: True):
    """assign_layouts(graph, takes) when that pays (channels_last_pays), else `graph`.
    KILN_CHANNELS_LAST=0 keeps every heavy op NCHW."""
    if os.environ.get("KILN_CHANNELS_LAST", "1") == "0":
        return graph
    laid = assign_layouts(graph, takes=takes)
    return laid if laid is not graph and channels_last_pays(laid) else graph
