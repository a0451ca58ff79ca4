"""Flattening nested call arguments and results into array leaves plus a static structure."""
import numpy as _np

from .._core.ndarray import ndarray


class Leaf:
    """Marks where an array sits in a flattened structure."""
    __slots__ = ()

    def __repr__(self):
        return "*"


ARRAY = Leaf()


class Static:
    """A non-array argument, compared as part of a trace's cache key.

    The type is part of the key (1, 1.0 and True may trace differently); floats compare by
    bit pattern, so NaN matches itself and -0.0 differs from 0.0; unhashable values by repr.
    """
    __slots__ = ("value", "key")

    def __init__(self, value):
        self.value = value
        try:
            hash(value)
            plain = value.hex() if isinstance(value, float) else value
        except TypeError:
            plain = repr(value)
        self.key = (type(value), plain)

    def __eq__(self, other):
        return isinstance(other, Static) and self.key == other.key

    def __hash__(self):
        return hash(self.key)

    def __repr__(self):
        return repr(self.value)


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
        return ("static", Static(v))

    structure = walk(value)
    return arrays, structure


def unflatten(structure, arrays):
    it = iter(arrays)

    def build(s):
        if s is ARRAY:
            return next(it)
        kind, body = s
        if kind == "static":
            return body.value
        if kind == "tuple":
            return tuple(build(x) for x in body)
        if kind == "list":
            return [build(x) for x in body]
        if kind == "dict":
            return {k: build(x) for k, x in body}
        return body

    return build(structure)
