"""MXNet's partial type inference of a Symbol (`infer_type_partial`): which argument dtypes
follow from the ones given, leaving the others unknown (None).

An op's inputs and outputs take one dtype, except across a cast, whose output has the
dtype its attribute names and whose input is free. Given dtypes, declared `__dtype__`s and
cast outputs are the known ones; each argument gets the dtype of what it is tied to.
"""
import numpy as _np

_CASTS = ("Cast", "cast", "amp_cast")


def infer_type_partial(symbol, *args, **kwargs):
    """(argument dtypes, output dtypes, auxiliary dtypes) as numpy types, None where unknown."""
    given = dict(zip(symbol.list_arguments(), args)) if args else {}
    given.update(kwargs)
    parent = {}

    def find(key):
        while parent.setdefault(key, key) != key:
            key = parent[key]
        return key

    def union(a, b):
        parent[find(a)] = find(b)

    known = {}
    for node in symbol._nodes():
        outs = [(id(node), k) for k in range(node.num_outputs)]
        if node.is_var:
            dtype = given.get(node.name) or node.var_attrs.get("__dtype__")
            if dtype is not None:
                known[outs[0]] = _np.dtype(dtype).type
            continue
        if node.op in _CASTS:
            known[outs[0]] = _np.dtype(node.attrs.get("dtype", "float32")).type
            continue
        ends = outs + [(id(src), k) for src, k in node.inputs]
        for end in ends[1:]:
            union(ends[0], end)
    by_class = {}
    for end, dtype in known.items():
        by_class.setdefault(find(end), dtype)

    def dtype_of(node, k=0):
        end = (id(node), k)
        return known.get(end, by_class.get(find(end)))

    by_name = {n.name: n for n in symbol._nodes() if n.is_var}
    return ([dtype_of(by_name[n]) for n in symbol.list_arguments()],
            [dtype_of(node, k) for node, k in symbol._heads],
            [dtype_of(by_name[n]) for n in symbol.list_auxiliary_states()])
