"""kiln.np.random: MXNet's signatures (size=..., float32 results)."""
import operator

import numpy as _np

from .._core.base import DEFAULT_FLOAT, normalize_dtype, op_error, KilnError
from .._core.ndarray import ndarray
from .._core.symdim import SymInt
from .._core.writes import arrays_written
from ..ops import REGISTRY as _R
from ..ops.creation import seed as _seed, _RandomState


def seed(seed=None, ctx=None):
    """Seed kiln's random number generator (used by every `np.random` function, the initializers
    and dropout)."""
    _seed(seed)


def _size(size):
    if size is None:
        return ()
    if isinstance(size, (int, _np.integer)):
        return (int(size),)
    try:    # a symbolic size (a traced array's shape) stays symbolic
        return tuple(d if isinstance(d, SymInt) else operator.index(d) for d in size)
    except TypeError:
        raise op_error("random", f"size must be an int or a tuple of ints, got {size!r}",
                       KilnError) from None


def _scalar(op, value):
    if isinstance(value, ndarray):
        if value.size != 1:
            return value
        value = value.item()
    return float(value)


def uniform(low=0.0, high=1.0, size=None, dtype=None, ctx=None, device=None, out=None):
    """Samples drawn uniformly from `[low, high)`, of shape `size` (float32 by default)."""
    low, high = _scalar("uniform", low), _scalar("uniform", high)
    dt = normalize_dtype(dtype, DEFAULT_FLOAT)
    if isinstance(low, ndarray) or isinstance(high, ndarray):
        from .manipulation import broadcast_arrays
        low, high = broadcast_arrays(low, high)
        u = _R["random_uniform"](shape=_size(size) or low.shape, dtype=dt)
        r = low + (high - low) * u
    else:
        r = _R["random_uniform"](shape=_size(size), dtype=dt, low=low, high=high)
    return _out(r, out)


def normal(loc=0.0, scale=1.0, size=None, dtype=None, ctx=None, device=None, out=None):
    """Samples from a normal distribution with mean `loc` and standard deviation `scale`, of shape
    `size`."""
    loc, scale = _scalar("normal", loc), _scalar("normal", scale)
    dt = normalize_dtype(dtype, DEFAULT_FLOAT)
    if isinstance(loc, ndarray) or isinstance(scale, ndarray):
        from .manipulation import broadcast_arrays
        loc, scale = broadcast_arrays(loc, scale)
        z = _R["random_normal"](shape=_size(size) or loc.shape, dtype=dt)
        r = loc + scale * z
    else:
        r = _R["random_normal"](shape=_size(size), dtype=dt, loc=loc, scale=scale)
    return _out(r, out)


def randint(low, high=None, size=None, dtype=None, ctx=None, device=None, out=None):
    """Random integers from `[low, high)` (from `[0, low)` when `high` is None), of shape `size`."""
    if high is None:
        low, high = 0, low
    if high <= low:
        raise op_error("randint", f"low >= high ({low} >= {high})", KilnError)
    dt = normalize_dtype(dtype, _np.dtype(_np.int64))
    return _out(_R["random_randint"](shape=_size(size), dtype=dt, low=int(low), high=int(high)),
                out)


def rand(*size, **kwargs):
    """Uniform samples from `[0, 1)` of shape `size` (given as separate ints)."""
    return uniform(size=size, **kwargs)


def randn(*size, **kwargs):
    """Standard normal samples of shape `size` (given as separate ints)."""
    return normal(size=size, **kwargs)


def random(size=None, dtype=None):
    """Uniform samples from `[0, 1)` of shape `size`; `random_sample` is the same."""
    return uniform(size=size, dtype=dtype)


random_sample = random


def choice(a, size=None, replace=True, p=None, ctx=None):
    """A random sample of `size` elements from `a` (or `arange(a)`), with or without replacement,
    with probabilities `p`."""
    pool = a._concrete("choice") if isinstance(a, ndarray) else a
    prob = p._concrete("choice") if isinstance(p, ndarray) else p
    res = _RandomState.generator.choice(pool, size=size, replace=replace, p=prob)
    res = _np.asarray(res)
    return ndarray._wrap(res if res.dtype.kind != "f" else res.astype(DEFAULT_FLOAT))


def shuffle(x):
    """Shuffle along the first axis, in place."""
    data = x._concrete("shuffle") if isinstance(x, ndarray) else x
    try:
        _RandomState.generator.shuffle(data)
    finally:
        arrays_written()


def permutation(x):
    """A random permutation of `arange(x)`, or a shuffled copy of the array `x` (along its first
    axis)."""
    if isinstance(x, (int, _np.integer)):
        return ndarray._wrap(_RandomState.generator.permutation(int(x)))
    data = x._concrete("permutation") if isinstance(x, ndarray) else _np.asarray(x)
    return ndarray._wrap(_RandomState.generator.permutation(data))


def multinomial(n, pvals, size=None):
    """Counts of `n` draws from the categories with probabilities `pvals`, `size` times."""
    p = pvals._concrete("multinomial") if isinstance(pvals, ndarray) else _np.asarray(pvals)
    p = p.astype(_np.float64)
    if p.size == 0:                 # no categories: no counts (MXNet's empty result)
        shape = () if size is None else (size,) if isinstance(size, int) else tuple(size)
        return ndarray._wrap(_np.zeros(shape + (0,), _np.int64))
    total = p.sum()
    if abs(total - 1.0) < 1e-5:     # float32 probabilities that sum to 1 up to rounding
        p = p / total
    return ndarray._wrap(_RandomState.generator.multinomial(n, p, size=size).astype(_np.int64))


def bernoulli(prob=0.5, size=None, dtype=None):
    """Samples that are 1 with probability `prob` and 0 otherwise."""
    u = uniform(size=size if size is not None else (
        prob.shape if isinstance(prob, ndarray) else None))
    return (u < prob).astype(normalize_dtype(dtype, DEFAULT_FLOAT))


def _out(result, out):
    if out is None:
        return result
    out[...] = result
    return out


# the other distributions (kiln/np/random_dists.py); imported last: they use _size and _out
from .random_dists import (exponential, gumbel, logistic, lognormal, pareto,  # noqa: E402,F401
                           rayleigh, weibull, gamma, beta, chisquare, multivariate_normal)
from .random_dists import power_ as power  # noqa: E402,F401
