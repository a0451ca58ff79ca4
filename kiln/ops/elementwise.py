"""Elementwise primitives: unary math, binary arithmetic, comparisons, where, cast."""
import math

import numpy as _np

from .registry import register
from .rules import (unary_same, unary_float, binary_promote, binary_float, binary_bool,
                    broadcast_shapes, is_float, DEFAULT_FLOAT)
from .util import sum_to


def _float_kernel(fn):
    def impl(x):
        if not is_float(x.dtype):
            x = x.astype(DEFAULT_FLOAT)
        return fn(x)
    impl.__doc__ = fn.__doc__
    return impl


# ---- unary ---------------------------------------------------------------------------------

@register("negative", unary_same("negative"), lambda g, out, x: (-g,), elementwise=True)
def negative(x):
    return _np.negative(x)


@register("exp", unary_float("exp"), lambda g, out, x: (g * out,), elementwise=True)
@_float_kernel
def exp(x):
    return _np.exp(x)


@register("log", unary_float("log"), lambda g, out, x: (g / x,), elementwise=True)
@_float_kernel
def log(x):
    return _np.log(x)


@register("sqrt", unary_float("sqrt"), lambda g, out, x: (g / (out * 2),), elementwise=True)
@_float_kernel
def sqrt(x):
    return _np.sqrt(x)


@register("abs", unary_same("abs"), lambda g, out, x: (g * sign(x),), elementwise=True)
def abs_(x):
    return _np.abs(x)


@register("sign", unary_same("sign"), lambda g, out, x: (g * 0,), elementwise=True,
          check_grad=False)
def sign(x):
    return _np.sign(x)


@register("sin", unary_float("sin"), lambda g, out, x: (g * cos(x),), elementwise=True)
@_float_kernel
def sin(x):
    return _np.sin(x)


@register("cos", unary_float("cos"), lambda g, out, x: (-(g * sin(x)),), elementwise=True)
@_float_kernel
def cos(x):
    return _np.cos(x)


@register("arcsin", unary_float("arcsin"), lambda g, out, x: (g / sqrt(1 - x * x),),
          elementwise=True)
@_float_kernel
def arcsin(x):
    return _np.arcsin(x)


@register("arccos", unary_float("arccos"), lambda g, out, x: (-(g / sqrt(1 - x * x)),),
          elementwise=True)
@_float_kernel
def arccos(x):
    return _np.arccos(x)


@register("arctan", unary_float("arctan"), lambda g, out, x: (g / (1 + x * x),),
          elementwise=True)
@_float_kernel
def arctan(x):
    return _np.arctan(x)


@register("tanh", unary_float("tanh"), lambda g, out, x: (g * (1 - out * out),), elementwise=True)
@_float_kernel
def tanh(x):
    return _np.tanh(x)


@register("sigmoid", unary_float("sigmoid"), lambda g, out, x: (g * out * (1 - out),),
          elementwise=True)
@_float_kernel
def sigmoid(x):
    # the two-sided form never overflows exp
    e = _np.exp(-_np.abs(x))
    return _np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


def relu_grad(g, out):
    """ReLU's gradient from its output: g where out > 0, else 0 (NaN included: 0, as the
    compiled backward's mask gives). Eagerly, on large float32 arrays, one pass of the
    eager kernel registered on relu (`relu_backward`: oneDNN, on its threads; NumPy: a
    mask, then a product)."""
    from .._core import autograd
    kernels = relu.lowerings.get("eager")
    if (kernels is not None and g._node is None and out._node is None
            and not autograd.is_recording() and g.dtype == _np.float32):
        from .._core.ndarray import ndarray
        fast = kernels.relu_backward(g._data, out._data)
        if fast is not None:
            if _np.isnan(out._data.max(initial=0.0)):
                fast[_np.isnan(out._data)] = 0   # oneDNN passes g where out is NaN
            return ndarray._wrap(fast)
    return g * (out > 0)


# the mask from the output (the same bits: relu(x) > 0 exactly where x > 0, NaN included):
# a compiled backward then recomputes it from the activation the next layer saves anyway
# (graph/split.py) instead of keeping a mask of its own
@register("relu", unary_same("relu"), lambda g, out, x: (relu_grad(g, out),),
          elementwise=True)
def relu(x):
    # NumPy's, not oneDNN's (which gives 0 for NaN, where NumPy and MXNet's own kernel keep
    # NaN); a zero of x's own type: NumPy takes a slower loop for a Python int (52 against
    # 28 ms on 32x16x256x256 float32)
    return _np.maximum(x, x.dtype.type(0))


_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


@register("erf", unary_float("erf"),
          lambda g, out, x: (g * exp(-(x * x)) * _TWO_OVER_SQRT_PI,), elementwise=True)
@_float_kernel
def erf(x):
    # Abramowitz & Stegun 7.1.26 (absolute error below 1.5e-7), since NumPy has no erf
    x64 = x.astype(_np.float64)
    t = 1.0 / (1.0 + 0.3275911 * _np.abs(x64))
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741
                                                         + t * (-1.453152027 + t * 1.061405429))))
    return (_np.sign(x64) * (1.0 - poly * _np.exp(-x64 * x64))).astype(x.dtype)


def _zero_grad(g, out, x):
    return (g * 0,)


floor = register("floor", unary_same("floor"), _zero_grad, elementwise=True,
                 check_grad=False)(lambda x: _np.floor(x))
register("ceil", unary_same("ceil"), _zero_grad, elementwise=True, check_grad=False)(
    lambda x: _np.ceil(x))
register("round", unary_same("round"), _zero_grad, elementwise=True, check_grad=False)(
    lambda x: _np.round(x))


@register("logical_not", lambda x: (x.shape, _np.dtype(_np.bool_)), elementwise=True)
def logical_not(x):
    return _np.logical_not(x)


# ---- binary --------------------------------------------------------------------------------

def _binary_grad(fa, fb):
    def grad(g, out, a, b):
        return sum_to(fa(g, out, a, b), a), sum_to(fb(g, out, a, b), b)
    return grad


@register("add", binary_promote("add"), _binary_grad(lambda g, o, a, b: g, lambda g, o, a, b: g),
          elementwise=True)
def add(a, b):
    return _np.add(a, b)


@register("subtract", binary_promote("subtract"),
          _binary_grad(lambda g, o, a, b: g, lambda g, o, a, b: -g), elementwise=True)
def subtract(a, b):
    return _np.subtract(a, b)


@register("multiply", binary_promote("multiply"),
          _binary_grad(lambda g, o, a, b: g * b, lambda g, o, a, b: g * a), elementwise=True)
def multiply(a, b):
    return _np.multiply(a, b)


def _divide_impl(a, b):
    dt = _np.result_type(a.dtype, b.dtype)
    if not is_float(dt):
        dt = DEFAULT_FLOAT
    with _np.errstate(divide="ignore", invalid="ignore"):
        return _np.true_divide(a, b, dtype=dt)


register("divide", binary_float("divide"),
         _binary_grad(lambda g, o, a, b: g / b, lambda g, o, a, b: -(g * o) / b),
         elementwise=True)(_divide_impl)


def _power_grad_b(g, out, a, b):
    return g * out * log(where(a > 0, a, 1))


@register("power", binary_promote("power"),
          _binary_grad(lambda g, o, a, b: g * b * power(a, b - 1), _power_grad_b),
          elementwise=True)
def power(a, b):
    with _np.errstate(divide="ignore", invalid="ignore"):
        if not is_float(a.dtype) and not is_float(b.dtype):
            negative = _np.asarray(b) < 0
            if negative.any():
                # integer ** negative integer is an error in NumPy; kiln takes the float
                # power there, truncated, element by element (as the C backend's
                # kiln_ipow): the other elements keep NumPy's integer power, which wraps
                dtype = _np.result_type(a, b)
                ints = _np.power(a, _np.where(negative, 0, b).astype(b.dtype))
                floats = _np.power(_np.asarray(a, DEFAULT_FLOAT), _np.asarray(b, DEFAULT_FLOAT))
                return _np.where(negative, floats.astype(dtype), ints)
        return _np.power(a, b)


def _select_grad(pick_a):
    def grad(g, out, a, b):
        mask_a = pick_a(a, b)
        zero = g * 0
        return sum_to(where(mask_a, g, zero), a), sum_to(where(mask_a, zero, g), b)
    return grad


@register("maximum", binary_promote("maximum"), _select_grad(lambda a, b: a >= b),
          elementwise=True)
def maximum(a, b):
    return _np.maximum(a, b)


@register("minimum", binary_promote("minimum"), _select_grad(lambda a, b: a <= b),
          elementwise=True)
def minimum(a, b):
    return _np.minimum(a, b)


def _mod_impl(a, b):
    with _np.errstate(divide="ignore", invalid="ignore"):
        return _np.mod(a, b)


register("mod", binary_promote("mod"),
         _binary_grad(lambda g, o, a, b: g, lambda g, o, a, b: -(g * floor(a / b))),
         elementwise=True, check_grad=False)(_mod_impl)


for _name, _fn in (("equal", _np.equal), ("not_equal", _np.not_equal), ("less", _np.less),
                   ("less_equal", _np.less_equal), ("greater", _np.greater),
                   ("greater_equal", _np.greater_equal), ("logical_and", _np.logical_and),
                   ("logical_or", _np.logical_or), ("logical_xor", _np.logical_xor)):
    # bound as module names too, so gradient rules can use them (equal in max's rule)
    globals()[_name] = register(_name, binary_bool(_name), elementwise=True)(
        lambda a, b, _fn=_fn: _fn(a, b))


# ---- where and cast ------------------------------------------------------------------------

def _where_shape(c, a, b):
    return broadcast_shapes("where", c.shape, a.shape, b.shape), _np.result_type(a.dtype, b.dtype)


def _where_grad(g, out, c, a, b):
    # g * c is where(c, g, g * 0) to the bit (an inf or NaN gradient too: g * 0 either
    # way), and a multiply costs a fifth of NumPy's where on large arrays, whose loop
    # branches on every element (LeakyReLU's gradient in DCGAN)
    from .._core.autograd import input_needed
    if c.dtype != _np.bool_:
        c = cast(c, dtype=_np.dtype(_np.bool_))
    return (None, sum_to(g * c, a) if input_needed(1) else None,
            sum_to(g * logical_not(c), b) if input_needed(2) else None)


@register("where", _where_shape, _where_grad, elementwise=True)
def where(c, a, b):
    return _np.where(c, a, b)


def _cast_shape(x, dtype):
    return x.shape, _np.dtype(dtype)


def _cast_grad(g, out, x, dtype):
    if _np.dtype(dtype) == x.dtype:
        # a same-type cast is a copy (ndarray.copy records one): it passes the gradient on,
        # as the alias a trace makes of it does, whatever the dtype (fuzz seed 14, #153)
        return (g,)
    if not is_float(x.dtype):
        return (None,)
    return (cast(g, dtype=x.dtype),)


@register("cast", _cast_shape, _cast_grad, elementwise=True)
def cast(x, dtype):
    return x.astype(dtype)
