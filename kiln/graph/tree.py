"""Flattening nested call arguments and results into array leaves plus a static structure."""
import numpy as _np

from ..ndarray import ndarray


class Leaf:
    """Marks where an array sits in a flattened structure."""
    __slots__ = ()

    def __repr__(self):
        return "*"


ARRAY = Leaf()


def flatten(value):
    """(arrays, structure): structure is hashable and holds every non-array value."""
    arrays = []

    def walk(v):
        if isinstance(v, ndarray):
            arrays.append(v)
            return ARRAY
        if isinstance(v, _np.ndarray):
            arrays.append(ndarray._wrap(v))
            return ARRAY
        if isinstance(v, tuple):
            return ("tuple", tuple(walk(x) for x in v))
        if isinstance(v, list):
            return ("list", tuple(walk(x) for x in v))
        if isinstance(v, dict):
            return ("dict", tuple((k, walk(v[k])) for k in v))
        try:
            hash(v)
        except TypeError:
            return ("static", repr(v))
        return ("static", v)

    structure = walk(value)
    return arrays, structure


def unflatten(structure, arrays):
    it = iter(arrays)

    def build(s):
        if s is ARRAY:
            return next(it)
        kind, body = s
        if kind == "tuple":
            return tuple(build(x) for x in body)
        if kind == "list":
            return [build(x) for x in body]
        if kind == "dict":
            return {k: build(x) for k, x in body}
        return body

    return build(structure)
