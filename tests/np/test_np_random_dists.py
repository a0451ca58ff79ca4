"""np.random's added distributions: moments against the closed forms (20,000 draws, fixed
seed), one generator for all (seed reproduces), array parameters broadcast, and a
hybridized function draws anew on each call."""
import math

import numpy as onp
import pytest

import kiln
from kiln import np

G = 0.5772156649015329   # Euler's constant
# name -> (args, mean, variance)
MOMENTS = {
    "exponential": ((2.0,), 2.0, 4.0),
    "gumbel": ((1.0, 2.0), 1 + 2 * G, math.pi ** 2 / 6 * 4),
    "logistic": ((1.0, 2.0), 1.0, math.pi ** 2 / 3 * 4),
    "lognormal": ((0.0, 0.5), math.exp(0.125), (math.exp(0.25) - 1) * math.exp(0.25)),
    "pareto": ((5.0,), 1 / 4, 5 / (16 * 3)),
    "power": ((3.0,), 0.75, 3 / (16 * 5)),
    "rayleigh": ((2.0,), 2 * math.sqrt(math.pi / 2), (4 - math.pi) / 2 * 4),
    "weibull": ((2.0,), math.gamma(1.5), 1 - math.gamma(1.5) ** 2),
    "gamma": ((2.0, 3.0), 6.0, 18.0),
    "beta": ((2.0, 3.0), 0.4, 6 / (25 * 6)),
    "chisquare": ((3.0,), 3.0, 6.0),
}


@pytest.mark.parametrize("name", sorted(MOMENTS))
def test_moments(name):
    args, mean, var = MOMENTS[name]
    np.random.seed(3)
    x = getattr(np.random, name)(*args, size=20000)
    assert x.shape == (20000,) and x.dtype == onp.float32
    x = x.asnumpy().astype(onp.float64)
    assert abs(x.mean() - mean) < 4 * math.sqrt(var / 20000), (x.mean(), mean)
    assert abs(x.var() / var - 1) < 0.1, (x.var(), var)


@pytest.mark.parametrize("name", sorted(MOMENTS))
def test_seed_reproduces_and_parameters_broadcast(name):
    args, _, _ = MOMENTS[name]
    fn = getattr(np.random, name)
    np.random.seed(7)
    a = fn(*args, size=(2, 3)).asnumpy()
    np.random.seed(7)
    b = fn(*args, size=(2, 3)).asnumpy()
    onp.testing.assert_array_equal(a, b)
    arr_args = (np.array([args[0], args[0] * 2]),) + args[1:]
    assert fn(*arr_args).shape == (2,)
    assert fn(*arr_args, size=(4, 2)).shape == (4, 2)


def test_multivariate_normal_moments():
    np.random.seed(1)
    cov = onp.array([[1.0, 0.5], [0.5, 2.0]])
    x = np.random.multivariate_normal(np.array([1.0, -2.0]), np.array(cov), size=20000)
    assert x.shape == (20000, 2) and x.dtype == onp.float32
    x = x.asnumpy().astype(onp.float64)
    onp.testing.assert_allclose(x.mean(0), [1.0, -2.0], atol=0.05)
    onp.testing.assert_allclose(onp.cov(x.T), cov, atol=0.06)
    with pytest.raises(kiln.KilnError, match="cov must be of shape"):
        np.random.multivariate_normal(np.zeros(3), np.eye(2))


def test_bad_parameter_is_a_clear_error():
    with pytest.raises(kiln.KilnError, match="shape parameter must be positive"):
        np.random.gamma(-1.0)


@pytest.mark.filterwarnings("ignore::kiln.graph.capture.KilnTraceWarning")
def test_hybridized_draws_anew_each_call():
    def f(x):
        return x + np.random.exponential(1.0, size=x.shape) + np.random.gamma(2.0, size=x.shape)
    g = kiln.hybridize(f)
    x = np.zeros((4,))
    a, b = g(x).asnumpy(), g(x).asnumpy()
    assert (a > 0).all() and not onp.array_equal(a, b)


@pytest.mark.parametrize("size, shape", [(None, (0,)), (0, (0, 0)), ((4, 0, 2), (4, 0, 2, 0)),
                                         (3, (3, 0)), ((2, 3), (2, 3, 0))])
def test_multinomial_of_no_categories_is_empty(size, shape):
    # real MXNet 1.9.1's np.random.multinomial(5, [], size) shapes
    out = np.random.multinomial(5, [], size=size)
    assert out.shape == shape and out.dtype == onp.int64
