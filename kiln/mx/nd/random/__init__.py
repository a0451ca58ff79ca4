"""`nd.random` of MXNet 1.x: the same generators as kiln.np.random, with `shape=`
(generators.py), and the other 1.x distributions (samplers.py) and densities (pdf.py)."""
from .generators import normal, uniform, randn, randint, seed, shuffle
from .samplers import (exponential, gamma, poisson, negative_binomial,
    generalized_negative_binomial, multinomial, normal_like, uniform_like, exponential_like,
    gamma_like, poisson_like, negative_binomial_like, generalized_negative_binomial_like)
