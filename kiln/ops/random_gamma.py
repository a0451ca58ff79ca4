"""The gamma draw: the one random primitive the other distributions (beta, chi-square,
Dirichlet-like ratios) need and uniform/normal transforms cannot give. It draws from the
same process-wide generator as random_uniform, so `np.random.seed` fixes it too."""
import numpy as _np

from .registry import register
from .creation import _RandomState, _random_rule


@register("random_gamma", _random_rule, random=True)
def random_gamma(shape, dtype, alpha=1.0, scale=1.0):
    return _RandomState.generator.gamma(alpha, scale, size=shape).astype(dtype, copy=False)
