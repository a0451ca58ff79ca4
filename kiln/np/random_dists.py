"""More of MXNet's `np.random` distributions: exponential, gumbel, logistic, lognormal,
pareto, power, rayleigh, weibull (transforms of one uniform or normal draw), gamma, beta,
chisquare (from the gamma draw) and multivariate_normal.

Every draw comes from kiln's one generator (`np.random.seed` fixes them all) through the
random primitives, so a hybridized function draws anew on each call. Parameters may be
arrays: the draw then has their broadcast shape (or `size`), as in NumPy.
"""
import numpy as _np

from .._core.base import DEFAULT_FLOAT, normalize_dtype, op_error, KilnError
from .._core.ndarray import ndarray
from ..ops import REGISTRY as _R
from ._base import _arr
from .math import log, exp, sqrt, power, maximum
from .random import _size, _out


def _params(*values):
    """Array parameters as arrays (broadcast together), scalars as floats."""
    arrays = [v for v in values if isinstance(v, (ndarray, list, tuple, _np.ndarray))]
    if not arrays:
        return [float(v) for v in values], ()
    from .manipulation import broadcast_arrays
    full = broadcast_arrays(*[_arr(v) for v in values])
    return full, full[0].shape


def _shape(size, param_shape):
    shape = _size(size)
    return shape if size is not None else param_shape


def _uniform_open(shape, dtype):
    """Uniform on (0, 1]: 1 - U[0, 1), so log() of it is finite."""
    u = _R["random_uniform"](shape=shape, dtype=dtype, low=0.0, high=1.0)
    return 1.0 - u


def _dtype(dtype):
    return normalize_dtype(dtype, DEFAULT_FLOAT)


def _tiny(dtype):
    return float(_np.finfo(dtype).tiny)


def exponential(scale=1.0, size=None, dtype=None, ctx=None, device=None, out=None):
    """Samples from an exponential distribution with `scale` (1 / rate)."""
    (scale,), pshape = _params(scale)
    dt = _dtype(dtype)
    e = -log(_uniform_open(_shape(size, pshape), dt))
    return _out(e * scale, out)


def gumbel(loc=0.0, scale=1.0, size=None, dtype=None, ctx=None, device=None, out=None):
    """Samples from a Gumbel distribution with `loc` and `scale`."""
    (loc, scale), pshape = _params(loc, scale)
    dt = _dtype(dtype)
    e = -log(_uniform_open(_shape(size, pshape), dt))
    return _out(loc - scale * log(maximum(e, _tiny(dt))), out)


def logistic(loc=0.0, scale=1.0, size=None, dtype=None, ctx=None, device=None, out=None):
    """Samples from a logistic distribution with `loc` and `scale`."""
    (loc, scale), pshape = _params(loc, scale)
    dt = _dtype(dtype)
    u = _uniform_open(_shape(size, pshape), dt)
    return _out(loc + scale * (log(u) - log(maximum(1.0 - u, _tiny(dt)))), out)


def lognormal(mean=0.0, sigma=1.0, size=None, dtype=None, ctx=None, device=None, out=None):
    """Samples `exp(normal(mean, sigma))` from a log-normal distribution."""
    (mean, sigma), pshape = _params(mean, sigma)
    z = _R["random_normal"](shape=_shape(size, pshape), dtype=_dtype(dtype))
    return _out(exp(mean + sigma * z), out)


def pareto(a, size=None, dtype=None, ctx=None, device=None, out=None):
    """NumPy's pareto: the Lomax (Pareto II) distribution, (1 - U)^(-1/a) - 1."""
    (a,), pshape = _params(a)
    u = _uniform_open(_shape(size, pshape), _dtype(dtype))
    return _out(power(u, -1.0 / a) - 1.0, out)


def power_(a, size=None, dtype=None, ctx=None, device=None, out=None):
    """Samples on [0, 1] with density a x^(a-1): U^(1/a)."""
    (a,), pshape = _params(a)
    u = _uniform_open(_shape(size, pshape), _dtype(dtype))
    return _out(power(u, 1.0 / a), out)


def rayleigh(scale=1.0, size=None, dtype=None, ctx=None, device=None, out=None):
    """Samples from a Rayleigh distribution with `scale`."""
    (scale,), pshape = _params(scale)
    u = _uniform_open(_shape(size, pshape), _dtype(dtype))
    return _out(scale * sqrt(-2.0 * log(u)), out)


def weibull(a, size=None, dtype=None, ctx=None, device=None, out=None):
    """Samples from a Weibull distribution with shape `a` (and scale 1)."""
    (a,), pshape = _params(a)
    u = _uniform_open(_shape(size, pshape), _dtype(dtype))
    return _out(power(-log(u), 1.0 / a), out)


def _gamma_draw(alpha, shape, dt):
    if isinstance(alpha, ndarray):
        # per-element shape parameters: NumPy's sampler on the concrete values
        from ..ops.creation import _RandomState
        a = _np.broadcast_to(alpha._concrete("random.gamma()"), shape)
        if (a <= 0).any():
            raise op_error("random.gamma", "shape parameter must be positive", KilnError)
        return ndarray._wrap(_RandomState.generator.gamma(a).astype(dt))
    if alpha <= 0:
        raise op_error("random.gamma", f"shape parameter must be positive, got {alpha}",
                       KilnError)
    return _R["random_gamma"](shape=shape, dtype=dt, alpha=alpha, scale=1.0)


def gamma(shape=1.0, scale=1.0, size=None, dtype=None, ctx=None, device=None, out=None):
    """Samples from a gamma distribution with `shape` and `scale`."""
    (k, scale), pshape = _params(shape, scale)
    dt = _dtype(dtype)
    return _out(_gamma_draw(k, _shape(size, pshape), dt) * scale, out)


def beta(a, b, size=None, dtype=None, ctx=None, device=None):
    """Samples from a beta distribution with parameters `a` and `b`."""
    (a, b), pshape = _params(a, b)
    dt = _dtype(dtype)
    shape = _shape(size, pshape)
    x, y = _gamma_draw(a, shape, dt), _gamma_draw(b, shape, dt)
    return x / (x + y)


def chisquare(df, size=None, dtype=None, ctx=None, device=None):
    """Samples from a chi-square distribution with `df` degrees of freedom."""
    (df,), pshape = _params(df)
    dt = _dtype(dtype)
    return _gamma_draw(df * 0.5, _shape(size, pshape), dt) * 2.0


def multivariate_normal(mean, cov, size=None, check_valid=None, tol=None, dtype=None):
    """mean + L z, L the Cholesky factor of cov (an eigen-factor if cov is only
    semi-definite); the last axis is the distribution's."""
    m = _arr(mean)
    c = _np.asarray(_arr(cov)._concrete("multivariate_normal()"), dtype=_np.float64)
    n = m.shape[-1]
    if c.shape != (n, n):
        raise op_error("multivariate_normal", f"cov must be of shape ({n}, {n}) for a mean "
                       f"of length {n}, got {c.shape}", KilnError)
    try:
        factor = _np.linalg.cholesky(c)
    except _np.linalg.LinAlgError:
        w, v = _np.linalg.eigh(c)
        factor = v * _np.sqrt(_np.clip(w, 0, None))
    shape = _size(size) + (n,)
    dt = m.dtype if m.dtype.kind == "f" else _dtype(dtype)
    z = _R["random_normal"](shape=shape, dtype=dt)
    from .products import matmul
    lt = ndarray._wrap(factor.T.astype(dt))
    return m + matmul(z, lt)
