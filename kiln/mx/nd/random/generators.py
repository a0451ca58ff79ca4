"""nd.random's normal, uniform, randn, randint, seed and shuffle: kiln.np.random's generators
with MXNet 1.x's `shape=` (no shape gives one value of shape (1,)) and `out=`; array
parameters take MXNet's sample_* layout (samplers.py)."""
import numpy as _np

from ...._core.ndarray import ndarray
from ....np import random as _r
from .samplers import random_normal, random_uniform, written


def _size(shape):
    if shape is None or shape == ():
        return (1,)     # MXNet 1.x: no shape gives one value
    return (shape,) if isinstance(shape, int) else tuple(shape)


def normal(loc=0.0, scale=1.0, shape=None, dtype=None, ctx=None, out=None, **_):
    """Samples from a normal distribution with mean `loc` and standard deviation `scale`, of
    `shape` (float32 by default); array parameters give `param.shape + shape`."""
    if isinstance(loc, ndarray) or isinstance(scale, ndarray):
        return random_normal(loc, scale, shape, dtype, out=out)
    return written(_r.normal(loc, scale, size=_size(shape), dtype=dtype or "float32"), out)


def uniform(low=0.0, high=1.0, shape=None, dtype=None, ctx=None, out=None, **_):
    """Samples drawn uniformly from `[low, high)`, of `shape` (float32 by default); array
    bounds give `bound.shape + shape`."""
    if isinstance(low, ndarray) or isinstance(high, ndarray):
        return random_uniform(low, high, shape, dtype, out=out)
    return written(_r.uniform(low, high, size=_size(shape), dtype=dtype or "float32"), out)


def randn(*shape, loc=0.0, scale=1.0, dtype=None, **_):
    """Normal samples of the shape given as separate ints."""
    return normal(loc, scale, shape or None, dtype)


def randint(low, high, shape=None, dtype=None, ctx=None, out=None, **_):
    """Random integers from `[low, high)`, of `shape` (int32 by default)."""
    return written(_r.randint(low, high, size=_size(shape), dtype=dtype or "int32"), out)


def seed(seed_state, ctx="all"):
    """Seed kiln's random number generator (all of kiln's random functions share it);
    `seed_state` must be an int, as in MXNet."""
    if isinstance(seed_state, bool) or not isinstance(seed_state, (int, _np.integer)):
        raise ValueError("seed_state must be int")
    _r.seed(int(seed_state))


def shuffle(data, **_):
    """A copy of `data` with its elements shuffled along the first axis."""
    out = data.copy()
    _r.shuffle(out)
    return out
