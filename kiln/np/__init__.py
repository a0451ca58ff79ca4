"""kiln.np: the NumPy-compatible array API (MXNet's `mxnet.np`)."""
import numpy as _onp

from .._core.ndarray import ndarray
from .creation import (array, asarray, full, zeros, ones, empty, zeros_like, ones_like,  # noqa
                       full_like, empty_like, arange, linspace, logspace, eye, identity,
                       meshgrid, tril, triu, hamming, hanning, blackman)
from .math import (negative, exp, log, sqrt, abs, absolute, sign, sin, cos, tan, tanh,  # noqa
                   arcsin, arccos, arctan, sinh, cosh, arcsinh, arccosh, arctanh, arctan2,
                   hypot, deg2rad, rad2deg, radians, degrees, floor, ceil, rint, round, around,
                   fix, trunc, add, subtract, multiply, divide, true_divide, power, float_power,
                   maximum, minimum, mod, remainder, divmod, modf, floor_divide, square,
                   reciprocal, positive, cbrt, fabs, clip, heaviside, log2, log10, log1p,
                   expm1, logaddexp, ldexp, frexp, signbit, copysign, equal, not_equal, less,
                   less_equal, greater, greater_equal, logical_not, logical_and, logical_or,
                   logical_xor, isnan, isinf, isfinite, isposinf, isneginf, nan_to_num,
                   bitwise_and, bitwise_or, bitwise_xor, invert, bitwise_not)
from .special import i0, sinc  # noqa: F401
from .reductions import (sum, prod, max, min, amax, amin, argmax, argmin, all, any,  # noqa
                         count_nonzero, cumsum, trace, diff, ediff1d, trapz)
from .statistics import mean, average, var, std, ptp, cov, corrcoef, correlate  # noqa: F401
from .products import matmul, dot, tensordot, vdot, inner, outer  # noqa: F401
from .indexing import (where, take, take_along_axis, choose, select, compress,  # noqa: F401
                       extract, nonzero, argwhere, flatnonzero, diag, diagonal, diagflat,
                       diag_indices_from)
from .sorting import sort, argsort, partition, msort, unique  # noqa: F401
from .manipulation import (reshape, ravel, transpose, swapaxes, moveaxis, expand_dims,  # noqa
                           squeeze, broadcast_to, broadcast_arrays, concatenate, concat, stack,
                           vstack, hstack, column_stack, dstack, split, array_split, hsplit,
                           vsplit, dsplit, flip, fliplr, flipud, roll, rot90, rollaxis, repeat,
                           tile, pad, copy, shape, size, ndim, atleast_1d, atleast_2d,
                           atleast_3d, append, delete, insert)
from .functional import apply_along_axis, apply_over_axes  # noqa: F401
from .io import genfromtxt, loadtxt, savetxt  # noqa: F401
from .einsum import einsum  # noqa: F401
from .numpy_eager import FUNCTIONS as _EAGER, ix_, promote_types, result_type  # noqa: F401
from .numpy_eager import min_scalar_type  # noqa: F401
from . import random, linalg  # noqa: F401

float16 = _onp.float16
float32 = _onp.float32
float64 = _onp.float64
int8 = _onp.int8
uint8 = _onp.uint8
int32 = _onp.int32
int64 = _onp.int64
bool_ = _onp.bool_
bool = _onp.bool_
dtype = _onp.dtype
pi = _onp.pi
e = _onp.e
inf = _onp.inf
nan = _onp.nan
newaxis = None
NAN = NaN = nan
NINF = -inf
PINF = inf
NZERO = -0.0
PZERO = 0.0
globals().update(_EAGER)       # bincount, histogram, digitize, ...: eager, in NumPy
alltrue, sometrue, product, round_, row_stack = all, any, prod, round, vstack


def real(val):
    """The real part of `val`: kiln's arrays are real, so a copy of it as an array."""
    return asarray(val) + 0
finfo = _onp.finfo
# arrays print through NumPy, so NumPy's print options are kiln's
set_printoptions = _onp.set_printoptions
get_printoptions = _onp.get_printoptions
iinfo = _onp.iinfo


def isscalar(x):
    """NumPy's isscalar: whether `x` is a Python or NumPy scalar (a kiln array is not)."""
    return _onp.isscalar(x)


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether every element of `a` and `b` is close (`|a - b| <= atol + rtol * |b|`), as a Python
    bool; computed eagerly."""
    return bool(_onp.allclose(_onp.asarray(a), _onp.asarray(b), rtol, atol, equal_nan))


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Elementwise `|a - b| <= atol + rtol * |b|`, as a boolean array; computed eagerly."""
    return array(_onp.isclose(_onp.asarray(a), _onp.asarray(b), rtol, atol, equal_nan))


def array_equal(a1, a2):
    """Whether `a1` and `a2` have the same shape and elements, as a Python bool."""
    return bool(_onp.array_equal(_onp.asarray(a1), _onp.asarray(a2)))


def _bind_array_methods():
    # x.sum(), x.reshape(...), x @ y: the array type's methods call this namespace
    import sys
    from .._core import methods
    methods.bind_numpy(sys.modules[__name__])


_bind_array_methods()
