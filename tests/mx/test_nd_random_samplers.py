"""MXNet 1.x's nd.random additions and flat names (random_*, sample_*): shapes and dtypes as
MXNet 1.9.1 gives them, moments against closed forms, one seeded generator, and eager-only
draws refusing to be frozen into a hybridized program."""
import numpy as onp
import pytest

import kiln
from kiln import nd


def test_shapes_and_dtypes_as_mxnet():
    assert nd.random.exponential().shape == (1,)
    assert nd.random.gamma(nd.array([1.0, 20.0]), nd.array([1.0, 1.0]), shape=(3,)).shape == (2, 3)
    assert nd.random.poisson(nd.array([1.0, 2.0])).shape == (2,)
    assert nd.random.multinomial(nd.array([[0.1, 0.9], [0.7, 0.3]]), shape=(4, 5)).shape == \
        (2, 4, 5)
    assert nd.random.multinomial(nd.array([0.1, 0.9])).shape == (1,)
    assert nd.sample_normal(nd.array([0.0, 10.0]), nd.array([1.0, 1.0]), shape=(3,)).shape == \
        (2, 3)
    assert nd.random_normal(shape=(2,)).shape == (2,)
    assert nd.random.negative_binomial(shape=(2,)).dtype == onp.float32
    assert nd.random.poisson(shape=(2,)).dtype == onp.float32
    assert nd.random.normal_like(nd.ones((2, 3))).shape == (2, 3)
    assert nd.random.exponential_like(nd.ones((2,)), lam=2.0).shape == (2,)
    assert nd.uniform(shape=(2,)).shape == (2,) and nd.normal(shape=(3,)).shape == (3,)


# name -> (draw of 40,000, mean, variance)
MOMENTS = {
    "exponential": (lambda: nd.random.exponential(2.0, shape=(40000,)), 2.0, 4.0),
    "gamma": (lambda: nd.random.gamma(2.0, 3.0, shape=(40000,)), 6.0, 18.0),
    "poisson": (lambda: nd.random.poisson(3.0, shape=(40000,)), 3.0, 3.0),
    "negative_binomial": (lambda: nd.random.negative_binomial(3, 0.5, shape=(40000,)), 3.0, 6.0),
    "generalized_negative_binomial": (
        lambda: nd.random.generalized_negative_binomial(2.0, 0.5, shape=(40000,)), 2.0, 4.0),
    "sample_uniform": (lambda: nd.sample_uniform(nd.array([1.0]), nd.array([3.0]),
                                                 shape=(40000,))[0], 2.0, 1 / 3),
    "random_exponential": (lambda: nd.random_exponential(lam=4.0, shape=(40000,)), 0.25, 1 / 16),
}


@pytest.mark.parametrize("name", sorted(MOMENTS))
def test_moments_and_seed(name):
    draw, mean, var = MOMENTS[name]
    nd.random.seed(5)
    x = draw().asnumpy().astype(onp.float64)
    assert abs(x.mean() - mean) < 4 * onp.sqrt(var / x.size), (x.mean(), mean)
    assert abs(x.var() / var - 1) < 0.1, (x.var(), var)
    nd.random.seed(5)
    onp.testing.assert_array_equal(draw().asnumpy(), x.astype(onp.float32))


def test_array_parameters_give_one_block_per_parameter():
    x = nd.sample_normal(nd.array([0.0, 100.0]), nd.array([1.0, 1.0]), shape=(500,)).asnumpy()
    assert abs(x[0].mean()) < 0.3 and abs(x[1].mean() - 100) < 0.3


def test_multinomial_frequencies_and_log_probabilities():
    nd.random.seed(2)
    probs = nd.array([[0.1, 0.9], [0.7, 0.3]])
    m = nd.random.multinomial(probs, shape=(4000,))
    assert m.dtype == onp.int32
    onp.testing.assert_allclose(m.asnumpy().mean(1), [0.9, 0.3], atol=0.03)
    picks, logp = nd.random.multinomial(probs, get_prob=True)
    expected = onp.log(probs.asnumpy()[[0, 1], picks.asnumpy()])
    onp.testing.assert_allclose(logp.asnumpy(), expected, rtol=1e-6)


@pytest.mark.filterwarnings("ignore::kiln.graph.capture.KilnTraceWarning")
def test_eager_draws_refuse_hybridization_and_traced_ones_draw_anew():
    def eager_only(x):
        return x + nd.random.negative_binomial(2, 0.5, shape=x.shape)
    with pytest.raises(kiln.KilnError, match="cannot be hybridized"):
        kiln.hybridize(eager_only)(nd.zeros((3,)))

    def traced(x):
        return x + nd.random.poisson(4.0, shape=x.shape) + nd.random.gamma(2.0, shape=x.shape)
    g = kiln.hybridize(traced)
    a, b = g(nd.zeros((6,))).asnumpy(), g(nd.zeros((6,))).asnumpy()
    assert not onp.array_equal(a, b)


def test_sample_normal_takes_mxnets_mu_and_sigma_keywords():
    """MXNet 1.9.1's sample_normal names its parameters mu and sigma: the draws have
    mu.shape + shape, and centre on mu."""
    mu, sigma = nd.array([10.0]), nd.array([0.5])
    assert nd.sample_normal(mu=mu, sigma=sigma).shape == (1,)
    assert nd.sample_normal(mu=mu, sigma=sigma, shape=1).shape == (1, 1)
    assert nd.sample_normal(mu=mu, sigma=sigma, shape=(1,)).shape == (1, 1)
    draws = nd.sample_normal(mu=nd.array([100.0, -100.0]), sigma=nd.array([1.0, 1.0]),
                             shape=(200,)).asnumpy()
    assert draws.shape == (2, 200) and abs(draws[0].mean() - 100) < 1 and \
        abs(draws[1].mean() + 100) < 1
