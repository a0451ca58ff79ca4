"""Elementwise math (NumPy's ufuncs): arithmetic, comparisons and logic, exponents and
logarithms, trigonometric and hyperbolic functions, rounding, floating-point routines and
bitwise operations, over registry primitives.

Most are one primitive; the rest are compositions of primitives, so gradients and
compilation come from those (the few with no composition, such as cbrt and the bitwise
ops, are primitives of their own in kiln/ops/special.py). Integer inputs of the float
functions compute in the default float.
"""
import numpy as _np

from .._core.bfloat16 import finfo
from .._core.dispatch import apply, to_operands
from .._core.ndarray import ndarray
from ..ops import REGISTRY as _R
from ._base import _arr, _float, _out
from .indexing import where


def _unary(name, public=None):
    prim = _R[name]

    def fn(x, out=None, **kwargs):
        return _out(prim(_arr(x)), out)
    fn.__name__ = public or name
    fn.__doc__ = f"Elementwise {public or name} (primitive `{name}`)."
    return fn


def _binary(name, public=None):
    prim = _R[name]

    def fn(x1, x2, out=None, **kwargs):
        return _out(apply(prim, (x1, x2), {}), out)
    fn.__name__ = public or name
    fn.__doc__ = f"Elementwise {public or name} with broadcasting (primitive `{name}`)."
    return fn


negative = _unary("negative")
exp = _unary("exp")
log = _unary("log")
sqrt = _unary("sqrt")
abs = absolute = _unary("abs")
sign = _unary("sign")
sin = _unary("sin")
cos = _unary("cos")
tanh = _unary("tanh")
arcsin = _unary("arcsin")
arccos = _unary("arccos")
arctan = _unary("arctan")
floor = _unary("floor")
ceil = _unary("ceil")
rint = _unary("round", "rint")
logical_not = _unary("logical_not")

add = _binary("add")
subtract = _binary("subtract")
multiply = _binary("multiply")
divide = true_divide = _binary("divide")
power = _binary("power")
maximum = _binary("maximum")
minimum = _binary("minimum")
mod = remainder = _binary("mod")
equal = _binary("equal")
not_equal = _binary("not_equal")
less = _binary("less")
less_equal = _binary("less_equal")
greater = _binary("greater")
greater_equal = _binary("greater_equal")
logical_and = _binary("logical_and")
logical_or = _binary("logical_or")
logical_xor = _binary("logical_xor")


# ---- composites ----------------------------------------------------------------------------

def square(x, out=None):
    """Elementwise `x * x`."""
    x = _arr(x)
    return _out(x * x, out)


def reciprocal(x, out=None):
    """Elementwise `1 / x`, in floating point."""
    return _out(1.0 / _float(_arr(x)), out)


def log2(x, out=None):
    """Elementwise base-2 logarithm."""
    return _out(log(x) * (1.0 / _np.log(2.0)), out)


def log10(x, out=None):
    """Elementwise base-10 logarithm."""
    return _out(log(x) * (1.0 / _np.log(10.0)), out)


def log1p(x, out=None):
    """Elementwise `log(1 + x)`, accurate for small `x`."""
    return _out(_R["log1p"](_float(_arr(x))), out)


def expm1(x, out=None):
    """Elementwise `exp(x) - 1`, accurate for small `x`."""
    return _out(_R["expm1"](_float(_arr(x))), out)


def tan(x, out=None):
    """Elementwise tangent."""
    return _out(sin(x) / cos(x), out)


def sinh(x, out=None):
    """Elementwise hyperbolic sine."""
    e = exp(x)
    return _out((e - 1.0 / e) * 0.5, out)


def cosh(x, out=None):
    """Elementwise hyperbolic cosine."""
    e = exp(x)
    return _out((e + 1.0 / e) * 0.5, out)


def floor_divide(x1, x2, out=None):
    """Elementwise `floor(x1 / x2)`, with broadcasting (Python's `//`)."""
    x1, x2 = to_operands([x1, x2])
    q = floor(divide(x1, x2))
    dt = _np.result_type(x1.dtype, x2.dtype)
    if dt.kind in "iub":
        # NumPy's integer x // 0 is 0; the float quotient would be inf or nan, whose cast
        # to an integer is undefined (and differs between NumPy and C)
        q = where(x2 == 0, 0, q)
    return _out(q if q.dtype == dt else q.astype(dt), out)


def round(x, decimals=0, out=None):
    """Elementwise rounding to `decimals` decimals, halves to even (as NumPy); `around` and
    `round_` are the same function."""
    x = _arr(x)
    if decimals == 0:
        return _out(rint(x), out)
    scale = 10.0 ** decimals
    return _out(rint(x * scale) / scale, out)


around = round


def clip(a, a_min=None, a_max=None, out=None):
    """`a` with values below `a_min` set to `a_min` and above `a_max` set to `a_max` (either may be
    None)."""
    a = _arr(a)
    if a_min is not None:
        a = maximum(a, a_min)
    if a_max is not None:
        a = minimum(a, a_max)
    return _out(a, out)


def isnan(x, out=None):
    """Elementwise test for NaN, as a boolean array."""
    x = _arr(x)
    return _out(x != x, out)


def isinf(x, out=None):
    """Elementwise test for positive or negative infinity, as a boolean array."""
    x = _arr(x)
    return _out(abs(x) == _np.inf, out)


def isfinite(x, out=None):
    """Elementwise test for a value that is neither infinite nor NaN, as a boolean array."""
    x = _arr(x)
    return _out(logical_not(logical_or(isnan(x), isinf(x))), out)


# ---- floating-point routines and more functions of two arguments -------------------------

def _pair(x1, x2):
    a, b = to_operands([x1, x2])
    return _float(a), _float(b)


def arctan2(x1, x2, out=None):
    """The angle of the point (x2, x1), in (-pi, pi], as NumPy's arctan2."""
    y, x = _pair(x1, x2)
    safe_x = where(x == 0, 1.0, x)
    base = arctan(y / safe_x)
    shifted = where(x < 0, where(_signbit(y), base - _np.pi, base + _np.pi), base)
    zero = y * 0.0            # constants in y's dtype; y itself keeps the sign of a zero
    on_axis = where(y == 0, where(_signbit(x), where(_signbit(y), zero - _np.pi,
                                                     zero + _np.pi), y),
                    sign(y) * (_np.pi / 2))
    return _out(where(x == 0, on_axis, shifted), out)


def hypot(x1, x2, out=None):
    """sqrt(x1**2 + x2**2), scaled by the larger magnitude so it neither overflows nor
    underflows where the plain formula would."""
    a, b = _pair(x1, x2)
    # h(a, b) = s * h(a/s, b/s) for any s > 0; with s the larger magnitude held constant
    # (detached), the gradient is exactly a/h and b/h, ties included (max/min would send
    # a tie's whole gradient to one side)
    big = _R["maximum"](abs(a), abs(b)).detach()
    safe = where(big == 0, 1.0, big)
    ra, rb = a / safe, b / safe
    r2 = ra * ra + rb * rb
    zero = r2 == 0       # at the origin: 0, with a zero gradient rather than NaN
    return _out(where(zero, 0.0, safe * sqrt(where(zero, 1.0, r2))), out)


def _signbit(x):
    # -0.0 has its sign bit set: 1 / -0.0 is -inf
    return (x < 0) | ((x == 0) & (divide(1.0, x) < 0))


def signbit(x, out=None):
    """Elementwise test for a set sign bit (`x < 0`, and `-0.0`), as a boolean array."""
    x = _arr(x)
    if x.dtype.kind in "iub":
        return _out(x < 0, out)
    return _out(_signbit(x), out)


def copysign(x1, x2, out=None):
    """Elementwise magnitude of `x1` with the sign of `x2`."""
    a, b = _pair(x1, x2)
    mag = abs(a)
    return _out(where(_signbit(b), -mag, mag), out)


def cbrt(x, out=None):
    """Elementwise cube root."""
    return _out(_R["cbrt"](_arr(x)), out)


def fabs(x, out=None):
    """Elementwise absolute value, in floating point."""
    return _out(abs(_float(_arr(x))), out)


def fix(x, out=None):
    """Round towards zero."""
    x = _float(_arr(x))
    return _out(where(x < 0, ceil(x), floor(x)), out)


def trunc(x, out=None):
    """Elementwise truncation towards zero."""
    x = _arr(x)
    if x.dtype.kind in "iub":
        return _out(x + 0, out)
    return _out(where(x < 0, ceil(x), floor(x)), out)


def deg2rad(x, out=None):
    """Elementwise conversion of angles from degrees to radians (`radians` is the same)."""
    return _out(_float(_arr(x)) * (_np.pi / 180.0), out)


def rad2deg(x, out=None):
    """Elementwise conversion of angles from radians to degrees (`degrees` is the same)."""
    return _out(_float(_arr(x)) * (180.0 / _np.pi), out)


radians, degrees = deg2rad, rad2deg


def arcsinh(x, out=None):
    """Elementwise inverse hyperbolic sine."""
    return _out(_R["arcsinh"](_arr(x)), out)


def arccosh(x, out=None):
    """Elementwise inverse hyperbolic cosine."""
    return _out(_R["arccosh"](_arr(x)), out)


def arctanh(x, out=None):
    """Elementwise inverse hyperbolic tangent."""
    return _out(_R["arctanh"](_arr(x)), out)


def float_power(x1, x2, out=None):
    """x1 ** x2 in float64 (NumPy's float_power)."""
    a, b = to_operands([x1, x2])
    return _out(power(a.astype(_np.float64), b.astype(_np.float64)), out)


def heaviside(x1, x2, out=None):
    """0 where x1 < 0, x2 where x1 == 0, 1 where x1 > 0."""
    a, b = _pair(x1, x2)
    return _out(where(a < 0, 0.0 * a, where(a > 0, 1.0 + 0.0 * a, b + 0.0 * a)), out)


def divmod(x1, x2, out=None):
    """`(floor_divide(x1, x2), mod(x1, x2))`, elementwise."""
    return floor_divide(x1, x2), mod(x1, x2)


def modf(x, out=None):
    """The fractional and integral parts of `x`, elementwise, both with the sign of `x`."""
    whole = fix(x)
    return _float(_arr(x)) - whole, whole


def ldexp(x1, x2, out=None):
    """Elementwise `x1 * 2 ** x2`."""
    a = _float(_arr(x1))
    return _out(a * power(2.0, _arr(x2).astype(a.dtype)), out)


def frexp(x, out=None):
    """Mantissa and exponent (eager: the exponent is an integer array)."""
    m, e = _np.frexp(_arr(x)._concrete("frexp()"))
    return ndarray._wrap(m), ndarray._wrap(e)


def positive(x, out=None):
    """Elementwise `+x`: a copy of `x`."""
    return _out(_arr(x) + 0, out)


def isposinf(x, out=None):
    """Elementwise test for positive infinity, as a boolean array."""
    x = _arr(x)
    return _out(x == _np.inf, out)


def isneginf(x, out=None):
    """Elementwise test for negative infinity, as a boolean array."""
    x = _arr(x)
    return _out(x == -_np.inf, out)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """`x` with NaN replaced by `nan` and infinities by `posinf` / `neginf` (default: the dtype's
    largest and smallest finite values)."""
    x = _arr(x)
    if x.dtype.kind != "f":
        return x + 0
    info = finfo(x.dtype)
    hi = info.max if posinf is None else posinf
    lo = info.min if neginf is None else neginf
    x = where(x != x, nan, x)
    return where(x == _np.inf, hi, where(x == -_np.inf, lo, x))


def logaddexp(x1, x2, out=None):
    """Elementwise `log(exp(x1) + exp(x2))`, computed without overflow."""
    a, b = _pair(x1, x2)
    big = _R["maximum"](a, b)
    return _out(big + log1p(exp(-abs(a - b))), out)


# ---- bitwise operations -----------------------------------------------------------------

def _integer_binary(name):
    prim = _R[name]

    def fn(x1, x2, out=None, **kwargs):
        a, b = to_operands([x1, x2])
        return _out(prim(a, b), out)
    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name} of integer or boolean arrays (primitive `{name}`)."
    return fn


bitwise_and = _integer_binary("bitwise_and")
bitwise_or = _integer_binary("bitwise_or")
bitwise_xor = _integer_binary("bitwise_xor")


def invert(x, out=None):
    """Elementwise bitwise NOT (logical NOT for booleans); `bitwise_not` is the same."""
    return _out(_R["invert"](_arr(x)), out)


bitwise_not = invert
