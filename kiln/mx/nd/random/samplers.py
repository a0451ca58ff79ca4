"""More of MXNet 1.x's random functions: `nd.random.exponential/gamma/poisson/
negative_binomial/generalized_negative_binomial/multinomial`, their `*_like` forms, and the
flat 1.x names (`nd.random_uniform`, `nd.sample_normal`, `nd.uniform`, ...).

1.x semantics: no `shape` gives one value of shape (1,); array parameters give
`param.shape + shape` (one block of draws per parameter, MXNet's sample_* ops); float32
by default. Draws come from kiln's one generator through the random primitives, so they
trace; the two negative binomials and `multinomial` with array parameters draw eagerly
and refuse to run inside a hybridized trace rather than freeze a draw into the program.
"""
import numpy as _np

from .... import np as knp
from ...._core.base import KilnError
from ...._core.ndarray import ndarray
from ....ops import REGISTRY as _R
from ....ops.creation import _RandomState


def _shape(shape):
    if shape is None or shape == ():
        return (1,)
    return (int(shape),) if isinstance(shape, (int, _np.integer)) else tuple(int(d) for d in shape)


def _dt(dtype):
    return _np.dtype(dtype or "float32")


def _param(value, shape):
    """A parameter as a scalar, or an array laid out as param.shape + shape."""
    if isinstance(value, (ndarray, list, tuple, _np.ndarray)):
        arr = knp.asarray(value)
        return knp.reshape(arr, arr.shape + (1,) * len(shape)), arr.shape + shape
    return float(value), shape


def _draw_shape(params, shape):
    out = shape
    for _, s in params:
        if len(s) > len(out):
            out = s
    return out


def written(result, out):
    """`result`, or when `out` (an array of its shape) is given, `out` holding it (MXNet's
    `out=`)."""
    if out is None:
        return result
    if getattr(out, "stype", "default") != "default" and hasattr(out, "_assign"):
        if tuple(out.shape) != tuple(result.shape):     # a sparse out= takes the draws in
            raise KilnError(f"nd.random: out has shape {tuple(out.shape)}, the draws have "
                            f"{tuple(result.shape)}")
        out._assign(result.tostype(out.stype).astype(out.dtype))
        return out
    if not isinstance(out, ndarray):
        raise KilnError(f"nd.random: out must be an NDArray, got {type(out).__name__}")
    if tuple(out.shape) != tuple(result.shape):
        raise KilnError(f"nd.random: out has shape {tuple(out.shape)}, the draws have "
                        f"{tuple(result.shape)}")
    out[:] = result
    return out


def _not_tracing(op):
    from ...._core import trace
    if trace.current() is not None:
        raise KilnError(f"nd.random.{op} with these parameters draws eagerly and cannot be "
                        f"hybridized")


def exponential(scale=1.0, shape=None, dtype=None, ctx=None, out=None, **_):
    """Samples from exponential distributions with `scale` (a number or an array of scales)."""
    shape = _shape(shape) if not isinstance(scale, ndarray) or shape else ()
    (s, full) = _param(scale, shape)
    u = _R["random_uniform"](shape=full, dtype=_dt(dtype), low=0.0, high=1.0)
    return written(-knp.log(1.0 - u) * s, out)


def gamma(alpha=1.0, beta=1.0, shape=None, dtype=None, ctx=None, out=None, **_):
    """Samples from gamma distributions with shape `alpha` and scale `beta` (numbers or arrays)."""
    shape = _shape(shape) if not any(isinstance(v, ndarray) for v in (alpha, beta)) or shape \
        else ()
    a, b = _param(alpha, shape), _param(beta, shape)
    full = _draw_shape([a, b], shape)
    if isinstance(a[0], float):
        if a[0] <= 0:
            raise KilnError(f"nd.random.gamma: alpha must be positive, got {a[0]}")
        g = _R["random_gamma"](shape=full, dtype=_dt(dtype), alpha=a[0], scale=1.0)
    else:
        _not_tracing("gamma")
        alphas = _np.broadcast_to(a[0]._concrete("nd.random.gamma"), full)
        g = ndarray._wrap(_RandomState.generator.gamma(alphas).astype(_dt(dtype)))
    return written(g * b[0], out)


def poisson(lam=1.0, shape=None, dtype=None, ctx=None, out=None, **_):
    """Samples from Poisson distributions with rate `lam` (a number or an array), as floats."""
    shape = _shape(shape) if not isinstance(lam, ndarray) or shape else ()
    lam_, full = _param(lam, shape)
    if isinstance(lam_, float):
        return written(_R["random_poisson"](shape=full, dtype=_dt(dtype), lam=lam_), out)
    _not_tracing("poisson")
    lams = _np.broadcast_to(lam_._concrete("nd.random.poisson"), full)
    return written(ndarray._wrap(_RandomState.generator.poisson(lams).astype(_dt(dtype))), out)


def negative_binomial(k=1, p=1.0, shape=None, dtype=None, ctx=None, out=None, **_):
    """Failures before the k-th success, success probability p."""
    _not_tracing("negative_binomial")
    shape = _shape(shape)
    k_, p_ = (_np.asarray(v._concrete("negative_binomial") if isinstance(v, ndarray) else v)
              for v in (k, p))
    full = k_.shape + shape if k_.ndim else p_.shape + shape
    expand = (lambda v: v.reshape(v.shape + (1,) * len(shape)) if v.ndim else v)
    draws = _RandomState.generator.negative_binomial(
        _np.broadcast_to(expand(k_), full), _np.broadcast_to(expand(p_), full))
    return written(ndarray._wrap(draws.astype(_dt(dtype))), out)


def generalized_negative_binomial(mu=1.0, alpha=1.0, shape=None, dtype=None, ctx=None,
                                  out=None, **_):
    """Poisson counts whose rate is gamma distributed: mean mu, variance mu + alpha mu^2."""
    _not_tracing("generalized_negative_binomial")
    shape = _shape(shape)
    mu_, al = (_np.asarray(v._concrete("generalized_negative_binomial")
                           if isinstance(v, ndarray) else v, dtype=_np.float64)
               for v in (mu, alpha))
    full = (mu_.shape or al.shape) + shape
    expand = (lambda v: v.reshape(v.shape + (1,) * len(shape)) if v.ndim else v)
    mu_b, al_b = _np.broadcast_to(expand(mu_), full), _np.broadcast_to(expand(al), full)
    gen = _RandomState.generator
    rate = _np.where(al_b > 0, gen.gamma(1.0 / _np.where(al_b > 0, al_b, 1.0)) * al_b * mu_b,
                     mu_b)
    return written(ndarray._wrap(gen.poisson(rate).astype(_dt(dtype))), out)


def multinomial(data, shape=None, get_prob=False, out=None, dtype="int32", **_):
    """Draws from categorical distributions (probabilities on data's last axis): indices of
    shape data.shape[:-1] + shape; with get_prob, also their log-probabilities."""
    _not_tracing("multinomial")
    probs = knp.asarray(data)._concrete("nd.random.multinomial").astype(_np.float64)
    extra = () if shape is None or shape == () else _shape(shape)
    rows = probs.reshape(-1, probs.shape[-1])
    cum = _np.cumsum(rows, axis=1)
    u = _RandomState.generator.random((rows.shape[0],) + (int(_np.prod(extra)) if extra
                                                          else 1,))
    picks = _np.stack([_np.minimum(_np.searchsorted(c, ui * c[-1], side="right"),
                                   rows.shape[1] - 1) for c, ui in zip(cum, u)])
    picks = picks.reshape(probs.shape[:-1] + extra or (1,))     # 1.x has no 0-d arrays
    result = ndarray._wrap(picks.astype(_np.dtype(dtype)))
    if not get_prob:
        return written(result, out)
    # the log-probabilities as a differentiable gather from log(data)
    k = probs.shape[-1]
    flat = picks.reshape(rows.shape[0], -1) + (_np.arange(rows.shape[0]) * k)[:, None]
    logp = knp.take(knp.reshape(knp.log(knp.asarray(data)), (-1,)), flat.reshape(-1))
    return [result, knp.reshape(logp, result.shape)]


# ---- the flat 1.x names (nd.random_uniform, nd.sample_normal, ...) --------------------------

def _loc_scale(base, loc, scale, shape, dtype):
    """loc + scale * draw, with MXNet's param.shape + shape layout for array parameters."""
    shape = _shape(shape) if not any(isinstance(v, ndarray) for v in (loc, scale)) or shape \
        else ()
    a, b = _param(loc, shape), _param(scale, shape)
    full = _draw_shape([a, b], shape)
    return a[0] + b[0] * _R[base](shape=full, dtype=_dt(dtype))


def random_uniform(low=0.0, high=1.0, shape=None, dtype=None, ctx=None, out=None, **_):
    """Uniform draws in [low, high); array bounds give `bound.shape + shape`."""
    if isinstance(low, ndarray) or isinstance(high, ndarray):
        draws = _loc_scale("random_uniform", low, knp.asarray(high) - low, shape, dtype)
    else:
        draws = _loc_scale("random_uniform", float(low), float(high) - float(low), shape,
                           dtype)
    return written(draws, out)


def random_normal(loc=0.0, scale=1.0, shape=None, dtype=None, ctx=None, out=None, **_):
    """Normal draws; array `loc`/`scale` give `param.shape + shape`."""
    return written(_loc_scale("random_normal", loc, scale, shape, dtype), out)


def random_randint(low, high, shape=None, dtype=None, ctx=None, out=None, **_):
    """Random integers in [low, high), int32 by default."""
    return written(_R["random_randint"](shape=_shape(shape), dtype=_np.dtype(dtype or "int32"),
                                        low=int(low), high=int(high)), out)


def _renamed(fn, name, **renames):
    """`fn` under MXNet's keyword names of another op (sample_normal's mu, sigma)."""
    def call(*args, **kwargs):
        for old, new in renames.items():
            if old in kwargs:
                kwargs[new] = kwargs.pop(old)
        return fn(*args, **kwargs)
    call.__name__ = name
    call.__doc__ = fn.__doc__
    return call


sample_normal = _renamed(random_normal, "sample_normal", mu="loc", sigma="scale")


# ---- *_like: the shape of `data` ------------------------------------------------------------

def _like(fn, **renames):
    def like(data=None, *args, **kwargs):
        for old, new in renames.items():
            if old in kwargs:
                kwargs[new] = kwargs.pop(old)
        return fn(*args, shape=knp.asarray(data).shape, dtype=knp.asarray(data).dtype,
                  **kwargs)
    like.__name__ = fn.__name__ + "_like"
    like.__doc__ = f"{fn.__name__} draws of `data`'s shape and dtype."
    return like


def _exponential_lam(lam=1.0, **kw):
    scale = 1.0 / knp.asarray(lam) if isinstance(lam, ndarray) else 1.0 / float(lam)
    return exponential(scale, **kw)


_exponential_lam.__name__ = "exponential"

normal_like = _like(random_normal)
uniform_like = _like(random_uniform)
exponential_like = _like(_exponential_lam)
gamma_like = _like(gamma)
poisson_like = _like(poisson)
negative_binomial_like = _like(negative_binomial)
generalized_negative_binomial_like = _like(generalized_negative_binomial)


FLAT = {
    "uniform": random_uniform, "normal": random_normal,
    "random_uniform": random_uniform, "random_normal": random_normal,
    "random_randint": random_randint,
    "random_exponential": _exponential_lam, "random_gamma": gamma, "random_poisson": poisson,
    "random_negative_binomial": negative_binomial,
    "random_generalized_negative_binomial": generalized_negative_binomial,
    "sample_uniform": random_uniform, "sample_normal": sample_normal,
    "sample_exponential": _exponential_lam, "sample_gamma": gamma, "sample_poisson": poisson,
    "sample_negative_binomial": negative_binomial,
    "sample_generalized_negative_binomial": generalized_negative_binomial,
    "sample_multinomial": multinomial,
}
