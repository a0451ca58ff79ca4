"""Special functions: gammaln, gamma, erf and erfinv (each a registry primitive), NumPy's i0
(eager) and sinc. npx re-exports the first four, as MXNet's npx has them."""
import numpy as _np

from .._core.ndarray import ndarray
from ..ops import REGISTRY as _R
from ._base import _arr, _float, _out
from .indexing import where


def gammaln(x, out=None):
    """Elementwise logarithm of the absolute value of the gamma function."""
    return _out(_R["gammaln"](_arr(x)), out)


def gamma(x, out=None):
    """Elementwise gamma function."""
    return _out(_R["gamma"](_arr(x)), out)


def erf(x, out=None):
    """Elementwise error function."""
    return _out(_R["erf"](_arr(x)), out)


def erfinv(x, out=None):
    """Elementwise inverse of the error function."""
    return _out(_R["erfinv"](_arr(x)), out)


def i0(x):
    """The modified Bessel function of order 0 (eager: NumPy's i0)."""
    return ndarray._wrap(_np.i0(_float(_arr(x))._concrete("i0()")))


def sinc(x):
    """Elementwise normalized sinc, `sin(pi * x) / (pi * x)` (1 at 0)."""
    x = _float(_arr(x))
    px = x * _np.pi
    safe = where(px == 0, 1.0, px)
    return where(px == 0, 1.0 + 0.0 * x, _R["sin"](safe) / safe)
