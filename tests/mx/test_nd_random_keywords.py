"""nd.random's keyword forms as MXNet 1.9.1 takes them: shape=, dtype=, ctx=, out=, and
array parameters laid out as param.shape + shape (shapes checked against MXNet 1.9.1)."""
import numpy as onp
import pytest

import kiln
from kiln import nd


@pytest.mark.parametrize("call, shape", [
    (lambda r: r.uniform(nd.array([0, 1]), nd.array([1, 2]), shape=3), (2, 3)),
    (lambda r: r.normal(nd.array([0, 1]), nd.array([1, 2]), shape=(3, 2)), (2, 3, 2)),
    (lambda r: r.poisson(nd.array([1, 2])), (2,)),
    (lambda r: r.negative_binomial(k=nd.array([3, 4]), p=nd.array([0.4, 0.5]), shape=2),
     (2, 2)),
    (lambda r: r.generalized_negative_binomial(mu=nd.array([2.0]), alpha=nd.array([0.3]),
                                               shape=2), (1, 2)),
    (lambda r: r.exponential(nd.array([1, 2]), shape=2), (2, 2)),
    (lambda r: r.gamma(nd.array([1, 2]), nd.array([1, 1]), shape=2), (2, 2)),
    (lambda r: r.poisson(lam=2, shape=(2, 3)), (2, 3)),
    (lambda r: r.uniform(low=0, high=1, shape=(2,), dtype="float64", ctx=kiln.cpu()), (2,)),
])
def test_shapes_as_mxnet(call, shape):
    assert call(nd.random).shape == shape


def test_dtypes_as_mxnet():
    assert nd.random.poisson(nd.array([1, 2]), shape=2, dtype="float64").dtype == onp.float64
    assert nd.random.randint(0, 5, shape=(3,)).dtype == onp.int32
    assert nd.random.negative_binomial(k=3, p=0.4, shape=(2,)).dtype == onp.float32


@pytest.mark.parametrize("draw", [
    lambda out: nd.random.uniform(shape=(4,), out=out),
    lambda out: nd.random.normal(0, 1, shape=4, out=out),
    lambda out: nd.random.poisson(lam=3, shape=4, out=out),
    lambda out: nd.random.exponential(scale=2, shape=4, out=out),
    lambda out: nd.random.gamma(alpha=2, beta=1, shape=4, out=out),
    lambda out: nd.random.negative_binomial(k=3, p=0.4, shape=4, out=out),
    lambda out: nd.random.generalized_negative_binomial(mu=2, alpha=0.3, shape=4, out=out),
    lambda out: nd.random.randint(1, 5, shape=4, out=out),
])
def test_out_receives_the_draws(draw):
    kiln.random.seed(3)
    out = nd.zeros((4,)) - 1
    got = draw(out)
    assert got is out and (out.asnumpy() != -1).all()   # every element was written


def test_out_of_the_wrong_shape_is_refused():
    with pytest.raises(kiln.KilnError, match="out has shape"):
        nd.random.uniform(shape=(3,), out=nd.zeros((4,)))


def test_samplers_draw_the_right_distributions():
    kiln.random.seed(0)
    p = nd.random.poisson(lam=4.0, shape=(20000,)).asnumpy()
    assert abs(p.mean() - 4.0) < 0.1 and abs(p.var() - 4.0) < 0.2
    nb = nd.random.negative_binomial(k=3, p=0.4, shape=(20000,)).asnumpy()
    assert abs(nb.mean() - 3 * 0.6 / 0.4) < 0.15                   # k(1-p)/p
    g = nd.random.generalized_negative_binomial(mu=2.0, alpha=0.5, shape=(20000,)).asnumpy()
    assert abs(g.mean() - 2.0) < 0.1 and abs(g.var() - (2.0 + 0.5 * 4.0)) < 0.4
