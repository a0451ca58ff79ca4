"""Common subexpression elimination on a Symbol, as MXNet's executor does at bind
(MXNET_ELIMINATE_COMMON_EXPR, on unless set to 0): `Executor.get_optimized_symbol()` gives
the result.

Two op nodes merge when they have the same op, the same attributes and the same inputs
(after merging theirs). Ops that draw random numbers (Dropout, the samplers) never merge,
nor gradient nodes or Gluon blocks called on Symbols. When merging leaves two outputs of the
symbol on one node, every repeat gets a `_copy` of it, as in MXNet, so the outputs stay
distinct arrays.
"""
from .symbol import KILN_PREFIX, Symbol, SymNode, nodes_of

_RANDOM_WORDS = ("random", "sample", "dropout", "shuffle", "multinomial")


def _mergeable(node):
    if node.is_var or node.grad_of is not None or node.op.startswith(KILN_PREFIX):
        return False
    return not any(word in node.op.lower() for word in _RANDOM_WORDS)


def _attrs_key(attrs):
    return tuple(sorted((k, repr(v)) for k, v in attrs.items()))


def eliminate_common_expr(symbol):
    """A new Symbol computing the same outputs with repeated subexpressions computed once."""
    new_of, seen = {}, {}
    for node in nodes_of(symbol._heads):
        if node.is_var:
            new_of[id(node)] = node
            continue
        inputs = [(new_of[id(src)], k) for src, k in node.inputs]
        key = None
        if _mergeable(node):
            key = (node.op, _attrs_key(node.attrs), node.num_outputs,
                   tuple((id(src), k) for src, k in inputs))
            if key in seen:
                new_of[id(node)] = seen[key]
                continue
        copy = SymNode(node.op, node.name, inputs, node.attrs, node.var_attrs,
                       node.num_outputs, node.grad_of)
        new_of[id(node)] = copy
        if key is not None:
            seen[key] = copy
    heads, used = [], set()
    for node, k in symbol._heads:
        head = (new_of[id(node)], k)
        if (id(head[0]), k) in used:
            head = (SymNode("_copy", f"{head[0].name}_{k}_copy", [head]), 0)
        used.add((id(head[0]), head[1]))
        heads.append(head)
    return Symbol(heads)
