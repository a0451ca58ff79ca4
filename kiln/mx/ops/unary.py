"""MXNet 1.x's one-input elementwise math by name (the trigonometric and hyperbolic
functions, logarithms of other bases, rounding, logical_not, softsign), mapped onto
kiln.np / kiln.npx. Rounding follows MXNet: `round` halves away from zero, `rint` halves
down (x - floor(x) <= 0.5 gives floor(x)), `fix` and `trunc` toward zero; their gradients
are zero."""
import numpy as _np

from ... import np as knp, npx as knpx
from .table import _op

for _name in ("arccos arccosh arcsin arcsinh arctan arctanh cbrt cosh sinh tan degrees "
              "radians log10 log2 trunc").split():
    _op(_name, same_shape=True)(lambda data, _f=getattr(knp, _name), **_: _f(data))


@_op("fix", same_shape=True)
def fix(data, **_):
    return knp.trunc(data)


@_op("round", same_shape=True)
def round_(data, **_):
    if _np.issubdtype(data.dtype, _np.integer):     # already whole: int32 stays int32, exact
        return knp.copy(data)
    return knp.sign(data) * knp.floor(knp.abs(data) + 0.5)


@_op("rint", same_shape=True)
def rint(data, **_):
    low = knp.floor(data)
    return knp.where(data - low <= 0.5, low, knp.ceil(data))


@_op("logical_not", same_shape=True)
def logical_not(data, **_):
    return (data == 0).astype(data.dtype)


@_op("softsign", same_shape=True)
def softsign(data, **_):
    return knpx.softsign(data)
