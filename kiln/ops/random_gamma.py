"""The gamma and Poisson draws: random primitives the other distributions (beta,
chi-square, counts) need and no transform of a uniform or normal draw gives. They draw
from the same process-wide generator as random_uniform, so `np.random.seed` fixes them."""
from .registry import register
from .creation import _RandomState, _random_rule


@register("random_gamma", _random_rule, random=True)
def random_gamma(shape, dtype, alpha=1.0, scale=1.0):
    return _RandomState.generator.gamma(alpha, scale, size=shape).astype(dtype, copy=False)


@register("random_poisson", _random_rule, random=True)
def random_poisson(shape, dtype, lam=1.0):
    return _RandomState.generator.poisson(lam, size=shape).astype(dtype, copy=False)
