"""`nd.random` of MXNet 1.x: the same generators as kiln.np.random, with `shape=`."""
from ....np import random as _r


def _size(shape):
    if shape is None or shape == ():
        return (1,)     # MXNet 1.x: no shape gives one value
    return (shape,) if isinstance(shape, int) else tuple(shape)


def normal(loc=0.0, scale=1.0, shape=None, dtype=None, ctx=None, **_):
    return _r.normal(loc, scale, size=_size(shape), dtype=dtype or "float32")


def uniform(low=0.0, high=1.0, shape=None, dtype=None, ctx=None, **_):
    return _r.uniform(low, high, size=_size(shape), dtype=dtype or "float32")


def randn(*shape, loc=0.0, scale=1.0, dtype=None, **_):
    return normal(loc, scale, shape or None, dtype)


def randint(low, high, shape=None, dtype=None, ctx=None, **_):
    return _r.randint(low, high, size=_size(shape), dtype=dtype or "int32")


def seed(seed_state, ctx="all"):
    _r.seed(seed_state)


def shuffle(data, **_):
    out = data.copy()
    _r.shuffle(out)
    return out


# the other 1.x distributions (kiln/nd_random_more.py)
from .samplers import (exponential, gamma, poisson, negative_binomial,
    generalized_negative_binomial, multinomial, normal_like, uniform_like, exponential_like,
    gamma_like, poisson_like, negative_binomial_like, generalized_negative_binomial_like)
