"""Primitives with no array inputs: constants filled with one value, and random draws."""
import numpy as _np

from .registry import register


def _full_rule(shape, value, dtype):
    return tuple(shape), _np.dtype(dtype)


@register("full", _full_rule)
def full(shape, value, dtype):
    return _np.full(shape, value, dtype=dtype)


class _RandomState:
    """One generator for the process; `kiln.np.random.seed` resets it."""
    generator = _np.random.default_rng()


def seed(value):
    _RandomState.generator = _np.random.default_rng(value)


def _random_rule(shape, dtype, **params):
    return tuple(shape), _np.dtype(dtype)


@register("random_uniform", _random_rule, random=True)
def random_uniform(shape, dtype, low=0.0, high=1.0):
    return _RandomState.generator.uniform(low, high, size=shape).astype(dtype, copy=False)


@register("random_normal", _random_rule, random=True)
def random_normal(shape, dtype, loc=0.0, scale=1.0):
    return _RandomState.generator.normal(loc, scale, size=shape).astype(dtype, copy=False)


@register("random_randint", _random_rule, random=True)
def random_randint(shape, dtype, low=0, high=2):
    return _RandomState.generator.integers(low, high, size=shape).astype(dtype, copy=False)
