"""nd.random's normal, uniform, randn, randint, seed and shuffle: kiln.np.random's generators
with MXNet 1.x's `shape=` (no shape gives one value of shape (1,))."""
from ....np import random as _r


def _size(shape):
    if shape is None or shape == ():
        return (1,)     # MXNet 1.x: no shape gives one value
    return (shape,) if isinstance(shape, int) else tuple(shape)


def normal(loc=0.0, scale=1.0, shape=None, dtype=None, ctx=None, **_):
    """Samples from a normal distribution with mean `loc` and standard deviation `scale`, of
    `shape` (float32 by default)."""
    return _r.normal(loc, scale, size=_size(shape), dtype=dtype or "float32")


def uniform(low=0.0, high=1.0, shape=None, dtype=None, ctx=None, **_):
    """Samples drawn uniformly from `[low, high)`, of `shape` (float32 by default)."""
    return _r.uniform(low, high, size=_size(shape), dtype=dtype or "float32")


def randn(*shape, loc=0.0, scale=1.0, dtype=None, **_):
    """Normal samples of the shape given as separate ints."""
    return normal(loc, scale, shape or None, dtype)


def randint(low, high, shape=None, dtype=None, ctx=None, **_):
    """Random integers from `[low, high)`, of `shape` (int32 by default)."""
    return _r.randint(low, high, size=_size(shape), dtype=dtype or "int32")


def seed(seed_state, ctx="all"):
    """Seed kiln's random number generator (all of kiln's random functions share it)."""
    _r.seed(seed_state)


def shuffle(data, **_):
    """A copy of `data` with its elements shuffled along the first axis."""
    out = data.copy()
    _r.shuffle(out)
    return out
