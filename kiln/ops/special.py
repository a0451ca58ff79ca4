"""Special functions and bitwise ops: primitives NumPy has no ufunc for (gammaln, digamma,
gamma, erfinv) or that no composition of other primitives gives (bitwise and/or/xor/not).

NumPy has no log-gamma, gamma, digamma or inverse error function, so their kernels are
written here: lgamma and gamma from the standard library per element (the libm functions
the C backend calls), digamma by recurrence up to x >= 10 and the asymptotic series, erfinv
by Giles' approximation polished with Newton steps on erf (kiln/backend/c/special_ops.py
has the same algorithms in C).
"""
import math

import numpy as _np

from .registry import register
from .rules import unary_float, binary_promote, unary_same, is_float, DEFAULT_FLOAT
from .._core.base import op_error, DTypeError


def _float_in(x):
    return x if is_float(x.dtype) else x.astype(DEFAULT_FLOAT)


def _lgamma_scalar(v):
    try:
        return math.lgamma(v)
    except ValueError:          # poles at 0, -1, -2, ...: the limit is +inf
        return math.inf


_LGAMMA = _np.frompyfunc(_lgamma_scalar, 1, 1)


def _digamma_f64(x):
    x = _np.array(x, dtype=_np.float64)
    out = _np.zeros_like(x)
    # reflection for x < 0.5: psi(x) = psi(1 - x) - pi / tan(pi x)
    neg = x < 0.5
    with _np.errstate(divide="ignore", invalid="ignore"):
        out[neg] -= _np.pi / _np.tan(_np.pi * x[neg])
    x = _np.where(neg, 1.0 - x, x)
    # recurrence psi(x) = psi(x + 1) - 1/x until x >= 10, where the series is accurate
    for _ in range(10):
        small = x < 10.0
        if not small.any():
            break
        out[small] -= 1.0 / x[small]
        x = _np.where(small, x + 1.0, x)
    inv2 = 1.0 / (x * x)
    series = inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (
        1 / 240 - inv2 * (1 / 132)))))
    out += _np.log(x) - 0.5 / x - series
    return out


@register("digamma", unary_float("digamma"), elementwise=True)
def digamma(x):
    """The logarithmic derivative of the gamma function (no gradient: trigamma)."""
    x = _float_in(x)
    return _digamma_f64(x).astype(x.dtype)


@register("gammaln", unary_float("gammaln"), lambda g, out, x: (g * digamma(x),),
          elementwise=True)
def gammaln(x):
    """log |Gamma(x)|."""
    x = _float_in(x)
    return _np.asarray(_LGAMMA(x), dtype=_np.float64).astype(x.dtype)


def _gamma_scalar(v):
    try:
        return math.gamma(v)
    except ValueError:          # a pole: C's tgamma gives inf at 0 and NaN at -1, -2, ...
        return math.copysign(math.inf, v) if v == 0 else math.nan
    except OverflowError:
        return math.inf


_GAMMA = _np.frompyfunc(_gamma_scalar, 1, 1)


@register("gamma", unary_float("gamma"), lambda g, out, x: (g * out * digamma(x),),
          elementwise=True)
def gamma(x):
    """The gamma function (C's tgamma: NaN at the negative integers)."""
    x = _float_in(x)
    with _np.errstate(over="ignore"):     # beyond float32's range: inf, as in C
        return _np.asarray(_GAMMA(x.astype(_np.float64)), dtype=_np.float64).astype(x.dtype)


_ERF = _np.frompyfunc(math.erf, 1, 1)


def _erfinv_f64(y):
    y = _np.asarray(y, dtype=_np.float64)
    with _np.errstate(divide="ignore", invalid="ignore"):
        w = -_np.log((1.0 - y) * (1.0 + y))
        # Giles (2010), "Approximating the erfinv function": single-precision start
        wc = w - 2.5
        p_c = 2.81022636e-08
        for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                  -0.00125372503, -0.00417768164, 0.246640727, 1.50140941):
            p_c = c + p_c * wc
        wt = _np.sqrt(_np.maximum(w, 5.0)) - 3.0
        p_t = -0.000200214257
        for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                  -0.0076224613, 0.00943887047, 1.00167406, 2.83297682):
            p_t = c + p_t * wt
        x = _np.where(w < 5.0, p_c, p_t) * y
        finite = _np.abs(y) < 1
        for _ in range(2):      # Newton on erf(x) = y: double precision
            err = _np.asarray(_ERF(_np.where(finite, x, 0.0)), dtype=_np.float64) - y
            x = _np.where(finite, x - err / (2 / math.sqrt(math.pi) * _np.exp(-x * x)), x)
    x = _np.where(y == 1, _np.inf, _np.where(y == -1, -_np.inf, x))
    return _np.where(_np.abs(y) > 1, _np.nan, x)


@register("erfinv", unary_float("erfinv"),
          lambda g, out, x: (g * _erfinv_slope(out),), elementwise=True)
def erfinv(x):
    """The inverse error function on [-1, 1] (nan outside)."""
    x = _float_in(x)
    return _erfinv_f64(x).astype(x.dtype)


def _erfinv_slope(out):
    """d erfinv(x)/dx = sqrt(pi)/2 * exp(erfinv(x)^2), from the output."""
    from .elementwise import exp
    return exp(out * out) * (math.sqrt(math.pi) / 2)


# ---- inverse hyperbolics, the cube root, log1p, expm1: NumPy's ufuncs, C99's functions ------
# (as compositions of log and sqrt they lose precision near 0: arcsinh(1e-5) was 1e-3 off)

def _float_ufunc(fn):
    def impl(x):
        x = _float_in(x)
        with _np.errstate(invalid="ignore", divide="ignore"):
            return fn(x.astype(_np.float64)).astype(x.dtype)
    impl.__doc__ = f"NumPy's {fn.__name__}, computed in double and rounded once (as in C)."
    return impl


def _sqrt(x):
    from .elementwise import sqrt
    return sqrt(x)


register("arcsinh", unary_float("arcsinh"), lambda g, out, x: (g / _sqrt(x * x + 1),),
         elementwise=True)(_float_ufunc(_np.arcsinh))
register("arccosh", unary_float("arccosh"), lambda g, out, x: (g / _sqrt(x * x - 1),),
         elementwise=True)(_float_ufunc(_np.arccosh))
register("arctanh", unary_float("arctanh"), lambda g, out, x: (g / (1 - x * x),),
         elementwise=True)(_float_ufunc(_np.arctanh))
register("cbrt", unary_float("cbrt"), lambda g, out, x: (g / (out * out * 3),),
         elementwise=True)(_float_ufunc(_np.cbrt))
# log(1 + x) and exp(x) - 1 near 0 (as compositions, log1p(1e-10) was 0 in float32)
register("log1p", unary_float("log1p"), lambda g, out, x: (g / (x + 1),),
         elementwise=True)(_float_ufunc(_np.log1p))
register("expm1", unary_float("expm1"), lambda g, out, x: (g * (out + 1),),
         elementwise=True)(_float_ufunc(_np.expm1))


# ---- bitwise ---------------------------------------------------------------------------------

def _integer_rule(name, rule):
    def checked(*xs):
        for x in xs:
            if _np.dtype(x.dtype).kind not in "iub":
                raise op_error(name, f"expected integer or boolean arrays, got {x.dtype}",
                               DTypeError)
        return rule(*xs)
    checked.__name__ = rule.__name__
    return checked


for _name, _fn in (("bitwise_and", _np.bitwise_and), ("bitwise_or", _np.bitwise_or),
                   ("bitwise_xor", _np.bitwise_xor)):
    globals()[_name] = register(_name, _integer_rule(_name, binary_promote(_name)),
                                elementwise=True)(lambda a, b, _fn=_fn: _fn(a, b))

invert = register("invert", _integer_rule("invert", unary_same("invert")), elementwise=True)(
    lambda x: _np.invert(x))
