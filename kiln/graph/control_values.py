"""The values that flow through an `if` or `while` on an array, as control_trace sees them:
flattened into leaves (arrays, Python numbers, and `Static` for anything else, which must
be the same object on every path), and the numbers made arrays where paths differ.
"""
import numpy as _np

from .._core.base import DEFAULT_FLOAT
from .._core.ndarray import ndarray, as_array

NUMBER = (bool, int, float, _np.number)


class Static:
    """A non-array leaf: compared by identity or equality across branches/iterations."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def same(self, other):
        a, b = self.value, other.value
        if a is b:
            return True
        try:
            return type(a) is type(b) and bool(a == b)
        except Exception:
            return False


def flatten(value):
    """(leaves, structure); leaves are ndarray, Python numbers or Static."""
    leaves = []

    def walk(v):
        if isinstance(v, ndarray) or (isinstance(v, NUMBER) and not isinstance(v, _np.ndarray)):
            leaves.append(v)
            return "*"
        if isinstance(v, (tuple, list)):
            return (type(v).__name__, tuple(walk(x) for x in v))
        leaves.append(Static(v))
        return "*"
    return leaves, walk(value)


def unflatten(structure, leaves):
    it = iter(leaves)

    def build(s):
        if s == "*":
            v = next(it)
            return v.value if isinstance(v, Static) else v
        kind, items = s
        out = [build(x) for x in items]
        return tuple(out) if kind == "tuple" else out
    return build(structure)


def label(names, k, what):
    if names and k < len(names):
        return f"variable {names[k]!r}"
    return f"{what} {k}"


def number_dtype(v):
    """A Python number that must become an array (a loop counter `k = 0`, or numbers that
    differ between branches) gets MXNet's dtype for `np.array(number)`: float32. Eagerly
    the number is weakly typed, so `y * k` stays float32; an int64 array would widen it.
    (A loop whose body needs an integer gets the body's dtype: see emit_while's retry.)"""
    if isinstance(v, (bool, _np.bool_)):
        return _np.dtype(_np.bool_)
    if isinstance(v, _np.number):
        return v.dtype
    return DEFAULT_FLOAT


def is_array(v):
    return isinstance(v, ndarray)


def short(v):
    v = v.value if isinstance(v, Static) else v
    text = repr(v)
    return text if len(text) < 40 else text[:37] + "..."


def as_branch_value(v, other):
    """A number meeting an array (or a different number) becomes an array of one dtype."""
    if is_array(v):
        return v
    if is_array(other):
        return as_array(_np.array(v, dtype=other.dtype))
    dt = _np.result_type(number_dtype(v), number_dtype(other))
    return as_array(_np.array(v, dtype=dt))


def initial_array(v):
    if is_array(v):
        return v
    return as_array(_np.array(v, dtype=number_dtype(v)))
