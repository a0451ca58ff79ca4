"""More of NumPy's elementwise math (MXNet's `np.arctan2`, `np.hypot`, `np.cbrt`, ...).

Each is composed of registry primitives, so gradients and compilation come from them;
the few with no composition (gammaln, erfinv, bitwise ops) are primitives in
kiln/ops/special.py. Integer inputs compute in the default float, as kiln's other
float math does.
"""
import numpy as _np

from .._core.dispatch import to_operands
from .._core.ndarray import ndarray
from ..ops import REGISTRY as _R
from .math import (_arr, _float, _out, abs, arctan, ceil, exp, floor, log1p, sign, sqrt,
                   where, divide, power)


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
    a, b = abs(a), abs(b)
    big = _R["maximum"](a, b)
    safe = where(big == 0, 1.0, big)
    small = _R["minimum"](a, b) / safe
    return _out(big * sqrt(1.0 + small * small), out)


def _signbit(x):
    # -0.0 has its sign bit set: 1 / -0.0 is -inf
    return (x < 0) | ((x == 0) & (divide(1.0, x) < 0))


def signbit(x, out=None):
    x = _arr(x)
    if x.dtype.kind in "iub":
        return _out(x < 0, out)
    return _out(_signbit(x), out)


def copysign(x1, x2, out=None):
    a, b = _pair(x1, x2)
    mag = abs(a)
    return _out(where(_signbit(b), -mag, mag), out)


def cbrt(x, out=None):
    return _out(_R["cbrt"](_arr(x)), out)


def fabs(x, out=None):
    return _out(abs(_float(_arr(x))), out)


def fix(x, out=None):
    """Round towards zero."""
    x = _float(_arr(x))
    return _out(where(x < 0, ceil(x), floor(x)), out)


def trunc(x, out=None):
    x = _arr(x)
    if x.dtype.kind in "iub":
        return _out(x + 0, out)
    return _out(where(x < 0, ceil(x), floor(x)), out)


def deg2rad(x, out=None):
    return _out(_float(_arr(x)) * (_np.pi / 180.0), out)


def rad2deg(x, out=None):
    return _out(_float(_arr(x)) * (180.0 / _np.pi), out)


radians, degrees = deg2rad, rad2deg


def arcsinh(x, out=None):
    return _out(_R["arcsinh"](_arr(x)), out)


def arccosh(x, out=None):
    return _out(_R["arccosh"](_arr(x)), out)


def arctanh(x, out=None):
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
    from .math import floor_divide, mod
    return floor_divide(x1, x2), mod(x1, x2)


def modf(x, out=None):
    whole = fix(x)
    return _float(_arr(x)) - whole, whole


def ldexp(x1, x2, out=None):
    a = _float(_arr(x1))
    return _out(a * power(2.0, _arr(x2).astype(a.dtype)), out)


def frexp(x, out=None):
    """Mantissa and exponent (eager: the exponent is an integer array)."""
    m, e = _np.frexp(_arr(x)._concrete("frexp()"))
    return ndarray._wrap(m), ndarray._wrap(e)


def positive(x, out=None):
    return _out(_arr(x) + 0, out)


def isposinf(x, out=None):
    x = _arr(x)
    return _out(x == _np.inf, out)


def isneginf(x, out=None):
    x = _arr(x)
    return _out(x == -_np.inf, out)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    x = _arr(x)
    if x.dtype.kind != "f":
        return x + 0
    info = _np.finfo(x.dtype)
    hi = info.max if posinf is None else posinf
    lo = info.min if neginf is None else neginf
    x = where(x != x, nan, x)
    return where(x == _np.inf, hi, where(x == -_np.inf, lo, x))


def logaddexp(x1, x2, out=None):
    a, b = _pair(x1, x2)
    big = _R["maximum"](a, b)
    return _out(big + log1p(exp(-abs(a - b))), out)


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
    return _out(_R["invert"](_arr(x)), out)


bitwise_not = invert


def gammaln(x, out=None):
    return _out(_R["gammaln"](_arr(x)), out)


def gamma(x, out=None):
    return _out(_R["gamma"](_arr(x)), out)


def erf(x, out=None):
    return _out(_R["erf"](_arr(x)), out)


def erfinv(x, out=None):
    return _out(_R["erfinv"](_arr(x)), out)


def i0(x):
    """The modified Bessel function of order 0 (eager: NumPy's i0)."""
    return ndarray._wrap(_np.i0(_float(_arr(x))._concrete("i0()")))


def sinc(x):
    x = _float(_arr(x))
    px = x * _np.pi
    safe = where(px == 0, 1.0, px)
    return where(px == 0, 1.0 + 0.0 * x, _R["sin"](safe) / safe)
