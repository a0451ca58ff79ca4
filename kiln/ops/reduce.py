"""Reductions: sum, max, min, prod, argmax, argmin."""
import numpy as _np

from .registry import register
from .rules import reduce_shape
from .._core.base import normalize_axis, op_error


def _expand_back(g, x, axis, keepdims):
    """Reshape a reduced gradient so it broadcasts against the input again."""
    from .shape import reshape, broadcast_to
    if not keepdims:
        g = reshape(g, shape=reduce_shape("sum", x.shape, axis, True))
    return broadcast_to(g, shape=tuple(x.shape))


_SUM_DTYPE = {}


def _sum_dtype(dtype):
    dt = _SUM_DTYPE.get(dtype)
    if dt is None:
        dt = _SUM_DTYPE[dtype] = _np.zeros(1, dtype).sum().dtype
    return dt


def _reduce_rule(name, dtype_of=lambda dt: dt):
    def rule(x, axis=None, keepdims=False):
        return reduce_shape(name, x.shape, axis, keepdims), dtype_of(x.dtype)
    rule.__name__ = f"{name}_shape"
    return rule


@register("sum", _reduce_rule("sum", _sum_dtype),
          lambda g, out, x, axis=None, keepdims=False: (_expand_back(g, x, axis, keepdims),))
def sum_(x, axis=None, keepdims=False):
    return _np.sum(x, axis=axis, keepdims=keepdims)


def _extreme_grad(g, out, x, axis=None, keepdims=False):
    from .elementwise import equal, cast
    o = _expand_back(out, x, axis, keepdims)
    mask = cast(equal(x, o), dtype=x.dtype)
    count = _expand_back(sum_(mask, axis=axis, keepdims=keepdims), x, axis, keepdims)
    return (_expand_back(g, x, axis, keepdims) * mask / count,)


def _check_nonempty(name, x, axis):
    if x.size == 0:
        raise op_error(name, f"zero-size array of shape {x.shape} has no {name}")


def _nonempty_rule(name, rule):
    """The shape rule with the empty check: it runs while tracing too, so compiled code
    raises where eager does (a check in the kernel alone would only run eagerly)."""
    def checked(x, axis=None, keepdims=False):
        _check_nonempty(name, x, axis)
        return rule(x, axis=axis, keepdims=keepdims)
    return checked


@register("max", _nonempty_rule("max", _reduce_rule("max")), _extreme_grad)
def max_(x, axis=None, keepdims=False):
    _check_nonempty("max", x, axis)
    return _np.max(x, axis=axis, keepdims=keepdims)


@register("min", _nonempty_rule("min", _reduce_rule("min")), _extreme_grad)
def min_(x, axis=None, keepdims=False):
    _check_nonempty("min", x, axis)
    return _np.min(x, axis=axis, keepdims=keepdims)


def _prod_grad(g, out, x, axis=None, keepdims=False):
    """g times the product of the other factors, zeros included (as PyTorch's rule): out / x
    where x is not 0 (out is 0 there when the run holds a zero, which is right); where x is
    0, the product of the run's other factors when it is the run's only zero, else 0.
    out / x alone gives 0/0 = NaN at a zero, so a compiled dot that rounded a factor to an
    exact 0 where eager left 1e-8 gave NaN against eager's number (fuzz, issue 24).
    The rule is written with primitives, so it has gradients of its own: exact with at most
    one zero in a run; with several, the second derivative between two zeros is 0 here."""
    from .creation import full
    from .elementwise import cast, equal, where
    zero = equal(x, 0)
    # 1 at a zero, through where: the factor at the zero then has no gradient path into
    # `others`, which must not depend on it
    safe = where(zero, full(shape=tuple(x.shape), value=1, dtype=x.dtype), x)
    others = prod(safe, axis=axis, keepdims=keepdims)
    only_zero = equal(sum_(cast(zero, dtype=x.dtype), axis=axis, keepdims=keepdims), 1)
    at_zero = where(only_zero, others, full(shape=tuple(others.shape), value=0, dtype=x.dtype))
    factor = where(zero, _expand_back(at_zero, x, axis, keepdims),
                   _expand_back(out, x, axis, keepdims) / safe)
    return (_expand_back(g, x, axis, keepdims) * factor,)


@register("prod", _reduce_rule("prod", _sum_dtype), _prod_grad)
def prod(x, axis=None, keepdims=False):
    return _np.prod(x, axis=axis, keepdims=keepdims)


def _arg_rule(name):
    def rule(x, axis=None, keepdims=False):
        if axis is None:
            shape = (1,) * x.ndim if keepdims else ()
        else:
            ax = normalize_axis(name, axis, x.ndim)
            shape = tuple((1 if keepdims else None) if i == ax else d
                          for i, d in enumerate(x.shape))
            shape = tuple(d for d in shape if d is not None)
        return shape, _np.dtype(_np.int64)
    return rule


@register("argmax", _nonempty_rule("argmax", _arg_rule("argmax")))
def argmax(x, axis=None, keepdims=False):
    _check_nonempty("argmax", x, axis)
    return _np.argmax(x, axis=axis, keepdims=keepdims)


@register("argmin", _nonempty_rule("argmin", _arg_rule("argmin")))
def argmin(x, axis=None, keepdims=False):
    _check_nonempty("argmin", x, axis)
    return _np.argmin(x, axis=axis, keepdims=keepdims)
