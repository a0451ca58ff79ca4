"""The steps of a graph in generated C: what each computes, and the graph of steps the
memory plan runs over.

build_steps() looks up each node's C lowering (lowering.py) to decide its step: each
fusion group (an elementwise chain, possibly headed by a matmul) becomes one loop nest;
reshapes, and transposes that only feed a matmul, become aliases that cost nothing.
collapse() makes the graph with one node per step that memory planning takes.
"""
from ..._core.ir import Graph, Node
from ..._core.bfloat16 import any_bfloat16, is_bfloat16
from .loops import C_TYPES
from .lowering import MATMUL, Elementwise, NotLowerable, lowering_of


class Step:
    """What one step computes. Its kind comes from the lowering of its last node, except
    for the graph's fusion groups (a pass's result, graph.fusion_groups): 'fused', or
    'matmul' when a matmul heads the group. The graph's sources (input, param, const) make
    no step: they are table entries of their own (emit_graph)."""
    __slots__ = ("kind", "nodes", "sink", "inputs", "collapsed", "lowering", "also",
                 "stored_early", "into")

    def __init__(self, kind, nodes, inputs, lowering=None, also=()):
        self.kind = kind        # 'fused' | 'matmul' | 'alias' | 'window' | 'random' | 'op'
                                # | 'heavy' | 'control' | 'written' (by an earlier step)
        self.nodes = nodes          # graph nodes computed by this step (in order)
        self.sink = nodes[-1]       # the node whose value leaves the step
        self.inputs = inputs        # graph nodes read from outside the step
        self.collapsed = None
        self.lowering = lowering    # the sink's C lowering, for a step of one node
        self.also = list(also)      # nodes whose values the step stores besides the sink's
        self.stored_early = []      # (node, its node in the collapsed graph) for each
        self.into = {}              # id(stored node) -> (concatenation, offset) storing it


def _check_dtypes(graph):
    for n in graph.nodes:
        if is_bfloat16(n.dtype) and (n.is_source or n.op == "cast"):
            continue        # C moves bfloat16 in and out of casts; the NumPy executor the rest
        if n.dtype not in C_TYPES:
            raise NotLowerable(f"dtype {n.dtype} of {n.name}")
        if n.op != "cast" and any_bfloat16(n.inputs):
            raise NotLowerable(f"{n.op} on bfloat16 ({n.name})")


def _fusable(node):
    """Can node join an elementwise loop (its expression exists for its dtypes)?"""
    low = lowering_of(node)
    return isinstance(low, Elementwise) and low.lowers(node)


def _read_slice(node, group):
    """A slice the group's loop reads through (fuse.py): its input comes from outside."""
    return node.op == "slice" and all(node.inputs[0] is not n for n in group)


def build_steps(graph):
    _check_dtypes(graph)
    users = graph.consumers()
    outputs = {id(o) for o in graph.outputs}
    group_of = {}
    for grp in graph.fusion_groups:
        head_ok = lowering_of(grp[0]) is MATMUL or _fusable(grp[0]) or _read_slice(grp[0], grp)
        if head_ok and all(_fusable(n) or _read_slice(n, grp) for n in grp[1:]):
            for n in grp:
                group_of[id(n)] = grp
    steps = []
    for node in graph.nodes:
        if node.is_source:
            continue
        grp = group_of.get(id(node))
        if grp is not None:
            if node is not grp[-1]:
                continue
            steps.append(Step("matmul" if grp[0].op == "matmul" else "fused", list(grp),
                              external_inputs(grp)))
            continue
        low = lowering_of(node)
        kind = low.step_for(node, users, outputs) if low is not None else None
        if kind is None:
            raise NotLowerable(f"op {node.op}")
        steps.append(Step(kind, [node], [] if kind == "random" else list(node.inputs), low))
    return steps


def collapse(graph, steps):
    """A graph with one node per step, for memory planning."""
    mapping = {id(n): n for n in graph.inputs + graph.params}
    for n in graph.nodes:
        if n.op == "const":
            mapping[id(n)] = n
    for s in steps:
        ins = tuple(mapping[id(i)] for i in s.inputs)
        s.collapsed = Node(f"step:{s.kind}", ins, {}, s.sink.shape, s.sink.dtype,
                           name=s.sink.name)
        for n in s.nodes:   # a matmul heading a group writes where the group's result goes
            mapping[id(n)] = s.collapsed
        # a value stored on the way (a merged loop's, loop_merge.py) is a node of its own,
        # with a buffer of its own (emit_graph) that the step writes; it reads everything
        # the step reads, so none of that dies at the step and the step's result never
        # takes the place of an input
        s.stored_early = []
        for v in s.also:
            c = Node("step:stored", (s.collapsed,) + ins, {}, v.shape, v.dtype, name=v.name)
            mapping[id(v)] = c
            s.stored_early.append((v, c))
    outs = [mapping[id(o)] for o in graph.outputs]
    return Graph(graph.inputs, graph.params, outs, graph.name), mapping


def external_inputs(nodes, through_slices=True):
    """The nodes read by `nodes` from outside them, in order of first use; without
    through_slices, not those read only by a slice among them (the loop reads such an
    input where the slice's items lie: _fused_parts)."""
    members = {id(n) for n in nodes}
    ext = []
    for n in nodes:
        if n.op == "slice" and not through_slices:
            continue
        for i in n.inputs:
            if id(i) not in members and all(i is not e for e in ext):
                ext.append(i)
    return ext
