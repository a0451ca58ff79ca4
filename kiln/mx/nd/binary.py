"""MXNet 1.x's two-operand functions that take an array or a scalar on either side
(`nd.maximum(x, 2)`, `sym.pow(2, e)`, `nd.equal(x, y)`, ...): each picks the tensor op,
the scalar op or the reversed scalar op of the table (kiln/mx/ops), so arrays compute and
Symbols build the same nodes MXNet builds. Comparisons give 0/1 in the operands' dtype."""
import numbers
import operator

from .functions import mx_function

# name: (tensor op, scalar op, reversed scalar op, the Python operator for two numbers)
_TABLE = {
    "add": ("broadcast_add", "_plus_scalar", "_plus_scalar", operator.add),
    "subtract": ("broadcast_sub", "_minus_scalar", "_rminus_scalar", operator.sub),
    "multiply": ("broadcast_mul", "_mul_scalar", "_mul_scalar", operator.mul),
    "divide": ("broadcast_div", "_div_scalar", "_rdiv_scalar", operator.truediv),
    "true_divide": ("broadcast_div", "_div_scalar", "_rdiv_scalar", operator.truediv),
    "modulo": ("broadcast_mod", "_mod_scalar", "_rmod_scalar", operator.mod),
    "power": ("broadcast_power", "_power_scalar", "_rpower_scalar", operator.pow),
    "pow": ("broadcast_power", "_power_scalar", "_rpower_scalar", operator.pow),
    "maximum": ("broadcast_maximum", "_maximum_scalar", "_maximum_scalar", max),
    "minimum": ("broadcast_minimum", "_minimum_scalar", "_minimum_scalar", min),
    "hypot": ("broadcast_hypot", "_hypot_scalar", "_hypot_scalar",
              lambda a, b: (a * a + b * b) ** 0.5),
    "equal": ("broadcast_equal", "_equal_scalar", "_equal_scalar",
              lambda a, b: int(a == b)),
    "not_equal": ("broadcast_not_equal", "_not_equal_scalar", "_not_equal_scalar",
                  lambda a, b: int(a != b)),
    "greater": ("broadcast_greater", "_greater_scalar", "_lesser_scalar",
                lambda a, b: int(a > b)),
    "greater_equal": ("broadcast_greater_equal", "_greater_equal_scalar",
                      "_lesser_equal_scalar", lambda a, b: int(a >= b)),
    "lesser": ("broadcast_lesser", "_lesser_scalar", "_greater_scalar",
               lambda a, b: int(a < b)),
    "lesser_equal": ("broadcast_lesser_equal", "_lesser_equal_scalar",
                     "_greater_equal_scalar", lambda a, b: int(a <= b)),
    "logical_and": ("broadcast_logical_and", "_logical_and_scalar", "_logical_and_scalar",
                    lambda a, b: int(bool(a) and bool(b))),
    "logical_or": ("broadcast_logical_or", "_logical_or_scalar", "_logical_or_scalar",
                   lambda a, b: int(bool(a) or bool(b))),
    "logical_xor": ("broadcast_logical_xor", "_logical_xor_scalar", "_logical_xor_scalar",
                    lambda a, b: int(bool(a) != bool(b))),
}
NAMES = frozenset(_TABLE)


def _binary(name):
    tensor, scalar, rscalar, numbers_op = _TABLE[name]

    def call(lhs, rhs, out=None, name=None, **_):
        kw = {} if out is None else {"out": out}
        if name is not None:
            kw["name"] = name
        left, right = (isinstance(v, numbers.Number) for v in (lhs, rhs))
        if left and right:
            return numbers_op(lhs, rhs)
        if right:
            return mx_function(scalar)(lhs, scalar=rhs, **kw)
        if left:
            return mx_function(rscalar)(rhs, scalar=lhs, **kw)
        return mx_function(tensor)(lhs, rhs, **kw)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = (f"MXNet's {name}: {tensor} for two arrays or Symbols, {scalar} with a "
                    "scalar.")
    return call


FUNCTIONS = {name: _binary(name) for name in _TABLE}
